/* Memory in use over the trace, from the allocations and frees it recorded.
 *
 * Each successful allocation call (its EXIT says 0) adds its size under the pointer or handle it
 * returned (a DATA value: dptr, hostptr, handle); each successful free looks that key up and
 * takes the size off. Four kinds, by what the call allocates:
 *   device    cuMemAlloc, cuMemAllocPitch, cuMemAllocAsync, cuMemAllocFromPoolAsync
 *   physical  cuMemCreate (the virtual memory API: PyTorch's expandable segments, NCCL's buffers).
 *             Its memory lives while a reference does: the handle's (cuMemCreate's, each
 *             cuMemRetainAllocationHandle's, until cuMemRelease) and each mapping's (cuMemMap
 *             until cuMemUnmap of the same address). Programs release the handle right after
 *             mapping it, so the memory is freed at the last unmap.
 *   managed   cuMemAllocManaged
 *   host      cuMemAllocHost, cuMemHostAlloc (pinned host memory), freed by cuMemFreeHost
 * cuMemFree and cuMemFreeAsync free device or managed memory, whichever the pointer was. What was
 * allocated before the trace began (an attach, --time-range) is not known: its frees are counted
 * apart, with no size. Device memory is also followed per device, the allocating call's
 * (devices.c), whatever thread frees it. Calls are taken in start order (the view's selection):
 * a stream-ordered alloc or free is placed where the host asked for it, not where the GPU did it. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

const char *const rp_mem_kind_names[RP_MEM_KIND_COUNT] = {"device", "physical", "managed", "host"};

enum op { OP_NONE, OP_ALLOC, OP_FREE_DPTR, OP_FREE_PHYSICAL, OP_FREE_HOST, OP_MAP, OP_UNMAP, OP_RETAIN };

struct fclass {
	uint8_t op;       /* enum op */
	uint8_t kind;     /* OP_ALLOC: enum rp_mem_kind */
};

static struct fclass classify(const char *name)
{
	static const struct {
		const char *base;
		uint8_t op, kind;
	} tab[] = {
		{"cuMemAlloc", OP_ALLOC, RP_MEM_DEVICE},
		{"cuMemAllocPitch", OP_ALLOC, RP_MEM_DEVICE},
		{"cuMemAllocAsync", OP_ALLOC, RP_MEM_DEVICE},
		{"cuMemAllocFromPoolAsync", OP_ALLOC, RP_MEM_DEVICE},
		{"cuMemCreate", OP_ALLOC, RP_MEM_PHYSICAL},
		{"cuMemAllocManaged", OP_ALLOC, RP_MEM_MANAGED},
		{"cuMemAllocHost", OP_ALLOC, RP_MEM_HOST},
		{"cuMemHostAlloc", OP_ALLOC, RP_MEM_HOST},
		{"cuMemFree", OP_FREE_DPTR, 0},
		{"cuMemFreeAsync", OP_FREE_DPTR, 0},
		{"cuMemRelease", OP_FREE_PHYSICAL, 0},
		{"cuMemFreeHost", OP_FREE_HOST, 0},
		{"cuMemMap", OP_MAP, 0},
		{"cuMemUnmap", OP_UNMAP, 0},
		{"cuMemRetainAllocationHandle", OP_RETAIN, 0},
	};
	char base[128];
	rp_base_name(name, base, sizeof(base));
	for (unsigned i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (!strcmp(base, tab[i].base))
			return (struct fclass){tab[i].op, tab[i].kind};
	return (struct fclass){OP_NONE, 0};
}

/* The live allocations: an open-addressing table by (key space, pointer or handle). Device and
 * managed memory share a key space (cuMemFree frees either), physical handles and host pointers
 * have their own, and so do mappings (address -> the handle mapped there). */

enum space { SP_DPTR, SP_PHYSICAL, SP_HOST, SP_MAPPING };

struct live {
	uint64_t key;
	uint64_t bytes;           /* SP_MAPPING: the handle mapped at key */
	uint32_t refs;            /* SP_PHYSICAL: references held */
	uint8_t used, space, kind;
	uint8_t slot;             /* the device it is on (rp_dev_slot) */
};

struct table {
	struct live *s;
	size_t cap, n;
};

static size_t slot_of(const struct table *t, uint64_t key, uint8_t space)
{
	uint64_t h = (key ^ ((uint64_t)space << 61)) * 0x9e3779b97f4a7c15ull;
	size_t i = (size_t)(h >> 20) & (t->cap - 1);
	while (t->s[i].used && (t->s[i].key != key || t->s[i].space != space))
		i = (i + 1) & (t->cap - 1);
	return i;
}

static int grow(struct table *t)
{
	struct table g = {calloc(t->cap ? 2 * t->cap : 256, sizeof(struct live)), t->cap ? 2 * t->cap : 256, t->n};
	if (!g.s)
		return -1;
	for (size_t i = 0; i < t->cap; i++)
		if (t->s[i].used)
			g.s[slot_of(&g, t->s[i].key, t->s[i].space)] = t->s[i];
	free(t->s);
	*t = g;
	return 0;
}

/* Removes what the table holds under (space, key): 1 with *out set, 0 when absent. Deletion by
 * shifting the following run back (linear probing keeps no tombstones). */
static int take(struct table *t, uint8_t space, uint64_t key, struct live *out)
{
	if (!t->cap)
		return 0;
	size_t i = slot_of(t, key, space);
	if (!t->s[i].used)
		return 0;
	*out = t->s[i];
	t->s[i].used = 0;
	t->n--;
	for (size_t j = (i + 1) & (t->cap - 1); t->s[j].used; j = (j + 1) & (t->cap - 1)) {
		struct live e = t->s[j];
		t->s[j].used = 0;
		t->s[slot_of(t, e.key, e.space)] = e;
	}
	return 1;
}

static struct live *find(struct table *t, uint8_t space, uint64_t key)
{
	if (!t->cap)
		return NULL;
	struct live *e = &t->s[slot_of(t, key, space)];
	return e->used ? e : NULL;
}

static int put(struct table *t, struct live e)
{
	if ((t->n + 1) * 2 > t->cap && grow(t))
		return -1;
	e.used = 1;
	t->s[slot_of(t, e.key, e.space)] = e;
	t->n++;
	return 0;
}

/* The device curve: a step at each change of device + physical memory in use. */
static int step_put(struct rp_memory *m, size_t *cap, int64_t at, uint64_t bytes)
{
	if (m->nsteps && m->steps[m->nsteps - 1].bytes == bytes)
		return 0;
	if (m->nsteps && m->steps[m->nsteps - 1].at == at) { /* several changes at one instant: the last */
		m->steps[m->nsteps - 1].bytes = bytes;
		return 0;
	}
	if (m->nsteps == *cap) {
		size_t c = *cap ? 2 * *cap : 64;
		struct rp_mem_step *n = realloc(m->steps, c * sizeof(*n));
		if (!n)
			return -1;
		m->steps = n;
		*cap = c;
	}
	m->steps[m->nsteps++] = (struct rp_mem_step){at, bytes};
	return 0;
}

void rp_memory_slices(const struct rp_memory *m, uint64_t *out, unsigned n)
{
	memset(out, 0, n * sizeof(*out));
	if (!n)
		return;
	uint64_t level = 0;
	int64_t from = 0;
	/* each level holds from its step to the next: every slice that part of the span touches has it */
	for (uint32_t i = 0; i <= m->nsteps; i++) {
		int64_t to = i < m->nsteps ? m->steps[i].at : m->span;
		uint32_t b = m->span > 0 && from > 0 ? (uint32_t)((double)from / (double)m->span * n) : 0;
		uint32_t e = m->span > 0 && to > 0 ? (uint32_t)((double)to / (double)m->span * n) : 0;
		for (b = b < n ? b : n - 1, e = e < n ? e : n - 1; b <= e; b++)
			if (level > out[b])
				out[b] = level;
		if (i < m->nsteps) {
			level = m->steps[i].bytes;
			from = m->steps[i].at;
		}
	}
}

struct state {
	struct rp_memory *m;
	struct table live;
	uint64_t in_use[RP_MEM_KIND_COUNT];
	uint64_t dev;                    /* device + physical */
	uint64_t on[RP_DEV_SLOTS];       /* device memory per device (rp_memory.dev_peak) */
};

static void account_alloc(struct state *st, uint8_t kind, uint64_t bytes, int64_t at, unsigned slot)
{
	struct rp_mem_kind_stat *ks = &st->m->k[kind];
	st->in_use[kind] += bytes;
	if (kind == RP_MEM_DEVICE) {
		st->on[slot] += bytes;
		if (st->on[slot] > st->m->dev_peak[slot])
			st->m->dev_peak[slot] = st->on[slot];
	}
	if (kind == RP_MEM_DEVICE || kind == RP_MEM_PHYSICAL)
		st->dev += bytes;
	if (st->in_use[kind] > ks->peak) {
		ks->peak = st->in_use[kind];
		ks->peak_at = at;
	}
	if (st->dev > st->m->peak) {
		st->m->peak = st->dev;
		st->m->peak_at = at;
	}
}

static void account_free(struct state *st, const struct live *e)
{
	struct rp_mem_kind_stat *ks = &st->m->k[e->kind];
	ks->frees++;
	ks->freed_bytes += e->bytes;
	st->in_use[e->kind] -= e->bytes;
	if (e->kind == RP_MEM_DEVICE)
		st->on[e->slot] -= e->bytes;
	if (e->kind == RP_MEM_DEVICE || e->kind == RP_MEM_PHYSICAL)
		st->dev -= e->bytes;
}

/* One reference of physical handle h dropped: freed at the last. 0 when h is not known. */
static int unref(struct state *st, uint64_t h)
{
	struct live *e = find(&st->live, SP_PHYSICAL, h), old;
	if (!e)
		return 0;
	if (--e->refs == 0 && take(&st->live, SP_PHYSICAL, h, &old))
		account_free(st, &old);
	return 1;
}

static int step(struct state *st, const struct rp_view *v, uint32_t ci, struct fclass k, int64_t at)
{
	const struct tr_call *c = &v->t->calls[ci];
	/* the allocating call's device; none (no context) is not a device: unknown */
	const unsigned slot = v->devices && v->devices->of_call[ci] >= 0 ? (unsigned)v->devices->of_call[ci]
	                                                                   : rp_dev_slot(RP_DEV_UNKNOWN);
	const struct tr_trace *t = v->t;
	struct rp_memory *m = st->m;
	struct live old;
	if (c->ret != 0) {
		if (k.op == OP_ALLOC)
			m->k[k.kind].failed++;
		return 0;
	}
	switch (k.op) {
	case OP_ALLOC: {
		int known;
		uint64_t bytes = rp_call_bytes(v, c, &known), key;
		struct rp_mem_kind_stat *ks = &m->k[k.kind];
		ks->allocs++;
		ks->alloc_bytes += bytes;
		if (bytes > ks->largest)
			ks->largest = bytes;
		uint8_t space = k.kind == RP_MEM_PHYSICAL ? SP_PHYSICAL : k.kind == RP_MEM_HOST ? SP_HOST : SP_DPTR;
		if (!tr_call_data_value(t, c, space == SP_PHYSICAL ? "handle" : space == SP_HOST ? "hostptr" : "dptr", &key)) {
			ks->no_pointer++;
			return 0;
		}
		if (take(&st->live, space, key, &old)) /* its free was not recorded (dropped) */
			account_free(st, &old);
		if (put(&st->live, (struct live){.key = key, .bytes = bytes, .refs = 1, .space = space, .kind = k.kind,
		                                 .slot = (uint8_t)slot}))
			return -1;
		account_alloc(st, k.kind, bytes, at, slot);
		return 0;
	}
	case OP_FREE_DPTR:
	case OP_FREE_HOST: {
		uint8_t space = k.op == OP_FREE_HOST ? SP_HOST : SP_DPTR;
		uint64_t key = tr_call_arg(c, 0);
		if (!key) /* freeing NULL frees nothing */
			return 0;
		if (take(&st->live, space, key, &old))
			account_free(st, &old);
		else
			m->k[space == SP_HOST ? RP_MEM_HOST : RP_MEM_DEVICE].unknown_frees++;
		return 0;
	}
	case OP_FREE_PHYSICAL:
		if (!unref(st, tr_call_arg(c, 0)))
			m->k[RP_MEM_PHYSICAL].unknown_frees++;
		return 0;
	case OP_MAP: { /* cuMemMap(ptr, size, offset, handle, flags): the mapping holds a reference */
		uint64_t ptr = tr_call_arg(c, 0), h = tr_call_arg(c, 3);
		struct live *e = find(&st->live, SP_PHYSICAL, h);
		if (!e || find(&st->live, SP_MAPPING, ptr))
			return 0;
		e->refs++;
		return put(&st->live, (struct live){.key = ptr, .bytes = h, .space = SP_MAPPING});
	}
	case OP_UNMAP: /* cuMemUnmap(ptr, size) */
		if (take(&st->live, SP_MAPPING, tr_call_arg(c, 0), &old))
			unref(st, old.bytes);
		return 0;
	case OP_RETAIN: { /* cuMemRetainAllocationHandle(&handle, addr): the handle mapped at addr */
		struct live *mp = find(&st->live, SP_MAPPING, tr_call_arg(c, 1)), *e;
		if (mp && (e = find(&st->live, SP_PHYSICAL, mp->bytes)))
			e->refs++;
		return 0;
	}
	}
	return 0;
}

int rp_memory_analyze(const struct rp_view *v, struct rp_memory **out)
{
	*out = NULL;
	const struct tr_trace *t = v->t;
	struct rp_memory *m = calloc(1, sizeof(*m));
	struct fclass *fc = malloc((t->nfuncs ? t->nfuncs : 1) * sizeof(*fc));
	struct state st = {.m = m};
	size_t cap = 0;
	int rc = -1, any = 0; /* an allocation or free call was seen */
	if (!fc || !m)
		goto out;
	m->span = rp_sat_sub(v->t1, v->t0);
	for (uint32_t f = 0; f < t->nfuncs; f++)
		fc[f] = classify(tr_func_name(t, f));
	for (uint32_t i = 0; i < v->nsel; i++) {
		const struct tr_call *c = &t->calls[v->sel[i]];
		const struct fclass k = fc[c->func];
		if (k.op == OP_NONE || !tr_call_timed(c))
			continue;
		any = 1;
		const int64_t at = rp_sat_sub(c->start_ns, v->t0);
		if (step(&st, v, v->sel[i], k, at) || step_put(m, &cap, at, st.dev))
			goto out;
	}
	for (size_t i = 0; i < st.live.cap; i++)
		if (st.live.s[i].used && st.live.s[i].space != SP_MAPPING) {
			m->k[st.live.s[i].kind].end_allocs++;
			m->k[st.live.s[i].kind].end_bytes += st.live.s[i].bytes;
		}
	rc = 0;
out:
	free(fc);
	free(st.live.s);
	if (rc || !any)
		rp_memory_free(m);
	else
		*out = m;
	return rc;
}

void rp_memory_free(struct rp_memory *m)
{
	if (m)
		free(m->steps);
	free(m);
}
