/* The library registry: which loaded libraries the agent patches (agent_libs), how each of
 * their functions is traced (the classifier: recorded, counted, stacked...), and the scans that
 * find and patch them (lib_registry.h). */
#include "lib_registry.h"

#include "agent_log.h"
#include "agent_state.h"
#include "arity.h"
#include "capture_range.h"
#include "decoders.h"
#include "export_tables.h"
#include "flight.h"
#include "freeze.h"
#include "glob_filter.h"
#include "hook_table.h"
#include "kernel_names.h"
#include "loaded_objects.h"
#include "patch_status_map.h"
#include "record.h"
#include "trace_format.h"

#include <fnmatch.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct cuhook_config *cfg; /* this session's options (registry_configure) */
static unsigned count_overflow; /* functions the count option named beyond the slots, this session */

void registry_configure(const struct cuhook_config *c)
{
	cfg = c;
	count_overflow = 0;
}

/* The counter slot of hook `id` (hook_table.h), given on first use; -1 when all are taken. */
static int count_slot(uint32_t id)
{
	for (uint32_t s = 0; s < hook_count_slots; s++)
		if (hook_count_func[s] == id)
			return (int)s;
	if (hook_count_slots == RING_COUNT_SLOTS)
		return -1;
	hook_count_func[hook_count_slots] = id;
	return (int)hook_count_slots++;
}

/* How a function's calls are traced: recorded (HOOK_RECORD), or counted (HOOK_COUNT) when the
 * count option names it. Called under agent_lock before its jump is written. */
static const struct hook_classifier agent_classifier;

static uint8_t agent_classify(const char *name, struct hook_hot *hh)
{
	hh->decoder = (uint16_t)cuhook_decoder_find(name);
	hh->nregs = (uint8_t)cuhook_reg_args(name);
	hh->nstack = (uint8_t)cuhook_stack_slots(name, CUHOOK_MAX_STACK_ARGS);
	hh->fast_out = record_fast_out(hh->decoder);
	/* kernel names: its successful exit goes to C (record_data), never the inline value */
	hh->names_role = kernel_names_role(name);
	if (hh->names_role)
		hh->fast_out = 0;
	/* a capture range's edges (capture_range.h): never counted, whatever count= says */
	uint8_t edge = capture_classify(name, (uint32_t)(hh - hooks_hot));
	if (edge) {
		hh->aux = 0;
		return edge;
	}
	/* cuGetExportTable with export_tables=1: recorded, and its tables read at its return */
	if (export_tables_classify(name, (uint32_t)(hh - hooks_hot), cfg->export_tables, &agent_classifier)) {
		hh->aux = 0;
		uint8_t flags = HOOK_RECORD | HOOK_CALLBACK;
		if (cfg->stacks[0] && glob_filter_match(cfg->stacks, name))
			flags |= HOOK_STACK;
		return flags;
	}
	if (cfg->count[0] && glob_filter_match(cfg->count, name)) {
		int slot = count_slot((uint32_t)(hh - hooks_hot));
		if (slot >= 0) {
			hh->aux = (uint8_t)slot;
			return HOOK_COUNT;
		}
		if (count_overflow++ == 0)
			agent_log(2, "count: more than %d functions to count; %s and any others beyond "
			          "are recorded instead", RING_COUNT_SLOTS, name);
	}
	hh->aux = 0;
	uint8_t flags = HOOK_RECORD;
	if (cfg->stacks[0] && glob_filter_match(cfg->stacks, name))
		flags |= HOOK_STACK;
	if (cuhook_flight && flight_trigger_slow.on && glob_filter_match(flight_trigger_slow.globs, name))
		flags |= HOOK_SLOW;
	return flags;
}

static const struct hook_classifier agent_classifier = {agent_classify};

/* "libcuda.so.580.159.04" -> "580.159.04" */
static void version_from_path(const char *path, char *out, size_t len)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	const char *so = strstr(base, ".so.");
	snprintf(out, len, "%s", so ? so + 4 : "");
}

struct found_lib {
	uintptr_t base;
	const void *phdr;
	unsigned phnum;
	char name[PATH_MAX];
};

struct scan {
	struct found_lib libs[16];
	unsigned n;
	bool plan_only;      /* a preparation: every object goes into the snapshot the start checks */
};

static int scan_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	struct scan *s = ctx;
	const char *name = info->dlpi_name;
	if (s->plan_only)
		loaded_snapshot_add(info->dlpi_addr, name);
	if (!name || !*name || s->n == 16)
		return 0;
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	if (fnmatch(cfg->lib, base, 0) != 0)
		return 0;
	struct found_lib *f = &s->libs[s->n++];
	f->base = info->dlpi_addr;
	f->phdr = info->dlpi_phdr;
	f->phnum = info->dlpi_phnum;
	snprintf(f->name, sizeof(f->name), "%s", name);
	return 0;
}

/* A note of how a library's counted functions are counted: by their count thunks (hook_table.c),
 * or through the entry stub when a thunk could not be written. */
static void log_counted(const char *path, uint32_t first, uint32_t count)
{
	unsigned counted = 0, in_place = 0;
	for (uint32_t id = first; id < first + count; id++) {
		if (!patch_sites[id].patched || hooks_hot[id].flags != HOOK_COUNT)
			continue;
		counted++;
		in_place += hook_counted_in_place(id);
	}
	if (counted)
		agent_log(1, "%s: %u functions counted, %u of them by their count thunks", path, counted,
		          in_place);
}

static void log_patched(const struct agent_lib *l, const struct patch_result *res)
{
	agent_log(1, "%s: %u functions patched, %u refused, %u filtered out; %d other threads stopped while patching, %d moved out of overwritten bytes",
	          l->path, res->patched, res->refused, res->filtered, freeze_stopped_threads(),
	          freeze_moved_threads());
	log_counted(l->path, l->first_id, l->count);
}

/* One library the scan found. plan_only (a preparation): plan it, or, known from an earlier
 * session (unpatched since its stop), plan what this session's options add and classify its
 * functions again; the start writes its jumps (arm_libraries). Else (found after a dlopen while
 * tracing): patch it at once. */
static void patch_one(const struct found_lib *f, bool plan_only)
{
	char real[PATH_MAX];
	if (!realpath(f->name, real))
		snprintf(real, sizeof(real), "%s", f->name);
	struct patch_request req = hook_request(agent_threads_stopped, &agent_classifier);
	req.base = f->base;
	req.phdr = f->phdr;
	req.phnum = f->phnum;
	req.filter = cfg->funcs;
	struct patch_result res;
	for (unsigned i = 0; i < agent_nlibs; i++) {
		struct agent_lib *l = &agent_libs[i];
		if (l->base != f->base || strcmp(l->path, real) != 0)
			continue;
		req.lib_id = l->lib_id;
		if (plan_only) {
			/* this session's count option may differ from the last: classified again */
			patch_replan(&req, l->first_id, l->count);
			l->arm_at_start = true;
			return;
		}
		/* Known from an earlier session: patched now? */
		bool armed = false;
		for (uint32_t id = l->first_id; id < l->first_id + l->count && !armed; id++)
			armed = patch_sites[id].patched;
		if (armed)
			return;
		patch_rearm(&req, l->first_id, l->count, &res);
		agent_log(0, "%s: %u functions patched again, %u refused, %u filtered", real,
		          res.patched, res.refused, res.filtered);
		log_counted(real, l->first_id, l->count);
		return;
	}
	if (agent_nlibs == AGENT_MAX_LIBS)
		return;
	struct agent_lib *l = &agent_libs[agent_nlibs];
	memset(l, 0, sizeof(*l));
	l->lib_id = agent_nlibs + 1;
	l->base = f->base;
	snprintf(l->path, sizeof(l->path), "%s", real);
	version_from_path(real, l->version, sizeof(l->version));
	req.lib_id = l->lib_id;
	if ((plan_only ? patch_plan_library(&req, &res) : patch_library(&req, &res)) != 0) {
		agent_log(2, "%s: no dynamic symbol table; nothing patched", real);
		return;
	}
	l->first_id = res.first_id;
	l->count = res.count;
	l->arm_at_start = plan_only;
	agent_nlibs++;
	if (plan_only)
		agent_log(0, "%s: %u functions planned, %u refused, %u filtered out", real, res.patched,
		          res.refused, res.filtered);
	else
		log_patched(l, &res);
	if (cfg->verbose >= 2)
		for (uint32_t id = res.first_id; id < res.first_id + res.count; id++)
			if (patch_sites[id].status != PATCH_OK && patch_sites[id].status != PATCH_FILTERED)
				agent_log(0, "  refused %s: %s (%s)", patch_sites[id].name,
				          patch_status_name(patch_sites[id].status), patch_sites[id].detail);
}

void registry_scan(bool plan_only)
{
	struct scan s;
	s.n = 0;
	s.plan_only = plan_only;
	if (plan_only)
		loaded_snapshot_begin();
	dl_iterate_phdr(scan_cb, &s);
	if (plan_only)
		loaded_snapshot_end();
	pthread_mutex_lock(&agent_lock);
	if (plan_only)
		for (unsigned i = 0; i < agent_nlibs; i++)
			agent_libs[i].arm_at_start = false; /* only what is loaded now */
	for (unsigned i = 0; i < s.n; i++)
		patch_one(&s.libs[i], plan_only);
	pthread_mutex_unlock(&agent_lock);
}

void registry_arm(void)
{
	for (unsigned i = 0; i < agent_nlibs; i++) {
		struct agent_lib *l = &agent_libs[i];
		if (!l->arm_at_start)
			continue;
		l->arm_at_start = false;
		struct patch_request req = hook_request(agent_threads_stopped, &agent_classifier);
		req.base = l->base;
		req.filter = cfg->funcs;
		req.lib_id = l->lib_id;
		struct patch_result res;
		patch_arm(&req, l->first_id, l->count, &res);
		log_patched(l, &res);
	}
}

bool registry_driver_patched(void)
{
	for (unsigned i = 0; i < agent_nlibs; i++)
		if (!agent_libs[i].internal && !agent_libs[i].ioctl)
			return true;
	return false;
}
