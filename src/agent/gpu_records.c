#include "gpu_records.h"

#include "trace_format.h"

#include <stdlib.h>
#include <string.h>

struct gpu_name_slot {
	uint64_t hash;
	uint32_t id;   /* 0: free */
	uint32_t len;
	char *name;
};

static void forget_names(struct gpu_conv *cv)
{
	for (uint32_t i = 0; i < cv->cap; i++)
		free(cv->slots[i].name);
	free(cv->slots);
	cv->slots = NULL;
	cv->cap = cv->used = 0;
}

void gpu_conv_reset(struct gpu_conv *cv, const struct gpu_clock *clock)
{
	forget_names(cv);
	cv->clock = *clock;
	cv->next_id = 1;
	cv->keep_cbid = NULL;
	cv->keep_ncbids = 0;
	cv->keep_runtime = NULL;
	cv->keep_nruntime = 0;
}

static uint64_t hash_of(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
	return h;
}

/* The slot of name (found, or the free one where it would go); NULL when there is no table. */
static struct gpu_name_slot *slot_of(const struct gpu_conv *cv, const char *name, size_t len, uint64_t h)
{
	if (!cv->cap)
		return NULL;
	for (uint32_t i = (uint32_t)h & (cv->cap - 1);; i = (i + 1) & (cv->cap - 1)) {
		struct gpu_name_slot *s = &cv->slots[i];
		if (!s->id || (s->hash == h && s->len == len && !memcmp(s->name, name, len)))
			return s;
	}
}

/* Room for one more name (at most half full). False when memory ran out. */
static bool make_room(struct gpu_conv *cv)
{
	if (cv->used + 1 <= cv->cap / 2)
		return true;
	uint32_t cap = cv->cap ? cv->cap * 2 : 256;
	struct gpu_name_slot *slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return false;
	struct gpu_conv bigger = {.slots = slots, .cap = cap};
	for (uint32_t i = 0; i < cv->cap; i++)
		if (cv->slots[i].id)
			*slot_of(&bigger, cv->slots[i].name, cv->slots[i].len, cv->slots[i].hash) = cv->slots[i];
	free(cv->slots);
	cv->slots = slots;
	cv->cap = cap;
	return true;
}

static void *put(uint8_t *out, size_t *len, uint8_t type, size_t size, uint32_t correlation)
{
	struct cuhook_gpu_rec *h = (struct cuhook_gpu_rec *)(out + *len);
	memset(h, 0, size);
	h->type = type;
	h->size = (uint16_t)size;
	h->correlation = correlation;
	*len += size;
	return h;
}

static uint64_t back(const struct gpu_conv *cv, uint64_t ns)
{
	return gpu_clock_to_trace(&cv->clock, ns);
}

static bool kept(const uint8_t *bits, uint32_t nbits, uint32_t cbid)
{
	return cbid < nbits && (bits[cbid / 8] & (1u << (cbid % 8)));
}

static int api(struct gpu_conv *cv, const struct cupti_api *a, uint8_t flags, uint8_t *out, size_t cap, size_t *len)
{
	if (*len + sizeof(struct cuhook_gpu_api) > cap)
		return -1;
	struct cuhook_gpu_api *r = put(out, len, CUHOOK_GPU_REC_API, sizeof(*r), a->correlation_id);
	r->h.flags = flags;
	r->start = back(cv, a->start);
	r->end = back(cv, a->end);
	r->tid = a->thread_id;
	r->func = UINT32_MAX;
	r->cbid = a->cbid;
	r->ret = a->return_value;
	return 1;
}

static int kernel(struct gpu_conv *cv, const struct cupti_kernel10 *k, uint8_t *out, size_t cap, size_t *len)
{
	/* the name's NAME record first, unless the file has it already (or it has none) */
	const char *name = k->name;
	size_t nlen = name ? strnlen(name, GPU_NAME_MAX) : 0;
	uint64_t h = hash_of(name ? name : "", nlen);
	struct gpu_name_slot *s = nlen ? slot_of(cv, name, nlen, h) : NULL;
	bool known = s && s->id;
	size_t name_rec = nlen && !known ? CUHOOK_ALIGN8(sizeof(struct cuhook_gpu_name) + nlen) : 0;
	if (*len + name_rec + sizeof(struct cuhook_gpu_kernel) > cap)
		return -1;
	uint32_t name_id = known ? s->id : 0;
	int n = 0;
	if (name_rec && make_room(cv)) {
		char *copy = malloc(nlen);
		if (copy) {
			memcpy(copy, name, nlen);
			s = slot_of(cv, name, nlen, h); /* the table may have grown */
			*s = (struct gpu_name_slot){h, cv->next_id++, (uint32_t)nlen, copy};
			cv->used++;
			name_id = s->id;
			struct cuhook_gpu_name *nr = put(out, len, CUHOOK_GPU_REC_NAME, name_rec, 0);
			nr->name_id = name_id;
			nr->len = (uint32_t)nlen;
			memcpy(nr + 1, name, nlen);
			n++;
		}
	}
	struct cuhook_gpu_kernel *r = put(out, len, CUHOOK_GPU_REC_KERNEL, sizeof(*r), k->correlation_id);
	r->start = back(cv, k->start);
	r->end = back(cv, k->end);
	r->device = k->device_id;
	r->context = k->context_id;
	r->stream = k->stream_id;
	r->name_id = name_id;
	r->grid[0] = k->grid_x;
	r->grid[1] = k->grid_y;
	r->grid[2] = k->grid_z;
	r->block[0] = k->block_x;
	r->block[1] = k->block_y;
	r->block[2] = k->block_z;
	r->shared_static = (uint32_t)k->static_shared_memory;
	r->shared_dynamic = (uint32_t)k->dynamic_shared_memory;
	r->registers = k->registers_per_thread;
	r->graph_id = k->graph_id;
	r->graph_node_id = k->graph_node_id;
	return n + 1;
}

static int copy(struct gpu_conv *cv, const struct cupti_memcpy6 *m, uint8_t *out, size_t cap, size_t *len)
{
	if (*len + sizeof(struct cuhook_gpu_memcpy) > cap)
		return -1;
	struct cuhook_gpu_memcpy *r = put(out, len, CUHOOK_GPU_REC_MEMCPY, sizeof(*r), m->correlation_id);
	r->start = back(cv, m->start);
	r->end = back(cv, m->end);
	r->device = m->device_id;
	r->context = m->context_id;
	r->stream = m->stream_id;
	r->copy_kind = m->copy_kind;
	r->src_kind = m->src_kind;
	r->dst_kind = m->dst_kind;
	r->flags = m->flags;
	r->bytes = m->bytes;
	r->graph_id = m->graph_id;
	r->graph_node_id = m->graph_node_id;
	return 1;
}

static int set(struct gpu_conv *cv, const struct cupti_memset4 *m, uint8_t *out, size_t cap, size_t *len)
{
	if (*len + sizeof(struct cuhook_gpu_memset) > cap)
		return -1;
	struct cuhook_gpu_memset *r = put(out, len, CUHOOK_GPU_REC_MEMSET, sizeof(*r), m->correlation_id);
	r->start = back(cv, m->start);
	r->end = back(cv, m->end);
	r->device = m->device_id;
	r->context = m->context_id;
	r->stream = m->stream_id;
	r->value = m->value;
	r->bytes = m->bytes;
	r->mem_kind = m->memory_kind;
	r->flags = m->flags;
	r->graph_id = m->graph_id;
	r->graph_node_id = m->graph_node_id;
	return 1;
}

int gpu_conv_record(struct gpu_conv *cv, const struct cupti_record *rec, uint8_t *out, size_t cap, size_t *len)
{
	switch (rec->kind) {
	case CUPTI_KIND_DRIVER: {
		uint32_t cbid = ((const struct cupti_api *)rec)->cbid;
		if (cv->keep_cbid && !kept(cv->keep_cbid, cv->keep_ncbids, cbid))
			return 0;
		return api(cv, (const struct cupti_api *)rec, 0, out, cap, len);
	}
	case CUPTI_KIND_RUNTIME: {
		uint32_t cbid = ((const struct cupti_api *)rec)->cbid;
		if (!cv->keep_runtime || !kept(cv->keep_runtime, cv->keep_nruntime, cbid))
			return 0;
		return api(cv, (const struct cupti_api *)rec, CUHOOK_GPU_API_RUNTIME, out, cap, len);
	}
	case CUPTI_KIND_CONCURRENT_KERNEL:
	case CUPTI_KIND_KERNEL:
		return kernel(cv, (const struct cupti_kernel10 *)rec, out, cap, len);
	case CUPTI_KIND_MEMCPY:
		return copy(cv, (const struct cupti_memcpy6 *)rec, out, cap, len);
	case CUPTI_KIND_MEMSET:
		return set(cv, (const struct cupti_memset4 *)rec, out, cap, len);
	default:
		return 0;
	}
}
