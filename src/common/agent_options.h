/* The agent's options as one string, "key=value;key=value": what cuhook passes to
 * cuhook_agent_prepare() and cuhook_agent_start(), and (as CUHOOK_KEY variables) what the agent
 * reads in constructor mode. One table of keys serves both sides: the agent parses the string
 * with it, and cuhook builds the string with it and refuses a bad key or value before it
 * touches a process. docs/agent.md lists the keys.
 *
 * A new key: an entry in enum aopt_key and in the table (agent_options.c), then its use in the
 * agent (src/agent/config.c). */
#ifndef CUHOOK_AGENT_OPTIONS_H
#define CUHOOK_AGENT_OPTIONS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum aopt_key {
	AOPT_OUTPUT,
	AOPT_FUNCS,
	AOPT_COUNT,
	AOPT_LIB,
	AOPT_BUFFER_KB,
	AOPT_DROP,
	AOPT_FLUSH_MS,
	AOPT_CLOCK,
	AOPT_VERBOSE,
	AOPT_DISABLE,
	AOPT_FOLLOW,
	AOPT_IOCTL,
	AOPT_IOCTL_PATHS,
	AOPT_STDERR,
	AOPT_FORCE,
	AOPT_MAX_SIZE,
	AOPT_INJECTOR,
	AOPT_DEADLINE_MS,
	AOPT_GPU,
	AOPT_CUPTI,
	AOPT_STACKS,
	AOPT_STACK_DEPTH,
	AOPT_FLIGHT,
	AOPT_TRIGGER_ERROR,
	AOPT_TRIGGER_SLOW,
	AOPT_CAPTURE_RANGE,
	AOPT_CAPTURE_RANGE_END,
	AOPT_CAPTURE_RANGES,
	AOPT_DELAY_MS,
	AOPT_DURATION_MS,
	AOPT_EXPORT_TABLES,
	AOPT_NAMES_WINDOW,
	AOPT_NKEYS
};

enum aopt_kind {
	AOPT_TEXT,   /* any text without ';' (at most max_len bytes) */
	AOPT_GLOBS,  /* comma-separated fnmatch patterns (src/common/glob_filter.h) */
	AOPT_GLOB,   /* one fnmatch pattern */
	AOPT_UINT,   /* a decimal number from lo to hi */
	AOPT_BOOL,   /* 1/yes/true/on or 0/no/false/off/empty */
	AOPT_CHOICE, /* one of choices (empty: the first) */
	AOPT_SIZE,   /* bytes, or with K/M/G/T (src/common/byte_size.h), at least lo; 0 or empty: none */
};

/* Longest values, in bytes (the agent's buffers are one more). */
#define AOPT_PATH_MAX (PATH_MAX - 1)
#define AOPT_GLOBS_MAX 1023
#define AOPT_GLOB_MAX 255

/* The smallest size cap (max_size=, cuhook --max-size) accepted: room for the file header (the
 * command line and the executable's path, up to 8 KiB) and the closing blocks, with some left
 * for the tables and events. The agent's API header says the same (CUHOOK_MAX_SIZE_MIN). */
#define AOPT_MAX_SIZE_MIN (64u << 10)

struct aopt_def {
	const char *name;           /* the key; the variable is CUHOOK_ and the key in upper case */
	enum aopt_kind kind;
	size_t max_len;             /* TEXT, GLOBS, GLOB */
	unsigned lo, hi;            /* UINT; SIZE: lo */
	const char *const *choices; /* CHOICE: NULL-terminated */
	bool nonempty;              /* an empty value is refused */
	bool no_env;                /* no CUHOOK_ variable: only in the string cuhook passes */
};

extern const struct aopt_def aopt_defs[AOPT_NKEYS];

/* A value as checked: the number (UINT), the truth (BOOL), the index in choices (CHOICE) or the
 * bytes (SIZE, 0: none). Text values stay as they were given. */
union aopt_value {
	unsigned u;
	bool b;
	unsigned choice;
	uint64_t size;
};

/* The key called name (len bytes), or -1. */
int aopt_find(const char *name, size_t len);

/* Check value for key; fill *v. 0, or -1 with the reason in err, which names the key ('funcs'). */
int aopt_check(enum aopt_key key, const char *value, union aopt_value *v, char *err, size_t errlen);
/* The same, the reason naming what the value was given as instead (a command-line option). */
int aopt_check_as(enum aopt_key key, const char *name, const char *value, union aopt_value *v, char *err,
                  size_t errlen);

/* Walk an option string in order (a later item overrides an earlier one of the same key; empty
 * items are skipped): every item is checked, then given to fn with its value NUL-terminated.
 * Stops at the first bad item or at fn's first non-zero return. 0, or -1 with err set. */
typedef int (*aopt_fn)(void *ctx, enum aopt_key key, const char *value, const union aopt_value *v,
                       char *err, size_t errlen);
int aopt_parse(const char *opts, aopt_fn fn, void *ctx, char *err, size_t errlen);

/* Append "key=value" to the string being built in buf (pos: its length so far), after the same
 * checks as aopt_parse, and refusing a ';' in value (it would end the item). 0, or -1 with err. */
int aopt_append(char *buf, size_t len, size_t *pos, const char *key, const char *value, char *err,
                size_t errlen);
/* The same for one "key=value" item. */
int aopt_append_item(char *buf, size_t len, size_t *pos, const char *item, char *err, size_t errlen);
/* Check one "key=value" item without building anything. */
int aopt_check_item(const char *item, char *err, size_t errlen);

/* The value the agent would take for key from opts (its last item) into buf: 1, or 0 when
 * opts has none (buf ""). */
int aopt_get(const char *opts, enum aopt_key key, char *buf, size_t len);

/* "CUHOOK_BUFFER_KB" for AOPT_BUFFER_KB. */
const char *aopt_env_name(enum aopt_key key, char *buf, size_t len);

#endif
