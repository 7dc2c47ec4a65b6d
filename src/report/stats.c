/* Per-function statistics for the API summary table. One pass buckets the selected calls'
 * durations by function (counting sort into one array, no allocation per function), then each
 * bucket gives total, min, max, mean, sample standard deviation and median (quickselect: O(n),
 * the order of the rest does not matter). */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void swap64(int64_t *a, int64_t *b)
{
	int64_t t = *a;
	*a = *b;
	*b = t;
}

/* The k-th smallest of a[0..n) (reorders a). Median-of-three pivots; the pivot positions are
 * varied with a cheap generator so that no fixed input pattern makes every step degenerate. */
static int64_t select_kth(int64_t *a, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;
	uint64_t rnd = 0x9e3779b97f4a7c15ull ^ n;
	while (hi > lo) {
		rnd ^= rnd << 13;
		rnd ^= rnd >> 7;
		rnd ^= rnd << 17;
		size_t span = hi - lo + 1;
		size_t i1 = lo + rnd % span, i2 = lo + (rnd >> 21) % span, i3 = lo + (rnd >> 42) % span;
		int64_t x = a[i1], y = a[i2], z = a[i3];
		int64_t pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
		/* three-way partition: [lo, lt) < pivot, [lt, gt] == pivot, (gt, hi] > pivot */
		size_t lt = lo, i = lo, gt = hi;
		while (i <= gt) {
			if (a[i] < pivot)
				swap64(&a[lt++], &a[i++]);
			else if (a[i] > pivot) {
				swap64(&a[i], &a[gt]);
				if (gt == 0)
					break;
				gt--;
			} else
				i++;
		}
		if (k < lt)
			hi = lt - 1;
		else if (k > gt)
			lo = gt + 1;
		else
			return pivot;
	}
	return a[k];
}

void rp_dist_of(struct rp_dist *s, int64_t *d, size_t n)
{
	memset(s, 0, sizeof(*s));
	if (!n)
		return;
	int64_t total = 0, mn = d[0], mx = d[0];
	for (size_t i = 0; i < n; i++) {
		total = rp_sat_add(total, d[i]);
		if (d[i] < mn)
			mn = d[i];
		if (d[i] > mx)
			mx = d[i];
	}
	s->total = total;
	s->min = mn;
	s->max = mx;
	s->avg = (double)total / (double)n;
	if (n > 1) {
		double ss = 0;
		for (size_t i = 0; i < n; i++) {
			double x = (double)d[i] - s->avg;
			ss += x * x;
		}
		s->stddev = sqrt(ss / (double)(n - 1));
	}
	int64_t lo, hi;
	rp_middle(d, n, &lo, &hi);
	s->med = ((double)lo + (double)hi) / 2;
}

static void one_func(struct rp_fstat *s, int64_t *d, size_t n)
{
	if (!n)
		return;
	struct rp_dist x;
	rp_dist_of(&x, d, n);
	s->total = x.total;
	s->min = x.min;
	s->max = x.max;
	s->avg = x.avg;
	s->med = x.med;
	s->stddev = x.stddev;
}

int64_t rp_kth(int64_t *d, size_t n, size_t k)
{
	return select_kth(d, n, k);
}

void rp_middle(int64_t *d, size_t n, int64_t *lo, int64_t *hi)
{
	*lo = *hi = select_kth(d, n, n / 2);
	if (n % 2 == 0) {
		/* the lower middle is the largest value left of position n/2 after the select */
		*lo = d[0];
		for (size_t i = 1; i < n / 2; i++)
			if (d[i] > *lo)
				*lo = d[i];
	}
}

static enum rp_sort sort_key;
static const struct tr_trace *sort_trace;

/* The --sort key, descending; 0 for a tie (and for RP_SORT_NAME). */
static int cmp_key(const struct rp_fstat *a, const struct rp_fstat *b)
{
	switch (sort_key) {
	case RP_SORT_TOTAL:
		return (a->total < b->total) - (a->total > b->total);
	case RP_SORT_CALLS: {
		/* recorded and counted calls together */
		uint64_t x = tr_sat_add_u64(a->calls, a->counted), y = tr_sat_add_u64(b->calls, b->counted);
		return (x < y) - (x > y);
	}
	case RP_SORT_AVG:
		return (a->avg < b->avg) - (a->avg > b->avg);
	case RP_SORT_MED:
		return (a->med < b->med) - (a->med > b->med);
	case RP_SORT_MIN:
		return (a->min < b->min) - (a->min > b->min);
	case RP_SORT_MAX:
		return (a->max < b->max) - (a->max > b->max);
	case RP_SORT_NAME:
		break;
	}
	return 0;
}

static int cmp_fstat(const void *pa, const void *pb)
{
	const struct rp_fstat *a = pa, *b = pb;
	int r = cmp_key(a, b);
	if (!r)
		r = strcmp(tr_func_name(sort_trace, a->func), tr_func_name(sort_trace, b->func));
	if (!r)
		r = (a->func > b->func) - (a->func < b->func);
	return r;
}

void rp_sort_fstats(const struct rp_view *v, struct rp_fstat *s, uint32_t n)
{
	sort_key = v->o->sort;
	sort_trace = v->t;
	qsort(s, n, sizeof(*s), cmp_fstat);
}

int rp_func_stats(const struct rp_view *v, struct rp_fstat **out, uint32_t *nout)
{
	const struct tr_trace *t = v->t;
	uint32_t nf = t->nfuncs;
	*out = NULL;
	*nout = 0;
	uint64_t *pos = calloc((size_t)nf + 1, sizeof(*pos));
	struct rp_fstat *all = calloc((size_t)nf + 1, sizeof(*all));
	int64_t *durs = malloc(((size_t)v->nsel + 1) * sizeof(*durs));
	if (!pos || !all || !durs) {
		free(pos);
		free(all);
		free(durs);
		return -1;
	}
	for (uint32_t i = 0; i < v->nsel; i++) {
		const struct tr_call *c = &t->calls[v->sel[i]];
		all[c->func].calls++;
		if (tr_call_timed(c)) {
			all[c->func].timed++;
			if (rp_call_failed(v, c))
				all[c->func].failed++;
		}
	}
	uint64_t sum = 0;
	for (uint32_t f = 0; f < nf; f++) {
		pos[f] = sum;
		sum += all[f].timed;
	}
	for (uint32_t i = 0; i < v->nsel; i++) {
		const struct tr_call *c = &t->calls[v->sel[i]];
		if (tr_call_timed(c))
			durs[pos[c->func]++] = tr_call_dur(c);
	}
	if (v->counted)
		for (uint32_t f = 0; f < nf; f++)
			all[f].counted = v->counted[f];
	uint32_t n = 0;
	for (uint32_t f = 0; f < nf; f++) {
		if (!all[f].calls && !all[f].counted)
			continue;
		struct rp_fstat s = all[f];
		s.func = f;
		one_func(&s, durs + pos[f] - s.timed, s.timed);
		all[n++] = s;
	}
	free(pos);
	free(durs);
	rp_sort_fstats(v, all, n);
	*out = all;
	*nout = n;
	return 0;
}

/* ---- several traces: the merged API summary --------------------------------------------------- */

struct name_ref {
	const char *name;
	uint32_t view, func;
};

static int cmp_name_ref(const void *pa, const void *pb)
{
	const struct name_ref *a = pa, *b = pb;
	int r = strcmp(a->name, b->name);
	if (!r)
		r = (a->view > b->view) - (a->view < b->view);
	if (!r)
		r = (a->func > b->func) - (a->func < b->func);
	return r;
}

static int cmp_mstat(const void *pa, const void *pb)
{
	const struct rp_mstat *a = pa, *b = pb;
	int r = cmp_key(&a->s, &b->s);
	return r ? r : strcmp(a->name, b->name);
}

static uint64_t counted_of(const struct rp_view *v, uint32_t func)
{
	return v->counted ? v->counted[func] : 0;
}

/* Functions of every trace matched by name (ids differ between traces); the statistics are
 * computed on the durations of all of them together, exactly as for one trace. */
int rp_merged_stats(const struct rp_view *views, unsigned n, struct rp_mstat **out, uint32_t *nout)
{
	*out = NULL;
	*nout = 0;
	size_t nrefs = 0, ntimed = 0;
	uint32_t **idx = calloc((size_t)n + 1, sizeof(*idx));   /* per view: func id -> merged index */
	uint64_t **cnt = calloc((size_t)n + 1, sizeof(*cnt));   /* per view: selected calls per func */
	struct name_ref *refs = NULL;
	struct rp_mstat *ms = NULL;
	uint64_t *pos = NULL;
	int64_t *durs = NULL;
	int rc = -1;
	if (!idx || !cnt)
		goto out;
	for (unsigned k = 0; k < n; k++) {
		const struct tr_trace *t = views[k].t;
		idx[k] = malloc(((size_t)t->nfuncs + 1) * sizeof(**idx));
		cnt[k] = calloc((size_t)t->nfuncs + 1, sizeof(**cnt));
		if (!idx[k] || !cnt[k])
			goto out;
		for (uint32_t i = 0; i < views[k].nsel; i++) {
			const struct tr_call *c = &t->calls[views[k].sel[i]];
			if (!cnt[k][c->func]++)
				nrefs++;
			ntimed += tr_call_timed(c);
		}
		for (uint32_t f = 0; f < t->nfuncs; f++)
			nrefs += !cnt[k][f] && counted_of(&views[k], f);
	}
	refs = malloc((nrefs + 1) * sizeof(*refs));
	ms = calloc(nrefs + 1, sizeof(*ms));
	pos = calloc(nrefs + 1, sizeof(*pos));
	durs = malloc((ntimed + 1) * sizeof(*durs));
	if (!refs || !ms || !pos || !durs)
		goto out;
	size_t r = 0;
	for (unsigned k = 0; k < n; k++)
		for (uint32_t f = 0; f < views[k].t->nfuncs; f++)
			if (cnt[k][f] || counted_of(&views[k], f))
				refs[r++] = (struct name_ref){tr_func_name(views[k].t, f), k, f};
	qsort(refs, nrefs, sizeof(*refs), cmp_name_ref);
	uint32_t m = 0;
	for (size_t i = 0; i < nrefs; i++) {
		if (!i || strcmp(refs[i].name, refs[i - 1].name)) {
			ms[m].name = refs[i].name;
			ms[m].cat = views[refs[i].view].fi[refs[i].func].cat;
			ms[m].s.func = refs[i].func;
			m++;
		}
		idx[refs[i].view][refs[i].func] = m - 1;
		ms[m - 1].nproc += !(i && !strcmp(refs[i].name, refs[i - 1].name) && refs[i].view == refs[i - 1].view);
	}
	for (unsigned k = 0; k < n; k++) {
		const struct tr_trace *t = views[k].t;
		for (uint32_t i = 0; i < views[k].nsel; i++) {
			const struct tr_call *c = &t->calls[views[k].sel[i]];
			struct rp_fstat *s = &ms[idx[k][c->func]].s;
			s->calls++;
			if (tr_call_timed(c)) {
				s->timed++;
				if (rp_call_failed(&views[k], c))
					s->failed++;
			}
		}
	}
	for (size_t i = 0; i < nrefs; i++) {
		struct rp_fstat *s = &ms[idx[refs[i].view][refs[i].func]].s;
		s->counted = tr_sat_add_u64(s->counted, counted_of(&views[refs[i].view], refs[i].func));
	}
	uint64_t sum = 0;
	for (uint32_t j = 0; j < m; j++) {
		pos[j] = sum;
		sum += ms[j].s.timed;
	}
	for (unsigned k = 0; k < n; k++) {
		const struct tr_trace *t = views[k].t;
		for (uint32_t i = 0; i < views[k].nsel; i++) {
			const struct tr_call *c = &t->calls[views[k].sel[i]];
			if (tr_call_timed(c))
				durs[pos[idx[k][c->func]]++] = tr_call_dur(c);
		}
	}
	for (uint32_t j = 0; j < m; j++)
		one_func(&ms[j].s, durs + pos[j] - ms[j].s.timed, ms[j].s.timed);
	sort_key = views[0].o->sort;
	qsort(ms, m, sizeof(*ms), cmp_mstat);
	*out = ms;
	*nout = m;
	ms = NULL;
	rc = 0;
out:
	if (idx)
		for (unsigned k = 0; k < n; k++)
			free(idx[k]);
	if (cnt)
		for (unsigned k = 0; k < n; k++)
			free(cnt[k]);
	free(idx);
	free(cnt);
	free(refs);
	free(ms);
	free(pos);
	free(durs);
	return rc;
}

/* ---- each merged function's statistics in each process ---- */

static int cmp_ms_name(const void *a, const void *b, void *ms)
{
	const struct rp_mstat *m = ms;
	return strcmp(m[*(const uint32_t *)a].name, m[*(const uint32_t *)b].name);
}

int rp_by_process(const struct rp_view *views, unsigned n, const struct rp_mstat *ms, uint32_t nms,
                  struct rp_fstat **out)
{
	*out = NULL;
	uint32_t *order = malloc(((size_t)nms + 1) * sizeof(*order));
	struct rp_fstat *cells = calloc((size_t)nms * n + 1, sizeof(*cells));
	if (!order || !cells)
		goto oom;
	for (uint32_t i = 0; i < nms; i++)
		order[i] = i;
	qsort_r(order, nms, sizeof(*order), cmp_ms_name, (void *)ms);
	for (unsigned k = 0; k < n; k++) {
		struct rp_fstat *fs;
		uint32_t nfs;
		if (rp_func_stats(&views[k], &fs, &nfs))
			goto oom;
		for (uint32_t j = 0; j < nfs; j++) {
			const char *name = tr_func_name(views[k].t, fs[j].func);
			uint32_t lo = 0, hi = nms;
			while (lo < hi) {
				uint32_t mid = lo + (hi - lo) / 2;
				int c = strcmp(ms[order[mid]].name, name);
				if (c == 0) {
					cells[(size_t)order[mid] * n + k] = fs[j];
					break;
				}
				if (c < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
		}
		free(fs);
	}
	free(order);
	*out = cells;
	return 0;
oom:
	free(order);
	free(cells);
	return -1;
}
