#include "config.h"

#include "trigger_spec.h"

#include "agent_options.h"
#include "cuhook_agent.h"
#include "glob_filter.h"
#include "stack_capture.h"
#include "trace_path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The codec checks max_size=; the API header tells callers the same minimum. */
_Static_assert(AOPT_MAX_SIZE_MIN == CUHOOK_MAX_SIZE_MIN, "one smallest size cap");
/* ... and stack_depth= against the walk's limit. */
_Static_assert(STACK_DEPTH_MAX == 256, "stack_depth= is checked from 1 to 256 (agent_options.c)");

void config_defaults(struct cuhook_config *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->output, "trace.bin");
	/* cudbg* are the debugger's entry points, not the API. */
	strcpy(c->funcs, "cu*,-cudbg*");
	strcpy(c->count, CUHOOK_COUNT_DEFAULT);
	strcpy(c->stacks, CUHOOK_STACKS_DEFAULT);
	c->stack_depth = STACK_DEPTH_DEFAULT;
	strcpy(c->lib, "libcuda.so*");
	strcpy(c->ioctl_paths, "/dev/nvidia*");
	c->buffer_kb = 1024;
	c->flush_ms = 50;
	c->names_window_ms = CUHOOK_NAMES_WINDOW_DEFAULT_MS;
}

/* Store one checked value (src/common/agent_options.c checked it against the key's kind). */
static int set(void *ctx, enum aopt_key key, const char *value, const union aopt_value *v, char *err,
               size_t errlen)
{
	struct cuhook_config *c = ctx;
	switch (key) {
	case AOPT_OUTPUT:
		snprintf(c->output, sizeof(c->output), "%s", value);
		break;
	case AOPT_FUNCS:
		snprintf(c->funcs, sizeof(c->funcs), "%s", value);
		break;
	case AOPT_COUNT:
		snprintf(c->count, sizeof(c->count), "%s", value);
		break;
	case AOPT_LIB:
		snprintf(c->lib, sizeof(c->lib), "%s", value);
		break;
	case AOPT_BUFFER_KB: {
		/* a power of two, so ring positions are a mask away */
		unsigned p = 64;
		while (p < v->u)
			p <<= 1;
		c->buffer_kb = p;
		break;
	}
	case AOPT_DROP:
		c->drop = v->b;
		break;
	case AOPT_FLUSH_MS:
		c->flush_ms = v->u;
		break;
	case AOPT_CLOCK:
		c->monotonic = !strcmp(aopt_defs[key].choices[v->choice], "monotonic");
		break;
	case AOPT_VERBOSE:
		c->verbose = (int)v->u;
		break;
	case AOPT_DISABLE:
		c->disable = v->b;
		break;
	case AOPT_FOLLOW:
		c->follow = v->b;
		break;
	case AOPT_IOCTL:
		c->ioctl = v->b;
		break;
	case AOPT_EXPORT_TABLES:
		c->export_tables = v->b;
		break;
	case AOPT_NAMES_WINDOW:
		c->names_window_ms = v->u;
		break;
	case AOPT_IOCTL_PATHS:
		snprintf(c->ioctl_paths, sizeof(c->ioctl_paths), "%s", value);
		break;
	case AOPT_STDERR:
		c->quiet = !v->b;
		break;
	case AOPT_FORCE:
		c->force = v->b;
		break;
	case AOPT_MAX_SIZE:
		c->max_size = v->size;
		break;
	case AOPT_INJECTOR:
		c->injector = (int)v->u;
		break;
	case AOPT_DEADLINE_MS:
		c->deadline_ms = v->u;
		break;
	case AOPT_GPU:
		c->gpu = v->b;
		break;
	case AOPT_CUPTI:
		snprintf(c->cupti, sizeof(c->cupti), "%s", value);
		break;
	case AOPT_STACKS:
		/* "rare": the rare, costly calls (cuhook_agent.h) */
		snprintf(c->stacks, sizeof(c->stacks), "%s", strcmp(value, "rare") ? value : CUHOOK_STACKS_RARE);
		break;
	case AOPT_STACK_DEPTH:
		c->stack_depth = v->u;
		break;
	case AOPT_FLIGHT: {
		/* a power of two, so ring positions are a mask away (as buffer_kb), at most 1 GiB */
		uint64_t p = 64u << 10;
		while (v->size && p < v->size && p < (1ull << 30))
			p <<= 1;
		c->flight = v->size ? p : 0;
		break;
	}
	case AOPT_TRIGGER_ERROR:
	case AOPT_TRIGGER_SLOW: {
		struct trigger_error te;
		struct trigger_slow ts;
		if ((key == AOPT_TRIGGER_ERROR ? trigger_error_parse(value, &te, err, errlen)
		                               : trigger_slow_parse(value, &ts, err, errlen)) != 0)
			return -1;
		if (key == AOPT_TRIGGER_ERROR)
			snprintf(c->trigger_error, sizeof(c->trigger_error), "%s", value);
		else
			snprintf(c->trigger_slow, sizeof(c->trigger_slow), "%s", value);
		break;
	}
	case AOPT_CAPTURE_RANGE:
		c->capture_range = v->choice != 0;
		break;
	case AOPT_CAPTURE_RANGE_END:
		c->capture_end = (enum capture_end)v->choice;
		break;
	case AOPT_CAPTURE_RANGES:
		c->capture_ranges = v->u;
		break;
	case AOPT_DELAY_MS:
		c->delay_ms = v->u;
		break;
	case AOPT_DURATION_MS:
		c->duration_ms = v->u;
		break;
	case AOPT_NKEYS:
		break;
	}
	return 0;
}

/* Does the glob filter name functions (an include), or only leave some out? */
static bool has_include(const char *filter)
{
	for (const char *p = filter; *p;) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p && *p != '-' && *p != '!')
			return true;
		p += strcspn(p, ",");
	}
	return false;
}

/* A capture range opens and closes at cuProfilerStart and cuProfilerStop, which must then be
 * hooked (they are never recorded: capture_range.h): a funcs= list that names functions but not
 * them gets them added. One that excludes them keeps them out (the trace then says that no range
 * opened). */
static void hook_range_edges(struct cuhook_config *c)
{
	static const char edges[] = ",cuProfilerStart,cuProfilerStop";
	if (!c->capture_range || !has_include(c->funcs) ||
	    (glob_filter_match(c->funcs, "cuProfilerStart") && glob_filter_match(c->funcs, "cuProfilerStop")))
		return;
	size_t n = strlen(c->funcs);
	if (n + sizeof(edges) <= sizeof(c->funcs))
		memcpy(c->funcs + n, edges, sizeof(edges));
}

/* What the keys mean together. */
static int check_combination(struct cuhook_config *c, char *err, size_t errlen)
{
	/* One switch decides what is recorded: a range and a window would each want it. */
	if (c->capture_range && (c->delay_ms || c->duration_ms)) {
		snprintf(err, errlen, "capture_range= cannot be combined with delay_ms= or duration_ms= (the "
		         "recording follows cuProfilerStart/cuProfilerStop, or a window of time, not both)");
		return -1;
	}
	hook_range_edges(c);
	return 0;
}

int config_from_env(struct cuhook_config *c, char *err, size_t errlen)
{
	for (int k = 0; k < AOPT_NKEYS; k++) {
		if (aopt_defs[k].no_env)
			continue;
		char name[64];
		aopt_env_name((enum aopt_key)k, name, sizeof(name));
		/* not from whoever started a process that has more privileges than they do */
		const char *v = secure_getenv(name);
		union aopt_value val;
		if (v && (aopt_check((enum aopt_key)k, v, &val, err, errlen) != 0 ||
		          set(c, (enum aopt_key)k, v, &val, err, errlen) != 0)) {
			char tmp[256];
			snprintf(tmp, sizeof(tmp), "%s: %s", name, err);
			snprintf(err, errlen, "%s", tmp);
			return -1;
		}
	}
	return check_combination(c, err, errlen);
}

int config_from_string(struct cuhook_config *c, const char *opts, char *err, size_t errlen)
{
	if (aopt_parse(opts, set, c, err, errlen) != 0)
		return -1;
	return check_combination(c, err, errlen);
}

void config_output_path(const struct cuhook_config *c, char *out, size_t len)
{
	cuhook_trace_path(c->output, (int)getpid(), c->follow, out, len);
}
