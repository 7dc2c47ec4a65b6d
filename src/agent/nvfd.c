/* The ioctl watch: the fd table's rare paths and the installation of the hooks (nvfd.h says how
 * it works). */
#include "nvfd.h"

#include "agent_log.h"
#include "agent_state.h"
#include "libc_symbol.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

__attribute__((visibility("hidden"))) uint32_t nvfd_state[NVFD_MAX];
__attribute__((visibility("hidden"))) uint32_t nvfd_high;

static char paths_cfg[1024] = "/dev/nvidia*";

/* ---- path globs ------------------------------------------------------------------------------- */

/* One pattern (pat[0..plen)) against the whole of s: '*' any run, '?' one character. */
static int glob1(const char *pat, size_t plen, const char *s)
{
	size_t p = 0, star = (size_t)-1;
	const char *retry = NULL;
	while (*s) {
		if (p < plen && pat[p] == '*') {
			star = p++;
			retry = s;
		} else if (p < plen && (pat[p] == '?' || pat[p] == *s)) {
			p++;
			s++;
		} else if (star != (size_t)-1) {
			p = star + 1; /* let the last '*' take one more character */
			s = ++retry;
		} else {
			return 0;
		}
	}
	while (p < plen && pat[p] == '*')
		p++;
	return p == plen;
}

int nvfd_path_match(const char *patterns, const char *path)
{
	int included = 0;
	for (const char *p = patterns; p && *p;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		int exclude = n && (p[0] == '-' || p[0] == '!');
		if (n > (size_t)exclude && glob1(p + exclude, n - (size_t)exclude, path)) {
			if (exclude)
				return 0;
			included = 1;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return included;
}

/* ---- rare paths of the per-call check --------------------------------------------------------- */

uintptr_t nvfd_classify(void *arg)
{
	uint32_t fd = (uint32_t)(uintptr_t)arg;
	uint32_t *st = fd < NVFD_MAX ? &nvfd_state[fd] : NULL;
	uint32_t s0 = 0;
	if (st) {
		/* high first: a close_range from now on includes this fd */
		uint32_t h = __atomic_load_n(&nvfd_high, __ATOMIC_SEQ_CST);
		while (h < fd + 1 && !__atomic_compare_exchange_n(&nvfd_high, &h, fd + 1, 1, __ATOMIC_SEQ_CST,
		                                                   __ATOMIC_SEQ_CST)) {
		}
		s0 = __atomic_load_n(st, __ATOMIC_SEQ_CST);
		if (s0 & 3u)
			return s0 & 3u; /* another thread has just classified it */
	}
	/* "/proc/self/fd/N" without snprintf: this may run in a signal handler's traced call */
	char link[40] = "/proc/self/fd/", digits[12];
	unsigned nd = 0, pos = 14;
	do {
		digits[nd++] = (char)('0' + fd % 10);
		fd /= 10;
	} while (fd);
	while (nd)
		link[pos++] = digits[--nd];
	link[pos] = 0;
	char path[PATH_MAX];
	int saved = errno;
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	errno = saved;
	if (n < 0)
		return NVFD_OTHER; /* not open (the ioctl fails with EBADF), or no /proc: not cached */
	path[n] = 0;
	unsigned c = nvfd_path_match(paths_cfg, path) ? NVFD_NVIDIA : NVFD_OTHER;
	if (st) /* only if no forget came in between (the generation is part of s0) */
		__atomic_compare_exchange_n(st, &s0, s0 | c, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return c;
}

uintptr_t nvfd_errno(void *unused)
{
	(void)unused;
	return (uintptr_t)(unsigned)errno;
}

/* ---- installation ----------------------------------------------------------------------------- */

struct watched {
	const char *name;
	uint8_t op;          /* NVFD_OP_*, or NVFD_OP_NONE for ioctl itself */
	bool optional;       /* absent from older libcs (close_range) or an alias */
};

/* The fd-changing calls first: the table must follow every change before the first ioctl is
 * classified. ioctl last. The *64 names are aliases of the plain ones in 64-bit glibc (same
 * address: skipped); they are listed for libcs where they are not. The __*_nocancel ones are
 * glibc's private entry points (GLIBC_PRIVATE, still in the dynamic symbol table) that its own
 * functions use instead of the exported close and open: fclose, closedir, fopen with "c"... */
static const struct watched watched[] = {
	{"close", NVFD_OP_CLOSE, false},
	{"__close_nocancel", NVFD_OP_CLOSE, true}, /* glibc's own: fclose, closedir... */
	{"close_range", NVFD_OP_CLOSE_RANGE, true},
	{"dup2", NVFD_OP_DUP2, false},
	{"dup3", NVFD_OP_DUP2, true},
	{"dup", NVFD_OP_NEW, false},
	{"open", NVFD_OP_NEW, false},
	{"open64", NVFD_OP_NEW, true},
	{"openat", NVFD_OP_NEW, false},
	{"openat64", NVFD_OP_NEW, true},
	{"__open_nocancel", NVFD_OP_NEW, true},    /* glibc's own: fopen "c", opendir... */
	{"__open64_nocancel", NVFD_OP_NEW, true},
	{"creat", NVFD_OP_NEW, true},
	{"creat64", NVFD_OP_NEW, true},
	{"fcntl", NVFD_OP_FCNTL, false},
	{"fcntl64", NVFD_OP_FCNTL, true},
	{"ioctl", NVFD_OP_NONE, false},
};
#define NWATCHED (sizeof(watched) / sizeof(watched[0]))

static int ids[NWATCHED];
static bool tried;

/* The agent_libs entry for the library at base: the internal one (fd hooks) or the traced
 * ioctl one. Created on first use; its lib_id. */
static uint32_t lib_for(uintptr_t base, const char *path, bool ioctl, uint32_t first_id)
{
	for (unsigned i = 0; i < agent_nlibs; i++) {
		const struct agent_lib *l = &agent_libs[i];
		if (l->base == base && (ioctl ? l->ioctl : l->internal))
			return l->lib_id;
	}
	if (agent_nlibs == AGENT_MAX_LIBS)
		return 0;
	struct agent_lib *l = &agent_libs[agent_nlibs];
	memset(l, 0, sizeof(*l));
	l->lib_id = agent_nlibs + 1;
	l->base = base;
	l->first_id = first_id;
	l->count = 1;
	l->internal = !ioctl;
	l->ioctl = ioctl;
	strncpy(l->path, path ? path : "?", sizeof(l->path) - 1);
	agent_nlibs++;
	return l->lib_id;
}

static void forget_all(void)
{
	uint32_t high = __atomic_load_n(&nvfd_high, __ATOMIC_SEQ_CST);
	for (uint32_t fd = 0; fd < high && fd < NVFD_MAX; fd++)
		nvfd_forget(fd);
}

int nvfd_prepare(const char *paths)
{
	if (paths && *paths) {
		strncpy(paths_cfg, paths, sizeof(paths_cfg) - 1);
		paths_cfg[sizeof(paths_cfg) - 1] = 0;
	}
	char probe[PATH_MAX];
	if (readlink("/proc/self/fd/0", probe, sizeof(probe)) < 0 && errno != ENOENT)
		agent_log(2, "ioctl watch: cannot read /proc/self/fd (%s): no ioctl will be recorded",
		          strerror(errno));
	if (tried)
		return 0; /* a later start: the stubs made the first time are reused */
	int rc = 0;
	pthread_mutex_lock(&agent_lock);
	for (unsigned i = 0; i < NWATCHED; i++)
		ids[i] = -1;
	uintptr_t done[NWATCHED];
	unsigned ndone = 0;
	uint16_t ioctl_decoder = (uint16_t)cuhook_decoder_find("ioctl");
	for (unsigned i = 0; i < NWATCHED; i++) {
		const struct watched *w = &watched[i];
		uintptr_t addr;
		size_t size;
		Dl_info info;
		if (libc_symbol(w->name, &addr, &size, &info) != 0) {
			if (!w->optional || w->op == NVFD_OP_NONE)
				agent_log(w->op == NVFD_OP_NONE ? 2 : 1, "ioctl watch: %s not found in the loaded libc",
				          w->name);
			if (w->op == NVFD_OP_NONE)
				rc = -1;
			continue;
		}
		bool dup = false;
		for (unsigned k = 0; k < ndone; k++)
			dup |= done[k] == addr;
		if (dup)
			continue; /* an alias (open64 = open) */
		done[ndone++] = addr;
		bool is_ioctl = w->op == NVFD_OP_NONE;
		uint32_t lib = lib_for((uintptr_t)info.dli_fbase, info.dli_fname, is_ioctl, patch_count);
		ids[i] = is_ioctl ? hook_plan_internal(w->name, addr, size, HOOK_RECORD | HOOK_IOCTL, 0, ioctl_decoder, lib, NULL)
		                  : hook_plan_internal(w->name, addr, size, HOOK_FDOP, w->op, 0, lib, NULL);
		if (ids[i] < 0) {
			agent_log(is_ioctl ? 2 : 1, "ioctl watch: %s could not be hooked%s", w->name,
			          is_ioctl ? ": no ioctl will be recorded" : ": descriptors it changes may be misclassified");
			if (is_ioctl)
				rc = -1;
		}
	}
	tried = true;
	pthread_mutex_unlock(&agent_lock);
	return rc;
}

int nvfd_arm(bool threads_stopped)
{
	if (!tried)
		return -1; /* never prepared */
	forget_all(); /* fds closed while the hooks were off (between a stop and this start) */
	struct patch_request how = hook_request(threads_stopped, NULL);
	int rc = 0;
	unsigned installed = 0;
	for (unsigned i = 0; i < NWATCHED; i++) {
		if (ids[i] < 0) {
			if (watched[i].op == NVFD_OP_NONE)
				rc = -1;
			continue;
		}
		if (patch_rearm_one((uint32_t)ids[i], &how) == 0)
			installed++;
		else if (watched[i].op == NVFD_OP_NONE)
			rc = -1;
	}
	agent_log(rc ? 2 : 0, "ioctl watch: %u libc functions hooked; device files: %s", installed, paths_cfg);
	return rc;
}
