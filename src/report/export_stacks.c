/* The call stacks in the exports (stack_analysis.c analysed them): the JSON members of one trace
 * and the folded export's frame names.
 *
 *   "stacks": [{"id": 3, "native_end": "done", "python_end": "none", "approximate": false,
 *               "site": 4, "frames": [{"kind": "native", "label": "main (/src/t.c:40)",
 *               "function": "main", "file": "/src/t.c", "line": 40, "object": "/usr/bin/t",
 *               "pc": "0x5555...", "offset": "0x1234"}, ...]}]   frames outermost first; site:
 *               the index in frames of the call site, null
 *   "call_sites": [{"function": "cuMemAlloc_v2", "calls": 3, "sites": [{"site": "...", "calls": 2,
 *               "total_ns": 3000}, ...]}]
 *   "stack_records": {"records": N, "without_stack": M}, "stack_notes": ["..."] */
#include "report.h"

#include <string.h>

static void str_or_null(FILE *f, const char *s)
{
	if (s)
		rp_json_str(f, s, strlen(s));
	else
		fputs("null", f);
}

static void write_frame(FILE *f, const struct rp_frame *fr)
{
	fprintf(f, "{\"kind\": \"%s\", \"label\": ", rp_frame_kind_names[fr->kind]);
	rp_json_str(f, fr->label, strlen(fr->label));
	fprintf(f, ", \"function\": ");
	str_or_null(f, fr->func);
	fprintf(f, ", \"file\": ");
	str_or_null(f, fr->file);
	if (fr->line)
		fprintf(f, ", \"line\": %d", fr->line);
	else
		fprintf(f, ", \"line\": null");
	if (fr->kind == RP_FRAME_PYTHON) {
		fprintf(f, "}");
		return;
	}
	fprintf(f, ", \"object\": ");
	str_or_null(f, fr->object);
	fprintf(f, ", \"pc\": \"0x%llx\"", (unsigned long long)fr->pc);
	if (fr->kind == RP_FRAME_NATIVE)
		fprintf(f, ", \"offset\": \"0x%llx\"", (unsigned long long)fr->offset);
	fprintf(f, "}");
}

void rp_stacks_write_json(FILE *f, const struct rp_view *v)
{
	const struct tr_trace *t = v->t;
	const struct rp_stacks *s = v->stacks;
	fprintf(f, "  \"stack_records\": {\"records\": %llu, \"without_stack\": %llu},\n  \"stacks\": [",
	        (unsigned long long)t->nstack_recs, (unsigned long long)t->stack_none);
	for (uint32_t i = 0; i < t->nstacks; i++) {
		const struct tr_stack *st = &t->stacks[i];
		const struct rp_stack_frames *sf = &s->stacks[i];
		fprintf(f, "%s\n    {\"id\": %u, \"native_end\": \"%s\", \"python_end\": \"%s\", \"approximate\": %s, "
		           "\"site\": ", i ? "," : "", st->id, tr_stack_end_name(st->native_end),
		        tr_stack_end_name(st->python_end), sf->approximate ? "true" : "false");
		if (sf->site != TR_NONE)
			fprintf(f, "%u", sf->site - sf->first);
		else
			fprintf(f, "null");
		fprintf(f, ", \"frames\": [");
		for (uint32_t k = 0; k < sf->n; k++) {
			fprintf(f, "%s\n      ", k ? "," : "");
			write_frame(f, &s->frames[sf->first + k]);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "%s],\n  \"call_sites\": [", t->nstacks ? "\n  " : "");
	for (uint32_t i = 0; i < s->nfuncs; i++) {
		const struct rp_stack_func *fn = &s->funcs[i];
		const char *name = tr_func_name(t, fn->func);
		fprintf(f, "%s\n    {\"function\": ", i ? "," : "");
		rp_json_str(f, name, strlen(name));
		fprintf(f, ", \"calls\": %llu, \"sites\": [", (unsigned long long)fn->calls);
		for (uint32_t k = 0; k < fn->n; k++) {
			const struct rp_call_site *cs = &s->sites[fn->first + k];
			fprintf(f, "%s{\"site\": ", k ? ", " : "");
			rp_json_str(f, cs->label, strlen(cs->label));
			fprintf(f, ", \"calls\": %llu, \"total_ns\": %lld}", (unsigned long long)cs->calls, (long long)cs->total);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "%s],\n  \"stack_notes\": [", s->nfuncs ? "\n  " : "");
	for (uint32_t i = 0; i < s->nnotes; i++) {
		fprintf(f, "%s", i ? ", " : "");
		rp_json_str(f, s->notes[i], strlen(s->notes[i]));
	}
	fprintf(f, "]");
}

/* A frame of the folded export: ';' separates frames and a newline ends the line, so a ';' in a
 * name becomes ':' and control characters (the reader already made them '?') stay '?'. Spaces
 * are kept: flame graph tools take the count after the line's last space. */
size_t rp_folded_frame(char *buf, size_t len, size_t pos, const char *name)
{
	for (; *name && pos + 1 < len; name++) {
		unsigned char c = (unsigned char)*name;
		buf[pos++] = c == ';' ? ':' : (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	buf[pos < len ? pos : len - 1] = 0;
	return pos;
}
