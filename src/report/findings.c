/* Bottleneck findings: rules over the analysis, each stating the numbers it is based on so the
 * reader can judge it. Thresholds are deliberately simple and written next to each rule.
 *
 * With GPU records (a trace taken with --gpu) the rules about the GPU stand on what the GPU did:
 * "host-bound" only where a device ran nothing while no sync and no loading was in progress, the
 * GPU's idle time during one-off loading told apart, the waits in sync calls set against how busy
 * the GPU was, copies from pageable memory with their GPU-measured bandwidth. Without GPU
 * records those rules guess from the host's calls alone; a trace that has GPU sessions but no
 * GPU records (another CUPTI user, no CUPTI) says so in each of them. */
#include "report.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct ctx {
	struct rp_finding *out;
	unsigned n, max;
};

static void add(struct ctx *x, int severity, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(struct ctx *x, int severity, const char *fmt, ...)
{
	if (x->n >= x->max)
		return;
	struct rp_finding *f = &x->out[x->n++];
	f->severity = severity;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->text, sizeof(f->text), fmt, ap);
	va_end(ap);
}

static double pct(int64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0;
}

#define D(buf, ns) rp_fmt_dur(buf, sizeof(buf), (double)(ns))

/* The function with the largest total among those of a category. */
static const struct rp_fstat *top_of_cat(const struct rp_view *v, const struct rp_fstat *fs, uint32_t n, int cat)
{
	const struct rp_fstat *best = NULL;
	for (uint32_t i = 0; i < n; i++)
		if (v->fi[fs[i].func].cat == cat && (!best || fs[i].total > best->total))
			best = &fs[i];
	return best;
}

static int is_query(const char *name)
{
	return strstr(name, "Query") != NULL;
}

static void errors(const struct rp_view *v, struct ctx *x)
{
	/* Calls that returned non-zero, per function, with the first code. cuStreamQuery and
	 * cuEventQuery return CUDA_ERROR_NOT_READY (600) by design: that is polling, not failure. */
	const struct tr_trace *t = v->t;
	uint64_t *count = calloc((size_t)t->nfuncs + 1, sizeof(*count));
	uint32_t *code = calloc((size_t)t->nfuncs + 1, sizeof(*code));
	if (!count || !code)
		goto out;
	uint64_t polls = 0;
	int64_t poll_time = 0;
	for (uint32_t i = 0; i < v->nsel; i++) {
		const struct tr_call *c = &t->calls[v->sel[i]];
		if (!rp_call_failed(v, c))
			continue;
		if ((uint32_t)c->ret == 600 && is_query(tr_func_name(t, c->func))) {
			polls++;
			poll_time = rp_sat_add(poll_time, tr_call_dur(c));
			continue;
		}
		if (!count[c->func]++)
			code[c->func] = (uint32_t)c->ret;
	}
	char list[400] = "";
	size_t pos = 0;
	uint64_t total = 0;
	for (uint32_t f = 0; f < t->nfuncs; f++) {
		if (!count[f])
			continue;
		total += count[f];
		if (pos < sizeof(list) - 80)
			pos += (size_t)snprintf(list + pos, sizeof(list) - pos, "%s%s x%llu (first error %u)", pos ? ", " : "",
			                        tr_func_name(t, f), (unsigned long long)count[f], code[f]);
	}
	if (total)
		add(x, 1, "%llu call%s returned an error: %s. Errors the program ignores can hide a failed "
		          "allocation or launch.", (unsigned long long)total, total == 1 ? "" : "s", list);
	if (polls >= 100) {
		char b[32];
		add(x, 1, "The host polled a stream or event %llu times without it being ready (%s in the "
		          "query calls): a blocking synchronize, or doing host work between polls, would free "
		          "the CPU.", (unsigned long long)polls, D(b, poll_time));
	}
out:
	free(count);
	free(code);
}

/* The tracer's own cost: each recorded call costs the agent tens of ns (docs/performance.md), a
 * large share of a call that lasts less than a microsecond. When a few such functions make most of
 * the recorded calls, counting them instead (agent option count=GLOBS) keeps their exact number of
 * calls at a fraction of the cost. Candidates: >= COUNT_MIN_CALLS recorded calls with a median
 * under COUNT_MAX_MED_NS, and none whose calls the report's sections read (launches, copies,
 * memsets, allocations, frees, kernel-name lookups, sync calls: counting those would empty the
 * transfers, gaps and stages). The COUNT_MAX_FUNCS most called candidates must together make more
 * than half of the selected recorded calls. */
#define COUNT_MIN_CALLS 10000
#define COUNT_MAX_MED_NS 1000.0
#define COUNT_MAX_FUNCS 3
#define COUNT_KEPT_MAX 200 /* room for the names of the functions a trace counted already */

static int more_calls(const struct rp_view *v, const struct rp_fstat *a, const struct rp_fstat *b)
{
	if (a->calls != b->calls)
		return a->calls > b->calls;
	return strcmp(tr_func_name(v->t, a->func), tr_func_name(v->t, b->func)) < 0;
}

static void count_hint(const struct rp_view *v, const struct rp_fstat *fs, uint32_t nfs, struct ctx *x)
{
	const struct rp_fstat *top[COUNT_MAX_FUNCS];
	unsigned n = 0;
	for (uint32_t i = 0; i < nfs; i++) {
		const struct rp_fstat *s = &fs[i];
		const struct rp_finfo *fi = &v->fi[s->func];
		if (s->calls < COUNT_MIN_CALLS || !s->timed || !(s->med < COUNT_MAX_MED_NS) || fi->submission ||
		    fi->kind != RP_KIND_PLAIN || fi->names_kernel || fi->cat == RP_CAT_SYNC)
			continue;
		unsigned j;
		if (n < COUNT_MAX_FUNCS)
			j = n++;
		else if (more_calls(v, s, top[COUNT_MAX_FUNCS - 1]))
			j = COUNT_MAX_FUNCS - 1;
		else
			continue;
		for (; j > 0 && more_calls(v, s, top[j - 1]); j--)
			top[j] = top[j - 1];
		top[j] = s;
	}
	uint64_t sum = 0;
	for (unsigned i = 0; i < n; i++)
		sum += top[i]->calls;
	if (!n || sum * 2 <= v->nsel)
		return;
	char list[300] = "", globs[400] = "", b[32];
	size_t lp = 0, gp = 0;
	/* --count replaces the list the trace was made with (by default the runtime's per-launch
	 * queries): the suggestion keeps the functions counted already, when their names fit. */
	const struct tr_trace *t = v->t;
	for (uint32_t i = 0; i < t->nfuncs; i++)
		if (t->funcs[i].counted)
			gp = rp_put(globs, COUNT_KEPT_MAX, gp, "%s%s", gp ? "," : "", tr_func_name(t, i));
	bool kept = gp + 1 < COUNT_KEPT_MAX;
	if (!kept)
		gp = 0;
	for (unsigned i = 0; i < n; i++) {
		const char *name = tr_func_name(v->t, top[i]->func);
		lp = rp_put(list, sizeof(list), lp, "%s%s (%llu calls, median %s)", i == 0 ? "" : i + 1 == n ? " and " : ", ",
		            name, (unsigned long long)top[i]->calls, rp_fmt_dur(b, sizeof(b), top[i]->med));
		gp = rp_put(globs, sizeof(globs), gp, "%s%s", gp ? "," : "", name);
	}
	add(x, 0, "Very short functions make most of the recorded calls: %s, %.0f%% of the %u. Each recorded call "
	          "costs the tracer tens of ns, a large share of calls this short: tracing with --count '%s'"
	          "%s(cuhook run or attach) counts their calls exactly instead of recording them, at a "
	          "fraction of the cost (their times, arguments and return values are then not recorded).",
	    list, 100.0 * (double)sum / (double)v->nsel, v->nsel, globs,
	    kept ? " " : " with the functions counted already ");
}


/* ---- with GPU records ------------------------------------------------------------------------ */

/* A device's steady state: its active time (first work to last, per session) without the gaps
 * spent loading. */
static int64_t steady_time(const struct rp_gpu *g)
{
	int64_t active = 0;
	for (uint32_t d = 0; d < g->ndevices; d++)
		active = rp_sat_add(active, g->devices[d].active);
	return active - g->gap_host[RP_HOST_LOADING];
}

static int64_t busy_time(const struct rp_gpu *g)
{
	int64_t busy = 0;
	for (uint32_t d = 0; d < g->ndevices; d++)
		busy = rp_sat_add(busy, g->devices[d].busy);
	return busy;
}

static const char *call_name(const struct rp_view *v, uint32_t ci)
{
	return ci == TR_NONE ? "?" : tr_func_name(v->t, v->t->calls[ci].func);
}

/* Waiting for the GPU (sync >= 30% of the driver time), set against how busy the GPU was. */
static void gpu_sync(const struct rp_view *v, const struct rp_analysis *a, const struct rp_fstat *fs, uint32_t nfs,
                     struct ctx *x)
{
	const struct rp_gpu *g = v->gpu;
	int64_t sync = a->cat[RP_CAT_SYNC].total, api = a->api_time, steady = steady_time(g), busy = busy_time(g);
	char b1[32], b2[32];
	if (!(api > 0 && pct(sync, api) >= 30))
		return;
	const struct rp_fstat *s = top_of_cat(v, fs, nfs, RP_CAT_SYNC);
	if (steady > 0 && pct(busy, steady) >= 80)
		add(x, 2, "The host spends %.0f%% of its driver time waiting for the GPU (%s in %llu sync calls, most in "
		          "%s), and the GPU was busy %.0f%% of its steady state: the GPU's work bounds the run. Make the "
		          "kernels faster (the kernel summary says which take the time) or overlap copies with them.",
		    pct(sync, api), D(b1, sync), (unsigned long long)a->cat[RP_CAT_SYNC].calls,
		    s ? tr_func_name(v->t, s->func) : "?", pct(busy, steady));
	else
		add(x, 1, "The host spends %.0f%% of its driver time in sync calls (%s in %llu calls, most in %s), yet the GPU "
		          "was busy only %.0f%% of its steady state (%s): the waits are for work that is submitted "
		          "late or in small pieces, not for a saturated GPU.",
		    pct(sync, api), D(b1, sync), (unsigned long long)a->cat[RP_CAT_SYNC].calls,
		    s ? tr_func_name(v->t, s->func) : "?", pct(busy, steady), D(b2, steady));
}

/* Host-bound: a device idle while its host was neither syncing nor loading, >= 30% of the steady
 * state; one-off loading apart. */
static void gpu_idle(const struct rp_view *v, struct ctx *x)
{
	const struct rp_gpu *g = v->gpu;
	const struct tr_gpu_work *w = v->t->gpu_work;
	char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], b7[32];
	int64_t steady = steady_time(g);
	int64_t hb = g->gap_host[RP_HOST_DRIVER] + g->gap_host[RP_HOST_OUTSIDE];
	if (steady > 0 && hb > 0 && pct(hb, steady) >= 30) {
		const struct rp_gpu_gap *m = &g->host_bound;
		add(x, pct(hb, steady) >= 50 ? 2 : 1,
		    "The GPU idled %s, %.0f%% of its steady state (%s), waiting for the host: no sync call and no loading "
		    "was in progress (%s outside any driver call, %s in other driver calls). The largest such gap, %s at "
		    "%s between %s and %s, had %s outside the driver. Host-bound: prepare the next work while the GPU "
		    "runs the current one, or submit more at once (CUDA graphs).",
		    D(b1, hb), pct(hb, steady), D(b2, steady), D(b3, g->gap_host[RP_HOST_OUTSIDE]),
		    D(b4, g->gap_host[RP_HOST_DRIVER]), D(b5, m->end - m->start), D(b6, m->start - v->t0),
		    rp_gpu_work_label(v, &w[m->before]), rp_gpu_work_label(v, &w[m->after]),
		    D(b7, m->host[RP_HOST_OUTSIDE]));
	}
	int64_t load = g->gap_host[RP_HOST_LOADING];
	if (load > 0 && g->gap_total > 0 && pct(load, g->gap_total) >= 10)
		add(x, 0, "One-off loading: the GPU idled %s (%.0f%% of its idle time) while the host loaded modules or "
		          "libraries or initialised (most in %s). It is paid once, when a library or kernel is first "
		          "used, and is not counted as host-bound.",
		    D(b1, load), pct(load, g->gap_total), call_name(v, g->host_calls[RP_HOST_LOADING]));
}

/* Facts of the GPU's own: what dominates it, copies from pageable memory, records CUPTI lost or
 * that could not be linked. */
static void gpu_facts(const struct rp_view *v, struct ctx *x)
{
	const struct rp_gpu *g = v->gpu;
	const struct tr_trace *t = v->t;
	char b1[32], b2[32], b3[32];
	if (g->nkernels && pct(g->kernels[0].d.total, g->kernel_time) >= 50)
		add(x, 0, "One kernel takes %.0f%% of the GPU's kernel time: %s (%llu instances, %s in all, %s each on "
		          "average).", pct(g->kernels[0].d.total, g->kernel_time), g->kernels[0].name,
		    (unsigned long long)g->kernels[0].calls, D(b1, g->kernels[0].d.total), D(b3, g->kernels[0].d.avg));
	for (unsigned op = CUHOOK_COPY_HTOD; op <= CUHOOK_COPY_DTOH; op++) {
		/* >= 1 MiB through pageable host memory at < 6 GB/s as the calls saw it (far below PCIe 3
		 * x16 with pinned memory): the GPU's own transfer is fast, the staging costs the host */
		const uint64_t bytes = g->pageable[op].bytes;
		const int64_t host = g->pageable[op].call_time;
		if (bytes >= (1u << 20) && host > 0 && (double)bytes / (double)host < 6 && g->pageable[op].time > 0)
			add(x, 1, "Copies %s through pageable host memory (%llu, %s) ran at %.2f GB/s as the calls that made "
			          "them saw it (%s in those calls), %.2f GB/s on the GPU. The driver copies pageable memory "
			          "through a staging buffer; pinned memory (cuMemHostAlloc, cuMemHostRegister) is usually "
			          "several times faster and lets copies overlap kernels.",
			    rp_gpu_op_name(op) + strlen("memcpy "), (unsigned long long)g->pageable[op].count,
			    rp_fmt_bytes(b1, sizeof(b1), (double)bytes), (double)bytes / (double)host, D(b2, host),
			    (double)bytes / (double)g->pageable[op].time);
	}
	uint64_t dropped = 0;
	for (uint32_t i = 0; i < t->ngpu_sessions; i++)
		dropped = tr_sat_add_u64(dropped, t->gpu_sessions[i].dropped);
	if (dropped)
		add(x, 1, "CUPTI dropped %llu GPU records (its buffers were full): GPU times and counts are lower "
		          "bounds.", (unsigned long long)dropped);
	uint64_t unlinked = g->nsel - g->link[TR_GPU_LINKED];
	if (unlinked)
		add(x, 1, "%llu of %u GPU records are not linked to the call that submitted them (%llu without an API "
		          "record, %llu whose API record lies in no recorded call, %llu whose call was dropped): they "
		          "count in the GPU sections, not in the flows.", (unsigned long long)unlinked, g->nsel,
		    (unsigned long long)g->link[TR_GPU_NO_API], (unsigned long long)g->link[TR_GPU_NO_CALL],
		    (unsigned long long)g->link[TR_GPU_CALL_DROPPED]);
}

/* Sessions that recorded nothing: why the GPU side is missing. */
static void gpu_missing(const struct rp_view *v, struct ctx *x, int gpu)
{
	const struct tr_trace *t = v->t;
	const char *so = gpu ? "" : " The findings about the GPU are host-side guesses.";
	for (uint32_t i = 0; i < t->ngpu_sessions; i++) {
		const struct tr_gpu_session *s = &t->gpu_sessions[i];
		if (s->status == CUHOOK_GPU_OTHER_USER)
			add(x, 1, "GPU session %u recorded nothing: another CUPTI user owned the process (a profiler, nsys, a "
			          "CUDA_INJECTION64_PATH tool); the API calls were traced.%s", i + 1, so);
		else if (s->status == CUHOOK_GPU_NO_CUPTI)
			add(x, 1, "GPU session %u recorded nothing: no CUPTI library was found (--cupti PATH names one).%s",
			    i + 1, so);
		else if (s->status == CUHOOK_GPU_FAILED)
			add(x, 1, "GPU session %u recorded nothing: CUPTI refused (CUptiResult %u).%s", i + 1, s->result, so);
	}
}

/* One-off work against the steady state: loading and initialization (rp_oneoff_of) happen once,
 * so their share of a run says how long it was, not how the program runs. When they hold >= 10%
 * of the driver time and the run goes on >= 10% of its length after the last of them, say how
 * much they took and what the driver time after them (the steady state) goes to. Returns -1 when
 * out of memory (the findings so far are kept). */
static int oneoff(const struct rp_view *v, const struct rp_analysis *a, struct ctx *x)
{
	const struct tr_trace *t = v->t;
	int64_t load = 0, init = 0, last_end = INT64_MIN, api = a->api_time, run = v->t1 - v->t0;
	uint64_t nload = 0, ninit = 0;
	for (uint32_t i = 0; i < v->nsel; i++) {
		const struct tr_call *c = &t->calls[v->sel[i]];
		uint8_t o = v->fi[c->func].oneoff;
		if (!o || c->parent != TR_NONE || !tr_call_timed(c))
			continue;
		if (o == RP_ONEOFF_LOAD) {
			load = rp_sat_add(load, tr_call_dur(c));
			nload++;
		} else {
			init = rp_sat_add(init, tr_call_dur(c));
			ninit++;
		}
		if (c->end_ns > last_end)
			last_end = c->end_ns;
	}
	if (last_end == INT64_MIN)
		return 0;
	int64_t once = rp_sat_add(load, init), steady = rp_sat_sub(v->t1, last_end), into = rp_sat_sub(last_end, v->t0);
	if (api <= 0 || pct(once, api) < 10 || pct(steady, run) < 10)
		return 0;
	/* the steady state: outermost calls starting after the last one-off call ended */
	int64_t *per = calloc(t->nfuncs ? t->nfuncs : 1, sizeof(*per)), after = 0;
	if (!per)
		return -1;
	for (uint32_t i = 0; i < v->nsel; i++) {
		const struct tr_call *c = &t->calls[v->sel[i]];
		if (c->start_ns < last_end || c->parent != TR_NONE || !tr_call_timed(c))
			continue;
		per[c->func] = rp_sat_add(per[c->func], tr_call_dur(c));
		after = rp_sat_add(after, tr_call_dur(c));
	}
	uint32_t top = 0;
	for (uint32_t f = 1; f < t->nfuncs; f++)
		if (per[f] > per[top])
			top = f;
	char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], b7[32], b8[32];
	if (after > 0)
		add(x, 0, "One-off work takes %s of the %s driver time (%.0f%%): loading modules and libraries %s in %llu "
		          "call%s, initialization and context setup %s in %llu. It ends at %s (%.0f%% into the run); the "
		          "steady state after it (%s) spends %s in the driver (%.0f%% of it), most in %s (%s). Shares of "
		          "the driver time in the other findings count both.",
		    D(b1, once), D(b2, api), pct(once, api), D(b3, load), (unsigned long long)nload, nload == 1 ? "" : "s",
		    D(b4, init), (unsigned long long)ninit, D(b5, into), pct(into, run), D(b6, steady), D(b7, after),
		    pct(after, steady), tr_func_name(t, top), D(b8, per[top]));
	else
		add(x, 0, "One-off work takes %s of the %s driver time (%.0f%%): loading modules and libraries %s in %llu "
		          "call%s, initialization and context setup %s in %llu. It ends at %s (%.0f%% into the run); no "
		          "driver call follows it.",
		    D(b1, once), D(b2, api), pct(once, api), D(b3, load), (unsigned long long)nload, nload == 1 ? "" : "s",
		    D(b4, init), (unsigned long long)ninit, D(b5, into), pct(into, run));
	free(per);
	return 0;
}

unsigned rp_findings(const struct rp_view *v, const struct rp_analysis *a, const struct rp_fstat *fs,
                     uint32_t nfs, struct rp_finding *out, unsigned max)
{
	struct ctx x = {out, 0, max};
	const struct tr_trace *t = v->t;
	int64_t api = a->api_time, run = v->t1 - v->t0;
	char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];
	/* GPU records to judge by; or GPU sessions without them: the guesses say so */
	const int gpu = v->gpu && v->gpu->nsel;
	const char *guess = v->gpu && !gpu ? " (A host-side guess: this trace has no GPU records to check it against.)" : "";

	if (t->dropped)
		add(&x, 1, "%llu records were dropped while tracing (lossy mode or a slow disk): call counts and "
		           "times below are lower bounds.", (unsigned long long)t->dropped);
	if (v->gpu)
		gpu_missing(v, &x, gpu);

	/* Waiting for the GPU: sync calls hold >= 30% of the driver time. */
	int64_t sync = a->cat[RP_CAT_SYNC].total;
	if (gpu) {
		gpu_sync(v, a, fs, nfs, &x);
	} else if (api > 0 && pct(sync, api) >= 30) {
		const struct rp_fstat *s = top_of_cat(v, fs, nfs, RP_CAT_SYNC);
		add(&x, 2, "The host spends %.0f%% of its driver time waiting for the GPU: %s in %llu sync calls "
		           "(%.0f%% of the whole run), most in %s (%llu call%s, %s). The GPU work itself, or its "
		           "serialization with the host, bounds the run: overlap copies and kernels on several "
		           "streams, and synchronize less often.%s",
		    pct(sync, api), D(b1, sync), (unsigned long long)a->cat[RP_CAT_SYNC].calls, pct(sync, run),
		    s ? tr_func_name(t, s->func) : "?", s ? (unsigned long long)s->calls : 0ull,
		    s && s->calls == 1 ? "" : "s", D(b2, s ? s->total : 0), guess);
	}

	/* Transfers: a large share of the driver time, and slow synchronous copies. */
	int64_t xfer = a->cat[RP_CAT_TRANSFER].total;
	if (api > 0 && pct(xfer, api) >= 30)
		add(&x, 2, "Copies and memsets take %.0f%% of the driver time (%s in %llu calls).", pct(xfer, api),
		    D(b1, xfer), (unsigned long long)a->cat[RP_CAT_TRANSFER].calls);
	for (int d = RP_DIR_H2D; d <= RP_DIR_D2H && !gpu; d++) { /* with GPU records: gpu_facts() */
		const struct rp_dir_stat *ds = &a->dir[d];
		/* >= 1 MiB moved synchronously at < 6 GB/s: far below PCIe 3 x16 with pinned memory */
		if (ds->sync_bytes >= (1u << 20) && ds->sync_time > 0) {
			double gbs = (double)ds->sync_bytes / (double)ds->sync_time;
			if (gbs < 6)
				add(&x, 1, "Synchronous %s copies reach only %.2f GB/s (%s in %s): pageable host memory "
				           "is copied through a staging buffer; pinned memory (cuMemHostAlloc or "
				           "cuMemHostRegister) and async copies are usually several times faster.%s",
				    rp_dir_names[d], gbs, rp_fmt_bytes(b1, sizeof(b1), (double)ds->sync_bytes), D(b2, ds->sync_time),
				    guess);
		}
	}

	/* Allocation churn: allocations and frees >= 10% of the driver time, or allocations while
	 * kernels run. */
	int64_t mem = a->cat[RP_CAT_MEMORY].total;
	if (api > 0 && pct(mem, api) >= 10 && a->alloc_calls + a->free_calls >= 10)
		add(&x, 1, "Allocations and frees take %.0f%% of the driver time (%s: %llu allocations of %s in "
		           "all, %llu frees). Allocate once and reuse buffers, or use stream-ordered pools "
		           "(cuMemAllocAsync).", pct(mem, api), D(b1, mem), (unsigned long long)a->alloc_calls,
		    rp_fmt_bytes(b2, sizeof(b2), (double)a->alloc_bytes), (unsigned long long)a->free_calls);

	/* Module loading >= 20% of the run: JIT compilation of PTX is the usual cause. */
	int64_t mod = a->cat[RP_CAT_MODULE].total;
	if (run > 0 && pct(mod, run) >= 20) {
		const struct rp_fstat *m = top_of_cat(v, fs, nfs, RP_CAT_MODULE);
		add(&x, 2, "Loading modules takes %s, %.0f%% of the run (most in %s, %s): if the modules are PTX, "
		           "the driver compiles them at load time; shipping SASS for this GPU (cubin/fatbin) or "
		           "keeping the JIT cache (CUDA_CACHE_MAXSIZE) avoids it.",
		    D(b1, mod), pct(mod, run), m ? tr_func_name(t, m->func) : "?", D(b2, m ? m->total : 0));
	}

	/* Initialization >= 30% of the run and >= 100 ms. */
	int64_t init = a->cat[RP_CAT_INIT].total + a->cat[RP_CAT_CONTEXT].total;
	if (run > 0 && pct(init, run) >= 30 && init >= 100000000)
		add(&x, 1, "Driver initialization and context setup take %s, %.0f%% of the run. For short runs "
		           "this fixed cost dominates: keep a process alive across requests, or enable lazy "
		           "module loading (CUDA_MODULE_LOADING=LAZY).", D(b1, init), pct(init, run));

	/* Launch cost: >= 1000 launches averaging >= 10 us on the host. */
	int64_t launch = a->cat[RP_CAT_LAUNCH].total;
	if (a->launches >= 1000 && launch / (int64_t)a->launches >= 10000)
		add(&x, 1, "%llu kernel launches cost the host %s on average (%s in all): CUDA graphs submit a "
		           "whole sequence of kernels with one call.", (unsigned long long)a->launches,
		    D(b1, (double)launch / (double)a->launches), D(b2, launch));
	else if (a->launches >= 10000)
		add(&x, 0, "%llu kernel launches (%s on the host): if they repeat the same sequence, CUDA graphs "
		           "cut the per-launch cost.", (unsigned long long)a->launches, D(b1, launch));

	/* Host gaps: time between GPU submissions that is neither a driver call nor waiting in sync,
	 * >= 30% of the span from the first submission to the last. */
	const struct rp_gaps *g = &a->gaps;
	int64_t host_gap = g->total - g->sync_in_gaps - g->load_in_gaps;
	if (gpu) {
		gpu_idle(v, &x);
		gpu_facts(v, &x);
	} else if (g->ngaps && g->span > 0 && pct(host_gap, g->span) >= 30) {
		const struct tr_call *before = &t->calls[g->top_before[0]], *after = &t->calls[g->top_after[0]];
		add(&x, pct(host_gap, g->span) >= 50 ? 2 : 1,
		    "Between GPU submissions the host spends %s neither submitting work nor waiting for the GPU "
		    "(%.0f%% of the %s from the first submission to the last; %s more of the gaps is spent in "
		    "sync calls%s%s%s); the largest gap, %s, lies "
		    "between %s and %s at %s. The GPU may idle while the host prepares work (host-bound): "
		    "prepare the next batch while the GPU runs the current one.%s",
		    D(b1, host_gap), pct(host_gap, g->span), D(b2, g->span), D(b4, g->sync_in_gaps),
		    g->load_in_gaps ? ", and " : "", g->load_in_gaps ? D(b6, g->load_in_gaps) : "",
		    g->load_in_gaps ? " in one-off loading and initialization" : "", D(b3, g->top[0]),
		    tr_func_name(t, before->func), tr_func_name(t, after->func), D(b5, before->end_ns - v->t0), guess);
	}

	if (oneoff(v, a, &x))
		return x.n;
	errors(v, &x);

	if (!x.n && a->outer_calls)
		add(&x, 0, "No rule fired: driver calls take %s of the %s run (%.0f%%); the time goes elsewhere "
		           "(host code, or GPU work overlapping the host).",
		    D(b1, api), D(b2, run), pct(api, run));
	/* about the tracer, not the program: after the fallback, which it does not replace */
	count_hint(v, fs, nfs, &x);
	return x.n;
}
