#include "stack_table.h"

#include "trace_format.h"

#include <string.h>
#include <sys/mman.h>

#define SLOTS (2 * STACK_TABLE_MAX_IDS) /* the hash index: at most half full */

/* An entry's state (state[id]). Only its interning thread moves it from UNPUBLISHED (to
 * PUBLISHED or DEAD); only the writer moves it between PUBLISHED and WRITTEN. */
enum { UNPUBLISHED, PUBLISHED, WRITTEN, DEAD };

/* In the arena: the hash, then the entry exactly as it goes into a STACKS block. */
struct stored {
	uint64_t hash;
	struct cuhook_stack_entry e;
};

static struct {
	uint32_t *slots;        /* the hash index: id + 1, 0 empty */
	uint32_t *offset;       /* offset[id]: the entry's place in the arena */
	uint8_t *state;         /* state[id] */
	uint8_t *arena;
	uint32_t next_id;       /* atomic; may pass STACK_TABLE_MAX_IDS (then the table is full) */
	uint32_t arena_used;    /* atomic; may pass STACK_TABLE_ARENA */
	uint32_t full;          /* atomic: set when an intern found no room */
	uint32_t written_below; /* the writer's: every id below is WRITTEN or DEAD */
} T;

bool stack_table_init(void)
{
	if (T.slots)
		return true;
	size_t bytes = SLOTS * 4u + STACK_TABLE_MAX_IDS * 5u + STACK_TABLE_ARENA;
	/* reserved, not committed: pages are touched as stacks come */
	uint8_t *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return false;
	T.offset = (uint32_t *)(p + SLOTS * 4u);
	T.state = p + SLOTS * 4u + STACK_TABLE_MAX_IDS * 4u;
	T.arena = T.state + STACK_TABLE_MAX_IDS;
	__atomic_store_n(&T.slots, (uint32_t *)p, __ATOMIC_RELEASE);
	return true;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t hash_of(const uint64_t *pcs, unsigned nn, const uint32_t *py, unsigned np, uint8_t ne,
                        uint8_t pe)
{
	uint64_t h = mix((uint64_t)nn << 32 | (uint64_t)np << 16 | (uint64_t)ne << 8 | pe, 0);
	for (unsigned i = 0; i < nn; i++)
		h = mix(h, pcs[i]);
	for (unsigned i = 0; i < np; i++)
		h = mix(h, py[i]);
	return h | 1;
}

static bool same(const struct stored *s, uint64_t h, const uint64_t *pcs, unsigned nn, const uint32_t *py,
                 unsigned np, uint8_t ne, uint8_t pe)
{
	if (s->hash != h || s->e.nnative != nn || s->e.npython != np || s->e.native_end != ne ||
	    s->e.python_end != pe)
		return false;
	const uint64_t *sp = (const uint64_t *)(s + 1);
	for (unsigned i = 0; i < nn; i++)
		if (sp[i] != pcs[i])
			return false;
	const uint32_t *sy = (const uint32_t *)(sp + nn);
	for (unsigned i = 0; i < np; i++)
		if (sy[i] != py[i])
			return false;
	return true;
}

static const struct stored *stored_of(uint32_t id)
{
	return (const struct stored *)(T.arena + T.offset[id]);
}

static uint32_t table_full(void)
{
	__atomic_store_n(&T.full, 1, __ATOMIC_RELAXED);
	return CUHOOK_STACK_NONE;
}

uint32_t stack_table_intern(const uint64_t *pcs, unsigned nn, const uint32_t *py, unsigned np, uint8_t ne,
                            uint8_t pe)
{
	uint32_t *slots = __atomic_load_n(&T.slots, __ATOMIC_ACQUIRE);
	if (!slots)
		return CUHOOK_STACK_NONE;
	const uint64_t h = hash_of(pcs, nn, py, np, ne, pe);
	const uint32_t start = (uint32_t)(h >> 20) & (SLOTS - 1);
	uint32_t i = start;
	for (uint32_t probes = 0; probes < SLOTS; probes++, i = (i + 1) & (SLOTS - 1)) {
		uint32_t v = __atomic_load_n(&slots[i], __ATOMIC_ACQUIRE);
		if (!v)
			break;
		uint32_t id = v - 1;
		/* an entry still being written is passed over (at worst, a second id for its stack) */
		if (__atomic_load_n(&T.state[id], __ATOMIC_ACQUIRE) != UNPUBLISHED &&
		    same(stored_of(id), h, pcs, nn, py, np, ne, pe))
			return id;
	}
	/* New: an id, room in the arena, the entry, published; then into the index. */
	uint32_t id = __atomic_fetch_add(&T.next_id, 1, __ATOMIC_RELAXED);
	if (id >= STACK_TABLE_MAX_IDS)
		return table_full();
	uint32_t size = (uint32_t)CUHOOK_ALIGN8(sizeof(struct cuhook_stack_entry) + 8u * nn + 4u * np);
	uint32_t need = (uint32_t)sizeof(uint64_t) + size;
	uint32_t off = __atomic_fetch_add(&T.arena_used, need, __ATOMIC_RELAXED);
	if (off > STACK_TABLE_ARENA - need || off + need < off) {
		__atomic_store_n(&T.state[id], DEAD, __ATOMIC_RELEASE);
		return table_full();
	}
	struct stored *s = (struct stored *)(T.arena + off);
	s->hash = h;
	s->e.id = id;
	s->e.size = size;
	s->e.nnative = (uint16_t)nn;
	s->e.npython = (uint16_t)np;
	s->e.native_end = ne;
	s->e.python_end = pe;
	s->e.reserved = 0;
	uint64_t *sp = (uint64_t *)(s + 1);
	for (unsigned k = 0; k < nn; k++)
		sp[k] = pcs[k];
	uint32_t *sy = (uint32_t *)(sp + nn);
	for (unsigned k = 0; k < np; k++)
		sy[k] = py[k];
	if (np & 1)
		sy[np] = 0;
	T.offset[id] = off;
	__atomic_store_n(&T.state[id], PUBLISHED, __ATOMIC_RELEASE);
	for (uint32_t probes = 0; probes < SLOTS; probes++, i = (i + 1) & (SLOTS - 1)) {
		uint32_t empty = 0;
		if (__atomic_compare_exchange_n(&slots[i], &empty, id + 1, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			break;
	}
	return id;
}

static uint32_t ids_used(void)
{
	uint32_t n = __atomic_load_n(&T.next_id, __ATOMIC_ACQUIRE);
	return n < STACK_TABLE_MAX_IDS ? n : STACK_TABLE_MAX_IDS;
}

uint32_t stack_table_bound(void)
{
	return ids_used();
}

bool stack_table_pending(uint32_t n)
{
	if (!T.slots)
		return false;
	for (uint32_t id = T.written_below; id < n; id++)
		if (__atomic_load_n(&T.state[id], __ATOMIC_ACQUIRE) == PUBLISHED)
			return true;
	return false;
}

size_t stack_table_take(uint8_t *buf, size_t cap, uint32_t n, uint32_t *count)
{
	size_t len = 0;
	*count = 0;
	if (!T.slots)
		return 0;
	for (uint32_t id = T.written_below; id < n; id++) {
		if (__atomic_load_n(&T.state[id], __ATOMIC_ACQUIRE) != PUBLISHED)
			continue;
		const struct stored *s = stored_of(id);
		if (len + s->e.size > cap)
			break;
		memcpy(buf + len, &s->e, s->e.size);
		len += s->e.size;
		(*count)++;
		T.state[id] = WRITTEN;
	}
	while (T.written_below < n) {
		uint8_t st = __atomic_load_n(&T.state[T.written_below], __ATOMIC_ACQUIRE);
		if (st != WRITTEN && st != DEAD)
			break;
		T.written_below++;
	}
	return len;
}

void stack_table_rewind(void)
{
	if (!T.slots)
		return;
	for (uint32_t id = 0, n = ids_used(); id < n; id++)
		if (T.state[id] == WRITTEN)
			T.state[id] = PUBLISHED;
	T.written_below = 0;
}

bool stack_table_full_take(void)
{
	return __atomic_exchange_n(&T.full, 0, __ATOMIC_RELAXED) != 0;
}
