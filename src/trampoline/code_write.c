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

/* "r-xp" -> PROT_READ | PROT_EXEC */
static int perms_prot(const char *perms)
{
	return (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
	       (perms[2] == 'x' ? PROT_EXEC : 0);
}

static bool prot_line(uintptr_t a, uintptr_t b, const char *perms, void *ctx)
{
	struct prot_query *q = ctx;
	if (q->addr < a || q->addr >= b)
		return false;
	q->prot = perms_prot(perms);
	q->end = b;
	return true;
}

/* The executable mappings' protections as code_prot_snapshot() last read them: two buffers, the
 * one in use published by `snap` (a reader keeps the one it loaded; the next snapshot fills the
 * other). Mapped once, never freed: a code_unlock() on another thread may still read it. */
#define SNAP_MAX 4096
struct snap {
	size_t n;
	struct {
		uintptr_t start, end;
		int prot;
	} r[SNAP_MAX];
};
static struct snap *snap_buf[2];
static struct snap *snap;
static unsigned snap_next;

static bool snap_line(uintptr_t a, uintptr_t b, const char *perms, void *ctx)
{
	struct snap *s = ctx;
	if (perms[2] != 'x' || s->n == SNAP_MAX)
		return false;
	s->r[s->n].start = a;
	s->r[s->n].end = b;
	s->r[s->n].prot = perms_prot(perms);
	s->n++;
	return false;
}

void code_prot_snapshot(void)
{
	unsigned i = snap_next;
	if (!snap_buf[i]) {
		void *p = mmap(NULL, sizeof(struct snap), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return;
		snap_buf[i] = p;
	}
	struct snap *s = snap_buf[i];
	s->n = 0;
	if (self_maps_each(snap_line, s) != 0)
		return;
	__atomic_store_n(&snap, s, __ATOMIC_RELEASE);
	snap_next = i ^ 1;
}

/* The snapshot's mapping holding addr (binary search: the file lists mappings in address
 * order); -1 when there is none or addr is in none of its executable mappings. */
static int snap_prot_of(uintptr_t addr, uintptr_t *map_end)
{
	const struct snap *s = __atomic_load_n(&snap, __ATOMIC_ACQUIRE);
	if (!s)
		return -1;
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (addr < s->r[mid].start)
			hi = mid;
		else if (addr >= s->r[mid].end)
			lo = mid + 1;
		else {
			*map_end = s->r[mid].end;
			return s->r[mid].prot;
		}
	}
	return -1;
}

/* Protection of the mapping containing `addr`, from the snapshot or else /proc/self/maps; -1 if
 * unmapped. */
static int prot_of(uintptr_t addr, uintptr_t *map_end)
{
	int prot = snap_prot_of(addr, map_end);
	if (prot >= 0)
		return prot;
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
