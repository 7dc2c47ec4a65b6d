/* Shared by the robustness targets (tests/robust/rt_*.c): load the agent (constructor mode, as
 * ctypes.CDLL would) before the stand-in libcuda, dlopen libcuda like the CUDA runtime does,
 * and take its entry points with dlsym. Every target checks each result it gets from the driver
 * itself and exits 3 on a wrong one (2: setup failure), so a test can tell "the program's
 * behaviour changed" from "the trace is wrong". */
#ifndef ROBUST_COMMON_H
#define ROBUST_COMMON_H

#include "fakecuda.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Typed entry points: RT_FN(lib, cuFakeInner) gives a pointer of cuFakeInner's type. */
#define RT_FN(lib, name) ((__typeof__(name) *)rt_sym((lib), #name))

static inline void *rt_sym(void *lib, const char *name)
{
	void *p = dlsym(lib, name);
	if (!p) {
		fprintf(stderr, "robust: dlsym %s: %s\n", name, dlerror());
		exit(2);
	}
	return p;
}

/* Loads the agent (if `agent` is not NULL), then libcuda. */
static inline void *rt_load(const char *agent, const char *libpath)
{
	if (agent) {
		void *h = dlopen(agent, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "robust: cannot load the agent: %s\n", dlerror());
			exit(2);
		}
	}
	void *lib = dlopen(libpath, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "robust: %s\n", dlerror());
		exit(2);
	}
	return lib;
}

/* Order-sensitive 64-bit checksum step (FNV-1a over the value's bytes). */
static inline unsigned long long rt_mix(unsigned long long h, unsigned long long v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= 0x100000001b3ull;
	}
	return h;
}
#define RT_MIX_INIT 0xcbf29ce484222325ull

/* Common options: --agent PATH ... LIB (the last argument). */
static inline const char *rt_opt(int argc, char **argv, const char *name)
{
	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return argv[i + 1];
	return NULL;
}

static inline long rt_opt_long(int argc, char **argv, const char *name, long dflt)
{
	const char *v = rt_opt(argc, argv, name);
	return v ? strtol(v, NULL, 0) : dflt;
}

/* A number of /proc/self/status ("VmRSS", "TracerPid"), or -1. */
static inline long rt_proc_status(const char *key)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long v = -1;
	size_t n = strlen(key);
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, key, n) == 0 && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	if (f)
		fclose(f);
	return v;
}

#endif
