/* "Calls behind the API" (behind_api.h). One pass over the selected calls: for each call of a
 * table function, its slot's count and time, and the public call it was made under (the nearest
 * enclosing call of a function that is not itself a table function; "(none)" when the program
 * called through the table directly). */
#include "behind_api.h"

#include "export_names.h"

#include <stdlib.h>
#include <string.h>

#define PARENTS_MAX 8 /* per slot: the public callers listed by name; the rest summed */

struct parent {
	uint32_t func;      /* TR_NONE: called directly */
	uint64_t calls;
};

struct rp_behind_slot {
	uint32_t func;
	char uuid[EXPORT_UUID_LEN + 1];
	unsigned index;
	uint64_t calls;
	int64_t time;
	struct parent par[PARENTS_MAX];
	unsigned npar;
	uint64_t other_calls; /* under callers beyond PARENTS_MAX */
	uint64_t counted;     /* calls counted, not recorded (count=): no time, no caller */
};

static int by_table_slot(const void *a, const void *b)
{
	const struct rp_behind_slot *x = a, *y = b;
	int c = strcmp(x->uuid, y->uuid);
	return c ? c : (x->index > y->index) - (x->index < y->index);
}

int rp_behind_api_analyze(const struct rp_view *v, struct rp_behind_api *sm)
{
	const struct tr_trace *t = v->t;
	memset(sm, 0, sizeof(*sm));
	uint32_t *at = malloc(((size_t)t->nfuncs + 1) * sizeof(*at));
	sm->s = calloc((size_t)t->nfuncs + 1, sizeof(*sm->s));
	if (!at || !sm->s) {
		free(at);
		free(sm->s);
		sm->s = NULL;
		return -1;
	}
	for (uint32_t f = 0; f < t->nfuncs; f++) {
		at[f] = TR_NONE;
		struct rp_behind_slot *s = &sm->s[sm->n];
		if (!v->fi[f].ret_unknown || !export_func_parse(tr_func_name(t, f), s->uuid, &s->index))
			continue;
		s->func = f;
		s->counted = v->counted ? v->counted[f] : 0;
		sm->counted += s->counted;
		at[f] = sm->n++;
	}
	for (uint32_t i = 0; sm->n && i < v->nsel; i++) {
		const struct tr_call *c = &t->calls[v->sel[i]];
		if (c->func >= t->nfuncs || at[c->func] == TR_NONE)
			continue;
		struct rp_behind_slot *s = &sm->s[at[c->func]];
		int64_t d = tr_call_timed(c) ? c->end_ns - c->start_ns : 0;
		s->calls++;
		s->time = rp_sat_add(s->time, d);
		sm->calls++;
		sm->time = rp_sat_add(sm->time, d);
		uint32_t p = c->parent;
		for (unsigned hops = 0; p != TR_NONE && p < t->ncalls && hops < 256; hops++) {
			uint32_t pf = t->calls[p].func;
			if (pf >= t->nfuncs || at[pf] == TR_NONE)
				break;
			p = t->calls[p].parent;
		}
		uint32_t pf = p != TR_NONE && p < t->ncalls ? t->calls[p].func : TR_NONE;
		unsigned k = 0;
		while (k < s->npar && s->par[k].func != pf)
			k++;
		if (k < s->npar)
			s->par[k].calls++;
		else if (s->npar < PARENTS_MAX)
			s->par[s->npar++] = (struct parent){pf, 1};
		else
			s->other_calls++;
	}
	free(at);
	/* first by table, then by slot; within a slot the callers with the most calls first */
	qsort(sm->s, sm->n, sizeof(*sm->s), by_table_slot);
	for (uint32_t i = 0; i < sm->n; i++) {
		struct rp_behind_slot *s = &sm->s[i];
		for (unsigned a = 1; a < s->npar; a++)
			for (unsigned b = a; b > 0 && s->par[b].calls > s->par[b - 1].calls; b--) {
				struct parent x = s->par[b];
				s->par[b] = s->par[b - 1];
				s->par[b - 1] = x;
			}
	}
	return 0;
}

static const char *parent_name(const struct rp_view *v, uint32_t func)
{
	return func == TR_NONE ? "(none)" : tr_func_name(v->t, func);
}

void rp_behind_api_free(struct rp_behind_api *b)
{
	free(b->s);
	memset(b, 0, sizeof(*b));
}

void rp_behind_api_write_text(FILE *f, const struct rp_view *v, const struct rp_behind_api *b)
{
	if (!b->n)
		return;
	const struct rp_behind_api sm = *b;
	char b1[32], b2[32];
	int w = 22; /* the name column: as wide as the longest name */
	for (uint32_t i = 0; i < sm.n; i++) {
		const char *sn = export_slot_readable(sm.s[i].uuid, sm.s[i].index);
		int l = (int)strlen(tr_func_name(v->t, sm.s[i].func)) + (sn ? (int)strlen(sn) + 3 : 0);
		if (l > w)
			w = l < 100 ? l : 100;
	}
	fprintf(f, "\nCalls behind the API (functions reached through cuGetExportTable's tables)\n");
	fprintf(f, "  %llu call%s recorded, %s, to %u function%s", (unsigned long long)sm.calls, sm.calls == 1 ? "" : "s",
	        rp_fmt_dur(b1, sizeof(b1), (double)sm.time), sm.n, sm.n == 1 ? "" : "s");
	if (sm.counted)
		fprintf(f, ", and %llu counted (no time, no caller)", (unsigned long long)sm.counted);
	fprintf(f, "; under: the public call each was made in ((none): called through the table directly)\n");
	fprintf(f, "  %-*s %10s %12s %10s  %s\n", w + 2, "Function (table slot)", "Calls", "Total Time", "Avg", "Under");
	const char *table = "";
	for (uint32_t i = 0; i < sm.n; i++) {
		const struct rp_behind_slot *s = &sm.s[i];
		if (strcmp(table, s->uuid)) {
			table = s->uuid;
			const char *tn = export_table_readable(s->uuid);
			fprintf(f, "  table %s%s%s\n", s->uuid, tn ? " " : "", tn ? tn : "");
		}
		const char *sn = export_slot_readable(s->uuid, s->index);
		char name[EXPORT_NAME_MAX + 64];
		snprintf(name, sizeof(name), "%s%s%s%s", rp_safe(tr_func_name(v->t, s->func)), sn ? " (" : "", sn ? sn : "",
		         sn ? ")" : "");
		fprintf(f, "    %-*s %10llu %12s %10s  ", w, name, (unsigned long long)s->calls,
		        rp_fmt_dur(b1, sizeof(b1), (double)s->time),
		        rp_fmt_dur(b2, sizeof(b2), s->calls ? (double)s->time / (double)s->calls : 0));
		for (unsigned k = 0; k < s->npar; k++)
			fprintf(f, "%s%s %llu", k ? ", " : "", rp_safe(parent_name(v, s->par[k].func)),
			        (unsigned long long)s->par[k].calls);
		if (s->other_calls)
			fprintf(f, ", others %llu", (unsigned long long)s->other_calls);
		if (s->counted)
			fprintf(f, "%scounted %llu", s->npar ? ", " : "", (unsigned long long)s->counted);
		fprintf(f, "%s\n", s->calls || s->counted ? "" : "-");
	}
}

static void json_opt_str(FILE *f, const char *s)
{
	if (s)
		rp_json_str(f, s, strlen(s));
	else
		fprintf(f, "null");
}

void rp_behind_api_write_json(FILE *f, const struct rp_view *v, const struct rp_behind_api *b)
{
	if (!b->n)
		return;
	const struct rp_behind_api sm = *b;
	fprintf(f, ",\n  \"export_tables\": {\"calls\": %llu, \"counted_calls\": %llu, \"time_ns\": %lld, \"slots\": [",
	        (unsigned long long)sm.calls, (unsigned long long)sm.counted, (long long)sm.time);
	for (uint32_t i = 0; i < sm.n; i++) {
		const struct rp_behind_slot *s = &sm.s[i];
		const char *name = tr_func_name(v->t, s->func);
		fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
		rp_json_str(f, name, strlen(name));
		fprintf(f, ", \"uuid\": \"%s\", \"slot\": %u, \"table\": ", s->uuid, s->index);
		json_opt_str(f, export_table_readable(s->uuid));
		fprintf(f, ", \"slot_name\": ");
		json_opt_str(f, export_slot_readable(s->uuid, s->index));
		fprintf(f, ", \"calls\": %llu, \"counted_calls\": %llu, \"time_ns\": %lld, \"parents\": [",
		        (unsigned long long)s->calls, (unsigned long long)s->counted, (long long)s->time);
		for (unsigned k = 0; k < s->npar; k++) {
			const char *pn = parent_name(v, s->par[k].func);
			fprintf(f, "%s{\"name\": ", k ? ", " : "");
			rp_json_str(f, pn, strlen(pn));
			fprintf(f, ", \"calls\": %llu}", (unsigned long long)s->par[k].calls);
		}
		fprintf(f, "], \"other_parent_calls\": %llu}", (unsigned long long)s->other_calls);
	}
	fprintf(f, "\n  ]}");
}
