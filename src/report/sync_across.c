/* Several processes waiting for each other: the ranks of a job meeting at a collective.
 *
 * A rank that reaches a collective (NCCL's all-reduce behind DDP, a barrier) early cannot go on
 * until the last rank has arrived; when its host then needs the result it blocks in a
 * cu*Synchronize call that ends only after the last rank's work is in. So a moment where every
 * process waited at once leaves, in each process, one blocking sync call, and those calls overlap
 * (each started before any ended) and end close together. The process whose call started last
 * arrived last: it is the one the others waited for, and each other process waited from its own
 * start to that arrival.
 *
 * What counts as a wait: a selected, outermost, timed call of a function whose name says
 * Synchronize (cuCtxSynchronize, cuStreamSynchronize, cuEventSynchronize and their variants).
 * Polls (cuStreamQuery, cuEventQuery) return at once and do not wait for anyone. A process that
 * never waits (the job's launcher) takes no part: the others' episodes are found without it. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

struct wait {
	int64_t start, end;        /* on the common axis */
	uint32_t proc;
};

static int by_end(const void *a, const void *b)
{
	const struct wait *x = a, *y = b;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int is_wait(const struct rp_view *v, uint32_t func)
{
	return v->fi[func].cat == RP_CAT_SYNC && strstr(tr_func_name(v->t, func), "Synchronize");
}

/* Every process's waits, sorted by end. */
static struct wait *gather(const struct rp_view *views, unsigned n, struct rp_syncs *s, size_t *nw)
{
	size_t cap = 0, k = 0;
	for (unsigned p = 0; p < n; p++)
		cap += views[p].nsel;
	struct wait *w = malloc((cap ? cap : 1) * sizeof(*w));
	if (!w)
		return NULL;
	for (unsigned p = 0; p < n; p++) {
		const struct rp_view *v = &views[p];
		for (uint32_t i = 0; i < v->nsel; i++) {
			const struct tr_call *c = &v->t->calls[v->sel[i]];
			if (c->parent != TR_NONE || !tr_call_timed(c) || !is_wait(v, c->func))
				continue;
			w[k++] = (struct wait){rp_rel(v, c->start_ns), rp_rel(v, c->end_ns), p};
			s->proc[p].waits++;
		}
	}
	qsort(w, k, sizeof(*w), by_end);
	*nw = k;
	return w;
}

static int add_episode(struct rp_syncs *s, const struct rp_sync_episode *e)
{
	if (s->nep == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct rp_sync_episode *ep = realloc(s->ep, cap * sizeof(*ep));
		if (!ep)
			return -1;
		s->ep = ep;
		s->cap = cap;
	}
	s->ep[s->nep++] = *e;
	return 0;
}

/* The waits w[pick[0..n)] (one per process) make an episode when they overlap: the last start
 * comes before the first end (w[first], the earliest end of them). */
static int try_episode(struct rp_syncs *s, const struct wait *w, size_t first, const size_t *pick, unsigned n,
                       uint8_t *used)
{
	struct rp_sync_episode e = {.start = INT64_MAX, .last_arrival = INT64_MIN, .end = w[first].end};
	for (unsigned p = 0; p < n; p++) {
		if (pick[p] == SIZE_MAX)
			continue;
		const struct wait *x = &w[pick[p]];
		if (x->start < e.start)
			e.start = x->start;
		if (x->start > e.last_arrival) {
			e.last_arrival = x->start;
			e.slowest = p;
		}
	}
	if (e.last_arrival > e.end)
		return 0;
	if (add_episode(s, &e))
		return -1;
	for (unsigned p = 0; p < n; p++) {
		if (pick[p] == SIZE_MAX)
			continue;
		int64_t waited = e.last_arrival - w[pick[p]].start;
		used[pick[p]] = 1;
		s->proc[p].together++;
		s->proc[p].waited = rp_sat_add(s->proc[p].waited, waited);
		s->proc[e.slowest].caused = rp_sat_add(s->proc[e.slowest].caused, waited);
	}
	s->proc[e.slowest].last++;
	return 1;
}

int rp_sync_across(const struct rp_view *views, unsigned n, struct rp_syncs *s)
{
	memset(s, 0, sizeof(*s));
	s->window = RP_SYNC_WINDOW_NS;
	s->nproc = n;
	s->proc = calloc(n ? n : 1, sizeof(*s->proc));
	size_t nw = 0, *pick = malloc((n ? n : 1) * sizeof(*pick));
	struct wait *w = s->proc && pick ? gather(views, n, s, &nw) : NULL;
	uint8_t *used = w ? calloc(nw ? nw : 1, 1) : NULL;
	int rc = -1;
	if (!used)
		goto out;
	/* The processes that wait at all take part (a launcher, torchrun or mpirun, never does). In
	 * end order, each wait not yet in an episode tries to open one with, for every other such
	 * process, its earliest unused wait ending within the window after it. */
	unsigned parts = 0;
	for (unsigned p = 0; p < n; p++)
		parts += s->proc[p].waits > 0;
	for (size_t i = 0; parts > 1 && i < nw; i++) {
		if (used[i])
			continue;
		unsigned found = 0;
		for (unsigned p = 0; p < n; p++)
			pick[p] = SIZE_MAX;
		for (size_t j = i; j < nw && w[j].end - w[i].end <= s->window && found < parts; j++)
			if (!used[j] && pick[w[j].proc] == SIZE_MAX) {
				pick[w[j].proc] = j;
				found++;
			}
		if (found == parts && try_episode(s, w, i, pick, n, used) < 0)
			goto out;
	}
	rc = 0;
out:
	free(used);
	free(w);
	free(pick);
	if (rc)
		rp_syncs_free(s);
	return rc;
}

void rp_syncs_free(struct rp_syncs *s)
{
	free(s->proc);
	free(s->ep);
	memset(s, 0, sizeof(*s));
}
