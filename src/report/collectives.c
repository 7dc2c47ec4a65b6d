/* The ranks of a job meeting at their collectives, matched by order.
 *
 * Every rank of a job runs the same sequence of NCCL collectives (all-reduce, broadcast,
 * all-gather...), each a kernel launch whose name starts ncclDevKernel_ (ncclKernel_ before NCCL
 * 2.19). The k-th NCCL kernel of each process is therefore one collective: it cannot finish on any
 * rank before the last rank has arrived, so the rank that arrived last is the one the others
 * waited for, and each other rank waited from its own arrival to that one. This needs no host
 * wait at all: the slow rank of a DDP step typically never blocks (it is the one being waited
 * for), and the early ones often wait on the GPU, not in a cu*Synchronize call, which is why
 * sync_across.c alone can find nothing there.
 *
 * Arrival: with the GPU's own timeline (--gpu) the start of the rank's NCCL kernel on its device
 * (the kernel then spins until the peers join), when every matched collective of every process
 * has one; otherwise the start of the launch call on the host, which is when the rank reached the
 * collective in its program. Matching stops at the first position where the processes' kernel
 * names differ (ranks in different communicators interleave their collectives differently).
 * Processes without any NCCL kernel (the launcher: torchrun, mpirun) take no part. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

/* One NCCL kernel of one process, in the order its launch calls started. */
struct coll_kernel {
	int64_t host, gpu;          /* arrival on the common axis: launch call start, GPU start or -1 */
	const char *name;           /* mangled, as recorded */
	uint16_t len;
};

struct coll_seq {
	struct coll_kernel *k;
	size_t n;
};

/* "ncclDevKernel_..." or "ncclKernel_...", mangled (_Z<len>nccl...) or not. */
int rp_is_nccl_kernel(const char *s, size_t len)
{
	if (len > 2 && s[0] == '_' && s[1] == 'Z') {
		size_t i = 2;
		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++;
		s += i;
		len -= i;
	}
	return (len >= 14 && !memcmp(s, "ncclDevKernel_", 14)) || (len >= 11 && !memcmp(s, "ncclKernel_", 11));
}

/* (call index, GPU start) of the NCCL kernels that GPU records link to a call, sorted by call. */
struct call_gpu {
	uint32_t call;
	uint32_t work;
};

static int by_call(const void *a, const void *b)
{
	const struct call_gpu *x = a, *y = b;
	return x->call < y->call ? -1 : x->call > y->call;
}

static struct call_gpu *gpu_by_call(const struct tr_trace *t, size_t *n)
{
	size_t k = 0;
	struct call_gpu *m = malloc((t->ngpu_work ? t->ngpu_work : 1) * sizeof(*m));
	if (!m)
		return NULL;
	for (uint32_t i = 0; i < t->ngpu_work; i++) {
		const struct tr_gpu_work *w = &t->gpu_work[i];
		const char *name = tr_gpu_work_name(t, w);
		if (w->call != TR_NONE && name && rp_is_nccl_kernel(name, strlen(name)))
			m[k++] = (struct call_gpu){w->call, i};
	}
	qsort(m, k, sizeof(*m), by_call);
	*n = k;
	return m;
}

static const struct call_gpu *find_gpu(const struct call_gpu *m, size_t n, uint32_t call)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m[mid].call < call)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && m[lo].call == call ? &m[lo] : NULL;
}

/* A process's NCCL kernels: its selected launch calls whose kernel is NCCL's, by the handle's
 * name the trace gives, else by the name of the GPU work linked to the call. */
static int gather(const struct rp_view *v, struct coll_seq *s)
{
	const struct tr_trace *t = v->t;
	size_t nm = 0, cap = 0;
	struct call_gpu *m = gpu_by_call(t, &nm);
	if (!m)
		return -1;
	for (uint32_t i = 0; i < v->nsel; i++) {
		uint32_t ci = v->sel[i];
		const struct tr_call *c = &t->calls[ci];
		const struct rp_finfo *fi = &v->fi[c->func];
		if (fi->kind != RP_KIND_LAUNCH || fi->l.func_arg < 0)
			continue;
		const char *name = NULL;
		uint16_t len = 0;
		const struct call_gpu *g = find_gpu(m, nm, ci);
		if (!rp_kernel_name(v, tr_call_arg(c, (unsigned)fi->l.func_arg), &name, &len) ||
		    !rp_is_nccl_kernel(name, len)) {
			if (!g)
				continue;
			name = tr_gpu_work_name(t, &t->gpu_work[g->work]);
			size_t l = strlen(name);
			len = (uint16_t)(l > UINT16_MAX ? UINT16_MAX : l);
		}
		if (s->n == cap) {
			cap = cap ? 2 * cap : 64;
			struct coll_kernel *k = realloc(s->k, cap * sizeof(*k));
			if (!k) {
				free(m);
				return -1;
			}
			s->k = k;
		}
		s->k[s->n++] = (struct coll_kernel){rp_rel(v, c->start_ns), g ? rp_rel(v, t->gpu_work[g->work].start_ns) : -1,
		                                    name, len};
	}
	free(m);
	return 0;
}

static int same_name(const struct coll_kernel *a, const struct coll_kernel *b)
{
	return a->len == b->len && !memcmp(a->name, b->name, a->len);
}

int rp_collectives(const struct rp_view *views, unsigned n, struct rp_colls *out)
{
	memset(out, 0, sizeof(*out));
	out->nproc = n;
	out->mismatch = SIZE_MAX;
	struct coll_seq *seq = calloc(n ? n : 1, sizeof(*seq));
	out->proc = calloc(n ? n : 1, sizeof(*out->proc));
	int rc = -1;
	if (!seq || !out->proc)
		goto done;
	/* the processes that launched NCCL kernels take part; the others (a launcher: torchrun, mpirun)
	 * have nothing to match */
	size_t matched = SIZE_MAX;
	unsigned first = n, parts = 0;
	for (unsigned p = 0; p < n; p++) {
		if (gather(&views[p], &seq[p]))
			goto done;
		out->proc[p].kernels = seq[p].n;
		if (!seq[p].n)
			continue;
		parts++;
		if (first == n)
			first = p;
		if (seq[p].n < matched)
			matched = seq[p].n;
	}
	if (parts < 2)
		matched = 0;
	for (size_t k = 0; k < matched; k++)
		for (unsigned p = first + 1; p < n; p++)
			if (seq[p].n && !same_name(&seq[first].k[k], &seq[p].k[k])) {
				out->mismatch = k;
				matched = k;
				break;
			}
	/* GPU arrivals only when every matched collective has one on every process */
	out->gpu = matched > 0;
	for (size_t k = 0; k < matched && out->gpu; k++)
		for (unsigned p = 0; p < n; p++)
			if (seq[p].n && seq[p].k[k].gpu < 0) {
				out->gpu = 0;
				break;
			}
	out->c = malloc((matched ? matched : 1) * sizeof(*out->c));
	if (!out->c)
		goto done;
	for (size_t k = 0; k < matched; k++) {
		struct rp_coll *c = &out->c[k];
		*c = (struct rp_coll){.first = INT64_MAX, .last = INT64_MIN, .name = seq[first].k[k].name,
		                      .len = seq[first].k[k].len};
		for (unsigned p = 0; p < n; p++) {
			if (!seq[p].n)
				continue;
			int64_t a = out->gpu ? seq[p].k[k].gpu : seq[p].k[k].host;
			if (a < c->first)
				c->first = a;
			if (a > c->last) {
				c->last = a;
				c->slowest = p;
			}
		}
		for (unsigned p = 0; p < n; p++) {
			if (!seq[p].n)
				continue;
			int64_t waited = c->last - (out->gpu ? seq[p].k[k].gpu : seq[p].k[k].host);
			out->proc[p].waited = rp_sat_add(out->proc[p].waited, waited);
			out->proc[c->slowest].caused = rp_sat_add(out->proc[c->slowest].caused, waited);
		}
		out->proc[c->slowest].last++;
	}
	out->n = matched;
	rc = 0;
done:
	if (seq)
		for (unsigned p = 0; p < n; p++)
			free(seq[p].k);
	free(seq);
	if (rc)
		rp_colls_free(out);
	return rc;
}

void rp_colls_free(struct rp_colls *s)
{
	free(s->c);
	free(s->proc);
	memset(s, 0, sizeof(*s));
}
