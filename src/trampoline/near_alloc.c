#include "near_alloc.h"

#include "self_maps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define PAGE 4096ul
#define REACH 0x7ff00000ul /* a little under 2 GiB, so rel32 from anywhere in the block reaches */

/* Map `size` bytes exactly at `addr` if that range is free. Kernels before 4.17 ignore
 * MAP_FIXED_NOREPLACE and treat the address as a hint, so check what we got. */
static void *try_map(uintptr_t addr, size_t size)
{
	void *p = mmap((void *)addr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
	               -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if ((uintptr_t)p != addr) {
		munmap(p, size);
		return NULL;
	}
	return p;
}

static bool in_reach(uintptr_t start, size_t size, uintptr_t lo, uintptr_t hi)
{
	uintptr_t end = start + size;
	return end <= lo + REACH && start + REACH >= hi && start >= PAGE * 16;
}

struct gap_search {
	uintptr_t lo, hi, prev_end;
	size_t size;
	void *best;
};

/* Gap [prev_end, a) before this mapping: try the end of it nearest the target range. */
static bool gap_line(uintptr_t a, uintptr_t b, const char *rest, void *ctx)
{
	(void)rest;
	struct gap_search *g = ctx;
	if (a > g->prev_end && a - g->prev_end >= g->size) {
		uintptr_t cand = (a <= g->lo) ? a - g->size : g->prev_end;
		if (in_reach(cand, g->size, g->lo, g->hi) && (g->best = try_map(cand, g->size)))
			return true;
	}
	if (b > g->prev_end)
		g->prev_end = b;
	return false;
}

void *near_alloc(uintptr_t lo, uintptr_t hi, size_t size)
{
	size = (size + PAGE - 1) & ~(PAGE - 1);
	/* Walk the gaps between mappings, preferring the address closest to the library. */
	struct gap_search g = {lo, hi, PAGE * 16, size, NULL};
	if (self_maps_each(gap_line, &g) < 0)
		return NULL;
	void *best = g.best;
	if (!best) {
		/* After the last mapping (the top of the address space is usually the stack; the gap
		 * above the library may not have appeared as a "gap before" anything). */
		uintptr_t cand = (hi + PAGE * 16 + PAGE - 1) & ~(PAGE - 1);
		for (int tries = 0; tries < 64 && !best; tries++, cand += 1ul << 24)
			if (in_reach(cand, size, lo, hi))
				best = try_map(cand, size);
	}
	return best;
}
