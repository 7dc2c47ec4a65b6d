/* The report's "Driver boundary (ioctls)" section (ioctls.h): its numbers, from the selected
 * calls decoded by nvioctl.c, and its text and JSON. */
#include "ioctls.h"

#include "report.h"

#include <stdlib.h>
#include <string.h>

static int64_t dur(const struct tr_call *c)
{
	return tr_call_timed(c) ? tr_call_dur(c) : 0;
}

static struct rp_ioc_row *row(struct rp_ioc_row *rows, uint32_t *n, uint64_t *other, const char *label)
{
	for (uint32_t i = 0; i < *n; i++)
		if (!strcmp(rows[i].label, label))
			return &rows[i];
	if (*n == RP_IOC_MAX_ROWS) {
		(*other)++;
		return NULL;
	}
	struct rp_ioc_row *r = &rows[(*n)++];
	memset(r, 0, sizeof(*r));
	snprintf(r->label, sizeof(r->label), "%s", label);
	return r;
}

static void count_row(struct rp_ioc_row *r, int failed, int64_t d, const char *name)
{
	if (!r)
		return;
	r->count++;
	r->failed += failed != 0;
	r->total = rp_sat_add(r->total, d);
	r->name = name;
}

static int cmp_row(const void *a, const void *b)
{
	const struct rp_ioc_row *x = a, *y = b;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(x->label, y->label);
}

static int cmp_fn(const void *a, const void *b)
{
	const struct rp_ioc_fn *x = a, *y = b;
	if (x->in_ioctl != y->in_ioctl)
		return x->in_ioctl < y->in_ioctl ? 1 : -1;
	if (x->ioctls != y->ioctls)
		return x->ioctls < y->ioctls ? 1 : -1;
	return x->func < y->func ? -1 : x->func > y->func;
}

int rp_ioctl_summary(const struct rp_view *v, struct rp_ioc_summary *s)
{
	const struct tr_trace *t = v->t;
	memset(s, 0, sizeof(*s));
	if (!v->has_ioctl)
		return 0;
	uint32_t n = t->ncalls;
	int64_t *child_all = calloc((size_t)n + 1, sizeof(*child_all));
	int64_t *child_io = calloc((size_t)n + 1, sizeof(*child_io));
	uint32_t *nio = calloc((size_t)n + 1, sizeof(*nio));
	struct rp_ioc_fn *fn = calloc((size_t)t->nfuncs + 1, sizeof(*fn));
	if (!child_all || !child_io || !nio || !fn) {
		free(child_all);
		free(child_io);
		free(nio);
		free(fn);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct tr_call *c = &t->calls[i];
		if (c->parent != TR_NONE)
			child_all[c->parent] = rp_sat_add(child_all[c->parent], dur(c));
	}
	/* the ioctls: totals, per request, per control command and class, per caller */
	char lbl[64];
	struct rp_ioc_fn *outside = &fn[t->nfuncs];
	outside->func = TR_NONE;
	for (uint32_t i = 0; i < v->nxsel; i++) {
		uint32_t ci = v->xsel[i];
		const struct tr_call *c = &t->calls[ci];
		if (!v->fi[c->func].ioctl)
			continue;
		struct rp_ioctl io;
		rp_ioctl_decode(t, c, &io);
		int64_t d = dur(c);
		int failed = rp_ioctl_failed(&io);
		s->ioctls++;
		s->total = rp_sat_add(s->total, d);
		s->with_data += io.has_data;
		if (failed) {
			if (s->nfail_shown < sizeof(s->fail) / sizeof(s->fail[0]))
				s->fail[s->nfail_shown++] = ci;
			s->failed++;
		}
		count_row(row(s->req, &s->nreq, &s->req_other, rp_ioctl_label(&io, lbl, sizeof(lbl))), failed, d, NULL);
		if (io.has_cmd) {
			snprintf(lbl, sizeof(lbl), "0x%08x", io.cmd);
			count_row(row(s->ctrl, &s->nctrl, &s->ctrl_other, lbl), failed, d, rp_nv_ctrl_name(io.cmd));
		}
		if (io.has_class) {
			snprintf(lbl, sizeof(lbl), "0x%x", io.hclass);
			count_row(row(s->cls, &s->ncls, &s->cls_other, lbl), failed, d, rp_nv_class_name(io.hclass));
		}
		uint32_t p = c->parent;
		if (p == TR_NONE || v->fi[t->calls[p].func].ioctl) {
			s->outside++;
			s->outside_time = rp_sat_add(s->outside_time, d);
			outside->ioctls++;
			outside->in_ioctl = rp_sat_add(outside->in_ioctl, d);
			continue;
		}
		child_io[p] = rp_sat_add(child_io[p], d);
		nio[p]++;
		struct rp_ioc_fn *f = &fn[t->calls[p].func];
		f->ioctls++;
		f->in_ioctl = rp_sat_add(f->in_ioctl, d);
	}
	/* the API calls: how many, how long, how many made ioctls, their own code's time */
	for (uint32_t i = 0; i < v->nsel; i++) {
		uint32_t ci = v->sel[i];
		const struct tr_call *c = &t->calls[ci];
		struct rp_ioc_fn *f = &fn[c->func];
		int64_t d = dur(c);
		f->calls++;
		f->calls_with += nio[ci] != 0;
		f->total = rp_sat_add(f->total, d);
		f->self = rp_sat_add(f->self, d - (child_all[ci] < d ? child_all[ci] : d));
		if (c->parent == TR_NONE)
			s->api_time = rp_sat_add(s->api_time, d);
	}
	/* keep the functions that made ioctls (and the no-caller row last) */
	uint32_t m = 0;
	for (uint32_t id = 0; id < t->nfuncs; id++)
		if (fn[id].ioctls) {
			fn[m] = fn[id];
			fn[m].func = id;
			m++;
		}
	if (m)
		qsort(fn, m, sizeof(*fn), cmp_fn);
	if (outside->ioctls)
		fn[m++] = *outside;
	s->fn = fn;
	s->nfn = m;
	qsort(s->req, s->nreq, sizeof(s->req[0]), cmp_row);
	qsort(s->ctrl, s->nctrl, sizeof(s->ctrl[0]), cmp_row);
	qsort(s->cls, s->ncls, sizeof(s->cls[0]), cmp_row);
	free(child_all);
	free(child_io);
	free(nio);
	return 0;
}

void rp_ioctl_summary_free(struct rp_ioc_summary *s)
{
	free(s->fn);
	s->fn = NULL;
}

static double pct(int64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0;
}

#define TOP_ROWS 12

void rp_ioctl_write_text(FILE *f, const struct rp_view *v, const struct rp_ioc_summary *s)
{
	const struct tr_trace *t = v->t;
	char b1[32], b2[32], b3[32], lbl[512];
	if (!s->ioctls)
		return;
	const char *bold = v->o->color ? "\033[1m" : "", *reset = v->o->color ? "\033[0m" : "";
	fprintf(f, "\n%sDriver boundary (ioctls)%s\n", bold, reset);
	fprintf(f, "  %llu ioctl%s on NVIDIA device files, %s inside the driver (%.1f%% of the time in API calls)",
	        (unsigned long long)s->ioctls, s->ioctls == 1 ? "" : "s", rp_fmt_dur(b1, sizeof(b1), (double)s->total),
	        pct(s->total, s->api_time));
	fprintf(f, "; %llu failed\n", (unsigned long long)s->failed);
	if (s->outside)
		fprintf(f, "  %llu of them (%s) made outside any traced API call (another library such as NVML, the "
		           "driver's internal entry points or threads, or the program)\n",
		        (unsigned long long)s->outside, rp_fmt_dur(b1, sizeof(b1), (double)s->outside_time));

	fprintf(f, "\n  %sPer API function (the ioctls its calls made; in libcuda = its own code, outside every "
	           "traced call)%s\n",
	        bold, reset);
	fprintf(f, "  %s%-34s %8s %8s %8s %12s %12s %12s %8s%s\n", bold, "Function", "Calls", "w/ioctl", "Ioctls",
	        "Total", "In driver", "In libcuda", "Driver%", reset);
	for (uint32_t i = 0; i < s->nfn; i++) {
		const struct rp_ioc_fn *r = &s->fn[i];
		if (r->func == TR_NONE) {
			fprintf(f, "  %-34s %8s %8s %8llu %12s %12s %12s %8s\n", "(no traced caller)", "-", "-",
			        (unsigned long long)r->ioctls, "-", rp_fmt_dur(b2, sizeof(b2), (double)r->in_ioctl), "-", "-");
			continue;
		}
		fprintf(f, "  %-34s %8llu %8llu %8llu %12s %12s %12s %7.1f%%\n", tr_func_name(t, r->func),
		        (unsigned long long)r->calls, (unsigned long long)r->calls_with, (unsigned long long)r->ioctls,
		        rp_fmt_dur(b1, sizeof(b1), (double)r->total), rp_fmt_dur(b2, sizeof(b2), (double)r->in_ioctl),
		        rp_fmt_dur(b3, sizeof(b3), (double)r->self), pct(r->in_ioctl, r->total));
	}

	fprintf(f, "\n  %s%-34s %8s %8s %12s %12s%s\n", bold, "Request", "Count", "Failed", "Time", "Avg", reset);
	for (uint32_t i = 0; i < s->nreq; i++) {
		const struct rp_ioc_row *r = &s->req[i];
		fprintf(f, "  %-34s %8llu %8llu %12s %12s\n", r->label, (unsigned long long)r->count,
		        (unsigned long long)r->failed, rp_fmt_dur(b1, sizeof(b1), (double)r->total),
		        rp_fmt_dur(b2, sizeof(b2), r->count ? (double)r->total / (double)r->count : 0));
	}
	if (s->req_other)
		fprintf(f, "  %-34s %8llu\n", "(other requests)", (unsigned long long)s->req_other);

	if (s->nctrl) {
		fprintf(f, "\n  %sRM control commands%s\n", bold, reset);
		fprintf(f, "  %s%-12s %8s %8s %12s  %s%s\n", bold, "Command", "Count", "Failed", "Time", "Name", reset);
		for (uint32_t i = 0; i < s->nctrl && i < TOP_ROWS; i++) {
			const struct rp_ioc_row *r = &s->ctrl[i];
			fprintf(f, "  %-12s %8llu %8llu %12s  %s\n", r->label, (unsigned long long)r->count,
			        (unsigned long long)r->failed, rp_fmt_dur(b1, sizeof(b1), (double)r->total),
			        r->name ? r->name : "?");
		}
		if (s->nctrl > TOP_ROWS || s->ctrl_other)
			fprintf(f, "  ... %u more commands\n", s->nctrl - (s->nctrl > TOP_ROWS ? TOP_ROWS : s->nctrl) +
			                                            (unsigned)s->ctrl_other);
	}
	if (s->ncls) {
		fprintf(f, "\n  %sAllocation classes%s\n", bold, reset);
		fprintf(f, "  %s%-12s %8s %8s  %s%s\n", bold, "Class", "Count", "Failed", "Name", reset);
		for (uint32_t i = 0; i < s->ncls && i < TOP_ROWS; i++) {
			const struct rp_ioc_row *r = &s->cls[i];
			fprintf(f, "  %-12s %8llu %8llu  %s\n", r->label, (unsigned long long)r->count,
			        (unsigned long long)r->failed, r->name ? r->name : "?");
		}
		if (s->ncls > TOP_ROWS || s->cls_other)
			fprintf(f, "  ... %u more classes\n", s->ncls - (s->ncls > TOP_ROWS ? TOP_ROWS : s->ncls) +
			                                           (unsigned)s->cls_other);
	}
	if (s->nfail_shown) {
		fprintf(f, "\n  %sFailed ioctls%s (%s)\n", bold, reset,
		        s->failed > s->nfail_shown ? "the first ones" : "all");
		for (uint32_t i = 0; i < s->nfail_shown; i++) {
			const struct tr_call *c = &t->calls[s->fail[i]];
			struct rp_ioctl io;
			rp_ioctl_decode(t, c, &io);
			rp_ioctl_describe(&io, lbl, sizeof(lbl));
			fprintf(f, "  %s > %s\n", c->parent != TR_NONE ? tr_func_name(t, t->calls[c->parent].func) : "-", lbl);
		}
	}
}

static void json_row(FILE *f, const char *key, const struct rp_ioc_row *r)
{
	fprintf(f, "{\"%s\":", key);
	rp_json_str(f, r->label, strlen(r->label));
	if (strcmp(key, "request")) {
		fprintf(f, ",\"name\":");
		if (r->name)
			rp_json_str(f, r->name, strlen(r->name));
		else
			fprintf(f, "null");
	}
	fprintf(f, ",\"count\":%llu,\"failed\":%llu,\"total_ns\":%lld}", (unsigned long long)r->count,
	        (unsigned long long)r->failed, (long long)r->total);
}

void rp_ioctl_write_json(FILE *f, const struct rp_view *v, const struct rp_ioc_summary *s)
{
	const struct tr_trace *t = v->t;
	fprintf(f, "\"ioctls\":{\"count\":%llu,\"failed\":%llu,\"total_ns\":%lld,\"with_data\":%llu,"
	           "\"outside_api\":{\"count\":%llu,\"total_ns\":%lld},\"by_function\":[",
	        (unsigned long long)s->ioctls, (unsigned long long)s->failed, (long long)s->total,
	        (unsigned long long)s->with_data, (unsigned long long)s->outside, (long long)s->outside_time);
	int first = 1;
	for (uint32_t i = 0; i < s->nfn; i++) {
		const struct rp_ioc_fn *r = &s->fn[i];
		if (r->func == TR_NONE)
			continue;
		const char *name = tr_func_name(t, r->func);
		fprintf(f, "%s{\"name\":", first ? "" : ",");
		first = 0;
		rp_json_str(f, name, strlen(name));
		fprintf(f, ",\"calls\":%llu,\"calls_with_ioctls\":%llu,\"ioctls\":%llu,\"total_ns\":%lld,"
		           "\"in_driver_ns\":%lld,\"self_ns\":%lld}",
		        (unsigned long long)r->calls, (unsigned long long)r->calls_with, (unsigned long long)r->ioctls,
		        (long long)r->total, (long long)r->in_ioctl, (long long)r->self);
	}
	fprintf(f, "],\"by_request\":[");
	for (uint32_t i = 0; i < s->nreq; i++) {
		fprintf(f, "%s", i ? "," : "");
		json_row(f, "request", &s->req[i]);
	}
	fprintf(f, "],\"rm_controls\":[");
	for (uint32_t i = 0; i < s->nctrl; i++) {
		fprintf(f, "%s", i ? "," : "");
		json_row(f, "cmd", &s->ctrl[i]);
	}
	fprintf(f, "],\"alloc_classes\":[");
	for (uint32_t i = 0; i < s->ncls; i++) {
		fprintf(f, "%s", i ? "," : "");
		json_row(f, "class", &s->cls[i]);
	}
	fprintf(f, "]}");
}
