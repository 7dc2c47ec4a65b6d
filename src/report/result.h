/* What the report shows, analysed once (result.c) between reading the traces (view.c) and
 * writing them out: the writers only format it. rp_main builds it for the format chosen.
 *
 * Per view: the GPU side, the call stacks, memory and streams (hung on the view itself:
 * rp_view.gpu, .stacks, .memory, .streams, which every writer reads), and for the text report
 * and the JSON export the summary statistics, the analysis, the findings, the kernels, the calls
 * behind the API and the ioctls. Across views (a merged report): the API summary matched by
 * name, each process's share, the moments they waited for each other and their collectives. */
#ifndef CUHOOK_REPORT_RESULT_H
#define CUHOOK_REPORT_RESULT_H

#include "behind_api.h"
#include "ioctls.h"
#include "report.h"

/* One view's sections of the text report and the JSON export. */
struct rp_trace_result {
	struct rp_analysis a;
	struct rp_fstat *fs;       /* the API summary (rp_func_stats), nfs rows */
	uint32_t nfs;
	struct rp_finding fd[RP_MAX_FINDINGS];
	unsigned nfd;
	uint32_t *slowest;         /* the --top slowest selected calls (rp_slowest) */
	uint32_t nslowest;
	struct rp_kernels kernels;
	struct rp_behind_api behind;
	struct rp_ioc_summary ioctl; /* ioctls == 0: the trace has no ioctl (no section) */
};

/* Several views in one report (rp_merged). */
struct rp_merged_result {
	struct rp_mstat *ms;       /* the API summary over all views, functions matched by name */
	uint32_t nms;
	struct rp_fstat *by_process; /* ms[i] in views[k]: by_process[i * n + k] (rp_by_process) */
	struct rp_syncs syncs;
	struct rp_colls colls;
};

struct rp_result {
	unsigned n;
	struct rp_trace_result *per; /* per view; NULL when the format shows no summary */
	struct rp_merged_result *merged; /* NULL: one view, --separate, or no summary */
};

/* Analyse views[0..n): always what every writer reads through the views (rp_view.gpu & co);
 * with `summaries` (the text report, the JSON export) the rest above. 0, or -1 when out of
 * memory (with nothing left allocated). */
int rp_result_build(struct rp_view *views, unsigned n, int summaries, struct rp_result *r);
/* Frees r and what rp_result_build hung on the views (before rp_view_free). */
void rp_result_free(struct rp_view *views, unsigned n, struct rp_result *r);

/* The writers that show the summaries. */
int rp_write_text(FILE *f, struct rp_view *v, const struct rp_trace_result *r);
/* One text report over several traces: a header per process, the merged API summary with the
 * processes' share, one timeline, then each process's own sections. */
int rp_write_text_merged(FILE *f, struct rp_view *views, const struct rp_result *r, int realtime);
int rp_write_json(FILE *f, struct rp_view *views, const struct rp_result *r);

#endif
