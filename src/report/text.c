/* The terminal report: header, API summary (nsys style), the GPU sections (text_gpu.c),
 * categories, transfers, pipeline stages, slowest calls, findings, host gaps, nesting, call sites
 * (text_stacks.c), timeline, functions not traced.
 * Every section reads the view and the analysis (result.h); none computes statistics itself. */
#include "result.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BOLD(v) ((v)->o->color ? "\033[1m" : "")
#define DIM(v) ((v)->o->color ? "\033[2m" : "")
#define YELLOW(v) ((v)->o->color ? "\033[33m" : "")
#define RED(v) ((v)->o->color ? "\033[31m" : "")
#define RESET(v) ((v)->o->color ? "\033[0m" : "")

#define section rp_text_section

/* The traced CUDA driver: the LIB block naming libcuda, else the first traced library. */
static const struct tr_lib *main_lib(const struct tr_trace *t)
{
	const struct tr_lib *first = NULL;
	for (uint32_t i = 0; i < t->nlibs; i++) {
		if (t->libs[i].flags & (CUHOOK_LIB_INTERNAL | CUHOOK_LIB_IOCTL))
			continue;
		if (strstr(t->libs[i].path, "libcuda"))
			return &t->libs[i];
		if (!first)
			first = &t->libs[i];
	}
	return first;
}

static int lib_internal(const struct tr_trace *t, uint32_t lib_id)
{
	for (uint32_t i = 0; i < t->nlibs; i++)
		if (t->libs[i].id == lib_id)
			return (t->libs[i].flags & CUHOOK_LIB_INTERNAL) != 0;
	return 0;
}

/* libc listed for its traced ioctl: not a driver library (the header counts it apart) */
static int lib_ioctl(const struct tr_trace *t, uint32_t lib_id)
{
	for (uint32_t i = 0; i < t->nlibs; i++)
		if (t->libs[i].id == lib_id)
			return (t->libs[i].flags & CUHOOK_LIB_IOCTL) != 0;
	return 0;
}

static void write_header(FILE *f, const struct rp_view *v, int merged)
{
	const struct tr_trace *t = v->t;
	char b[32];
	if (merged)
		fprintf(f, "\n%sprocess %u: %s%s\n", BOLD(v), t->pid, rp_safe(t->path), RESET(v));
	else
		fprintf(f, "%scuhook report: %s%s\n", BOLD(v), rp_safe(t->path), RESET(v));
	fprintf(f, "  program    %s\n", t->cmdline[0] ? rp_safe(t->cmdline) : "?");
	if (t->exe[0])
		fprintf(f, "  executable %s\n", rp_safe(t->exe));
	fprintf(f, "  pid        %u (parent %u)\n", t->pid, t->ppid);
	if (v->rank >= 0 && v->world > 0)
		fprintf(f, "  job        rank %ld of %ld\n", v->rank, v->world);
	else if (v->rank >= 0)
		fprintf(f, "  job        rank %ld\n", v->rank);
	if (t->start_realtime_ns) {
		time_t sec = (time_t)(t->start_realtime_ns / 1000000000u);
		struct tm tm;
		char when[64];
		if (localtime_r(&sec, &tm) && strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm))
			fprintf(f, "  started    %s\n", when);
	}
	fprintf(f, "  duration   %s\n", rp_fmt_dur(b, sizeof(b), (double)(v->t1 - v->t0)));
	if (merged)
		fprintf(f, "  starts at  +%s on the common time axis\n", rp_fmt_dur(b, sizeof(b), (double)v->shift));
	const struct tr_lib *lib = main_lib(t);
	if (lib)
		fprintf(f, "  driver     %s%s%s%s\n", rp_safe(lib->path), lib->version[0] ? " (" : "", rp_safe(lib->version),
		        lib->version[0] ? ")" : "");
	uint32_t patched = 0, other = 0, ioctl_hooked = 0;
	for (uint32_t i = 0; i < t->nfuncs; i++) {
		if (!t->funcs[i].defined || lib_internal(t, t->funcs[i].lib_id))
			continue;
		if (lib_ioctl(t, t->funcs[i].lib_id)) {
			ioctl_hooked += t->funcs[i].status == CUHOOK_PATCHED;
			continue;
		}
		if (t->funcs[i].status == CUHOOK_PATCHED)
			patched++;
		else
			other++;
	}
	fprintf(f, "  functions  %u traced, %u not traced%s\n", patched, other,
	        ioctl_hooked ? "; and libc's ioctl, on NVIDIA device files" : "");
	fprintf(f, "  threads    %u", t->nthreads);
	for (uint32_t i = 0; i < t->nthreads && i < 8; i++)
		fprintf(f, "%s%u%s%s", i ? ", " : ": ", t->threads[i].tid, t->threads[i].name[0] ? " " : "",
		        rp_safe(t->threads[i].name));
	fprintf(f, "%s\n", t->nthreads > 8 ? ", ..." : "");
	/* streamed: the calls were counted as they went by (text_stream.c) */
	const struct rp_stream_counts *sc = v->streamed;
	uint64_t ncalls = sc ? sc->calls : t->ncalls, nxsel = sc ? sc->xsel : v->nxsel;
	fprintf(f, "  events     %llu (%llu calls", (unsigned long long)(t->nentry + t->nexit), (unsigned long long)ncalls);
	if (v->has_ioctl) {
		uint64_t nio = sc ? sc->ioctls : 0;
		for (uint32_t i = 0; !sc && i < t->ncalls; i++)
			nio += v->fi[t->calls[i].func].ioctl;
		fprintf(f, ", of which %llu ioctl%s", (unsigned long long)nio, nio == 1 ? "" : "s");
	}
	if (nxsel != ncalls)
		fprintf(f, ", %llu selected", (unsigned long long)nxsel);
	fprintf(f, ")\n");
	if (t->ncounts) {
		uint32_t nf = 0;
		for (uint32_t i = 0; i < t->nfuncs; i++)
			nf += t->funcs[i].counted != 0;
		fprintf(f, "  counted    %llu calls of %u function%s besides the recorded ones (counted, not "
		           "timed; --record-all records them)", (unsigned long long)t->counted_calls, nf, nf == 1 ? "" : "s");
		if (v->ncounted != t->counted_calls)
			fprintf(f, ", %llu selected", (unsigned long long)v->ncounted);
		fprintf(f, "\n");
	}
	rp_gpu_header_line(f, v);
	fprintf(f, "  dropped    %s%llu%s%s\n", t->dropped ? YELLOW(v) : "", (unsigned long long)t->dropped,
	        RESET(v), t->dropped ? " records lost (lossy mode, size cap or write errors): counts are lower bounds" : "");
	if (t->truncated)
		fprintf(f, "  truncated  %syes%s: %s\n", YELLOW(v), RESET(v), rp_safe(t->truncated_reason));
	else
		fprintf(f, "  truncated  no\n");
	if (t->errors) {
		fprintf(f, "  errors     %s%llu%s", RED(v), (unsigned long long)t->errors, RESET(v));
		if (t->unknown_funcs)
			fprintf(f, ", %llu unknown function ids", (unsigned long long)t->unknown_funcs);
		if (t->orphan_exits)
			fprintf(f, ", %llu exits without entry", (unsigned long long)t->orphan_exits);
		if (t->bad_records)
			fprintf(f, ", %llu corrupt records", (unsigned long long)t->bad_records);
		if (t->seq_gaps)
			fprintf(f, ", %llu block gaps", (unsigned long long)t->seq_gaps);
		fprintf(f, "\n");
		for (uint32_t i = 0; i < t->nerror_msgs; i++)
			fprintf(f, "             %s%s%s\n", DIM(v), rp_safe(t->error_msgs[i]), RESET(v));
	}
	if (t->clock_guessed)
		fprintf(f, "  %swarning%s    no usable CLOCK pair: times are raw TSC ticks, not ns\n", YELLOW(v), RESET(v));
	for (uint32_t i = 0; i < t->nnotes; i++)
		fprintf(f, "  %s %s\n", t->notes[i].level >= 2 ? "error  " : t->notes[i].level ? "warning" : "note   ",
		        rp_safe(t->notes[i].text));
}

/* ---- API summary ------------------------------------------------------------------------------ */

enum { COL_PCT, COL_TOTAL, COL_CALLS, COL_AVG, COL_MED, COL_MIN, COL_MAX, COL_STD, COL_PROCS, COL_NAME, NCOLS };

/* One trace: fs[n]. Several (ms != NULL): ms[n], with names and a column of how many processes
 * called the function. */
static void write_summary(FILE *f, const struct rp_view *v, const struct rp_fstat *fs, uint32_t n,
                          const struct rp_mstat *ms, int none_selected)
{
	static const char *const heads[NCOLS] = {"Time (%)", "Total Time", "Num Calls", "Avg", "Med",
	                                          "Min", "Max", "StdDev", "Procs", "Name"};
	section(f, v, ms ? "CUDA driver API summary (all processes)" : "CUDA driver API summary");
	if (!n) {
		fprintf(f, "  no calls%s\n", none_selected ? " selected" : " traced");
		return;
	}
#define FS(i) (ms ? &ms[i].s : &fs[i])
	int64_t sum = 0;
	for (uint32_t i = 0; i < n; i++)
		sum = rp_sat_add(sum, FS(i)->total);
	/* Cells first, so every column gets the width of its widest cell. */
	char(*cells)[NCOLS][40] = calloc(n, sizeof(*cells));
	if (!cells)
		return;
	int w[NCOLS], any_counted = 0;
	for (int c = 0; c < NCOLS; c++)
		w[c] = (int)strlen(heads[c]);
	for (uint32_t i = 0; i < n; i++) {
		const struct rp_fstat *s = FS(i);
		char(*r)[40] = cells[i];
		if (ms)
			snprintf(r[COL_PROCS], 40, "%u", ms[i].nproc);
		/* a counted function has no time: "-", and nothing in the percentages' sum */
		if (!s->timed && s->counted)
			strcpy(r[COL_PCT], "-");
		else
			snprintf(r[COL_PCT], 40, "%.1f", sum ? 100.0 * (double)s->total / (double)sum : 0.0);
		snprintf(r[COL_CALLS], 40, "%llu", (unsigned long long)tr_sat_add_u64(s->calls, s->counted));
		any_counted |= s->counted != 0;
		if (s->timed) {
			rp_fmt_dur(r[COL_TOTAL], 40, (double)s->total);
			rp_fmt_dur(r[COL_AVG], 40, s->avg);
			rp_fmt_dur(r[COL_MED], 40, s->med);
			rp_fmt_dur(r[COL_MIN], 40, (double)s->min);
			rp_fmt_dur(r[COL_MAX], 40, (double)s->max);
			rp_fmt_dur(r[COL_STD], 40, s->stddev);
		} else {
			for (int c = COL_TOTAL; c <= COL_STD; c++)
				if (c != COL_CALLS)
					strcpy(r[c], "-");
		}
		for (int c = 0; c < COL_NAME; c++) {
			int l = (int)strlen(r[c]);
			if (l > w[c])
				w[c] = l;
		}
	}
	fprintf(f, " ");
	for (int c = 0; c < NCOLS; c++)
		if (ms || c != COL_PROCS)
			fprintf(f, "  %s%*s%s", BOLD(v), c == COL_NAME ? 0 : w[c], heads[c], RESET(v));
	fprintf(f, "\n ");
	for (int c = 0; c < NCOLS; c++) {
		if (!ms && c == COL_PROCS)
			continue;
		int l = c == COL_NAME ? (int)strlen(heads[c]) : w[c];
		fprintf(f, "  ");
		for (int k = 0; k < l; k++)
			putc('-', f);
	}
	fprintf(f, "\n");
	for (uint32_t i = 0; i < n; i++) {
		fprintf(f, " ");
		for (int c = 0; c < COL_NAME; c++)
			if (ms || c != COL_PROCS)
				fprintf(f, "  %*s", w[c], cells[i][c]);
		const struct rp_fstat *s = FS(i);
		fprintf(f, "  %s", rp_safe(ms ? ms[i].name : tr_func_name(v->t, s->func)));
		if (s->counted && !s->calls)
			fprintf(f, " %s(counted)%s", DIM(v), RESET(v));
		else if (s->counted)
			fprintf(f, " %s(%llu counted)%s", DIM(v), (unsigned long long)s->counted, RESET(v));
		if (s->timed < s->calls)
			fprintf(f, " %s(%llu without exit)%s", DIM(v), (unsigned long long)(s->calls - s->timed), RESET(v));
		if (s->failed)
			fprintf(f, " %s(%llu failed)%s", YELLOW(v), (unsigned long long)s->failed, RESET(v));
		fprintf(f, "\n");
	}
	if (any_counted)
		fprintf(f, "  %s(counted) = counted, not timed: the exact number of calls, no durations (--record-all "
		        "records each call)%s\n",
		        DIM(v), RESET(v));
	free(cells);
#undef FS
}

/* ---- functions not traced --------------------------------------------------------------------- */

#define REFUSED_SHOWN 8

static void write_refused(FILE *f, const struct rp_view *v)
{
	const struct tr_trace *t = v->t;
	uint32_t count[CUHOOK_STATUS_COUNT + 1] = {0}, total = 0;
	for (uint32_t i = 0; i < t->nfuncs; i++) {
		const struct tr_func *fn = &t->funcs[i];
		if (!fn->defined || fn->status == CUHOOK_PATCHED || lib_internal(t, fn->lib_id))
			continue;
		count[fn->status < CUHOOK_STATUS_COUNT ? fn->status : CUHOOK_STATUS_COUNT]++;
		total++;
	}
	if (!total)
		return;
	section(f, v, "Functions not traced");
	fprintf(f, "  %u function%s of the driver could not be patched or were excluded:\n", total,
	        total == 1 ? "" : "s");
	for (unsigned s = 1; s <= CUHOOK_STATUS_COUNT; s++) {
		if (!count[s])
			continue;
		fprintf(f, "  %4u  %s:", count[s], s < CUHOOK_STATUS_COUNT ? cuhook_patch_status_names[s] : "unknown status");
		uint32_t shown = 0;
		for (uint32_t i = 0; i < t->nfuncs; i++) {
			const struct tr_func *fn = &t->funcs[i];
			unsigned st = fn->status < CUHOOK_STATUS_COUNT ? fn->status : CUHOOK_STATUS_COUNT;
			if (!fn->defined || st != s || lib_internal(t, fn->lib_id))
				continue;
			if (!v->o->all && shown == REFUSED_SHOWN) {
				fprintf(f, " ... (--all lists them)");
				break;
			}
			fprintf(f, "%s %s", shown ? "," : "", rp_safe(fn->name));
			shown++;
		}
		fprintf(f, "\n");
	}
}

/* ---- analysis sections -------------------------------------------------------------------------- */

static double pct(int64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0;
}

static void write_categories(FILE *f, const struct rp_view *v, const struct rp_analysis *a)
{
	char b[32];
	if (!a->outer_calls)
		return;
	section(f, v, "Time by category (outermost calls)");
	fprintf(f, "  %s%-14s %10s %12s %7s%s\n", BOLD(v), "Category", "Calls", "Time", "%", RESET(v));
	/* largest first */
	int order[RP_CAT_COUNT];
	for (int i = 0; i < RP_CAT_COUNT; i++)
		order[i] = i;
	for (int i = 1; i < RP_CAT_COUNT; i++)
		for (int j = i; j > 0 && a->cat[order[j]].total > a->cat[order[j - 1]].total; j--) {
			int tmp = order[j];
			order[j] = order[j - 1];
			order[j - 1] = tmp;
		}
	for (int k = 0; k < RP_CAT_COUNT; k++) {
		const struct rp_cat_stat *c = &a->cat[order[k]];
		if (!c->calls)
			continue;
		fprintf(f, "  %-14s %10llu %12s %6.1f%%\n", rp_cat_names[order[k]], (unsigned long long)c->calls,
		        rp_fmt_dur(b, sizeof(b), (double)c->total), pct(c->total, a->api_time));
	}
	fprintf(f, "  %-14s %10llu %12s   (%.1f%% of the run)\n", "all", (unsigned long long)a->outer_calls,
	        rp_fmt_dur(b, sizeof(b), (double)a->api_time), pct(a->api_time, v->t1 - v->t0));
}

static void write_transfers(FILE *f, const struct rp_view *v, const struct rp_analysis *a)
{
	char b1[32], b2[32];
	int any = 0;
	for (int d = 1; d < RP_DIR_COUNT; d++)
		any |= a->dir[d].calls != 0;
	if (!any)
		return;
	section(f, v, "Transfers");
	fprintf(f, "  %s%-9s %8s %8s %12s %12s %14s%s\n", BOLD(v), "Direction", "Calls", "Async", "Bytes", "Time",
	        "Sync GB/s", RESET(v));
	for (int d = 1; d < RP_DIR_COUNT; d++) {
		const struct rp_dir_stat *ds = &a->dir[d];
		if (!ds->calls)
			continue;
		char gbs[32] = "-";
		if (ds->sync_bytes && ds->sync_time > 0)
			snprintf(gbs, sizeof(gbs), "%.2f", (double)ds->sync_bytes / (double)ds->sync_time);
		fprintf(f, "  %-9s %8llu %8llu %12s %12s %14s\n", rp_dir_names[d], (unsigned long long)ds->calls,
		        (unsigned long long)ds->async_calls, rp_fmt_bytes(b1, sizeof(b1), (double)ds->bytes),
		        rp_fmt_dur(b2, sizeof(b2), (double)ds->total), gbs);
	}
	fprintf(f, "  %s(an async copy's time is only its submission: no bandwidth for those; 2D/3D copies "
	           "have no byte count)%s\n", DIM(v), RESET(v));
}

#define MEM_COLUMNS 60

/* Memory in use (memory.c): per kind what was allocated and freed, the peak and when, what is
 * left at the end; then device + physical memory in use over the trace as one row of levels. */
static void write_memory(FILE *f, const struct rp_view *v)
{
	const struct rp_memory *m = v->memory;
	char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];
	if (!m)
		return;
	section(f, v, "Memory in use (from the allocations and frees traced)");
	fprintf(f, "  %s%-9s %8s %12s %8s %12s %12s %12s %8s %12s %12s%s\n", BOLD(v), "Kind", "Allocs", "Allocated",
	        "Frees", "Freed", "Peak", "At", "Left", "Left bytes", "Largest", RESET(v));
	uint64_t unknown = 0, failed = 0, nopointer = 0;
	for (unsigned k = 0; k < RP_MEM_KIND_COUNT; k++) {
		const struct rp_mem_kind_stat *s = &m->k[k];
		unknown += s->unknown_frees;
		failed += s->failed;
		nopointer += s->no_pointer;
		if (!s->allocs && !s->frees)
			continue;
		fprintf(f, "  %-9s %8llu %12s %8llu %12s %12s %12s %8llu %12s %12s\n", rp_mem_kind_names[k],
		        (unsigned long long)s->allocs, rp_fmt_bytes(b1, sizeof(b1), (double)s->alloc_bytes),
		        (unsigned long long)s->frees, rp_fmt_bytes(b2, sizeof(b2), (double)s->freed_bytes),
		        rp_fmt_bytes(b3, sizeof(b3), (double)s->peak), rp_fmt_dur(b4, sizeof(b4), (double)s->peak_at),
		        (unsigned long long)s->end_allocs, rp_fmt_bytes(b5, sizeof(b5), (double)s->end_bytes),
		        rp_fmt_bytes(b6, sizeof(b6), (double)s->largest));
	}
	if (m->peak) {
		static const char levels[] = " .:-=+*#%@";
		fprintf(f, "  device + physical in use, peak %s at %s (each column the most in %s):\n  |",
		        rp_fmt_bytes(b1, sizeof(b1), (double)m->peak), rp_fmt_dur(b2, sizeof(b2), (double)m->peak_at),
		        rp_fmt_dur(b3, sizeof(b3), (double)m->span / MEM_COLUMNS));
		uint64_t col[MEM_COLUMNS];
		rp_memory_slices(m, col, MEM_COLUMNS);
		for (unsigned i = 0; i < MEM_COLUMNS; i++) {
			/* ' ' only for nothing in use: any memory shows at least '.' */
			unsigned l = col[i] ? 1 + (unsigned)((double)col[i] / (double)m->peak * 8.999) : 0;
			fputc(levels[l > 9 ? 9 : l], f);
		}
		fprintf(f, "|\n");
	}
	if (unknown)
		fprintf(f, "  %llu free%s or release%s of memory the trace did not see allocated (before it began, or "
		           "imported from another process: size unknown)\n",
		        (unsigned long long)unknown, unknown == 1 ? "" : "s", unknown == 1 ? "" : "s");
	if (failed)
		fprintf(f, "  %llu allocation%s failed\n", (unsigned long long)failed, failed == 1 ? "" : "s");
	if (nopointer)
		fprintf(f, "  %llu allocation%s without the pointer returned (not followed)\n", (unsigned long long)nopointer,
		        nopointer == 1 ? "" : "s");
}

#define STREAM_ROWS 12

/* The streams the calls named (streams.c), by driver time: what each was given, the host's waits
 * on it, the events ordering it, and how many threads used it. */
static void write_streams(FILE *f, const struct rp_view *v)
{
	const struct rp_streams *s = v->streams;
	char b1[32], b2[32], b3[32];
	if (!s)
		return;
	section(f, v, "Streams (from the calls' stream arguments; 0x0 legacy default, 0x2 per-thread default)");
	fprintf(f, "  %s%-18s %7s %12s %8s %8s %8s %6s %10s %6s %12s %7s %6s %6s %7s%s\n", BOLD(v), "Stream", "Calls",
	        "Driver time", "Launches", "Copies", "Memsets", "Graphs", "Bytes", "Syncs", "Sync time", "Queries",
	        "Record", "Waits", "Threads", RESET(v));
	for (uint32_t i = 0; i < s->n && i < STREAM_ROWS; i++) {
		const struct rp_stream *r = &s->s[i];
		fprintf(f, "  0x%-16llx %7llu %12s %8llu %8llu %8llu %6llu %10s %6llu %12s %7llu %6llu %6llu %7u\n",
		        (unsigned long long)r->stream, (unsigned long long)r->calls, rp_fmt_dur(b1, sizeof(b1), (double)r->api),
		        (unsigned long long)r->launches, (unsigned long long)r->copies, (unsigned long long)r->memsets,
		        (unsigned long long)r->graph_launches, rp_fmt_bytes(b2, sizeof(b2), (double)r->bytes),
		        (unsigned long long)r->syncs, rp_fmt_dur(b3, sizeof(b3), (double)r->sync_time),
		        (unsigned long long)r->queries, (unsigned long long)r->records, (unsigned long long)r->waits,
		        r->nthreads);
	}
	if (s->n > STREAM_ROWS)
		fprintf(f, "  %u more stream%s (--format json lists every one)\n", s->n - STREAM_ROWS,
		        s->n - STREAM_ROWS == 1 ? "" : "s");
	if (s->unnamed)
		fprintf(f, "  %llu submission%s named no stream (synchronous copies and memsets, launches without their "
		           "configuration)\n",
		        (unsigned long long)s->unnamed, s->unnamed == 1 ? "" : "s");
	if (s->more)
		fprintf(f, "  %llu calls on streams past the first %u are not in the table\n", (unsigned long long)s->more,
		        RP_MAX_STREAMS);
}

/* The bytes of the copies neither H2D, D2H, D2D nor memsets: P2P, unified, array, 2D/3D. */
static uint64_t other_copy_bytes(const struct rp_device *r)
{
	return r->bytes[RP_DIR_P2P] + r->bytes[RP_DIR_DEFAULT] + r->bytes[RP_DIR_ARRAY] + r->bytes[RP_DIR_2D3D];
}

static void device_row(FILE *f, const struct rp_view *v, const char *label, const struct rp_device *r, unsigned slot)
{
	char b[7][32];
	const struct rp_memory *m = v->memory;
	fprintf(f, "  %-9s %8llu %12s %8llu %10s %10s %10s %10s %10s %7llu %10s %7u\n", label,
	        (unsigned long long)r->calls, rp_fmt_dur(b[0], sizeof(b[0]), (double)r->host),
	        (unsigned long long)r->launches, rp_fmt_bytes(b[1], sizeof(b[1]), (double)r->bytes[RP_DIR_H2D]),
	        rp_fmt_bytes(b[2], sizeof(b[2]), (double)r->bytes[RP_DIR_D2H]),
	        rp_fmt_bytes(b[3], sizeof(b[3]), (double)r->bytes[RP_DIR_D2D]),
	        rp_fmt_bytes(b[4], sizeof(b[4]), (double)other_copy_bytes(r)),
	        rp_fmt_bytes(b[5], sizeof(b[5]), (double)r->bytes[RP_DIR_MEMSET]), (unsigned long long)r->alloc_calls,
	        rp_fmt_bytes(b[6], sizeof(b[6]), m ? (double)m->dev_peak[slot] : 0.0), r->nthreads);
}

/* The devices the calls worked on (devices.c), host side: shown unless every call concerns no
 * device (a trace of cuInit and version queries alone). */
static void write_devices(FILE *f, const struct rp_view *v)
{
	const struct rp_devices *d = v->devices;
	if (!d)
		return;
	const struct rp_device *unknown = &d->d[rp_dev_slot(RP_DEV_UNKNOWN)], *none = &d->d[rp_dev_slot(RP_DEV_NONE)];
	if (!d->known && !unknown->calls)
		return;
	section(f, v, "Devices (from the calls: the device or context each names, its stream's context, or its "
	              "thread's current one)");
	fprintf(f, "  %s%-9s %8s %12s %8s %10s %10s %10s %10s %10s %7s %10s %7s%s\n", BOLD(v), "Device", "Calls",
	        "Host time", "Launches", "H2D", "D2H", "D2D", "Other copy", "Memset", "Allocs", "Peak alloc", "Threads",
	        RESET(v));
	for (unsigned k = 0; k < RP_MAX_DEVICES; k++)
		if (d->d[k].calls) {
			char label[16];
			snprintf(label, sizeof(label), "%u", k);
			device_row(f, v, label, &d->d[k], k);
		}
	if (unknown->calls)
		device_row(f, v, "unknown", unknown, rp_dev_slot(RP_DEV_UNKNOWN));
	if (none->calls)
		device_row(f, v, "none", none, rp_dev_slot(RP_DEV_NONE));
	fprintf(f, "  %s(host time, launches, copies' and memsets' bytes, allocations: outermost calls; peak alloc: device "
	           "memory from cuMemAlloc & co in use at once)%s\n", DIM(v), RESET(v));
	if (unknown->calls)
		fprintf(f, "  unknown: the trace does not show the calls' context (set before tracing began) or that "
		           "context's device\n");
	if (none->calls)
		fprintf(f, "  none: calls that concern no device (cuInit, version and count queries, entry-point lookups) "
		           "or made with no context current\n");
}

static void write_stages(FILE *f, const struct rp_view *v, const struct rp_analysis *a)
{
	char b1[32], b2[32], b3[32], b4[32];
	int any = 0;
	for (int s = 0; s < RP_STAGE_COUNT; s++)
		any |= a->stage[s].present;
	if (!any)
		return;
	section(f, v, "Pipeline stages (from the order of the calls)");
	fprintf(f, "  %s%-17s %12s %12s %12s %8s %12s%s\n", BOLD(v), "Stage", "Start", "End", "Length", "Calls",
	        "In driver", RESET(v));
	for (int s = 0; s < RP_STAGE_COUNT; s++) {
		const struct rp_stage *st = &a->stage[s];
		if (!st->present)
			continue;
		fprintf(f, "  %-17s %12s %12s %12s %8llu %12s\n", rp_stage_names[s],
		        rp_fmt_dur(b1, sizeof(b1), (double)(st->start - v->t0)),
		        rp_fmt_dur(b2, sizeof(b2), (double)(st->end - v->t0)),
		        rp_fmt_dur(b3, sizeof(b3), (double)(st->end - st->start)), (unsigned long long)st->calls,
		        rp_fmt_dur(b4, sizeof(b4), (double)st->api));
	}
}

void rp_text_slowest(FILE *f, const struct rp_view *v, const struct tr_call *const *calls, uint32_t n)
{
	const struct tr_trace *t = v->t;
	if (!n)
		return;
	char b1[32], b2[32], th[32], d[512];
	int tw = 6, fw = 8;
	for (uint32_t i = 0; i < n; i++) {
		int l = (int)strlen(rp_safe(rp_thread_label(v, calls[i]->thread, th, sizeof(th))));
		tw = l > tw ? l : tw;
		l = (int)strlen(rp_safe(tr_func_name(t, calls[i]->func)));
		fw = l > fw ? l : fw;
	}
	section(f, v, "Slowest calls");
	fprintf(f, "  %s%12s %12s  %-*s  %-*s  %s%s\n", BOLD(v), "Duration", "Start", tw, "Thread", fw, "Function",
	        "Details", RESET(v));
	for (uint32_t i = 0; i < n; i++) {
		const struct tr_call *c = calls[i];
		rp_describe_call(v, c, d, sizeof(d));
		fprintf(f, "  %12s %12s  %-*s  %-*s%s%s\n", rp_fmt_dur(b1, sizeof(b1), (double)tr_call_dur(c)),
		        rp_fmt_dur(b2, sizeof(b2), (double)(c->start_ns - v->t0)), tw,
		        rp_safe(rp_thread_label(v, c->thread, th, sizeof(th))), d[0] ? fw : 0,
		        d[0] ? rp_safe(tr_func_name(t, c->func)) : "", d[0] ? "  " : rp_safe(tr_func_name(t, c->func)),
		        rp_safe(d));
	}
}

/* The slowest calls the analysis found (r->slowest: indices in calls[]). */
static void write_slowest(FILE *f, const struct rp_view *v, const struct rp_trace_result *r)
{
	uint32_t n = r->nslowest;
	const struct tr_call **calls = n ? malloc(n * sizeof(*calls)) : NULL;
	for (uint32_t i = 0; calls && i < n; i++)
		calls[i] = &v->t->calls[r->slowest[i]];
	if (calls)
		rp_text_slowest(f, v, calls, n);
	free(calls);
}

static void write_findings(FILE *f, const struct rp_view *v, const struct rp_finding *fd, unsigned n)
{
	static const char *const marks[] = {"-", "*", "!"};
	if (!n)
		return;
	section(f, v, "Findings");
	for (unsigned i = 0; i < n; i++) {
		int s = fd[i].severity < 0 ? 0 : fd[i].severity > 2 ? 2 : fd[i].severity;
		const char *col = s == 2 ? RED(v) : s == 1 ? YELLOW(v) : "";
		/* wrap at 100 columns, continuation lines indented under the text */
		fprintf(f, "  %s%s%s", col, marks[s], RESET(v));
		int colpos = 3;
		for (const char *p = rp_safe(fd[i].text); *p;) {
			while (*p == ' ')
				p++;
			if (!*p)
				break;
			const char *sp = strchr(p, ' ');
			int w = sp ? (int)(sp - p) : (int)strlen(p);
			if (colpos + 1 + w > 100 && colpos > 4) {
				fprintf(f, "\n   ");
				colpos = 3;
			}
			fprintf(f, " %.*s", w, p);
			colpos += 1 + w;
			p += w;
		}
		fprintf(f, "\n");
	}
}

static void write_gaps(FILE *f, const struct rp_view *v, const struct rp_analysis *a)
{
	const struct rp_gaps *g = &a->gaps;
	const struct tr_trace *t = v->t;
	char b1[32], b2[32], b3[32], b4[32], b5[32], th[32];
	if (!g->submissions)
		return;
	section(f, v, "Host gaps between GPU submissions");
	fprintf(f, "  %llu submissions (launches, copies, memsets, graph launches) over %s\n"
	           "  %llu gaps: total %s (%s of it waiting in sync calls), median %s, max %s\n",
	        (unsigned long long)g->submissions, rp_fmt_dur(b1, sizeof(b1), (double)g->span),
	        (unsigned long long)g->ngaps, rp_fmt_dur(b2, sizeof(b2), (double)g->total),
	        rp_fmt_dur(b3, sizeof(b3), (double)g->sync_in_gaps), rp_fmt_dur(b4, sizeof(b4), (double)g->median),
	        rp_fmt_dur(b5, sizeof(b5), (double)g->max));
	for (uint32_t i = 0; i < g->ntop; i++) {
		const struct tr_call *before = &t->calls[g->top_before[i]], *after = &t->calls[g->top_after[i]];
		int64_t sync = g->top_sync[i];
		fprintf(f, "  %12s at %10s after %s, before %s (%s)", rp_fmt_dur(b1, sizeof(b1), (double)g->top[i]),
		        rp_fmt_dur(b2, sizeof(b2), (double)(after->start_ns - g->top[i] - v->t0)),
		        rp_safe(tr_func_name(t, before->func)), rp_safe(tr_func_name(t, after->func)),
		        rp_safe(rp_thread_label(v, after->thread, th, sizeof(th))));
		if (sync)
			fprintf(f, ", %s of it in sync calls", rp_fmt_dur(b3, sizeof(b3), (double)sync));
		fprintf(f, "\n");
	}
}

static void write_nesting(FILE *f, const struct rp_view *v, const struct rp_analysis *a)
{
	char b[32];
	if (!a->nested_calls)
		return;
	section(f, v, "Call nesting");
	fprintf(f, "  %llu traced call%s made from inside another traced call (max depth %d); their time is "
	           "part of the caller's:\n",
	        (unsigned long long)a->nested_calls, a->nested_calls == 1 ? " was" : "s were", a->max_depth);
	for (uint32_t i = 0; i < a->nnest; i++)
		fprintf(f, "  %s > %s: %llu call%s, %s\n", rp_safe(tr_func_name(v->t, a->nest[i].parent_func)),
		        rp_safe(tr_func_name(v->t, a->nest[i].child_func)), (unsigned long long)a->nest[i].count,
		        a->nest[i].count == 1 ? "" : "s", rp_fmt_dur(b, sizeof(b), (double)a->nest[i].child_time));
}

/* Everything after the API summary but the timeline: one trace's analysis. */
static void write_sections(FILE *f, struct rp_view *v, const struct rp_trace_result *r)
{
	const struct rp_analysis *a = &r->a;
	rp_gpu_write_text(f, v);
	write_categories(f, v, a);
	write_transfers(f, v, a);
	write_memory(f, v);
	write_streams(f, v);
	write_devices(f, v);
	write_stages(f, v, a);
	rp_kernels_write_text(f, v, &r->kernels);
	write_slowest(f, v, r);
	write_findings(f, v, r->fd, r->nfd);
	write_gaps(f, v, a);
	write_nesting(f, v, a);
	rp_behind_api_write_text(f, v, &r->behind);
	rp_stacks_write_text(f, v);
	if (v->has_ioctl)
		rp_ioctl_write_text(f, v, &r->ioctl);
}

int rp_write_text(FILE *f, struct rp_view *v, const struct rp_trace_result *r)
{
	write_header(f, v, 0);
	write_summary(f, v, r->fs, r->nfs, NULL, v->nsel != v->t->ncalls);
	write_sections(f, v, r);
	rp_text_timeline(f, v, 1);
	write_refused(f, v);
	return ferror(f) ? -1 : 0;
}

/* The merged summary's functions side by side per process: where each rank spent its API time.
 * The first BYPROC_ROWS functions of the summary's order, at most BYPROC_COLS processes. */
#define BYPROC_ROWS 15
#define BYPROC_COLS 8
static void write_by_process(FILE *f, const struct rp_view *views, unsigned n, const struct rp_merged_result *m)
{
	const struct rp_mstat *ms = m->ms;
	const struct rp_fstat *cells = m->by_process;
	uint32_t nms = m->nms;
	if (!nms)
		return;
	unsigned cols = n < BYPROC_COLS ? n : BYPROC_COLS;
	uint32_t rows = nms < BYPROC_ROWS ? nms : BYPROC_ROWS;
	char label[BYPROC_COLS][64], cell[64], b[32];
	int cw[BYPROC_COLS], nw = 4;
	for (unsigned k = 0; k < cols; k++) {
		rp_proc_label(&views[k], label[k], sizeof(label[k]));
		cw[k] = (int)strlen(label[k]) > 20 ? (int)strlen(label[k]) : 20;
	}
	for (uint32_t i = 0; i < rows; i++)
		if ((int)strlen(rp_safe(ms[i].name)) > nw)
			nw = (int)strlen(rp_safe(ms[i].name));
	section(f, &views[0], "API time by process (total time and calls of the summary's first functions)");
	fprintf(f, "  %-*s", nw, "Name");
	for (unsigned k = 0; k < cols; k++)
		fprintf(f, "  %*s", cw[k], label[k]);
	fprintf(f, "\n");
	for (uint32_t i = 0; i < rows; i++) {
		fprintf(f, "  %-*s", nw, rp_safe(ms[i].name));
		for (unsigned k = 0; k < cols; k++) {
			const struct rp_fstat *c = &cells[(size_t)i * n + k];
			if (c->timed)
				snprintf(cell, sizeof(cell), "%s (%llu)", rp_fmt_dur(b, sizeof(b), (double)c->total),
				         (unsigned long long)c->calls);
			else if (c->calls || c->counted)
				snprintf(cell, sizeof(cell), "- (%llu)", (unsigned long long)(c->calls + c->counted));
			else
				snprintf(cell, sizeof(cell), "-");
			fprintf(f, "  %*s", cw[k], cell);
		}
		fprintf(f, "\n");
	}
	if (n > cols)
		fprintf(f, "  (%u more processes: json merged.functions[].by_process has them all)\n", n - cols);
}

/* Whether a merged report has a rank column: some trace says its rank in a job. */
static int any_rank(const struct rp_view *views, unsigned n)
{
	for (unsigned k = 0; k < n; k++)
		if (views[k].rank >= 0)
			return 1;
	return 0;
}

static void rank_cell(FILE *f, const struct rp_view *v)
{
	if (v->rank >= 0)
		fprintf(f, "%8ld  ", v->rank);
	else
		fprintf(f, "%8s  ", "-");
}

/* The moments every process waited at once (sync_across.c): who arrived last, how often, and
 * what it cost the others; then the longest of those waits. */
#define SYNC_TOP 5

/* The SYNC_TOP elements of an array with the largest spread (the int64_t at `hi` - the one at
 * `lo`), largest first, ties by position: their indices in top[], their count returned. */
static size_t top_spreads(const void *base, size_t n, size_t size, size_t lo, size_t hi, size_t *top)
{
	size_t ntop = 0;
	for (size_t i = 0; i < n; i++) {
		const char *e = (const char *)base + i * size;
		int64_t a, b, d;
		memcpy(&a, e + lo, sizeof(a));
		memcpy(&b, e + hi, sizeof(b));
		d = b - a;
		size_t at = ntop;
		while (at > 0) {
			const char *o = (const char *)base + top[at - 1] * size;
			memcpy(&a, o + lo, sizeof(a));
			memcpy(&b, o + hi, sizeof(b));
			if (b - a >= d)
				break;
			at--;
		}
		if (at >= SYNC_TOP)
			continue;
		if (ntop < SYNC_TOP)
			ntop++;
		memmove(&top[at + 1], &top[at], (ntop - 1 - at) * sizeof(top[0]));
		top[at] = i;
	}
	return ntop;
}
static void write_syncs(FILE *f, const struct rp_view *views, unsigned n, const struct rp_syncs *sp)
{
	const struct rp_view *v0 = &views[0];
	const struct rp_syncs s = *sp;
	char b1[32], b2[32];
	section(f, v0, "Waiting for each other");
	uint64_t waits = 0;
	for (unsigned k = 0; k < n; k++)
		waits += s.proc[k].waits;
	if (!s.nep) {
		fprintf(f, "  no moment where every process waited at once (%llu blocking cu*Synchronize calls in all)\n",
		        (unsigned long long)waits);
		return;
	}
	fprintf(f, "  %zu time%s every process waited at once (one blocking cu*Synchronize call each, overlapping,\n"
	           "  ending within %s): the one that arrived last is the one the others waited for\n",
	        s.nep, s.nep == 1 ? "" : "s", rp_fmt_dur(b1, sizeof(b1), (double)s.window));
	int ranks = any_rank(views, n);
	fprintf(f, "  %8s  %s%8s  %8s  %6s  %6s  %12s  %16s  %s\n", "pid", ranks ? "    rank  " : "", "waits", "together",
	        "last", "(%)", "waited", "made others wait", "program");
	for (unsigned k = 0; k < n; k++) {
		const struct rp_sync_proc *p = &s.proc[k];
		const struct tr_trace *t = views[k].t;
		fprintf(f, "  %8u  ", t->pid);
		if (ranks)
			rank_cell(f, &views[k]);
		fprintf(f, "%8llu  %8llu  %6llu  %6.1f  %12s  %16s  %s\n", (unsigned long long)p->waits,
		        (unsigned long long)p->together, (unsigned long long)p->last, 100.0 * (double)p->last / (double)s.nep,
		        rp_fmt_dur(b1, sizeof(b1), (double)p->waited), rp_fmt_dur(b2, sizeof(b2), (double)p->caused),
		        t->cmdline[0] ? rp_safe(t->cmdline) : "?");
	}
	size_t top[SYNC_TOP];
	size_t ntop = top_spreads(s.ep, s.nep, sizeof(s.ep[0]), offsetof(struct rp_sync_episode, start),
	                          offsetof(struct rp_sync_episode, last_arrival), top);
	fprintf(f, "  the longest waits (on the common axis):\n");
	for (size_t i = 0; i < ntop; i++) {
		const struct rp_sync_episode *e = &s.ep[top[i]];
		char who[64];
		fprintf(f, "    +%-12s %s arrived %s after the first\n", rp_fmt_dur(b1, sizeof(b1), (double)e->start),
		        rp_proc_label(&views[e->slowest], who, sizeof(who)),
		        rp_fmt_dur(b2, sizeof(b2), (double)(e->last_arrival - e->start)));
	}
}

/* A collective's kernel for one line: demangled, without its parameter list, control
 * characters replaced ("ncclDevKernel_AllReduce_Sum_f32_RING_LL"). */
static void coll_label(const char *name, uint16_t len, char *buf, size_t size)
{
	char raw[512];
	size_t n = len < sizeof(raw) - 1 ? len : sizeof(raw) - 1;
	memcpy(raw, name, n);
	raw[n] = 0;
	char *d = rp_demangle(raw);
	const char *s = d ? d : raw;
	size_t k = 0;
	for (; s[k] && s[k] != '(' && k + 1 < size; k++)
		buf[k] = (unsigned char)s[k] < 0x20 || s[k] == 0x7f ? '?' : s[k];
	buf[k] = 0;
	free(d);
}

/* The processes' NCCL collectives matched by order (collectives.c): per process how often it
 * arrived last, what it waited and made the others wait, then the longest waits with their
 * collective and the one that arrived last. No section when no process launched an NCCL kernel. */
static void write_collectives(FILE *f, const struct rp_view *views, unsigned n, const struct rp_colls *sp)
{
	const struct rp_colls s = *sp;
	char b1[32], b2[32];
	uint64_t kernels = 0;
	for (unsigned k = 0; k < n; k++)
		kernels += s.proc[k].kernels;
	if (!kernels)
		return;
	section(f, &views[0], "Collectives across processes");
	fprintf(f, "  %zu NCCL collective%s matched by order (the k-th NCCL kernel of each process is one), timed by %s:\n"
	           "  the one that arrived last is the one the others waited for\n",
	        s.n, s.n == 1 ? "" : "s",
	        s.gpu ? "each kernel's start on its GPU" : "each launch call's start on the host (--gpu times them on the GPU)");
	if (s.mismatch != SIZE_MAX)
		fprintf(f, "  the processes' NCCL kernels differ from collective %zu on (other communicators, or a "
		           "process not traced from its start): matched up to there\n",
		        s.mismatch + 1);
	int ranks = any_rank(views, n);
	fprintf(f, "  %8s  %s%8s  %6s  %6s  %12s  %16s\n", "pid", ranks ? "    rank  " : "", "kernels", "last", "(%)",
	        "waited", "made others wait");
	for (unsigned k = 0; k < n; k++) {
		const struct rp_coll_proc *p = &s.proc[k];
		fprintf(f, "  %8u  ", views[k].t->pid);
		if (ranks)
			rank_cell(f, &views[k]);
		fprintf(f, "%8llu  %6llu  %6.1f  %12s  %16s\n", (unsigned long long)p->kernels, (unsigned long long)p->last,
		        s.n ? 100.0 * (double)p->last / (double)s.n : 0.0, rp_fmt_dur(b1, sizeof(b1), (double)p->waited),
		        rp_fmt_dur(b2, sizeof(b2), (double)p->caused));
	}
	size_t top[SYNC_TOP];
	size_t ntop = top_spreads(s.c, s.n, sizeof(s.c[0]), offsetof(struct rp_coll, first), offsetof(struct rp_coll, last),
	                          top);
	if (ntop)
		fprintf(f, "  the longest waits (on the common axis):\n");
	for (size_t i = 0; i < ntop; i++) {
		const struct rp_coll *c = &s.c[top[i]];
		char who[64], name[256];
		coll_label(c->name, c->len, name, sizeof(name));
		fprintf(f, "    +%-12s #%-6zu %s arrived %s after the first  %s\n", rp_fmt_dur(b1, sizeof(b1), (double)c->first),
		        top[i] + 1, rp_proc_label(&views[c->slowest], who, sizeof(who)),
		        rp_fmt_dur(b2, sizeof(b2), (double)(c->last - c->first)), name);
	}
}

/* Several traces, one report: what they are and how they line up, a header per process, the
 * processes side by side, the API summary over all of them, one timeline, then each process's
 * own analysis (its times there are from its own start). */
int rp_write_text_merged(FILE *f, struct rp_view *views, const struct rp_result *r, int realtime)
{
	struct rp_view *v0 = &views[0];
	unsigned n = r->n;
	const struct rp_merged_result *m = r->merged;
	char b1[32], b2[32], b3[32];
	int64_t end = 0, api = 0;
	uint64_t calls = 0, sel = 0, threads = 0, counted = 0;
	for (unsigned k = 0; k < n; k++) {
		struct rp_view *v = &views[k];
		int64_t e = rp_rel(v, v->t1);
		if (e > end)
			end = e;
		api = rp_sat_add(api, r->per[k].a.api_time);
		calls += v->t->ncalls;
		sel += v->nsel;
		threads += v->t->nthreads;
		counted = tr_sat_add_u64(counted, v->t->counted_calls);
	}
	fprintf(f, "%scuhook report: %u processes%s\n", BOLD(v0), n, RESET(v0));
	fprintf(f, "  time axis  %s\n",
	        realtime ? "CLOCK_REALTIME (each trace's realtime - monotonic offset at its start)"
	                 : v0->o->align_monotonic ? "CLOCK_MONOTONIC (--align monotonic: one machine)"
	                                          : "CLOCK_MONOTONIC (a trace has no realtime clock pair)");
	fprintf(f, "  span       %s (earliest start to the last event)\n", rp_fmt_dur(b1, sizeof(b1), (double)end));
	fprintf(f, "  threads    %llu\n", (unsigned long long)threads);
	fprintf(f, "  calls      %llu", (unsigned long long)calls);
	if (sel != calls)
		fprintf(f, " (%llu selected API calls)", (unsigned long long)sel);
	fprintf(f, "\n");
	if (counted)
		fprintf(f, "  counted    %llu calls besides the recorded ones (counted, not timed; --record-all records "
		        "them)\n",
		        (unsigned long long)counted);
	for (unsigned k = 0; k < n; k++)
		write_header(f, &views[k], 1);

	section(f, v0, "Processes");
	int ranks = any_rank(views, n);
	fprintf(f, "  %8s  %s%12s  %12s  %7s  %8s  %12s  %7s  %s\n", "pid", ranks ? "    rank  " : "", "start", "duration",
	        "threads", "calls", "API time", "API (%)", "program");
	for (unsigned k = 0; k < n; k++) {
		struct rp_view *v = &views[k];
		const struct tr_trace *t = v->t;
		char start[40];
		snprintf(start, sizeof(start), "+%s", rp_fmt_dur(b1, sizeof(b1), (double)v->shift));
		fprintf(f, "  %8u  ", t->pid);
		if (ranks)
			rank_cell(f, v);
		fprintf(f, "%12s  %12s  %7u  %8u  %12s  %7.1f  %s\n", start,
		        rp_fmt_dur(b2, sizeof(b2), (double)(v->t1 - v->t0)), t->nthreads, v->nsel,
		        rp_fmt_dur(b3, sizeof(b3), (double)r->per[k].a.api_time),
		        api > 0 ? 100.0 * (double)r->per[k].a.api_time / (double)api : 0.0, t->cmdline[0] ? rp_safe(t->cmdline) : "?");
	}

	write_summary(f, v0, NULL, m->nms, m->ms, calls != sel);
	write_by_process(f, views, n, m);
	rp_text_timeline(f, views, n);
	write_syncs(f, views, n, &m->syncs);
	write_collectives(f, views, n, &m->colls);

	for (unsigned k = 0; k < n; k++) {
		struct rp_view *v = &views[k];
		fprintf(f, "\n\n%s== process %u (%s): its own analysis, times from its start ==%s\n", BOLD(v), v->t->pid,
		        v->t->cmdline[0] ? rp_safe(v->t->cmdline) : "?", RESET(v));
		write_sections(f, v, &r->per[k]);
		write_refused(f, v);
	}
	return ferror(f) ? -1 : 0;
}

/* ---- the streaming report's sections (text_stream.c): the same writers ------------------------ */

void rp_text_header(FILE *f, const struct rp_view *v)
{
	write_header(f, v, 0);
}

void rp_text_summary(FILE *f, const struct rp_view *v, const struct rp_fstat *fs, uint32_t n, int none_selected)
{
	write_summary(f, v, fs, n, NULL, none_selected);
}

void rp_text_categories(FILE *f, const struct rp_view *v, const struct rp_analysis *a)
{
	write_categories(f, v, a);
	write_transfers(f, v, a);
}

void rp_text_nesting(FILE *f, const struct rp_view *v, const struct rp_analysis *a)
{
	write_nesting(f, v, a);
}

void rp_text_refused(FILE *f, const struct rp_view *v)
{
	write_refused(f, v);
}
