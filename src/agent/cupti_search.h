/* Where to look for CUPTI (libcupti), in order: a pure function of the explicit path, the
 * objects the process has loaded and its environment, so that the order is tested without a
 * process (tests/unit/test_cupti_search.c). gpu_activity.c tries the candidates with dlopen.
 *
 * The order (docs/agent.md, "The GPU side"):
 *   1. the explicit path (option cupti=PATH, cuhook --cupti PATH), alone: it loads or the
 *      session says so;
 *   2. a libcupti the process has loaded already, alone: a second copy would fight the first
 *      over the driver's profiling interface;
 *   3. next to the program's NVIDIA wheels: for every loaded object under a directory named
 *      "nvidia" (site-packages/nvidia/cu13/lib/libcublas.so.13...), that nvidia/cu13/lib and
 *      nvidia/cuda_cupti/lib; the directory of a loaded libcudart, and its toolkit's
 *      extras/CUPTI/lib64 (DIR/../extras/CUPTI/lib64);
 *   4. $CUDA_HOME, then $CUDA_PATH: extras/CUPTI/lib64, lib64;
 *   5. /usr/local/cuda/extras/CUPTI/lib64, /usr/local/cuda/lib64;
 *   6. the loader's own search (LD_LIBRARY_PATH, the cache) for libcupti.so.13, libcupti.so.
 * In every directory libcupti.so.13 comes before libcupti.so (the unversioned name may be
 * another major version). Duplicates are dropped. */
#ifndef CUHOOK_CUPTI_SEARCH_H
#define CUHOOK_CUPTI_SEARCH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define CUPTI_CANDIDATES_MAX 32

struct cupti_search_input {
	const char *explicit_path;   /* NULL or "": none */
	const char *const *loaded;   /* the paths of the loaded objects, in the loader's order */
	size_t nloaded;
	const char *cuda_home;       /* $CUDA_HOME, NULL when unset */
	const char *cuda_path;       /* $CUDA_PATH, NULL when unset */
};

enum cupti_candidate_kind {
	CUPTI_EXPLICIT,  /* the explicit path */
	CUPTI_LOADED,    /* already loaded in the process */
	CUPTI_SEARCHED,  /* an absolute path found by the rules 3 to 5 (may not exist) */
	CUPTI_BY_LOADER, /* a bare name for the loader's own search */
};

struct cupti_candidates {
	enum cupti_candidate_kind kind; /* of every candidate: EXPLICIT or LOADED (one candidate),
	                                   else SEARCHED then BY_LOADER ones */
	unsigned n;
	unsigned nsearched;             /* the first nsearched are CUPTI_SEARCHED, the rest by loader */
	char path[CUPTI_CANDIDATES_MAX][PATH_MAX];
};

/* Fill out with the candidates in the order above. */
void cupti_search(const struct cupti_search_input *in, struct cupti_candidates *out);

/* Is this path's file name a libcupti (libcupti.so, libcupti.so.13, libcupti.so.13.0.1...)? */
bool cupti_is_libcupti(const char *path);

#endif
