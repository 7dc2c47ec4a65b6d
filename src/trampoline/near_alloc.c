#include "near_alloc.h"

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

/* Parse one "start-end ..." line of /proc/self/maps. */
static bool parse_range(const char *s, uintptr_t *a, uintptr_t *b)
{
	char *e;
	*a = strtoul(s, &e, 16);
	if (*e != '-')
		return false;
	*b = strtoul(e + 1, &e, 16);
	return true;
}

void *near_alloc(uintptr_t lo, uintptr_t hi, size_t size)
{
	size = (size + PAGE - 1) & ~(PAGE - 1);
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	/* Walk the gaps between mappings; try the end of each gap nearest the target range. Read the
	 * file with plain read(2): this runs inside other programs and must not disturb their stdio. */
	char buf[8192], line[512];
	size_t ll = 0;
	uintptr_t prev_end = PAGE * 16;
	void *best = NULL;
	ssize_t n;
	bool done = false;
	while (!done && (n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n && !done; i++) {
			if (buf[i] != '\n') {
				if (ll < sizeof(line) - 1)
					line[ll++] = buf[i];
				continue;
			}
			line[ll] = 0;
			ll = 0;
			uintptr_t a, b;
			if (!parse_range(line, &a, &b))
				continue;
			if (a > prev_end && a - prev_end >= size) {
				/* Gap [prev_end, a): prefer the address closest to the library. */
				uintptr_t cand = (a <= lo) ? a - size : prev_end;
				if (in_reach(cand, size, lo, hi) && (best = try_map(cand, size)))
					done = true;
			}
			if (b > prev_end)
				prev_end = b;
		}
	}
	close(fd);
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
