/* The ASCII timeline of the text report: one row per thread, the run divided into --width
 * columns; each column shows the category in which that thread spent most of the column's time
 * inside outermost driver calls, or '.' when it made no driver call then. */
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

void rp_text_timeline(FILE *f, struct rp_view *v)
{
	const struct tr_trace *t = v->t;
	unsigned w = v->o->width ? v->o->width : 100;
	int64_t span = v->t1 - v->t0;
	if (span <= 0 || !v->nsel)
		return;
	/* rows: threads with selected calls, in thread order, at most MAX_ROWS */
	uint32_t *row = malloc(((size_t)t->nthreads + 1) * sizeof(*row));
	uint32_t nrows = 0, hidden = 0;
	if (!row)
		return;
	for (uint32_t i = 0; i < t->nthreads; i++)
		row[i] = TR_NONE;
	for (uint32_t i = 0; i < v->nsel; i++) {
		uint32_t th = t->calls[v->sel[i]].thread;
		if (row[th] != TR_NONE)
			continue;
		if (nrows < MAX_ROWS)
			row[th] = nrows++;
		else {
			row[th] = TR_NONE - 1;
			hidden++;
		}
	}
	double *acc = calloc((size_t)nrows * w * CL_COUNT, sizeof(*acc));
	if (!acc) {
		free(row);
		return;
	}
	double colw = (double)span / w;
	for (uint32_t i = 0; i < v->nsel; i++) {
		const struct tr_call *c = &t->calls[v->sel[i]];
		uint32_t r = row[c->thread];
		if (c->parent != TR_NONE || r >= nrows)
			continue;
		int cl = class_of(v->fi[c->func].cat);
		double s = (double)(c->start_ns - v->t0), e = (double)(c->end_ns - v->t0);
		if (s < 0)
			s = 0;
		if (e > (double)span)
			e = (double)span;
		unsigned c0 = s / colw >= w ? w - 1 : (unsigned)(s / colw);
		double *a = acc + ((size_t)r * w) * CL_COUNT;
		if (e <= s) {
			/* no duration (entry-only): still visible when nothing else happens there */
			a[c0 * CL_COUNT + cl] += 1e-3;
			continue;
		}
		unsigned c1 = e / colw >= w ? w - 1 : (unsigned)(e / colw);
		for (unsigned k = c0; k <= c1; k++) {
			double lo = k * colw, hi = lo + colw;
			double ov = (e < hi ? e : hi) - (s > lo ? s : lo);
			if (ov > 0)
				a[k * CL_COUNT + cl] += ov;
		}
	}
	int color = v->o->color;
	char b[32];
	fprintf(f, "\n%sTimeline%s (%s per column)\n", color ? "\033[1m" : "", color ? "\033[0m" : "",
	        rp_fmt_dur(b, sizeof(b), colw));
	fprintf(f, "  legend: ");
	static const char *const names[CL_COUNT] = {"no driver call", "init/context/module", "memory", "transfer",
	                                            "kernel launch", "sync", "other"};
	for (int k = 1; k < CL_COUNT; k++)
		fprintf(f, "%s%c%s %s  ", color ? cl_color[k] : "", cl_char[k], color ? "\033[0m" : "", names[k]);
	fprintf(f, ". %s\n", names[0]);
	char label[32];
	int lw = 6;
	for (uint32_t i = 0; i < t->nthreads; i++) {
		if (row[i] >= nrows)
			continue;
		int l = (int)strlen(rp_thread_label(v, i, label, sizeof(label)));
		if (l > lw)
			lw = l;
	}
	for (uint32_t i = 0; i < t->nthreads; i++) {
		if (row[i] >= nrows)
			continue;
		rp_thread_label(v, i, label, sizeof(label));
		fprintf(f, "  %-*s |", lw, label);
		const double *a = acc + ((size_t)row[i] * w) * CL_COUNT;
		int cur = -1;
		for (unsigned k = 0; k < w; k++) {
			int best = CL_NONE;
			double bv = 0;
			for (int cl = 1; cl < CL_COUNT; cl++)
				if (a[k * CL_COUNT + cl] > bv) {
					bv = a[k * CL_COUNT + cl];
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
	if (hidden)
		fprintf(f, "  (%u more thread%s not shown)\n", hidden, hidden == 1 ? "" : "s");
	rp_fmt_dur(b, sizeof(b), (double)span);
	fprintf(f, "  %*s 0%*s\n", lw, "", (int)w, b);
	free(acc);
	free(row);
}
