#include "code_write.h"

#include "self_maps.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE 4096ul

struct prot_query {
	uintptr_t addr, end;
	int prot;
};

static bool prot_line(uintptr_t a, uintptr_t b, const char *perms, void *ctx)
{
	struct prot_query *q = ctx;
	if (q->addr < a || q->addr >= b)
		return false;
	q->prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
	          (perms[2] == 'x' ? PROT_EXEC : 0);
	q->end = b;
	return true;
}

/* Protection of the mapping containing `addr`, from /proc/self/maps; -1 if unmapped. */
static int prot_of(uintptr_t addr, uintptr_t *map_end)
{
	struct prot_query q = {addr, 0, -1};
	self_maps_each(prot_line, &q);
	*map_end = q.end;
	return q.prot;
}

int code_unlock(struct code_unlock *u, uintptr_t lo, uintptr_t hi)
{
	u->n = 0;
	uintptr_t a = lo & ~(PAGE - 1);
	hi = (hi + PAGE - 1) & ~(PAGE - 1);
	while (a < hi) {
		uintptr_t map_end;
		int prot = prot_of(a, &map_end);
		if (prot < 0 || u->n == CODE_UNLOCK_MAX_RANGES)
			goto fail;
		uintptr_t end = map_end < hi ? map_end : hi;
		/* Keep PROT_EXEC while writable: other threads may be running this code right now. */
		if (mprotect((void *)a, end - a, prot | PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
			goto fail;
		u->r[u->n].start = a;
		u->r[u->n].end = end;
		u->r[u->n].prot = prot;
		u->n++;
		a = end;
	}
	return 0;
fail:
	code_lock(u);
	return -1;
}

void code_lock(const struct code_unlock *u)
{
	for (unsigned i = 0; i < u->n; i++)
		mprotect((void *)u->r[i].start, u->r[i].end - u->r[i].start, u->r[i].prot);
}

static int cas16(volatile void *p, uint64_t olo, uint64_t ohi, uint64_t nlo, uint64_t nhi)
{
	unsigned char ok;
	__asm__ volatile("lock cmpxchg16b %1\n\tsete %0"
	                 : "=q"(ok), "+m"(*(volatile unsigned __int128 *)p), "+a"(olo), "+d"(ohi)
	                 : "b"(nlo), "c"(nhi)
	                 : "memory", "cc");
	return ok;
}

int code_write_atomic(uint8_t *dst, const uint8_t *src, unsigned len, bool plain)
{
	uintptr_t a = (uintptr_t)dst;
	/* Atomic even when the caller says every other thread is stopped (plain), whenever the bytes
	 * allow it: threads are stopped by a ptrace tracer that may die at any instant, and they
	 * resume then, possibly in the middle of these writes. A straddling store stays plain. */
	if ((a & 7) + len <= 8) {
		uint64_t *w = (uint64_t *)(a & ~7ul);
		uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED);
		memcpy((uint8_t *)&v + (a & 7), src, len);
		__atomic_store_n(w, v, __ATOMIC_SEQ_CST);
		return 0;
	}
	if ((a & 15) + len <= 16) {
		volatile uint64_t *w = (volatile uint64_t *)(a & ~15ul);
		for (;;) {
			uint64_t old[2] = {w[0], w[1]}, nw[2];
			memcpy(nw, old, 16);
			memcpy((uint8_t *)nw + (a & 15), src, len);
			if (cas16(w, old[0], old[1], nw[0], nw[1]))
				return 0;
		}
	}
	if (plain) {
		memcpy(dst, src, len);
		return 0;
	}
	return -1;
}

bool code_single_threaded(int own_tid)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return false;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) != own_tid)
			n++;
	closedir(d);
	return n == 1;
}

/* Registering for SYNC_CORE barriers can take tens of milliseconds (the kernel waits for a
 * grace period): done once while planning, never while threads are stopped. */
static int sync_core_registered;

void code_sync_cores_prepare(void)
{
	if (!sync_core_registered)
		sync_core_registered =
		    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0 ? 1 : -1;
}

void code_sync_cores(void)
{
	code_sync_cores_prepare();
	if (sync_core_registered > 0)
		syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
}
