/* The report's section "Calls behind the API": the calls of functions reached through
 * cuGetExportTable's tables (agent option export_tables=1, named "export:UUID[i]":
 * src/format/export_names.h), per table and slot, their time, and the public calls they were
 * made under. A trace without such functions has no section. */
#ifndef CUHOOK_REPORT_BEHIND_API_H
#define CUHOOK_REPORT_BEHIND_API_H

#include <stdio.h>

#include "report.h"

/* The text section (nothing when the trace hooked no table function). */
void rp_behind_api_write_text(FILE *f, const struct rp_view *v);
/* The JSON member "export_tables": {...} preceded by ",\n" (nothing when there is none). */
void rp_behind_api_write_json(FILE *f, const struct rp_view *v);

#endif
