/* The report's section "Calls behind the API": the calls of functions reached through
 * cuGetExportTable's tables (agent option export_tables=1, named "export:UUID[i]":
 * src/format/export_names.h), per table and slot, their time, and the public calls they were
 * made under. A trace without such functions has no section. */
#ifndef CUHOOK_REPORT_BEHIND_API_H
#define CUHOOK_REPORT_BEHIND_API_H

#include <stdio.h>

#include "report.h"

/* The slots of every table function the trace defines, with their selected calls. */
struct rp_behind_api {
	struct rp_behind_slot *s;  /* by table, then slot */
	uint32_t n;                /* 0: the trace hooked no table function (no section) */
	uint64_t calls, counted;
	int64_t time;
};
/* Analysed once (result.c): 0, or -1 when out of memory. */
int rp_behind_api_analyze(const struct rp_view *v, struct rp_behind_api *out);
void rp_behind_api_free(struct rp_behind_api *b);
/* The text section (nothing when the trace hooked no table function). */
void rp_behind_api_write_text(FILE *f, const struct rp_view *v, const struct rp_behind_api *b);
/* The JSON member "export_tables": {...} preceded by ",\n" (nothing when there is none). */
void rp_behind_api_write_json(FILE *f, const struct rp_view *v, const struct rp_behind_api *b);

#endif
