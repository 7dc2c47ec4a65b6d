/* --format perfetto: the native Perfetto trace (protobuf), for ui.perfetto.dev and
 * trace_processor, encoded by hand (no protobuf library): a Trace is a sequence of
 *   TracePacket (Trace.packet = 1)
 * and the packets used here are
 *   track_descriptor (60): uuid (1), name (2), process (3: pid 1, process_name 6),
 *                          thread (4: pid 1, tid 2, thread_name 5), parent_uuid (5),
 *                          counter (8: an empty CounterDescriptor makes a counter track)
 *   track_event (11): type (9: 1 slice begin, 2 slice end, 3 instant, 4 counter),
 *                     track_uuid (11), categories (22), name (23), debug_annotations (4:
 *                     name 10, string_value 6, uint_value 3, int_value 4), counter_value (30),
 *                     flow_ids (47, fixed64), terminating_flow_ids (48, fixed64)
 *   with timestamp (8, ns) and trusted_packet_sequence_id (10).
 * Field numbers are those of perfetto/protos/perfetto/trace/. Each thread's calls become
 * properly nested begin/end slices on the thread's track; a call without an EXIT is an instant.
 * Counted calls (agent option count=) become a counter track per thread and function, under the
 * thread's track: the thread's running total of the function's calls, from 0 at the start.
 * GPU records (agent option gpu=1) go on a track per device, under the process's track, with a
 * track per stream lane under it (gpu_analysis.c: overlapping work of one stream goes on further
 * lanes); a flow goes from each call's slice (flow_ids) to each piece of work it submitted
 * (terminating_flow_ids). */
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pb {
	uint8_t *p;
	size_t len, cap;
	int oom;
};

static void pb_raw(struct pb *b, const void *src, size_t n)
{
	if (b->oom || !n)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *p = realloc(b->p, cap);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

static void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;
	do {
		tmp[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	pb_raw(b, tmp, n);
}

static void pb_uint(struct pb *b, unsigned field, uint64_t v)
{
	pb_varint(b, (uint64_t)field << 3 | 0);
	pb_varint(b, v);
}

static void pb_fixed64(struct pb *b, unsigned field, uint64_t v)
{
	uint8_t le[8];
	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	pb_varint(b, (uint64_t)field << 3 | 1);
	pb_raw(b, le, sizeof(le));
}

static void pb_bytes(struct pb *b, unsigned field, const void *s, size_t n)
{
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, n);
	pb_raw(b, s, n);
}

static void pb_str(struct pb *b, unsigned field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

static void pb_msg(struct pb *b, unsigned field, const struct pb *m)
{
	if (m->oom)
		b->oom = 1;
	pb_bytes(b, field, m->p, m->len);
}

enum {
	TRACE_PACKET = 1,
	PKT_TIMESTAMP = 8,
	PKT_SEQ_ID = 10,
	PKT_TRACK_EVENT = 11,
	PKT_TRACK_DESCRIPTOR = 60,
	TD_UUID = 1,
	TD_NAME = 2,
	TD_PROCESS = 3,
	TD_THREAD = 4,
	TD_PARENT = 5,
	TD_COUNTER = 8,
	PD_PID = 1,
	PD_NAME = 6,
	THD_PID = 1,
	THD_TID = 2,
	THD_NAME = 5,
	TE_ANNOT = 4,
	TE_TYPE = 9,
	TE_TRACK = 11,
	TE_CATEGORY = 22,
	TE_NAME = 23,
	TE_COUNTER_VALUE = 30,
	TE_FLOW_IDS = 47,
	TE_TERMINATING_FLOW_IDS = 48,
	DA_UINT = 3,
	DA_INT = 4,
	DA_STRING = 6,
	DA_NAME = 10,
	SLICE_BEGIN = 1,
	SLICE_END = 2,
	INSTANT = 3,
	COUNTER = 4,
};

#define SEQ_ID 1

/* Writes one TracePacket holding `field` = m, with a timestamp when ts >= 0. */
static void emit(FILE *f, struct pb *pkt, int64_t ts, unsigned field, const struct pb *m)
{
	pkt->len = 0;
	if (ts >= 0)
		pb_uint(pkt, PKT_TIMESTAMP, (uint64_t)ts);
	pb_uint(pkt, PKT_SEQ_ID, SEQ_ID);
	pb_msg(pkt, field, m);
	struct pb hdr = {0};
	pb_varint(&hdr, TRACE_PACKET << 3 | 2);
	pb_varint(&hdr, pkt->len);
	if (!hdr.oom && !pkt->oom) {
		fwrite(hdr.p, 1, hdr.len, f);
		fwrite(pkt->p, 1, pkt->len, f);
	}
	free(hdr.p);
}

struct writer {
	FILE *f;
	struct pb pkt, ev, sub;
	char buf[1024];
};

static uint64_t process_uuid(unsigned k, uint32_t pid)
{
	return 0x1000000000000000ull | (uint64_t)k << 33 | pid;
}

static uint64_t thread_uuid(unsigned k, uint32_t tid)
{
	return 0x2000000000000000ull | (uint64_t)k << 33 | tid;
}

static void event(struct writer *w, const struct rp_view *v, unsigned k, const struct tr_call *c, int type,
                  int64_t ts)
{
	const struct tr_trace *t = v->t;
	struct pb *ev = &w->ev;
	ev->len = 0;
	pb_uint(ev, TE_TYPE, (uint64_t)type);
	pb_uint(ev, TE_TRACK, thread_uuid(k, t->threads[c->thread].tid));
	if (type != SLICE_END) {
		pb_str(ev, TE_CATEGORY, rp_call_category(v, c->func));
		pb_str(ev, TE_NAME, tr_func_name(t, c->func));
		size_t l = rp_describe_call(v, c, w->buf, sizeof(w->buf));
		if (l) {
			w->sub.len = 0;
			pb_str(&w->sub, DA_NAME, "details");
			pb_bytes(&w->sub, DA_STRING, w->buf, l);
			pb_msg(ev, TE_ANNOT, &w->sub);
		}
		l = tr_call_format_data(t, c, w->buf, sizeof(w->buf));
		if (l) {
			w->sub.len = 0;
			pb_str(&w->sub, DA_NAME, "decoded");
			pb_bytes(&w->sub, DA_STRING, w->buf, l);
			pb_msg(ev, TE_ANNOT, &w->sub);
		}
		if (tr_call_timed(c)) {
			w->sub.len = 0;
			pb_str(&w->sub, DA_NAME, "ret");
			pb_uint(&w->sub, DA_UINT, c->ret);
			pb_msg(ev, TE_ANNOT, &w->sub);
		}
		/* flows to the GPU work it submitted */
		uint32_t nfl;
		const uint32_t *fl = rp_gpu_call_flows(v, (uint32_t)(c - t->calls), &nfl);
		for (uint32_t i = 0; i < nfl; i++)
			pb_fixed64(ev, TE_FLOW_IDS, rp_gpu_flow_id(k, fl[i]));
	}
	emit(w->f, &w->pkt, ts < 0 ? 0 : ts, PKT_TRACK_EVENT, ev);
}

static void descriptors(struct writer *w, const struct rp_view *v, unsigned k)
{
	const struct tr_trace *t = v->t;
	const char *pname = t->argc && t->argv[0][0] ? t->argv[0] : t->exe;
	struct pb *d = &w->ev, *p = &w->sub;
	d->len = p->len = 0;
	pb_uint(p, PD_PID, t->pid);
	pb_str(p, PD_NAME, pname);
	pb_uint(d, TD_UUID, process_uuid(k, t->pid));
	pb_msg(d, TD_PROCESS, p);
	emit(w->f, &w->pkt, -1, PKT_TRACK_DESCRIPTOR, d);
	for (uint32_t i = 0; i < t->nthreads; i++) {
		const struct tr_thread *th = &t->threads[i];
		d->len = p->len = 0;
		pb_uint(p, THD_PID, t->pid);
		pb_uint(p, THD_TID, th->tid);
		if (th->name[0])
			pb_str(p, THD_NAME, th->name);
		pb_uint(d, TD_UUID, thread_uuid(k, th->tid));
		pb_uint(d, TD_PARENT, process_uuid(k, t->pid));
		pb_msg(d, TD_THREAD, p);
		emit(w->f, &w->pkt, -1, PKT_TRACK_DESCRIPTOR, d);
	}
}

/* One thread's selected calls (in start order) as nested slices: before a call begins, the open
 * calls that ended by then are closed, innermost first. */
static int thread_slices(struct writer *w, struct rp_view *v, unsigned k, uint32_t thread, const uint8_t *selected)
{
	struct tr_trace *t = v->t;
	uint32_t n;
	const uint32_t *calls = tr_thread_calls(t, thread, &n);
	uint32_t *open = malloc(((size_t)n + 1) * sizeof(*open)), nopen = 0;
	if (!open)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		const struct tr_call *c = &t->calls[calls[i]];
		if (!selected[calls[i]])
			continue;
		while (nopen && t->calls[open[nopen - 1]].end_ns <= c->start_ns) {
			const struct tr_call *o = &t->calls[open[--nopen]];
			event(w, v, k, o, SLICE_END, rp_rel(v, o->end_ns));
		}
		if (!tr_call_timed(c)) {
			event(w, v, k, c, INSTANT, rp_rel(v, c->start_ns));
			continue;
		}
		/* a child that outlives its parent (corrupt times) would break the nesting: close the
		 * open calls that end before it does */
		while (nopen && t->calls[open[nopen - 1]].end_ns < c->end_ns) {
			const struct tr_call *o = &t->calls[open[--nopen]];
			event(w, v, k, o, SLICE_END, rp_rel(v, c->start_ns));
		}
		event(w, v, k, c, SLICE_BEGIN, rp_rel(v, c->start_ns));
		open[nopen++] = calls[i];
	}
	while (nopen) {
		const struct tr_call *o = &t->calls[open[--nopen]];
		event(w, v, k, o, SLICE_END, rp_rel(v, o->end_ns));
	}
	free(open);
	return 0;
}

static uint64_t counter_uuid(unsigned k, uint32_t thread, uint32_t func)
{
	return 0x3000000000000000ull | (uint64_t)(k & 0xff) << 48 | (uint64_t)(thread & 0xffffff) << 24 |
	       (func & 0xffffff);
}

static void counter_value(struct writer *w, uint64_t track, int64_t ts, uint64_t value)
{
	struct pb *ev = &w->ev;
	ev->len = 0;
	pb_uint(ev, TE_TYPE, COUNTER);
	pb_uint(ev, TE_TRACK, track);
	pb_uint(ev, TE_COUNTER_VALUE, value > INT64_MAX ? INT64_MAX : value);
	emit(w->f, &w->pkt, ts < 0 ? 0 : ts, PKT_TRACK_EVENT, ev);
}

static int by_track(const void *a, const void *b, void *ctx)
{
	const struct tr_count *x = &((const struct tr_trace *)ctx)->counts[*(const uint32_t *)a];
	const struct tr_count *y = &((const struct tr_trace *)ctx)->counts[*(const uint32_t *)b];
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->func != y->func)
		return x->func < y->func ? -1 : 1;
	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* The counted calls the options select, a counter track per (thread, function): its running
 * total at each time the agent's writer read the counters (every COUNTS entry). */
static int counter_tracks(struct writer *w, struct rp_view *v, unsigned k)
{
	const struct tr_trace *t = v->t;
	if (!v->counted || !t->ncounts)
		return 0;
	uint32_t *idx = malloc((size_t)t->ncounts * sizeof(*idx)), n = 0;
	if (!idx)
		return -1;
	for (uint32_t i = 0; i < t->ncounts; i++)
		if (t->counts[i].calls && v->counted[t->counts[i].func] && rp_count_in_view(v, &t->counts[i]))
			idx[n++] = i;
	qsort_r(idx, n, sizeof(*idx), by_track, (void *)t);
	int64_t start = v->o->has_range ? v->o->range_start_ns : rp_rel(v, v->t0);
	struct pb empty = {0};
	for (uint32_t i = 0; i < n;) {
		const struct tr_count *c = &t->counts[idx[i]];
		uint64_t track = counter_uuid(k, c->thread, c->func);
		struct pb *d = &w->ev;
		d->len = 0;
		snprintf(w->buf, sizeof(w->buf), "%s (counted)", tr_func_name(t, c->func));
		pb_uint(d, TD_UUID, track);
		pb_str(d, TD_NAME, w->buf);
		pb_uint(d, TD_PARENT, thread_uuid(k, t->threads[c->thread].tid));
		pb_msg(d, TD_COUNTER, &empty);
		emit(w->f, &w->pkt, -1, PKT_TRACK_DESCRIPTOR, d);
		counter_value(w, track, start, 0);
		uint64_t sum = 0;
		for (; i < n && t->counts[idx[i]].thread == c->thread && t->counts[idx[i]].func == c->func; i++) {
			sum = tr_sat_add_u64(sum, t->counts[idx[i]].calls);
			counter_value(w, track, rp_rel(v, t->counts[idx[i]].ns), sum);
		}
	}
	free(idx);
	return 0;
}


/* ---- GPU tracks -------------------------------------------------------------------------------- */

static uint64_t device_uuid(unsigned k, uint32_t device)
{
	return 0x4000000000000000ull | (uint64_t)(k & 0xffffff) << 32 | device;
}

static uint64_t lane_uuid(unsigned k, uint32_t stream_index, uint32_t lane)
{
	return 0x5000000000000000ull | (uint64_t)(k & 0xff) << 48 | (uint64_t)(stream_index & 0xffffffff) << 8 |
	       (lane & 0xff);
}

static void annot_str(struct writer *w, const char *name, const char *s, size_t n)
{
	w->sub.len = 0;
	pb_str(&w->sub, DA_NAME, name);
	pb_bytes(&w->sub, DA_STRING, s, n);
	pb_msg(&w->ev, TE_ANNOT, &w->sub);
}

static void annot_uint(struct writer *w, const char *name, uint64_t value)
{
	w->sub.len = 0;
	pb_str(&w->sub, DA_NAME, name);
	pb_uint(&w->sub, DA_UINT, value);
	pb_msg(&w->ev, TE_ANNOT, &w->sub);
}

static void gpu_slice(struct writer *w, const struct rp_view *v, unsigned k, uint64_t track, uint32_t wi, int64_t start,
                      int64_t end, int flow)
{
	const struct tr_trace *t = v->t;
	const struct tr_gpu_work *g = &t->gpu_work[wi];
	struct pb *ev = &w->ev;
	ev->len = 0;
	pb_uint(ev, TE_TYPE, SLICE_BEGIN);
	pb_uint(ev, TE_TRACK, track);
	pb_str(ev, TE_CATEGORY, rp_gpu_kind_names[g->kind]);
	pb_str(ev, TE_NAME, rp_gpu_work_label(v, g));
	size_t l = rp_gpu_describe(v, g, w->buf, sizeof(w->buf));
	annot_str(w, "details", w->buf, l);
	annot_uint(w, "correlation", g->correlation);
	annot_str(w, "link", rp_gpu_link_keys[g->link], strlen(rp_gpu_link_keys[g->link]));
	if (g->api != TR_NONE) {
		w->sub.len = 0;
		pb_str(&w->sub, DA_NAME, "latency_ns");
		pb_uint(&w->sub, DA_INT, (uint64_t)(g->start_ns - t->gpu_api[g->api].start_ns));
		pb_msg(ev, TE_ANNOT, &w->sub);
	}
	if (flow)
		pb_fixed64(ev, TE_TERMINATING_FLOW_IDS, rp_gpu_flow_id(k, wi));
	emit(w->f, &w->pkt, start < 0 ? 0 : start, PKT_TRACK_EVENT, ev);
	ev->len = 0;
	pb_uint(ev, TE_TYPE, SLICE_END);
	pb_uint(ev, TE_TRACK, track);
	emit(w->f, &w->pkt, end < 0 ? 0 : end, PKT_TRACK_EVENT, ev);
}

static void gpu_descriptor(struct writer *w, uint64_t uuid, uint64_t parent, const char *name)
{
	struct pb *d = &w->ev;
	d->len = 0;
	pb_uint(d, TD_UUID, uuid);
	pb_str(d, TD_NAME, name);
	pb_uint(d, TD_PARENT, parent);
	emit(w->f, &w->pkt, -1, PKT_TRACK_DESCRIPTOR, d);
}

/* A track per device under the process, a track per stream lane under it, a slice per piece of
 * work; the work that ends a flow terminates it. */
static int gpu_tracks(struct writer *w, struct rp_view *v, unsigned k)
{
	const struct tr_trace *t = v->t;
	const struct rp_gpu *g = v->gpu;
	struct rp_gpu_slice *sl = rp_gpu_slices(v);
	if (!sl)
		return -1;
	for (uint32_t d = 0; d < g->ndevices; d++) {
		snprintf(w->buf, sizeof(w->buf), "GPU %u", g->devices[d].device);
		gpu_descriptor(w, device_uuid(k, g->devices[d].device), process_uuid(k, t->pid), w->buf);
	}
	for (uint32_t i = 0; i < g->nsel; i++) {
		const struct rp_gpu_slice *s = &sl[i];
		const struct tr_gpu_work *x = &t->gpu_work[s->work];
		uint64_t track = lane_uuid(k, s->stream_index, s->lane);
		if (s->new_track) {
			snprintf(w->buf, sizeof(w->buf), "stream %u%s", x->stream, s->lane ? " (overlapping)" : "");
			gpu_descriptor(w, track, device_uuid(k, x->device), w->buf);
		}
		gpu_slice(w, v, k, track, s->work, s->start, s->end, s->flow);
	}
	free(sl);
	return 0;
}

int rp_write_perfetto(FILE *f, struct rp_view *views, unsigned n)
{
	struct writer w;
	memset(&w, 0, sizeof(w));
	w.f = f;
	int rc = 0;
	for (unsigned k = 0; k < n && !rc; k++) {
		struct rp_view *v = &views[k];
		descriptors(&w, v, k);
		uint8_t *selected = calloc((size_t)v->t->ncalls + 1, 1);
		if (!selected) {
			rc = -1;
			break;
		}
		for (uint32_t i = 0; i < v->nxsel; i++)
			selected[v->xsel[i]] = 1;
		for (uint32_t th = 0; th < v->t->nthreads && !rc; th++)
			rc = thread_slices(&w, v, k, th, selected);
		free(selected);
		if (!rc)
			rc = counter_tracks(&w, v, k);
		if (!rc && v->gpu)
			rc = gpu_tracks(&w, v, k);
	}
	int oom = w.pkt.oom || w.ev.oom || w.sub.oom;
	free(w.pkt.p);
	free(w.ev.p);
	free(w.sub.p);
	return rc || oom || ferror(f) ? -1 : 0;
}
