/* --format json: one object per trace (an array of them under "traces" for several files) with
 * the header facts, the per-function statistics, the functions not traced, and the analysis
 * (categories, transfers, stages, gaps, slowest calls, findings), and for a trace with GPU blocks
 * the GPU side ("gpu", export_gpu_json.c). Stable keys: tests and
 * scripts parse it. Times are integer nanoseconds where exact, floats where averaged. */
#include "result.h"

#include <stdlib.h>
#include <string.h>

static void kv_str(FILE *f, const char *key, const char *s)
{
	fprintf(f, "\"%s\": ", key);
	rp_json_str(f, s, strlen(s));
}

/* The members of a function's statistics after its name: "calls" are the recorded calls (as the
 * trace's and the threads' "calls"), "counted_calls" those counted instead (no time); the times
 * are those of the timed calls. */
static void fstat_members(FILE *f, const char *category, const struct rp_fstat *s)
{
	fprintf(f, ", \"category\": \"%s\", \"calls\": %llu, \"counted_calls\": %llu, \"timed_calls\": %llu, "
	           "\"failed\": %llu, \"total_ns\": %lld, \"avg_ns\": %.1f, \"med_ns\": %.1f, \"min_ns\": %lld, "
	           "\"max_ns\": %lld, \"stddev_ns\": %.1f",
	        category, (unsigned long long)s->calls, (unsigned long long)s->counted,
	        (unsigned long long)s->timed, (unsigned long long)s->failed, (long long)s->total, s->avg, s->med,
	        (long long)s->min, (long long)s->max, s->stddev);
}

static void write_functions(FILE *f, const struct rp_view *v, const struct rp_fstat *fs, uint32_t n)
{
	fprintf(f, "  \"functions\": [");
	for (uint32_t i = 0; i < n; i++) {
		const struct rp_fstat *s = &fs[i];
		fprintf(f, "%s\n    {", i ? "," : "");
		kv_str(f, "name", tr_func_name(v->t, s->func));
		fstat_members(f, rp_cat_names[v->fi[s->func].cat], s);
		fprintf(f, "}");
	}
	fprintf(f, "%s],\n", n ? "\n  " : "");
}

static void write_refused(FILE *f, const struct rp_view *v)
{
	const struct tr_trace *t = v->t;
	fprintf(f, "  \"refused\": [");
	int first = 1;
	for (uint32_t i = 0; i < t->nfuncs; i++) {
		const struct tr_func *fn = &t->funcs[i];
		if (!fn->defined || fn->status == CUHOOK_PATCHED)
			continue;
		int internal = 0;
		for (uint32_t l = 0; l < t->nlibs; l++)
			if (t->libs[l].id == fn->lib_id && (t->libs[l].flags & CUHOOK_LIB_INTERNAL))
				internal = 1;
		if (internal)
			continue;
		fprintf(f, "%s\n    {", first ? "" : ",");
		first = 0;
		kv_str(f, "name", fn->name);
		fprintf(f, ", ");
		kv_str(f, "reason", fn->status < CUHOOK_STATUS_COUNT ? cuhook_patch_status_names[fn->status] : "unknown status");
		fprintf(f, ", \"status\": %u}", fn->status);
	}
	fprintf(f, "%s]", first ? "" : "\n  ");
}

static void write_stages_gaps(FILE *f, const struct rp_view *v, const struct rp_analysis *a);

/* streamed: no stages nor gaps (they need every call at once) */
static void write_analysis(FILE *f, const struct rp_view *v, const struct rp_analysis *a, int streamed)
{
	const struct tr_trace *t = v->t;
	fprintf(f, "  \"categories\": [");
	for (int c = 0; c < RP_CAT_COUNT; c++)
		fprintf(f, "%s\n    {\"name\": \"%s\", \"calls\": %llu, \"total_ns\": %lld}", c ? "," : "",
		        rp_cat_names[c], (unsigned long long)a->cat[c].calls, (long long)a->cat[c].total);
	fprintf(f, "\n  ],\n  \"api_ns\": %lld, \"outermost_calls\": %llu,\n", (long long)a->api_time,
	        (unsigned long long)a->outer_calls);
	fprintf(f, "  \"transfers\": [");
	int first = 1;
	for (int d = 1; d < RP_DIR_COUNT; d++) {
		const struct rp_dir_stat *ds = &a->dir[d];
		if (!ds->calls)
			continue;
		fprintf(f, "%s\n    {\"direction\": \"%s\", \"calls\": %llu, \"async_calls\": %llu, \"bytes\": %llu, "
		           "\"total_ns\": %lld, \"sync_bytes\": %llu, \"sync_ns\": %lld, \"gb_per_s\": ",
		        first ? "" : ",", rp_dir_names[d], (unsigned long long)ds->calls,
		        (unsigned long long)ds->async_calls, (unsigned long long)ds->bytes, (long long)ds->total,
		        (unsigned long long)ds->sync_bytes, (long long)ds->sync_time);
		if (ds->sync_bytes && ds->sync_time > 0)
			fprintf(f, "%.3f}", (double)ds->sync_bytes / (double)ds->sync_time);
		else
			fprintf(f, "null}");
		first = 0;
	}
	fprintf(f, "%s],\n", first ? "" : "\n  ");
	if (!streamed)
		write_stages_gaps(f, v, a);
	fprintf(f, "  \"max_depth\": %d, \"nested_calls\": %llu, \"nesting\": [", a->max_depth,
	        (unsigned long long)a->nested_calls);
	for (uint32_t i = 0; i < a->nnest; i++) {
		fprintf(f, "%s{", i ? ", " : "");
		kv_str(f, "parent", tr_func_name(t, a->nest[i].parent_func));
		fprintf(f, ", ");
		kv_str(f, "child", tr_func_name(t, a->nest[i].child_func));
		fprintf(f, ", \"count\": %llu, \"child_total_ns\": %lld}", (unsigned long long)a->nest[i].count,
		        (long long)a->nest[i].child_time);
	}
	fprintf(f, "],\n");
}

static void write_stages_gaps(FILE *f, const struct rp_view *v, const struct rp_analysis *a)
{
	const struct tr_trace *t = v->t;
	int first = 1;
	fprintf(f, "  \"stages\": [");
	for (int s = 0; s < RP_STAGE_COUNT; s++) {
		const struct rp_stage *st = &a->stage[s];
		if (!st->present)
			continue;
		fprintf(f, "%s\n    {\"name\": \"%s\", \"start_ns\": %lld, \"end_ns\": %lld, \"duration_ns\": %lld, "
		           "\"calls\": %llu, \"api_ns\": %lld}",
		        first ? "" : ",", rp_stage_names[s], (long long)(st->start - v->t0), (long long)(st->end - v->t0),
		        (long long)(st->end - st->start), (unsigned long long)st->calls, (long long)st->api);
		first = 0;
	}
	fprintf(f, "%s],\n", first ? "" : "\n  ");
	const struct rp_gaps *g = &a->gaps;
	fprintf(f, "  \"gaps\": {\"submissions\": %llu, \"count\": %llu, \"total_ns\": %lld, \"sync_ns\": %lld, "
	           "\"load_ns\": %lld, \"median_ns\": %lld, \"max_ns\": %lld, \"span_ns\": %lld, \"largest\": [",
	        (unsigned long long)g->submissions, (unsigned long long)g->ngaps, (long long)g->total,
	        (long long)g->sync_in_gaps, (long long)g->load_in_gaps, (long long)g->median, (long long)g->max,
	        (long long)g->span);
	for (uint32_t i = 0; i < g->ntop; i++) {
		const struct tr_call *before = &t->calls[g->top_before[i]], *after = &t->calls[g->top_after[i]];
		fprintf(f, "%s{\"gap_ns\": %lld, \"at_ns\": %lld, ", i ? ", " : "", (long long)g->top[i],
		        (long long)(after->start_ns - g->top[i] - v->t0));
		kv_str(f, "before", tr_func_name(t, before->func));
		fprintf(f, ", ");
		kv_str(f, "after", tr_func_name(t, after->func));
		fprintf(f, ", \"tid\": %u}", t->threads[after->thread].tid);
	}
	fprintf(f, "]},\n");
}

/* calls[i], or when calls is NULL the call idx[i] (its stack known) */
static void write_slowest(FILE *f, const struct rp_view *v, const struct tr_call *const *calls, const uint32_t *idx,
                          uint32_t n)
{
	const struct tr_trace *t = v->t;
	char d[1024];
	fprintf(f, "  \"slowest_calls\": [");
	for (uint32_t i = 0; i < n; i++) {
		const struct tr_call *c = calls ? calls[i] : &t->calls[idx[i]];
		fprintf(f, "%s\n    {", i ? "," : "");
		kv_str(f, "name", tr_func_name(t, c->func));
		fprintf(f, ", \"tid\": %u, \"start_ns\": %lld, \"dur_ns\": %lld, \"depth\": %u, \"ret\": %llu, ",
		        t->threads[c->thread].tid, (long long)(c->start_ns - v->t0), (long long)tr_call_dur(c), c->depth,
		        (unsigned long long)c->ret);
		rp_describe_call(v, c, d, sizeof(d));
		kv_str(f, "details", d);
		fprintf(f, ", ");
		tr_call_format_data(t, c, d, sizeof(d));
		kv_str(f, "decoded", d);
		const struct tr_stack *st = calls ? NULL : tr_call_stack(t, idx[i]);
		if (v->stacks && st)
			fprintf(f, ", \"stack\": %u", st->id);
		else if (v->stacks)
			fprintf(f, ", \"stack\": null");
		fprintf(f, "}");
	}
	fprintf(f, "%s],\n", n ? "\n  " : "");
}

static void write_findings(FILE *f, const struct rp_finding *fd, unsigned n)
{
	fprintf(f, "  \"findings\": [");
	for (unsigned i = 0; i < n; i++) {
		fprintf(f, "%s\n    {\"severity\": %d, ", i ? "," : "", fd[i].severity);
		kv_str(f, "text", fd[i].text);
		fprintf(f, "}");
	}
	fprintf(f, "%s],\n", n ? "\n  " : "");
}

/* "rank" and "world" (members followed by ", "), only when the trace says them (job_env.c's
 * NOTE): a trace without them gives the JSON it gave before. */
#define MEM_SLICES 100

/* "memory" (memory.c), when the trace has an allocation or a free: per kind its figures, the
 * device + physical peak, and that curve as the most in use in each of MEM_SLICES slices of the
 * span ("slice_ns" long, from the trace's start). */
static void write_memory(FILE *f, const struct rp_view *v)
{
	const struct rp_memory *m = v->memory;
	if (!m)
		return;
	fprintf(f, ",\n  \"memory\": {\"kinds\": {");
	for (unsigned k = 0; k < RP_MEM_KIND_COUNT; k++) {
		const struct rp_mem_kind_stat *s = &m->k[k];
		fprintf(f, "%s\n    \"%s\": {\"allocs\": %llu, \"alloc_bytes\": %llu, \"failed\": %llu, \"no_pointer\": %llu, "
		           "\"frees\": %llu, \"freed_bytes\": %llu, \"unknown_frees\": %llu, \"peak_bytes\": %llu, "
		           "\"peak_ns\": %lld, \"end_allocs\": %llu, \"end_bytes\": %llu, \"largest_bytes\": %llu}",
		        k ? "," : "", rp_mem_kind_names[k], (unsigned long long)s->allocs, (unsigned long long)s->alloc_bytes,
		        (unsigned long long)s->failed, (unsigned long long)s->no_pointer, (unsigned long long)s->frees,
		        (unsigned long long)s->freed_bytes, (unsigned long long)s->unknown_frees, (unsigned long long)s->peak,
		        (long long)s->peak_at, (unsigned long long)s->end_allocs, (unsigned long long)s->end_bytes,
		        (unsigned long long)s->largest);
	}
	fprintf(f, "},\n    \"device_peak_bytes\": %llu, \"device_peak_ns\": %lld, \"slice_ns\": %lld, "
	           "\"device_in_use\": [",
	        (unsigned long long)m->peak, (long long)m->peak_at, (long long)(m->span / MEM_SLICES));
	uint64_t slice[MEM_SLICES];
	rp_memory_slices(m, slice, MEM_SLICES);
	for (unsigned i = 0; i < MEM_SLICES; i++)
		fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)slice[i]);
	fprintf(f, "]}");
}

/* "streams" (streams.c), when a call named one: every stream, by driver time. */
static void write_streams(FILE *f, const struct rp_view *v)
{
	const struct rp_streams *s = v->streams;
	if (!s)
		return;
	fprintf(f, ",\n  \"streams\": {\"unnamed_submissions\": %llu, \"calls_past_limit\": %llu, \"list\": [",
	        (unsigned long long)s->unnamed, (unsigned long long)s->more);
	for (uint32_t i = 0; i < s->n; i++) {
		const struct rp_stream *r = &s->s[i];
		fprintf(f, "%s\n    {\"stream\": \"0x%llx\", \"calls\": %llu, \"api_ns\": %lld, \"launches\": %llu, "
		           "\"copies\": %llu, \"memsets\": %llu, \"graph_launches\": %llu, \"bytes\": %llu, \"syncs\": %llu, "
		           "\"sync_ns\": %lld, \"queries\": %llu, \"event_records\": %llu, \"event_waits\": %llu, "
		           "\"threads\": %u}",
		        i ? "," : "", (unsigned long long)r->stream, (unsigned long long)r->calls, (long long)r->api,
		        (unsigned long long)r->launches, (unsigned long long)r->copies, (unsigned long long)r->memsets,
		        (unsigned long long)r->graph_launches, (unsigned long long)r->bytes, (unsigned long long)r->syncs,
		        (long long)r->sync_time, (unsigned long long)r->queries, (unsigned long long)r->records,
		        (unsigned long long)r->waits, r->nthreads);
	}
	fprintf(f, "\n  ]}");
}

static void device_obj(FILE *f, const struct rp_view *v, const struct rp_device *r, unsigned slot)
{
	fprintf(f, "\"calls\": %llu, \"outermost_calls\": %llu, \"host_ns\": %lld, \"launches\": %llu, \"transfers\": [",
	        (unsigned long long)r->calls, (unsigned long long)r->outer_calls, (long long)r->host,
	        (unsigned long long)r->launches);
	int first = 1;
	for (int d = 1; d < RP_DIR_COUNT; d++)
		if (r->copies[d]) {
			fprintf(f, "%s{\"direction\": \"%s\", \"calls\": %llu, \"bytes\": %llu}", first ? "" : ", ",
			        rp_dir_names[d], (unsigned long long)r->copies[d], (unsigned long long)r->bytes[d]);
			first = 0;
		}
	fprintf(f, "], \"alloc_calls\": %llu, \"alloc_bytes\": %llu, \"peak_alloc_bytes\": %llu, \"threads\": %u}",
	        (unsigned long long)r->alloc_calls, (unsigned long long)r->alloc_bytes,
	        (unsigned long long)(v->memory ? v->memory->dev_peak[slot] : 0), r->nthreads);
}

/* "devices" (devices.c): per device the calls that worked on it, then those whose device is
 * unknown and those that concern none. */
static void write_devices(FILE *f, const struct rp_view *v)
{
	const struct rp_devices *d = v->devices;
	if (!d)
		return;
	fprintf(f, ",\n  \"devices\": {\"list\": [");
	int first = 1;
	for (unsigned k = 0; k < RP_MAX_DEVICES; k++)
		if (d->d[k].calls) {
			fprintf(f, "%s\n    {\"device\": %u, ", first ? "" : ",", k);
			device_obj(f, v, &d->d[k], k);
			first = 0;
		}
	fprintf(f, "\n  ],\n  \"unknown\": {");
	device_obj(f, v, &d->d[rp_dev_slot(RP_DEV_UNKNOWN)], rp_dev_slot(RP_DEV_UNKNOWN));
	fprintf(f, ",\n  \"none\": {");
	device_obj(f, v, &d->d[rp_dev_slot(RP_DEV_NONE)], rp_dev_slot(RP_DEV_NONE));
	fprintf(f, "}");
}

static void json_job(FILE *f, const struct rp_view *v)
{
	if (v->rank >= 0)
		fprintf(f, "\"rank\": %ld, ", v->rank);
	if (v->world > 0)
		fprintf(f, "\"world\": %ld, ", v->world);
}

/* The sections a streamed trace's json leaves out (its "left_out"). */
static const char *const STREAM_LEFT_OUT[] = {"stages", "gaps", "kernels", "findings", "export_tables", "ioctls",
                                              "memory", "streams", "devices", "gpu", "stacks"};

/* js: a streamed trace's (rp_write_json_streamed), NULL for a whole read */
static void write_one(FILE *f, struct rp_view *v, const struct rp_trace_result *r, const struct rp_json_streamed *js)
{
	const struct tr_trace *t = v->t;
	fprintf(f, "{\n  ");
	kv_str(f, "file", t->path);
	fprintf(f, ",\n  \"pid\": %u, \"ppid\": %u,\n  ", t->pid, t->ppid);
	json_job(f, v);
	kv_str(f, "cmdline", t->cmdline);
	fprintf(f, ",\n  ");
	kv_str(f, "exe", t->exe);
	fprintf(f, ",\n  \"start_monotonic_ns\": %lld, \"start_realtime_ns\": %llu, \"duration_ns\": %lld,\n",
	        (long long)v->t0, (unsigned long long)t->start_realtime_ns, (long long)(v->t1 - v->t0));
	fprintf(f, "  \"clock\": \"%s\", \"clock_guessed\": %s,\n",
	        t->clock_source == CUHOOK_CLOCK_TSC ? "tsc" : "monotonic", t->clock_guessed ? "true" : "false");
	fprintf(f, "  \"libraries\": [");
	for (uint32_t i = 0; i < t->nlibs; i++) {
		fprintf(f, "%s\n    {", i ? "," : "");
		kv_str(f, "path", t->libs[i].path);
		fprintf(f, ", ");
		kv_str(f, "version", t->libs[i].version);
		fprintf(f, ", \"internal\": %s%s}", (t->libs[i].flags & CUHOOK_LIB_INTERNAL) ? "true" : "false",
		        (t->libs[i].flags & CUHOOK_LIB_IOCTL) ? ", \"ioctl\": true" : "");
	}
	fprintf(f, "%s],\n", t->nlibs ? "\n  " : "");
	fprintf(f, "  \"threads\": [");
	for (uint32_t i = 0; i < t->nthreads; i++) {
		fprintf(f, "%s\n    {\"tid\": %u, ", i ? "," : "", t->threads[i].tid);
		kv_str(f, "name", t->threads[i].name);
		fprintf(f, ", \"calls\": %llu, \"counted_calls\": %llu, \"events\": %llu, \"dropped\": %llu}",
		        js ? (unsigned long long)(i < js->nthread_calls ? js->thread_calls[i] : 0)
		           : (unsigned long long)t->threads[i].ncalls,
		        (unsigned long long)t->threads[i].counted,
		        (unsigned long long)t->threads[i].events, (unsigned long long)t->threads[i].dropped);
	}
	fprintf(f, "%s],\n", t->nthreads ? "\n  " : "");
	fprintf(f, "  \"events\": %llu, \"calls\": %llu, \"selected_calls\": %llu, \"data_records\": %llu, "
	           "\"dropped\": %llu,\n",
	        (unsigned long long)(t->nentry + t->nexit), js ? (unsigned long long)js->n->calls : t->ncalls,
	        js ? (unsigned long long)js->n->sel : v->nsel,
	        (unsigned long long)t->ndata_recs, (unsigned long long)t->dropped);
	fprintf(f, "  \"counted_calls\": %llu, \"selected_counted_calls\": %llu, \"count_blocks\": %llu,\n",
	        (unsigned long long)t->counted_calls, (unsigned long long)v->ncounted,
	        (unsigned long long)t->ncount_blocks);
	fprintf(f, "  \"truncated\": %s, ", t->truncated ? "true" : "false");
	kv_str(f, "truncated_reason", t->truncated_reason);
	fprintf(f, ", \"complete\": %s,\n", t->has_end ? "true" : "false");
	fprintf(f, "  \"errors\": %llu, \"unknown_function_ids\": %llu, \"orphan_exits\": %llu, "
	           "\"corrupt_records\": %llu, \"block_gaps\": %llu, \"calls_without_exit\": %llu,\n",
	        (unsigned long long)t->errors, (unsigned long long)t->unknown_funcs,
	        (unsigned long long)t->orphan_exits, (unsigned long long)t->bad_records,
	        (unsigned long long)t->seq_gaps, (unsigned long long)t->lost_exits);
	fprintf(f, "  \"error_messages\": [");
	for (uint32_t i = 0; i < t->nerror_msgs; i++) {
		fprintf(f, "%s", i ? ", " : "");
		rp_json_str(f, t->error_msgs[i], strlen(t->error_msgs[i]));
	}
	fprintf(f, "],\n");
	write_functions(f, v, r->fs, r->nfs);
	write_analysis(f, v, &r->a, js != NULL);
	if (js) {
		write_slowest(f, v, js->slow, NULL, js->nslow);
		write_refused(f, v);
		/* medians from a sketch (within 1/128), and the sections left out */
		fprintf(f, ",\n  \"streamed\": true, \"medians_estimated\": true, \"left_out\": [");
		for (size_t i = 0; i < sizeof(STREAM_LEFT_OUT) / sizeof(*STREAM_LEFT_OUT); i++)
			fprintf(f, "%s\"%s\"", i ? ", " : "", STREAM_LEFT_OUT[i]);
		fprintf(f, "]\n}");
		return;
	}
	rp_kernels_write_json(f, &r->kernels);
	write_slowest(f, v, NULL, r->slowest, r->nslowest);
	write_findings(f, r->fd, r->nfd);
	write_refused(f, v);
	rp_behind_api_write_json(f, v, &r->behind);
	if (v->has_ioctl) {
		fprintf(f, ",\n  ");
		rp_ioctl_write_json(f, v, &r->ioctl);
	}
	write_memory(f, v);
	write_streams(f, v);
	write_devices(f, v);
	if (v->gpu) {
		fprintf(f, ",\n");
		rp_gpu_write_json(f, v);
	}
	if (v->stacks) {
		fprintf(f, ",\n");
		rp_stacks_write_json(f, v);
	}
	fprintf(f, "\n}");
}

/* "syncs": the moments every process waited at once (sync_across.c), the processes' part in
 * them, and every episode (times on the common axis). */
static void write_syncs(FILE *f, const struct rp_view *views, unsigned n, const struct rp_syncs *sp)
{
	const struct rp_syncs s = *sp;
	fprintf(f, "  \"syncs\": {\"window_ns\": %lld, \"episodes\": %zu, \"processes\": [", (long long)s.window, s.nep);
	for (unsigned k = 0; k < n; k++) {
		const struct rp_sync_proc *p = &s.proc[k];
		fprintf(f, "%s\n    {\"pid\": %u, \"waits\": %llu, \"together\": %llu, \"last\": %llu, \"waited_ns\": %lld, "
		           "\"caused_ns\": %lld}",
		        k ? "," : "", views[k].t->pid, (unsigned long long)p->waits, (unsigned long long)p->together,
		        (unsigned long long)p->last, (long long)p->waited, (long long)p->caused);
	}
	fprintf(f, "\n  ], \"list\": [");
	for (size_t i = 0; i < s.nep; i++) {
		const struct rp_sync_episode *e = &s.ep[i];
		fprintf(f, "%s\n    {\"start_ns\": %lld, \"last_arrival_ns\": %lld, \"end_ns\": %lld, \"slowest_pid\": %u}",
		        i ? "," : "", (long long)e->start, (long long)e->last_arrival, (long long)e->end,
		        views[e->slowest].t->pid);
	}
	fprintf(f, "%s]}", s.nep ? "\n  " : "");
}

/* "collectives": the processes' NCCL kernels matched by order (collectives.c): how they were
 * timed, each process's part, every matched collective (times on the common axis). */
static void write_collectives(FILE *f, const struct rp_view *views, unsigned n, const struct rp_colls *sp)
{
	const struct rp_colls s = *sp;
	fprintf(f, ",\n  \"collectives\": {\"timing\": \"%s\", \"matched\": %zu, \"mismatch_at\": ",
	        s.gpu ? "gpu" : "host", s.n);
	if (s.mismatch == SIZE_MAX)
		fprintf(f, "null");
	else
		fprintf(f, "%zu", s.mismatch);
	fprintf(f, ", \"processes\": [");
	for (unsigned k = 0; k < n; k++) {
		const struct rp_coll_proc *p = &s.proc[k];
		fprintf(f, "%s\n    {\"pid\": %u, \"kernels\": %llu, \"last\": %llu, \"waited_ns\": %lld, \"caused_ns\": %lld}",
		        k ? "," : "", views[k].t->pid, (unsigned long long)p->kernels, (unsigned long long)p->last,
		        (long long)p->waited, (long long)p->caused);
	}
	fprintf(f, "\n  ], \"list\": [");
	for (size_t i = 0; i < s.n; i++) {
		const struct rp_coll *c = &s.c[i];
		fprintf(f, "%s\n    {\"first_arrival_ns\": %lld, \"last_arrival_ns\": %lld, \"slowest_pid\": %u, ",
		        i ? "," : "", (long long)c->first, (long long)c->last, views[c->slowest].t->pid);
		fprintf(f, "\"kernel\": ");
		rp_json_str(f, c->name, c->len);
		fprintf(f, "}");
	}
	fprintf(f, "%s]}\n}", s.n ? "\n  " : "");
}

/* "merged": the traces on one time axis: how they were lined up, each process's place and share,
 * the API summary over all of them (functions matched by name). */
static void write_merged(FILE *f, struct rp_view *views, const struct rp_result *r)
{
	unsigned n = r->n;
	const struct rp_mstat *ms = r->merged->ms;
	uint32_t nms = r->merged->nms;
	int64_t span = 0;
	for (unsigned k = 0; k < n; k++) {
		int64_t e = rp_rel(&views[k], views[k].t1);
		if (e > span)
			span = e;
	}
	fprintf(f, ",\n\"merged\": {\n  \"time_axis\": \"%s\", \"span_ns\": %lld,\n  \"processes\": [",
	        views[0].axis_realtime ? "realtime" : "monotonic", (long long)span);
	for (unsigned k = 0; k < n; k++) {
		struct rp_view *v = &views[k];
		fprintf(f, "%s\n    {\"pid\": %u, ", k ? "," : "", v->t->pid);
		json_job(f, v);
		kv_str(f, "file", v->t->path);
		fprintf(f, ", \"offset_ns\": %lld, \"realtime_offset_ns\": %lld, \"duration_ns\": %lld, "
		           "\"selected_calls\": %u, \"api_ns\": %lld}",
		        (long long)v->shift, (long long)v->t->realtime_offset_ns, (long long)(v->t1 - v->t0), v->nsel,
		        (long long)r->per[k].a.api_time);
	}
	const struct rp_fstat *cells = r->merged->by_process;
	fprintf(f, "\n  ],\n  \"functions\": [");
	for (uint32_t i = 0; i < nms; i++) {
		const struct rp_fstat *s = &ms[i].s;
		fprintf(f, "%s\n    {", i ? "," : "");
		kv_str(f, "name", ms[i].name);
		fprintf(f, ", \"processes\": %u", ms[i].nproc);
		fstat_members(f, rp_cat_names[ms[i].cat], s);
		/* the same function in each process, side by side (text: API time by process) */
		fprintf(f, ", \"by_process\": [");
		for (unsigned k = 0; k < n; k++) {
			const struct rp_fstat *c = &cells[(size_t)i * n + k];
			fprintf(f, "%s{\"pid\": %u, \"calls\": %llu, \"counted_calls\": %llu, \"timed_calls\": %llu, "
			           "\"total_ns\": %lld}",
			        k ? ", " : "", views[k].t->pid, (unsigned long long)c->calls, (unsigned long long)c->counted,
			        (unsigned long long)c->timed, (long long)c->total);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "%s],\n", nms ? "\n  " : "");
	write_syncs(f, views, n, &r->merged->syncs);
	write_collectives(f, views, n, &r->merged->colls);
}

int rp_write_json(FILE *f, struct rp_view *views, const struct rp_result *r)
{
	unsigned n = r->n;
	if (n == 1) {
		write_one(f, &views[0], &r->per[0], NULL);
		fprintf(f, "\n");
		return ferror(f) ? -1 : 0;
	}
	fprintf(f, "{\"traces\": [\n");
	for (unsigned i = 0; i < n; i++) {
		if (i)
			fprintf(f, ",\n");
		write_one(f, &views[i], &r->per[i], NULL);
	}
	fprintf(f, "\n]");
	if (r->merged)
		write_merged(f, views, r);
	fprintf(f, "}\n");
	return ferror(f) ? -1 : 0;
}

int rp_write_json_streamed(FILE *f, struct rp_view *v, const struct rp_fstat *fs, uint32_t nfs,
                           const struct rp_analysis *a, const struct rp_json_streamed *js)
{
	struct rp_trace_result *r = calloc(1, sizeof(*r));
	if (!r)
		return -1;
	r->a = *a;
	r->fs = (struct rp_fstat *)fs; /* read only */
	r->nfs = nfs;
	write_one(f, v, r, js);
	free(r);
	return ferror(f) ? -1 : 0;
}
