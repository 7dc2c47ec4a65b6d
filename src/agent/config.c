#include "config.h"

#include "cuhook_agent.h"
#include "glob_filter.h"

#include "trace_path.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

void config_defaults(struct cuhook_config *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->output, "trace.bin");
	/* cudbg* are the debugger's entry points, not the API. */
	strcpy(c->funcs, "cu*,-cudbg*");
	strcpy(c->count, CUHOOK_COUNT_DEFAULT);
	strcpy(c->lib, "libcuda.so*");
	strcpy(c->ioctl_paths, "/dev/nvidia*");
	c->buffer_kb = 1024;
	c->flush_ms = 50;
}

static int set_str(char *dst, size_t cap, const char *v, const char *key, char *err, size_t errlen)
{
	if (strlen(v) >= cap) {
		snprintf(err, errlen, "value of '%s' is too long", key);
		return -1;
	}
	strcpy(dst, v);
	return 0;
}

static int set_uint(unsigned *dst, const char *v, unsigned lo, unsigned hi, const char *key, char *err,
                    size_t errlen)
{
	char *e;
	unsigned long x = strtoul(v, &e, 10);
	if (!*v || *e || x < lo || x > hi) {
		snprintf(err, errlen, "'%s' must be a number from %u to %u, not '%s'", key, lo, hi, v);
		return -1;
	}
	*dst = (unsigned)x;
	return 0;
}

static int set_bool(bool *dst, const char *v, const char *key, char *err, size_t errlen)
{
	if (!strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcasecmp(v, "on"))
		*dst = true;
	else if (!strcmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "false") || !strcasecmp(v, "off") || !*v)
		*dst = false;
	else {
		snprintf(err, errlen, "'%s' must be 0 or 1, not '%s'", key, v);
		return -1;
	}
	return 0;
}

/* key is lower case without the CUHOOK_ prefix */
static int set(struct cuhook_config *c, const char *key, const char *v, char *err, size_t errlen)
{
	if (!strcmp(key, "output"))
		return set_str(c->output, sizeof(c->output), v, key, err, errlen);
	if (!strcmp(key, "funcs") || !strcmp(key, "count")) {
		if (glob_filter_check(v) != 0) {
			snprintf(err, errlen, "a pattern of '%s' is longer than %d characters", key, GLOB_PATTERN_MAX);
			return -1;
		}
		if (!strcmp(key, "funcs"))
			return set_str(c->funcs, sizeof(c->funcs), v, key, err, errlen);
		return set_str(c->count, sizeof(c->count), v, key, err, errlen);
	}
	if (!strcmp(key, "lib"))
		return set_str(c->lib, sizeof(c->lib), v, key, err, errlen);
	if (!strcmp(key, "buffer_kb")) {
		if (set_uint(&c->buffer_kb, v, 64, 1u << 20, key, err, errlen))
			return -1;
		/* a power of two, so ring positions are a mask away */
		unsigned p = 64;
		while (p < c->buffer_kb)
			p <<= 1;
		c->buffer_kb = p;
		return 0;
	}
	if (!strcmp(key, "drop"))
		return set_bool(&c->drop, v, key, err, errlen);
	if (!strcmp(key, "flush_ms"))
		return set_uint(&c->flush_ms, v, 1, 60000, key, err, errlen);
	if (!strcmp(key, "clock")) {
		if (!strcmp(v, "tsc") || !strcmp(v, "auto") || !*v)
			c->monotonic = false;
		else if (!strcmp(v, "monotonic"))
			c->monotonic = true;
		else {
			snprintf(err, errlen, "'clock' must be tsc or monotonic, not '%s'", v);
			return -1;
		}
		return 0;
	}
	if (!strcmp(key, "verbose")) {
		unsigned x;
		if (set_uint(&x, v, 0, 3, key, err, errlen))
			return -1;
		c->verbose = (int)x;
		return 0;
	}
	if (!strcmp(key, "disable"))
		return set_bool(&c->disable, v, key, err, errlen);
	if (!strcmp(key, "ioctl"))
		return set_bool(&c->ioctl, v, key, err, errlen);
	if (!strcmp(key, "ioctl_paths")) {
		if (!*v) {
			snprintf(err, errlen, "'ioctl_paths' must not be empty");
			return -1;
		}
		return set_str(c->ioctl_paths, sizeof(c->ioctl_paths), v, key, err, errlen);
	}
	if (!strcmp(key, "follow"))
		return set_bool(&c->follow, v, key, err, errlen);
	/* Given by cuhook attach only (no CUHOOK_* variable: constructor mode has no injector). */
	if (!strcmp(key, "injector")) {
		unsigned pid;
		if (set_uint(&pid, v, 1, INT_MAX, key, err, errlen))
			return -1;
		c->injector = (int)pid;
		return 0;
	}
	if (!strcmp(key, "deadline_ms"))
		return set_uint(&c->deadline_ms, v, 1, UINT_MAX, key, err, errlen);
	snprintf(err, errlen, "unknown option '%s'", key);
	return -1;
}

static const char *const env_keys[] = {"output", "funcs", "count", "lib", "buffer_kb", "drop", "flush_ms",
                                        "clock", "verbose", "disable", "follow", "ioctl",
                                        "ioctl_paths"};

int config_from_env(struct cuhook_config *c, char *err, size_t errlen)
{
	for (unsigned i = 0; i < sizeof(env_keys) / sizeof(env_keys[0]); i++) {
		char name[64] = "CUHOOK_";
		for (unsigned k = 0; env_keys[i][k] && k < 50; k++)
			name[7 + k] = (char)toupper((unsigned char)env_keys[i][k]);
		const char *v = getenv(name);
		if (v && set(c, env_keys[i], v, err, errlen)) {
			char tmp[256];
			snprintf(tmp, sizeof(tmp), "%s: %s", name, err);
			snprintf(err, errlen, "%s", tmp);
			return -1;
		}
	}
	return 0;
}

int config_from_string(struct cuhook_config *c, const char *opts, char *err, size_t errlen)
{
	while (opts && *opts) {
		const char *end = strchr(opts, ';');
		size_t n = end ? (size_t)(end - opts) : strlen(opts);
		char item[2048];
		if (n >= sizeof(item)) {
			snprintf(err, errlen, "option too long");
			return -1;
		}
		memcpy(item, opts, n);
		item[n] = 0;
		if (n) {
			char *eq = strchr(item, '=');
			if (!eq) {
				snprintf(err, errlen, "option '%s' has no '='", item);
				return -1;
			}
			*eq = 0;
			if (set(c, item, eq + 1, err, errlen))
				return -1;
		}
		opts += n;
		if (*opts == ';')
			opts++;
	}
	return 0;
}

void config_output_path(const struct cuhook_config *c, char *out, size_t len)
{
	cuhook_trace_path(c->output, (int)getpid(), c->follow, out, len);
}
