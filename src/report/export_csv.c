/* --format csv: one row per selected call, in start order across threads (and files, one after
 * the other):
 *   tid,func,start_ns,end_ns,dur_ns,depth,ret,arg0..arg5,stack0..stack5,decoded
 * Times are nanoseconds from the start of the trace. Several files (not --separate): a first
 * column pid, the rows of all files in start order on their common time axis (rp_align). Arguments and the return value are raw
 * 64-bit register values in lowercase 0x hex. end_ns, dur_ns and ret are empty for a call
 * without an EXIT; stackN is empty beyond the slots the ENTRY carried. decoded is the DATA
 * records, "label=value;label=value", quoted when it holds a comma or a quote. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

static void csv_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, f);
		return;
	}
	putc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			putc('"', f);
		putc(*s, f);
	}
	putc('"', f);
}

static void csv_row(FILE *f, const struct rp_view *v, uint32_t ci, int with_pid, char *dec, size_t declen)
{
	const struct tr_trace *t = v->t;
	const struct tr_call *c = &t->calls[ci];
	if (with_pid)
		fprintf(f, "%u,", t->pid);
	fprintf(f, "%u,", t->threads[c->thread].tid);
	csv_field(f, tr_func_name(t, c->func));
	fprintf(f, ",%lld,", (long long)rp_rel(v, c->start_ns));
	if (tr_call_timed(c))
		fprintf(f, "%lld,%lld,%u,0x%llx", (long long)rp_rel(v, c->end_ns), (long long)tr_call_dur(c), c->depth,
		        (unsigned long long)c->ret);
	else
		fprintf(f, ",,%u,", c->depth);
	for (unsigned a = 0; a < 6; a++) { /* empty: a register the function does not take */
		if (tr_call_has_reg(c, a))
			fprintf(f, ",0x%llx", (unsigned long long)tr_call_arg(c, a));
		else
			putc(',', f);
	}
	unsigned ns = tr_call_nargs(c) > 6 ? tr_call_nargs(c) - 6 : 0;
	for (unsigned a = 0; a < CUHOOK_MAX_STACK_ARGS; a++) {
		if (a < ns)
			fprintf(f, ",0x%llx", (unsigned long long)tr_call_arg(c, 6 + a));
		else
			putc(',', f);
	}
	putc(',', f);
	tr_call_format_data(t, c, dec, declen);
	csv_field(f, dec);
	putc('\n', f);
}

#define CSV_HEADER "tid,func,start_ns,end_ns,dur_ns,depth,ret,arg0,arg1,arg2,arg3,arg4,arg5," \
	"stack0,stack1,stack2,stack3,stack4,stack5,decoded\n"

/* k-way merge of the views' selections (each in start order) on the common axis: ties go to
 * the earlier file. */
int rp_write_csv(FILE *f, struct rp_view *views, unsigned n)
{
	char dec[1024];
	if (!rp_merged(views, n)) {
		fputs(CSV_HEADER, f);
		for (unsigned k = 0; k < n; k++)
			for (uint32_t i = 0; i < views[k].nxsel; i++)
				csv_row(f, &views[k], views[k].xsel[i], 0, dec, sizeof(dec));
		return ferror(f) ? -1 : 0;
	}
	uint32_t *pos = calloc(n, sizeof(*pos));
	if (!pos)
		return -1;
	fputs("pid," CSV_HEADER, f);
	for (;;) {
		unsigned best = n;
		int64_t bt = 0;
		for (unsigned k = 0; k < n; k++) {
			if (pos[k] >= views[k].nxsel)
				continue;
			int64_t s = rp_rel(&views[k], views[k].t->calls[views[k].xsel[pos[k]]].start_ns);
			if (best == n || s < bt) {
				best = k;
				bt = s;
			}
		}
		if (best == n)
			break;
		csv_row(f, &views[best], views[best].xsel[pos[best]++], 1, dec, sizeof(dec));
	}
	free(pos);
	return ferror(f) ? -1 : 0;
}
