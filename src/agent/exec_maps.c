/* Build ids are read by the threads that load libraries (through dl_iterate_phdr, which holds
 * the loader's lock and so keeps each object mapped while its notes are read), and the mappings
 * by the writer from /proc/self/maps, which takes no lock of the program's: the writer's round
 * must not wait for a lock a thread stopped by cuhook may hold (writer.c). A mapping whose object
 * was loaded behind the loader watch's back (or by dlmopen into another namespace) has no build
 * id in its entry: the reader then trusts the path. */
#include "exec_maps.h"

#include "agent_state.h"
#include "self_maps.h"
#include "trace_format.h"

#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OBJECTS_MAX 1024

/* An object's executable segment and its build id. */
struct object_id {
	uintptr_t lo, hi;
	uint8_t len;
	uint8_t id[CUHOOK_MAP_BUILD_ID_MAX];
};

static pthread_mutex_t learn_lock = PTHREAD_MUTEX_INITIALIZER;
static struct object_id learnt[OBJECTS_MAX]; /* under learn_lock */
static unsigned nlearnt;
static struct object_id published[OBJECTS_MAX]; /* under agent_lock */
static unsigned npublished, published_gen;
static struct object_id known[OBJECTS_MAX]; /* the writer's */
static unsigned nknown, known_gen;

/* The NT_GNU_BUILD_ID note in one PT_NOTE segment as loaded, or 0. */
static uint8_t note_build_id(const uint8_t *p, size_t len, uint8_t *out)
{
	size_t off = 0;
	while (off + sizeof(ElfW(Nhdr)) <= len) {
		const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)(p + off);
		size_t name = (n->n_namesz + 3u) & ~3u, desc = (n->n_descsz + 3u) & ~3u;
		size_t body = off + sizeof(*n);
		if (name > len || desc > len || body + name + desc > len)
			return 0;
		if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(p + body, "GNU", 4) &&
		    n->n_descsz > 0) {
			uint8_t l = n->n_descsz < CUHOOK_MAP_BUILD_ID_MAX ? (uint8_t)n->n_descsz : CUHOOK_MAP_BUILD_ID_MAX;
			memcpy(out, p + body + name, l);
			return l;
		}
		off = body + name + desc;
	}
	return 0;
}

static int learn_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	(void)ctx;
	uint8_t id[CUHOOK_MAP_BUILD_ID_MAX], len = 0;
	for (unsigned i = 0; i < info->dlpi_phnum && !len; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_NOTE)
			len = note_build_id((const uint8_t *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz, id);
	}
	if (!len)
		return 0;
	for (unsigned i = 0; i < info->dlpi_phnum && nlearnt < OBJECTS_MAX; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		struct object_id *o = &learnt[nlearnt++];
		o->lo = info->dlpi_addr + ph->p_vaddr;
		o->hi = o->lo + ph->p_memsz;
		o->len = len;
		memcpy(o->id, id, len);
	}
	return 0;
}

void exec_maps_learn(void)
{
	pthread_mutex_lock(&learn_lock);
	nlearnt = 0;
	dl_iterate_phdr(learn_cb, NULL);
	pthread_mutex_lock(&agent_lock);
	memcpy(published, learnt, nlearnt * sizeof(learnt[0]));
	npublished = nlearnt;
	published_gen++;
	pthread_mutex_unlock(&agent_lock);
	pthread_mutex_unlock(&learn_lock);
}

void exec_maps_sync(void)
{
	if (known_gen == published_gen)
		return;
	memcpy(known, published, npublished * sizeof(published[0]));
	nknown = npublished;
	known_gen = published_gen;
}

static const struct object_id *known_at(uintptr_t a)
{
	for (unsigned i = 0; i < nknown; i++)
		if (a >= (known[i].lo & ~(uintptr_t)4095) && a < known[i].hi)
			return &known[i];
	return NULL;
}

struct reading {
	uint8_t *buf;
	size_t cap, len;
	uint32_t count;
	uint64_t digest;
	bool overflow;
};

static uint64_t digest_add(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ull;
}

static bool map_line(uintptr_t start, uintptr_t end, const char *rest, void *ctx)
{
	struct reading *r = ctx;
	char perms[8];
	unsigned long long offset, inode;
	int path_at = 0;
	/* "r-xp 00001000 08:01 1234    /usr/lib/x86_64-linux-gnu/libc.so.6" */
	if (sscanf(rest, "%7s %llx %*s %llu %n", perms, &offset, &inode, &path_at) < 3 || perms[2] != 'x')
		return false;
	const char *path = rest + path_at;
	size_t path_len = strlen(path);
	if (path_len > 0xffff)
		path_len = 0xffff;
	size_t size = CUHOOK_ALIGN8(sizeof(struct cuhook_map_entry) + path_len);
	if (r->len + size > r->cap) {
		r->overflow = true;
		return true;
	}
	struct cuhook_map_entry *e = (struct cuhook_map_entry *)(r->buf + r->len);
	memset(e, 0, size);
	e->start = start;
	e->end = end;
	e->offset = offset;
	e->inode = inode;
	e->size = (uint32_t)size;
	e->path_len = (uint16_t)path_len;
	const struct object_id *o = inode ? known_at(start) : NULL;
	if (o) {
		e->build_id_len = o->len;
		memcpy(e->build_id, o->id, o->len);
	}
	memcpy(e + 1, path, path_len);
	r->len += size;
	r->count++;
	r->digest = digest_add(digest_add(digest_add(r->digest, start), end), offset ^ inode << 20);
	for (size_t i = 0; i < path_len; i++)
		r->digest = digest_add(r->digest, (uint8_t)path[i]);
	return false;
}

size_t exec_maps_read(uint8_t *buf, size_t cap, uint32_t *count, uint64_t *digest)
{
	struct reading r = {buf, cap, 0, 0, 0xcbf29ce484222325ull, false};
	if (self_maps_each(map_line, &r) != 0 || r.overflow)
		return 0;
	*count = r.count;
	*digest = r.digest;
	return r.len;
}
