/* Call-by-call exports: jsonl (one JSON object per call), chrome (Chrome trace event JSON, one
 * track per thread, for chrome://tracing, ui.perfetto.dev and speedscope: a call is a begin and an
 * end event, its args on the end, so that its name is all that opens a frame; counted calls are
 * counter events; "otherData" gives ts 0 in realtime; with GPU records a process per
 * device, a track per stream and a flow from each call to the GPU work it submitted; a stacked
 * call's "sf" names its stack in "stackFrames") and folded
 * (stack;stack value lines for flame graph tools). The native Perfetto protobuf is in
 * export_perfetto.c.
 *
 * With several files, times are on their common axis (rp_align: from the earliest trace start,
 * traces lined up by their realtime clocks), so processes line up; with --separate each trace
 * keeps its own axis. */
#include "export_stream.h"

#include <stdlib.h>
#include <string.h>

/* ---- jsonl ------------------------------------------------------------------------------------- */

/* {"pid":4242,"tid":1000,"thread":"main","id":5,"parent":null,"func":"cuModuleGetFunction",
 *  "category":"module","start_ns":801000,"end_ns":802000,"dur_ns":1000,"depth":0,"ret":"0x0",
 *  "args":["0x7ffc0040","0x1000",...],"decoded":"name=vecAdd;function=0xf00d","details":"..."}
 * Times from the trace start (the earliest start with several files), start_realtime_ns the start
 * in CLOCK_REALTIME ns since the epoch (null without a realtime pair); end_ns, dur_ns and ret are
 * null for a call without an EXIT; args are hex strings (6 registers, then the stack slots);
 * "device" the device the call worked on (devices.c: *dev), null when unknown or none (dev NULL:
 * the streamed export, which does not attribute devices). A trace with stacks adds "stack": the
 * call's stack id (json's "stacks"), null. */
static void jsonl_row(FILE *f, const struct rp_view *v, const struct tr_call *c, uint64_t id, uint64_t parent,
                      const struct tr_stack *st, const int *dev, char *buf, size_t len)
{
	const struct tr_trace *t = v->t;
	const struct tr_thread *th = &t->threads[c->thread];
	fprintf(f, "{\"pid\":%u,\"tid\":%u,\"thread\":", t->pid, th->tid);
	rp_json_str(f, th->name, strlen(th->name));
	fprintf(f, ",\"id\":%llu,\"parent\":", (unsigned long long)id);
	if (parent == UINT64_MAX)
		fprintf(f, "null");
	else
		fprintf(f, "%llu", (unsigned long long)parent);
	fprintf(f, ",\"func\":");
	const char *name = tr_func_name(t, c->func);
	rp_json_str(f, name, strlen(name));
	fprintf(f, ",\"category\":\"%s\",\"start_ns\":%lld,", rp_call_category(v, c->func), (long long)rp_rel(v, c->start_ns));
	int64_t rt;
	if (rp_realtime(v, c->start_ns, &rt))
		fprintf(f, "\"start_realtime_ns\":%lld,", (long long)rt);
	else
		fprintf(f, "\"start_realtime_ns\":null,");
	if (tr_call_timed(c))
		fprintf(f, "\"end_ns\":%lld,\"dur_ns\":%lld,\"depth\":%u,\"ret\":\"0x%llx\"", (long long)rp_rel(v, c->end_ns),
		        (long long)tr_call_dur(c), c->depth, (unsigned long long)c->ret);
	else
		fprintf(f, "\"end_ns\":null,\"dur_ns\":null,\"depth\":%u,\"ret\":null", c->depth);
	fprintf(f, ",\"args\":[");
	for (unsigned a = 0; a < tr_call_nargs(c); a++)
		fprintf(f, "%s\"0x%llx\"", a ? "," : "", (unsigned long long)tr_call_arg(c, a));
	fprintf(f, "],\"decoded\":");
	size_t l = tr_call_format_data(t, c, buf, len);
	rp_json_str(f, buf, l);
	fprintf(f, ",\"details\":");
	l = rp_describe_call(v, c, buf, len);
	rp_json_str(f, buf, l);
	if (dev)
		fprintf(f, ",\"device\":%d", *dev);
	else
		fprintf(f, ",\"device\":null");
	if (v->stacks) { /* the id of its stack in the json export's "stacks" */
		if (st)
			fprintf(f, ",\"stack\":%u", st->id);
		else
			fprintf(f, ",\"stack\":null");
	}
	fprintf(f, "}\n");
}

int rp_write_jsonl(FILE *f, struct rp_view *views, unsigned n)
{
	char buf[1024];
	for (unsigned k = 0; k < n; k++) {
		const struct rp_view *v = &views[k];
		const struct tr_trace *t = v->t;
		for (uint32_t i = 0; i < v->nxsel; i++) {
			uint32_t ci = v->xsel[i];
			const struct tr_call *c = &t->calls[ci];
			int dev;
			jsonl_row(f, v, c, ci, c->parent == TR_NONE ? UINT64_MAX : c->parent, tr_call_stack(t, ci),
			          rp_call_device(v, ci, &dev) ? &dev : NULL, buf, sizeof(buf));
		}
	}
	return ferror(f) ? -1 : 0;
}

/* Streamed (export_stream.h): a row per call as it finishes; id and parent are the calls'
 * ordinals, which are their indices in a whole read. */
static int jsonl_stream_call(struct rp_sx *x, const struct rp_view *v, unsigned k, const struct tr_call *c,
                             const struct tr_stream_info *info)
{
	char buf[1024];
	jsonl_row(x->f, v, c, info->ordinal, info->parent_ordinal, NULL, NULL, buf, sizeof(buf));
	return 0;
}

int rp_sx_jsonl(struct rp_sx *x)
{
	x->file_begin = rp_sx_file_nothing;
	x->call = jsonl_stream_call;
	x->file_end = rp_sx_file_nothing;
	x->finish = rp_sx_finish_file;
	x->free = rp_sx_free_nothing;
	return 0;
}

/* ---- chrome ------------------------------------------------------------------------------------ */

static void us(FILE *f, int64_t ns)
{
	/* microseconds with 3 decimals, exact for integer ns */
	uint64_t u = (uint64_t)ns;
	if (ns < 0) {
		putc('-', f);
		u = -u;
	}
	fprintf(f, "%llu.%03llu", (unsigned long long)(u / 1000), (unsigned long long)(u % 1000));
}

/* The GPU tracks of view k: a process per device (a pid no real process has) and a thread per
 * stream lane, a complete event per piece of work, and the end of the flow from the call that
 * submitted it (its start is written with the call). */
#define CHROME_FLOW "\"name\":\"submit\",\"cat\":\"gpu.flow\""

static int64_t gpu_pid(unsigned k, uint32_t device)
{
	return 0x40000000ll + ((int64_t)k << 20) + (device & 0xfffff);
}

static int64_t lane_tid(uint32_t stream, uint32_t lane)
{
	return ((int64_t)lane << 32) | stream;
}

static int chrome_gpu(FILE *f, const struct rp_view *v, unsigned k, char *buf, size_t len)
{
	const struct tr_trace *t = v->t;
	const struct rp_gpu *g = v->gpu;
	struct rp_gpu_slice *sl = rp_gpu_slices(v);
	if (!sl)
		return -1;
	for (uint32_t d = 0; d < g->ndevices; d++)
		fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%lld,\"tid\":0,\"args\":{\"name\":\"GPU %u "
		           "(pid %u)\"}}", (long long)gpu_pid(k, g->devices[d].device), g->devices[d].device, t->pid);
	for (uint32_t i = 0; i < g->nsel; i++) {
		const struct rp_gpu_slice *s = &sl[i];
		const struct tr_gpu_work *w = &t->gpu_work[s->work];
		int64_t pid = gpu_pid(k, w->device), tid = lane_tid(w->stream, s->lane), start = s->start, end = s->end;
		if (s->new_track)
			fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%lld,\"tid\":%lld,\"args\":{\"name\":"
			           "\"stream %u%s\"}}", (long long)pid, (long long)tid, w->stream, s->lane ? " (overlapping)" : "");
		const char *name = rp_gpu_work_label(v, w);
		fprintf(f, ",\n{\"name\":");
		rp_json_str(f, name, strlen(name));
		fprintf(f, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%lld,\"tid\":%lld,\"ts\":", rp_gpu_kind_names[w->kind],
		        (long long)pid, (long long)tid);
		us(f, start);
		fprintf(f, ",\"dur\":");
		us(f, end - start);
		fprintf(f, ",\"args\":{\"details\":");
		size_t l = rp_gpu_describe(v, w, buf, len);
		rp_json_str(f, buf, l);
		fprintf(f, ",\"correlation\":%u,\"link\":\"%s\"", w->correlation, rp_gpu_link_keys[w->link]);
		if (w->api != TR_NONE)
			fprintf(f, ",\"latency_ns\":%lld", (long long)(w->start_ns - t->gpu_api[w->api].start_ns));
		fprintf(f, "}}");
		if (s->flow) {
			fprintf(f, ",\n{\"ph\":\"f\",\"bp\":\"e\",\"id\":%llu," CHROME_FLOW ",\"pid\":%lld,\"tid\":%lld,\"ts\":",
			        (unsigned long long)rp_gpu_flow_id(k, s->work), (long long)pid, (long long)tid);
			us(f, start);
			fprintf(f, "}");
		}
	}
	free(sl);
	return 0;
}

/* "stackFrames": every frame of every stack, "K.I" (trace K, frame I of its rp_stacks.frames),
 * its parent the frame outside it in the same stack: a call's "sf" names its innermost frame. */
static void chrome_stack_frames(FILE *f, struct rp_view *views, unsigned n)
{
	int first = 1;
	for (unsigned k = 0; k < n; k++) {
		const struct rp_stacks *s = views[k].stacks;
		for (uint32_t si = 0; s && si < views[k].t->nstacks; si++) {
			const struct rp_stack_frames *sf = &s->stacks[si];
			for (uint32_t i = sf->first; i < sf->first + sf->n; i++) {
				fprintf(f, "%s\n\"%u.%u\":{\"category\":\"%s\",\"name\":", first ? ",\"stackFrames\":{" : ",", k, i,
				        rp_frame_kind_names[s->frames[i].kind]);
				rp_json_str(f, s->frames[i].label, strlen(s->frames[i].label));
				if (i > sf->first)
					fprintf(f, ",\"parent\":\"%u.%u\"", k, i - 1);
				fprintf(f, "}");
				first = 0;
			}
		}
	}
	if (!first)
		fprintf(f, "\n}");
}

/* The calls of one thread, for rp_thread_slices: a begin event ("B") with the function's name
 * and category and nothing that changes from call to call, and an end event ("E") carrying the
 * call's args (the trace viewers merge an end's args into its slice): speedscope, which keys a
 * frame on the name and the args of the event that opens it, then shows one frame per function
 * and not one per distinct argument. A call without an EXIT is an instant ("i") with its args. */
struct chrome_ctx {
	FILE *f;
	const struct rp_view *v;
	unsigned k;
	char buf[1024];
};

static void chrome_args(struct chrome_ctx *x, const struct tr_call *c)
{
	FILE *f = x->f;
	const struct tr_trace *t = x->v->t;
	fprintf(f, ",\"args\":{\"details\":");
	size_t l = rp_describe_call(x->v, c, x->buf, sizeof(x->buf));
	rp_json_str(f, x->buf, l);
	l = tr_call_format_data(t, c, x->buf, sizeof(x->buf));
	if (l) {
		fprintf(f, ",\"decoded\":");
		rp_json_str(f, x->buf, l);
	}
	if (tr_call_timed(c))
		fprintf(f, ",\"ret\":%llu", (unsigned long long)c->ret);
	fprintf(f, "}");
}

/* One event of call c (ci its index in calls[], TR_NONE for a streamed call: no flow, no stack).
 * early: a streamed call's begin written before it finished, or its end after such a begin
 * (export_stream.h): never a complete event. */
static void chrome_event(struct chrome_ctx *x, const struct tr_call *c, uint32_t ci, enum rp_slice_event what,
                         int64_t ns, int early)
{
	FILE *f = x->f;
	const struct rp_view *v = x->v;
	const struct tr_trace *t = v->t;
	const char *name = tr_func_name(t, c->func);
	uint32_t tid = t->threads[c->thread].tid;
	/* a call of no duration is one complete event: the viewers order an end before a begin of
	 * the same time (trace_processor does), which would end it before it began */
	int zero = !early && tr_call_timed(c) && tr_call_dur(c) == 0;
	if (zero && what == RP_SLICE_END)
		return;
	fprintf(f, ",\n{\"name\":");
	rp_json_str(f, name, strlen(name));
	if (what != RP_SLICE_END)
		fprintf(f, ",\"cat\":\"%s\"", rp_call_category(v, c->func));
	fprintf(f, ",\"ph\":\"%s\",\"pid\":%u,\"tid\":%u,\"ts\":",
	        zero ? "X" : what == RP_SLICE_BEGIN ? "B" : what == RP_SLICE_END ? "E" : "i", t->pid, tid);
	us(f, rp_rel(v, ns));
	if (zero)
		fprintf(f, ",\"dur\":0.000");
	if (what == RP_SLICE_INSTANT)
		fprintf(f, ",\"s\":\"t\"");
	if (what != RP_SLICE_BEGIN || zero)
		chrome_args(x, c);
	const struct rp_stack_frames *sf = what != RP_SLICE_END && ci != TR_NONE ? rp_call_frames(v, ci) : NULL;
	if (sf && sf->n) /* its innermost frame in "stackFrames" */
		fprintf(f, ",\"sf\":\"%u.%u\"", x->k, sf->first + sf->n - 1);
	fprintf(f, "}");
	if (what == RP_SLICE_END || ci == TR_NONE)
		return;
	/* flows to the GPU work the call submitted: they start in the call's slice */
	uint32_t nfl;
	const uint32_t *fl = rp_gpu_call_flows(v, ci, &nfl);
	for (uint32_t j = 0; j < nfl; j++) {
		fprintf(f, ",\n{\"ph\":\"s\",\"id\":%llu," CHROME_FLOW ",\"pid\":%u,\"tid\":%u,\"ts\":",
		        (unsigned long long)rp_gpu_flow_id(x->k, fl[j]), t->pid, tid);
		us(f, rp_rel(v, c->start_ns));
		fprintf(f, "}");
	}
}

static void chrome_slice(void *ctx, uint32_t ci, enum rp_slice_event what, int64_t ns)
{
	struct chrome_ctx *x = ctx;
	chrome_event(x, &x->v->t->calls[ci], ci, what, ns, 0);
}

/* Counted calls: a counter event ("C") per point of rp_counted_series, named "NAME (counted)",
 * on the process; its "calls" the process's running total. */
static void chrome_counted(void *ctx, uint32_t func, int64_t rel, uint64_t total)
{
	struct chrome_ctx *x = ctx;
	const char *name = tr_func_name(x->v->t, func);
	fprintf(x->f, ",\n{\"name\":");
	snprintf(x->buf, sizeof(x->buf), "%s (counted)", name);
	rp_json_str(x->f, x->buf, strlen(x->buf));
	fprintf(x->f, ",\"cat\":\"counted\",\"ph\":\"C\",\"pid\":%u,\"tid\":0,\"ts\":", x->v->t->pid);
	us(x->f, rel);
	fprintf(x->f, ",\"args\":{\"calls\":%llu}}", (unsigned long long)total);
}

/* "otherData": what ts 0 is in absolute time: the first file's CLOCK_MONOTONIC at the start of
 * the time axis and, when the trace has a realtime pair, CLOCK_REALTIME (ns since the epoch),
 * as strings (JSON readers hold numbers as doubles, exact to 2^53 only). */
static void chrome_origin(FILE *f, const struct rp_view *v0, const char *left_out)
{
	int64_t rt;
	fprintf(f, ",\"otherData\":{\"ts_origin_monotonic_ns\":\"%lld\"", (long long)v0->base);
	if (rp_realtime(v0, v0->base, &rt))
		fprintf(f, ",\"ts_origin_realtime_ns\":\"%lld\"", (long long)rt);
	if (left_out) { /* streamed: what it could not give */
		fprintf(f, ",\"left_out_by_streaming\":");
		rp_json_str(f, left_out, strlen(left_out));
	}
	fprintf(f, "}");
}

/* The process's and its threads' names (metadata events); the first event of the array when first. */
static void chrome_process(FILE *f, const struct tr_trace *t, int first)
{
	fprintf(f, "%s\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"tid\":0,\"args\":{\"name\":", first ? "" : ",",
	        t->pid);
	const char *pname = t->argc && t->argv[0][0] ? t->argv[0] : t->exe;
	rp_json_str(f, pname, strlen(pname));
	fprintf(f, "}}");
}

static void chrome_threads(FILE *f, const struct tr_trace *t)
{
	for (uint32_t i = 0; i < t->nthreads; i++) {
		const struct tr_thread *th = &t->threads[i];
		fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":", t->pid, th->tid);
		if (th->name[0])
			rp_json_str(f, th->name, strlen(th->name));
		else
			fprintf(f, "\"%u\"", th->tid);
		fprintf(f, "}}");
	}
}

#define CHROME_START "{\"displayTimeUnit\":\"ns\",\"traceEvents\":["

int rp_write_chrome(FILE *f, struct rp_view *views, unsigned n)
{
	struct chrome_ctx x = {.f = f};
	fprintf(f, CHROME_START);
	for (unsigned k = 0; k < n; k++) {
		const struct rp_view *v = &views[k];
		const struct tr_trace *t = v->t;
		chrome_process(f, t, k == 0);
		chrome_threads(f, t);
		uint8_t *selected = calloc((size_t)t->ncalls + 1, 1);
		if (!selected)
			return -1;
		for (uint32_t i = 0; i < v->nxsel; i++)
			selected[v->xsel[i]] = 1;
		x.v = v;
		x.k = k;
		int rc = 0;
		for (uint32_t th = 0; th < t->nthreads && !rc; th++)
			rc = rp_thread_slices(v, th, selected, chrome_slice, &x);
		free(selected);
		if (rc || rp_counted_series(v, chrome_counted, &x))
			return -1;
		if (v->gpu && chrome_gpu(f, v, k, x.buf, sizeof(x.buf)))
			return -1;
	}
	fprintf(f, "\n]");
	chrome_stack_frames(f, views, n);
	if (n)
		chrome_origin(f, &views[0], NULL);
	fprintf(f, "}\n");
	return ferror(f) ? -1 : 0;
}

/* Streamed (export_stream.h): the events of each call as it finishes, a thread's slices nested
 * as a whole read writes them (rp_sx_slices_call); the process's name first, its threads' names
 * and the counted calls once the file is read. */
struct chrome_sx {
	struct chrome_ctx x;
	struct rp_sx_slices sl;
	int started;
};

static void chrome_sx_start(struct rp_sx *sx)
{
	struct chrome_sx *s = sx->state;
	if (!s->started)
		fprintf(sx->f, CHROME_START);
}

static int chrome_sx_begin(struct rp_sx *sx, const struct rp_view *v, unsigned k)
{
	struct chrome_sx *s = sx->state;
	chrome_sx_start(sx);
	chrome_process(sx->f, v->t, !s->started);
	s->started = 1;
	rp_sx_slices_free(&s->sl);
	s->x.f = sx->f;
	s->x.v = v;
	s->x.k = k;
	return 0;
}

static void chrome_sx_event(void *ctx, const struct tr_call *c, enum rp_slice_event what, int64_t ns, int early)
{
	chrome_event(ctx, c, TR_NONE, what, ns, early);
}

static int chrome_sx_call(struct rp_sx *sx, const struct rp_view *v, unsigned k, const struct tr_call *c,
                          const struct tr_stream_info *info)
{
	struct chrome_sx *s = sx->state;
	return rp_sx_slices_call(&s->sl, v, c, info, chrome_sx_event, &s->x);
}

static int chrome_sx_end(struct rp_sx *sx, const struct rp_view *v, unsigned k)
{
	struct chrome_sx *s = sx->state;
	chrome_threads(sx->f, v->t);
	s->x.v = v;
	return rp_counted_series(v, chrome_counted, &s->x);
}

static int chrome_sx_finish(struct rp_sx *sx, const struct rp_view *v0)
{
	chrome_sx_start(sx);
	fprintf(sx->f, "\n]");
	if (v0)
		chrome_origin(sx->f, v0, sx->left_out);
	fprintf(sx->f, "}\n");
	return ferror(sx->f) ? -1 : 0;
}

static void chrome_sx_free(struct rp_sx *sx)
{
	struct chrome_sx *s = sx->state;
	if (s)
		rp_sx_slices_free(&s->sl);
	free(s);
}

int rp_sx_chrome(struct rp_sx *x)
{
	x->state = calloc(1, sizeof(struct chrome_sx));
	x->file_begin = chrome_sx_begin;
	x->call = chrome_sx_call;
	x->file_end = chrome_sx_end;
	x->finish = chrome_sx_finish;
	x->free = chrome_sx_free;
	return x->state ? 0 : -1;
}

/* ---- folded ------------------------------------------------------------------------------------ */

/* "thread;outer;inner SELF_NS" per distinct stack, sorted: the input of flamegraph.pl, speedscope
 * and inferno. Self time is a call's duration minus its traced children's. With several files
 * each stack starts with "pid PID;". A call with a stack (agent option stacks=), or inside one
 * that has one, has the frames of that stack, outermost first, between the thread and that call
 * (the traced calls around it are in its native stack already). */
struct rp_folded_slot {
	char *key;
	int64_t value;
};

int rp_folded_add(struct rp_folded *st, const char *key, int64_t value)
{
	if ((st->n + 1) * 2 > st->cap) {
		uint32_t ncap = st->cap ? st->cap * 2 : 1024;
		struct rp_folded_slot *ns = calloc(ncap, sizeof(*ns));
		if (!ns)
			return -1;
		for (uint32_t i = 0; i < st->cap; i++) {
			if (!st->slot[i].key)
				continue;
			uint32_t s = (uint32_t)rp_str_hash(st->slot[i].key) & (ncap - 1);
			while (ns[s].key)
				s = (s + 1) & (ncap - 1);
			ns[s] = st->slot[i];
		}
		free(st->slot);
		st->slot = ns;
		st->cap = ncap;
	}
	uint32_t s = (uint32_t)rp_str_hash(key) & (st->cap - 1);
	while (st->slot[s].key && strcmp(st->slot[s].key, key))
		s = (s + 1) & (st->cap - 1);
	if (!st->slot[s].key) {
		st->slot[s].key = strdup(key);
		if (!st->slot[s].key)
			return -1;
		st->n++;
	}
	st->slot[s].value = rp_sat_add(st->slot[s].value, value);
	return 0;
}

static int cmp_slot(const void *a, const void *b)
{
	return strcmp(((const struct rp_folded_slot *)a)->key, ((const struct rp_folded_slot *)b)->key);
}

/* A frame name without the separators of the format. */
static size_t put_frame(char *buf, size_t len, size_t pos, const char *s)
{
	for (; *s && pos + 1 < len; s++)
		buf[pos++] = (*s == ';' || *s == ' ') ? '_' : *s;
	buf[pos < len ? pos : len - 1] = 0;
	return pos;
}

size_t rp_folded_key(char *key, size_t len, const struct rp_view *v, int with_pid, uint32_t thread,
                     const struct rp_stack_frames *sf, const uint32_t *funcs, uint32_t nf)
{
	const struct tr_trace *t = v->t;
	size_t pos = 0;
	if (with_pid)
		pos += (size_t)snprintf(key, len, "pid %u;", t->pid);
	const struct tr_thread *th = &t->threads[thread];
	if (th->name[0])
		pos = put_frame(key, len, pos, th->name);
	else
		pos += (size_t)snprintf(key + pos, len - pos, "%u", th->tid);
	for (uint32_t k = 0; sf && k < sf->n && pos + 2 < len; k++) {
		key[pos++] = ';';
		pos = rp_folded_frame(key, len, pos, v->stacks->frames[sf->first + k].label);
	}
	while (nf-- > 0 && pos + 2 < len) {
		key[pos++] = ';';
		pos = put_frame(key, len, pos, tr_func_name(t, funcs[nf]));
	}
	key[pos < len ? pos : len - 1] = 0;
	return pos;
}

int rp_folded_finish(FILE *f, struct rp_folded *st, int rc)
{
	if (!rc) {
		/* compact and sort for a deterministic output */
		uint32_t m = 0;
		for (uint32_t i = 0; i < st->cap; i++)
			if (st->slot[i].key)
				st->slot[m++] = st->slot[i];
		if (m)
			qsort(st->slot, m, sizeof(*st->slot), cmp_slot);
		for (uint32_t i = 0; i < m; i++)
			fprintf(f, "%s %lld\n", st->slot[i].key, (long long)st->slot[i].value);
		for (uint32_t i = 0; i < m; i++)
			free(st->slot[i].key);
	} else {
		for (uint32_t i = 0; i < st->cap; i++)
			free(st->slot[i].key);
	}
	free(st->slot);
	memset(st, 0, sizeof(*st));
	return rc || ferror(f) ? -1 : 0;
}

int rp_write_folded(FILE *f, struct rp_view *views, unsigned n)
{
	struct rp_folded st = {0};
	int rc = 0;
	char key[RP_FOLDED_KEY_MAX];
	for (unsigned k = 0; k < n && !rc; k++) {
		const struct rp_view *v = &views[k];
		const struct tr_trace *t = v->t;
		/* children's time per call, over all calls, so self time is exact even when a filter
		 * hides the children */
		int64_t *child = calloc((size_t)t->ncalls + 1, sizeof(*child));
		if (!child) {
			rc = -1;
			break;
		}
		for (uint32_t i = 0; i < t->ncalls; i++) {
			const struct tr_call *c = &t->calls[i];
			if (c->parent != TR_NONE && tr_call_timed(c))
				child[c->parent] = rp_sat_add(child[c->parent], tr_call_dur(c));
		}
		for (uint32_t i = 0; i < v->nxsel && !rc; i++) {
			uint32_t ci = v->xsel[i];
			const struct tr_call *c = &t->calls[ci];
			if (!tr_call_timed(c))
				continue;
			int64_t self = tr_call_dur(c) - child[ci];
			if (self <= 0)
				continue;
			/* frames, innermost first */
			uint32_t funcs[RP_FOLDED_MAX_FRAMES], nf = 0;
			const struct rp_stack_frames *sf = NULL;
			for (uint32_t p = ci; p != TR_NONE && nf < RP_FOLDED_MAX_FRAMES && !sf; p = t->calls[p].parent) {
				funcs[nf++] = t->calls[p].func;
				sf = rp_call_frames(v, p); /* its native stack holds the traced calls outside it */
			}
			rp_folded_key(key, sizeof(key), v, n > 1, c->thread, sf, funcs, nf);
			rc = rp_folded_add(&st, key, self);
		}
		free(child);
	}
	return rp_folded_finish(f, &st, rc);
}
