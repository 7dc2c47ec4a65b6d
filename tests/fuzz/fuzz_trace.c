/* libFuzzer harness: the trace reader and the whole report on arbitrary bytes.
 *
 * tr_open_mem() on the input; when it opens, the invariants the report relies on are checked
 * (abort() = a finding), then every output is written to /dev/null: text, json, csv, jsonl,
 * chrome, perfetto, folded, on one view and on two views of the trace merged on one time axis
 * (several files, docs/report.md). The streaming reader (trace_stream.h) reads the input too and
 * must hand over the whole read's calls, each by its index in the whole read, with the same
 * counts. The report options (sort key, --time-range, --functions,
 * --thread, width) are picked from a hash of the input, so a given input always runs the same way.
 *
 * Built by tests/fuzz/build.sh with clang -fsanitize=fuzzer,address,undefined (docs/fuzzing.md). */
#include "result.h"
#include "trace_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *devnull;

static uint64_t hash(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static void check_invariants(const struct tr_trace *t)
{
	for (uint32_t i = 0; i < t->ncalls; i++) {
		const struct tr_call *c = &t->calls[i];
		if (c->func >= t->nfuncs || c->thread >= t->nthreads || (c->parent != TR_NONE && c->parent >= i) ||
		    c->end_ns < c->start_ns || (c->ndata && c->data_first + c->ndata > t->ndata))
			abort();
	}
	for (uint32_t i = 0; i < t->ndata; i++)
		if (t->data[i].call >= t->ncalls)
			abort();
	/* COUNTS entries: valid ids; the saturating sums per entry, function and thread agree. */
	uint64_t by_entry = 0, by_func = 0, by_thread = 0;
	for (uint32_t i = 0; i < t->ncounts; i++) {
		const struct tr_count *c = &t->counts[i];
		if (c->func >= t->nfuncs || !t->funcs[c->func].defined || c->thread >= t->nthreads)
			abort();
		by_entry = tr_sat_add_u64(by_entry, c->calls);
	}
	for (uint32_t i = 0; i < t->nfuncs; i++)
		by_func = tr_sat_add_u64(by_func, t->funcs[i].counted);
	for (uint32_t i = 0; i < t->nthreads; i++)
		by_thread = tr_sat_add_u64(by_thread, t->threads[i].counted);
	if (by_entry != t->counted_calls || by_func != t->counted_calls || by_thread != t->counted_calls)
		abort();
	if (!tr_gpu_consistent(t))
		abort();
}

/* The streaming reader's calls against the whole read's (abort on a difference). */
static int stream_call(void *ctx, const struct tr_trace *st, const struct tr_call *c, const struct tr_stream_info *info)
{
	const struct tr_trace *t = ctx;
	const uint64_t ordinal = info->ordinal;
	if (ordinal >= t->ncalls)
		abort();
	const struct tr_call *a = &t->calls[ordinal];
	if (a->start_ns != c->start_ns || a->end_ns != c->end_ns || a->ret != c->ret || a->func != c->func ||
	    a->thread != c->thread || a->flags != c->flags || a->ndata != c->ndata || tr_call_nargs(a) != tr_call_nargs(c) ||
	    (a->parent == TR_NONE) != (c->parent == TR_NONE) ||
	    info->parent_ordinal != (a->parent == TR_NONE ? UINT64_MAX : a->parent) ||
	    (a->parent != TR_NONE && t->calls[a->parent].func != tr_stream_open_call(st, c->parent)->func))
		abort();
	for (unsigned k = 0; k < tr_call_nargs(a); k++)
		if (tr_call_arg(a, k) != tr_call_arg(c, k))
			abort();
	/* its DATA records, handed over with it: copies of the whole read's, in the same order */
	for (unsigned k = 0; k < c->ndata; k++) {
		const struct tr_data *x = &t->data[a->data_first + k], *y = &st->data[c->data_first + k];
		if (x->decoder != y->decoder || x->at_exit != y->at_exit || x->nvalues != y->nvalues ||
		    x->str_len != y->str_len || (x->nvalues && memcmp(x->values, y->values, 8u * x->nvalues)) ||
		    (x->str_len && memcmp(x->str, y->str, x->str_len)))
			abort();
	}
	return 0;
}

static void check_streamed(const struct tr_trace *t, const uint8_t *data, size_t size)
{
	const struct tr_stream_sink sink = {.call = stream_call, .ctx = (void *)t};
	char err[512];
	struct tr_trace *s = tr_open_stream_mem(data, size, "fuzz", &sink, err, sizeof(err));
	struct tr_stream_skipped sk;
	if (!s)
		abort(); /* the whole read opened it */
	tr_stream_get_skipped(s, &sk);
	if (sk.calls != t->ncalls || s->ncalls || s->nentry != t->nentry || s->nexit != t->nexit ||
	    s->lost_exits != t->lost_exits || s->ndata_recs != t->ndata_recs || s->truncated != t->truncated ||
	    s->counted_calls != t->counted_calls || s->first_ns != t->first_ns || s->last_ns != t->last_ns)
		abort();
	tr_close(s);
}

static void all_outputs(struct rp_view *v, unsigned n)
{
	struct rp_result r;
	if (rp_result_build(v, n, 1, &r))
		return;
	if (n == 1)
		rp_write_text(devnull, v, &r.per[0]);
	else
		rp_write_text_merged(devnull, v, &r, v->axis_realtime);
	rp_write_json(devnull, v, &r);
	rp_write_csv(devnull, v, n);
	rp_write_jsonl(devnull, v, n);
	rp_write_chrome(devnull, v, n);
	rp_write_perfetto(devnull, v, n);
	rp_write_folded(devnull, v, n);
	rp_result_free(v, n, &r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!devnull) {
		devnull = fopen("/dev/null", "w");
		if (!devnull)
			abort();
	}
	char err[512] = "";
	struct tr_trace *t = tr_open_mem(data, size, "fuzz", err, sizeof(err));
	if (!t) {
		if (!err[0])
			abort(); /* a refusal must say why */
		return 0;
	}
	check_invariants(t);
	check_streamed(t, data, size);
	uint64_t h = hash(data, size);
	static const enum rp_sort sorts[] = {RP_SORT_TOTAL, RP_SORT_CALLS, RP_SORT_AVG, RP_SORT_MED,
	                                     RP_SORT_MIN, RP_SORT_MAX, RP_SORT_NAME};
	struct rp_opts o;
	memset(&o, 0, sizeof(o));
	o.top = 1 + (unsigned)(h % 7);
	o.width = 20 + (unsigned)((h >> 3) % 50);
	o.all = (h >> 9) & 1;
	o.color = (h >> 10) & 1;
	o.sort = sorts[(h >> 11) % 7];
	if ((h >> 14) % 4 == 0) {
		o.has_range = 1;
		o.range_start_ns = (int64_t)((h >> 16) % 2000);
		o.range_end_ns = o.range_start_ns + 1 + (int64_t)((h >> 27) % 5000000);
	}
	if ((h >> 40) % 5 == 0)
		o.functions = "cu*Launch*,cuMem*,ioctl";
	if ((h >> 43) % 7 == 0)
		o.threads = "1000,w*";
	o.align_monotonic = (h >> 46) & 1;

	struct rp_view v[2];
	if (rp_view_init(&v[0], t, &o, err, sizeof(err)) == 0) {
		all_outputs(&v[0], 1);
		rp_view_free(&v[0]);
	}
	/* several files: the trace twice on one axis, the second one later */
	struct tr_trace *two[2] = {t, t};
	int64_t shift[2];
	int realtime = rp_align(two, 2, &o, shift);
	if (shift[0] != 0 || shift[1] != 0)
		abort(); /* the same trace twice starts at the same place */
	if (rp_view_init_at(&v[0], t, &o, 0, err, sizeof(err)) == 0) {
		if (rp_view_init_at(&v[1], t, &o, (int64_t)(h >> 20), err, sizeof(err)) == 0) {
			v[0].axis_realtime = v[1].axis_realtime = realtime;
			all_outputs(v, 2);
			rp_view_free(&v[1]);
		}
		rp_view_free(&v[0]);
	}
	tr_close(t);
	return 0;
}
