/* The ASCII timeline of the text report: one row per thread, the run divided into --width
 * columns; each column shows the category in which that thread spent most of the column's time
 * inside outermost driver calls, or '.' when it made no driver call then. A trace with GPU
 * records adds a row per device after its threads: K where the device spent most of the column
 * running kernels, T copying or setting memory, '.' idle. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

enum { CL_NONE, CL_INIT, CL_MEM, CL_XFER, CL_KERNEL, CL_SYNC, CL_OTHER, CL_COUNT };

static const char cl_char[CL_COUNT] = {'.', 'I', 'M', 'T', 'K', 'S', 'o'};
static const char *const cl_color[CL_COUNT] = {"\033[2m", "\033[34m", "\033[35m", "\033[36m", "\033[32m",
                                               "\033[31m", ""};

static int class_of(uint8_t cat)
{
	switch (cat) {
	case RP_CAT_INIT:
	case RP_CAT_CONTEXT:
	case RP_CAT_MODULE:
		return CL_INIT;
	case RP_CAT_MEMORY:
		return CL_MEM;
	case RP_CAT_TRANSFER:
		return CL_XFER;
	case RP_CAT_LAUNCH:
	case RP_CAT_GRAPH:
		return CL_KERNEL;
	case RP_CAT_SYNC:
		return CL_SYNC;
	default:
		return CL_OTHER;
	}
}

#define MAX_ROWS 64

/* Adds [s, e) (on the common axis, ns) of class cl to a row's columns; an interval without
 * duration adds a trace of itself, so that it still shows where nothing else happens. */
static void add_interval(double *a, double s, double e, int cl, double colw, unsigned w, int64_t span)
{
	if (s < 0)
		s = 0;
	if (s > (double)span)
		s = (double)span;
	if (e > (double)span)
		e = (double)span;
	unsigned c0 = s / colw >= w ? w - 1 : (unsigned)(s / colw);
	if (e <= s) {
		a[c0 * CL_COUNT + cl] += 1e-3;
		return;
	}
	unsigned c1 = e / colw >= w ? w - 1 : (unsigned)(e / colw);
	for (unsigned q = c0; q <= c1; q++) {
		double lo = q * colw, hi = lo + colw;
		double ov = (e < hi ? e : hi) - (s > lo ? s : lo);
		if (ov > 0)
			a[q * CL_COUNT + cl] += ov;
	}
}

static void print_row(FILE *f, const char *label, int lw, int indent, const double *a, unsigned w, int color)
{
	fprintf(f, "  %s%-*s |", indent ? "  " : "", indent ? lw - 2 : lw, label);
	int cur = -1;
	for (unsigned q = 0; q < w; q++) {
		int best = CL_NONE;
		double bv = 0;
		for (int cl = 1; cl < CL_COUNT; cl++)
			if (a[q * CL_COUNT + cl] > bv) {
				bv = a[q * CL_COUNT + cl];
				best = cl;
			}
		if (color && best != cur) {
			fprintf(f, "\033[0m%s", cl_color[best]);
			cur = best;
		}
		putc(cl_char[best], f);
	}
	fprintf(f, "%s|\n", color ? "\033[0m" : "");
}

/* The GPU rows of a view: one per device of its GPU analysis (row[k][nthreads + d]). */
static uint32_t ndevices(const struct rp_view *v)
{
	return v->gpu ? v->gpu->ndevices : 0;
}

static uint32_t device_index(const struct rp_view *v, uint32_t device)
{
	for (uint32_t d = 0; d < v->gpu->ndevices; d++)
		if (v->gpu->devices[d].device == device)
			return d;
	return TR_NONE;
}

/* Rows: the threads with selected calls, view after view (so grouped by process), in thread
 * order, at most MAX_ROWS in all. Columns: the common time axis (one view: its own span). */
void rp_text_timeline(FILE *f, struct rp_view *views, unsigned n)
{
	const struct rp_view *v0 = &views[0];
	unsigned w = v0->o->width ? v0->o->width : 100;
	int64_t span = 0;
	uint64_t nsel = 0;
	for (unsigned k = 0; k < n; k++) {
		int64_t e = rp_rel(&views[k], views[k].t1);
		if (e > span)
			span = e;
		nsel += views[k].nsel;
	}
	if (span <= 0 || !nsel)
		return;
	uint32_t **row = calloc(n, sizeof(*row));
	uint32_t nrows = 0, hidden = 0;
	double *acc = NULL;
	if (!row)
		return;
	for (unsigned k = 0; k < n; k++) {
		const struct rp_view *v = &views[k];
		const struct tr_trace *t = v->t;
		row[k] = malloc(((size_t)t->nthreads + ndevices(v) + 1) * sizeof(**row));
		if (!row[k])
			goto out;
		for (uint32_t i = 0; i < t->nthreads; i++)
			row[k][i] = TR_NONE;
		/* in thread order (the order of the header's thread list) */
		for (uint32_t i = 0; i < v->nsel; i++)
			row[k][t->calls[v->sel[i]].thread] = TR_NONE - 2;
		for (uint32_t i = 0; i < t->nthreads; i++) {
			if (row[k][i] == TR_NONE)
				continue;
			if (nrows < MAX_ROWS)
				row[k][i] = nrows++;
			else {
				row[k][i] = TR_NONE - 1;
				hidden++;
			}
		}
		for (uint32_t d = 0; d < ndevices(v); d++)
			row[k][t->nthreads + d] = nrows < MAX_ROWS ? nrows++ : (hidden++, TR_NONE - 1);
	}
	acc = calloc((size_t)nrows * w * CL_COUNT, sizeof(*acc));
	if (!acc)
		goto out;
	double colw = (double)span / w;
	for (unsigned k = 0; k < n; k++) {
		const struct rp_view *v = &views[k];
		const struct tr_trace *t = v->t;
		for (uint32_t i = 0; i < v->nsel; i++) {
			const struct tr_call *c = &t->calls[v->sel[i]];
			uint32_t r = row[k][c->thread];
			if (c->parent != TR_NONE || r >= nrows)
				continue;
			add_interval(acc + ((size_t)r * w) * CL_COUNT, (double)rp_rel(v, c->start_ns),
			             (double)rp_rel(v, c->end_ns), class_of(v->fi[c->func].cat), colw, w, span);
		}
		for (uint32_t i = 0; v->gpu && i < v->gpu->nsel; i++) {
			const struct tr_gpu_work *g = &t->gpu_work[v->gpu->sel[i]];
			uint32_t d = device_index(v, g->device);
			uint32_t r = d == TR_NONE ? TR_NONE : row[k][t->nthreads + d];
			if (r >= nrows)
				continue;
			add_interval(acc + ((size_t)r * w) * CL_COUNT, (double)rp_rel(v, g->start_ns), (double)rp_rel(v, g->end_ns),
			             g->kind == TR_GPU_KERNEL ? CL_KERNEL : CL_XFER, colw, w, span);
		}
	}
	int color = v0->o->color;
	char b[32];
	fprintf(f, "\n%sTimeline%s (%s per column%s)\n", color ? "\033[1m" : "", color ? "\033[0m" : "",
	        rp_fmt_dur(b, sizeof(b), colw), n > 1 ? ", all processes on one time axis" : "");
	fprintf(f, "  legend: ");
	static const char *const names[CL_COUNT] = {"no driver call", "init/context/module", "memory", "transfer",
	                                            "kernel launch", "sync", "other"};
	for (int q = 1; q < CL_COUNT; q++)
		fprintf(f, "%s%c%s %s  ", color ? cl_color[q] : "", cl_char[q], color ? "\033[0m" : "", names[q]);
	fprintf(f, ". %s\n", names[0]);
	int gpu_rows = 0;
	for (unsigned k = 0; k < n; k++)
		gpu_rows += ndevices(&views[k]) > 0;
	if (gpu_rows)
		fprintf(f, "  GPU rows: K running kernels, T copying or setting memory, . idle\n");
	char label[32];
	int lw = 6;
	for (unsigned k = 0; k < n; k++)
		for (uint32_t i = 0; i < views[k].t->nthreads; i++) {
			if (row[k][i] >= nrows)
				continue;
			int l = (int)strlen(rp_safe(rp_thread_label(&views[k], i, label, sizeof(label)))) + (n > 1 ? 2 : 0);
			if (l > lw)
				lw = l;
		}
	for (unsigned k = 0; k < n; k++) {
		const struct rp_view *v = &views[k];
		const struct tr_trace *t = v->t;
		int shown = 0;
		char proc[64];
		for (uint32_t i = 0; i < t->nthreads; i++) {
			if (row[k][i] >= nrows)
				continue;
			if (n > 1 && !shown++)
				fprintf(f, "  %s %s\n", rp_proc_label(v, proc, sizeof(proc)),
				        t->cmdline[0] ? rp_safe(t->cmdline) : "?");
			rp_thread_label(v, i, label, sizeof(label));
			print_row(f, rp_safe(label), lw, n > 1, acc + ((size_t)row[k][i] * w) * CL_COUNT, w, color);
		}
		for (uint32_t d = 0; d < ndevices(v); d++) {
			uint32_t r = row[k][t->nthreads + d];
			if (r >= nrows)
				continue;
			if (n > 1 && !shown++)
				fprintf(f, "  %s %s\n", rp_proc_label(v, proc, sizeof(proc)),
				        t->cmdline[0] ? rp_safe(t->cmdline) : "?");
			snprintf(label, sizeof(label), "GPU %u", v->gpu->devices[d].device);
			print_row(f, label, lw, n > 1, acc + ((size_t)r * w) * CL_COUNT, w, color);
		}
	}
	if (hidden)
		fprintf(f, "  (%u more row%s not shown: threads, GPUs)\n", hidden, hidden == 1 ? "" : "s");
	rp_fmt_dur(b, sizeof(b), (double)span);
	fprintf(f, "  %*s 0%*s\n", lw, "", (int)w, b);
out:
	for (unsigned k = 0; k < n; k++)
		free(row[k]);
	free(row);
	free(acc);
}
