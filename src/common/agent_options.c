#include "agent_options.h"

#include "byte_size.h"
#include "glob_filter.h"
#include "text_safe.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const clock_choices[] = {"tsc", "auto", "monotonic", NULL};
/* Nsight Systems' names (--capture-range, --capture-range-end); the first is the default. */
static const char *const capture_range_choices[] = {"none", "cudaProfilerApi", NULL};
static const char *const capture_end_choices[] = {"repeat", "stop", "none", NULL};

const struct aopt_def aopt_defs[AOPT_NKEYS] = {
	[AOPT_OUTPUT] = {"output", AOPT_TEXT, AOPT_PATH_MAX, 0, 0, NULL, true},
	[AOPT_FUNCS] = {"funcs", AOPT_GLOBS, AOPT_GLOBS_MAX, 0, 0, NULL, false},
	[AOPT_COUNT] = {"count", AOPT_GLOBS, AOPT_GLOBS_MAX, 0, 0, NULL, false},
	[AOPT_LIB] = {"lib", AOPT_GLOB, AOPT_GLOB_MAX, 0, 0, NULL, false},
	[AOPT_BUFFER_KB] = {"buffer_kb", AOPT_UINT, 0, 64, 1u << 20, NULL, false},
	[AOPT_DROP] = {"drop", AOPT_BOOL, 0, 0, 0, NULL, false},
	[AOPT_FLUSH_MS] = {"flush_ms", AOPT_UINT, 0, 1, 60000, NULL, false},
	[AOPT_CLOCK] = {"clock", AOPT_CHOICE, 0, 0, 0, clock_choices, false},
	[AOPT_VERBOSE] = {"verbose", AOPT_UINT, 0, 0, 3, NULL, false},
	[AOPT_DISABLE] = {"disable", AOPT_BOOL, 0, 0, 0, NULL, false},
	[AOPT_FOLLOW] = {"follow", AOPT_BOOL, 0, 0, 0, NULL, false},
	[AOPT_IOCTL] = {"ioctl", AOPT_BOOL, 0, 0, 0, NULL, false},
	[AOPT_IOCTL_PATHS] = {"ioctl_paths", AOPT_GLOBS, AOPT_GLOBS_MAX, 0, 0, NULL, true},
	[AOPT_STDERR] = {"stderr", AOPT_BOOL, 0, 0, 0, NULL, false},
	[AOPT_FORCE] = {"force", AOPT_BOOL, 0, 0, 0, NULL, false},
	[AOPT_MAX_SIZE] = {"max_size", AOPT_SIZE, 0, AOPT_MAX_SIZE_MIN, 0, NULL, false},
	/* Given by cuhook attach (src/agent/injector_watch.h): constructor mode has no injector. */
	[AOPT_INJECTOR] = {"injector", AOPT_UINT, 0, 1, INT_MAX, NULL, false, true},
	[AOPT_DEADLINE_MS] = {"deadline_ms", AOPT_UINT, 0, 1, UINT_MAX, NULL, false, true},
	/* The GPU's work through CUPTI (src/agent/gpu_activity.h); cupti= is the library to load
	 * instead of searching for one. */
	[AOPT_GPU] = {"gpu", AOPT_BOOL, 0, 0, 0, NULL, false},
	[AOPT_CUPTI] = {"cupti", AOPT_TEXT, AOPT_PATH_MAX, 0, 0, NULL, true},
	/* Who made the call (src/agent/stack_capture.h): the functions whose calls get a stack
	 * (empty: none), and the frames kept, native and Python each (STACK_DEPTH_MAX). */
	[AOPT_STACKS] = {"stacks", AOPT_GLOBS, AOPT_GLOBS_MAX, 0, 0, NULL, false},
	[AOPT_STACK_DEPTH] = {"stack_depth", AOPT_UINT, 0, 1, 256, NULL, false},
	/* The flight recorder (src/agent/flight.h): each thread's ring of this size keeps its newest
	 * calls, and nothing is written but at a dump (0 or empty: off, everything is written). */
	[AOPT_FLIGHT] = {"flight", AOPT_SIZE, 0, 64u << 10, 0, NULL, false},
	/* Dump triggers: a traced call returned an error ("any", or CUresult codes "700,719");
	 * a call of a function matching GLOBS took longer than MS milliseconds ("GLOBS:MS"). */
	[AOPT_TRIGGER_ERROR] = {"trigger_error", AOPT_TEXT, 255, 0, 0, NULL, false},
	[AOPT_TRIGGER_SLOW] = {"trigger_slow", AOPT_TEXT, AOPT_GLOBS_MAX, 0, 0, NULL, false},
	/* What part of the session is recorded (src/agent/capture_range.h): only between
	 * cuProfilerStart and cuProfilerStop, and which of those ranges (capture_ranges: at most that
	 * many, 0 every one); or from delay_ms after the start for duration_ms (0: to the end). */
	[AOPT_CAPTURE_RANGE] = {"capture_range", AOPT_CHOICE, 0, 0, 0, capture_range_choices, false},
	[AOPT_CAPTURE_RANGE_END] = {"capture_range_end", AOPT_CHOICE, 0, 0, 0, capture_end_choices, false},
	[AOPT_CAPTURE_RANGES] = {"capture_ranges", AOPT_UINT, 0, 0, UINT_MAX, NULL, false},
	[AOPT_DELAY_MS] = {"delay_ms", AOPT_UINT, 0, 0, UINT_MAX, NULL, false},
	[AOPT_DURATION_MS] = {"duration_ms", AOPT_UINT, 0, 0, UINT_MAX, NULL, false},
	/* The functions behind cuGetExportTable's tables, patched when a table is first returned
	 * (src/agent/export_tables.h). */
	[AOPT_EXPORT_TABLES] = {"export_tables", AOPT_BOOL, 0, 0, 0, NULL, false},
	/* Milliseconds of GPU kernel records (CUPTI) taken when a graph instantiated before tracing
	 * began is launched, to name its kernels (src/agent/kernel_names.h); 0: never. */
	[AOPT_NAMES_WINDOW] = {"names_window", AOPT_UINT, 0, 0, 600000, NULL, false},
};

/* Room for one item: the longest key, '=', the longest value. */
#define ITEM_MAX (32 + AOPT_PATH_MAX + 1)

int aopt_find(const char *name, size_t len)
{
	for (int k = 0; k < AOPT_NKEYS; k++)
		if (strlen(aopt_defs[k].name) == len && memcmp(aopt_defs[k].name, name, len) == 0)
			return k;
	return -1;
}

/* Values are shown in messages, at most their first SHOWN_MAX bytes: they may come from anywhere
 * (an environment, a command line). */
#define SHOWN_MAX 64
#define SHOWN(v) shown_value(shown, sizeof(shown), (v))

static const char *shown_value(char *buf, size_t cap, const char *v)
{
	text_safe_n(buf, cap, v, strnlen(v, SHOWN_MAX));
	return buf;
}

static int check_uint(const struct aopt_def *d, const char *name, const char *value, union aopt_value *v, char *err,
                      size_t errlen)
{
	char shown[SHOWN_MAX * TEXT_SAFE_GROWTH + 1];
	char *end;
	unsigned long x = strtoul(value, &end, 10);
	/* strtoul takes "-1" (as ULONG_MAX) and leading blanks: only digits are a number here */
	if (!isdigit((unsigned char)value[0]) || *end || x < d->lo || x > d->hi) {
		snprintf(err, errlen, "%s must be a number from %u to %u, not '%s'", name, d->lo, d->hi,
		         SHOWN(value));
		return -1;
	}
	v->u = (unsigned)x;
	return 0;
}

static int check_bool(const char *name, const char *value, union aopt_value *v, char *err, size_t errlen)
{
	static const char *const yes[] = {"1", "yes", "true", "on"}, *const no[] = {"0", "no", "false", "off", ""};
	for (unsigned i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!strcasecmp(value, yes[i])) {
			v->b = true;
			return 0;
		}
	for (unsigned i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (!strcasecmp(value, no[i])) {
			v->b = false;
			return 0;
		}
	char shown[SHOWN_MAX * TEXT_SAFE_GROWTH + 1];
	snprintf(err, errlen, "%s must be 0 or 1, not '%s'", name, SHOWN(value));
	return -1;
}

static int check_choice(const struct aopt_def *d, const char *name, const char *value, union aopt_value *v, char *err,
                        size_t errlen)
{
	if (!*value) {
		v->choice = 0;
		return 0;
	}
	for (unsigned i = 0; d->choices[i]; i++)
		if (!strcmp(value, d->choices[i])) {
			v->choice = i;
			return 0;
		}
	char shown[SHOWN_MAX * TEXT_SAFE_GROWTH + 1], list[128] = "";
	for (unsigned i = 0; d->choices[i]; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "", d->choices[i]);
	snprintf(err, errlen, "%s must be one of %s, not '%s'", name, list, SHOWN(value));
	return -1;
}

static int check_size(const struct aopt_def *d, const char *name, const char *value, union aopt_value *v, char *err,
                      size_t errlen)
{
	uint64_t n = 0;
	if (*value && (cuhook_parse_size(value, &n) != 0 || (n && n < d->lo))) {
		char shown[SHOWN_MAX * TEXT_SAFE_GROWTH + 1];
		snprintf(err, errlen, "%s must be 0 or a size of at least %uK (bytes, or with K, M, G), not '%s'", name,
		         d->lo >> 10, SHOWN(value));
		return -1;
	}
	v->size = n;
	return 0;
}

int aopt_check(enum aopt_key key, const char *value, union aopt_value *v, char *err, size_t errlen)
{
	char name[40];
	snprintf(name, sizeof(name), "'%s'", aopt_defs[key].name);
	return aopt_check_as(key, name, value, v, err, errlen);
}

int aopt_check_as(enum aopt_key key, const char *name, const char *value, union aopt_value *v, char *err,
                  size_t errlen)
{
	const struct aopt_def *d = &aopt_defs[key];
	char why[GLOB_PATTERN_MAX * TEXT_SAFE_GROWTH + 64];
	memset(v, 0, sizeof(*v));
	if (d->nonempty && !*value) {
		snprintf(err, errlen, "%s must not be empty", name);
		return -1;
	}
	switch (d->kind) {
	case AOPT_UINT:
		return check_uint(d, name, value, v, err, errlen);
	case AOPT_BOOL:
		return check_bool(name, value, v, err, errlen);
	case AOPT_CHOICE:
		return check_choice(d, name, value, v, err, errlen);
	case AOPT_SIZE:
		return check_size(d, name, value, v, err, errlen);
	case AOPT_TEXT:
	case AOPT_GLOBS:
	case AOPT_GLOB:
		break;
	}
	if (strlen(value) > d->max_len) {
		snprintf(err, errlen, "the value of %s is too long (at most %zu bytes)", name, d->max_len);
		return -1;
	}
	if ((d->kind == AOPT_GLOBS && glob_filter_check(value, why, sizeof(why)) < 0) ||
	    (d->kind == AOPT_GLOB && glob_pattern_check(value, strlen(value), why, sizeof(why)) < 0)) {
		snprintf(err, errlen, "%s: %s", name, why);
		return -1;
	}
	return 0;
}

/* The next item of *p ("key=value", up to ';' or the end): its start and length; *p moves
 * past it and its ';'. */
static const char *next_item(const char **p, size_t *len)
{
	const char *s = *p, *end = strchr(s, ';');
	*len = end ? (size_t)(end - s) : strlen(s);
	*p = s + *len + (end ? 1 : 0);
	return s;
}

/* Split item (NUL-terminated, writable) at its '=': the key, or -1 with err. */
static int split_item(char *item, char **value, char *err, size_t errlen)
{
	char shown[SHOWN_MAX * TEXT_SAFE_GROWTH + 1];
	char *eq = strchr(item, '=');
	if (!eq) {
		snprintf(err, errlen, "option '%s' has no '='", SHOWN(item));
		return -1;
	}
	*eq = 0;
	*value = eq + 1;
	int key = aopt_find(item, (size_t)(eq - item));
	if (key < 0) {
		char known[512] = "";
		for (int k = 0; k < AOPT_NKEYS; k++)
			snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s", k ? ", " : "",
			         aopt_defs[k].name);
		snprintf(err, errlen, "unknown option '%s' (the options are %s)", SHOWN(item), known);
	}
	return key;
}

int aopt_parse(const char *opts, aopt_fn fn, void *ctx, char *err, size_t errlen)
{
	while (opts && *opts) {
		size_t n;
		const char *s = next_item(&opts, &n);
		if (!n)
			continue;
		char item[ITEM_MAX];
		if (n >= sizeof(item)) {
			snprintf(err, errlen, "option too long");
			return -1;
		}
		memcpy(item, s, n);
		item[n] = 0;
		char *value;
		int key = split_item(item, &value, err, errlen);
		union aopt_value v;
		if (key < 0 || aopt_check((enum aopt_key)key, value, &v, err, errlen) < 0)
			return -1;
		if (fn && fn(ctx, (enum aopt_key)key, value, &v, err, errlen) != 0)
			return -1;
	}
	return 0;
}

int aopt_check_item(const char *item, char *err, size_t errlen)
{
	if (strchr(item, ';')) {
		snprintf(err, errlen, "an option value cannot contain ';' (it separates the options)");
		return -1;
	}
	return aopt_parse(item, NULL, NULL, err, errlen);
}

/* Append ";head" (or "head" first) to the string in buf. */
static int put(char *buf, size_t len, size_t *pos, const char *head, char *err, size_t errlen)
{
	int n = snprintf(buf + *pos, len - *pos, "%s%s", *pos ? ";" : "", head);
	if (n < 0 || (size_t)n >= len - *pos) {
		buf[*pos] = 0;
		snprintf(err, errlen, "the agent options are too long");
		return -1;
	}
	*pos += (size_t)n;
	return 0;
}

int aopt_append_item(char *buf, size_t len, size_t *pos, const char *item, char *err, size_t errlen)
{
	if (aopt_check_item(item, err, errlen) < 0)
		return -1;
	return put(buf, len, pos, item, err, errlen);
}

int aopt_append(char *buf, size_t len, size_t *pos, const char *key, const char *value, char *err,
                size_t errlen)
{
	char item[ITEM_MAX];
	if ((size_t)snprintf(item, sizeof(item), "%s=%s", key, value) >= sizeof(item)) {
		snprintf(err, errlen, "value of '%s' is too long", key);
		return -1;
	}
	return aopt_append_item(buf, len, pos, item, err, errlen);
}

int aopt_get(const char *opts, enum aopt_key key, char *buf, size_t len)
{
	int found = 0;
	size_t klen = strlen(aopt_defs[key].name);
	buf[0] = 0;
	while (opts && *opts) {
		size_t n;
		const char *s = next_item(&opts, &n);
		if (n > klen && s[klen] == '=' && memcmp(s, aopt_defs[key].name, klen) == 0) {
			snprintf(buf, len, "%.*s", (int)(n - klen - 1), s + klen + 1);
			found = 1;
		}
	}
	return found;
}

const char *aopt_env_name(enum aopt_key key, char *buf, size_t len)
{
	snprintf(buf, len, "CUHOOK_%s", aopt_defs[key].name);
	for (char *c = buf + 7; *c; c++)
		*c = (char)toupper((unsigned char)*c);
	return buf;
}
