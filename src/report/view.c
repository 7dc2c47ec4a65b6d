/* A trace with the report's options applied (struct rp_view): which calls are selected, in
 * start-time order across threads, plus per-function facts and the kernel-name map that every
 * section needs. */
#include "report.h"

#include "export_names.h"
#include "glob_filter.h"

#include <stdlib.h>
#include <string.h>

struct rp_name_slot {
	uint64_t handle;   /* 0: empty (a null handle is never a kernel) */
	const char *name;  /* into the trace's bytes, not NUL-terminated */
	uint16_t len;
};

/* ---- kernel names ---------------------------------------------------------------------------- */

static uint32_t name_slot(uint64_t h, uint32_t mask)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return (uint32_t)h & mask;
}

static int name_put(struct rp_view *v, uint64_t handle, const char *name, uint16_t len)
{
	if (!handle)
		return 0;
	if ((v->nnames + 1) * 2 > v->names_cap) {
		uint32_t ncap = v->names_cap ? v->names_cap * 2 : 256;
		struct rp_name_slot *n = calloc(ncap, sizeof(*n));
		if (!n)
			return -1;
		for (uint32_t i = 0; i < v->names_cap; i++) {
			if (!v->names[i].handle)
				continue;
			uint32_t s = name_slot(v->names[i].handle, ncap - 1);
			while (n[s].handle)
				s = (s + 1) & (ncap - 1);
			n[s] = v->names[i];
		}
		free(v->names);
		v->names = n;
		v->names_cap = ncap;
	}
	uint32_t mask = v->names_cap - 1, s = name_slot(handle, mask);
	while (v->names[s].handle && v->names[s].handle != handle)
		s = (s + 1) & mask;
	if (!v->names[s].handle)
		v->nnames++;
	/* A handle can be reused after a module unload: the latest name wins. */
	v->names[s].handle = handle;
	v->names[s].name = name;
	v->names[s].len = len;
	return 0;
}

int rp_kernel_name(const struct rp_view *v, uint64_t handle, const char **name, uint16_t *len)
{
	if (!handle || !v->names_cap)
		return 0;
	uint32_t mask = v->names_cap - 1;
	for (uint32_t s = name_slot(handle, mask); v->names[s].handle; s = (s + 1) & mask)
		if (v->names[s].handle == handle) {
			*name = v->names[s].name;
			*len = v->names[s].len;
			return 1;
		}
	return 0;
}

int rp_call_kernel(const struct rp_view *v, const struct tr_call *c, const char **name, uint16_t *len)
{
	const struct rp_finfo *fi = &v->fi[c->func];
	return fi->kind == RP_KIND_LAUNCH && fi->l.func_arg >= 0 &&
	       rp_kernel_name(v, tr_call_arg(c, (unsigned)fi->l.func_arg), name, len);
}

static uint8_t namer_of(const char *name)
{
	char base[128];
	rp_base_name(name, base, sizeof(base));
	if (!strcmp(base, "cuModuleGetFunction"))
		return RP_NAMER_GET_FUNCTION;
	if (!strcmp(base, "cuLibraryGetKernel"))
		return RP_NAMER_GET_KERNEL;
	if (!strcmp(base, "cuFuncGetName") || !strcmp(base, "cuKernelGetName"))
		return RP_NAMER_GET_NAME;
	if (!strcmp(base, "cuKernelGetFunction"))
		return RP_NAMER_KERNEL_TO_FUNCTION;
	return RP_NAMER_NONE;
}

/* The name call c gives a kernel handle, if it is one that names kernels (enum rp_namer): round 1
 * functions and kernels named at lookup, round 2 cuKernelGetFunction, which turns an already named
 * kernel into a function handle. *h set, and *s, *n the name, when it gives one. */
static int name_of_call(const struct rp_view *v, const struct tr_call *c, int round, uint64_t *h, const char **s,
                        uint16_t *n)
{
	const struct tr_trace *t = v->t;
	uint8_t role = v->fi[c->func].names_kernel;
	if (role == RP_NAMER_NONE)
		return 0;
	if (round == 1) {
		if ((role == RP_NAMER_GET_FUNCTION && tr_call_data_value(t, c, "function", h)) ||
		    (role == RP_NAMER_GET_KERNEL && tr_call_data_value(t, c, "kernel", h)))
			return tr_call_data_str(t, c, "name", s, n);
		if (role == RP_NAMER_GET_NAME) {
			/* (const char **name, handle): the name is read at exit */
			*h = tr_call_arg(c, 1);
			return tr_call_data_str(t, c, "name", s, n);
		}
		return 0;
	}
	return role == RP_NAMER_KERNEL_TO_FUNCTION && tr_call_data_value(t, c, "function", h) &&
	       rp_kernel_name(v, tr_call_arg(c, 1), s, n);
}

/* handle -> name from the calls that create or name kernels (all calls, not only the selected
 * ones: a launch in the selected range names a function looked up before it). */
static int build_names(struct rp_view *v)
{
	struct tr_trace *t = v->t;
	/* The names the agent asked the driver for (KNAMES): first, so that a name the program's
	 * own lookup recorded is the one kept (they agree). */
	for (uint32_t i = 0; i < t->nknames; i++)
		if (name_put(v, t->knames[i].handle, t->knames[i].name, t->knames[i].len))
			return -1;
	if (t->stream_)
		return 0; /* the calls come later: rp_view_name_call */
	for (int round = 1; round <= 2; round++) {
		uint32_t prev = TR_NONE;
		for (uint32_t i = 0; i < t->ndata; i++) {
			uint32_t ci = t->data[i].call;
			if (ci == prev)
				continue;
			prev = ci;
			const char *s;
			uint16_t n;
			uint64_t h;
			if (name_of_call(v, &t->calls[ci], round, &h, &s, &n) && name_put(v, h, s, n))
				return -1;
		}
	}
	return 0;
}

/* A name copied for a streamed view (the call's DATA records go after the callback). */
struct rp_name_copy {
	struct rp_name_copy *next;
	char s[];
};

int rp_view_name_call(struct rp_view *v, const struct tr_call *c)
{
	for (int round = 1; round <= 2; round++) {
		const char *s, *have;
		uint16_t n, hn;
		uint64_t h;
		if (!name_of_call(v, c, round, &h, &s, &n) || !h)
			continue;
		/* the same name again (a program looking a kernel up at every launch): nothing to copy */
		if (rp_kernel_name(v, h, &have, &hn) && hn == n && !memcmp(have, s, n))
			continue;
		struct rp_name_copy *nc = malloc(sizeof(*nc) + n + 1u);
		if (!nc)
			return -1;
		memcpy(nc->s, s, n);
		nc->s[n] = 0;
		nc->next = v->name_copies;
		v->name_copies = nc;
		if (name_put(v, h, nc->s, n))
			return -1;
	}
	return 0;
}

void rp_view_take_names(struct rp_view *dst, struct rp_view *src)
{
	free(dst->names);
	dst->names = src->names;
	dst->names_cap = src->names_cap;
	dst->nnames = src->nnames;
	dst->name_copies = src->name_copies; /* dst has none: its trace's calls came to src */
	src->names = NULL;
	src->names_cap = src->nnames = 0;
	src->name_copies = NULL;
}

/* ---- selection ------------------------------------------------------------------------------- */

int rp_thread_selected(const struct rp_view *v, uint32_t thread)
{
	const struct tr_thread *th = &v->t->threads[thread];
	const char *list = v->o->threads;
	if (!list || !*list)
		return 1;
	char tid[16];
	snprintf(tid, sizeof(tid), "%u", th->tid);
	const char *names[] = {tid, th->name};
	return glob_filter_match_any(list, names, th->name[0] ? 2 : 1);
}

/* Merge the threads' call lists (each already in start order) into one list in start order:
 * a binary heap of thread heads, O(n log threads). */
struct head {
	int64_t start;
	uint32_t thread, pos;
};

static int head_less(const struct head *a, const struct head *b)
{
	return a->start != b->start ? a->start < b->start : a->thread < b->thread;
}

static void sift_down(struct head *h, uint32_t n, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && head_less(&h[l], &h[m]))
			m = l;
		if (r < n && head_less(&h[r], &h[m]))
			m = r;
		if (m == i)
			return;
		struct head tmp = h[i];
		h[i] = h[m];
		h[m] = tmp;
		i = m;
	}
}

int rp_count_in_view(const struct rp_view *v, const struct tr_count *c)
{
	if (!rp_thread_selected(v, c->thread))
		return 0;
	if (v->o->has_range) {
		int64_t rel = rp_rel(v, c->ns);
		if (rel < v->o->range_start_ns || rel >= v->o->range_end_ns)
			return 0;
	}
	return 1;
}

/* Counted calls (COUNTS entries) under the same options as calls: function, thread, and the
 * time the writer read the counters for --time-range. */
static int select_counts(struct rp_view *v, const uint8_t *func_ok)
{
	const struct tr_trace *t = v->t;
	v->counted = calloc((size_t)t->nfuncs + 1, sizeof(*v->counted));
	if (!v->counted)
		return -1;
	for (uint32_t i = 0; i < t->ncounts; i++) {
		const struct tr_count *c = &t->counts[i];
		if ((func_ok && !func_ok[c->func]) || v->fi[c->func].ioctl || !rp_count_in_view(v, c))
			continue;
		v->counted[c->func] = tr_sat_add_u64(v->counted[c->func], c->calls);
		v->ncounted = tr_sat_add_u64(v->ncounted, c->calls);
	}
	return 0;
}

static int build_selection(struct rp_view *v)
{
	struct tr_trace *t = v->t;
	uint32_t nth = t->nthreads;
	uint8_t *func_ok = NULL; /* kept as v->func_ok: the GPU side selects by it too */
	v->sel = malloc(((size_t)t->ncalls + 1) * sizeof(*v->sel));
	struct head *heap = malloc(((size_t)nth + 1) * sizeof(*heap));
	const uint32_t **lists = calloc((size_t)nth + 1, sizeof(*lists));
	uint32_t *lens = calloc((size_t)nth + 1, sizeof(*lens));
	if (!v->sel || !heap || !lists || !lens)
		goto oom;
	if (v->has_ioctl && !(v->xsel = malloc(((size_t)t->ncalls + 1) * sizeof(*v->xsel))))
		goto oom;
	/* --functions once per function id rather than once per call */
	if (v->o->functions && *v->o->functions) {
		func_ok = malloc(t->nfuncs + 1);
		if (!func_ok)
			goto oom;
		for (uint32_t i = 0; i < t->nfuncs; i++)
			func_ok[i] = (uint8_t)glob_filter_match(v->o->functions, tr_func_name(t, i));
	}
	uint32_t nh = 0;
	for (uint32_t i = 0; i < nth; i++) {
		if (!rp_thread_selected(v, i))
			continue;
		lists[i] = tr_thread_calls(t, i, &lens[i]);
		if (!lists[i] && t->threads[i].ncalls)
			goto oom;
		if (lens[i])
			heap[nh++] = (struct head){t->calls[lists[i][0]].start_ns, i, 0};
	}
	for (uint32_t i = nh; i-- > 0;)
		sift_down(heap, nh, i);
	const struct rp_opts *o = v->o;
	while (nh) {
		struct head *h = &heap[0];
		uint32_t ci = lists[h->thread][h->pos];
		const struct tr_call *c = &t->calls[ci];
		int ok = 1;
		if (o->has_range) {
			int64_t rel = rp_rel(v, c->start_ns);
			ok = rel >= o->range_start_ns && rel < o->range_end_ns;
		}
		if (ok && func_ok)
			ok = func_ok[c->func];
		if (ok && v->xsel)
			v->xsel[v->nxsel++] = ci;
		if (ok && !v->fi[c->func].ioctl)
			v->sel[v->nsel++] = ci;
		if (++h->pos < lens[h->thread])
			h->start = t->calls[lists[h->thread][h->pos]].start_ns;
		else
			heap[0] = heap[--nh];
		sift_down(heap, nh, 0);
	}
	if (t->ncounts && select_counts(v, func_ok))
		goto oom;
	v->func_ok = func_ok;
	free(heap);
	free(lists);
	free(lens);
	if (!v->has_ioctl) {
		v->xsel = v->sel;
		v->nxsel = v->nsel;
	}
	return 0;
oom:
	free(func_ok);
	free(heap);
	free(lists);
	free(lens);
	return -1;
}

/* ---- thread labels --------------------------------------------------------------------------- */

static const struct tr_trace *name_sort_trace;

static int cmp_thread_name(const void *a, const void *b)
{
	return strcmp(name_sort_trace->threads[*(const uint32_t *)a].name,
	              name_sort_trace->threads[*(const uint32_t *)b].name);
}

/* Mark the threads whose name another thread shares (worker pools often all have one name). */
static int find_dup_names(struct rp_view *v)
{
	const struct tr_trace *t = v->t;
	uint32_t n = t->nthreads;
	v->thread_dup = calloc((size_t)n + 1, 1);
	uint32_t *idx = malloc(((size_t)n + 1) * sizeof(*idx));
	if (!v->thread_dup || !idx) {
		free(idx);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++)
		idx[i] = i;
	name_sort_trace = t;
	qsort(idx, n, sizeof(*idx), cmp_thread_name);
	for (uint32_t i = 1; i < n; i++)
		if (!strcmp(t->threads[idx[i]].name, t->threads[idx[i - 1]].name))
			v->thread_dup[idx[i]] = v->thread_dup[idx[i - 1]] = 1;
	free(idx);
	return 0;
}

const char *rp_proc_label(const struct rp_view *v, char *buf, size_t len)
{
	if (v->rank >= 0)
		snprintf(buf, len, "rank %ld (pid %u)", v->rank, v->t->pid);
	else
		snprintf(buf, len, "pid %u", v->t->pid);
	return buf;
}

const char *rp_thread_label(const struct rp_view *v, uint32_t thread, char *buf, size_t len)
{
	const struct tr_thread *th = &v->t->threads[thread];
	if (!th->name[0])
		snprintf(buf, len, "%u", th->tid);
	else if (v->thread_dup && v->thread_dup[thread])
		snprintf(buf, len, "%s/%u", th->name, th->tid);
	else
		snprintf(buf, len, "%s", th->name);
	return buf;
}

/* What a function's name (and library) says about it. */
static void finfo_of(struct rp_view *v, const char *name, uint32_t lib_id, int defined, struct rp_finfo *fi)
{
	const struct tr_trace *t = v->t;
	int a = -1, b = -1;
	memset(fi, 0, sizeof(*fi));
	fi->cat = (uint8_t)rp_cat_of(name);
	fi->submission = (uint8_t)rp_is_submission(name);
	char base[128];
	fi->graph_launch = !strcmp(rp_base_name(name, base, sizeof(base)), "cuGraphLaunch");
	fi->oneoff = (uint8_t)rp_oneoff_of(name);
	if (rp_xfer_of(name, &fi->x))
		fi->kind = RP_KIND_XFER;
	else if (rp_alloc_of(name, &a, &b))
		fi->kind = RP_KIND_ALLOC;
	else if (rp_launch_of(name, &fi->l))
		fi->kind = RP_KIND_LAUNCH;
	else if (rp_is_release(name))
		fi->kind = RP_KIND_RELEASE;
	fi->alloc_arg = (int8_t)a;
	fi->alloc_arg2 = (int8_t)b;
	fi->names_kernel = namer_of(name);
	fi->ret_unknown = !strncmp(name, EXPORT_NAME_PREFIX, strlen(EXPORT_NAME_PREFIX));
	for (uint32_t k = 0; defined && k < t->nlibs; k++)
		if (t->libs[k].id == lib_id && (t->libs[k].flags & CUHOOK_LIB_IOCTL)) {
			fi->ioctl = 1;
			v->has_ioctl = 1;
		}
}

int64_t rp_trace_t0(const struct tr_trace *t)
{
	int64_t t0 = t->start_monotonic_ns > (uint64_t)TR_NS_LIMIT ? 0 : (int64_t)t->start_monotonic_ns;
	if (t->ncalls && t->first_ns < t0)
		t0 = t->first_ns;
	return t0;
}

/* Realtime alignment: the trace's start on a realtime axis is t0 + (realtime - monotonic). All
 * terms are within +-2^62, computed in 128 bits; a shift beyond TR_NS_LIMIT (only hostile files:
 * traces 146 years apart) is clamped. */
int rp_align(struct tr_trace *const *traces, unsigned n, const struct rp_opts *o, int64_t *shift)
{
	int realtime = !o->align_monotonic;
	for (unsigned k = 0; k < n; k++)
		if (!traces[k]->has_realtime)
			realtime = 0;
	__int128 origin = 0;
	for (unsigned k = 0; k < n; k++) {
		__int128 key = (__int128)rp_trace_t0(traces[k]) + (realtime ? traces[k]->realtime_offset_ns : 0);
		if (!k || key < origin)
			origin = key;
	}
	for (unsigned k = 0; k < n; k++) {
		__int128 key = (__int128)rp_trace_t0(traces[k]) + (realtime ? traces[k]->realtime_offset_ns : 0);
		__int128 d = key - origin;
		shift[k] = d > TR_NS_LIMIT ? TR_NS_LIMIT : (int64_t)d;
	}
	return realtime;
}

/* The process's rank in its job: the agent's "job: rank=R[ world=W]..." NOTE (job_env.c), the
 * first one; anything else there leaves -1. */
static void find_job(struct rp_view *v)
{
	v->rank = v->world = -1;
	for (uint32_t i = 0; i < v->t->nnotes; i++) {
		const char *s = v->t->notes[i].text;
		long r, w;
		int n = 0;
		if (!s || strncmp(s, "job: rank=", 10) || sscanf(s + 10, "%9ld%n", &r, &n) != 1 || r < 0)
			continue;
		v->rank = r;
		if (sscanf(s + 10 + n, " world=%9ld", &w) == 1 && w > r)
			v->world = w;
		return;
	}
}

int rp_view_init(struct rp_view *v, struct tr_trace *t, const struct rp_opts *o, char *err, size_t errlen)
{
	return rp_view_init_at(v, t, o, 0, err, errlen);
}

int rp_view_init_at(struct rp_view *v, struct tr_trace *t, const struct rp_opts *o, int64_t shift, char *err,
                    size_t errlen)
{
	memset(v, 0, sizeof(*v));
	v->t = t;
	v->o = o;
	v->t0 = rp_trace_t0(t);
	v->t1 = t->ncalls && t->last_ns > v->t0 ? t->last_ns : v->t0;
	for (uint32_t i = 0; i < t->ncounts; i++)
		if (t->counts[i].ns > v->t1)
			v->t1 = t->counts[i].ns;
	/* the GPU's work and its sessions' ends belong to the run too */
	for (uint32_t i = 0; i < t->ngpu_work; i++)
		if (t->gpu_work[i].end_ns > v->t1)
			v->t1 = t->gpu_work[i].end_ns;
	for (uint32_t i = 0; i < t->ngpu_sessions; i++)
		if (t->gpu_sessions[i].stop_ns > v->t1)
			v->t1 = t->gpu_sessions[i].stop_ns;
	find_job(v);
	v->shift = shift < 0 ? 0 : shift > TR_NS_LIMIT ? TR_NS_LIMIT : shift;
	v->base = v->t0 - v->shift; /* t0 >= -2^62, shift <= 2^62: fits */
	v->fi = calloc((size_t)t->nfuncs + 1, sizeof(*v->fi));
	if (!v->fi)
		goto oom;
	/* Ids no FUNCS block defined (name "") all get the same: computed once, since a hostile
	 * file can make 2^20 of them (the name rules cost ~0.5 us each: 0.5 s per report). */
	struct rp_finfo undef;
	finfo_of(v, "", 0, 0, &undef);
	for (uint32_t i = 0; i < t->nfuncs; i++) {
		if (!t->funcs[i].defined || !t->funcs[i].name)
			v->fi[i] = undef;
		else
			finfo_of(v, t->funcs[i].name, t->funcs[i].lib_id, 1, &v->fi[i]);
	}
	if (find_dup_names(v) || build_names(v) || build_selection(v))
		goto oom;
	return 0;
oom:
	snprintf(err, errlen, "%s: out of memory", t->path);
	rp_view_free(v);
	return -1;
}

const char *rp_call_category(const struct rp_view *v, uint32_t func)
{
	return v->fi[func].ioctl ? "ioctl" : rp_cat_names[v->fi[func].cat];
}

void rp_view_free(struct rp_view *v)
{
	if (v->xsel != v->sel)
		free(v->xsel);
	free(v->sel);
	free(v->fi);
	free(v->counted);
	free(v->thread_dup);
	free(v->names);
	free(v->func_ok);
	while (v->name_copies) {
		struct rp_name_copy *nc = v->name_copies;
		v->name_copies = nc->next;
		free(nc);
	}
	memset(v, 0, sizeof(*v));
}

int rp_thread_slices(const struct rp_view *v, uint32_t thread, const uint8_t *selected,
                     void (*fn)(void *ctx, uint32_t call, enum rp_slice_event what, int64_t ns), void *ctx)
{
	const struct tr_trace *t = v->t;
	uint32_t n;
	const uint32_t *calls = tr_thread_calls((struct tr_trace *)t, thread, &n); /* its index is built on first use */
	uint32_t *open = malloc(((size_t)n + 1) * sizeof(*open)), nopen = 0;
	if (!open)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		const struct tr_call *c = &t->calls[calls[i]];
		if (!selected[calls[i]])
			continue;
		while (nopen && t->calls[open[nopen - 1]].end_ns <= c->start_ns) {
			nopen--;
			fn(ctx, open[nopen], RP_SLICE_END, t->calls[open[nopen]].end_ns);
		}
		if (!tr_call_timed(c)) {
			fn(ctx, calls[i], RP_SLICE_INSTANT, c->start_ns);
			continue;
		}
		/* a child that outlives its parent (corrupt times) would break the nesting: close the
		 * open calls that end before it does */
		while (nopen && t->calls[open[nopen - 1]].end_ns < c->end_ns)
			fn(ctx, open[--nopen], RP_SLICE_END, c->start_ns);
		fn(ctx, calls[i], RP_SLICE_BEGIN, c->start_ns);
		open[nopen++] = calls[i];
	}
	while (nopen) {
		nopen--;
		fn(ctx, open[nopen], RP_SLICE_END, t->calls[open[nopen]].end_ns);
	}
	free(open);
	return 0;
}

int rp_call_in_selection(const struct rp_view *v, const struct tr_call *c)
{
	if (v->func_ok && !v->func_ok[c->func])
		return 0;
	if (v->o->has_range) {
		int64_t rel = rp_rel(v, c->start_ns);
		return rel >= v->o->range_start_ns && rel < v->o->range_end_ns;
	}
	return 1;
}

int rp_thread_calls_add(struct rp_thread_calls *tc, const struct tr_trace *t, uint32_t thread)
{
	if (thread >= tc->n) {
		uint32_t n = t->nthreads > thread ? t->nthreads : thread + 1;
		uint64_t *p = realloc(tc->calls, (size_t)n * sizeof(*p));
		if (!p)
			return -1;
		memset(p + tc->n, 0, (size_t)(n - tc->n) * sizeof(*p));
		tc->calls = p;
		tc->n = n;
	}
	tc->calls[thread]++;
	return 0;
}

int rp_stream_selects(const struct rp_view *v, struct rp_sel_cache *cache, const struct tr_call *c)
{
	if (c->thread >= cache->cap) {
		uint32_t ncap = v->t->nthreads > c->thread ? v->t->nthreads : c->thread + 1;
		uint8_t *p = realloc(cache->thread_sel, ncap);
		if (!p)
			return -1;
		memset(p + cache->cap, 0, ncap - cache->cap);
		cache->thread_sel = p;
		cache->cap = ncap;
	}
	if (!cache->thread_sel[c->thread])
		cache->thread_sel[c->thread] = rp_thread_selected(v, c->thread) ? 1 : 2;
	return cache->thread_sel[c->thread] == 1 && rp_call_in_selection(v, c);
}

static int by_func_time(const void *a, const void *b, void *ctx)
{
	const struct tr_count *x = &((const struct tr_trace *)ctx)->counts[*(const uint32_t *)a];
	const struct tr_count *y = &((const struct tr_trace *)ctx)->counts[*(const uint32_t *)b];
	if (x->func != y->func)
		return x->func < y->func ? -1 : 1;
	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

int rp_counted_series(const struct rp_view *v, void (*fn)(void *ctx, uint32_t func, int64_t rel, uint64_t total),
                      void *ctx)
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
	qsort_r(idx, n, sizeof(*idx), by_func_time, (void *)t);
	int64_t start = v->o->has_range ? v->o->range_start_ns : rp_rel(v, v->t0);
	for (uint32_t i = 0; i < n;) {
		uint32_t func = t->counts[idx[i]].func;
		uint64_t sum = 0;
		fn(ctx, func, start, 0);
		while (i < n && t->counts[idx[i]].func == func) {
			int64_t ns = t->counts[idx[i]].ns;
			for (; i < n && t->counts[idx[i]].func == func && t->counts[idx[i]].ns == ns; i++)
				sum = tr_sat_add_u64(sum, t->counts[idx[i]].calls);
			fn(ctx, func, rp_rel(v, ns), sum);
		}
	}
	free(idx);
	return 0;
}
