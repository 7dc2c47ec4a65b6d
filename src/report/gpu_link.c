/* tr_gpu_link (trace_data.h): each GPU work record to the traced call that submitted it,
 * exactly, in two steps the trace's content fixes:
 *   work -> API record: CUPTI gave both the same correlation id, unique within a GPU session;
 *   API record -> call: the agent's clock stamped both CUPTI's record and cuhook's ENTRY/EXIT,
 *                       and CUPTI's record is taken inside the call, so the call of the same
 *                       thread and function holds it: entry <= start and end <= exit.
 *                       A CUDA runtime call's record is taken around the driver call the runtime
 *                       makes: the first submitting call of its thread to start inside it, and
 *                       that ends inside it too, is the one.
 * Never by nearest time: a record that no call holds stays unlinked, with the reason.
 *
 * A pure function of its arguments (no trace, no I/O), so that tests can feed it by hand.
 * Cost: O((calls + records) log records); only the calls of functions that some API record
 * names are indexed. */
#include "trace_data.h"

#include <stdlib.h>
#include <string.h>

/* A call that an API record may lie in, keyed for the search: (func, thread, start). */
struct cand {
	uint32_t func, thread;
	int64_t start;
	uint32_t call;
};

static int cmp_cand(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;
	if (a->func != b->func)
		return a->func < b->func ? -1 : 1;
	if (a->thread != b->thread)
		return a->thread < b->thread ? -1 : 1;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->call < b->call ? -1 : a->call > b->call;
}

static int cmp_u32(const void *pa, const void *pb)
{
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	return a < b ? -1 : a > b;
}

static int cmp_thread_tid(const void *pa, const void *pb, void *ctx)
{
	const struct tr_thread *th = ctx;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	if (th[a].tid != th[b].tid)
		return th[a].tid < th[b].tid ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* API records by (session, correlation), driver records before runtime ones, then file order:
 * the first of duplicates comes first. */
static int cmp_api_key(const void *pa, const void *pb, void *ctx)
{
	const struct tr_gpu_api *api = ctx;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	if (api[a].session != api[b].session)
		return api[a].session < api[b].session ? -1 : 1;
	if (api[a].correlation != api[b].correlation)
		return api[a].correlation < api[b].correlation ? -1 : 1;
	if (api[a].runtime != api[b].runtime)
		return api[a].runtime < api[b].runtime ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* Index (in threads[]) of the thread with this tid, TR_NONE if none. by_tid: sorted indices. */
static uint32_t find_thread(const struct tr_thread *threads, const uint32_t *by_tid, uint32_t n, uint32_t tid)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (threads[by_tid[mid]].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && threads[by_tid[lo]].tid == tid ? by_tid[lo] : TR_NONE;
}

/* The candidate of (func, thread) that started last at or before `at`, NULL if none. */
static const struct cand *last_started(const struct cand *c, uint32_t n, uint32_t func, uint32_t thread, int64_t at)
{
	const struct cand key = {func, thread, at, UINT32_MAX};
	uint32_t lo = 0, hi = n; /* first candidate after key */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (cmp_cand(&c[mid], &key) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || c[lo - 1].func != func || c[lo - 1].thread != thread)
		return NULL;
	return &c[lo - 1];
}

/* The first candidate of thread `thread` to start at or after `at` (the candidates of runtime
 * records: one func, 0, for all), NULL if none. */
static const struct cand *first_started(const struct cand *c, uint32_t n, uint32_t thread, int64_t at)
{
	const struct cand key = {0, thread, at, 0};
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (cmp_cand(&c[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && c[lo].thread == thread ? &c[lo] : NULL;
}

/* Index in api[] of the first record with (session, correlation), TR_NONE if none. */
static uint32_t find_api(const struct tr_gpu_api *api, const uint32_t *by_key, uint32_t n, uint32_t session,
                         uint32_t correlation)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct tr_gpu_api *a = &api[by_key[mid]];
		if (a->session < session || (a->session == session && a->correlation < correlation))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && api[by_key[lo]].session == session && api[by_key[lo]].correlation == correlation)
		return by_key[lo];
	return TR_NONE;
}

/* The candidates: calls of the functions in funcs[0, nf) (sorted), or, with submits, of those
 * whose submits[] is set (keyed with func 0: any of them), sorted; *n of them. NULL when out of
 * memory. */
static struct cand *candidates(const struct tr_call *calls, uint32_t ncalls, const uint32_t *funcs, uint32_t nf,
                               const uint8_t *submits, uint32_t nfuncs, uint32_t *n)
{
	struct cand *cand = NULL;
	uint32_t k = 0;
	for (int pass = 0; pass < 2; pass++) {
		k = 0;
		for (uint32_t i = 0; i < ncalls; i++) {
			uint32_t f = calls[i].func;
			if (submits ? f >= nfuncs || !submits[f] : !nf || !bsearch(&f, funcs, nf, sizeof(*funcs), cmp_u32))
				continue;
			if (pass)
				cand[k] = (struct cand){submits ? 0 : f, calls[i].thread, calls[i].start_ns, i};
			k++;
		}
		if (!pass && !(cand = malloc(((size_t)k + 1) * sizeof(*cand))))
			return NULL;
	}
	qsort(cand, k, sizeof(*cand), cmp_cand);
	*n = k;
	return cand;
}

/* Link one API record to the call it lies in (a runtime record: the call that lies in it), or
 * say why none. */
static void link_api(const struct tr_call *calls, const struct tr_thread *threads, const uint32_t *by_tid,
                     uint32_t nthreads, const struct cand *cand, uint32_t ncand, const struct cand *rcand,
                     uint32_t nrcand, int lost_unattributed, struct tr_gpu_api *a)
{
	a->call = TR_NONE;
	uint32_t th = find_thread(threads, by_tid, nthreads, a->tid);
	if (th == TR_NONE) {
		a->link = lost_unattributed ? TR_GPU_CALL_DROPPED : TR_GPU_NO_CALL;
		return;
	}
	if (a->runtime) {
		const struct cand *c = first_started(rcand, nrcand, th, a->start_ns);
		if (c && calls[c->call].start_ns > a->end_ns)
			c = NULL; /* it started after the runtime call had returned */
		if (c && tr_call_timed(&calls[c->call]) && calls[c->call].end_ns <= a->end_ns) {
			a->link = TR_GPU_LINKED;
			a->call = c->call;
		} else if ((c && !tr_call_timed(&calls[c->call])) || (!c && (threads[th].dropped || lost_unattributed)))
			a->link = TR_GPU_CALL_DROPPED;
		else
			a->link = TR_GPU_NO_CALL;
		return;
	}
	const struct cand *c = a->func == UINT32_MAX ? NULL : last_started(cand, ncand, a->func, th, a->start_ns);
	if (c && tr_call_timed(&calls[c->call]) && a->end_ns <= calls[c->call].end_ns) {
		a->link = TR_GPU_LINKED;
		a->call = c->call;
		return;
	}
	/* The call that would hold it has no EXIT (lost, or entry-only): it cannot be checked. */
	if (c && !tr_call_timed(&calls[c->call]))
		a->link = TR_GPU_CALL_DROPPED;
	else if (a->func != UINT32_MAX && (threads[th].dropped || lost_unattributed))
		a->link = TR_GPU_CALL_DROPPED;
	else
		a->link = TR_GPU_NO_CALL;
}

int tr_gpu_link(const struct tr_call *calls, uint32_t ncalls, const struct tr_thread *threads, uint32_t nthreads,
                const uint8_t *submits, uint32_t nfuncs, int lost_unattributed, struct tr_gpu_api *api, uint32_t napi,
                struct tr_gpu_work *work, uint32_t nwork, struct tr_gpu_link_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (uint32_t i = 0; i < nwork; i++) {
		work[i].api = work[i].call = TR_NONE;
		work[i].link = TR_GPU_NO_API;
	}
	for (uint32_t i = 0; i < napi; i++) {
		api[i].call = TR_NONE;
		api[i].link = TR_GPU_NO_CALL;
	}
	uint32_t *funcs = malloc(((size_t)napi + 1) * sizeof(*funcs));
	uint32_t *by_tid = malloc(((size_t)nthreads + 1) * sizeof(*by_tid));
	uint32_t *by_key = malloc(((size_t)napi + 1) * sizeof(*by_key));
	struct cand *cand = NULL, *rcand = NULL;
	uint32_t nf = 0, ncand = 0, nrcand = 0, nruntime = 0;
	int rc = -1;
	if (!funcs || !by_tid || !by_key)
		goto out;
	/* the functions driver API records name, sorted and unique */
	for (uint32_t i = 0; i < napi; i++) {
		nruntime += api[i].runtime;
		if (api[i].func != UINT32_MAX && !api[i].runtime)
			funcs[nf++] = api[i].func;
	}
	qsort(funcs, nf, sizeof(*funcs), cmp_u32);
	uint32_t u = 0;
	for (uint32_t i = 0; i < nf; i++)
		if (!u || funcs[i] != funcs[u - 1])
			funcs[u++] = funcs[i];
	nf = u;
	/* their calls; and the submitting calls that runtime records may hold */
	if (!(cand = candidates(calls, ncalls, funcs, nf, NULL, 0, &ncand)))
		goto out;
	if (nruntime && submits && !(rcand = candidates(calls, ncalls, NULL, 0, submits, nfuncs, &nrcand)))
		goto out;
	for (uint32_t i = 0; i < nthreads; i++)
		by_tid[i] = i;
	qsort_r(by_tid, nthreads, sizeof(*by_tid), cmp_thread_tid, (void *)threads);
	for (uint32_t i = 0; i < napi; i++) {
		link_api(calls, threads, by_tid, nthreads, cand, ncand, rcand, nrcand, lost_unattributed, &api[i]);
		st->api[api[i].link]++;
	}
	for (uint32_t i = 0; i < napi; i++)
		by_key[i] = i;
	qsort_r(by_key, napi, sizeof(*by_key), cmp_api_key, api);
	for (uint32_t i = 1; i < napi; i++)
		if (api[by_key[i]].session == api[by_key[i - 1]].session &&
		    api[by_key[i]].correlation == api[by_key[i - 1]].correlation &&
		    api[by_key[i]].runtime == api[by_key[i - 1]].runtime)
			st->duplicate_api++;
	for (uint32_t i = 0; i < nwork; i++) {
		struct tr_gpu_work *w = &work[i];
		uint32_t a = find_api(api, by_key, napi, w->session, w->correlation);
		if (a != TR_NONE) {
			w->api = a;
			w->link = api[a].link;
			w->call = api[a].call;
			st->via_runtime += api[a].runtime && w->link == TR_GPU_LINKED;
		}
		st->work[w->link]++;
	}
	rc = 0;
out:
	free(funcs);
	free(by_tid);
	free(by_key);
	free(cand);
	free(rcand);
	return rc;
}
