/* --format csv: one row per selected call, in start order across threads (and files, one after
 * the other):
 *   tid,func,start_ns,end_ns,dur_ns,depth,ret,arg0..arg5,stack0..stack5,decoded
 * Times are nanoseconds from the start of the trace. Arguments and the return value are raw
 * 64-bit register values in lowercase 0x hex. end_ns, dur_ns and ret are empty for a call
 * without an EXIT; stackN is empty beyond the slots the ENTRY carried. decoded is the DATA
 * records, "label=value;label=value", quoted when it holds a comma or a quote. */
#include "report.h"

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

int rp_write_csv(FILE *f, struct rp_view *views, unsigned n)
{
	fputs("tid,func,start_ns,end_ns,dur_ns,depth,ret,arg0,arg1,arg2,arg3,arg4,arg5,"
	      "stack0,stack1,stack2,stack3,stack4,stack5,decoded\n", f);
	char dec[1024];
	for (unsigned k = 0; k < n; k++) {
		const struct rp_view *v = &views[k];
		const struct tr_trace *t = v->t;
		for (uint32_t i = 0; i < v->nsel; i++) {
			const struct tr_call *c = &t->calls[v->sel[i]];
			fprintf(f, "%u,", t->threads[c->thread].tid);
			csv_field(f, tr_func_name(t, c->func));
			fprintf(f, ",%lld,", (long long)(c->start_ns - v->t0));
			if (tr_call_timed(c))
				fprintf(f, "%lld,%lld,%u,0x%llx", (long long)(c->end_ns - v->t0), (long long)tr_call_dur(c),
				        c->depth, (unsigned long long)c->ret);
			else
				fprintf(f, ",,%u,", c->depth);
			for (unsigned a = 0; a < 6; a++)
				fprintf(f, ",0x%llx", (unsigned long long)tr_call_arg(c, a));
			unsigned ns = tr_call_nargs(c) - 6;
			for (unsigned a = 0; a < CUHOOK_MAX_STACK_ARGS; a++) {
				if (a < ns)
					fprintf(f, ",0x%llx", (unsigned long long)tr_call_arg(c, 6 + a));
				else
					putc(',', f);
			}
			putc(',', f);
			tr_call_format_data(t, c, dec, sizeof(dec));
			csv_field(f, dec);
			putc('\n', f);
		}
	}
	return ferror(f) ? -1 : 0;
}
