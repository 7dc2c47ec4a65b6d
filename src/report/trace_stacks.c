/* The call stacks of trace.bin (agent option stacks=, src/format/trace_format.h "call stacks"):
 * MAPS blocks list the process's executable mappings, PYFRAMES blocks define Python frames by id,
 * STACKS blocks define stacks by id, and a STACK record after a call's ENTRY names its stack.
 * Decoded in pass 2 of the reader, in file order, so that a stack is symbolized with the MAPS
 * block in force where it was defined (the last one before it) and an id is known only once the
 * block defining it has been read: the writer defines every id before the first record that
 * names it, so a reference to an id not yet defined is an error, never a forward look-up.
 *
 * Checks: every entry's size against the bytes of its block (a bad size ends the block: the
 * next entry cannot be found), the counts in the entry against its size, the block's count
 * against its entries; an id defined again with other content (the writer re-emits entries
 * unchanged in a new file, never changes them within one), an unknown id. Each is counted as an
 * error with a message; the first definition of an id is the one kept. */
#include "trace_reader_impl.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(struct cuhook_stacks_block) == 8, "STACKS block layout");
_Static_assert(sizeof(struct cuhook_stack_entry) == 16, "stack entry layout");
_Static_assert(sizeof(struct cuhook_pyframes_block) == 8, "PYFRAMES block layout");
_Static_assert(sizeof(struct cuhook_pyframe_entry) == 24, "Python frame entry layout");
_Static_assert(sizeof(struct cuhook_maps_block) == 8, "MAPS block layout");
_Static_assert(sizeof(struct cuhook_map_entry) == 64, "map entry layout");
_Static_assert(sizeof(struct cuhook_rec_stack) == 16, "STACK record layout");

/* Entries per table: far more than an agent's tables hold; a hostile file stops here. */
#define TR_MAX_STACK_ENTRIES (1u << 24)

/* ---- file id -> index ------------------------------------------------------------------------- */

struct tr_id_hash {
	uint32_t cap, n;          /* cap: a power of two */
	uint32_t *key, *val;      /* val: index + 1, 0 = empty slot */
};

static uint32_t id_slot(uint32_t id, uint32_t mask)
{
	return (id * 2654435761u) & mask;
}

static uint32_t id_find(const struct tr_id_hash *h, uint32_t id)
{
	if (!h || !h->cap)
		return TR_NONE;
	for (uint32_t s = id_slot(id, h->cap - 1);; s = (s + 1) & (h->cap - 1)) {
		if (!h->val[s])
			return TR_NONE;
		if (h->key[s] == id)
			return h->val[s] - 1;
	}
}

/* Insert id -> idx (the id is not in the table). -1 when out of memory. */
static int id_put(struct tr_id_hash **hp, uint32_t id, uint32_t idx)
{
	struct tr_id_hash *h = *hp;
	if (!h) {
		h = *hp = calloc(1, sizeof(*h));
		if (!h)
			return -1;
	}
	if ((uint64_t)(h->n + 1) * 2 > h->cap) {
		uint32_t ncap = h->cap ? h->cap * 2 : 64;
		uint32_t *k = calloc(ncap, sizeof(*k)), *v = calloc(ncap, sizeof(*v));
		if (!k || !v) {
			free(k);
			free(v);
			return -1;
		}
		for (uint32_t i = 0; i < h->cap; i++) {
			if (!h->val[i])
				continue;
			uint32_t s = id_slot(h->key[i], ncap - 1);
			while (v[s])
				s = (s + 1) & (ncap - 1);
			k[s] = h->key[i];
			v[s] = h->val[i];
		}
		free(h->key);
		free(h->val);
		h->key = k;
		h->val = v;
		h->cap = ncap;
	}
	uint32_t s = id_slot(id, h->cap - 1);
	while (h->val[s])
		s = (s + 1) & (h->cap - 1);
	h->key[s] = id;
	h->val[s] = idx + 1;
	h->n++;
	return 0;
}

static void id_free(struct tr_id_hash *h)
{
	if (h) {
		free(h->key);
		free(h->val);
		free(h);
	}
}

const struct tr_pyframe *tr_pyframe_get(const struct tr_trace *t, uint32_t ref)
{
	uint32_t i = id_find(t->pyframe_ids_, ref & CUHOOK_PYFRAME_ID_MASK);
	return i == TR_NONE ? NULL : &t->pyframes[i];
}

const char *tr_stack_end_name(unsigned end)
{
	static const char *const names[CUHOOK_STACK_END_COUNT] = {"done", "depth", "no_info", "bad", "none",
	                                                          "unsupported"};
	return end < CUHOOK_STACK_END_COUNT ? names[end] : "unknown";
}

/* ---- blocks ------------------------------------------------------------------------------------ */

/* The entry at q, of `fixed` bytes before its variable part: its size must be 8-aligned, hold
 * the fixed part and fit in what is left of the block. */
static int entry_fits(const uint8_t *q, const uint8_t *end, size_t fixed, uint32_t size)
{
	return (size_t)(end - q) >= fixed && size >= fixed && size % 8 == 0 && size <= (size_t)(end - q);
}

static int block_maps(struct tr_trace *t, const uint8_t *p, uint32_t size, uint64_t off)
{
	const struct cuhook_maps_block *b = (const void *)p;
	if (size < sizeof(*b) || b->count > TR_MAX_STACK_ENTRIES) {
		tr_add_error(t, "corrupt MAPS block at offset %llu (%u bytes)", (unsigned long long)off, size);
		return 0;
	}
	const uint8_t *q = p + sizeof(*b), *end = p + size;
	uint32_t first = t->nmaps, i;
	for (i = 0; i < b->count; i++) {
		const struct cuhook_map_entry *e = (const void *)q;
		if (!entry_fits(q, end, sizeof(*e), (size_t)(end - q) >= sizeof(*e) ? e->size : 0) ||
		    sizeof(*e) + (uint64_t)e->path_len > e->size || e->build_id_len > CUHOOK_MAP_BUILD_ID_MAX) {
			tr_add_error(t, "MAPS block at offset %llu: entry %u of %u does not fit (sizes do not add up): "
			             "the block is ignored", (unsigned long long)off, i, b->count);
			t->nmaps = first;
			return 0;
		}
		if (e->start >= e->end) {
			tr_add_error(t, "MAPS block at offset %llu: entry %u is empty or reversed (0x%llx-0x%llx), skipped",
			             (unsigned long long)off, i, (unsigned long long)e->start, (unsigned long long)e->end);
			q += e->size;
			continue;
		}
		if (t->nmaps >= TR_MAX_STACK_ENTRIES * 4u) {
			tr_add_error(t, "too many MAPS entries: the rest skipped");
			break;
		}
		if (tr_grow((void **)&t->maps, &t->maps_cap_, t->nmaps + 1, sizeof(*t->maps)))
			return -1;
		struct tr_map *m = &t->maps[t->nmaps];
		m->start = e->start;
		m->end = e->end;
		m->offset = e->offset;
		m->inode = e->inode;
		m->build_id_len = e->build_id_len;
		memcpy(m->build_id, e->build_id, sizeof(m->build_id));
		m->path = tr_arena_strndup(t, e + 1, e->path_len);
		if (!m->path)
			return -1;
		t->nmaps++;
		q += e->size;
	}
	if (i == b->count && q != end)
		tr_add_error(t, "MAPS block at offset %llu: %u entries leave %zu bytes unused", (unsigned long long)off,
		             b->count, (size_t)(end - q));
	if (tr_grow((void **)&t->map_sets, &t->map_sets_cap_, t->nmap_sets + 1, sizeof(*t->map_sets)))
		return -1;
	t->map_sets[t->nmap_sets++] = (struct tr_map_set){first, t->nmaps - first};
	/* sorted by start for the look-up (the agent lists them as /proc/self/maps does: sorted) */
	if (t->nmaps == first)
		return 0; /* an empty list (t->maps may still be NULL: no offset from it) */
	struct tr_map *m = t->maps + first;
	for (uint32_t k = 1; k < t->nmaps - first; k++)
		for (uint32_t j = k; j > 0 && m[j - 1].start > m[j].start; j--) {
			struct tr_map x = m[j];
			m[j] = m[j - 1];
			m[j - 1] = x;
		}
	return 0;
}

static int block_pyframes(struct tr_trace *t, const uint8_t *p, uint32_t size, uint64_t off)
{
	const struct cuhook_pyframes_block *b = (const void *)p;
	if (size < sizeof(*b) || b->count > TR_MAX_STACK_ENTRIES) {
		tr_add_error(t, "corrupt PYFRAMES block at offset %llu (%u bytes)", (unsigned long long)off, size);
		return 0;
	}
	const uint8_t *q = p + sizeof(*b), *end = p + size;
	uint32_t i;
	for (i = 0; i < b->count; i++) {
		const struct cuhook_pyframe_entry *e = (const void *)q;
		if (!entry_fits(q, end, sizeof(*e), (size_t)(end - q) >= sizeof(*e) ? e->size : 0) ||
		    sizeof(*e) + (uint64_t)e->file_len + e->func_len > e->size) {
			tr_add_error(t, "PYFRAMES block at offset %llu: entry %u of %u does not fit (sizes do not add "
			             "up): the rest of the block is skipped", (unsigned long long)off, i, b->count);
			return 0;
		}
		q += e->size;
		uint32_t id = e->id & CUHOOK_PYFRAME_ID_MASK;
		uint32_t have = id_find(t->pyframe_ids_, id);
		const char *file = (const char *)(e + 1), *func = file + e->file_len;
		if (have != TR_NONE) {
			const struct tr_pyframe *f = &t->pyframes[have];
			char *nf = tr_arena_strndup(t, file, e->file_len), *nn = tr_arena_strndup(t, func, e->func_len);
			if (!nf || !nn)
				return -1;
			if (f->line != e->line || f->first_line != e->first_line || strcmp(f->file, nf) || strcmp(f->func, nn))
				tr_add_error(t, "Python frame id %u defined twice differently (offset %llu): the first kept", id,
				             (unsigned long long)off);
			continue;
		}
		if (t->npyframes >= TR_MAX_STACK_ENTRIES) {
			tr_add_error(t, "too many PYFRAMES entries: the rest skipped");
			return 0;
		}
		if (tr_grow((void **)&t->pyframes, &t->pyframes_cap_, t->npyframes + 1, sizeof(*t->pyframes)))
			return -1;
		struct tr_pyframe *f = &t->pyframes[t->npyframes];
		f->id = id;
		f->line = e->line;
		f->first_line = e->first_line;
		f->file = tr_arena_strndup(t, file, e->file_len);
		f->func = tr_arena_strndup(t, func, e->func_len);
		if (!f->file || !f->func || id_put(&t->pyframe_ids_, id, t->npyframes))
			return -1;
		t->npyframes++;
	}
	if (q != end)
		tr_add_error(t, "PYFRAMES block at offset %llu: %u entries leave %zu bytes unused",
		             (unsigned long long)off, b->count, (size_t)(end - q));
	return 0;
}

static int same_stack(const struct tr_stack *s, const struct cuhook_stack_entry *e, const uint64_t *pc,
                      const uint32_t *py)
{
	return s->nnative == e->nnative && s->npython == e->npython && s->native_end == e->native_end &&
	       s->python_end == e->python_end && !memcmp(s->pc, pc, 8u * e->nnative) &&
	       !memcmp(s->pyframe, py, 4u * e->npython);
}

static int block_stacks(struct tr_trace *t, const uint8_t *p, uint32_t size, uint64_t off)
{
	const struct cuhook_stacks_block *b = (const void *)p;
	if (size < sizeof(*b) || b->count > TR_MAX_STACK_ENTRIES) {
		tr_add_error(t, "corrupt STACKS block at offset %llu (%u bytes)", (unsigned long long)off, size);
		return 0;
	}
	const uint8_t *q = p + sizeof(*b), *end = p + size;
	uint32_t i;
	for (i = 0; i < b->count; i++) {
		const struct cuhook_stack_entry *e = (const void *)q;
		if (!entry_fits(q, end, sizeof(*e), (size_t)(end - q) >= sizeof(*e) ? e->size : 0) ||
		    sizeof(*e) + 8u * (uint64_t)e->nnative + 4u * (uint64_t)e->npython > e->size) {
			tr_add_error(t, "STACKS block at offset %llu: entry %u of %u does not fit (sizes do not add up): "
			             "the rest of the block is skipped", (unsigned long long)off, i, b->count);
			return 0;
		}
		q += e->size;
		const uint64_t *pc = (const uint64_t *)(e + 1);
		const uint32_t *py = (const uint32_t *)(pc + e->nnative);
		if (e->id == CUHOOK_STACK_NONE) {
			tr_add_error(t, "STACKS block at offset %llu: entry with the reserved id 0x%x skipped",
			             (unsigned long long)off, e->id);
			continue;
		}
		uint32_t have = id_find(t->stack_ids_, e->id);
		if (have != TR_NONE) {
			if (!same_stack(&t->stacks[have], e, pc, py))
				tr_add_error(t, "stack id %u defined twice differently (offset %llu): the first kept", e->id,
				             (unsigned long long)off);
			continue;
		}
		uint32_t unknown = TR_NONE;
		for (uint32_t k = 0; k < e->npython && unknown == TR_NONE; k++)
			if (id_find(t->pyframe_ids_, py[k] & CUHOOK_PYFRAME_ID_MASK) == TR_NONE)
				unknown = py[k] & CUHOOK_PYFRAME_ID_MASK;
		if (unknown != TR_NONE) {
			tr_add_error(t, "stack id %u names Python frame id %u, which no PYFRAMES entry before it defined: "
			             "the stack is skipped", e->id, unknown);
			continue;
		}
		if (e->native_end >= CUHOOK_STACK_END_COUNT || e->python_end >= CUHOOK_STACK_END_COUNT)
			tr_add_error(t, "stack id %u: unknown end reason (native %u, Python %u)", e->id, e->native_end,
			             e->python_end);
		if (t->nstacks >= TR_MAX_STACK_ENTRIES) {
			tr_add_error(t, "too many STACKS entries: the rest skipped");
			return 0;
		}
		if (tr_grow((void **)&t->stacks, &t->stacks_cap_, t->nstacks + 1, sizeof(*t->stacks)))
			return -1;
		t->stacks[t->nstacks] = (struct tr_stack){
			.id = e->id,
			.map_set = t->nmap_sets ? t->nmap_sets - 1 : TR_NONE,
			.nnative = e->nnative,
			.npython = e->npython,
			.native_end = e->native_end,
			.python_end = e->python_end,
			.pc = pc,
			.pyframe = py,
		};
		if (id_put(&t->stack_ids_, e->id, t->nstacks))
			return -1;
		t->nstacks++;
	}
	if (q != end)
		tr_add_error(t, "STACKS block at offset %llu: %u entries leave %zu bytes unused", (unsigned long long)off,
		             b->count, (size_t)(end - q));
	return 0;
}

int tr_stacks_block(struct tr_trace *t, unsigned type, const uint8_t *p, uint32_t size, uint64_t off)
{
	t->nstack_blocks++;
	switch (type) {
	case CUHOOK_BLOCK_MAPS:
		return block_maps(t, p, size, off);
	case CUHOOK_BLOCK_PYFRAMES:
		return block_pyframes(t, p, size, off);
	case CUHOOK_BLOCK_STACKS:
		return block_stacks(t, p, size, off);
	}
	return 0;
}

/* ---- STACK records ----------------------------------------------------------------------------- */

int tr_stack_record(struct tr_trace *t, uint32_t ci, uint32_t id)
{
	t->nstack_recs++;
	if (id == CUHOOK_STACK_NONE) {
		t->stack_none++;
		return 0;
	}
	uint32_t si = id_find(t->stack_ids_, id);
	if (si == TR_NONE) {
		tr_add_error(t, "STACK record of %s names stack id %u, which no STACKS block before it defined",
		             tr_func_name(t, t->calls[ci].func), id);
		return 0;
	}
	if (!t->call_stack_) {
		/* calls[] is reserved once before pass 2: one slot per possible call */
		t->call_stack_ = malloc((size_t)t->calls_cap_ * sizeof(*t->call_stack_));
		if (!t->call_stack_)
			return -1;
		memset(t->call_stack_, 0xff, (size_t)t->calls_cap_ * sizeof(*t->call_stack_));
	}
	if (t->call_stack_[ci] != TR_NONE) {
		tr_add_error(t, "a second STACK record for one call of %s: the first kept", tr_func_name(t, t->calls[ci].func));
		return 0;
	}
	t->call_stack_[ci] = si;
	return 0;
}

void tr_stacks_free(struct tr_trace *t)
{
	free(t->stacks);
	free(t->pyframes);
	free(t->maps);
	free(t->map_sets);
	free(t->call_stack_);
	id_free(t->stack_ids_);
	id_free(t->pyframe_ids_);
}
