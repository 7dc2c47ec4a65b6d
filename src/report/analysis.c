/* What the selected calls say beyond per-function statistics: time by category, transfers
 * with bytes and bandwidth, the pipeline stages, host gaps between GPU submissions, nesting.
 *
 * Category, stage and gap figures use only OUTERMOST calls (no traced caller): a traced call made
 * from inside another traced call is already part of its caller's time, and counting both would
 * make categories add up to more than the time spent in the driver. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

const char *const rp_stage_names[RP_STAGE_COUNT] = {
	"init", "model load", "inference", "result retrieval", "teardown",
};

static int outermost(const struct tr_call *c)
{
	return c->parent == TR_NONE;
}

static int64_t dur(const struct tr_call *c)
{
	return tr_call_timed(c) ? tr_call_dur(c) : 0;
}

/* ---- categories, transfers, allocations, nesting ---------------------------------------------- */

static void add_nest(struct rp_analysis *a, uint32_t parent, uint32_t child, int64_t d)
{
	for (uint32_t i = 0; i < a->nnest; i++)
		if (a->nest[i].parent_func == parent && a->nest[i].child_func == child) {
			a->nest[i].count++;
			a->nest[i].child_time = rp_sat_add(a->nest[i].child_time, d);
			return;
		}
	if (a->nnest < RP_MAX_NEST)
		a->nest[a->nnest++] = (struct rp_nest){parent, child, 1, d};
}

void rp_tally_call(const struct rp_view *v, struct rp_analysis *a, const struct tr_call *c)
{
	const struct tr_trace *t = v->t;
	const struct rp_finfo *fi = &v->fi[c->func];
	int64_t d = dur(c);
	if (c->depth > a->max_depth)
		a->max_depth = c->depth;
	if (rp_call_failed(v, c))
		a->failed_calls++;
	if (!outermost(c)) {
		a->nested_calls++;
		add_nest(a, t->calls[c->parent].func, c->func, d);
		return;
	}
	a->outer_calls++;
	a->api_time = rp_sat_add(a->api_time, d);
	a->cat[fi->cat].calls++;
	a->cat[fi->cat].total = rp_sat_add(a->cat[fi->cat].total, d);
	if (fi->kind == RP_KIND_LAUNCH)
		a->launches++;
	if (fi->kind == RP_KIND_XFER) {
		struct rp_dir_stat *ds = &a->dir[fi->x.dir];
		int known;
		uint64_t bytes = rp_call_bytes(v, c, &known);
		ds->calls++;
		ds->total = rp_sat_add(ds->total, d);
		if (fi->x.async)
			ds->async_calls++;
		if (known) {
			ds->bytes += bytes;
			if (!fi->x.async && tr_call_timed(c)) {
				ds->sync_bytes += bytes;
				ds->sync_time = rp_sat_add(ds->sync_time, d);
			}
		}
	} else if (fi->kind == RP_KIND_ALLOC) {
		int known;
		a->alloc_calls++;
		a->alloc_bytes += rp_call_bytes(v, c, &known);
	} else if (fi->kind == RP_KIND_RELEASE && fi->cat == RP_CAT_MEMORY) {
		a->free_calls++;
	}
}

static void tally(const struct rp_view *v, struct rp_analysis *a)
{
	for (uint32_t i = 0; i < v->nsel; i++)
		rp_tally_call(v, a, &v->t->calls[v->sel[i]]);
}

/* ---- pipeline stages --------------------------------------------------------------------------- */

/* Stages come from the order of the outermost calls (all threads, by start time):
 *   init        everything before the first module, memory, transfer, launch or graph call;
 *   model load  from there to the first kernel launch;
 *   inference   first launch .. last launch, extended over the sync and stream calls that
 *               directly follow it (waiting for the kernels is part of running them);
 *   teardown    the longest tail made only of releases (free, unload, destroy) and context,
 *               sync, stream or other calls, starting at a release;
 *   result retrieval  what lies between inference and teardown (typically D2H copies).
 * Without launches there is no inference: load runs until teardown. A stage with no call is not
 * present. */
static int is_launch(const struct rp_view *v, const struct tr_call *c)
{
	const struct rp_finfo *fi = &v->fi[c->func];
	return fi->cat == RP_CAT_LAUNCH || (fi->cat == RP_CAT_GRAPH && fi->submission);
}

static int is_work(const struct rp_view *v, const struct tr_call *c)
{
	uint8_t cat = v->fi[c->func].cat;
	return cat == RP_CAT_MODULE || cat == RP_CAT_MEMORY || cat == RP_CAT_TRANSFER || cat == RP_CAT_LAUNCH ||
	       cat == RP_CAT_GRAPH;
}

static int teardown_ok(const struct rp_view *v, const struct tr_call *c)
{
	const struct rp_finfo *fi = &v->fi[c->func];
	return fi->kind == RP_KIND_RELEASE || fi->cat == RP_CAT_CONTEXT || fi->cat == RP_CAT_SYNC ||
	       fi->cat == RP_CAT_STREAM || fi->cat == RP_CAT_OTHER;
}

static void set_stage(const struct rp_view *v, struct rp_analysis *a, enum rp_stage_id s, const uint32_t *oc,
                      uint32_t from, uint32_t to /* exclusive */)
{
	if (from >= to)
		return;
	struct rp_stage *st = &a->stage[s];
	const struct tr_trace *t = v->t;
	st->present = 1;
	st->first = oc[from];
	st->last = oc[to - 1];
	st->start = t->calls[oc[from]].start_ns;
	st->end = st->start;
	for (uint32_t i = from; i < to; i++) {
		const struct tr_call *c = &t->calls[oc[i]];
		if (c->end_ns > st->end)
			st->end = c->end_ns;
		st->calls++;
		st->api = rp_sat_add(st->api, dur(c));
	}
}

static void find_stages(const struct rp_view *v, struct rp_analysis *a, const uint32_t *oc, uint32_t n)
{
	const struct tr_trace *t = v->t;
	if (!n)
		return;
	uint32_t work = n, first_launch = n, last_launch = n;
	for (uint32_t i = 0; i < n; i++) {
		const struct tr_call *c = &t->calls[oc[i]];
		if (work == n && is_work(v, c))
			work = i;
		if (is_launch(v, c)) {
			if (first_launch == n)
				first_launch = i;
			last_launch = i;
		}
	}
	uint32_t infer_end = last_launch;
	if (last_launch < n) {
		while (infer_end + 1 < n) {
			uint8_t cat = v->fi[t->calls[oc[infer_end + 1]].func].cat;
			if (cat != RP_CAT_SYNC && cat != RP_CAT_STREAM)
				break;
			infer_end++;
		}
		infer_end++; /* exclusive */
	}
	/* teardown: the tail of teardown-compatible calls, cut to start at its first release */
	uint32_t tail = n, after = last_launch < n ? infer_end : work;
	while (tail > after && tail > 0 && teardown_ok(v, &t->calls[oc[tail - 1]]))
		tail--;
	while (tail < n && v->fi[t->calls[oc[tail]].func].kind != RP_KIND_RELEASE)
		tail++;
	uint32_t teardown = tail;

	set_stage(v, a, RP_STAGE_INIT, oc, 0, work < n ? work : teardown);
	if (last_launch < n) {
		set_stage(v, a, RP_STAGE_LOAD, oc, work, first_launch);
		set_stage(v, a, RP_STAGE_INFER, oc, first_launch, infer_end);
		set_stage(v, a, RP_STAGE_RESULT, oc, infer_end, teardown);
	} else if (work < n) {
		set_stage(v, a, RP_STAGE_LOAD, oc, work, teardown);
	}
	set_stage(v, a, RP_STAGE_TEARDOWN, oc, teardown, n);
}

/* ---- host gaps between GPU submissions --------------------------------------------------------- */

/* Gaps between consecutive submissions (outermost launches, copies, memsets, graph launches of
 * any thread, by start time): the time from the end of one to the start of the next, when the
 * next starts after the previous ended. Long gaps are where the GPU may starve while the host
 * prepares work. */
static int find_gaps(const struct rp_view *v, struct rp_analysis *a, const uint32_t *oc, uint32_t n)
{
	const struct tr_trace *t = v->t;
	struct rp_gaps *g = &a->gaps;
	int64_t *gaps = malloc(((size_t)n + 1) * sizeof(*gaps));
	if (!gaps)
		return -1;
	uint32_t prev = TR_NONE, ng = 0;
	int64_t prev_end = 0, first_start = 0, pending_sync = 0, pending_load = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct tr_call *c = &t->calls[oc[i]];
		if (!v->fi[c->func].submission) {
			if (v->fi[c->func].cat == RP_CAT_SYNC)
				pending_sync = rp_sat_add(pending_sync, dur(c));
			else if (v->fi[c->func].oneoff)
				pending_load = rp_sat_add(pending_load, dur(c));
			continue;
		}
		g->submissions++;
		if (prev == TR_NONE) {
			first_start = c->start_ns;
		} else if (c->start_ns > prev_end) {
			int64_t gap = c->start_ns - prev_end;
			gaps[ng++] = gap;
			g->total = rp_sat_add(g->total, gap);
			int64_t in_sync = pending_sync < gap ? pending_sync : gap;
			g->sync_in_gaps = rp_sat_add(g->sync_in_gaps, in_sync);
			g->load_in_gaps = rp_sat_add(g->load_in_gaps, pending_load < gap - in_sync ? pending_load : gap - in_sync);
			/* keep the largest few, in decreasing order (ties: the earlier first) */
			if (g->ntop < RP_MAX_TOP_GAPS || gap > g->top[g->ntop - 1]) {
				uint32_t k = g->ntop < RP_MAX_TOP_GAPS ? g->ntop++ : RP_MAX_TOP_GAPS - 1;
				while (k > 0 && g->top[k - 1] < gap) {
					g->top[k] = g->top[k - 1];
					g->top_before[k] = g->top_before[k - 1];
					g->top_after[k] = g->top_after[k - 1];
					k--;
				}
				g->top[k] = gap;
				g->top_before[k] = prev;
				g->top_after[k] = oc[i];
			}
		}
		pending_sync = pending_load = 0;
		if (prev == TR_NONE || c->end_ns > prev_end)
			prev_end = c->end_ns;
		prev = oc[i];
	}
	g->ngaps = ng;
	if (g->submissions)
		g->span = prev_end - first_start;
	if (ng) {
		int64_t lo, hi;
		g->max = gaps[0];
		for (uint32_t i = 1; i < ng; i++)
			if (gaps[i] > g->max)
				g->max = gaps[i];
		rp_middle(gaps, ng, &lo, &hi);
		g->median = lo + (hi - lo) / 2;
	}
	free(gaps);
	return 0;
}

/* Time a thread spent in outermost sync calls within [from, to): how much of a gap was the
 * host waiting for the GPU rather than preparing work. */
static int64_t sync_time_in(const struct rp_view *v, uint32_t thread, int64_t from, int64_t to)
{
	const struct tr_trace *t = v->t;
	int64_t sum = 0;
	for (uint32_t i = 0; i < v->nsel; i++) {
		const struct tr_call *c = &t->calls[v->sel[i]];
		if (c->start_ns >= to)
			break;
		if (c->thread != thread || !outermost(c) || v->fi[c->func].cat != RP_CAT_SYNC || !tr_call_timed(c))
			continue;
		int64_t s = c->start_ns > from ? c->start_ns : from, e = c->end_ns < to ? c->end_ns : to;
		if (e > s)
			sum = rp_sat_add(sum, e - s);
	}
	return sum;
}

int rp_analyze(const struct rp_view *v, struct rp_analysis *a)
{
	memset(a, 0, sizeof(*a));
	tally(v, a);
	uint32_t *oc = malloc(((size_t)a->outer_calls + 1) * sizeof(*oc));
	if (!oc)
		return -1;
	uint32_t n = 0;
	for (uint32_t i = 0; i < v->nsel; i++)
		if (outermost(&v->t->calls[v->sel[i]]))
			oc[n++] = v->sel[i];
	find_stages(v, a, oc, n);
	int rc = find_gaps(v, a, oc, n);
	free(oc);
	struct rp_gaps *g = &a->gaps;
	for (uint32_t i = 0; !rc && i < g->ntop; i++) {
		const struct tr_call *after = &v->t->calls[g->top_after[i]];
		g->top_sync[i] = sync_time_in(v, after->thread, after->start_ns - g->top[i], after->start_ns);
	}
	return rc;
}

/* ---- slowest calls ----------------------------------------------------------------------------- */

/* Order: longer first; equal durations: the earlier start first, then the lower index. */
static int slower(const struct tr_trace *t, uint32_t a, uint32_t b)
{
	int64_t da = tr_call_dur(&t->calls[a]), db = tr_call_dur(&t->calls[b]);
	if (da != db)
		return da > db;
	if (t->calls[a].start_ns != t->calls[b].start_ns)
		return t->calls[a].start_ns < t->calls[b].start_ns;
	return a < b;
}

/* A min-heap (by `slower`) of the k slowest calls seen so far: the root is the fastest of them. */
static void heap_down(const struct tr_trace *t, uint32_t *h, uint32_t n, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && slower(t, h[m], h[l]))
			m = l;
		if (r < n && slower(t, h[m], h[r]))
			m = r;
		if (m == i)
			return;
		uint32_t tmp = h[i];
		h[i] = h[m];
		h[m] = tmp;
		i = m;
	}
}

uint32_t rp_slowest(const struct rp_view *v, uint32_t k, uint32_t **out)
{
	const struct tr_trace *t = v->t;
	*out = NULL;
	if (!k)
		return 0;
	uint32_t *h = malloc((size_t)k * sizeof(*h));
	if (!h)
		return 0;
	uint32_t n = 0;
	for (uint32_t i = 0; i < v->nsel; i++) {
		uint32_t ci = v->sel[i];
		if (!tr_call_timed(&t->calls[ci]))
			continue;
		if (n < k) {
			/* sift up */
			uint32_t j = n++;
			h[j] = ci;
			while (j > 0 && slower(t, h[(j - 1) / 2], h[j])) {
				uint32_t p = (j - 1) / 2, tmp = h[p];
				h[p] = h[j];
				h[j] = tmp;
				j = p;
			}
		} else if (slower(t, ci, h[0])) {
			h[0] = ci;
			heap_down(t, h, n, 0);
		}
	}
	/* heap sort: repeatedly move the fastest to the end, leaving the slowest first */
	for (uint32_t m = n; m > 1; m--) {
		uint32_t tmp = h[0];
		h[0] = h[m - 1];
		h[m - 1] = tmp;
		heap_down(t, h, m - 1, 0);
	}
	if (!n) {
		free(h);
		return 0;
	}
	*out = h;
	return n;
}
