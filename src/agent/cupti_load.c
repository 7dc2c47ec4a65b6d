#include "cupti_load.h"

#include "cupti_search.h"
#include "trace_format.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
	const char *name;
	size_t off;
} fn_names[] = {
#define FN(x) {"cupti" #x, offsetof(struct cupti_fns, x)}
	FN(GetVersion), FN(GetResultString), FN(Subscribe), FN(Unsubscribe), FN(GetCallbackName),
	FN(SetThreadIdType), FN(ActivityRegisterTimestampCallback), FN(ActivityRegisterCallbacks),
	FN(ActivityEnable), FN(ActivityDisable), FN(ActivityEnableDriverApi), FN(ActivityFlushAll),
	FN(ActivityGetNextRecord), FN(ActivityGetNumDroppedRecords), FN(Finalize),
#undef FN
};

enum { OPEN_OK = 0, OPEN_FAILED = -1, OPEN_OTHER_VERSION = -2 };

/* Open one candidate into *out: OPEN_OK when it is a CUPTI of our major version with every
 * function; else why in err. */
static int open_candidate(const char *path, struct cupti_lib *out, char *err, size_t errlen)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : "cannot be loaded");
		return OPEN_FAILED;
	}
	struct cupti_fns f;
	for (size_t i = 0; i < sizeof(fn_names) / sizeof(fn_names[0]); i++) {
		void *p = dlsym(h, fn_names[i].name);
		if (!p) {
			snprintf(err, errlen, "%s has no %s", path, fn_names[i].name);
			dlclose(h);
			return OPEN_FAILED;
		}
		memcpy((char *)&f + fn_names[i].off, &p, sizeof(p));
	}
	uint32_t v = 0;
	if (f.GetVersion(&v) != CUPTI_OK || CUPTI_ABI_VERSION_MAJOR(v) != CUPTI_ABI_MAJOR) {
		/* its records may be laid out otherwise: nothing else of it is called */
		snprintf(err, errlen, "%s is CUPTI version %u; cuhook reads the records of CUPTI %u (%u0000 to %u9999)",
		         path, v, CUPTI_ABI_MAJOR, CUPTI_ABI_MAJOR, CUPTI_ABI_MAJOR);
		dlclose(h);
		return OPEN_OTHER_VERSION;
	}
	out->handle = h;
	out->f = f;
	out->version = v;
	snprintf(out->path, sizeof(out->path), "%s", path);
	struct link_map *lm = NULL; /* where the loader found a bare name */
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
		snprintf(out->path, sizeof(out->path), "%s", lm->l_name);
	return OPEN_OK;
}

/* The directories a search looked in, for the message (the block has every path). */
static void searched_dirs(const struct cupti_candidates *c, char *out, size_t len)
{
	out[0] = 0;
	size_t n = 0;
	int prev_len = -1;
	for (unsigned i = 0; i < c->nsearched && n + 1 < len; i++) {
		const char *slash = strrchr(c->path[i], '/');
		int dl = slash ? (int)(slash - c->path[i]) : 0;
		/* a directory's names come one after the other */
		if (i > 0 && dl == prev_len && !strncmp(c->path[i], c->path[i - 1], (size_t)dl))
			continue;
		prev_len = dl;
		int w = snprintf(out + n, len - n, "%s%.*s", n ? ", " : "", dl, c->path[i]);
		n = w < 0 ? n : n + (size_t)w < len ? n + (size_t)w : len - 1;
	}
}

struct loaded_list {
	const char *paths[512];
	size_t n;
};

static int loaded_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	struct loaded_list *l = ctx;
	if (l->n < sizeof(l->paths) / sizeof(l->paths[0]) && info->dlpi_name)
		l->paths[l->n++] = strdup(info->dlpi_name);
	return 0;
}

int cupti_load(const char *want, struct cupti_lib *out, uint32_t *status, char *msg, size_t msglen, char *tried,
               size_t triedlen)
{
	static struct cupti_candidates c; /* 128 KiB; the callers are serialised (gpu_activity.c) */
	struct loaded_list l = {.n = 0};
	dl_iterate_phdr(loaded_cb, &l);
	struct cupti_search_input in = {want, l.paths, l.n, secure_getenv("CUDA_HOME"), secure_getenv("CUDA_PATH")};
	cupti_search(&in, &c);
	for (size_t i = 0; i < l.n; i++)
		free((void *)l.paths[i]);
	char err[PATH_MAX + 200] = "", other[PATH_MAX + 200] = "";
	tried[0] = 0;
	for (unsigned i = 0; i < c.n; i++) {
		size_t n = strlen(tried);
		snprintf(tried + n, triedlen - n, "%s%s", n ? ":" : "", c.path[i]);
		if (i < c.nsearched && c.kind == CUPTI_SEARCHED && access(c.path[i], F_OK) != 0)
			continue; /* not there: no need to ask the loader */
		int r = open_candidate(c.path[i], out, err, sizeof(err));
		if (r == OPEN_OK)
			return 0;
		if (r == OPEN_OTHER_VERSION)
			snprintf(other, sizeof(other), "%s", err);
	}
	*status = c.kind == CUPTI_EXPLICIT && !other[0] ? CUHOOK_GPU_NO_CUPTI : CUHOOK_GPU_FAILED;
	if (other[0]) {
		snprintf(msg, msglen, "GPU: %s", other);
	} else if (c.kind == CUPTI_EXPLICIT || c.kind == CUPTI_LOADED) {
		snprintf(msg, msglen, "GPU: cannot use CUPTI %s: %s", c.path[0], err);
	} else {
		char dirs[400];
		searched_dirs(&c, dirs, sizeof(dirs));
		*status = CUHOOK_GPU_NO_CUPTI;
		snprintf(msg, msglen, "GPU: no CUPTI found (looked for libcupti.so.13 and libcupti.so in %s, and through "
		         "the loader's search path); --cupti PATH names one", dirs[0] ? dirs : "no directory");
	}
	return -1;
}
