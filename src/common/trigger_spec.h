/* The flight recorder's dump triggers as users write them (cuhook --trigger, agent options
 * trigger_error= and trigger_slow=): parsed by the CLI, which refuses a bad one before it
 * touches a process, and by the agent, with the same rules. */
#ifndef CUHOOK_TRIGGER_SPEC_H
#define CUHOOK_TRIGGER_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TRIGGER_CODES_MAX 16
#define TRIGGER_NOT_READY 600u /* CUDA_ERROR_NOT_READY: a query's "not yet", not an error */

/* trigger_error=: "" (off), "any" (every nonzero CUresult but CUDA_ERROR_NOT_READY), or a
 * comma-separated list of CUresult codes (decimal). */
struct trigger_error {
	bool on;
	bool any;
	unsigned ncodes;
	uint32_t codes[TRIGGER_CODES_MAX];
};

/* trigger_slow=: "GLOBS:MS": a call of a function matching GLOBS (src/common/glob_filter.h)
 * that lasted longer than MS milliseconds (1 to 3600000). "" is off. */
struct trigger_slow {
	bool on;
	char globs[1024];
	uint32_t ms;
};

/* 0, or -1 with a message in err. */
int trigger_error_parse(const char *text, struct trigger_error *t, char *err, size_t errlen);
int trigger_slow_parse(const char *text, struct trigger_slow *t, char *err, size_t errlen);

/* Does a call that returned `ret` fire the error trigger? */
static inline bool trigger_error_fires(const struct trigger_error *t, uint64_t ret)
{
	uint32_t r = (uint32_t)ret;
	if (!t->on || r == 0)
		return false;
	if (t->any)
		return r != TRIGGER_NOT_READY;
	for (unsigned i = 0; i < t->ncodes; i++)
		if (t->codes[i] == r)
			return true;
	return false;
}

#endif
