/* The functions behind cuGetExportTable (agent option export_tables=1; see export_tables.c):
 * each table the driver returns is read once, at the call's successful return, and the
 * functions its slots point to are patched and traced as "export:UUID[i]"
 * (src/format/export_names.h). */
#ifndef CUHOOK_EXPORT_TABLES_H
#define CUHOOK_EXPORT_TABLES_H

#include <stdbool.h>
#include <stdint.h>

struct hook_classifier;

/* From the agent's classifier `how`, for every function it classifies: for cuGetExportTable,
 * with the option on, its callback is set and HOOK_CALLBACK returned (the caller adds the
 * rest); else 0 (and a callback of ours taken away). The functions behind its tables are
 * classified by `how` too. Under agent_lock. */
uint8_t export_tables_classify(const char *name, uint32_t id, bool on, const struct hook_classifier *how);

/* A start: write again the jumps of the table functions an earlier session of this process
 * patched (its stop took them out; the program does not ask for the tables again). Allocates
 * and locks nothing; with agent_lock held. */
void export_tables_arm(bool threads_stopped);

#endif
