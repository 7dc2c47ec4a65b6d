/* The options `cuhook run` and `cuhook attach` share, and the agent option string built from
 * them. The agent gets its configuration as the argument of cuhook_agent_start(), never through
 * the environment: an attached process's environment is fixed, and a spawned one's is the
 * user's. */
#include "inject_opts.h"

#include "cli_msg.h"
#include "commands.h"
#include "agent_options.h"
#include "text_safe.h"
#include "trigger_spec.h"

#include "out_file.h"
#include "trace_path.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The agent's deadline is the --duration plus this and two call timeouts: time for a detach on a
 * loaded machine (stopping every thread, the stop call, the fixups) before the agent may assume
 * that cuhook will not come. */
#define DEADLINE_GRACE_MS 5000

static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	if (*i + 1 >= argc) {
		cuhook_cli_error("%s needs a value", name);
		return NULL;
	}
	return argv[++*i];
}

/* A value of `key` given with option `name`, checked as the agent would check it: refused here,
 * before anything is done to a process, rather than by the agent inside it. */
static const char *agent_value(enum aopt_key key, const char *name, const char *v)
{
	char err[1024];
	union aopt_value val;
	if (v && aopt_check_as(key, name, v, &val, err, sizeof(err)) < 0) {
		cuhook_cli_error("%s", err);
		return NULL;
	}
	return v;
}

int cuhook_parse_seconds(const char *name, const char *v, double min, double max, double *out)
{
	char *end, shown[64 * TEXT_SAFE_GROWTH + 1];
	errno = 0;
	double x = strtod(v, &end);
	/* strtod takes "nan", "inf" and 1e400 (as inf, ERANGE): none is a time */
	if (end == v || *end || errno == ERANGE || !isfinite(x) || x < min || x > max) {
		text_safe_n(shown, sizeof(shown), v, strnlen(v, 64));
		cuhook_cli_error("%s wants seconds from %.10g to %.10g, not '%s'", name, min, max, shown);
		return -1;
	}
	*out = x;
	return 0;
}

/* --capture-range-end's value: nsys's repeat[:N], stop, none (its -shutdown forms end the program,
 * which cuhook never does). repeat:N goes to the agent as repeat and capture_ranges=N. */
static int capture_end_value(struct cuhook_inject_cli *c, const char *name, const char *v)
{
	char *end, shown[64 * TEXT_SAFE_GROWTH + 1];
	if (!strncmp(v, "repeat:", 7)) {
		errno = 0;
		unsigned long n = strtoul(v + 7, &end, 10);
		if (isdigit((unsigned char)v[7]) && !*end && errno == 0 && n >= 1 && n <= UINT_MAX) {
			c->capture_end = "repeat";
			c->capture_ranges = (unsigned)n;
			return 0;
		}
	} else if (agent_value(AOPT_CAPTURE_RANGE_END, name, v)) {
		c->capture_end = v;
		c->capture_ranges = 0;
		return 0;
	} else {
		return -1;
	}
	text_safe_n(shown, sizeof(shown), v, strnlen(v, 64));
	cuhook_cli_error("%s wants repeat, repeat:N (N from 1), stop or none, not '%s'", name, shown);
	return -1;
}

/* A size given with option `name` for the agent option `key`, where 0 (the agent's "none")
 * is refused: a cap or a ring asked for must be one. 0, or -1 with a message. */
static int size_value(enum aopt_key key, const char *name, const char *v, uint64_t *out)
{
	union aopt_value size;
	char err[256];
	if (aopt_check_as(key, name, v, &size, err, sizeof(err)) < 0 || !size.size) {
		char shown[64 * TEXT_SAFE_GROWTH + 1];
		text_safe_n(shown, sizeof(shown), v, strnlen(v, 64));
		cuhook_cli_error("%s wants a size of at least %uK (bytes, or with K, M, G), not '%s'", name,
		        aopt_defs[key].lo >> 10, shown);
		return -1;
	}
	*out = size.size;
	return 0;
}

/* A trigger's text as the agent will parse it (src/common/trigger_spec.h): refused here with
 * the parser's message, before a process is touched. */
static int trigger_check(enum aopt_key key, const char *text, const char *name)
{
	char err[256];
	struct trigger_error te;
	struct trigger_slow ts;
	int r = key == AOPT_TRIGGER_ERROR ? trigger_error_parse(text, &te, err, sizeof(err))
	                                  : trigger_slow_parse(text, &ts, err, sizeof(err));
	if (r < 0)
		cuhook_cli_error("%s: %s", name, err);
	return r;
}

/* --trigger error[=CODES] or slow=GLOBS:MS, each kind once. */
static int trigger_opt(struct cuhook_inject_cli *c, const char *v)
{
	const char **slot;
	const char *text;
	enum aopt_key key;
	if (!strcmp(v, "error") || !strncmp(v, "error=", 6)) {
		key = AOPT_TRIGGER_ERROR, slot = &c->trigger_error, text = v[5] ? v + 6 : "any";
	} else if (!strncmp(v, "slow=", 5)) {
		key = AOPT_TRIGGER_SLOW, slot = &c->trigger_slow, text = v + 5;
	} else {
		char shown[64 * TEXT_SAFE_GROWTH + 1];
		text_safe_n(shown, sizeof(shown), v, strnlen(v, 64));
		cuhook_cli_error("--trigger wants error, error=CODES or slow=GLOBS:MS, not '%s'", shown);
		return -1;
	}
	if (*slot) {
		cuhook_cli_error("--trigger %s given twice (one of each kind; several codes or globs go in one, "
		                "comma-separated)", key == AOPT_TRIGGER_ERROR ? "error" : "slow");
		return -1;
	}
	if (trigger_check(key, text, "--trigger") < 0)
		return -1;
	*slot = text;
	return 0;
}

int cuhook_parse_pid(const char *v, pid_t *pid)
{
	char *end;
	long x = v ? strtol(v, &end, 10) : 0;
	if (!v || *end || x <= 0 || x > INT32_MAX)
		return -1;
	*pid = (pid_t)x;
	return 0;
}

int cuhook_inject_cli_opt(struct cuhook_inject_cli *c, int argc, char **argv, int *i)
{
	const char *a = argv[*i];
	const char *v;
	/* --name=value is accepted as well as --name value */
	const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
	char name[64];
	if (eq && (size_t)(eq - a) < sizeof(name)) {
		memcpy(name, a, (size_t)(eq - a));
		name[eq - a] = 0;
		a = name;
	}
#define VALUE() (eq ? eq + 1 : opt_value(argc, argv, i, a))
	if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
		if (!(c->output = VALUE()))
			return -1;
	} else if (!strcmp(a, "--ioctl")) {
		c->ioctl = 1;
	} else if (!strcmp(a, "--export-tables")) {
		c->export_tables = 1;
	} else if (!strcmp(a, "--force")) {
		c->force = 1;
	} else if (!strcmp(a, "--gpu")) {
		c->gpu = 1;
	} else if (!strcmp(a, "--names-window")) {
		double sec;
		if (!(v = VALUE()) || cuhook_parse_seconds(a, v, 0, 600, &sec) < 0)
			return -1;
		c->names_window_ms = (unsigned)(sec * 1000 + 0.5);
		c->names_window_set = 1;
	} else if (!strcmp(a, "--cupti")) {
		if (!(c->cupti = agent_value(AOPT_CUPTI, a, VALUE())))
			return -1;
		c->gpu = 1;
	} else if (!strcmp(a, "--max-size")) {
		/* the agent's max_size= (where 0 means no cap) */
		if (!(v = VALUE()) || size_value(AOPT_MAX_SIZE, a, v, &c->max_size) < 0)
			return -1;
	} else if (!strcmp(a, "--flight-recorder")) {
		/* the size only as --flight-recorder=SIZE: a word after it is the PID or the program */
		if (size_value(AOPT_FLIGHT, a, eq ? eq + 1 : CUHOOK_FLIGHT_DEFAULT, &c->flight) < 0)
			return -1;
	} else if (!strcmp(a, "--trigger")) {
		if (!(v = VALUE()) || trigger_opt(c, v) < 0)
			return -1;
	} else if (!strcmp(a, "--funcs") || !strcmp(a, "--functions")) { /* report's name, an alias */
		if (!(c->funcs = agent_value(AOPT_FUNCS, a, VALUE())))
			return -1;
	} else if (!strcmp(a, "--count")) {
		if (!(c->count = agent_value(AOPT_COUNT, a, VALUE())))
			return -1;
	} else if (!strcmp(a, "--record-all")) {
		c->count = ""; /* an empty list: nothing counted, every call recorded */
	} else if (!strcmp(a, "--stacks")) {
		if (!(c->stacks = agent_value(AOPT_STACKS, a, VALUE())))
			return -1;
	} else if (!strcmp(a, "--no-stacks")) {
		c->stacks = ""; /* an empty list: no call gets a stack */
	} else if (!strcmp(a, "--stack-depth")) {
		if (!(c->stack_depth = agent_value(AOPT_STACK_DEPTH, a, VALUE())))
			return -1;
	} else if (!strcmp(a, "--capture-range")) {
		if (!(c->capture_range = agent_value(AOPT_CAPTURE_RANGE, a, VALUE())))
			return -1;
	} else if (!strcmp(a, "--capture-range-end")) {
		if (!(v = VALUE()) || capture_end_value(c, a, v) < 0)
			return -1;
	} else if (!strcmp(a, "--agent")) {
		if (!(c->agent = VALUE()))
			return -1;
	} else if (!strcmp(a, "--opt")) {
		if (!(v = VALUE()))
			return -1;
		if (!strchr(v, '=') || c->nextra >= (int)(sizeof(c->extra) / sizeof(c->extra[0]))) {
			cuhook_cli_error("--opt wants KEY=VALUE (at most 32)");
			return -1;
		}
		char err[1024];
		if (!strncmp(v, "output=", 7)) {
			/* a relative path would be the target's, not ours: -o makes it absolute */
			cuhook_cli_error("--opt output=...: use -o FILE");
			return -1;
		}
		if (aopt_check_item(v, err, sizeof(err)) < 0) {
			char shown[64 * TEXT_SAFE_GROWTH + 1];
			text_safe_n(shown, sizeof(shown), v, strnlen(v, 64));
			cuhook_cli_error("--opt %s: %s", shown, err);
			return -1;
		}
		if (!strncmp(v, "trigger_error=", 14) && trigger_check(AOPT_TRIGGER_ERROR, v + 14, "--opt trigger_error") < 0)
			return -1;
		if (!strncmp(v, "trigger_slow=", 13) && trigger_check(AOPT_TRIGGER_SLOW, v + 13, "--opt trigger_slow") < 0)
			return -1;
		c->extra[c->nextra++] = v;
	} else if (!strcmp(a, "--call-timeout")) {
		/* at least 1 ms (0 ms means the default); at most an hour: the target waits meanwhile */
		if (!(v = VALUE()) || cuhook_parse_seconds(a, v, 0.001, 3600, &c->call_timeout) < 0)
			return -1;
	} else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
		c->verbose = 1;
	} else {
		return 0;
	}
#undef VALUE
	return 1;
}

/* Append "key=value" (key NULL: value is a whole "key=value" item), checked by the codec. */
static int append(char *buf, size_t len, size_t *pos, const char *key, const char *value)
{
	char err[1024];
	int r = key ? aopt_append(buf, len, pos, key, value, err, sizeof(err))
	            : aopt_append_item(buf, len, pos, value, err, sizeof(err));
	if (r < 0)
		cuhook_cli_error("%s", err);
	return r;
}

/* Append key=BYTES (a size, in decimal). */
static int append_bytes(char *buf, size_t len, size_t *pos, const char *key, uint64_t bytes)
{
	char n[32];
	snprintf(n, sizeof(n), "%llu", (unsigned long long)bytes);
	return append(buf, len, pos, key, n);
}

void cuhook_inject_cli_watch(struct cuhook_inject_cli *c, pid_t target, double duration)
{
	char p[64];
	struct stat ours, theirs;
	snprintf(p, sizeof(p), "/proc/%d/ns/pid", target);
	if (stat("/proc/self/ns/pid", &ours) == 0 && stat(p, &theirs) == 0 && ours.st_dev == theirs.st_dev &&
	    ours.st_ino == theirs.st_ino)
		c->injector = (int)getpid();
	double timeout_ms = c->call_timeout > 0 ? c->call_timeout * 1000 : CUHOOK_INJECT_CALL_TIMEOUT_MS;
	double ms = duration * 1000 + DEADLINE_GRACE_MS + 2 * timeout_ms;
	c->deadline_ms = duration >= 0 && ms < UINT_MAX ? (unsigned)ms : 0;
}

/* Append key=PATH with PATH made absolute against our working directory: the target's may
 * differ (an attached process), and the agent opens it there. */
static int append_path(char *buf, size_t len, size_t *pos, const char *key, const char *path)
{
	char abs[PATH_MAX + 1];
	if (path[0] == '/') {
		snprintf(abs, sizeof(abs), "%s", path);
	} else {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd))) {
			cuhook_cli_error("getcwd: %s", strerror(errno));
			return -1;
		}
		snprintf(abs, sizeof(abs), "%s/%s", cwd, path);
	}
	return append(buf, len, pos, key, abs);
}

/* What part of the session is recorded: a capture range, or (run) a window of time; not both. */
static int capture_options(const struct cuhook_inject_cli *c, char *buf, size_t len, size_t *pos)
{
	bool range = c->capture_range && strcmp(c->capture_range, "none") != 0;
	if (range && (c->delay_ms || c->duration_ms)) {
		cuhook_cli_error("--capture-range cannot be combined with --delay or --duration: the recording "
		        "follows cuProfilerStart/cuProfilerStop, or a window of time, not both");
		return -1;
	}
	if (c->capture_end && !range) {
		cuhook_cli_error("--capture-range-end needs --capture-range cudaProfilerApi");
		return -1;
	}
	char num[16];
	if (c->capture_range && append(buf, len, pos, "capture_range", c->capture_range) < 0)
		return -1;
	if (c->capture_end && append(buf, len, pos, "capture_range_end", c->capture_end) < 0)
		return -1;
	snprintf(num, sizeof(num), "%u", c->capture_ranges);
	if (c->capture_ranges && append(buf, len, pos, "capture_ranges", num) < 0)
		return -1;
	snprintf(num, sizeof(num), "%u", c->delay_ms);
	if (c->delay_ms && append(buf, len, pos, "delay_ms", num) < 0)
		return -1;
	snprintf(num, sizeof(num), "%u", c->duration_ms);
	if (c->duration_ms && append(buf, len, pos, "duration_ms", num) < 0)
		return -1;
	return 0;
}

int cuhook_inject_cli_options(const struct cuhook_inject_cli *c, const char *default_output,
                              char *buf, size_t len)
{
	size_t pos = 0;
	buf[0] = 0;
	const char *out = c->output ? c->output : default_output;
	if (out && append_path(buf, len, &pos, "output", out) < 0)
		return -1;
	if (c->gpu && append(buf, len, &pos, "gpu", "1") < 0)
		return -1;
	if (c->cupti && append_path(buf, len, &pos, "cupti", c->cupti) < 0)
		return -1;
	if (c->ioctl && append(buf, len, &pos, "ioctl", "1") < 0)
		return -1;
	if (c->export_tables && append(buf, len, &pos, "export_tables", "1") < 0)
		return -1;
	if (c->names_window_set) {
		char ms[16];
		snprintf(ms, sizeof(ms), "%u", c->names_window_ms);
		if (append(buf, len, &pos, "names_window", ms) < 0)
			return -1;
	}
	if (c->force && append(buf, len, &pos, "force", "1") < 0)
		return -1;
	if (c->max_size && append_bytes(buf, len, &pos, "max_size", c->max_size) < 0)
		return -1;
	if ((c->trigger_error || c->trigger_slow) && !c->flight) {
		/* a trigger dumps a flight recorder's rings: without one every call is written anyway */
		cuhook_cli_error("--trigger needs --flight-recorder (without it every call is written as it "
		                "goes, and there is nothing to dump)");
		return -1;
	}
	if (c->flight && append_bytes(buf, len, &pos, "flight", c->flight) < 0)
		return -1;
	if (c->trigger_error && append(buf, len, &pos, "trigger_error", c->trigger_error) < 0)
		return -1;
	if (c->trigger_slow && append(buf, len, &pos, "trigger_slow", c->trigger_slow) < 0)
		return -1;
	if (c->funcs && append(buf, len, &pos, "funcs", c->funcs) < 0)
		return -1;
	if (c->count && append(buf, len, &pos, "count", c->count) < 0)
		return -1;
	if (c->stacks && append(buf, len, &pos, "stacks", c->stacks) < 0)
		return -1;
	if (c->stack_depth && append(buf, len, &pos, "stack_depth", c->stack_depth) < 0)
		return -1;
	if (capture_options(c, buf, len, &pos) < 0)
		return -1;
	char num[16];
	snprintf(num, sizeof(num), "%d", c->injector);
	if (c->injector && append(buf, len, &pos, "injector", num) < 0)
		return -1;
	snprintf(num, sizeof(num), "%u", c->deadline_ms);
	if (c->deadline_ms && append(buf, len, &pos, "deadline_ms", num) < 0)
		return -1;
	for (int i = 0; i < c->nextra; i++)
		if (append(buf, len, &pos, NULL, c->extra[i]) < 0)
			return -1;
	return 0;
}

/* A boolean agent option as the agent takes it: its last value in opts (checked when built). */
static bool option_true(const char *opts, enum aopt_key key)
{
	char v[16], err[256];
	union aopt_value val;
	return aopt_get(opts, key, v, sizeof(v)) && aopt_check(key, v, &val, err, sizeof(err)) == 0 && val.b;
}

int cuhook_inject_check_output(const char *cmd, const char *options, pid_t pid)
{
	char out[PATH_MAX], path[PATH_MAX + 32], err[PATH_MAX + 256];
	if (!aopt_get(options, AOPT_OUTPUT, out, sizeof(out)))
		return 0;
	bool follow = option_true(options, AOPT_FOLLOW);
	if (pid <= 0 && (follow || strstr(out, "%p")))
		return 0; /* named after a process that does not exist yet: its agent decides */
	cuhook_trace_path(out, (int)pid, follow, path, sizeof(path));
	if (cuhook_out_check(path, option_true(options, AOPT_FORCE), "trace file",
	                     "pass --force to replace it, or choose another name with -o", err, sizeof(err)) == 0)
		return 0;
	fprintf(stderr, "cuhook %s: %s\n", cmd, err);
	return -1;
}

int cuhook_inject_cli_setup(const struct cuhook_inject_cli *c, struct cuhook_inject_opts *o,
                            char *agent_buf, size_t agent_len)
{
	if (c->agent) {
		char real[PATH_MAX];
		if (!realpath(c->agent, real) || strlen(real) >= agent_len) {
			cuhook_cli_error("agent library %s not found", c->agent);
			return -1;
		}
		strcpy(agent_buf, real);
	} else if (cuhook_agent_path(agent_buf, agent_len) < 0) {
		return -1;
	}
	o->agent_path = agent_buf;
	o->call_timeout_ms = c->call_timeout > 0 ? (int)(c->call_timeout * 1000 + 0.5) : 0;
	o->verbose = c->verbose;
	return 0;
}
