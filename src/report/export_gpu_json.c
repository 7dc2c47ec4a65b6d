/* The "gpu" member of --format json (export_json.c writes the rest): the view's GPU analysis
 * (gpu_analysis.c) as it is, and every selected GPU work record with the call that submitted it.
 * Present only in a trace with GPU blocks, so that other traces' JSON stays as it was. Times are
 * nanoseconds from the trace start (rp_rel), durations in ns. */
#include "report.h"

#include <string.h>

static void str(FILE *f, const char *key, const char *s)
{
	fprintf(f, "\"%s\": ", key);
	rp_json_str(f, s, strlen(s));
}

static void dist(FILE *f, const char *prefix, const struct rp_dist *d)
{
	fprintf(f, "\"%stotal_ns\": %lld, \"%savg_ns\": %.1f, \"%smed_ns\": %.1f, \"%smin_ns\": %lld, \"%smax_ns\": %lld, "
	           "\"%sstddev_ns\": %.1f",
	        prefix, (long long)d->total, prefix, d->avg, prefix, d->med, prefix, (long long)d->min, prefix,
	        (long long)d->max, prefix, d->stddev);
}

static double pct(int64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0;
}

static const char *const state_keys[RP_HOST_COUNT] = {"loading_ns", "sync_ns", "driver_ns", "outside_ns"};

static void host(FILE *f, const int64_t *h)
{
	for (int s = 0; s < RP_HOST_COUNT; s++)
		fprintf(f, "%s\"%s\": %lld", s ? ", " : "", state_keys[s], (long long)h[s]);
}

static void call_obj(FILE *f, const struct rp_view *v, uint32_t ci)
{
	if (ci == TR_NONE) {
		fprintf(f, "null");
		return;
	}
	const struct tr_call *c = &v->t->calls[ci];
	fprintf(f, "{\"tid\": %u, ", v->t->threads[c->thread].tid);
	str(f, "func", tr_func_name(v->t, c->func));
	fprintf(f, ", \"start_ns\": %lld, \"dur_ns\": %lld}", (long long)rp_rel(v, c->start_ns),
	        (long long)(tr_call_timed(c) ? tr_call_dur(c) : 0));
}

static void gap_obj(FILE *f, const struct rp_view *v, const struct rp_gpu_gap *gp)
{
	fprintf(f, "{\"device\": %u, \"start_ns\": %lld, \"gap_ns\": %lld, ", gp->device, (long long)rp_rel(v, gp->start),
	        (long long)(gp->end - gp->start));
	str(f, "before", rp_gpu_work_label(v, &v->t->gpu_work[gp->before]));
	fprintf(f, ", ");
	str(f, "after", rp_gpu_work_label(v, &v->t->gpu_work[gp->after]));
	fprintf(f, ", ");
	host(f, gp->host);
	fprintf(f, ", \"calls\": {");
	for (int s = 0; s < RP_HOST_OUTSIDE; s++) {
		fprintf(f, "%s\"%.*s\": ", s ? ", " : "", (int)(strlen(state_keys[s]) - 3), state_keys[s]);
		call_obj(f, v, gp->call[s]);
	}
	fprintf(f, "}}");
}

static void sessions(FILE *f, const struct rp_view *v)
{
	static const char *const status[CUHOOK_GPU_STATUS_COUNT] = {"started", "stopped", "no_cupti", "other_user",
	                                                            "failed"};
	const struct tr_trace *t = v->t;
	fprintf(f, "\"sessions\": [");
	for (uint32_t i = 0; i < t->ngpu_sessions; i++) {
		const struct tr_gpu_session *s = &t->gpu_sessions[i];
		fprintf(f, "%s\n      {\"session\": %u, \"status\": \"%s\", \"cupti_version\": %u, \"result\": %u, ", i ? "," : "",
		        i + 1, status[s->status], s->cupti_version, s->result);
		str(f, "path", s->path);
		fprintf(f, ", \"start_ns\": %lld, \"stop_ns\": ", (long long)rp_rel(v, s->start_ns));
		if (s->stopped)
			fprintf(f, "%lld", (long long)rp_rel(v, s->stop_ns));
		else
			fprintf(f, "null");
		fprintf(f, ", \"stopped\": %s, \"records\": %llu, \"dropped\": %llu, \"records_read\": %llu}",
		        s->stopped ? "true" : "false", (unsigned long long)s->records, (unsigned long long)s->dropped,
		        (unsigned long long)s->records_read);
	}
	fprintf(f, "%s],\n", t->ngpu_sessions ? "\n    " : "");
}

static void links(FILE *f, const char *key, const uint64_t *n)
{
	fprintf(f, "\"%s\": {", key);
	for (int r = 0; r < TR_GPU_LINK_COUNT; r++)
		fprintf(f, "%s\"%s\": %llu", r ? ", " : "", rp_gpu_link_keys[r], (unsigned long long)n[r]);
	fprintf(f, "}");
}

static void tables(FILE *f, const struct rp_view *v, const struct rp_gpu *g)
{
	const struct tr_trace *t = v->t;
	fprintf(f, "    \"kernels\": [");
	for (uint32_t i = 0; i < g->nkernels; i++) {
		const struct rp_gpu_kernel_row *r = &g->kernels[i];
		fprintf(f, "%s\n      {", i ? "," : "");
		str(f, "name", r->name);
		fprintf(f, ", \"mangled\": ");
		if (r->name_id && r->name_id < t->ngpu_names && t->gpu_names[r->name_id])
			rp_json_str(f, t->gpu_names[r->name_id], strlen(t->gpu_names[r->name_id]));
		else
			fprintf(f, "null");
		fprintf(f, ", \"instances\": %llu, \"percent\": %.1f, ", (unsigned long long)r->calls,
		        pct(r->d.total, g->kernel_time));
		dist(f, "", &r->d);
		fprintf(f, "}");
	}
	fprintf(f, "%s],\n    \"memory\": [", g->nkernels ? "\n    " : "");
	for (uint32_t i = 0; i < g->nmemops; i++) {
		const struct rp_gpu_memop_row *r = &g->memops[i];
		fprintf(f, "%s\n      {\"operation\": \"%s\", \"count\": %llu, \"bytes\": %llu, \"percent\": %.1f, ", i ? "," : "",
		        rp_gpu_op_name(r->op), (unsigned long long)r->count, (unsigned long long)r->bytes,
		        pct(r->d.total, g->memop_time));
		dist(f, "", &r->d);
		fprintf(f, ", \"avg_bytes\": %.1f, \"med_bytes\": %.1f, \"min_bytes\": %lld, \"max_bytes\": %lld, \"gb_per_s\": ",
		        r->size.avg, r->size.med, (long long)r->size.min, (long long)r->size.max);
		if (r->d.total > 0)
			fprintf(f, "%.3f}", (double)r->bytes / (double)r->d.total);
		else
			fprintf(f, "null}");
	}
	fprintf(f, "%s],\n", g->nmemops ? "\n    " : "");
}

static void devices(FILE *f, const struct rp_view *v, const struct rp_gpu *g)
{
	fprintf(f, "    \"devices\": [");
	for (uint32_t d = 0; d < g->ndevices; d++) {
		const struct rp_gpu_device *dv = &g->devices[d];
		fprintf(f, "%s\n      {\"device\": %u, \"work\": %llu, \"busy_ns\": %lld, \"busy_percent\": %.1f, "
		           "\"active_ns\": %lld, \"active_busy_percent\": %.1f,\n       \"gaps\": {\"count\": %llu, "
		           "\"total_ns\": %lld, \"median_ns\": %lld, \"max_ns\": %lld, ",
		        d ? "," : "", dv->device, (unsigned long long)dv->works, (long long)dv->busy, pct(dv->busy, g->window),
		        (long long)dv->active, pct(dv->busy, dv->active), (unsigned long long)dv->ngaps,
		        (long long)dv->gap_total, (long long)dv->gap_median, (long long)dv->gap_max);
		host(f, dv->gap_host);
		fprintf(f, "},\n       \"streams\": [");
		int first = 1;
		for (uint32_t s = 0; s < g->nstreams; s++) {
			const struct rp_gpu_stream *st = &g->streams[s];
			if (st->device != dv->device)
				continue;
			fprintf(f, "%s{\"stream\": %u, \"work\": %llu, \"busy_ns\": %lld, \"busy_percent\": %.1f, \"lanes\": %u}",
			        first ? "" : ", ", st->stream, (unsigned long long)st->works, (long long)st->busy,
			        pct(st->busy, g->window), st->nlanes);
			first = 0;
		}
		fprintf(f, "]}");
	}
	fprintf(f, "%s],\n", g->ndevices ? "\n    " : "");
	fprintf(f, "    \"gaps\": {\"count\": %llu, \"total_ns\": %lld, \"median_ns\": %lld, \"max_ns\": %lld, ",
	        (unsigned long long)g->ngaps, (long long)g->gap_total, (long long)g->gap_median, (long long)g->gap_max);
	host(f, g->gap_host);
	fprintf(f, ",\n      \"largest\": [");
	for (uint32_t k = 0; k < g->ntop; k++) {
		fprintf(f, "%s\n        ", k ? "," : "");
		gap_obj(f, v, &g->top[k]);
	}
	fprintf(f, "%s],\n      \"host_bound\": ", g->ntop ? "\n      " : "");
	if (g->host_bound.end > g->host_bound.start)
		gap_obj(f, v, &g->host_bound);
	else
		fprintf(f, "null");
	fprintf(f, "},\n");
}

static void latency(FILE *f, const struct rp_gpu *g)
{
	const struct rp_gpu_latency *l = &g->latency;
	fprintf(f, "    \"launch_latency\": {\"count\": %llu, \"negative\": %llu, \"min_ns\": %lld, \"med_ns\": %.1f, "
	           "\"p90_ns\": %lld, \"p99_ns\": %lld, \"max_ns\": %lld, \"avg_ns\": %.1f, \"histogram\": [",
	        (unsigned long long)l->n, (unsigned long long)l->negative, (long long)l->d.min, l->d.med,
	        (long long)l->p90, (long long)l->p99, (long long)l->d.max, l->d.avg);
	for (int b = 0; b < RP_LAT_BUCKETS; b++) {
		fprintf(f, "%s{\"below_ns\": ", b ? ", " : "");
		if (b < RP_LAT_BUCKETS - 1)
			fprintf(f, "%lld", (long long)rp_lat_bounds[b]);
		else
			fprintf(f, "null");
		fprintf(f, ", \"count\": %llu}", (unsigned long long)l->hist[b]);
	}
	fprintf(f, "]},\n");
}

static void record(FILE *f, const struct rp_view *v, const struct tr_gpu_work *w)
{
	const struct tr_trace *t = v->t;
	fprintf(f, "{\"kind\": \"%s\", ", rp_gpu_kind_names[w->kind]);
	str(f, "name", rp_gpu_work_label(v, w));
	fprintf(f, ", \"start_ns\": %lld, \"end_ns\": %lld, \"dur_ns\": %lld, \"device\": %u, \"context\": %u, "
	           "\"stream\": %u, \"correlation\": %u, \"session\": %u, \"graph_id\": %u, \"graph_node_id\": %llu, ",
	        (long long)rp_rel(v, w->start_ns), (long long)rp_rel(v, w->end_ns), (long long)(w->end_ns - w->start_ns),
	        w->device, w->context, w->stream, w->correlation, w->session + 1, w->graph_id,
	        (unsigned long long)w->graph_node_id);
	if (w->kind == TR_GPU_KERNEL) {
		const char *m = tr_gpu_work_name(t, w);
		fprintf(f, "\"mangled\": ");
		if (m)
			rp_json_str(f, m, strlen(m));
		else
			fprintf(f, "null");
		fprintf(f, ", \"grid\": [%d, %d, %d], \"block\": [%d, %d, %d], \"shared_static\": %u, \"shared_dynamic\": %u, "
		           "\"registers\": %u, ",
		        w->grid[0], w->grid[1], w->grid[2], w->block[0], w->block[1], w->block[2], w->shared_static,
		        w->shared_dynamic, w->registers);
	} else if (w->kind == TR_GPU_MEMCPY) {
		fprintf(f, "\"copy_kind\": %u, \"src_kind\": %u, \"dst_kind\": %u, \"flags\": %u, \"bytes\": %llu, ",
		        w->copy_kind, w->src_kind, w->dst_kind, w->flags, (unsigned long long)w->bytes);
	} else {
		fprintf(f, "\"value\": %u, \"bytes\": %llu, \"mem_kind\": %u, \"flags\": %u, ", w->value,
		        (unsigned long long)w->bytes, w->mem_kind, w->flags);
	}
	fprintf(f, "\"api\": ");
	if (w->api != TR_NONE) {
		const struct tr_gpu_api *a = &t->gpu_api[w->api];
		fprintf(f, "{\"start_ns\": %lld, \"end_ns\": %lld, \"tid\": %u, \"func\": ", (long long)rp_rel(v, a->start_ns),
		        (long long)rp_rel(v, a->end_ns), a->tid);
		if (a->func < t->nfuncs && t->funcs[a->func].defined)
			rp_json_str(f, t->funcs[a->func].name, strlen(t->funcs[a->func].name));
		else
			fprintf(f, "null");
		fprintf(f, ", \"cbid\": %u, \"ret\": %u}, \"latency_ns\": %lld", a->cbid, a->ret,
		        (long long)(w->start_ns - a->start_ns));
	} else {
		fprintf(f, "null, \"latency_ns\": null");
	}
	fprintf(f, ", \"link\": \"%s\", \"call\": ", rp_gpu_link_keys[w->link]);
	call_obj(f, v, w->call);
	fprintf(f, "}");
}

void rp_gpu_write_json(FILE *f, const struct rp_view *v)
{
	const struct rp_gpu *g = v->gpu;
	const struct tr_trace *t = v->t;
	fprintf(f, "  \"gpu\": {\n    ");
	sessions(f, v);
	fprintf(f, "    \"work_records\": %u, \"api_records\": %u, ", t->ngpu_work, t->ngpu_api);
	links(f, "links", t->gpu_links.work);
	fprintf(f, ", \"links_via_runtime\": %llu, ", (unsigned long long)t->gpu_links.via_runtime);
	links(f, "api_links", t->gpu_links.api);
	fprintf(f, ",\n    \"selected\": {\"work\": %u, \"kernels\": %llu, \"memcpy\": %llu, \"memset\": %llu, ", g->nsel,
	        (unsigned long long)g->nkind[TR_GPU_KERNEL], (unsigned long long)g->nkind[TR_GPU_MEMCPY],
	        (unsigned long long)g->nkind[TR_GPU_MEMSET]);
	links(f, "links", g->link);
	fprintf(f, ", \"flows\": %u},\n", g->nflows);
	fprintf(f, "    \"window_ns\": %lld, \"kernel_ns\": %lld, \"memory_ns\": %lld,\n", (long long)g->window,
	        (long long)g->kernel_time, (long long)g->memop_time);
	tables(f, v, g);
	devices(f, v, g);
	latency(f, g);
	fprintf(f, "    \"records\": [");
	for (uint32_t i = 0; i < g->nsel; i++) {
		fprintf(f, "%s\n      ", i ? "," : "");
		record(f, v, &t->gpu_work[g->sel[i]]);
	}
	fprintf(f, "%s]\n  }", g->nsel ? "\n    " : "");
}
