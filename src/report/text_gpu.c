/* The GPU sections of the text report, from the view's GPU analysis (gpu_analysis.c): kernels
 * (as nsys's cuda_gpu_kern_sum), copies and memsets by time and by size with the GPU-measured
 * bandwidth (cuda_gpu_mem_time_sum, cuda_gpu_mem_size_sum), busy time per device and stream,
 * idle gaps and what the host was doing meanwhile, launch latency, the GPU sessions and the
 * records that could not be linked. Nothing is computed here but percentages. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

#define BOLD(v) ((v)->o->color ? "\033[1m" : "")
#define DIM(v) ((v)->o->color ? "\033[2m" : "")
#define RESET(v) ((v)->o->color ? "\033[0m" : "")

#define D(buf, ns) rp_fmt_dur(buf, sizeof(buf), (double)(ns))

static double pct(int64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0;
}

/* "13.0.1 " from cuptiGetVersion()'s 130001; "" when the agent did not know it */
static const char *cupti_version(uint32_t v, char *buf, size_t len)
{
	if (v)
		snprintf(buf, len, "%u.%u.%u ", v / 10000, v / 100 % 100, v % 100);
	else
		buf[0] = 0;
	return buf;
}

/* ---- tables ------------------------------------------------------------------------------------ */

#define MAX_COLS 10
typedef char row_cells[MAX_COLS][48];

/* Columns right-aligned to their widest cell, then the name, as the API summary prints them. */
static void table(FILE *f, const struct rp_view *v, const char *const *heads, int ncols, const row_cells *cells,
                  const char *const *names, uint32_t nrows)
{
	int w[MAX_COLS];
	for (int c = 0; c < ncols; c++) {
		w[c] = (int)strlen(heads[c]);
		for (uint32_t r = 0; r < nrows; r++)
			if ((int)strlen(cells[r][c]) > w[c])
				w[c] = (int)strlen(cells[r][c]);
	}
	fprintf(f, " ");
	for (int c = 0; c <= ncols; c++)
		fprintf(f, "  %s%*s%s", BOLD(v), c == ncols ? 0 : w[c], heads[c], RESET(v));
	fprintf(f, "\n ");
	for (int c = 0; c <= ncols; c++) {
		fprintf(f, "  ");
		for (int k = 0, l = c == ncols ? (int)strlen(heads[c]) : w[c]; k < l; k++)
			putc('-', f);
	}
	fprintf(f, "\n");
	for (uint32_t r = 0; r < nrows; r++) {
		fprintf(f, " ");
		for (int c = 0; c < ncols; c++)
			fprintf(f, "  %*s", w[c], cells[r][c]);
		fprintf(f, "  %s\n", rp_safe(names[r]));
	}
}

/* Time (%), Total, count, Avg, Med, Min, Max, StdDev of a distribution, into cells[0..7]. */
static void dist_cells(char (*cell)[48], const struct rp_dist *d, uint64_t n, int64_t sum)
{
	snprintf(cell[0], 48, "%.1f", pct(d->total, sum));
	rp_fmt_dur(cell[1], 48, (double)d->total);
	snprintf(cell[2], 48, "%llu", (unsigned long long)n);
	rp_fmt_dur(cell[3], 48, d->avg);
	rp_fmt_dur(cell[4], 48, d->med);
	rp_fmt_dur(cell[5], 48, (double)d->min);
	rp_fmt_dur(cell[6], 48, (double)d->max);
	rp_fmt_dur(cell[7], 48, d->stddev);
}

static void write_kernels(FILE *f, const struct rp_view *v, const struct rp_gpu *g)
{
	static const char *const heads[] = {"Time (%)", "Total Time", "Instances", "Avg", "Med", "Min", "Max",
	                                    "StdDev", "Name"};
	if (!g->nkernels)
		return;
	row_cells *cells = calloc(g->nkernels, sizeof(*cells));
	const char **names = calloc(g->nkernels, sizeof(*names));
	if (cells && names) {
		rp_text_section(f, v, "CUDA GPU kernel summary (GPU time)");
		for (uint32_t i = 0; i < g->nkernels; i++) {
			dist_cells(cells[i], &g->kernels[i].d, g->kernels[i].calls, g->kernel_time);
			names[i] = g->kernels[i].name;
		}
		table(f, v, heads, 8, cells, names, g->nkernels);
	}
	free(cells);
	free(names);
}

static void write_memops(FILE *f, const struct rp_view *v, const struct rp_gpu *g)
{
	static const char *const time_heads[] = {"Time (%)", "Total Time", "Count", "Avg", "Med", "Min", "Max",
	                                         "StdDev", "Operation"};
	static const char *const size_heads[] = {"Total", "Count", "Avg", "Med", "Min", "Max", "StdDev", "GB/s",
	                                         "Operation"};
	if (!g->nmemops)
		return;
	row_cells *cells = calloc(g->nmemops, sizeof(*cells));
	const char **names = calloc(g->nmemops, sizeof(*names));
	if (cells && names) {
		rp_text_section(f, v, "CUDA GPU copies and memsets by time");
		for (uint32_t i = 0; i < g->nmemops; i++) {
			dist_cells(cells[i], &g->memops[i].d, g->memops[i].count, g->memop_time);
			names[i] = rp_gpu_op_name(g->memops[i].op);
		}
		table(f, v, time_heads, 8, cells, names, g->nmemops);
		rp_text_section(f, v, "CUDA GPU copies and memsets by size (GB/s: bytes over GPU time)");
		for (uint32_t i = 0; i < g->nmemops; i++) {
			const struct rp_gpu_memop_row *r = &g->memops[i];
			char(*c)[48] = cells[i];
			rp_fmt_bytes(c[0], 48, (double)r->bytes);
			snprintf(c[1], 48, "%llu", (unsigned long long)r->count);
			rp_fmt_bytes(c[2], 48, r->size.avg);
			rp_fmt_bytes(c[3], 48, r->size.med);
			rp_fmt_bytes(c[4], 48, (double)r->size.min);
			rp_fmt_bytes(c[5], 48, (double)r->size.max);
			rp_fmt_bytes(c[6], 48, r->size.stddev);
			if (r->d.total > 0)
				snprintf(c[7], 48, "%.2f", (double)r->bytes / (double)r->d.total);
			else
				snprintf(c[7], 48, "-");
		}
		table(f, v, size_heads, 8, cells, names, g->nmemops);
	}
	free(cells);
	free(names);
}

/* ---- busy, gaps, latency ----------------------------------------------------------------------- */

static void write_busy(FILE *f, const struct rp_view *v, const struct rp_gpu *g)
{
	char b1[32], b2[32];
	if (!g->ndevices)
		return;
	char title[128];
	snprintf(title, sizeof(title), "GPU busy (over the %s the GPU sessions recorded)", D(b1, g->window));
	rp_text_section(f, v, title);
	fprintf(f, "  %s%-8s %-10s %8s %12s %9s %12s %15s%s\n", BOLD(v), "Device", "Stream", "Work", "Busy",
	        "Busy (%)", "Active", "Of active (%)", RESET(v));
	for (uint32_t d = 0; d < g->ndevices; d++) {
		const struct rp_gpu_device *dv = &g->devices[d];
		fprintf(f, "  %-8u %-10s %8llu %12s %9.1f %12s %15.1f\n", dv->device, "all", (unsigned long long)dv->works,
		        D(b1, dv->busy), pct(dv->busy, g->window), D(b2, dv->active), pct(dv->busy, dv->active));
		for (uint32_t s = 0; s < g->nstreams; s++) {
			const struct rp_gpu_stream *st = &g->streams[s];
			if (st->device != dv->device)
				continue;
			fprintf(f, "  %-8s %-10u %8llu %12s %9.1f\n", "", st->stream, (unsigned long long)st->works,
			        D(b1, st->busy), pct(st->busy, g->window));
		}
	}
	fprintf(f, "  %s(busy: the time its work ran, overlaps counted once; active: from its first work to its last, "
	           "per session)%s\n", DIM(v), RESET(v));
}

/* "loading 300.000 us (cuLibraryLoadData, main), sync ..." for the host states with time. */
static void host_states(FILE *f, const struct rp_view *v, const int64_t *host, const uint32_t *calls, int64_t whole)
{
	char b[32], th[32];
	int first = 1;
	for (int s = 0; s < RP_HOST_COUNT; s++) {
		if (!host[s])
			continue;
		fprintf(f, "%s%s %s", first ? "" : ", ", rp_host_state_names[s], D(b, host[s]));
		if (whole)
			fprintf(f, " (%.1f%%)", pct(host[s], whole));
		if (calls && calls[s] != TR_NONE) {
			const struct tr_call *c = &v->t->calls[calls[s]];
			fprintf(f, " (%s, %s)", rp_safe(tr_func_name(v->t, c->func)),
			        rp_safe(rp_thread_label(v, c->thread, th, sizeof(th))));
		}
		first = 0;
	}
}

static void write_gaps(FILE *f, const struct rp_view *v, const struct rp_gpu *g)
{
	char b1[32], b2[32], b3[32], b4[32];
	if (!g->ndevices)
		return;
	rp_text_section(f, v, "GPU idle gaps (a device ran nothing between two pieces of its work)");
	if (!g->ngaps) {
		fprintf(f, "  none: every device ran its work without a pause\n");
		return;
	}
	fprintf(f, "  %llu gap%s: total %s, median %s, max %s\n", (unsigned long long)g->ngaps, g->ngaps == 1 ? "" : "s",
	        D(b1, g->gap_total), D(b2, g->gap_median), D(b3, g->gap_max));
	fprintf(f, "  meanwhile the host was in: ");
	host_states(f, v, g->gap_host, g->host_calls, g->gap_total);
	fprintf(f, "\n");
	if (g->ndevices > 1)
		for (uint32_t d = 0; d < g->ndevices; d++) {
			const struct rp_gpu_device *dv = &g->devices[d];
			if (!dv->ngaps) {
				fprintf(f, "  device %u: no gap\n", dv->device);
				continue;
			}
			fprintf(f, "  device %u: %llu gap%s, total %s, median %s, max %s\n", dv->device,
			        (unsigned long long)dv->ngaps, dv->ngaps == 1 ? "" : "s", D(b1, dv->gap_total),
			        D(b2, dv->gap_median), D(b3, dv->gap_max));
		}
	fprintf(f, "  largest:\n");
	for (uint32_t k = 0; k < g->ntop; k++) {
		const struct rp_gpu_gap *gp = &g->top[k];
		const struct tr_gpu_work *w = v->t->gpu_work;
		fprintf(f, "  %12s at %10s on device %u, after %s, before %s: ", D(b1, gp->end - gp->start),
		        D(b4, gp->start - v->t0), gp->device, rp_safe(rp_gpu_work_label(v, &w[gp->before])),
		        rp_safe(rp_gpu_work_label(v, &w[gp->after])));
		host_states(f, v, gp->host, gp->call, 0);
		fprintf(f, "\n");
	}
	fprintf(f, "  %s(the host's state by priority: loading (module, library, function loading, init, context "
	           "creation, a first call >= 10x its function's median) on any thread, else a sync call, else another "
	           "driver call, else outside the driver)%s\n",
	        DIM(v), RESET(v));
}

static void write_latency(FILE *f, const struct rp_view *v, const struct rp_gpu *g)
{
	static const char *const labels[RP_LAT_BUCKETS] = {"< 10 us", "10-100 us", "100 us-1 ms", "1-10 ms",
	                                                   "10-100 ms", ">= 100 ms"};
	const struct rp_gpu_latency *l = &g->latency;
	char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];
	if (!l->n)
		return;
	rp_text_section(f, v, "Launch latency (submission, the API record's start, to the GPU's start)");
	fprintf(f, "  %llu kernels, copies and memsets: min %s, median %s, p90 %s, p99 %s, max %s, average %s\n",
	        (unsigned long long)l->n, D(b1, (double)l->d.min), D(b2, l->d.med), D(b3, l->p90), D(b4, l->p99), D(b5, (double)l->d.max),
	        D(b6, l->d.avg));
	uint64_t most = 1;
	for (int i = 0; i < RP_LAT_BUCKETS; i++)
		if (l->hist[i] > most)
			most = l->hist[i];
	for (int i = 0; i < RP_LAT_BUCKETS; i++) {
		fprintf(f, "  %12s %8llu  ", labels[i], (unsigned long long)l->hist[i]);
		for (uint64_t k = 0, n = (l->hist[i] * 50 + most - 1) / most; k < n; k++)
			putc('#', f);
		fprintf(f, "\n");
	}
	if (l->negative)
		fprintf(f, "  %llu started on the GPU before their API record began (counted as 0)\n",
		        (unsigned long long)l->negative);
}

/* ---- sessions and links -------------------------------------------------------------------------- */

#define UNLINKED_SHOWN 5

static void write_sessions(FILE *f, const struct rp_view *v, const struct rp_gpu *g)
{
	const struct tr_trace *t = v->t;
	char b1[32], b2[32], b3[32], ver[32];
	rp_text_section(f, v, "GPU sessions (CUPTI)");
	for (uint32_t i = 0; i < t->ngpu_sessions; i++) {
		const struct tr_gpu_session *s = &t->gpu_sessions[i];
		fprintf(f, "  %u  ", i + 1);
		switch (s->status) {
		case CUHOOK_GPU_STARTED:
			fprintf(f, "recorded from %s", D(b1, s->start_ns - v->t0));
			if (s->stopped)
				fprintf(f, " to %s (%s), %llu records, %llu dropped by CUPTI", D(b2, s->stop_ns - v->t0),
				        D(b3, s->stop_ns - s->start_ns), (unsigned long long)s->records,
				        (unsigned long long)s->dropped);
			else
				fprintf(f, ", never stopped (the trace ends first), %llu records read",
				        (unsigned long long)s->records_read);
			fprintf(f, "; CUPTI %s%s\n", cupti_version(s->cupti_version, ver, sizeof(ver)), rp_safe(s->path));
			break;
		case CUHOOK_GPU_OTHER_USER:
			fprintf(f, "not recorded at %s: another CUPTI user owns the process (a profiler, nsys, a "
			           "CUDA_INJECTION64_PATH tool); the API calls are traced%s%s\n",
			        D(b1, s->start_ns - v->t0), s->path[0] ? "; CUPTI " : "", rp_safe(s->path));
			break;
		case CUHOOK_GPU_NO_CUPTI:
			fprintf(f, "not recorded at %s: no CUPTI library found%s%s%s\n", D(b1, s->start_ns - v->t0),
			        s->path[0] ? " (tried: " : "", rp_safe(s->path), s->path[0] ? ")" : "");
			break;
		default:
			fprintf(f, "not recorded at %s: CUPTI refused (CUptiResult %u)%s%s\n", D(b1, s->start_ns - v->t0),
			        s->result, s->path[0] ? "; CUPTI " : "", rp_safe(s->path));
			break;
		}
	}
	if (!t->ngpu_work && !t->ngpu_api)
		return;
	uint64_t unlinked = g->nsel - g->link[TR_GPU_LINKED];
	fprintf(f, "  %u work records (%u selected: %llu kernel%s, %llu cop%s, %llu memset%s), %u API records; "
	           "%llu linked to the call that submitted them",
	        t->ngpu_work, g->nsel, (unsigned long long)g->nkind[TR_GPU_KERNEL], g->nkind[TR_GPU_KERNEL] == 1 ? "" : "s",
	        (unsigned long long)g->nkind[TR_GPU_MEMCPY], g->nkind[TR_GPU_MEMCPY] == 1 ? "y" : "ies",
	        (unsigned long long)g->nkind[TR_GPU_MEMSET], g->nkind[TR_GPU_MEMSET] == 1 ? "" : "s", t->ngpu_api,
	        (unsigned long long)g->link[TR_GPU_LINKED]);
	if (unlinked) {
		fprintf(f, ", %llu not:", (unsigned long long)unlinked);
		for (int r = TR_GPU_NO_API, first = 1; r < TR_GPU_LINK_COUNT; r++)
			if (g->link[r]) {
				fprintf(f, "%s %llu %s", first ? "" : ",", (unsigned long long)g->link[r], rp_gpu_link_names[r]);
				first = 0;
			}
	}
	fprintf(f, "\n");
	for (uint32_t i = 0, shown = 0; i < g->nsel && shown < UNLINKED_SHOWN; i++) {
		const struct tr_gpu_work *w = &t->gpu_work[g->sel[i]];
		if (w->link == TR_GPU_LINKED)
			continue;
		fprintf(f, "     %s at %s on device %u (correlation id %u, session %u): %s\n", rp_safe(rp_gpu_work_label(v, w)),
		        D(b1, w->start_ns - v->t0), w->device, w->correlation, w->session + 1, rp_gpu_link_names[w->link]);
		shown++;
	}
}

void rp_gpu_header_line(FILE *f, const struct rp_view *v)
{
	const struct tr_trace *t = v->t;
	if (!v->gpu)
		return;
	uint32_t started = 0;
	for (uint32_t i = 0; i < t->ngpu_sessions; i++)
		started += t->gpu_sessions[i].status == CUHOOK_GPU_STARTED;
	const struct tr_gpu_link_stats *l = &t->gpu_links;
	uint64_t unlinked = t->ngpu_work - l->work[TR_GPU_LINKED];
	fprintf(f, "  gpu        %u work records, %llu linked to their call", t->ngpu_work,
	        (unsigned long long)l->work[TR_GPU_LINKED]);
	if (l->via_runtime)
		fprintf(f, " (%llu through the CUDA runtime's records)", (unsigned long long)l->via_runtime);
	fprintf(f, ", %llu unlinked", (unsigned long long)unlinked);
	if (unlinked) {
		fprintf(f, " (");
		for (int r = TR_GPU_NO_API, first = 1; r < TR_GPU_LINK_COUNT; r++)
			if (l->work[r]) {
				fprintf(f, "%s%llu %s", first ? "" : ", ", (unsigned long long)l->work[r], rp_gpu_link_names[r]);
				first = 0;
			}
		fprintf(f, ")");
	}
	fprintf(f, "; %u GPU session%s, %u recorded\n", t->ngpu_sessions, t->ngpu_sessions == 1 ? "" : "s", started);
}

void rp_gpu_write_text(FILE *f, const struct rp_view *v)
{
	const struct rp_gpu *g = v->gpu;
	if (!g)
		return;
	write_kernels(f, v, g);
	write_memops(f, v, g);
	write_busy(f, v, g);
	write_gaps(f, v, g);
	write_latency(f, v, g);
	write_sessions(f, v, g);
}
