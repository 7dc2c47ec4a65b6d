/* The report's analysis, once for every writer (result.h). The order of the view's own analyses
 * is the one they build on: the GPU side, then the stacks, the devices (memory reads them), memory
 * and streams. */
#include "result.h"

#include <stdlib.h>
#include <string.h>

static int analyse_view(struct rp_view *v)
{
	return rp_gpu_analyze(v, &v->gpu) || rp_stacks_analyze(v, &v->stacks) || rp_devices_analyze(v, &v->devices) ||
	               rp_memory_analyze(v, &v->memory) || rp_streams_analyze(v, &v->streams)
	           ? -1
	           : 0;
}

static void free_view(struct rp_view *v)
{
	rp_gpu_free(v->gpu);
	rp_stacks_free(v->stacks);
	rp_memory_free(v->memory);
	rp_streams_free(v->streams);
	rp_devices_free(v->devices);
	v->gpu = NULL;
	v->devices = NULL;
	v->stacks = NULL;
	v->memory = NULL;
	v->streams = NULL;
}

static int summarize_view(const struct rp_view *v, struct rp_trace_result *r)
{
	if (rp_analyze(v, &r->a) || rp_func_stats(v, &r->fs, &r->nfs))
		return -1;
	r->nfd = rp_findings(v, &r->a, r->fs, r->nfs, r->fd, RP_MAX_FINDINGS);
	r->nslowest = rp_slowest(v, v->o->top, &r->slowest);
	return rp_kernel_stats(v, &r->kernels) || rp_behind_api_analyze(v, &r->behind) || rp_ioctl_summary(v, &r->ioctl)
	               ? -1
	               : 0;
}

static void free_summary(struct rp_trace_result *r)
{
	free(r->fs);
	free(r->slowest);
	rp_kernels_free(&r->kernels);
	rp_behind_api_free(&r->behind);
	rp_ioctl_summary_free(&r->ioctl);
}

static int summarize_merged(const struct rp_view *views, unsigned n, struct rp_merged_result *m)
{
	if (rp_merged_stats(views, n, &m->ms, &m->nms))
		return -1;
	if (m->nms && rp_by_process(views, n, m->ms, m->nms, &m->by_process))
		return -1;
	return rp_sync_across(views, n, &m->syncs) || rp_collectives(views, n, &m->colls) ? -1 : 0;
}

static void free_merged(struct rp_merged_result *m)
{
	free(m->ms);
	free(m->by_process);
	rp_syncs_free(&m->syncs);
	rp_colls_free(&m->colls);
}

int rp_result_build(struct rp_view *views, unsigned n, int summaries, struct rp_result *r)
{
	memset(r, 0, sizeof(*r));
	r->n = n;
	for (unsigned k = 0; k < n; k++)
		if (analyse_view(&views[k]))
			goto oom;
	if (!summaries)
		return 0;
	/* calloc'ed: each part is freed whether or not it was reached */
	r->per = calloc((size_t)n + 1, sizeof(*r->per));
	if (!r->per)
		goto oom;
	for (unsigned k = 0; k < n; k++)
		if (summarize_view(&views[k], &r->per[k]))
			goto oom;
	if (rp_merged(views, n)) {
		r->merged = calloc(1, sizeof(*r->merged));
		if (!r->merged || summarize_merged(views, n, r->merged))
			goto oom;
	}
	return 0;
oom:
	rp_result_free(views, n, r);
	return -1;
}

void rp_result_free(struct rp_view *views, unsigned n, struct rp_result *r)
{
	for (unsigned k = 0; k < n; k++) {
		free_view(&views[k]);
		if (r->per)
			free_summary(&r->per[k]);
	}
	if (r->merged)
		free_merged(r->merged);
	free(r->per);
	free(r->merged);
	memset(r, 0, sizeof(*r));
}
