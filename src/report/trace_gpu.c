/* The GPU blocks of trace.bin (agent option gpu=1, src/format/trace_format.h "the GPU side"):
 * GPU_SESSION blocks open and close GPU sessions; GPU blocks carry CUPTI's records, each decoded
 * by the function of its type (gpu_recs[]). Decoded in pass 2 of the reader, where the clock is
 * known, in file order: a GPU block belongs to the session the last STARTED block opened.
 *
 * Like every block, these are checked against the bytes they have before anything is read: a
 * record with a bad size ends its block (the next record cannot be found), a record of an unknown
 * type or too short for its type is skipped alone (its size is sound), and each is counted as an
 * error; a kernel naming a NAME id no record defined keeps no name (an error too). */
#include "trace_reader_impl.h"
#include "gpu_submit.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(struct cuhook_gpu_session_block) == 40, "GPU session block layout");
_Static_assert(sizeof(struct cuhook_gpu_block) == 8, "GPU block layout");
_Static_assert(sizeof(struct cuhook_gpu_rec) == 8, "GPU record header layout");
_Static_assert(sizeof(struct cuhook_gpu_api) == 40, "GPU API record layout");
_Static_assert(sizeof(struct cuhook_gpu_kernel) == 88, "GPU kernel record layout");
_Static_assert(sizeof(struct cuhook_gpu_memcpy) == 64, "GPU memcpy record layout");
_Static_assert(sizeof(struct cuhook_gpu_memset) == 64, "GPU memset record layout");
_Static_assert(sizeof(struct cuhook_gpu_name) == 16, "GPU name record layout");

/* NAME ids are dense (1, 2, ... in order of first use); a hostile id must not make the table of
 * names huge. Far more distinct kernels than any program has. */
#define TR_MAX_GPU_NAME_ID (1u << 20)
/* Records per array: beyond this (a 64 GB file of nothing else) the rest are skipped. */
#define TR_MAX_GPU_RECORDS (UINT32_MAX - 1)

static const char *status_name(uint32_t s)
{
	static const char *const names[CUHOOK_GPU_STATUS_COUNT] = {"STARTED", "STOPPED", "NO_CUPTI", "OTHER_USER",
	                                                           "FAILED"};
	return s < CUHOOK_GPU_STATUS_COUNT ? names[s] : "unknown";
}

/* ---- GPU_SESSION ----------------------------------------------------------------------------- */

int tr_gpu_session_block(struct tr_trace *t, const uint8_t *p, uint32_t size, uint64_t off)
{
	const struct cuhook_gpu_session_block *b = (const void *)p;
	t->ngpu_blocks++;
	if (size < sizeof(*b) || b->path_len > size - sizeof(*b)) {
		tr_add_error(t, "corrupt GPU_SESSION block at offset %llu (%u bytes)", (unsigned long long)off, size);
		return 0;
	}
	if (b->status >= CUHOOK_GPU_STATUS_COUNT) {
		tr_add_error(t, "GPU_SESSION block at offset %llu: unknown status %u, skipped", (unsigned long long)off,
		             b->status);
		return 0;
	}
	int64_t ns = tr_tsc_to_ns(t, b->tsc);
	if (b->status == CUHOOK_GPU_STOPPED) {
		if (t->gpu_open_ == TR_NONE) {
			tr_add_error(t, "GPU_SESSION STOPPED at offset %llu without a started session", (unsigned long long)off);
			return 0;
		}
		struct tr_gpu_session *s = &t->gpu_sessions[t->gpu_open_];
		s->stopped = 1;
		s->stop_ns = ns < s->start_ns ? s->start_ns : ns;
		s->records = b->records;
		s->dropped = b->dropped;
		t->gpu_open_ = TR_NONE;
		return 0;
	}
	if (t->gpu_open_ != TR_NONE)
		tr_add_error(t, "GPU_SESSION %s at offset %llu while session %u was open (its STOPPED block is missing)",
		             status_name(b->status), (unsigned long long)off, t->gpu_open_ + 1);
	if (t->ngpu_sessions >= TR_MAX_GPU_RECORDS) {
		tr_add_error(t, "too many GPU sessions: the rest skipped");
		t->gpu_open_ = TR_NONE;
		return 0;
	}
	if (tr_grow((void **)&t->gpu_sessions, &t->gpu_sessions_cap_, t->ngpu_sessions + 1, sizeof(*t->gpu_sessions)))
		return -1;
	struct tr_gpu_session *s = &t->gpu_sessions[t->ngpu_sessions];
	memset(s, 0, sizeof(*s));
	s->status = b->status;
	s->cupti_version = b->cupti_version;
	s->result = b->result;
	s->path = tr_arena_strndup(t, b + 1, b->path_len);
	if (!s->path)
		return -1;
	s->start_ns = s->stop_ns = ns;
	t->gpu_open_ = b->status == CUHOOK_GPU_STARTED ? t->ngpu_sessions : TR_NONE;
	t->ngpu_sessions++;
	return 0;
}

/* ---- GPU records: one decoder per type -------------------------------------------------------- */

/* start/end converted; an end before the start (or implausibly late) is corrupt: the record is
 * kept without a duration, like a call whose EXIT is. */
static void gpu_times(struct tr_trace *t, const struct cuhook_gpu_rec *h, uint64_t start, uint64_t end,
                      const char *what, int64_t *s, int64_t *e)
{
	*s = tr_tsc_to_ns(t, start);
	*e = tr_tsc_to_ns(t, end);
	if (*e < *s || *e - *s > TR_MAX_DURATION_NS) {
		tr_add_error(t, "GPU %s record (correlation id %u) ends %s its start", what, h->correlation,
		             *e < *s ? "before" : "days after");
		*e = *s;
	}
}

static int gpu_rec_api(struct tr_trace *t, uint32_t session, const void *rec)
{
	const struct cuhook_gpu_api *r = rec;
	if (tr_grow((void **)&t->gpu_api, &t->gpu_api_cap_, t->ngpu_api + 1, sizeof(*t->gpu_api)))
		return -1;
	struct tr_gpu_api *a = &t->gpu_api[t->ngpu_api++];
	memset(a, 0, sizeof(*a));
	gpu_times(t, &r->h, r->start, r->end, "API", &a->start_ns, &a->end_ns);
	a->session = session;
	a->correlation = r->h.correlation;
	a->tid = r->tid;
	a->runtime = (r->h.flags & CUHOOK_GPU_API_RUNTIME) != 0;
	a->func = a->runtime ? UINT32_MAX : r->func; /* a runtime function is none of the driver's */
	a->cbid = r->cbid;
	a->ret = r->ret;
	a->call = TR_NONE;
	a->link = TR_GPU_NO_CALL;
	return 0;
}

/* What KERNEL, MEMCPY and MEMSET records begin with, in the same layout. */
struct work_prefix {
	struct cuhook_gpu_rec h;
	uint64_t start, end;
	uint32_t device, context, stream;
};
#define SAME_PREFIX(rec)                                                                            \
	_Static_assert(offsetof(struct rec, start) == offsetof(struct work_prefix, start) &&            \
	               offsetof(struct rec, end) == offsetof(struct work_prefix, end) &&                \
	               offsetof(struct rec, device) == offsetof(struct work_prefix, device) &&          \
	               offsetof(struct rec, context) == offsetof(struct work_prefix, context) &&        \
	               offsetof(struct rec, stream) == offsetof(struct work_prefix, stream),            \
	               #rec " begins like every work record")
SAME_PREFIX(cuhook_gpu_kernel);
SAME_PREFIX(cuhook_gpu_memcpy);
SAME_PREFIX(cuhook_gpu_memset);

/* A new work record of the session from what every work record begins with: times converted,
 * the link not made yet. */
static struct tr_gpu_work *work_new(struct tr_trace *t, uint32_t session, const void *rec, uint8_t kind)
{
	static const char *const what[TR_GPU_KIND_COUNT] = {"KERNEL", "MEMCPY", "MEMSET"};
	const struct work_prefix *r = rec;
	if (tr_grow((void **)&t->gpu_work, &t->gpu_work_cap_, t->ngpu_work + 1, sizeof(*t->gpu_work)))
		return NULL;
	struct tr_gpu_work *w = &t->gpu_work[t->ngpu_work++];
	memset(w, 0, sizeof(*w));
	w->kind = kind;
	gpu_times(t, &r->h, r->start, r->end, what[kind], &w->start_ns, &w->end_ns);
	w->session = session;
	w->correlation = r->h.correlation;
	w->device = r->device;
	w->context = r->context;
	w->stream = r->stream;
	w->api = w->call = TR_NONE;
	w->link = TR_GPU_NO_API;
	return w;
}

static int gpu_rec_kernel(struct tr_trace *t, uint32_t session, const void *rec)
{
	const struct cuhook_gpu_kernel *r = rec;
	struct tr_gpu_work *w = work_new(t, session, r, TR_GPU_KERNEL);
	if (!w)
		return -1;
	w->name_id = r->name_id; /* checked by tr_gpu_finish, once every NAME is read */
	memcpy(w->grid, r->grid, sizeof(w->grid));
	memcpy(w->block, r->block, sizeof(w->block));
	w->shared_static = r->shared_static;
	w->shared_dynamic = r->shared_dynamic;
	w->registers = r->registers;
	w->graph_id = r->graph_id;
	w->graph_node_id = r->graph_node_id;
	return 0;
}

static int gpu_rec_memcpy(struct tr_trace *t, uint32_t session, const void *rec)
{
	const struct cuhook_gpu_memcpy *r = rec;
	struct tr_gpu_work *w = work_new(t, session, r, TR_GPU_MEMCPY);
	if (!w)
		return -1;
	w->copy_kind = r->copy_kind;
	w->src_kind = r->src_kind;
	w->dst_kind = r->dst_kind;
	w->flags = r->flags;
	w->bytes = r->bytes;
	w->graph_id = r->graph_id;
	w->graph_node_id = r->graph_node_id;
	return 0;
}

static int gpu_rec_memset(struct tr_trace *t, uint32_t session, const void *rec)
{
	const struct cuhook_gpu_memset *r = rec;
	struct tr_gpu_work *w = work_new(t, session, r, TR_GPU_MEMSET);
	if (!w)
		return -1;
	w->value = r->value;
	w->bytes = r->bytes;
	w->mem_kind = r->mem_kind;
	w->flags = r->flags;
	w->graph_id = r->graph_id;
	w->graph_node_id = r->graph_node_id;
	return 0;
}

static int gpu_rec_name(struct tr_trace *t, uint32_t session, const void *rec)
{
	const struct cuhook_gpu_name *r = rec;
	(void)session;
	if (r->len > r->h.size - sizeof(*r)) {
		tr_add_error(t, "corrupt GPU NAME record (size %u, name of %u bytes): skipped", r->h.size, r->len);
		return 0;
	}
	if (!r->name_id || r->name_id >= TR_MAX_GPU_NAME_ID) {
		tr_add_error(t, "GPU NAME record with id %u out of range (1..%u): skipped", r->name_id, TR_MAX_GPU_NAME_ID - 1);
		return 0;
	}
	if (r->name_id >= t->ngpu_names) {
		if (tr_grow((void **)&t->gpu_names, &t->gpu_names_cap_, r->name_id + 1, sizeof(*t->gpu_names)))
			return -1;
		memset(t->gpu_names + t->ngpu_names, 0, (size_t)(r->name_id + 1 - t->ngpu_names) * sizeof(*t->gpu_names));
		t->ngpu_names = r->name_id + 1;
	}
	if (t->gpu_names[r->name_id]) {
		tr_add_error(t, "GPU NAME id %u defined twice: the first kept", r->name_id);
		return 0;
	}
	t->gpu_names[r->name_id] = tr_arena_strndup(t, r + 1, r->len);
	return t->gpu_names[r->name_id] ? 0 : -1;
}

typedef int (*gpu_rec_fn)(struct tr_trace *t, uint32_t session, const void *rec);

static const struct {
	const char *name;
	uint16_t size;     /* the least a record of the type holds */
	gpu_rec_fn decode;
} gpu_recs[] = {
	[CUHOOK_GPU_REC_API] = {"API", sizeof(struct cuhook_gpu_api), gpu_rec_api},
	[CUHOOK_GPU_REC_KERNEL] = {"KERNEL", sizeof(struct cuhook_gpu_kernel), gpu_rec_kernel},
	[CUHOOK_GPU_REC_MEMCPY] = {"MEMCPY", sizeof(struct cuhook_gpu_memcpy), gpu_rec_memcpy},
	[CUHOOK_GPU_REC_MEMSET] = {"MEMSET", sizeof(struct cuhook_gpu_memset), gpu_rec_memset},
	[CUHOOK_GPU_REC_NAME] = {"NAME", sizeof(struct cuhook_gpu_name), gpu_rec_name},
};

/* ---- GPU blocks ------------------------------------------------------------------------------ */

int tr_gpu_block(struct tr_trace *t, const uint8_t *p, uint32_t size, uint64_t off)
{
	const struct cuhook_gpu_block *gb = (const void *)p;
	t->ngpu_blocks++;
	if (size < sizeof(*gb)) {
		t->bad_records++;
		tr_add_error(t, "corrupt GPU block at offset %llu (%u bytes)", (unsigned long long)off, size);
		return 0;
	}
	const uint32_t session = t->gpu_open_;
	if (session == TR_NONE) {
		t->bad_records++;
		tr_add_error(t, "GPU block at offset %llu outside a GPU session (no STARTED block open): skipped",
		             (unsigned long long)off);
		return 0;
	}
	const uint8_t *q = p + sizeof(*gb), *end = p + size;
	uint32_t nrec = 0;
	while (q < end) {
		const struct cuhook_gpu_rec *r = (const void *)q;
		size_t left = (size_t)(end - q);
		/* as in EVENTS blocks: a sane size first, or the next record cannot be found */
		if (left < sizeof(*r) || r->size < sizeof(*r) || r->size % 8 || r->size > left) {
			t->bad_records++;
			tr_add_error(t, "GPU block at offset %llu: corrupt record %u (size %u, %zu bytes left); rest of the "
			             "block skipped", (unsigned long long)off, nrec, left < sizeof(*r) ? 0 : r->size, left);
			break;
		}
		nrec++;
		q += r->size;
		if (r->type >= sizeof(gpu_recs) / sizeof(gpu_recs[0]) || !gpu_recs[r->type].decode) {
			t->bad_records++;
			tr_add_error(t, "unknown GPU record type %u skipped", r->type);
			continue;
		}
		if (r->size < gpu_recs[r->type].size) {
			t->bad_records++;
			tr_add_error(t, "corrupt GPU %s record (size %u, at least %u): skipped", gpu_recs[r->type].name, r->size,
			             gpu_recs[r->type].size);
			continue;
		}
		if (t->ngpu_api >= TR_MAX_GPU_RECORDS || t->ngpu_work >= TR_MAX_GPU_RECORDS) {
			t->bad_records++;
			tr_add_error(t, "too many GPU records: the rest skipped");
			return 0;
		}
		if (gpu_recs[r->type].decode(t, session, r))
			return -1;
		t->gpu_sessions[session].records_read++;
	}
	if (nrec != gb->nrecords && q == end)
		tr_add_error(t, "GPU block at offset %llu holds %u records, header says %u", (unsigned long long)off, nrec,
		             gb->nrecords);
	return 0;
}

/* ---- after pass 2 ------------------------------------------------------------------------------ */

int tr_gpu_finish(struct tr_trace *t)
{
	uint64_t unnamed = 0;
	uint32_t first = 0;
	for (uint32_t i = 0; i < t->ngpu_work; i++) {
		struct tr_gpu_work *w = &t->gpu_work[i];
		if (w->kind != TR_GPU_KERNEL || !w->name_id)
			continue;
		if (w->name_id >= t->ngpu_names || !t->gpu_names[w->name_id]) {
			if (!unnamed++)
				first = w->name_id;
			w->name_id = 0;
		}
	}
	if (unnamed) {
		tr_add_error(t, "%llu GPU kernel record%s name%s no NAME record defines (first: id %u)",
		             (unsigned long long)unnamed, unnamed == 1 ? "" : "s", unnamed == 1 ? "s an id" : " ids", first);
		t->errors += unnamed - 1;
	}
	if (!t->ngpu_api && !t->ngpu_work)
		return 0;
	uint64_t drop_sum = 0;
	for (uint32_t i = 0; i < t->nthreads; i++)
		drop_sum = tr_sat_add_u64(drop_sum, t->threads[i].dropped);
	int lost_unattributed = t->dropped > drop_sum;
	/* the driver functions a runtime record may hold (src/format/gpu_submit.h) */
	uint8_t *submits = calloc((size_t)t->nfuncs + 1, 1);
	if (!submits)
		return -1;
	for (uint32_t f = 0; f < t->nfuncs; f++)
		submits[f] = t->funcs[f].defined && cuhook_driver_submits(t->funcs[f].name);
	int rc = tr_gpu_link(t->calls, t->ncalls, t->threads, t->nthreads, submits, t->nfuncs, lost_unattributed,
	                     t->gpu_api, t->ngpu_api, t->gpu_work, t->ngpu_work, &t->gpu_links);
	free(submits);
	if (rc)
		return -1;
	if (t->gpu_links.duplicate_api)
		tr_add_error(t, "%llu GPU API records repeat a correlation id of their session (the first kept)",
		             (unsigned long long)t->gpu_links.duplicate_api);
	return 0;
}

/* ---- what the report relies on (the fuzzers check it) -------------------------------------------- */

int tr_gpu_consistent(const struct tr_trace *t)
{
	uint64_t work[TR_GPU_LINK_COUNT] = {0}, api[TR_GPU_LINK_COUNT] = {0};
	for (uint32_t i = 0; i < t->ngpu_api; i++) {
		const struct tr_gpu_api *a = &t->gpu_api[i];
		if (a->session >= t->ngpu_sessions || a->link >= TR_GPU_LINK_COUNT || a->link == TR_GPU_NO_API ||
		    (a->link == TR_GPU_LINKED) != (a->call != TR_NONE) || (a->call != TR_NONE && a->call >= t->ncalls) ||
		    a->end_ns < a->start_ns)
			return 0;
		if (a->call != TR_NONE) {
			const struct tr_call *c = &t->calls[a->call];
			if (t->threads[c->thread].tid != a->tid || !tr_call_timed(c))
				return 0;
			if (a->runtime ? c->func >= t->nfuncs || !cuhook_driver_submits(t->funcs[c->func].name) ||
			                     c->start_ns < a->start_ns || c->end_ns > a->end_ns
			               : c->func != a->func || c->start_ns > a->start_ns || c->end_ns < a->end_ns)
				return 0;
		}
		api[a->link]++;
	}
	for (uint32_t i = 0; i < t->ngpu_work; i++) {
		const struct tr_gpu_work *w = &t->gpu_work[i];
		if (w->session >= t->ngpu_sessions || w->kind >= TR_GPU_KIND_COUNT || w->link >= TR_GPU_LINK_COUNT ||
		    w->end_ns < w->start_ns || (w->api == TR_NONE) != (w->link == TR_GPU_NO_API) ||
		    (w->api != TR_NONE && (w->api >= t->ngpu_api || t->gpu_api[w->api].session != w->session ||
		                           t->gpu_api[w->api].correlation != w->correlation ||
		                           t->gpu_api[w->api].call != w->call)) ||
		    (w->name_id && (w->name_id >= t->ngpu_names || !t->gpu_names[w->name_id])))
			return 0;
		work[w->link]++;
	}
	return !memcmp(work, t->gpu_links.work, sizeof(work)) && !memcmp(api, t->gpu_links.api, sizeof(api));
}

void tr_gpu_free(struct tr_trace *t)
{
	free(t->gpu_sessions);
	free(t->gpu_api);
	free(t->gpu_work);
	free(t->gpu_names);
}
