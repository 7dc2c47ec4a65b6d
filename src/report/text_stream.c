/* The text report in bounded memory (cuhook report --stream, docs/report.md "Streaming report").
 * The streaming reader (trace_stream.h) hands over each call as it finishes; this keeps only
 * what the sections it prints need, so that memory does not grow with the number of calls:
 *  - per function: calls, timed, failed, total, min, max (exact, as rp_func_stats computes them),
 *    a running mean and sum of squared deviations (Welford) for the standard deviation, and a
 *    log-bucket sketch (sketch.h) for the median, within 0.8 % of the exact one;
 *  - the --top slowest calls in a bounded heap, ordered as rp_slowest orders them (duration,
 *    then start, then the call's index in a whole read), each with a copy of its arguments and
 *    DATA records, and the kernel names (rp_view_name_call) to describe them as a whole read does;
 *  - the per-call tallies of rp_analyze (categories, transfers, nesting) through rp_tally_call,
 *    every nesting pair kept with the place of its first call, so that the RP_MAX_NEST pairs a
 *    whole read lists (the first it meets, in start order) are listed, in its order;
 *  - the calls counted, for the header.
 * Sections that need every call at once (GPU, memory over time, streams, pipeline stages,
 * kernels, findings, host gaps, call sites, ioctls, timeline) are named as left out. */
#include "report.h"
#include "sketch.h"
#include "trace_stream.h"

#include <math.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#define SLOW_ARGS (6 + CUHOOK_MAX_STACK_ARGS)

struct fagg {
	uint64_t calls, timed, failed;
	int64_t total, min, max;
	double mean, m2;          /* Welford: running mean, sum of squared deviations from it */
	struct rp_sketch *sk;     /* allocated at the function's first timed call */
};

/* One of the slowest calls so far; its arguments and DATA records copied (the reader's copies go
 * with the call): data[] with their values and strings in one allocation. */
struct slow {
	struct tr_call c;
	uint64_t ordinal;
	uint64_t args[SLOW_ARGS];
	struct tr_data *data;
};

/* Where a nesting pair's first call lies in the order a whole read selects calls. */
struct nest_first {
	int64_t start;
	uint32_t thread;
	uint64_t ordinal;
};

/* A (parent function, child function) pair of the calls nested in another, all of them. */
struct nest_pair {
	struct rp_nest n;
	struct nest_first first;
};

struct rp_stream_report {
	const struct rp_opts *o;
	struct tr_trace *t;
	struct rp_view sel;       /* a view without calls: function info, the options' selection */
	int ready;
	struct rp_sel_cache sel_cache;
	struct rp_thread_calls per_thread; /* the json's threads' calls */
	struct fagg *f;           /* per function id */
	struct slow *heap;        /* min-heap by slower(): the root is the fastest kept */
	uint32_t nheap;
	struct rp_stream_counts n;
	struct rp_analysis *a;
	struct nest_pair *pairs;  /* open addressing by (parent, child); n.count 0: free */
	uint32_t npairs, pairs_cap;
	struct tr_stream_skipped skipped;
	struct rp_folded *folded; /* --format folded: the stacks go there */
	int folded_pid;
};

/* Ready at the first call (every function is known then: FUNCS blocks are read in pass 1), or
 * after the read for a trace without calls. */
static int prepare(struct rp_stream_report *r, struct tr_trace *t)
{
	char err[64];
	r->ready = 1;
	if (rp_view_init(&r->sel, t, r->o, err, sizeof(err)))
		return -1;
	r->f = calloc((size_t)t->nfuncs + 1, sizeof(*r->f));
	r->a = calloc(1, sizeof(*r->a));
	r->heap = r->o->top ? malloc((size_t)r->o->top * sizeof(*r->heap)) : NULL;
	return r->f && r->a && (r->heap || !r->o->top) ? 0 : -1;
}

/* rp_slowest's order: longer first; equal durations: the earlier start, then the lower index. */
static int slower(const struct slow *a, const struct slow *b)
{
	int64_t da = tr_call_dur(&a->c), db = tr_call_dur(&b->c);
	if (da != db)
		return da > db;
	if (a->c.start_ns != b->c.start_ns)
		return a->c.start_ns < b->c.start_ns;
	return a->ordinal < b->ordinal;
}

static void swap_slow(struct slow *a, struct slow *b)
{
	struct slow tmp = *a;
	*a = *b;
	*b = tmp;
}

static void heap_down(struct slow *h, uint32_t n, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && slower(&h[m], &h[l]))
			m = l;
		if (r < n && slower(&h[m], &h[r]))
			m = r;
		if (m == i)
			return;
		swap_slow(&h[i], &h[m]);
		i = m;
	}
}

/* c's DATA records (t->data during the callback) in one block: the records, then their bytes. */
static struct tr_data *copy_data(const struct tr_trace *t, const struct tr_call *c)
{
	size_t bytes = (size_t)c->ndata * sizeof(struct tr_data);
	for (uint32_t k = 0; k < c->ndata; k++) {
		const struct tr_data *d = &t->data[c->data_first + k];
		bytes += 8u * d->nvalues + ((d->str_len + 7u) & ~7u);
	}
	struct tr_data *out = malloc(bytes);
	if (!out)
		return NULL;
	uint64_t *w = (uint64_t *)(out + c->ndata);
	for (uint32_t k = 0; k < c->ndata; k++) {
		const struct tr_data *d = &t->data[c->data_first + k];
		out[k] = *d;
		memcpy(w, d->values, 8u * d->nvalues);
		out[k].values = w;
		w += d->nvalues;
		memcpy(w, d->str, d->str_len);
		out[k].str = (const char *)w;
		w += (d->str_len + 7u) / 8;
	}
	return out;
}

static int keep_if_slow(struct rp_stream_report *r, const struct tr_trace *t, const struct tr_call *c,
                        uint64_t ordinal)
{
	uint32_t k = r->o->top;
	struct slow s;
	s.c = *c;
	s.c.parent = TR_NONE; /* a slot of the reader's, gone after the callback */
	s.ordinal = ordinal;
	s.data = NULL;
	unsigned na = (unsigned)c->nregs_ + c->nstack_;
	memcpy(s.args, c->args_, (na < SLOW_ARGS ? na : SLOW_ARGS) * sizeof(*s.args));
	if (r->nheap < k || (k && slower(&s, &r->heap[0]))) {
		if (c->ndata && !(s.data = copy_data(t, c)))
			return -1;
	}
	if (r->nheap < k) {
		uint32_t j = r->nheap++;
		r->heap[j] = s;
		while (j > 0 && slower(&r->heap[(j - 1) / 2], &r->heap[j])) {
			swap_slow(&r->heap[(j - 1) / 2], &r->heap[j]);
			j = (j - 1) / 2;
		}
	} else if (k && slower(&s, &r->heap[0])) {
		free(r->heap[0].data);
		r->heap[0] = s;
		heap_down(r->heap, r->nheap, 0);
	}
	return 0;
}

static int nest_before(const struct nest_first *a, const struct nest_first *b)
{
	if (a->start != b->start)
		return a->start < b->start;
	if (a->thread != b->thread)
		return a->thread < b->thread;
	return a->ordinal < b->ordinal;
}

static uint32_t pair_slot(uint32_t parent, uint32_t child, uint32_t mask)
{
	return ((parent * 2654435761u) ^ (child * 40503u)) & mask;
}

/* A nested call: its pair's count, children's time and first call (the earliest in the whole
 * read's selection order). Returns 0, -1 when out of memory. */
static int note_nest(struct rp_stream_report *r, const struct tr_trace *t, const struct tr_call *c, uint64_t ordinal)
{
	if ((r->npairs + 1) * 2 > r->pairs_cap) {
		uint32_t ncap = r->pairs_cap ? r->pairs_cap * 2 : 64;
		struct nest_pair *np = calloc(ncap, sizeof(*np));
		if (!np)
			return -1;
		for (uint32_t i = 0; i < r->pairs_cap; i++) {
			if (!r->pairs[i].n.count)
				continue;
			uint32_t k = pair_slot(r->pairs[i].n.parent_func, r->pairs[i].n.child_func, ncap - 1);
			while (np[k].n.count)
				k = (k + 1) & (ncap - 1);
			np[k] = r->pairs[i];
		}
		free(r->pairs);
		r->pairs = np;
		r->pairs_cap = ncap;
	}
	const uint32_t pf = t->calls[c->parent].func, mask = r->pairs_cap - 1;
	const struct nest_first key = {c->start_ns, c->thread, ordinal};
	uint32_t k = pair_slot(pf, c->func, mask);
	while (r->pairs[k].n.count && (r->pairs[k].n.parent_func != pf || r->pairs[k].n.child_func != c->func))
		k = (k + 1) & mask;
	struct nest_pair *p = &r->pairs[k];
	if (!p->n.count) {
		*p = (struct nest_pair){{pf, c->func, 0, 0}, key};
		r->npairs++;
	} else if (nest_before(&key, &p->first)) {
		p->first = key;
	}
	p->n.count++;
	p->n.child_time = rp_sat_add(p->n.child_time, tr_call_timed(c) ? tr_call_dur(c) : 0);
	return 0;
}

/* --format folded: the call's self time under its stack of traced calls (rp_write_folded's key;
 * no native stack: call stacks are not read when streaming). Its ancestors are open calls. */
static int fold(struct rp_stream_report *r, const struct tr_trace *t, const struct tr_call *c,
                const struct tr_stream_info *info)
{
	if (!tr_call_timed(c) || tr_call_dur(c) - info->child_ns <= 0)
		return 0;
	uint32_t funcs[RP_FOLDED_MAX_FRAMES], nf = 0;
	funcs[nf++] = c->func;
	for (uint32_t p = c->parent; p != TR_NONE && nf < RP_FOLDED_MAX_FRAMES; p = t->calls[p].parent)
		funcs[nf++] = t->calls[p].func;
	char key[RP_FOLDED_KEY_MAX];
	rp_folded_key(key, sizeof(key), &r->sel, r->folded_pid, c->thread, NULL, funcs, nf);
	return rp_folded_add(r->folded, key, tr_call_dur(c) - info->child_ns);
}

static int on_call(void *ctx, const struct tr_trace *ct, const struct tr_call *c, const struct tr_stream_info *info)
{
	struct rp_stream_report *r = ctx;
	const uint64_t ordinal = info->ordinal;
	struct tr_trace *t = (struct tr_trace *)ct; /* the view reads it; nothing here writes it */
	if (!r->ready && prepare(r, t))
		return -1;
	if (r->sel.fi[c->func].names_kernel && rp_view_name_call(&r->sel, c))
		return -1;
	if (rp_thread_calls_add(&r->per_thread, t, c->thread))
		return -1;
	int io = r->sel.fi[c->func].ioctl;
	r->n.calls++;
	r->n.ioctls += (uint64_t)io;
	int sel = rp_stream_selects(&r->sel, &r->sel_cache, c);
	if (sel <= 0)
		return sel;
	r->n.xsel++;
	if (r->folded)
		return fold(r, t, c, info);
	if (io)
		return 0; /* the sections below are about API calls (the ioctl section is left out) */
	r->n.sel++;
	rp_tally_call(&r->sel, r->a, c);
	if (c->parent != TR_NONE && note_nest(r, t, c, ordinal))
		return -1;
	struct fagg *a = &r->f[c->func];
	a->calls++;
	if (!tr_call_timed(c))
		return 0;
	int64_t d = tr_call_dur(c);
	if (!a->timed) {
		a->min = a->max = d;
		a->sk = calloc(1, sizeof(*a->sk));
		if (!a->sk)
			return -1;
	}
	a->timed++;
	if (rp_call_failed(&r->sel, c))
		a->failed++;
	a->total = rp_sat_add(a->total, d);
	a->min = d < a->min ? d : a->min;
	a->max = d > a->max ? d : a->max;
	double delta = (double)d - a->mean;
	a->mean += delta / (double)a->timed;
	a->m2 += delta * ((double)d - a->mean);
	rp_sketch_add(a->sk, d);
	return keep_if_slow(r, t, c, ordinal);
}

struct tr_trace *rp_stream_read(const struct rp_opts *o, const char *path, struct rp_folded *folded, int with_pid,
                                struct rp_stream_report **out, char *err, size_t errlen)
{
	struct rp_stream_report *r = calloc(1, sizeof(*r));
	*out = NULL;
	if (!r) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	r->o = o;
	r->folded = folded;
	r->folded_pid = with_pid;
	const struct tr_stream_sink sink = {.call = on_call, .ctx = r};
	struct tr_trace *t = tr_open_stream(path, &sink, err, errlen);
	if (t && !r->ready && prepare(r, t)) {
		snprintf(err, errlen, "%s: out of memory", path);
		tr_close(t);
		t = NULL;
	}
	if (!t) {
		rp_stream_free(r);
		return NULL;
	}
	tr_stream_get_skipped(t, &r->skipped);
	r->t = t;
	*out = r;
	return t;
}

const struct tr_stream_skipped *rp_stream_skipped(const struct rp_stream_report *r)
{
	return &r->skipped;
}

void rp_stream_free(struct rp_stream_report *r)
{
	if (!r)
		return;
	if (r->f)
		for (uint32_t i = 0; r->t && i < r->t->nfuncs; i++)
			free(r->f[i].sk);
	if (r->ready)
		rp_view_free(&r->sel);
	free(r->f);
	for (uint32_t i = 0; i < r->nheap; i++)
		free(r->heap[i].data);
	free(r->heap);
	free(r->a);
	free(r->sel_cache.thread_sel);
	free(r->per_thread.calls);
	free(r->pairs);
	free(r);
}

/* The API summary's rows from the aggregates (rp_func_stats' rows, the median estimated). */
static struct rp_fstat *summary_rows(const struct rp_stream_report *r, const struct rp_view *v, uint32_t *n)
{
	const struct tr_trace *t = r->t;
	struct rp_fstat *fs = calloc((size_t)t->nfuncs + 1, sizeof(*fs));
	*n = 0;
	if (!fs)
		return NULL;
	for (uint32_t i = 0; i < t->nfuncs; i++) {
		const struct fagg *a = &r->f[i];
		uint64_t counted = v->counted ? v->counted[i] : 0;
		if (!a->calls && !counted)
			continue;
		struct rp_fstat *s = &fs[(*n)++];
		s->func = i;
		s->calls = a->calls;
		s->counted = counted;
		s->timed = a->timed;
		s->failed = a->failed;
		if (!a->timed)
			continue;
		s->total = a->total;
		s->min = a->min;
		s->max = a->max;
		s->avg = (double)a->total / (double)a->timed;
		s->stddev = a->timed > 1 ? sqrt(a->m2 / (double)(a->timed - 1)) : 0;
		double med = rp_sketch_median(a->sk);
		s->med = med < (double)a->min ? (double)a->min : med > (double)a->max ? (double)a->max : med;
	}
	rp_sort_fstats(v, fs, *n);
	return fs;
}

static int cmp_pair(const void *a, const void *b)
{
	const struct nest_pair *x = a, *y = b;
	return nest_before(&x->first, &y->first) ? -1 : nest_before(&y->first, &x->first) ? 1 : 0;
}

/* The nesting pairs a whole read lists: the first RP_MAX_NEST it meets, in that order. */
static void order_nest(struct rp_stream_report *r)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < r->pairs_cap; i++)
		if (r->pairs[i].n.count)
			r->pairs[n++] = r->pairs[i];
	if (n)
		qsort(r->pairs, n, sizeof(*r->pairs), cmp_pair);
	r->a->nnest = n < RP_MAX_NEST ? n : RP_MAX_NEST;
	for (uint32_t i = 0; i < r->a->nnest; i++)
		r->a->nest[i] = r->pairs[i].n;
	r->npairs = r->pairs_cap = 0; /* compacted: no longer a table */
}

static void write_left_out(FILE *f, const struct rp_view *v, const struct rp_stream_report *r)
{
	rp_text_section(f, v, "Left out by the streaming report");
	fprintf(f, "  Read in bounded memory (--stream; by default for a text report of a file of %llu MiB or\n"
	           "  more). Not shown, as they need every call at once: GPU activity, memory in use, streams,\n"
	           "  devices, pipeline stages, kernels, findings, host gaps, behind the API, call sites, ioctls,\n"
	           "  timeline. --no-stream gives them (about 200 bytes of memory per call: %llu calls here).\n"
	           "  Medians are estimates within 0.8 %% (a log-bucket sketch); every other number is exact.\n",
	        (unsigned long long)(RP_STREAM_AUTO_BYTES >> 20), (unsigned long long)r->n.calls);
	const struct tr_stream_skipped *s = &r->skipped;
	if (s->gpu_blocks || s->stack_blocks || s->stack_recs)
		fprintf(f, "  Skipped: %llu GPU blocks, %llu call stack blocks and %llu STACK records.\n",
		        (unsigned long long)s->gpu_blocks,
		        (unsigned long long)s->stack_blocks, (unsigned long long)s->stack_recs);
}

/* What the writers need once the file is read: the view (the span as a whole read has it, the
 * kernel names), the summary's rows, the slowest calls in order with their DATA records side by
 * side (t->data while they are written), the nesting pairs in order. */
struct out {
	struct rp_view v;
	struct rp_fstat *fs;
	uint32_t nfs;
	const struct tr_call **slow;
	struct tr_data *data;
	uint32_t ndata;
};

static void out_free(struct out *o)
{
	free(o->data);
	free(o->slow);
	free(o->fs);
	rp_view_free(&o->v);
}

static int out_prepare(struct rp_stream_report *r, struct out *o)
{
	struct tr_trace *t = r->t;
	char err[64];
	memset(o, 0, sizeof(*o));
	if (rp_view_init(&o->v, t, r->o, err, sizeof(err)))
		return -1;
	struct rp_view *v = &o->v;
	/* the span as a whole read has it: the calls widen it (rp_trace_t0, rp_view_init) */
	if (r->n.calls) {
		if (t->first_ns < v->t0)
			v->t0 = t->first_ns;
		if (t->last_ns > v->t1)
			v->t1 = t->last_ns;
		v->base = v->t0 - v->shift;
	}
	v->streamed = &r->n;
	o->fs = summary_rows(r, v, &o->nfs);
	o->slow = malloc(((size_t)r->nheap + 1) * sizeof(*o->slow));
	uint32_t nd = 0;
	for (uint32_t i = 0; i < r->nheap; i++)
		nd += r->heap[i].c.ndata;
	o->data = malloc(((size_t)nd + 1) * sizeof(*o->data));
	if (!o->fs || !o->slow || !o->data) {
		out_free(o);
		return -1;
	}
	/* heap sort: the slowest first */
	for (uint32_t m = r->nheap; m > 1; m--) {
		swap_slow(&r->heap[0], &r->heap[m - 1]);
		heap_down(r->heap, m - 1, 0);
	}
	for (uint32_t i = 0; i < r->nheap; i++) {
		struct slow *sl = &r->heap[i];
		sl->c.args_ = sl->args;
		sl->c.data_first = sl->c.ndata ? o->ndata : TR_NONE;
		if (sl->c.ndata)
			memcpy(o->data + o->ndata, sl->data, sl->c.ndata * sizeof(*o->data));
		o->ndata += sl->c.ndata;
		o->slow[i] = &sl->c;
	}
	rp_view_take_names(v, &r->sel);
	order_nest(r);
	return 0;
}

int rp_stream_write_text(FILE *f, struct rp_stream_report *r)
{
	struct tr_trace *t = r->t;
	struct out o;
	if (out_prepare(r, &o))
		return -1;
	struct rp_view *v = &o.v;
	rp_text_header(f, v);
	rp_text_summary(f, v, o.fs, o.nfs, r->n.sel != r->n.calls);
	rp_text_categories(f, v, r->a);
	t->data = o.data;
	t->ndata = o.ndata;
	rp_text_slowest(f, v, o.slow, r->nheap);
	t->data = NULL;
	t->ndata = 0;
	rp_text_nesting(f, v, r->a);
	write_left_out(f, v, r);
	rp_text_refused(f, v);
	out_free(&o);
	return ferror(f) ? -1 : 0;
}

int rp_stream_write_json(FILE *f, struct rp_stream_report *r)
{
	struct tr_trace *t = r->t;
	struct out o;
	if (out_prepare(r, &o))
		return -1;
	const struct rp_json_streamed js = {&r->n, r->per_thread.calls, r->per_thread.n, o.slow, r->nheap};
	t->data = o.data;
	t->ndata = o.ndata;
	int rc = rp_write_json_streamed(f, &o.v, o.fs, o.nfs, r->a, &js);
	t->data = NULL;
	t->ndata = 0;
	out_free(&o);
	return rc;
}

int rp_should_stream(const struct rp_opts *o, char **files, int nfiles)
{
	if (o->stream != RP_STREAM_AUTO)
		return o->stream == RP_STREAM_ON;
	/* folded stacks add up across files; a text or json report of several files is one report */
	if ((o->format == RP_FMT_TEXT || o->format == RP_FMT_JSON) && nfiles > 1 && !o->separate)
		return 0;
	for (int i = 0; i < nfiles; i++) {
		struct stat st;
		if (stat(files[i], &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size >= RP_STREAM_AUTO_BYTES)
			return 1;
	}
	return 0;
}
