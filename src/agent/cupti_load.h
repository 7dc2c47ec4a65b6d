/* Finding and loading CUPTI: the candidates in cupti_search's order, each loaded with
 * dlopen(RTLD_NOW | RTLD_LOCAL), every function the agent calls looked up with dlsym, and taken
 * only when cuptiGetVersion says the major version whose records cuhook reads (cupti_abi.h).
 * Calls into the loader (dl_iterate_phdr, dlopen): only where the agent may take its locks (a
 * preparation, or a thread of the agent's own). */
#ifndef CUHOOK_CUPTI_LOAD_H
#define CUHOOK_CUPTI_LOAD_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "cupti_abi.h"

struct cupti_lib {
	void *handle;          /* NULL: not loaded */
	char path[PATH_MAX];   /* where it was loaded from (the loader's answer for a bare name) */
	uint32_t version;      /* cuptiGetVersion() */
	struct cupti_fns f;
};

/* Load the first usable candidate into *out. want: the explicit path (cupti=), or "". 0; or -1
 * with the session's status (CUHOOK_GPU_NO_CUPTI, CUHOOK_GPU_FAILED for one of another version
 * or a loaded one that cannot be used) and a message ("GPU: ...") in msg. tried: every path
 * tried, ':'-separated, for the GPU_SESSION block. */
int cupti_load(const char *want, struct cupti_lib *out, uint32_t *status, char *msg, size_t msglen, char *tried,
               size_t triedlen);

#endif
