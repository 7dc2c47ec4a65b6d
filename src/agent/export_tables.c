/* Tracing the functions behind cuGetExportTable (export_tables.h).
 *
 * cuGetExportTable(&table, &uuid) hands the caller a table of function pointers into the
 * driver: its "dark API", through which the CUDA runtime and the tools libraries reach the
 * driver behind the public functions. No symbol names these functions, so the agent learns
 * them where the program does: at cuGetExportTable's successful return (its hook's C callback,
 * on the caller's thread, with the thread's own hooks passing through), it reads the table the
 * driver returned and patches each function once, as a library loaded later is patched.
 *
 * What is trusted, and why. A table is read only inside the driver's loaded segments, in one of
 * the two layouts known (export_table.h); any other refuses the table. A slot is a function
 * only if it points into the driver's executable segments; the others (NULL, data, another
 * library) are skipped with a reason. A function's extent comes from the driver's unwind table
 * (func_extent.h): the relocation planner scans the whole body, and a function whose extent is
 * not known exactly is refused, never guessed. Then the usual planner decides (relocate.h),
 * with its refusals recorded as for any export. A function already hooked (an exported cu*
 * function, or a slot of a table seen before) keeps its first name; the alias is said in a
 * NOTE.
 *
 * Everything here runs under agent_lock, on the slow path of one call per table. */
#include "export_tables.h"

#include "agent_log.h"
#include "agent_state.h"
#include "export_names.h"
#include "freeze.h"
#include "export_table.h"
#include "func_extent.h"
#include "hook_table.h"
#include "patch_status_map.h"
#include "trace_format.h"

#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ET_MAX_TABLES 256
#define ET_NOTE_LINES EXPORT_TABLE_MAX_SLOTS /* per table: every skipped, refused or aliased slot said */

static uint8_t done[ET_MAX_TABLES][16]; /* tables read (whatever came of it), under agent_lock */
static unsigned ndone;
static bool full_said;
static uint16_t driver_lib_id;          /* the library cuGetExportTable was found in */
struct batch {
	uint32_t first, count;
};
static struct batch batches[ET_MAX_TABLES]; /* the ids each table's functions got */
static unsigned nbatches;
static bool armed_on;                   /* this session traces them (export_tables=1) */
static const struct hook_classifier *classifier; /* the one that classified cuGetExportTable */

static void on_return(const uint64_t *args, uint64_t ret);

uint8_t export_tables_classify(const char *name, uint32_t id, bool on, const struct hook_classifier *how)
{
	if (strcmp(name, "cuGetExportTable") != 0)
		return 0;
	armed_on = on;
	classifier = how;
	if (!on) {
		if (hooks_calls[id].on_return == on_return)
			hooks_calls[id].on_return = NULL;
		return 0;
	}
	hooks_calls[id].on_return = on_return;
	driver_lib_id = patch_sites[id].lib_id;
	return HOOK_CALLBACK;
}

void export_tables_arm(bool threads_stopped)
{
	if (!armed_on)
		return;
	struct patch_request req = hook_request(threads_stopped, NULL);
	struct patch_result res;
	for (unsigned i = 0; i < nbatches; i++)
		patch_arm(&req, batches[i].first, batches[i].count, &res);
}

struct obj_find {
	uintptr_t base;
	const void *phdr;
	unsigned phnum;
	bool found;
};

static int find_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	struct obj_find *o = ctx;
	if (info->dlpi_addr != o->base)
		return 0;
	o->phdr = info->dlpi_phdr;
	o->phnum = info->dlpi_phnum;
	o->found = true;
	return 1;
}

static bool is_done(const uint8_t uuid[16])
{
	for (unsigned i = 0; i < ndone; i++)
		if (!memcmp(done[i], uuid, 16))
			return true;
	return false;
}

/* The hook of an address already hooked, or -1. */
static int hooked_at(uintptr_t addr)
{
	for (uint32_t id = 0; id < patch_count; id++)
		if (patch_sites[id].addr == addr && patch_sites[id].name)
			return (int)id;
	return -1;
}

struct table_note {
	unsigned lines, more;
};

static void note_line(struct table_note *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_line(struct table_note *n, const char *fmt, ...)
{
	if (n->lines >= ET_NOTE_LINES) {
		n->more++;
		return;
	}
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	agent_log(1, "%s", line);
	n->lines++;
}

/* Read one table and patch its functions. Under agent_lock. */
static void read_table(const uint8_t uuid[16], const uint64_t *table, const struct agent_lib *lib,
                       const struct obj_find *o)
{
	char utext[EXPORT_UUID_LEN + 1];
	export_uuid_format(uuid, utext);
	const char *readable = export_table_readable(utext);
	char what[EXPORT_UUID_LEN + 64];
	snprintf(what, sizeof(what), "export table %s%s%s%s", utext, readable ? " (" : "", readable ? readable : "",
	         readable ? ")" : "");
	unsigned first, end;
	const char *why;
	if (export_table_slots(o->base, o->phdr, o->phnum, table, &first, &end, &why) != 0) {
		agent_log(1, "%s: not traced: %s (table %p, first word read only inside %s)", what, why, (const void *)table,
		          lib->path);
		return;
	}
	struct patch_func *fv = calloc(end, sizeof(*fv));
	char(*names)[EXPORT_NAME_MAX] = calloc(end, EXPORT_NAME_MAX);
	if (!fv || !names) {
		free(fv);
		free(names);
		agent_log(2, "%s: not traced: out of memory", what);
		return;
	}
	struct table_note note = {0, 0};
	unsigned nf = 0, skipped = 0, empty = 0, aliases = 0, refused_here = 0;
	for (unsigned i = first; i < end; i++) {
		uintptr_t p = (uintptr_t)table[i];
		char name[EXPORT_NAME_MAX];
		export_func_name(uuid, i, name, sizeof(name));
		if (!p) {
			empty++;
			continue;
		}
		if (!object_contains(o->base, o->phdr, o->phnum, p, 1, true)) {
			skipped++;
			note_line(&note, "%s: skipped: %#lx is not in %s's executable segments", name, (unsigned long)p,
			          lib->path);
			continue;
		}
		int prev = hooked_at(p);
		unsigned k = 0;
		while (prev < 0 && k < nf && fv[k].addr != p)
			k++;
		if (prev >= 0 && patch_sites[prev].status != PATCH_OK) {
			/* the same code as a function the agent found unsafe or was told to leave out */
			refused_here++;
			note_line(&note, "%s is %s, which is not traced (%s): not traced either", name, patch_sites[prev].name,
			          patch_status_name(patch_sites[prev].status));
			continue;
		}
		if (prev >= 0 || k < nf) {
			aliases++;
			note_line(&note, "%s is %s: hooked once, under that name", name,
			          prev >= 0 ? patch_sites[prev].name : fv[k].name);
			continue;
		}
		size_t size;
		if (func_extent(o->base, o->phdr, o->phnum, p, &size, &why) != 0) {
			refused_here++;
			note_line(&note, "%s: refused: %s", name, why);
			continue;
		}
		memcpy(names[nf], name, sizeof(name));
		fv[nf] = (struct patch_func){names[nf], p, size};
		nf++;
	}
	struct patch_result res = {0};
	if (nf) {
		struct patch_request req = hook_request(false, classifier);
		req.base = o->base;
		req.filter = "*";
		req.lib_id = lib->lib_id;
		patch_functions(fv, nf, &req, &res);
		if (res.count && nbatches < ET_MAX_TABLES)
			batches[nbatches++] = (struct batch){res.first_id, res.count};
		for (uint32_t id = res.first_id; id < res.first_id + res.count; id++)
			if (patch_sites[id].status != PATCH_OK)
				note_line(&note, "%s: refused: %s (%s)", patch_sites[id].name,
				          patch_status_name(patch_sites[id].status), patch_sites[id].detail);
	}
	if (note.more)
		agent_log(1, "%s: %u more slots skipped, refused or aliased, not listed", what, note.more);
	agent_log(1, "%s: %u slots: %u functions patched, %u refused, %u already hooked, %u not in the driver's "
	          "code, %u empty; %d other threads stopped while patching",
	          what, end - first, res.patched, res.refused + refused_here + (nf - res.count), aliases, skipped, empty,
	          nf ? freeze_stopped_threads() : 0);
	free(fv);
	free(names);
}

/* cuGetExportTable returned (HOOK_CALLBACK, on the caller's thread). */
static void on_return(const uint64_t *args, uint64_t ret)
{
	if (!args || (uint32_t)ret != 0 || !args[0] || !args[1])
		return;
	uint8_t uuid[16];
	memcpy(uuid, (const void *)args[1], 16); /* the call has just read them */
	const uint64_t *table = *(const uint64_t *const *)args[0];
	pthread_mutex_lock(&agent_lock);
	bool seen = is_done(uuid);
	uintptr_t base = 0;
	for (unsigned i = 0; i < agent_nlibs; i++)
		if (agent_libs[i].lib_id == driver_lib_id)
			base = agent_libs[i].base;
	pthread_mutex_unlock(&agent_lock);
	if (seen || !base)
		return;
	/* the loader's lock before the agent's, as at every scan */
	struct obj_find o = {.base = base};
	dl_iterate_phdr(find_cb, &o);
	if (!o.found)
		return;
	pthread_mutex_lock(&agent_lock);
	if (!is_done(uuid)) {
		if (ndone < ET_MAX_TABLES) {
			memcpy(done[ndone++], uuid, 16);
			const struct agent_lib *lib = NULL;
			for (unsigned i = 0; i < agent_nlibs; i++)
				if (agent_libs[i].lib_id == driver_lib_id)
					lib = &agent_libs[i];
			if (lib)
				read_table(uuid, table, lib, &o);
		} else if (!full_said) {
			full_said = true;
			agent_log(1, "export tables: more than %d tables; the others are not traced", ET_MAX_TABLES);
		}
	}
	pthread_mutex_unlock(&agent_lock);
}
