/* Unit tests of code_unlock/code_lock (src/trampoline/code_write.c) and their protection
 * snapshot: with a snapshot taken, a mapping it holds gets its protection from the snapshot (no
 * read of /proc/self/maps while the program's threads are stopped), a mapping made since is read
 * from the file, and code_lock restores what each said. */
#include "unit.h"

#include "code_write.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The protection /proc/self/maps gives the page at p ("r-xp" -> PROT_READ|PROT_EXEC). */
static int maps_prot(const void *p)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int prot = -1;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long a, b;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &a, &b, perms) == 3 && (uintptr_t)p >= a && (uintptr_t)p < b) {
			prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
			       (perms[2] == 'x' ? PROT_EXEC : 0);
			break;
		}
	}
	if (f)
		fclose(f);
	return prot;
}

static uint8_t *code_page(int prot)
{
	uint8_t *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0xc3, 4096); /* ret */
	mprotect(p, 4096, prot);
	return p;
}

static void without_snapshot_reads_the_file(void)
{
	uint8_t *p = code_page(PROT_READ | PROT_EXEC);
	struct code_unlock u;
	CHECK(p && code_unlock(&u, (uintptr_t)p + 16, (uintptr_t)p + 24) == 0, "unlock");
	CHECK(maps_prot(p) == (PROT_READ | PROT_WRITE | PROT_EXEC), "writable and executable while unlocked: %d",
	      maps_prot(p));
	p[16] = 0x90;
	code_lock(&u);
	CHECK(maps_prot(p) == (PROT_READ | PROT_EXEC), "r-x again: %d", maps_prot(p));
	CHECK(p[16] == 0x90, "the byte written stays");
	munmap(p, 4096);
}

static void snapshot_is_used_for_what_it_holds(void)
{
	uint8_t *p = code_page(PROT_READ | PROT_EXEC);
	code_prot_snapshot();
	/* behind the snapshot's back (a library's text never does this): the snapshot, not the
	 * file, says what code_lock restores, which shows the file was not read */
	mprotect(p, 4096, PROT_EXEC);
	struct code_unlock u;
	CHECK(code_unlock(&u, (uintptr_t)p, (uintptr_t)p + 8) == 0, "unlock");
	CHECK(u.n == 1 && u.r[0].prot == (PROT_READ | PROT_EXEC), "the snapshot's protection: %d",
	      u.n ? u.r[0].prot : -1);
	code_lock(&u);
	CHECK(maps_prot(p) == (PROT_READ | PROT_EXEC), "restored from the snapshot: %d", maps_prot(p));
	munmap(p, 4096);
}

static void mapped_since_is_read_from_the_file(void)
{
	code_prot_snapshot();
	/* a non-executable mapping is not in the snapshot either: its protection comes from the
	 * file, and code_lock restores it exactly */
	uint8_t *p = code_page(PROT_READ);
	struct code_unlock u;
	CHECK(p && code_unlock(&u, (uintptr_t)p, (uintptr_t)p + 8) == 0, "unlock");
	CHECK(u.n == 1 && u.r[0].prot == PROT_READ, "the file's protection: %d", u.n ? u.r[0].prot : -1);
	code_lock(&u);
	CHECK(maps_prot(p) == PROT_READ, "r-- again: %d", maps_prot(p));
	uint8_t *q = code_page(PROT_READ | PROT_EXEC);
	CHECK(q && code_unlock(&u, (uintptr_t)q, (uintptr_t)q + 8) == 0, "unlock a page mapped after the snapshot");
	CHECK(u.n == 1 && u.r[0].prot == (PROT_READ | PROT_EXEC), "its protection, from the file: %d",
	      u.n ? u.r[0].prot : -1);
	code_lock(&u);
	munmap(p, 4096);
	munmap(q, 4096);
}

static void range_across_two_mappings(void)
{
	/* two adjacent pages of different protections: two ranges, each restored */
	uint8_t *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED, "mmap");
	if (p == MAP_FAILED)
		return;
	mprotect(p, 4096, PROT_READ | PROT_EXEC);
	mprotect(p + 4096, 4096, PROT_EXEC);
	code_prot_snapshot();
	struct code_unlock u;
	CHECK(code_unlock(&u, (uintptr_t)p + 4000, (uintptr_t)p + 4200) == 0, "unlock");
	CHECK(u.n == 2 && u.r[0].prot == (PROT_READ | PROT_EXEC) && u.r[1].prot == PROT_EXEC &&
	          u.r[0].end == (uintptr_t)p + 4096 && u.r[1].start == (uintptr_t)p + 4096,
	      "two ranges, each its own protection (%u)", u.n);
	code_lock(&u);
	CHECK(maps_prot(p) == (PROT_READ | PROT_EXEC) && maps_prot(p + 4096) == PROT_EXEC, "both restored");
	munmap(p, 8192);
}

int main(void)
{
	RUN(without_snapshot_reads_the_file);
	RUN(snapshot_is_used_for_what_it_holds);
	RUN(mapped_since_is_read_from_the_file);
	RUN(range_across_two_mappings);
	UNIT_EXIT();
}
