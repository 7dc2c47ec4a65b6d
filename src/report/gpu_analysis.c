/* The GPU side of a view (struct rp_gpu, report.h), analysed once when the view is made, so that
 * every writer formats the same numbers:
 *   - the work the options select, in GPU start order, with its lane on its stream's track;
 *   - kernels by name (nsys's cuda_gpu_kern_sum), copies by kind and memsets (cuda_gpu_mem_time_sum
 *     and cuda_gpu_mem_size_sum), with the GPU-measured bandwidth;
 *   - busy time per device and per stream (the union of its work's intervals), over the
 *     sessions' recorded window;
 *   - idle gaps: per device and session, the times between two pieces of work when the device ran
 *     nothing, and what the program's threads were doing meanwhile (rp_host_state);
 *   - launch latency: the API record's start (submission) to the GPU's start;
 *   - the flows of the exports: each selected call to the work it submitted.
 * Selection: --time-range by the work's GPU start; --functions and --thread by the call that
 * submitted it (unlinked work has none and is left out when either is given). What the host was
 * doing is read from every call, whatever the options: it is the context of the GPU's gaps. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

const char *const rp_host_state_names[RP_HOST_COUNT] = {"loading", "sync", "other driver calls",
                                                        "outside the driver"};
const char *const rp_gpu_kind_names[TR_GPU_KIND_COUNT] = {"kernel", "memcpy", "memset"};
const char *const rp_gpu_link_names[TR_GPU_LINK_COUNT] = {"linked", "no API record",
                                                          "API record in no recorded call", "call dropped"};
const char *const rp_gpu_link_keys[TR_GPU_LINK_COUNT] = {"linked", "no_api_record", "api_record_in_no_call",
                                                         "call_dropped"};
const int64_t rp_lat_bounds[RP_LAT_BUCKETS - 1] = {10000, 100000, 1000000, 10000000, 100000000};

/* CUpti_ActivityMemoryKind: host memory the driver copies through a staging buffer */
#define MEMORY_PAGEABLE 1

/* Lanes per stream before overlapping work shares one (only a corrupt trace gets there). */
#define MAX_LANES 64

const char *rp_gpu_op_name(unsigned op)
{
	static const char *const names[RP_GPU_OP_COUNT] = {
		"memcpy unknown", "memcpy HtoD", "memcpy DtoH", "memcpy HtoA", "memcpy AtoH", "memcpy AtoA",
		"memcpy AtoD",    "memcpy DtoA", "memcpy DtoD", "memcpy HtoH", "memcpy PtoP", "memset",
	};
	return op < RP_GPU_OP_COUNT ? names[op] : names[0];
}

static unsigned op_of(const struct tr_gpu_work *w)
{
	if (w->kind == TR_GPU_MEMSET)
		return RP_GPU_OP_MEMSET;
	return w->copy_kind <= CUHOOK_COPY_PTOP ? w->copy_kind : CUHOOK_COPY_UNKNOWN;
}

const char *rp_gpu_work_label(const struct rp_view *v, const struct tr_gpu_work *w)
{
	if (w->kind != TR_GPU_KERNEL)
		return rp_gpu_op_name(op_of(w));
	const char *mangled = tr_gpu_work_name(v->t, w);
	if (!mangled)
		return "(unnamed kernel)";
	if (v->gpu && w->name_id < v->gpu->nnames && v->gpu->names[w->name_id])
		return v->gpu->names[w->name_id];
	return mangled;
}

size_t rp_gpu_describe(const struct rp_view *v, const struct tr_gpu_work *w, char *buf, size_t len)
{
	char b[32];
	size_t pos = 0;
	if (!len)
		return 0;
	buf[0] = 0;
	if (w->kind == TR_GPU_KERNEL)
		pos = rp_put(buf, len, pos, "grid (%d,%d,%d) block (%d,%d,%d) smem %u+%u regs %u", w->grid[0], w->grid[1],
		             w->grid[2], w->block[0], w->block[1], w->block[2], w->shared_static, w->shared_dynamic,
		             w->registers);
	else
		pos = rp_put(buf, len, pos, "%s", rp_fmt_bytes(b, sizeof(b), (double)w->bytes));
	if (w->kind != TR_GPU_KERNEL && w->end_ns > w->start_ns)
		pos = rp_put(buf, len, pos, " %.2f GB/s", (double)w->bytes / (double)(w->end_ns - w->start_ns));
	if (w->kind == TR_GPU_MEMSET)
		pos = rp_put(buf, len, pos, " value 0x%x", w->value);
	if (w->graph_id)
		pos = rp_put(buf, len, pos, " graph %u node %llu", w->graph_id, (unsigned long long)w->graph_node_id);
	pos = rp_put(buf, len, pos, " device %u stream %u", w->device, w->stream);
	if (w->call != TR_NONE)
		pos = rp_put(buf, len, pos, " from %s", tr_func_name(v->t, v->t->calls[w->call].func));
	else
		pos = rp_put(buf, len, pos, " (unlinked: %s)", rp_gpu_link_names[w->link]);
	return pos;
}

/* ---- selection ------------------------------------------------------------------------------- */

static int by_start(const void *pa, const void *pb, void *ctx)
{
	const struct tr_gpu_work *w = ctx;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	if (w[a].start_ns != w[b].start_ns)
		return w[a].start_ns < w[b].start_ns ? -1 : 1;
	return a < b ? -1 : a > b;
}

static int select_work(const struct rp_view *v, struct rp_gpu *g)
{
	const struct tr_trace *t = v->t;
	const struct rp_opts *o = v->o;
	const uint8_t *func_ok = v->func_ok;
	uint8_t *thread_ok = NULL;
	g->sel = malloc(((size_t)t->ngpu_work + 1) * sizeof(*g->sel));
	if (!g->sel)
		return -1;
	int by_call = func_ok || (o->threads && *o->threads);
	if (by_call) {
		thread_ok = malloc((size_t)t->nthreads + 1);
		if (!thread_ok)
			return -1;
		for (uint32_t i = 0; i < t->nthreads; i++)
			thread_ok[i] = (uint8_t)rp_thread_selected(v, i);
	}
	for (uint32_t i = 0; i < t->ngpu_work; i++) {
		const struct tr_gpu_work *w = &t->gpu_work[i];
		if (o->has_range) {
			int64_t rel = rp_rel(v, w->start_ns);
			if (rel < o->range_start_ns || rel >= o->range_end_ns)
				continue;
		}
		if (by_call && (w->call == TR_NONE || (func_ok && !func_ok[t->calls[w->call].func]) ||
		                !thread_ok[t->calls[w->call].thread]))
			continue;
		g->sel[g->nsel++] = i;
	}
	free(thread_ok);
	qsort_r(g->sel, g->nsel, sizeof(*g->sel), by_start, t->gpu_work);
	for (uint32_t i = 0; i < g->nsel; i++) {
		const struct tr_gpu_work *w = &t->gpu_work[g->sel[i]];
		g->nkind[w->kind]++;
		g->link[w->link]++;
	}
	return 0;
}

/* ---- kernels and memory operations ------------------------------------------------------------- */

static int by_name(const void *pa, const void *pb, void *ctx)
{
	const struct tr_gpu_work *w = ctx;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	if (w[a].name_id != w[b].name_id)
		return w[a].name_id < w[b].name_id ? -1 : 1;
	return a < b ? -1 : a > b;
}

static int kernel_rows_order(const void *pa, const void *pb)
{
	const struct rp_gpu_kernel_row *a = pa, *b = pb;
	if (a->d.total != b->d.total)
		return a->d.total > b->d.total ? -1 : 1;
	int r = strcmp(a->name, b->name);
	return r ? r : (a->name_id > b->name_id) - (a->name_id < b->name_id);
}

static int memop_rows_order(const void *pa, const void *pb)
{
	const struct rp_gpu_memop_row *a = pa, *b = pb;
	if (a->d.total != b->d.total)
		return a->d.total > b->d.total ? -1 : 1;
	return (a->op > b->op) - (a->op < b->op);
}

static int64_t dur_of(const struct tr_gpu_work *w)
{
	return w->end_ns - w->start_ns;
}

static int kernel_rows(const struct rp_view *v, struct rp_gpu *g, int64_t *d)
{
	const struct tr_trace *t = v->t;
	uint32_t *k = malloc(((size_t)g->nsel + 1) * sizeof(*k)), nk = 0;
	if (!k)
		return -1;
	for (uint32_t i = 0; i < g->nsel; i++)
		if (t->gpu_work[g->sel[i]].kind == TR_GPU_KERNEL)
			k[nk++] = g->sel[i];
	qsort_r(k, nk, sizeof(*k), by_name, t->gpu_work);
	g->kernels = calloc((size_t)nk + 1, sizeof(*g->kernels));
	if (!g->kernels) {
		free(k);
		return -1;
	}
	for (uint32_t i = 0; i < nk;) {
		uint32_t id = t->gpu_work[k[i]].name_id, n = 0;
		for (; i < nk && t->gpu_work[k[i]].name_id == id; i++)
			d[n++] = dur_of(&t->gpu_work[k[i]]);
		struct rp_gpu_kernel_row *r = &g->kernels[g->nkernels++];
		r->name_id = id;
		r->calls = n;
		rp_dist_of(&r->d, d, n);
		g->kernel_time = rp_sat_add(g->kernel_time, r->d.total);
		const char *mangled = id && id < t->ngpu_names ? t->gpu_names[id] : NULL;
		if (mangled && id < g->nnames && !g->names[id])
			g->names[id] = rp_demangle(mangled);
		r->name = !mangled ? "(unnamed kernel)" : g->names[id] ? g->names[id] : mangled;
	}
	free(k);
	qsort(g->kernels, g->nkernels, sizeof(*g->kernels), kernel_rows_order);
	return 0;
}

static int memop_rows(const struct rp_view *v, struct rp_gpu *g, int64_t *d, int64_t *size)
{
	const struct tr_trace *t = v->t;
	g->memops = calloc(RP_GPU_OP_COUNT, sizeof(*g->memops));
	if (!g->memops)
		return -1;
	for (unsigned op = 0; op < RP_GPU_OP_COUNT; op++) {
		uint32_t n = 0, last_call = TR_NONE;
		uint64_t bytes = 0;
		for (uint32_t i = 0; i < g->nsel; i++) {
			const struct tr_gpu_work *w = &t->gpu_work[g->sel[i]];
			if (w->kind == TR_GPU_KERNEL || op_of(w) != op)
				continue;
			d[n] = dur_of(w);
			size[n++] = w->bytes > INT64_MAX ? INT64_MAX : (int64_t)w->bytes;
			bytes = tr_sat_add_u64(bytes, w->bytes);
			if (w->kind == TR_GPU_MEMCPY && (w->src_kind == MEMORY_PAGEABLE || w->dst_kind == MEMORY_PAGEABLE)) {
				g->pageable[op].count++;
				g->pageable[op].bytes = tr_sat_add_u64(g->pageable[op].bytes, w->bytes);
				g->pageable[op].time = rp_sat_add(g->pageable[op].time, dur_of(w));
				const struct tr_call *c = w->call != TR_NONE ? &t->calls[w->call] : NULL;
				if (c && tr_call_timed(c) && w->call != last_call)
					g->pageable[op].call_time = rp_sat_add(g->pageable[op].call_time, tr_call_dur(c));
				last_call = w->call;
			}
		}
		if (!n)
			continue;
		struct rp_gpu_memop_row *r = &g->memops[g->nmemops++];
		r->op = (uint8_t)op;
		r->count = n;
		r->bytes = bytes;
		rp_dist_of(&r->d, d, n);
		rp_dist_of(&r->size, size, n);
		g->memop_time = rp_sat_add(g->memop_time, r->d.total);
	}
	qsort(g->memops, g->nmemops, sizeof(*g->memops), memop_rows_order);
	return 0;
}

/* ---- devices, streams, lanes, gaps ----------------------------------------------------------- */

struct gap {
	uint32_t device;           /* index in g->devices */
	int64_t start, end;
	uint32_t before, after;
	int64_t host[RP_HOST_COUNT];
};

static int cmp_stream(const void *pa, const void *pb)
{
	const struct rp_gpu_stream *a = pa, *b = pb;
	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	return (a->stream > b->stream) - (a->stream < b->stream);
}

static int cmp_device(const void *pa, const void *pb)
{
	uint32_t a = ((const struct rp_gpu_device *)pa)->device, b = ((const struct rp_gpu_device *)pb)->device;
	return (a > b) - (a < b);
}

/* Devices and streams that the selected work names, sorted, without repeats. */
static int find_tracks(const struct rp_view *v, struct rp_gpu *g)
{
	const struct tr_trace *t = v->t;
	g->streams = calloc((size_t)g->nsel + 1, sizeof(*g->streams));
	g->devices = calloc((size_t)g->nsel + 1, sizeof(*g->devices));
	if (!g->streams || !g->devices)
		return -1;
	for (uint32_t i = 0; i < g->nsel; i++) {
		const struct tr_gpu_work *w = &t->gpu_work[g->sel[i]];
		g->streams[i] = (struct rp_gpu_stream){.device = w->device, .stream = w->stream};
		g->devices[i].device = w->device;
	}
	qsort(g->streams, g->nsel, sizeof(*g->streams), cmp_stream);
	qsort(g->devices, g->nsel, sizeof(*g->devices), cmp_device);
	for (uint32_t i = 0; i < g->nsel; i++) {
		if (!g->nstreams || cmp_stream(&g->streams[i], &g->streams[g->nstreams - 1]))
			g->streams[g->nstreams++] = g->streams[i];
		if (!g->ndevices || g->devices[i].device != g->devices[g->ndevices - 1].device)
			g->devices[g->ndevices++] = g->devices[i];
	}
	return 0;
}

static uint32_t stream_index(const struct rp_gpu *g, uint32_t device, uint32_t stream)
{
	const struct rp_gpu_stream key = {.device = device, .stream = stream};
	const struct rp_gpu_stream *s = bsearch(&key, g->streams, g->nstreams, sizeof(key), cmp_stream);
	return (uint32_t)(s - g->streams);
}

static uint32_t device_index(const struct rp_gpu *g, uint32_t device)
{
	const struct rp_gpu_device key = {.device = device};
	const struct rp_gpu_device *d = bsearch(&key, g->devices, g->ndevices, sizeof(key), cmp_device);
	return (uint32_t)(d - g->devices);
}

/* The end of a work record's interval within --time-range. */
static int64_t clipped_end(const struct rp_view *v, const struct tr_gpu_work *w)
{
	if (v->o->has_range && rp_rel(v, w->end_ns) > v->o->range_end_ns)
		return rp_sat_add(v->base, v->o->range_end_ns);
	return w->end_ns;
}

static int by_stream_start(const void *pa, const void *pb, void *ctx)
{
	const struct tr_gpu_work *w = ctx;
	const struct tr_gpu_work *a = &w[*(const uint32_t *)pa], *b = &w[*(const uint32_t *)pb];
	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	if (a->stream != b->stream)
		return a->stream < b->stream ? -1 : 1;
	return by_start(pa, pb, ctx);
}

/* Lanes: work that overlaps earlier work of its stream (graph nodes running side by side) goes
 * on the first lane free at its start, so that every lane's slices follow each other. Beyond
 * MAX_LANES, on the lane that frees first (it overlaps there: a corrupt trace). */
static int assign_lanes(const struct rp_view *v, struct rp_gpu *g)
{
	const struct tr_trace *t = v->t;
	uint32_t *idx = malloc(((size_t)g->nsel + 1) * sizeof(*idx));
	g->lane = calloc((size_t)t->ngpu_work + 1, sizeof(*g->lane));
	if (!idx || !g->lane) {
		free(idx);
		return -1;
	}
	memcpy(idx, g->sel, (size_t)g->nsel * sizeof(*idx));
	qsort_r(idx, g->nsel, sizeof(*idx), by_stream_start, t->gpu_work);
	int64_t ends[MAX_LANES];
	struct rp_gpu_stream *s = NULL;
	for (uint32_t i = 0; i < g->nsel; i++) {
		const struct tr_gpu_work *w = &t->gpu_work[idx[i]];
		if (!s || s->device != w->device || s->stream != w->stream)
			s = &g->streams[stream_index(g, w->device, w->stream)];
		uint32_t lane = 0;
		while (lane < s->nlanes && ends[lane] > w->start_ns)
			lane++;
		if (lane == s->nlanes && s->nlanes < MAX_LANES) {
			s->nlanes++;
			ends[lane] = w->end_ns;
		} else {
			if (lane == s->nlanes)
				for (uint32_t k = lane = 0; k < s->nlanes; k++)
					if (ends[k] < ends[lane])
						lane = k;
			if (w->end_ns > ends[lane])
				ends[lane] = w->end_ns;
		}
		g->lane[idx[i]] = lane;
	}
	free(idx);
	return 0;
}

/* Busy time per stream and per device (unions of intervals), per-device active spans, and the
 * gaps between a device's busy intervals within one session (into *gaps, caller frees). */
static int busy_and_gaps(const struct rp_view *v, struct rp_gpu *g, struct gap **gaps, uint32_t *ngaps)
{
	const struct tr_trace *t = v->t;
	struct span {
		int64_t start, end;        /* the current busy interval */
		int64_t sess_start;        /* the session's first work */
		uint32_t session, last;    /* the current interval's session, its last-ending work */
		int open;
	} *dev = calloc((size_t)g->ndevices + 1, sizeof(*dev)), *str = calloc((size_t)g->nstreams + 1, sizeof(*str));
	*gaps = malloc(((size_t)g->nsel + 1) * sizeof(**gaps));
	*ngaps = 0;
	if (!dev || !str || !*gaps) {
		free(dev);
		free(str);
		return -1;
	}
	for (uint32_t i = 0; i < g->nsel; i++) {
		uint32_t wi = g->sel[i];
		const struct tr_gpu_work *w = &t->gpu_work[wi];
		int64_t end = clipped_end(v, w);
		uint32_t si = stream_index(g, w->device, w->stream), di = device_index(g, w->device);
		struct rp_gpu_stream *s = &g->streams[si];
		struct rp_gpu_device *d = &g->devices[di];
		s->works++;
		d->works++;
		struct span *ss = &str[si], *ds = &dev[di];
		if (!ss->open || w->start_ns > ss->end) {
			if (ss->open)
				s->busy = rp_sat_add(s->busy, ss->end - ss->start);
			*ss = (struct span){.start = w->start_ns, .end = end, .open = 1};
		} else if (end > ss->end) {
			ss->end = end;
		}
		int same_session = ds->open && ds->session == w->session;
		if (ds->open && (w->start_ns > ds->end || !same_session)) {
			d->busy = rp_sat_add(d->busy, ds->end - ds->start);
			if (same_session) {
				(*gaps)[(*ngaps)++] = (struct gap){.device = di, .start = ds->end, .end = w->start_ns,
				                                   .before = ds->last, .after = wi};
			} else {
				d->active = rp_sat_add(d->active, ds->end - ds->sess_start);
			}
		}
		if (!ds->open || w->start_ns > ds->end || !same_session) {
			int64_t sess_start = same_session ? ds->sess_start : w->start_ns;
			*ds = (struct span){.start = w->start_ns, .end = end, .sess_start = sess_start, .session = w->session,
			                    .last = wi, .open = 1};
		} else if (end >= ds->end) {
			ds->end = end;
			ds->last = wi;
		}
	}
	for (uint32_t i = 0; i < g->nstreams; i++)
		if (str[i].open)
			g->streams[i].busy = rp_sat_add(g->streams[i].busy, str[i].end - str[i].start);
	for (uint32_t i = 0; i < g->ndevices; i++)
		if (dev[i].open) {
			g->devices[i].busy = rp_sat_add(g->devices[i].busy, dev[i].end - dev[i].start);
			g->devices[i].active = rp_sat_add(g->devices[i].active, dev[i].end - dev[i].sess_start);
		}
	free(dev);
	free(str);
	return 0;
}

/* The sessions' recorded time: each started session from its start to its STOPPED block (or, if
 * none came, to its last work or the trace's end), within --time-range. -1: out of memory. */
static int find_window(const struct rp_view *v, struct rp_gpu *g)
{
	const struct tr_trace *t = v->t;
	int64_t *last = malloc(((size_t)t->ngpu_sessions + 1) * sizeof(*last));
	if (!last)
		return -1;
	for (uint32_t s = 0; s < t->ngpu_sessions; s++)
		last[s] = INT64_MIN;
	for (uint32_t i = 0; i < t->ngpu_work; i++)
		if (t->gpu_work[i].end_ns > last[t->gpu_work[i].session])
			last[t->gpu_work[i].session] = t->gpu_work[i].end_ns;
	for (uint32_t s = 0; s < t->ngpu_sessions; s++) {
		const struct tr_gpu_session *ss = &t->gpu_sessions[s];
		if (ss->status != CUHOOK_GPU_STARTED)
			continue;
		int64_t a = ss->start_ns, b = ss->stop_ns;
		if (!ss->stopped) {
			b = v->t1 > a ? v->t1 : a;
			if (last[s] > b)
				b = last[s];
		}
		if (v->o->has_range) {
			/* on the range's axis: lo >= range start >= 0 and hi <= range end < 9e18 */
			a = rp_rel(v, a) < v->o->range_start_ns ? v->o->range_start_ns : rp_rel(v, a);
			b = rp_rel(v, b) > v->o->range_end_ns ? v->o->range_end_ns : rp_rel(v, b);
		}
		if (b > a)
			g->window = rp_sat_add(g->window, b - a);
	}
	free(last);
	return 0;
}

/* ---- what the host was doing in the gaps ------------------------------------------------------ */

/* A function's first call is first-call initialisation (lazy module loading in a first launch, a
 * pool's first allocation) when it lasts >= FIRST_CALL_FACTOR times the median of the
 * function's calls and >= FIRST_CALL_MIN_NS. */
#define FIRST_CALL_FACTOR 10
#define FIRST_CALL_MIN_NS 100000

/* What a call in progress says about the host (rp_host_state): per function, and the first calls
 * that were one-off initialisation. */
struct host_states {
	int8_t *func;      /* per function id: its state; -1 for what is no API call (libc's ioctl) */
	uint32_t *init;    /* per function id: its first call when that was initialisation, else TR_NONE */
};

static int outer_timed(const struct tr_call *c)
{
	return c->parent == TR_NONE && tr_call_timed(c) && c->end_ns > c->start_ns;
}

static int call_state(const struct host_states *h, const struct tr_trace *t, uint32_t ci)
{
	uint32_t f = t->calls[ci].func;
	return h->init[f] == ci ? RP_HOST_LOADING : h->func[f];
}

static int func_states(const struct rp_view *v, struct host_states *h)
{
	const struct tr_trace *t = v->t;
	h->func = malloc((size_t)t->nfuncs + 1);
	if (!h->func)
		return -1;
	for (uint32_t i = 0; i < t->nfuncs; i++) {
		const struct rp_finfo *fi = &v->fi[i];
		char base[128];
		/* an id no FUNCS block defined has no call: no name work for it (a hostile FUNCS block
		 * can make 2^20 of them, docs/fuzzing.md) */
		if (!t->funcs[i].defined) {
			h->func[i] = RP_HOST_DRIVER;
			continue;
		}
		rp_base_name(tr_func_name(t, i), base, sizeof(base));
		if (fi->ioctl)
			h->func[i] = -1;
		else if (fi->cat == RP_CAT_MODULE || fi->cat == RP_CAT_INIT || !strcmp(base, "cuCtxCreate") ||
		         !strcmp(base, "cuDevicePrimaryCtxRetain"))
			h->func[i] = RP_HOST_LOADING;
		else if (fi->cat == RP_CAT_SYNC)
			h->func[i] = RP_HOST_SYNC;
		else
			h->func[i] = RP_HOST_DRIVER;
	}
	return 0;
}

/* h->init: each function's first outermost call, kept when it was initialisation. */
static int first_calls(const struct tr_trace *t, struct host_states *h)
{
	uint32_t nf = t->nfuncs;
	uint32_t *n = calloc((size_t)nf + 1, sizeof(*n)), *off = malloc(((size_t)nf + 1) * sizeof(*off));
	int64_t *d = NULL;
	h->init = malloc(((size_t)nf + 1) * sizeof(*h->init));
	if (!n || !off || !h->init)
		goto out;
	for (uint32_t f = 0; f < nf; f++)
		h->init[f] = TR_NONE;
	for (uint32_t ci = 0; ci < t->ncalls; ci++) {
		const struct tr_call *c = &t->calls[ci];
		uint32_t f = c->func;
		if (!outer_timed(c) || h->func[f] < 0)
			continue;
		n[f]++;
		if (h->init[f] == TR_NONE || c->start_ns < t->calls[h->init[f]].start_ns)
			h->init[f] = ci;
	}
	/* the medians of the functions whose first call is long enough to be one */
	uint32_t total = 0;
	for (uint32_t f = 0; f < nf; f++) {
		if (h->init[f] == TR_NONE || n[f] < 2 || tr_call_dur(&t->calls[h->init[f]]) < FIRST_CALL_MIN_NS) {
			h->init[f] = TR_NONE;
			continue;
		}
		off[f] = total;
		total += n[f];
		n[f] = 0;
	}
	if (!(d = malloc(((size_t)total + 1) * sizeof(*d))))
		goto out;
	for (uint32_t ci = 0; ci < t->ncalls; ci++) {
		const struct tr_call *c = &t->calls[ci];
		if (outer_timed(c) && h->func[c->func] >= 0 && h->init[c->func] != TR_NONE)
			d[off[c->func] + n[c->func]++] = tr_call_dur(c);
	}
	for (uint32_t f = 0; f < nf; f++) {
		if (h->init[f] == TR_NONE)
			continue;
		int64_t lo, hi;
		rp_middle(d + off[f], n[f], &lo, &hi);
		if ((double)tr_call_dur(&t->calls[h->init[f]]) < FIRST_CALL_FACTOR * ((double)lo + (double)hi) / 2)
			h->init[f] = TR_NONE;
	}
	free(n);
	free(off);
	free(d);
	return 0;
out:
	free(n);
	free(off);
	free(d);
	return -1;
}

struct seg {
	int64_t start, end;
	int state;
};

struct edge {
	int64_t at;
	int state, delta;
};

static int cmp_edge(const void *pa, const void *pb)
{
	const struct edge *a = pa, *b = pb;
	return (a->at > b->at) - (a->at < b->at);
}

static int cmp_interval(const void *pa, const void *pb)
{
	const int64_t *a = pa, *b = pb;
	return (a[0] > b[0]) - (a[0] < b[0]);
}

/* Length of [a, b) within the sorted, disjoint intervals u[n][2]. */
static int64_t overlap_union(const int64_t (*u)[2], uint32_t n, int64_t a, int64_t b)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (u[mid][1] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	int64_t sum = 0;
	for (uint32_t i = lo; i < n && u[i][0] < b; i++) {
		int64_t s = u[i][0] > a ? u[i][0] : a, e = u[i][1] < b ? u[i][1] : b;
		if (e > s)
			sum += e - s;
	}
	return sum;
}

static int64_t overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
	int64_t s = a0 > b0 ? a0 : b0, e = a1 < b1 ? a1 : b1;
	return e > s ? e - s : 0;
}

/* The calls in progress during the gaps (outermost API calls of every thread) as segments of
 * one state each, the highest-priority state of the calls in progress. */
static int host_segments(const struct rp_view *v, const struct host_states *h, const int64_t (*u)[2], uint32_t nu,
                         uint32_t **cands, uint32_t *ncands, struct seg **segs, uint32_t *nsegs)
{
	const struct tr_trace *t = v->t;
	*segs = NULL;
	*nsegs = 0;
	*ncands = 0;
	*cands = malloc(((size_t)t->ncalls + 1) * sizeof(**cands));
	if (!*cands)
		return -1;
	for (uint32_t i = 0; i < t->ncalls; i++) {
		const struct tr_call *c = &t->calls[i];
		if (outer_timed(c) && h->func[c->func] >= 0 && overlap_union(u, nu, c->start_ns, c->end_ns))
			(*cands)[(*ncands)++] = i;
	}
	struct edge *e = malloc(((size_t)*ncands * 2 + 1) * sizeof(*e));
	*segs = malloc(((size_t)*ncands * 2 + 1) * sizeof(**segs));
	if (!e || !*segs) {
		free(e);
		return -1;
	}
	for (uint32_t i = 0; i < *ncands; i++) {
		const struct tr_call *c = &t->calls[(*cands)[i]];
		int state = call_state(h, t, (*cands)[i]);
		e[2 * i] = (struct edge){c->start_ns, state, 1};
		e[2 * i + 1] = (struct edge){c->end_ns, state, -1};
	}
	uint32_t ne = *ncands * 2;
	qsort(e, ne, sizeof(*e), cmp_edge);
	int64_t active[RP_HOST_COUNT] = {0};
	for (uint32_t i = 0; i < ne;) {
		int64_t at = e[i].at;
		for (; i < ne && e[i].at == at; i++)
			active[e[i].state] += e[i].delta;
		if (i == ne)
			break;
		int state = RP_HOST_OUTSIDE;
		for (int s = 0; s < RP_HOST_OUTSIDE && state == RP_HOST_OUTSIDE; s++)
			if (active[s] > 0)
				state = s;
		if (state == RP_HOST_OUTSIDE)
			continue;
		if (*nsegs && (*segs)[*nsegs - 1].state == state && (*segs)[*nsegs - 1].end == at)
			(*segs)[*nsegs - 1].end = e[i].at;
		else
			(*segs)[(*nsegs)++] = (struct seg){at, e[i].at, state};
	}
	free(e);
	return 0;
}

/* Each gap's time by host state, from the segments (sorted, disjoint). */
static void gap_states(struct gap *gp, const struct seg *segs, uint32_t nsegs)
{
	uint32_t lo = 0, hi = nsegs;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (segs[mid].end <= gp->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	int64_t covered = 0;
	for (uint32_t i = lo; i < nsegs && segs[i].start < gp->end; i++) {
		int64_t o = overlap(segs[i].start, segs[i].end, gp->start, gp->end);
		gp->host[segs[i].state] += o;
		covered += o;
	}
	gp->host[RP_HOST_OUTSIDE] = gp->end - gp->start - covered;
}

static int cmp_gap(const void *pa, const void *pb)
{
	const struct gap *a = pa, *b = pb;
	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	return (a->start > b->start) - (a->start < b->start);
}

static int gap_longer(const struct gap *a, const struct gap *b)
{
	int64_t la = a->end - a->start, lb = b->end - b->start;
	return la != lb ? la > lb : a->start < b->start;
}

static void set_gap(const struct rp_gpu *g, struct rp_gpu_gap *out, const struct gap *gp)
{
	out->device = g->devices[gp->device].device;
	out->start = gp->start;
	out->end = gp->end;
	out->before = gp->before;
	out->after = gp->after;
	memcpy(out->host, gp->host, sizeof(out->host));
	for (int s = 0; s < RP_HOST_COUNT; s++)
		out->call[s] = TR_NONE;
}

static int analyse_gaps(const struct rp_view *v, struct rp_gpu *g, struct gap *gaps, uint32_t ngaps)
{
	const struct tr_trace *t = v->t;
	for (int s = 0; s < RP_HOST_COUNT; s++)
		g->host_calls[s] = g->host_bound.call[s] = TR_NONE;
	if (!ngaps)
		return 0;
	int64_t(*u)[2] = malloc((size_t)ngaps * sizeof(*u));
	int64_t *len = malloc((size_t)ngaps * sizeof(*len));
	struct host_states h = {NULL, NULL};
	uint32_t *cands = NULL, ncands = 0, nu = 0, nsegs = 0;
	struct seg *segs = NULL;
	int rc = -1;
	if (!u || !len || func_states(v, &h) || first_calls(t, &h))
		goto out;
	qsort(gaps, ngaps, sizeof(*gaps), cmp_gap);
	for (uint32_t i = 0; i < ngaps; i++) {
		u[i][0] = gaps[i].start;
		u[i][1] = gaps[i].end;
	}
	qsort(u, ngaps, sizeof(*u), cmp_interval);
	for (uint32_t i = 0; i < ngaps; i++) {
		if (nu && u[i][0] <= u[nu - 1][1]) {
			if (u[i][1] > u[nu - 1][1])
				u[nu - 1][1] = u[i][1];
		} else {
			u[nu][0] = u[i][0];
			u[nu++][1] = u[i][1];
		}
	}
	if (host_segments(v, &h, (const int64_t(*)[2])u, nu, &cands, &ncands, &segs, &nsegs))
		goto out;
	for (uint32_t i = 0; i < ngaps; i++) {
		struct gap *gp = &gaps[i];
		struct rp_gpu_device *d = &g->devices[gp->device];
		gap_states(gp, segs, nsegs);
		len[i] = gp->end - gp->start;
		d->ngaps++;
		d->gap_total = rp_sat_add(d->gap_total, len[i]);
		if (len[i] > d->gap_max)
			d->gap_max = len[i];
		for (int s = 0; s < RP_HOST_COUNT; s++) {
			d->gap_host[s] = rp_sat_add(d->gap_host[s], gp->host[s]);
			g->gap_host[s] = rp_sat_add(g->gap_host[s], gp->host[s]);
		}
		int64_t hb = gp->host[RP_HOST_DRIVER] + gp->host[RP_HOST_OUTSIDE];
		if (hb > g->host_bound.host[RP_HOST_DRIVER] + g->host_bound.host[RP_HOST_OUTSIDE])
			set_gap(g, &g->host_bound, gp);
		/* the longest few, longest first (ties: the earlier first) */
		if (g->ntop < RP_GPU_TOP_GAPS || gap_longer(gp, &gaps[g->top[g->ntop - 1].before])) {
			uint32_t k = g->ntop < RP_GPU_TOP_GAPS ? g->ntop++ : RP_GPU_TOP_GAPS - 1;
			for (; k > 0 && gap_longer(gp, &gaps[g->top[k - 1].before]); k--)
				g->top[k] = g->top[k - 1];
			g->top[k].before = i; /* the gap's index for now: filled in below */
		}
	}
	/* per device: the median gap (gaps are sorted by device) */
	for (uint32_t i = 0; i < ngaps;) {
		uint32_t di = gaps[i].device, n = 0;
		for (; i < ngaps && gaps[i].device == di; i++)
			len[n++] = gaps[i].end - gaps[i].start;
		int64_t lo, hi;
		rp_middle(len, n, &lo, &hi);
		g->devices[di].gap_median = lo + (hi - lo) / 2;
	}
	for (uint32_t i = 0; i < ngaps; i++)
		len[i] = gaps[i].end - gaps[i].start;
	struct rp_dist all;
	rp_dist_of(&all, len, ngaps);
	g->ngaps = ngaps;
	g->gap_total = all.total;
	g->gap_max = all.max;
	g->gap_median = (int64_t)all.med;
	for (uint32_t k = 0; k < g->ntop; k++)
		set_gap(g, &g->top[k], &gaps[g->top[k].before]);
	/* the longest call in progress per state: in each top gap, the most host-bound one, and in all gaps */
	int64_t best_all[RP_HOST_COUNT] = {0}, best_top[RP_GPU_TOP_GAPS + 1][RP_HOST_COUNT];
	struct rp_gpu_gap *in[RP_GPU_TOP_GAPS + 1];
	uint32_t nin = 0;
	memset(best_top, 0, sizeof(best_top));
	for (uint32_t k = 0; k < g->ntop; k++)
		in[nin++] = &g->top[k];
	if (g->host_bound.end > g->host_bound.start)
		in[nin++] = &g->host_bound;
	for (uint32_t i = 0; i < ncands; i++) {
		const struct tr_call *c = &t->calls[cands[i]];
		int s = call_state(&h, t, cands[i]);
		int64_t o = overlap_union((const int64_t(*)[2])u, nu, c->start_ns, c->end_ns);
		if (o > best_all[s]) {
			best_all[s] = o;
			g->host_calls[s] = cands[i];
		}
		for (uint32_t k = 0; k < nin; k++) {
			o = overlap(c->start_ns, c->end_ns, in[k]->start, in[k]->end);
			if (o > best_top[k][s]) {
				best_top[k][s] = o;
				in[k]->call[s] = cands[i];
			}
		}
	}
	rc = 0;
out:
	free(u);
	free(len);
	free(h.func);
	free(h.init);
	free(cands);
	free(segs);
	return rc;
}

/* ---- launch latency ---------------------------------------------------------------------------- */

static void latency(const struct rp_view *v, struct rp_gpu *g, int64_t *d)
{
	const struct tr_trace *t = v->t;
	struct rp_gpu_latency *l = &g->latency;
	uint32_t n = 0;
	for (uint32_t i = 0; i < g->nsel; i++) {
		const struct tr_gpu_work *w = &t->gpu_work[g->sel[i]];
		if (w->api == TR_NONE)
			continue;
		int64_t x = w->start_ns - t->gpu_api[w->api].start_ns;
		if (x < 0) {
			l->negative++;
			x = 0;
		}
		unsigned b = 0;
		while (b < RP_LAT_BUCKETS - 1 && x >= rp_lat_bounds[b])
			b++;
		l->hist[b]++;
		d[n++] = x;
	}
	l->n = n;
	if (!n)
		return;
	rp_dist_of(&l->d, d, n);
	/* nearest rank: the ceil(q n)-th smallest */
	l->p90 = rp_kth(d, n, (n * 90 + 99) / 100 - 1);
	l->p99 = rp_kth(d, n, (n * 99 + 99) / 100 - 1);
}

/* ---- flows ------------------------------------------------------------------------------------- */

static int by_call(const void *pa, const void *pb, void *ctx)
{
	const struct tr_gpu_work *w = ctx;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	if (w[a].call != w[b].call)
		return w[a].call < w[b].call ? -1 : 1;
	return by_start(pa, pb, ctx);
}

static int find_flows(const struct rp_view *v, struct rp_gpu *g)
{
	const struct tr_trace *t = v->t;
	uint8_t *csel = calloc((size_t)t->ncalls + 1, 1);
	g->flows = malloc(((size_t)g->nsel + 1) * sizeof(*g->flows));
	if (!csel || !g->flows) {
		free(csel);
		return -1;
	}
	for (uint32_t i = 0; i < v->nxsel; i++)
		csel[v->xsel[i]] = 1;
	for (uint32_t i = 0; i < g->nsel; i++) {
		const struct tr_gpu_work *w = &t->gpu_work[g->sel[i]];
		if (w->call != TR_NONE && csel[w->call])
			g->flows[g->nflows++] = g->sel[i];
	}
	free(csel);
	qsort_r(g->flows, g->nflows, sizeof(*g->flows), by_call, t->gpu_work);
	return 0;
}

const uint32_t *rp_gpu_call_flows(const struct rp_view *v, uint32_t ci, uint32_t *n)
{
	const struct rp_gpu *g = v->gpu;
	*n = 0;
	if (!g || !g->nflows)
		return NULL;
	const struct tr_gpu_work *w = v->t->gpu_work;
	uint32_t lo = 0, hi = g->nflows;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (w[g->flows[mid]].call < ci)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint32_t e = lo;
	while (e < g->nflows && w[g->flows[e]].call == ci)
		e++;
	*n = e - lo;
	return *n ? &g->flows[lo] : NULL;
}

static int by_lane(const void *pa, const void *pb, void *ctx)
{
	const struct rp_view *v = ctx;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	const struct tr_gpu_work *x = &v->t->gpu_work[a], *y = &v->t->gpu_work[b];
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	if (v->gpu->lane[a] != v->gpu->lane[b])
		return v->gpu->lane[a] < v->gpu->lane[b] ? -1 : 1;
	return by_start(pa, pb, v->t->gpu_work);
}

struct rp_gpu_slice *rp_gpu_slices(const struct rp_view *v)
{
	const struct rp_gpu *g = v->gpu;
	const struct tr_gpu_work *work = v->t->gpu_work;
	uint32_t *idx = malloc(((size_t)g->nsel + 1) * sizeof(*idx));
	struct rp_gpu_slice *out = malloc(((size_t)g->nsel + 1) * sizeof(*out));
	uint8_t *flow = calloc((size_t)v->t->ngpu_work + 1, 1);
	if (!idx || !out || !flow) {
		free(idx);
		free(out);
		free(flow);
		return NULL;
	}
	for (uint32_t i = 0; i < g->nflows; i++)
		flow[g->flows[i]] = 1;
	memcpy(idx, g->sel, (size_t)g->nsel * sizeof(*idx));
	qsort_r(idx, g->nsel, sizeof(*idx), by_lane, (void *)v);
	int64_t lane_end = 0;
	for (uint32_t i = 0, si = 0; i < g->nsel; i++) {
		const struct tr_gpu_work *w = &work[idx[i]], *p = i ? &work[idx[i - 1]] : NULL;
		struct rp_gpu_slice *s = &out[i];
		s->work = idx[i];
		s->flow = flow[idx[i]];
		s->lane = g->lane[idx[i]];
		s->new_track = !p || p->device != w->device || p->stream != w->stream || g->lane[idx[i - 1]] != s->lane;
		if (s->new_track) {
			while (g->streams[si].device != w->device || g->streams[si].stream != w->stream)
				si++;
			lane_end = INT64_MIN;
		}
		s->stream_index = si;
		s->start = rp_rel(v, w->start_ns);
		s->end = rp_rel(v, w->end_ns);
		if (s->start < lane_end)
			s->start = lane_end;
		if (s->end < s->start)
			s->end = s->start;
		lane_end = s->end;
	}
	free(idx);
	free(flow);
	return out;
}

/* ---- all of it ---------------------------------------------------------------------------------- */

int rp_gpu_analyze(struct rp_view *v, struct rp_gpu **out)
{
	const struct tr_trace *t = v->t;
	*out = NULL;
	if (!t->ngpu_sessions && !t->ngpu_work && !t->ngpu_api)
		return 0;
	struct rp_gpu *g = calloc(1, sizeof(*g));
	int64_t *d = NULL, *size = NULL;
	struct gap *gaps = NULL;
	uint32_t ngaps = 0;
	if (!g)
		return -1;
	g->nnames = t->ngpu_names;
	g->names = calloc((size_t)g->nnames + 1, sizeof(*g->names));
	if (!g->names || select_work(v, g))
		goto oom;
	d = malloc(((size_t)g->nsel + 1) * sizeof(*d));
	size = malloc(((size_t)g->nsel + 1) * sizeof(*size));
	if (!d || !size || kernel_rows(v, g, d) || memop_rows(v, g, d, size) || find_tracks(v, g) ||
	    assign_lanes(v, g) || busy_and_gaps(v, g, &gaps, &ngaps) || analyse_gaps(v, g, gaps, ngaps) ||
	    find_flows(v, g) || find_window(v, g))
		goto oom;
	latency(v, g, d);
	free(d);
	free(size);
	free(gaps);
	*out = g;
	return 0;
oom:
	free(d);
	free(size);
	free(gaps);
	rp_gpu_free(g);
	return -1;
}

void rp_gpu_free(struct rp_gpu *g)
{
	if (!g)
		return;
	for (uint32_t i = 0; i < g->nnames; i++)
		free(g->names[i]);
	free(g->names);
	free(g->sel);
	free(g->lane);
	free(g->kernels);
	free(g->memops);
	free(g->devices);
	free(g->streams);
	free(g->flows);
	free(g);
}
