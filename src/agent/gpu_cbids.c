#include "gpu_cbids.h"

#include "gpu_submit.h"
#include "hook_table.h"
#include "trace_format.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define CBID_LIMIT 4096 /* driver callback ids asked for a name (13.0 has 807) */
#define SUBMIT_MAX 512

static struct {
	bool known;
	unsigned n;
	uint32_t cbid[SUBMIT_MAX];
	char name[SUBMIT_MAX][64];
	int16_t slot_of[CBID_LIMIT];  /* cbid -> index, -1 */
	uint32_t func_of[SUBMIT_MAX]; /* the writer's cache: cuhook's id, UINT32_MAX */
	uint8_t bits[CBID_LIMIT / 8]; /* the same set as a bitmap, for the converter's filter */
} T;

/* The CUDA runtime's submitting functions (cudaLaunch*, cudaMemcpy*...), a bitmap by runtime
 * callback id: the converter keeps their CUPTI records in a session that enables the runtime's
 * (gpu_activity.c, enable_driver_records). */
static uint8_t runtime_bits[CBID_LIMIT / 8];

/* Ask CUPTI for the runtime's callback names (the driver's: gpu_cbids_learn). */
static void learn_runtime(const struct cupti_fns *f)
{
	for (uint32_t cbid = 1; cbid < CBID_LIMIT; cbid++) {
		const char *name = NULL;
		if (f->GetCallbackName(CUPTI_DOMAIN_RUNTIME_API, cbid, &name) == CUPTI_OK && name &&
		    cuhook_runtime_submits(name))
			runtime_bits[cbid / 8] |= (uint8_t)(1u << (cbid % 8));
	}
}

void gpu_cbids_learn(const struct cupti_fns *f)
{
	if (T.known)
		return;
	memset(T.slot_of, 0xff, sizeof(T.slot_of));
	for (uint32_t cbid = 1; cbid < CBID_LIMIT && T.n < SUBMIT_MAX; cbid++) {
		const char *name = NULL;
		if (f->GetCallbackName(CUPTI_DOMAIN_DRIVER_API, cbid, &name) != CUPTI_OK || !name ||
		    strlen(name) >= sizeof(T.name[0]))
			continue;
		if (!cuhook_driver_submits(name))
			continue;
		T.cbid[T.n] = cbid;
		snprintf(T.name[T.n], sizeof(T.name[0]), "%s", name);
		T.func_of[T.n] = UINT32_MAX;
		T.slot_of[cbid] = (int16_t)T.n++;
		T.bits[cbid / 8] |= (uint8_t)(1u << (cbid % 8));
	}
	learn_runtime(f);
	/* published to the writer by the queue of GPU blocks (a release there) */
	T.known = true;
}

const uint8_t *gpu_cbids_bitmap(uint32_t *ncbids)
{
	*ncbids = CBID_LIMIT;
	return T.bits;
}

const uint8_t *gpu_runtime_cbids_bitmap(uint32_t *ncbids)
{
	*ncbids = CBID_LIMIT;
	return runtime_bits;
}

unsigned gpu_cbids_count(void)
{
	return T.n;
}

uint32_t gpu_cbid(unsigned i)
{
	return T.cbid[i];
}

const char *gpu_cbid_name(unsigned i)
{
	return T.name[i];
}

/* cuhook's id of the function named so, among ids [0, nfuncs): those are in the file's FUNCS
 * blocks already, and their names were set before (the writer read them under agent_lock). */
static uint32_t func_named(const char *name, uint32_t nfuncs)
{
	for (uint32_t id = 0; id < nfuncs; id++)
		if (patch_sites[id].name && !strcmp(patch_sites[id].name, name))
			return id;
	return UINT32_MAX;
}

void gpu_api_resolve(uint8_t *data, uint32_t len, uint32_t nfuncs)
{
	for (uint32_t off = 0; off + sizeof(struct cuhook_gpu_rec) <= len;) {
		struct cuhook_gpu_rec *h = (struct cuhook_gpu_rec *)(data + off);
		if (h->size < sizeof(*h) || off + h->size > len)
			return;
		if (h->type == CUHOOK_GPU_REC_API && !(h->flags & CUHOOK_GPU_API_RUNTIME)) {
			struct cuhook_gpu_api *a = (struct cuhook_gpu_api *)h;
			int slot = a->cbid < CBID_LIMIT && T.known ? T.slot_of[a->cbid] : -1;
			if (slot >= 0) {
				uint32_t *f = &T.func_of[slot];
				if (*f == UINT32_MAX || *f >= nfuncs)
					*f = func_named(T.name[slot], nfuncs);
				a->func = *f < nfuncs ? *f : UINT32_MAX;
			}
		}
		off += h->size;
	}
}
