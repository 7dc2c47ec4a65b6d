/* --format sqlite: one SQLite database (the distro's libsqlite3) with every selected call as a
 * row, for DuckDB, pandas, Spark and the sqlite3 shell. SCHEMA below is the schema, and
 * docs/report.md ("SQLite export") documents it; the two say the same.
 *
 * Everything comes from the views (rp_result_build analysed the traces once, as for every other
 * format): the calls the options select (rp_view.xsel), the counted calls they select, the GPU
 * work they select (rp_gpu.sel) with the links tr_gpu_link made. Several traces give one
 * database, a processes row each, every other table naming its process.
 *
 * The file is created as every file cuhook writes (out_file.h: new, 0600, never through a link)
 * and SQLite then opens that path with SQLITE_OPEN_NOFOLLOW; the rows go in within one
 * transaction with no rollback journal (a new file: nothing to roll back to), and a failure
 * removes the file rather than leave half a database behind. */
#include "export_stream.h"

#include "decoders.h"
#include "out_file.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SQLITE_SCHEMA_VERSION 1

/* Unsigned 64-bit values (arguments, return values, handles) are stored as SQLite's signed
 * INTEGER with the same bits: a value >= 2^63 reads negative; (value & 0xffffffffffffffff) or
 * printf('0x%x', value) gives the register back. Times are CLOCK_MONOTONIC nanoseconds of the
 * traced machine; processes.realtime_offset_ns turns them into CLOCK_REALTIME (calls_realtime). */
static const char SCHEMA[] =
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value);\n"
	"CREATE TABLE processes(\n"
	"  id INTEGER PRIMARY KEY,        -- 1.. in command-line order\n"
	"  pid INTEGER, ppid INTEGER,\n"
	"  cmdline TEXT, exe TEXT, trace_path TEXT, trace_version INTEGER,\n"
	"  clock TEXT,                    -- 'tsc' or 'monotonic': what the agent timed calls with\n"
	"  start_monotonic_ns INTEGER, start_realtime_ns INTEGER,\n"
	"  realtime_offset_ns INTEGER,    -- CLOCK_REALTIME - CLOCK_MONOTONIC; NULL: unknown\n"
	"  truncated INTEGER, errors INTEGER, dropped INTEGER);\n"
	"CREATE TABLE threads(\n"
	"  id INTEGER PRIMARY KEY, process INTEGER REFERENCES processes,\n"
	"  tid INTEGER, name TEXT,        -- name: '' when no THREAD block named it\n"
	"  calls INTEGER, counted INTEGER, dropped INTEGER);\n"
	"CREATE TABLE functions(\n"
	"  id INTEGER PRIMARY KEY, process INTEGER REFERENCES processes,\n"
	"  func_id INTEGER,               -- the trace's function id\n"
	"  name TEXT, library TEXT, category TEXT,\n"
	"  status TEXT,                   -- 'patched' or why not\n"
	"  decoder TEXT);                 -- the DATA decoder's function, NULL: none\n"
	"CREATE TABLE calls(\n"
	"  id INTEGER PRIMARY KEY, process INTEGER REFERENCES processes,\n"
	"  thread INTEGER REFERENCES threads, function INTEGER REFERENCES functions,\n"
	"  start_ns INTEGER, end_ns INTEGER, dur_ns INTEGER, ret INTEGER, -- NULL: no EXIT\n"
	"  unfinished INTEGER,            -- 1: its EXIT never came (0 for an entry-only function)\n"
	"  depth INTEGER,\n"
	"  parent INTEGER,                -- the enclosing traced call's id, NULL: outermost\n"
	"  kernel TEXT,                   -- a launch's kernel name, when the trace names it\n"
	"  arg0 INTEGER, arg1 INTEGER, arg2 INTEGER, arg3 INTEGER, arg4 INTEGER, arg5 INTEGER,\n"
	"  arg6 INTEGER, arg7 INTEGER, arg8 INTEGER, arg9 INTEGER, arg10 INTEGER, arg11 INTEGER);\n"
	"  -- argN: NULL where the ENTRY carried no such argument; 6.. are stack slots\n"
	"CREATE TABLE details(            -- the DATA records: what the agent read for a call\n"
	"  call INTEGER REFERENCES calls, label TEXT, value INTEGER, text TEXT, at_exit INTEGER);\n"
	"CREATE TABLE counted(            -- calls counted, not recorded (agent option count=)\n"
	"  process INTEGER REFERENCES processes, thread INTEGER REFERENCES threads,\n"
	"  function INTEGER REFERENCES functions, calls INTEGER);\n"
	"CREATE TABLE notes(process INTEGER REFERENCES processes, level TEXT, text TEXT);\n"
	"CREATE TABLE gpu_work(\n"
	"  id INTEGER PRIMARY KEY, process INTEGER REFERENCES processes,\n"
	"  kind TEXT,                     -- 'kernel', 'memcpy', 'memset'\n"
	"  name TEXT,                     -- the kernel's name demangled, 'memcpy HtoD', 'memset'\n"
	"  start_ns INTEGER, end_ns INTEGER, dur_ns INTEGER, -- on the GPU, on the trace's clock\n"
	"  device INTEGER, context INTEGER, stream INTEGER, correlation INTEGER, session INTEGER,\n"
	"  grid_x INTEGER, grid_y INTEGER, grid_z INTEGER, block_x INTEGER, block_y INTEGER,\n"
	"  block_z INTEGER, shared_static INTEGER, shared_dynamic INTEGER, registers INTEGER,\n"
	"  copy_kind TEXT, bytes INTEGER, value INTEGER, graph_id INTEGER, graph_node_id INTEGER,\n"
	"  api_start_ns INTEGER,          -- when CUPTI saw the submitting call start\n"
	"  link TEXT,                     -- 'linked', or why not (docs/report.md)\n"
	"  call INTEGER REFERENCES calls);-- the call that submitted it, NULL: unlinked\n";

/* Made after the rows are in: one index build instead of an update per row. */
static const char INDEXES[] =
	"CREATE INDEX calls_function ON calls(function);\n"
	"CREATE INDEX calls_thread ON calls(thread, start_ns);\n"
	"CREATE INDEX calls_start ON calls(start_ns);\n"
	"CREATE INDEX calls_parent ON calls(parent);\n"
	"CREATE INDEX details_call ON details(call);\n"
	"CREATE INDEX gpu_work_call ON gpu_work(call);\n"
	"CREATE INDEX gpu_work_start ON gpu_work(start_ns);\n"
	"CREATE VIEW calls_realtime AS SELECT c.id AS call, c.start_ns + p.realtime_offset_ns AS start_realtime_ns,\n"
	"  c.end_ns + p.realtime_offset_ns AS end_realtime_ns FROM calls c JOIN processes p ON p.id = c.process;\n";

enum { ST_PROCESS, ST_THREAD, ST_FUNCTION, ST_CALL, ST_DETAIL, ST_COUNTED, ST_NOTE, ST_GPU, ST_COUNT };
static const char *const INSERTS[ST_COUNT] = {
	"INSERT INTO processes VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	"INSERT INTO threads VALUES(?,?,?,?,?,?,?)",
	"INSERT INTO functions VALUES(?,?,?,?,?,?,?,?)",
	"INSERT INTO calls VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	"INSERT INTO details VALUES(?,?,?,?,?)",
	"INSERT INTO counted VALUES(?,?,?,?)",
	"INSERT INTO notes VALUES(?,?,?)",
	"INSERT INTO gpu_work VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
};

struct db {
	sqlite3 *db;
	sqlite3_stmt *st[ST_COUNT];
	/* ids of the current process's rows: a trace's index + its base + 1 */
	int64_t process, thread_base, func_base, call_base, gpu_base;
};

/* One row: bind with these, then step and reset. Binding 1-based columns in order. */
static void b_int(sqlite3_stmt *s, int *col, int64_t v)
{
	sqlite3_bind_int64(s, ++*col, v);
}
static void b_null(sqlite3_stmt *s, int *col)
{
	sqlite3_bind_null(s, ++*col);
}
static void b_text(sqlite3_stmt *s, int *col, const char *str, int len)
{
	if (str)
		sqlite3_bind_text(s, ++*col, str, len, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, ++*col);
}
static int row_done(sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return rc == SQLITE_DONE ? 0 : -1;
}

static int put_process(struct db *d, const struct rp_view *v)
{
	const struct tr_trace *t = v->t;
	sqlite3_stmt *s = d->st[ST_PROCESS];
	int c = 0;
	b_int(s, &c, d->process);
	b_int(s, &c, t->pid);
	b_int(s, &c, t->ppid);
	b_text(s, &c, t->cmdline, -1);
	b_text(s, &c, t->exe, -1);
	b_text(s, &c, t->path, -1);
	b_int(s, &c, t->version);
	b_text(s, &c, t->clock_source == CUHOOK_CLOCK_TSC ? "tsc" : "monotonic", -1);
	b_int(s, &c, (int64_t)t->start_monotonic_ns);
	b_int(s, &c, (int64_t)t->start_realtime_ns);
	if (t->has_realtime)
		b_int(s, &c, t->realtime_offset_ns);
	else
		b_null(s, &c);
	b_int(s, &c, t->truncated);
	b_int(s, &c, (int64_t)t->errors);
	b_int(s, &c, (int64_t)t->dropped);
	return row_done(s);
}

/* calls: per thread index, its calls when streamed (the trace keeps none), n of them; NULL: the
 * trace's */
static int put_threads(struct db *d, const struct rp_view *v, const uint64_t *calls, uint32_t n)
{
	const struct tr_trace *t = v->t;
	sqlite3_stmt *s = d->st[ST_THREAD];
	for (uint32_t i = 0; i < t->nthreads; i++) {
		const struct tr_thread *th = &t->threads[i];
		int c = 0;
		b_int(s, &c, d->thread_base + i + 1);
		b_int(s, &c, d->process);
		b_int(s, &c, th->tid);
		b_text(s, &c, th->name, -1);
		b_int(s, &c, calls ? (int64_t)(i < n ? calls[i] : 0) : th->ncalls);
		b_int(s, &c, (int64_t)th->counted);
		b_int(s, &c, (int64_t)th->dropped);
		if (row_done(s))
			return -1;
	}
	return 0;
}

static const char *lib_path(const struct tr_trace *t, uint32_t lib_id)
{
	for (uint32_t l = 0; l < t->nlibs; l++)
		if (t->libs[l].id == lib_id)
			return t->libs[l].path;
	return NULL;
}

/* Every function the FUNCS blocks defined, selected or not: the table says what was traced. */
static int put_functions(struct db *d, const struct rp_view *v)
{
	const struct tr_trace *t = v->t;
	sqlite3_stmt *s = d->st[ST_FUNCTION];
	for (uint32_t i = 0; i < t->nfuncs; i++) {
		const struct tr_func *fn = &t->funcs[i];
		if (!fn->defined)
			continue;
		int c = 0;
		b_int(s, &c, d->func_base + i + 1);
		b_int(s, &c, d->process);
		b_int(s, &c, i);
		b_text(s, &c, fn->name, -1);
		b_text(s, &c, lib_path(t, fn->lib_id), -1);
		b_text(s, &c, rp_call_category(v, i), -1);
		b_text(s, &c, fn->status < CUHOOK_STATUS_COUNT ? cuhook_patch_status_names[fn->status] : "unknown status",
		       -1);
		b_text(s, &c, fn->decoder && fn->decoder < cuhook_decoder_count ? cuhook_decoders[fn->decoder].func : NULL,
		       -1);
		if (row_done(s))
			return -1;
	}
	return 0;
}

static int put_details(struct db *d, const struct tr_trace *t, const struct tr_call *cl, int64_t id)
{
	sqlite3_stmt *s = d->st[ST_DETAIL];
	for (uint32_t k = 0; k < cl->ndata; k++) {
		const struct tr_data *dt = &t->data[cl->data_first + k];
		for (unsigned i = 0; i < dt->nvalues; i++) {
			const char *label = tr_data_value_label(dt, i);
			char alt[16];
			if (!label) {
				snprintf(alt, sizeof(alt), "%s%u", dt->at_exit ? "out" : "in", i);
				label = alt;
			}
			int c = 0;
			b_int(s, &c, id);
			sqlite3_bind_text(s, ++c, label, -1, SQLITE_TRANSIENT);
			b_int(s, &c, (int64_t)dt->values[i]);
			b_null(s, &c);
			b_int(s, &c, dt->at_exit);
			if (row_done(s))
				return -1;
		}
		if (dt->str_len) {
			const char *label = tr_data_str_label(dt);
			int c = 0;
			b_int(s, &c, id);
			b_text(s, &c, label ? label : "str", -1);
			b_null(s, &c);
			b_text(s, &c, dt->str, dt->str_len);
			b_int(s, &c, dt->at_exit);
			if (row_done(s))
				return -1;
		}
	}
	return 0;
}

/* A call's row (id; parent: its parent's id, 0 for none) and its details. */
static int put_call(struct db *d, const struct rp_view *v, const struct tr_call *cl, int64_t id, int64_t parent)
{
	sqlite3_stmt *s = d->st[ST_CALL];
	int c = 0;
	b_int(s, &c, id);
	b_int(s, &c, d->process);
	b_int(s, &c, d->thread_base + cl->thread + 1);
	b_int(s, &c, d->func_base + cl->func + 1);
	b_int(s, &c, cl->start_ns);
	if (tr_call_timed(cl)) {
		b_int(s, &c, cl->end_ns);
		b_int(s, &c, tr_call_dur(cl));
		b_int(s, &c, (int64_t)cl->ret);
	} else {
		b_null(s, &c);
		b_null(s, &c);
		b_null(s, &c);
	}
	b_int(s, &c, (cl->flags & TR_CALL_UNFINISHED) != 0);
	b_int(s, &c, cl->depth);
	if (parent)
		b_int(s, &c, parent);
	else
		b_null(s, &c);
	const char *kname = NULL;
	uint16_t klen = 0;
	if (!rp_call_kernel(v, cl, &kname, &klen))
		kname = NULL;
	b_text(s, &c, kname, klen);
	for (unsigned a = 0; a < 6 + CUHOOK_MAX_STACK_ARGS; a++) {
		int has = a < 6 ? tr_call_has_reg(cl, a) : a < tr_call_nargs(cl);
		if (has)
			b_int(s, &c, (int64_t)tr_call_arg(cl, a));
		else
			b_null(s, &c);
	}
	return row_done(s) || put_details(d, v->t, cl, id) ? -1 : 0;
}

static int put_calls(struct db *d, const struct rp_view *v)
{
	const struct tr_trace *t = v->t;
	for (uint32_t k = 0; k < v->nxsel; k++) {
		uint32_t ci = v->xsel[k];
		const struct tr_call *cl = &t->calls[ci];
		if (put_call(d, v, cl, d->call_base + ci + 1, cl->parent != TR_NONE ? d->call_base + cl->parent + 1 : 0))
			return -1;
	}
	return 0;
}

static int by_thread_func(const void *a, const void *b, void *arg)
{
	const struct tr_count *counts = arg;
	const struct tr_count *x = &counts[*(const uint32_t *)a], *y = &counts[*(const uint32_t *)b];
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->func < y->func ? -1 : x->func > y->func;
}

/* Per thread and function, the COUNTS entries the options select (view.c select_counts: the
 * same rule, so the sums per function are rp_view.counted). An hour of a program with many
 * threads has millions of entries: sorted once by (thread, function), each run summed. */
static int put_counted(struct db *d, const struct rp_view *v)
{
	const struct tr_trace *t = v->t;
	if (!v->counted || !t->ncounts)
		return 0;
	uint32_t *idx = malloc((size_t)t->ncounts * sizeof(*idx));
	if (!idx)
		return -1;
	uint32_t n = 0;
	for (uint32_t i = 0; i < t->ncounts; i++) {
		const struct tr_count *e = &t->counts[i];
		if ((!v->func_ok || v->func_ok[e->func]) && !v->fi[e->func].ioctl && rp_count_in_view(v, e))
			idx[n++] = i;
	}
	qsort_r(idx, n, sizeof(*idx), by_thread_func, t->counts);
	int rc = 0;
	sqlite3_stmt *s = d->st[ST_COUNTED];
	for (uint32_t i = 0; i < n && !rc;) {
		const struct tr_count *e = &t->counts[idx[i]];
		uint64_t calls = 0;
		for (; i < n && t->counts[idx[i]].thread == e->thread && t->counts[idx[i]].func == e->func; i++)
			calls = tr_sat_add_u64(calls, t->counts[idx[i]].calls);
		if (!calls)
			continue;
		int c = 0;
		b_int(s, &c, d->process);
		b_int(s, &c, d->thread_base + e->thread + 1);
		b_int(s, &c, d->func_base + e->func + 1);
		b_int(s, &c, (int64_t)calls);
		rc = row_done(s);
	}
	free(idx);
	return rc;
}

static int put_notes(struct db *d, const struct rp_view *v)
{
	static const char *const levels[] = {"info", "warning", "error"};
	sqlite3_stmt *s = d->st[ST_NOTE];
	for (uint32_t i = 0; i < v->t->nnotes; i++) {
		const struct tr_note *n = &v->t->notes[i];
		int c = 0;
		b_int(s, &c, d->process);
		b_text(s, &c, n->level < 3 ? levels[n->level] : "unknown", -1);
		b_text(s, &c, n->text, -1);
		if (row_done(s))
			return -1;
	}
	return 0;
}

static int put_gpu(struct db *d, const struct rp_view *v)
{
	const struct tr_trace *t = v->t;
	if (!v->gpu)
		return 0;
	sqlite3_stmt *s = d->st[ST_GPU];
	for (uint32_t k = 0; k < v->gpu->nsel; k++) {
		uint32_t wi = v->gpu->sel[k];
		const struct tr_gpu_work *w = &t->gpu_work[wi];
		int c = 0;
		b_int(s, &c, d->gpu_base + wi + 1);
		b_int(s, &c, d->process);
		b_text(s, &c, rp_gpu_kind_names[w->kind], -1);
		b_text(s, &c, rp_gpu_work_label(v, w), -1);
		b_int(s, &c, w->start_ns);
		b_int(s, &c, w->end_ns);
		b_int(s, &c, w->end_ns - w->start_ns);
		b_int(s, &c, w->device);
		b_int(s, &c, w->context);
		b_int(s, &c, w->stream);
		b_int(s, &c, w->correlation);
		b_int(s, &c, w->session + 1);
		int kernel = w->kind == TR_GPU_KERNEL;
		for (unsigned i = 0; i < 3; i++)
			kernel ? b_int(s, &c, w->grid[i]) : b_null(s, &c);
		for (unsigned i = 0; i < 3; i++)
			kernel ? b_int(s, &c, w->block[i]) : b_null(s, &c);
		kernel ? b_int(s, &c, w->shared_static) : b_null(s, &c);
		kernel ? b_int(s, &c, w->shared_dynamic) : b_null(s, &c);
		kernel ? b_int(s, &c, w->registers) : b_null(s, &c);
		/* rp_gpu_op_name: "memcpy HtoD": the kind after "memcpy " */
		b_text(s, &c, w->kind == TR_GPU_MEMCPY ? rp_gpu_op_name(w->copy_kind <= CUHOOK_COPY_PTOP ? w->copy_kind : 0) + 7
		                                       : NULL, -1);
		kernel ? b_null(s, &c) : b_int(s, &c, (int64_t)w->bytes);
		w->kind == TR_GPU_MEMSET ? b_int(s, &c, w->value) : b_null(s, &c);
		b_int(s, &c, w->graph_id);
		b_int(s, &c, (int64_t)w->graph_node_id);
		if (w->api != TR_NONE)
			b_int(s, &c, t->gpu_api[w->api].start_ns);
		else
			b_null(s, &c);
		b_text(s, &c, rp_gpu_link_keys[w->link], -1);
		if (w->call != TR_NONE)
			b_int(s, &c, d->call_base + w->call + 1);
		else
			b_null(s, &c);
		if (row_done(s))
			return -1;
	}
	return 0;
}

static int exec(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

static int put_meta(sqlite3 *db)
{
	char sql[160];
	snprintf(sql, sizeof(sql),
	         "INSERT INTO meta VALUES('schema_version', %d), ('trace_clock', 'CLOCK_MONOTONIC ns');",
	         SQLITE_SCHEMA_VERSION);
	return exec(db, sql);
}

/* The schema, in a transaction, and the statements. */
static int db_begin(struct db *d)
{
	if (exec(d->db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN;") || exec(d->db, SCHEMA) ||
	    put_meta(d->db))
		return -1;
	for (int i = 0; i < ST_COUNT; i++)
		if (sqlite3_prepare_v2(d->db, INSERTS[i], -1, &d->st[i], NULL) != SQLITE_OK)
			return -1;
	return 0;
}

static int db_commit(struct db *d)
{
	return exec(d->db, INDEXES) || exec(d->db, "COMMIT;") ? -1 : 0;
}

static int write_db(struct db *d, struct rp_view *views, unsigned n)
{
	if (db_begin(d))
		return -1;
	for (unsigned k = 0; k < n; k++) {
		const struct rp_view *v = &views[k];
		d->process = k + 1;
		if (put_process(d, v) || put_threads(d, v, NULL, 0) || put_functions(d, v) || put_calls(d, v) ||
		    put_counted(d, v) || put_notes(d, v) || put_gpu(d, v))
			return -1;
		d->thread_base += v->t->nthreads;
		d->func_base += v->t->nfuncs;
		d->call_base += v->t->ncalls;
		d->gpu_base += v->t->ngpu_work;
	}
	return db_commit(d);
}

/* Remove the file we created, and nothing that replaced it. */
static void remove_created(const char *path, const struct stat *made)
{
	struct stat now;
	if (!lstat(path, &now) && now.st_dev == made->st_dev && now.st_ino == made->st_ino)
		unlink(path);
}

/* Creates -o FILE as every file cuhook writes and has SQLite open it (d->db, *made what was
 * created); 0, or -1 having said why (the file removed if it was made). */
static int db_open(struct db *d, const struct rp_opts *o, const char *hint, struct stat *made)
{
	char err[4608];
	int fd = cuhook_out_create(o->output, o->force, "output file", hint, err, sizeof(err));
	if (fd < 0) {
		fprintf(stderr, "cuhook report: %s\n", err);
		return -1;
	}
	int ok = !fstat(fd, made);
	close(fd);
	if (!ok) {
		fprintf(stderr, "cuhook report: %s: %s\n", rp_safe(o->output), strerror(errno));
		return -1;
	}
	int rc = sqlite3_open_v2(o->output, &d->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, NULL);
	struct stat opened;
	/* what SQLite opened is what we created (the path cannot have been swapped in between) */
	if (rc == SQLITE_OK && (lstat(o->output, &opened) || opened.st_dev != made->st_dev || opened.st_ino != made->st_ino)) {
		fprintf(stderr, "cuhook report: %s changed while it was opened; not written\n", rp_safe(o->output));
		sqlite3_close(d->db);
		d->db = NULL;
		return -1;
	}
	if (rc != SQLITE_OK) {
		fprintf(stderr, "cuhook report: writing %s failed: %s\n", rp_safe(o->output),
		        d->db ? sqlite3_errmsg(d->db) : "out of memory");
		sqlite3_close(d->db);
		d->db = NULL;
		remove_created(o->output, made);
		return -1;
	}
	return 0;
}

/* Finalizes and closes; rc: how the writing went (SQLITE_OK, or a failure already counted, said
 * here once). A failure removes the file. Returns 0, or -1. */
static int db_close(struct db *d, int rc, const char *path, const struct stat *made)
{
	if (rc != SQLITE_OK)
		fprintf(stderr, "cuhook report: writing %s failed: %s\n", rp_safe(path),
		        d->db ? sqlite3_errmsg(d->db) : "out of memory");
	for (int i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(d->st[i]);
	if (sqlite3_close(d->db) != SQLITE_OK && rc == SQLITE_OK) {
		fprintf(stderr, "cuhook report: closing %s failed\n", rp_safe(path));
		rc = SQLITE_ERROR;
	}
	d->db = NULL;
	if (rc != SQLITE_OK) {
		remove_created(path, made);
		return -1;
	}
	return 0;
}

int rp_write_sqlite(const struct rp_opts *o, const char *hint, struct rp_view *views, unsigned n)
{
	struct db d = {0};
	struct stat made;
	if (db_open(&d, o, hint, &made))
		return -1;
	return db_close(&d, write_db(&d, views, n) ? SQLITE_ERROR : SQLITE_OK, o->output, &made);
}

/* ---- streamed (export_stream.h) ------------------------------------------------------------- */

/* The same database from a streamed read: each selected call's row (and details) goes in as it
 * finishes, its id and parent's those of a whole read (its ordinal + the earlier files' calls +
 * 1); the process, its threads (their calls counted as the calls came), functions, counted
 * calls and notes once the file is read; the indexes and the commit at the end. Rows are in
 * finish order: the ids, not the row order, say the start order. No GPU rows. */
struct sqlite_sx {
	struct db d;
	const char *hint, *path;
	struct stat made;
	int failed;
};

static int sqlite_sx_open(struct rp_sx *x, const struct rp_opts *o)
{
	struct sqlite_sx *q = x->state;
	if (db_open(&q->d, o, q->hint, &q->made))
		return -1;
	q->path = o->output;
	if (db_begin(&q->d)) {
		q->failed = 1;
		return -1;
	}
	return 0;
}

static int sqlite_sx_begin(struct rp_sx *x, const struct rp_view *v, unsigned k)
{
	struct sqlite_sx *q = x->state;
	q->d.process = k + 1;
	return 0;
}

static int sqlite_sx_call(struct rp_sx *x, const struct rp_view *v, unsigned k, const struct tr_call *c,
                          const struct tr_stream_info *info)
{
	struct sqlite_sx *q = x->state;
	const int64_t base = q->d.call_base + 1;
	if (put_call(&q->d, v, c, base + (int64_t)info->ordinal,
	             info->parent_ordinal != UINT64_MAX ? base + (int64_t)info->parent_ordinal : 0)) {
		q->failed = 1;
		return -1;
	}
	return 0;
}

static int sqlite_sx_end(struct rp_sx *x, const struct rp_view *v, unsigned k)
{
	struct sqlite_sx *q = x->state;
	struct db *d = &q->d;
	if (put_process(d, v) || put_threads(d, v, x->thread_calls, x->nthread_calls) || put_functions(d, v) ||
	    put_counted(d, v) || put_notes(d, v)) {
		q->failed = 1;
		return -1;
	}
	d->thread_base += v->t->nthreads;
	d->func_base += v->t->nfuncs;
	d->call_base += (int64_t)x->file_calls;
	return 0;
}

static int sqlite_sx_finish(struct rp_sx *x, const struct rp_view *v0)
{
	struct sqlite_sx *q = x->state;
	if (db_commit(&q->d))
		q->failed = 1;
	int rc = db_close(&q->d, q->failed ? SQLITE_ERROR : SQLITE_OK, q->path, &q->made);
	q->path = NULL;
	return rc;
}

static void sqlite_sx_free(struct rp_sx *x)
{
	struct sqlite_sx *q = x->state;
	if (q && q->path) /* not finished: a failure, the file goes */
		db_close(&q->d, SQLITE_ERROR, q->path, &q->made);
	free(q);
}

int rp_sx_sqlite(struct rp_sx *x, const char *hint)
{
	struct sqlite_sx *q = calloc(1, sizeof(*q));
	x->state = q;
	x->open = sqlite_sx_open;
	x->file_begin = sqlite_sx_begin;
	x->call = sqlite_sx_call;
	x->file_end = sqlite_sx_end;
	x->finish = sqlite_sx_finish;
	x->free = sqlite_sx_free;
	if (!q)
		return -1;
	q->hint = hint;
	return 0;
}
