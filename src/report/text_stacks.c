/* The text report's "Call sites" section: for each function whose calls have stacks (agent
 * option stacks=), the places its calls came from (stack_analysis.c), most calls first. */
#include "report.h"

#define RP_TEXT_SITES 5

void rp_stacks_write_text(FILE *f, const struct rp_view *v)
{
	const struct rp_stacks *s = v->stacks;
	if (!s)
		return;
	char b[32];
	rp_text_section(f, v, "Call sites (where the calls with a stack were made: the innermost Python line, else "
	                      "the first frame outside the CUDA libraries)");
	if (!s->nfuncs)
		fprintf(f, "  no selected call has a stack\n");
	for (uint32_t i = 0; i < s->nfuncs; i++) {
		const struct rp_stack_func *fn = &s->funcs[i];
		fprintf(f, "  %s: %llu call%s with a stack, %u call site%s\n", rp_safe(tr_func_name(v->t, fn->func)),
		        (unsigned long long)fn->calls, fn->calls == 1 ? "" : "s", fn->n, fn->n == 1 ? "" : "s");
		fprintf(f, "  %10s %12s  %s\n", "Calls", "Total", "Call site");
		for (uint32_t k = 0; k < fn->n && k < RP_TEXT_SITES; k++) {
			const struct rp_call_site *cs = &s->sites[fn->first + k];
			fprintf(f, "  %10llu %12s  %s\n", (unsigned long long)cs->calls, rp_fmt_dur(b, sizeof(b), (double)cs->total),
			        rp_safe(cs->label));
		}
		if (fn->n > RP_TEXT_SITES)
			fprintf(f, "  %10s %12s  (%u more)\n", "", "", fn->n - RP_TEXT_SITES);
	}
	if (v->t->stack_none)
		fprintf(f, "  %llu call%s recorded without a stack: the agent's stack table was full\n",
		        (unsigned long long)v->t->stack_none, v->t->stack_none == 1 ? "" : "s");
	for (uint32_t i = 0; i < s->nnotes; i++)
		fprintf(f, "  note: %s\n", rp_safe(s->notes[i]));
}
