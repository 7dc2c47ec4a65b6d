/* Writes synthetic trace.bin files with exactly known content for the report tests, straight
 * from src/format/trace_format.h (no agent involved), and optionally what a correct reader must
 * find in them (--expect FILE, JSON), computed here from what was written.
 *
 *   gen_trace basic OUT [--tsc] [--one-clock] [--no-end] [--unfinished] [--zero-call] [--expect FILE]
 *                       [--pid N] [--mono-offset NS] [--real-offset NS]
 *       two threads, nested calls, an entry-only call, DATA records, a DROP, refused
 *       functions, known pipeline stages (see the timeline in scenario_basic()); --unfinished:
 *       the last call (cuCtxDestroy_v2) has no EXIT, as when the program is killed inside it;
 *       --zero-call: cuDeviceGet returns in the nanosecond it was called
 *   gen_trace big OUT [--calls N] [--threads T] [--tsc] [--vary]
 *       N calls (default 1000000) over T threads, for the speed test and the fuzzer's seeds;
 *       --vary: each repetition's durations multiplied by 1..997 (a fixed pseudo-random
 *       sequence), so that medians and spreads are not trivial (the streaming report's test)
 *   gen_trace kernels OUT
 *       kernel names through every lookup path, memsets, an async copy, a pitched allocation
 *   gen_trace nocalls OUT
 *       header, library and functions, no events
 *   gen_trace gpu OUT [--tsc] [--lazy-first-launch]
 *       the GPU side: GPU sessions (two started, one OTHER_USER) and their records, linked and
 *       not (see scenario_gpu()); basic --gpu-session no-cupti|other-user adds a GPU session
 *       that never started
 *   gen_trace ranks OUT --rank R --world W [--steps S] [--gpu] [--coll-mismatch S] [--expect FILE]
 *       one process of a W-process job whose ranks wait for each other at every step (see
 *       scenario_ranks()), for the report's synchronisations across processes
 *   gen_trace hot OUT [--count | --count-capture] [--iterations N] [--tsc] [--expect FILE]
 *       many very short calls on three threads (see scenario_hot()); --count: two of the
 *       functions counted, not recorded (COUNTS blocks, trace format 3); --count-capture: one
 *   gen_trace devices OUT
 *       the device of each call in a trace begun after the program chose its contexts (see
 *       scenario_devices())
 * Any scenario: --v5 writes version 5's compact records (ENTRY5/ENTRY5_X, EXIT5_ZERO and
 * EXIT5_ZERO_VALUE where rax is 0, TIME records), --v5-long-exits the same with rax always written
 * (EXIT5, EXIT5_VALUE); without either the file is version 4. --tsc-start TSC moves the TSC at
 * the trace start (with --tsc: where an epoch of 2^38 ticks begins).
 * --mono-offset and --real-offset move the trace's CLOCK_MONOTONIC and CLOCK_REALTIME (header
 * and CLOCK blocks) by NS, as another process of another machine started at another time would
 * have them; --pid replaces the scenario's pid. Event times follow the monotonic clock. */
#include "trace_format.h"
#include "decoders.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1ull << 20)

/* ---- a growable byte buffer ------------------------------------------------------------------ */

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static void buf_add(struct buf *b, const void *src, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p) {
			perror("realloc");
			exit(1);
		}
		b->cap = cap;
	}
	if (src)
		memcpy(b->p + b->len, src, n);
	else
		memset(b->p + b->len, 0, n);
	b->len += n;
}

static void buf_pad8(struct buf *b)
{
	static const uint8_t z[8];
	buf_add(b, z, CUHOOK_ALIGN8(b->len) - b->len);
}

/* ---- the file --------------------------------------------------------------------------------- */

/* How ENTRY records carry the argument registers: all six (REGS_SIX); only those each function
 * takes, as the agent writes version 4 (--agent-regs); or all six in a version 3 file whose
 * reserved byte, regs_omitted since version 4, holds garbage (--v3-reserved: older agents did
 * not always zero it, and a reader must not take it for omitted registers). */
enum { REGS_SIX, REGS_AGENT, REGS_V3_RESERVED };
static int regs_mode;
/* Drops the END block counts beyond the DROP records (--end-unreported N): those a thread never
 * got to report, which the agent adds at the close. */
static uint64_t end_unreported;

/* --v5: version 5's compact records (trace_format.h, "version 5 records") instead of ENTRY and
 * EXIT, a TIME record starting each EVENTS block and before each record of a new epoch; the
 * report must read the same calls from either. */
static int v5, v5_long_exits;

static struct buf file;
static uint32_t seq;
static int use_tsc;
static uint64_t START_NS = 5000000000ull;  /* monotonic time at the trace start */
static uint64_t START_TSC = 1000000ull;    /* tsc at the trace start (--tsc-start); 2 ticks per ns */
static uint64_t START_REAL = 1700000000000000000ull;
static uint32_t pid_override;
static int unfinished; /* --unfinished: scenario_basic's last call never returns */
static int zero_call;  /* --zero-call: scenario_basic's cuDeviceGet takes 0 ns */

static uint64_t stamp(uint64_t rel_ns)
{
	return use_tsc ? START_TSC + 2 * rel_ns : START_NS + rel_ns;
}

static void file_header(uint32_t pid, const char *const *argv, const char *exe)
{
	struct buf cl = {0};
	for (int i = 0; argv[i]; i++)
		buf_add(&cl, argv[i], strlen(argv[i]) + 1);
	struct cuhook_file_header h;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, CUHOOK_TRACE_MAGIC, 8);
	/* without --v5: the last version of ENTRY and EXIT records */
	h.version = regs_mode == REGS_V3_RESERVED ? 3 : v5 ? CUHOOK_TRACE_VERSION_REC5 : CUHOOK_TRACE_VERSION_REC5 - 1;
	h.cmdline_len = (uint32_t)cl.len;
	h.exe_len = (uint32_t)strlen(exe);
	h.header_size = (uint32_t)CUHOOK_ALIGN8(sizeof(h) + h.cmdline_len + h.exe_len);
	h.pid = pid_override ? pid_override : pid;
	h.ppid = 1;
	h.clock_source = use_tsc ? CUHOOK_CLOCK_TSC : CUHOOK_CLOCK_MONOTONIC;
	h.start_realtime_ns = START_REAL;
	h.start_monotonic_ns = START_NS;
	h.start_tsc = use_tsc ? START_TSC : 0;
	h.buffer_bytes = 1 << 20;
	buf_add(&file, &h, sizeof(h));
	buf_add(&file, cl.p, cl.len);
	buf_add(&file, exe, h.exe_len);
	buf_pad8(&file);
	free(cl.p);
}

static void block(uint16_t type, const void *payload, size_t len)
{
	struct cuhook_block b = {CUHOOK_BLOCK_MAGIC, type, 0, (uint32_t)CUHOOK_ALIGN8(len), seq++};
	buf_add(&file, &b, sizeof(b));
	buf_add(&file, payload, len);
	buf_pad8(&file);
}

static void clock_block(uint64_t rel_ns)
{
	struct cuhook_clock_block c = {use_tsc ? START_TSC + 2 * rel_ns : START_NS + rel_ns, START_NS + rel_ns,
	                               START_REAL + rel_ns};
	block(CUHOOK_BLOCK_CLOCK, &c, sizeof(c));
}

static void lib_block(uint32_t id, uint32_t flags, const char *path, const char *version)
{
	struct buf b = {0};
	struct cuhook_lib_block l = {id, flags, 0x7f1234000000ull + id * 0x1000000ull, (uint32_t)strlen(path),
	                             (uint32_t)strlen(version)};
	buf_add(&b, &l, sizeof(l));
	buf_add(&b, path, strlen(path));
	buf_add(&b, version, strlen(version));
	block(CUHOOK_BLOCK_LIB, b.p, b.len);
	free(b.p);
}

struct fdef {
	const char *name;
	uint16_t status;
};

static unsigned agent_nregs(const char *name);

/* What a version 5 FUNCS entry says an ENTRY5 of the function carries: the registers the agent
 * records (agent_nregs with --agent-regs, else six) and, for cuLaunchKernel, its five stack
 * parameters. A call recorded otherwise gets an ENTRY5_X. */
static void v5_args(const char *name, unsigned *nregs, unsigned *nstack)
{
	*nregs = regs_mode == REGS_AGENT ? agent_nregs(name) : 6;
	*nstack = *nregs == 6 && !strcmp(name, "cuLaunchKernel") ? 5 : 0;
}

static void funcs_block(uint32_t lib, uint32_t first, const struct fdef *f, uint32_t n)
{
	struct buf b = {0};
	struct cuhook_funcs_block fb = {lib, first, n, 0};
	buf_add(&b, &fb, sizeof(fb));
	for (uint32_t i = 0; i < n; i++) {
		struct cuhook_func_entry e;
		memset(&e, 0, sizeof(e));
		e.offset = 0x1000 + 0x40 * (first + i);
		e.size = 0x40;
		e.status = f[i].status;
		e.name_len = (uint16_t)strlen(f[i].name);
		e.patch_len = f[i].status == CUHOOK_PATCHED ? 5 : 0;
		e.decoder = (uint16_t)cuhook_decoder_find(f[i].name);
		if (v5) {
			unsigned nregs, nstack;
			v5_args(f[i].name, &nregs, &nstack);
			e.nregs = (uint8_t)nregs;
			e.nstack = (uint8_t)nstack;
		}
		buf_add(&b, &e, sizeof(e));
		buf_add(&b, f[i].name, e.name_len);
		buf_pad8(&b);
	}
	block(CUHOOK_BLOCK_FUNCS, b.p, b.len);
	free(b.p);
}

static void thread_block(uint32_t tid, const char *name)
{
	struct cuhook_thread_block t;
	memset(&t, 0, sizeof(t));
	t.tid = tid;
	size_t n = strlen(name);
	memcpy(t.name, name, n < sizeof(t.name) - 1 ? n : sizeof(t.name) - 1);
	block(CUHOOK_BLOCK_THREAD, &t, sizeof(t));
}

/* ---- events of one thread, buffered until flushed into an EVENTS block ------------------------ */

struct thr {
	uint32_t tid;
	struct buf recs;
	uint32_t nrecs;
	uint16_t depth;
	uint32_t epoch;   /* v5: the epoch of the last TIME record written */
};

static uint64_t n_entry, n_exit, n_dropped, n_calls;

static void flush(struct thr *t)
{
	if (!t->nrecs)
		return;
	struct buf b = {0};
	struct cuhook_events_block eb = {t->tid, v5 ? 0 : t->nrecs};
	buf_add(&b, &eb, sizeof(eb));
	buf_add(&b, t->recs.p, t->recs.len);
	block(CUHOOK_BLOCK_EVENTS, b.p, b.len);
	free(b.p);
	t->recs.len = 0;
	t->nrecs = 0;
}

static const char *func_name(uint32_t func);

/* v5: a TIME record where a block starts, or where the timestamp `tsc` (of the record about to be
 * written; a record without one keeps the epoch) starts a new epoch. */
static void v5_time(struct thr *t, const uint64_t *tsc)
{
	if (!v5 || (t->recs.len && (!tsc || CUHOOK_REC5_EPOCH(*tsc) == t->epoch)))
		return;
	if (tsc)
		t->epoch = CUHOOK_REC5_EPOCH(*tsc);
	uint64_t w = CUHOOK_REC5_TIME_WORD(t->epoch);
	buf_add(&t->recs, &w, 8);
}

/* v5: a compact ENTRY: ENTRY5 when it carries what the function's FUNCS entry says, else
 * ENTRY5_X. */
static void entry5(struct thr *t, uint32_t func, uint64_t tsc, const uint64_t *args, unsigned nregs, unsigned nstack,
                   int no_exit)
{
	unsigned fregs, fstack;
	v5_args(func_name(func), &fregs, &fstack);
	int x = no_exit || nregs != fregs || nstack != fstack;
	uint64_t w = CUHOOK_REC5_WORD(x ? CUHOOK_REC5_ENTRY_X : CUHOOK_REC5_ENTRY, t->depth, func, tsc);
	v5_time(t, &tsc);
	buf_add(&t->recs, &w, 8);
	if (x) {
		struct cuhook_rec5_entry_info i = {no_exit ? CUHOOK_RF_NO_EXIT : 0, (uint8_t)nregs, (uint8_t)nstack, {0}};
		buf_add(&t->recs, &i, sizeof(i));
	}
	buf_add(&t->recs, args, 8 * (nregs + nstack));
}

/* The parameters cuda.h declares for the functions the scenarios use (cuhook_reg_args()). */
static unsigned agent_nregs(const char *name)
{
	static const struct { const char *name; unsigned n; } known[] = {
		{"cuInit", 1}, {"cuDriverGetVersion", 1}, {"cuDeviceGet", 2}, {"cuCtxCreate_v2", 3},
		{"cuModuleLoad", 2}, {"cuModuleGetFunction", 3}, {"cuMemAlloc_v2", 2},
		{"cuMemcpyHtoD_v2", 3}, {"cuCtxSynchronize", 0}, {"cuMemcpyDtoH_v2", 3},
		{"cuMemFree_v2", 1}, {"cuModuleUnload", 1}, {"cuCtxDestroy_v2", 1},
		{"cuStreamSynchronize", 1}, {"cuGetProcAddress_v2", 5}, {"cuStreamQuery", 1},
		{"cuCtxGetCurrent", 1},
	};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (name && !strcmp(name, known[i].name))
			return known[i].n;
	return 6;
}

static void entry(struct thr *t, uint32_t func, uint64_t rel_ns, const uint64_t regs[6], unsigned nstack,
                  const uint64_t *stack, int no_exit)
{
	struct cuhook_rec_entry e;
	memset(&e, 0, sizeof(e));
	unsigned nregs = regs_mode == REGS_AGENT && !nstack ? agent_nregs(func_name(func)) : 6;
	e.h.type = CUHOOK_REC_ENTRY;
	e.h.flags = no_exit ? CUHOOK_RF_NO_EXIT : 0;
	e.h.size = (uint16_t)CUHOOK_REC_ENTRY_SIZE(nregs, nstack);
	e.h.func = func;
	e.tsc = stamp(rel_ns);
	e.depth = t->depth;
	e.nstack = (uint8_t)nstack;
	e.regs_omitted = regs_mode == REGS_V3_RESERVED ? 0xa5 : (uint8_t)(6 - nregs);
	uint64_t r[6 + CUHOOK_MAX_STACK_ARGS] = {0};
	if (regs)
		memcpy(r, regs, 6 * 8);
	if (nstack)
		memcpy(r + nregs, stack, 8 * nstack);
	if (v5) {
		entry5(t, func, e.tsc, r, nregs, nstack, no_exit);
	} else {
		buf_add(&t->recs, &e, sizeof(e));
		buf_add(&t->recs, r, 8 * (nregs + nstack));
	}
	t->nrecs++;
	n_entry++;
	n_calls++;
	if (!no_exit)
		t->depth++;
}

/* An EXIT; with_value: version 2's form carrying the call's one decoded value
 * (CUHOOK_RF_VALUE), which the report must read exactly as an EXIT followed by a one-value DATA
 * record. */
static void exit_any(struct thr *t, uint32_t func, uint64_t rel_ns, uint64_t ret, int with_value, uint64_t value)
{
	struct cuhook_rec_exit_value x;
	memset(&x, 0, sizeof(x));
	t->depth--;
	x.x.h.type = CUHOOK_REC_EXIT;
	x.x.h.flags = with_value ? CUHOOK_RF_VALUE : 0;
	x.x.h.size = with_value ? sizeof(x) : sizeof(x.x);
	x.x.h.func = func;
	x.x.tsc = stamp(rel_ns);
	x.x.depth = t->depth;
	x.x.ret = ret;
	x.value = value;
	if (v5) {
		/* rax 0 is left out (EXIT5_ZERO, EXIT5_ZERO_VALUE) as the agent does, unless --v5-long-exits */
		int zero = !ret && !v5_long_exits;
		unsigned type = zero ? (with_value ? CUHOOK_REC5_EXIT_ZERO_VALUE : CUHOOK_REC5_EXIT_ZERO)
		                     : (with_value ? CUHOOK_REC5_EXIT_VALUE : CUHOOK_REC5_EXIT);
		uint64_t w[3] = {CUHOOK_REC5_WORD(type, t->depth, func, x.x.tsc), ret, value};
		if (zero)
			w[1] = value;
		v5_time(t, &x.x.tsc);
		buf_add(&t->recs, w, 8 * (1u + !zero + !!with_value));
	} else {
		buf_add(&t->recs, &x, x.x.h.size);
	}
	t->nrecs++;
	n_exit++;
}

static void exit_rec(struct thr *t, uint32_t func, uint64_t rel_ns, uint64_t ret)
{
	exit_any(t, func, rel_ns, ret, 0, 0);
}

static void data_bytes(struct thr *t, uint32_t func, const char *fname, int at_exit, unsigned nvalues,
                       const uint64_t *values, const char *str, size_t sl);

static void data_rec(struct thr *t, uint32_t func, const char *fname, int at_exit, unsigned nvalues,
                     const uint64_t *values, const char *str)
{
	data_bytes(t, func, fname, at_exit, nvalues, values, str, str ? strlen(str) : 0);
}

/* A DATA record whose string is sl bytes (binary: cuLaunchKernelEx's config) */
static void data_bytes(struct thr *t, uint32_t func, const char *fname, int at_exit, unsigned nvalues,
                       const uint64_t *values, const char *str, size_t sl)
{
	struct cuhook_rec_data d;
	memset(&d, 0, sizeof(d));
	d.h.type = CUHOOK_REC_DATA;
	d.h.size = (uint16_t)(sizeof(d) + 8 * nvalues + CUHOOK_ALIGN8(sl));
	d.h.func = func;
	d.decoder = (uint16_t)cuhook_decoder_find(fname);
	d.nvalues = (uint8_t)nvalues;
	d.at_exit = (uint8_t)at_exit;
	d.str_len = (uint16_t)sl;
	v5_time(t, NULL);
	buf_add(&t->recs, &d, sizeof(d));
	buf_add(&t->recs, values, 8 * nvalues);
	buf_add(&t->recs, str, sl);
	buf_pad8(&t->recs);
	t->nrecs++;
}

static void drop_rec(struct thr *t, uint64_t rel_ns, uint64_t count)
{
	struct cuhook_rec_drop d;
	memset(&d, 0, sizeof(d));
	d.h.type = CUHOOK_REC_DROP;
	d.h.size = sizeof(d);
	d.tsc = stamp(rel_ns);
	d.count = count;
	v5_time(t, NULL); /* a DROP keeps its whole timestamp */
	buf_add(&t->recs, &d, sizeof(d));
	t->nrecs++;
	n_dropped += count;
}

static void end_block(uint32_t threads)
{
	struct cuhook_end_block e = {n_entry + n_exit, n_dropped + end_unreported, threads, 0};
	block(CUHOOK_BLOCK_END, &e, sizeof(e));
}

/* ---- expectations ------------------------------------------------------------------------------ */

#define MAXF 64
static const struct fdef *ftab;
static uint32_t nftab;
static uint64_t exp_calls[MAXF], exp_timed[MAXF], exp_total[MAXF], exp_counted[MAXF], n_counted;

/* A complete call with no nested calls: ENTRY, optional entry DATA, EXIT, optional exit DATA. */
static void call(struct thr *t, uint32_t func, uint64_t start, uint64_t dur, const uint64_t regs[6],
                 unsigned nstack, const uint64_t *stack, uint64_t ret)
{
	entry(t, func, start, regs, nstack, stack, 0);
	exit_rec(t, func, start + dur, ret);
	exp_calls[func]++;
	exp_timed[func]++;
	exp_total[func] += dur;
}

static const char *func_name(uint32_t func)
{
	return func < nftab ? ftab[func].name : NULL;
}

static void write_expect(const char *path, uint64_t csv_rows)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fprintf(f, "{\"events\": %llu, \"calls\": %llu, \"dropped\": %llu, \"csv_rows\": %llu, "
	           "\"counted_calls\": %llu, \"functions\": {",
	        (unsigned long long)(n_entry + n_exit), (unsigned long long)n_calls,
	        (unsigned long long)n_dropped, (unsigned long long)csv_rows, (unsigned long long)n_counted);
	int first = 1;
	for (uint32_t i = 0; i < nftab; i++) {
		if (!exp_calls[i] && !exp_counted[i])
			continue;
		fprintf(f, "%s\"%s\": {\"calls\": %llu, \"timed_calls\": %llu, \"total_ns\": %llu, \"counted_calls\": %llu}",
		        first ? "" : ", ", ftab[i].name, (unsigned long long)exp_calls[i], (unsigned long long)exp_timed[i],
		        (unsigned long long)exp_total[i], (unsigned long long)exp_counted[i]);
		first = 0;
	}
	fprintf(f, "}}\n");
	fclose(f);
}

/* A COUNTS block (trace format 3) of thread tid read at rel_ns: n entries (func[i], calls[i]),
 * zeros included as given. */
static void counts_block(uint32_t tid, uint64_t rel_ns, const uint32_t *func, const uint64_t *calls, uint32_t n)
{
	struct buf b = {0};
	struct cuhook_counts_block cb = {tid, n, stamp(rel_ns)};
	buf_add(&b, &cb, sizeof(cb));
	for (uint32_t i = 0; i < n; i++) {
		struct cuhook_count_entry e = {func[i], 0, calls[i]};
		buf_add(&b, &e, sizeof(e));
		exp_counted[func[i]] += calls[i];
		n_counted += calls[i];
	}
	block(CUHOOK_BLOCK_COUNTS, b.p, b.len);
	free(b.p);
}

static void note_block(uint32_t level, const char *text)
{
	struct buf b = {0};
	struct cuhook_note_block nb = {level, (uint32_t)strlen(text)};
	buf_add(&b, &nb, sizeof(nb));
	buf_add(&b, text, nb.len);
	block(CUHOOK_BLOCK_NOTE, b.p, b.len);
	free(b.p);
}

/* ---- the GPU side (trace format: GPU_SESSION and GPU blocks) ---------------------------------- */

static void gpu_session(uint32_t status, uint64_t rel_ns, uint32_t version, const char *path, uint64_t records)
{
	struct buf b = {0};
	struct cuhook_gpu_session_block sb;
	memset(&sb, 0, sizeof(sb));
	sb.status = status;
	sb.cupti_version = version;
	sb.path_len = (uint32_t)strlen(path);
	sb.tsc = stamp(rel_ns);
	sb.records = records;
	buf_add(&b, &sb, sizeof(sb));
	buf_add(&b, path, sb.path_len);
	block(CUHOOK_BLOCK_GPU_SESSION, b.p, b.len);
	free(b.p);
}

/* GPU records, buffered until gpu_flush() writes them as one GPU block. */
static struct buf gpu_recs;
static uint32_t gpu_nrecs;

static void gpu_rec(const void *rec, size_t size)
{
	buf_add(&gpu_recs, rec, size);
	gpu_nrecs++;
}

static void gpu_flush(void)
{
	struct buf b = {0};
	struct cuhook_gpu_block gb = {gpu_nrecs, 0};
	buf_add(&b, &gb, sizeof(gb));
	buf_add(&b, gpu_recs.p, gpu_recs.len);
	block(CUHOOK_BLOCK_GPU, b.p, b.len);
	free(b.p);
	gpu_recs.len = 0;
	gpu_nrecs = 0;
}

static void gpu_name(uint32_t id, const char *name)
{
	struct cuhook_gpu_name n;
	memset(&n, 0, sizeof(n));
	n.h.type = CUHOOK_GPU_REC_NAME;
	n.len = (uint32_t)strlen(name);
	n.h.size = (uint16_t)CUHOOK_ALIGN8(sizeof(n) + n.len);
	n.name_id = id;
	struct buf b = {0};
	buf_add(&b, &n, sizeof(n));
	buf_add(&b, name, n.len);
	buf_pad8(&b);
	gpu_rec(b.p, b.len);
	free(b.p);
}

/* CUPTI's record of a submitting call: the call's [start + 1 us, end - 1 us] */
static void gpu_api(uint32_t corr, uint32_t tid, uint32_t func, uint64_t call_start, uint64_t call_end)
{
	struct cuhook_gpu_api a;
	memset(&a, 0, sizeof(a));
	a.h.type = CUHOOK_GPU_REC_API;
	a.h.size = sizeof(a);
	a.h.correlation = corr;
	a.start = stamp(call_start + 1000);
	a.end = stamp(call_end - 1000);
	a.tid = tid;
	a.func = func;
	a.cbid = 300 + (func == UINT32_MAX ? 99 : func);
	gpu_rec(&a, sizeof(a));
}

/* The fields every work record begins with (the same layout in KERNEL, MEMCPY and MEMSET). */
static void work_head(void *rec, uint8_t type, uint16_t size, uint32_t corr, uint64_t start, uint64_t end, uint32_t dev,
                      uint32_t stream)
{
	struct {
		struct cuhook_gpu_rec h;
		uint64_t start, end;
		uint32_t device, context, stream;
	} w = {{type, 0, size, corr}, stamp(start), stamp(end), dev, dev + 1, stream};
	memset(rec, 0, size);
	memcpy(rec, &w, sizeof(w));
}

struct kdim {
	int32_t grid[3], block[3];
	uint32_t smem_static, smem_dynamic;
	uint16_t regs;
};

static void gpu_kernel(uint32_t corr, uint64_t start, uint64_t end, uint32_t dev, uint32_t stream, uint32_t name_id,
                       const struct kdim *k, uint32_t graph_id, uint64_t node)
{
	struct cuhook_gpu_kernel r;
	work_head(&r, CUHOOK_GPU_REC_KERNEL, sizeof(r), corr, start, end, dev, stream);
	r.name_id = name_id;
	memcpy(r.grid, k->grid, sizeof(r.grid));
	memcpy(r.block, k->block, sizeof(r.block));
	r.shared_static = k->smem_static;
	r.shared_dynamic = k->smem_dynamic;
	r.registers = k->regs;
	r.graph_id = graph_id;
	r.graph_node_id = node;
	gpu_rec(&r, sizeof(r));
}

static void gpu_memcpy(uint32_t corr, uint64_t start, uint64_t end, uint32_t stream, uint8_t kind, uint8_t src,
                       uint8_t dst, uint8_t flags, uint64_t bytes)
{
	struct cuhook_gpu_memcpy r;
	work_head(&r, CUHOOK_GPU_REC_MEMCPY, sizeof(r), corr, start, end, 0, stream);
	r.copy_kind = kind;
	r.src_kind = src;
	r.dst_kind = dst;
	r.flags = flags;
	r.bytes = bytes;
	gpu_rec(&r, sizeof(r));
}

static void gpu_memset(uint32_t corr, uint64_t start, uint64_t end, uint32_t stream, uint32_t value, uint64_t bytes)
{
	struct cuhook_gpu_memset r;
	work_head(&r, CUHOOK_GPU_REC_MEMSET, sizeof(r), corr, start, end, 0, stream);
	r.value = value;
	r.bytes = bytes;
	r.mem_kind = 3; /* device */
	gpu_rec(&r, sizeof(r));
}

/* A GPU session that never started, for the basic scenario (--gpu-session): CUPTI not found, or
 * another CUPTI user. */
static const char *gpu_refused;

static void refused_session(void)
{
	if (!gpu_refused)
		return;
	if (!strcmp(gpu_refused, "no-cupti")) {
		note_block(1, "--gpu: no libcupti found (tried libcupti.so.13, libcupti.so): GPU work is not recorded");
		gpu_session(CUHOOK_GPU_NO_CUPTI, 500, 0, "libcupti.so.13", 0);
	} else {
		note_block(1, "--gpu: another CUPTI user owns the process (CUDA_INJECTION64_PATH): GPU work is not "
		              "recorded, the API is");
		gpu_session(CUHOOK_GPU_OTHER_USER, 500, 130001, "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13", 0);
	}
}

/* The GPU side: calls and what the GPU did for them, in two GPU sessions with an OTHER_USER one
 * between them. Device 0 unless said; times in ns from the trace start; every CUPTI API record
 * spans its call's [start + 1 us, end - 1 us]. Session A (STARTED at 1 us, STOPPED at 2.6 ms):
 *   main   cuInit 2000..102000; cuLibraryLoadData 200000..700000
 *   main   cuMemcpyHtoD_v2 800000..900000       corr 1: HtoD 1 MiB 810000..860000 (pageable)
 *   main   cuLaunchKernel 1000000..1005000      corr 2: gemm 1010000..1110000 (stream 7)
 *   main   cuLaunchKernel 1100000..1105000      corr 3: gemm 1110000..1210000
 *   worker cuLaunchKernel 1140000..1145000      corr 12: softmax 1150000..1170000 (stream 9)
 *   main   cuLaunchKernelEx 1200000..1204000    corr 4: softmax 1210000..1240000
 *   main   cuGraphLaunch 1300000..1310000       corr 5: graph 1, nodes 11, 12, 13: gemm
 *                                               1320000..1420000, relu 1420000..1430000,
 *                                               relu 1430000..1440000
 *   main   cuMemsetD32_v2 1500000..1502000      corr 6: memset 4 KiB 1505000..1506000
 *   worker cuStreamSynchronize 1510000..1600000
 *   main   cuLibraryLoadData 1600000..1900000
 *   main   cuLaunchKernel 1990000..1995000      corr 7: gemm 2000000..2050000 (stream 9)
 *   main   cuMemcpyDtoH_v2 2060000..2260000     corr 8: DtoH 1 MiB 2100000..2200000 (pageable)
 *   (none)                                      corr 99: init_kernel 2300000..2310000, no API
 *                                               record: unlinked, no API record
 *   main   (no call: an untraced function)      corr 10: API 2400000..2402000 -> relu
 *                                               2405000..2415000: API record in no call
 *   worker (a call lost: DROP of 3 at 2520000)  corr 11: API 2500000..2502000 -> relu
 *                                               2505000..2515000: call dropped
 * Session B: OTHER_USER at 2.7 ms (and a NOTE). Session C (STARTED at 3 ms, STOPPED at 3.5 ms),
 * correlation ids from 1 again:
 *   main   cuLaunchKernel 3100000..3105000      corr 1: gemm 3110000..3210000
 *   main   cuLaunchKernel 3106000..3109000      corr 3: gemm 3120000..3170000 on device 1
 *   main   cuMemcpyHtoDAsync_v2 3220000..3225000 corr 2: HtoD 2 MiB 3230000..3330000 (pinned)
 *   main   cuCtxSynchronize 3226000..3335000
 * GPU records come in CUPTI's delivery order, not in time order. --lazy-first-launch: the first
 * cuLaunchKernel starts at 900000 (105 us, 21 times the launches' median: the driver loading
 * the module in its first launch). */
static int lazy_first_launch; /* --lazy-first-launch: the first cuLaunchKernel lasts 900000..1005000 */

enum {
	G_INIT, G_LIBLOAD, G_H2D, G_LAUNCH, G_LAUNCHEX, G_GRAPH, G_MEMSET, G_STREAMSYNC, G_D2H, G_H2DASYNC,
	G_CTXSYNC, G_COUNT
};

static void scenario_gpu(void)
{
	static const char *const argv[] = {"./gpu_app", NULL};
	static const struct fdef fs[G_COUNT] = {
		{"cuInit", 0}, {"cuLibraryLoadData", 0}, {"cuMemcpyHtoD_v2", 0}, {"cuLaunchKernel", 0},
		{"cuLaunchKernelEx", 0}, {"cuGraphLaunch", 0}, {"cuMemsetD32_v2", 0}, {"cuStreamSynchronize", 0},
		{"cuMemcpyDtoH_v2", 0}, {"cuMemcpyHtoDAsync_v2", 0}, {"cuCtxSynchronize", 0},
	};
	static const struct kdim gemm = {{64, 8, 1}, {256, 1, 1}, 16384, 0, 64},
	                         softmax = {{128, 1, 1}, {128, 1, 1}, 0, 1024, 32},
	                         relu = {{256, 1, 1}, {256, 1, 1}, 0, 0, 16}, init = {{1, 1, 1}, {32, 1, 1}, 0, 0, 8};
	const uint32_t MAIN = 5200, WORKER = 5201;
	file_header(5200, argv, "/opt/gpu_app");
	clock_block(0);
	lib_block(0, 0, "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04", "580.159.04");
	funcs_block(0, 0, fs, G_COUNT);
	thread_block(MAIN, "main");
	thread_block(WORKER, "worker");
	ftab = fs;
	nftab = G_COUNT;
	struct thr m = {.tid = MAIN}, w = {.tid = WORKER};
	static const uint64_t lr[6] = {0xf00d, 64, 8, 1, 256, 1}, st[5] = {1, 0, 0x7, 0x5000, 0};
	const uint64_t r0[6] = {0};

	/* session A */
	gpu_session(CUHOOK_GPU_STARTED, 1000, 130001, "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13", 0);
	call(&m, G_INIT, 2000, 100000, r0, 0, NULL, 0);
	call(&m, G_LIBLOAD, 200000, 500000, (uint64_t[6]){0x7ffc0000, 0x600000}, 0, NULL, 0);
	call(&m, G_H2D, 800000, 100000, (uint64_t[6]){0x7f0000000000ull, 0x10000000, MiB}, 0, NULL, 0);
	call(&m, G_LAUNCH, lazy_first_launch ? 900000 : 1000000, lazy_first_launch ? 105000 : 5000, lr, 5, st, 0);
	call(&m, G_LAUNCH, 1100000, 5000, lr, 5, st, 0);
	call(&w, G_LAUNCH, 1140000, 5000, lr, 5, st, 0);
	call(&m, G_LAUNCHEX, 1200000, 4000, (uint64_t[6]){0x7ffc0100, 0xf00d, 0x5000, 0}, 0, NULL, 0);
	call(&m, G_GRAPH, 1300000, 10000, (uint64_t[6]){0x9000, 0x7}, 0, NULL, 0);
	call(&m, G_MEMSET, 1500000, 2000, (uint64_t[6]){0x7f0000000000ull, 0, 1024}, 0, NULL, 0);
	call(&w, G_STREAMSYNC, 1510000, 90000, (uint64_t[6]){0x7}, 0, NULL, 0);
	call(&m, G_LIBLOAD, 1600000, 300000, (uint64_t[6]){0x7ffc0008, 0x700000}, 0, NULL, 0);
	call(&m, G_LAUNCH, 1990000, 5000, lr, 5, st, 0);
	call(&m, G_D2H, 2060000, 200000, (uint64_t[6]){0x10000000, 0x7f0000000000ull, MiB}, 0, NULL, 0);
	drop_rec(&w, 2520000, 3);
	flush(&m);
	flush(&w);
	gpu_name(1, "_Z4gemmPKfS0_Pfi");
	gpu_name(2, "_Z7softmaxPKfPfi");
	gpu_api(1, MAIN, G_H2D, 800000, 900000);
	gpu_api(2, MAIN, G_LAUNCH, lazy_first_launch ? 900000 : 1000000, 1005000);
	gpu_api(3, MAIN, G_LAUNCH, 1100000, 1105000);
	gpu_api(12, WORKER, G_LAUNCH, 1140000, 1145000);
	gpu_api(4, MAIN, G_LAUNCHEX, 1200000, 1204000);
	gpu_kernel(4, 1210000, 1240000, 0, 7, 2, &softmax, 0, 0);
	gpu_kernel(2, 1010000, 1110000, 0, 7, 1, &gemm, 0, 0);
	gpu_kernel(3, 1110000, 1210000, 0, 7, 1, &gemm, 0, 0);
	gpu_kernel(12, 1150000, 1170000, 0, 9, 2, &softmax, 0, 0);
	gpu_memcpy(1, 810000, 860000, 7, CUHOOK_COPY_HTOD, 1, 3, 0, MiB);
	gpu_flush();
	gpu_name(3, "_Z4reluPfi");
	gpu_api(5, MAIN, G_GRAPH, 1300000, 1310000);
	gpu_api(6, MAIN, G_MEMSET, 1500000, 1502000);
	gpu_api(7, MAIN, G_LAUNCH, 1990000, 1995000);
	gpu_api(8, MAIN, G_D2H, 2060000, 2260000);
	gpu_kernel(5, 1430000, 1440000, 0, 7, 3, &relu, 1, 13);
	gpu_kernel(5, 1320000, 1420000, 0, 7, 1, &gemm, 1, 11);
	gpu_kernel(5, 1420000, 1430000, 0, 7, 3, &relu, 1, 12);
	gpu_memset(6, 1505000, 1506000, 7, 0, 4096);
	gpu_kernel(7, 2000000, 2050000, 0, 9, 1, &gemm, 0, 0);
	gpu_memcpy(8, 2100000, 2200000, 7, CUHOOK_COPY_DTOH, 3, 1, 0, MiB);
	gpu_flush();
	gpu_name(4, "init_kernel");
	gpu_kernel(99, 2300000, 2310000, 0, 7, 4, &init, 0, 0);
	gpu_api(10, MAIN, UINT32_MAX, 2399000, 2403000);
	gpu_kernel(10, 2405000, 2415000, 0, 7, 3, &relu, 0, 0);
	gpu_api(11, WORKER, G_LAUNCH, 2499000, 2503000);
	gpu_kernel(11, 2505000, 2515000, 0, 7, 3, &relu, 0, 0);
	gpu_flush();
	gpu_session(CUHOOK_GPU_STOPPED, 2600000, 130001, "", 29);

	/* session B: another CUPTI user */
	note_block(1, "--gpu: another CUPTI user owns the process (CUDA_INJECTION64_PATH): GPU work is not "
	              "recorded, the API is");
	gpu_session(CUHOOK_GPU_OTHER_USER, 2700000, 130001, "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13", 0);

	/* session C: correlation ids start again */
	gpu_session(CUHOOK_GPU_STARTED, 3000000, 130001, "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13", 0);
	call(&m, G_LAUNCH, 3100000, 5000, lr, 5, st, 0);
	call(&m, G_LAUNCH, 3106000, 3000, lr, 5, st, 0);
	call(&m, G_H2DASYNC, 3220000, 5000, (uint64_t[6]){0x7f0000000000ull, 0x20000000, 2 * MiB, 0x7}, 0, NULL, 0);
	call(&m, G_CTXSYNC, 3226000, 109000, r0, 0, NULL, 0);
	flush(&m);
	gpu_api(1, MAIN, G_LAUNCH, 3100000, 3105000);
	gpu_kernel(1, 3110000, 3210000, 0, 7, 1, &gemm, 0, 0);
	gpu_api(3, MAIN, G_LAUNCH, 3106000, 3109000);
	gpu_kernel(3, 3120000, 3170000, 1, 7, 1, &gemm, 0, 0);
	gpu_api(2, MAIN, G_H2DASYNC, 3220000, 3225000);
	gpu_memcpy(2, 3230000, 3330000, 7, CUHOOK_COPY_HTOD, 2, 3, 1, 2 * MiB);
	gpu_flush();
	gpu_session(CUHOOK_GPU_STOPPED, 3500000, 130001, "", 6);
	clock_block(3600000);
	end_block(2);
	free(m.recs.p);
	free(w.recs.p);
	free(gpu_recs.p);
}

/* ---- scenarios -------------------------------------------------------------------------------- */

enum {
	F_INIT, F_VERSION, F_DEVGET, F_CTXCREATE, F_MODLOAD, F_GETFUNC, F_ALLOC, F_H2D, F_LAUNCH, F_CTXSYNC,
	F_D2H, F_FREE, F_MODUNLOAD, F_CTXDESTROY, F_STREAMSYNC, F_PROCADDR, F_ERRSTR, F_PROFSTART,
	F_MEMCPY2D, F_STREAMQUERY, F_COUNT
};

static const struct fdef basic_funcs[F_COUNT] = {
	{"cuInit", 0}, {"cuDriverGetVersion", 0}, {"cuDeviceGet", 0}, {"cuCtxCreate_v2", 0},
	{"cuModuleLoad", 0}, {"cuModuleGetFunction", 0}, {"cuMemAlloc_v2", 0}, {"cuMemcpyHtoD_v2", 0},
	{"cuLaunchKernel", 0}, {"cuCtxSynchronize", 0}, {"cuMemcpyDtoH_v2", 0}, {"cuMemFree_v2", 0},
	{"cuModuleUnload", 0}, {"cuCtxDestroy_v2", 0}, {"cuStreamSynchronize", 0}, {"cuGetProcAddress_v2", 0},
	{"cuGetErrorString", CUHOOK_REFUSED_TOO_SMALL}, {"cuProfilerStart", CUHOOK_REFUSED_UNDECODABLE},
	{"cuMemcpy2D_v2", CUHOOK_REFUSED_BRANCH_INTO_PATCH}, {"cuStreamQuery", 0},
};

#define NAME(id) basic_funcs[id].name

/* Timeline of the main thread (ns from the trace start), by pipeline stage:
 *   init       1000 .. 204000     cuInit, cuDriverGetVersion, cuDeviceGet, cuCtxCreate_v2
 *   load     300000 .. 1050000    cuModuleLoad, cuModuleGetFunction, 3 x cuMemAlloc_v2 (1 MiB),
 *                                 2 x cuMemcpyHtoD_v2 (1 MiB, 50 us each)
 *   inference 1200000 .. 2700000  4 x cuLaunchKernel (5 us, every 100 us; the second one calls
 *                                 cuGetProcAddress_v2 nested), cuCtxSynchronize (1 ms)
 *   result  2800000 .. 2900000    cuMemcpyDtoH_v2 (1 MiB, 100 us)
 *   teardown 3000000 .. 3250000   3 x cuMemFree_v2, cuModuleUnload, cuCtxDestroy_v2
 * Worker thread: cuStreamSynchronize at 1250000 (20 us) and 1410000 (30 us), cuStreamQuery at
 * 1520000 returning 600 (not ready), a DROP of 5 records, cuStreamSynchronize entry-only at
 * 1650000. */
static void scenario_basic(int one_clock, int no_end, const char *expect)
{
	static const char *const argv[] = {"./infer", "--model", "resnet50.onnx", NULL};
	file_header(4242, argv, "/opt/app/infer");
	if (!one_clock)
		clock_block(0);
	lib_block(0, 0, "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04", "580.159.04");
	lib_block(1, CUHOOK_LIB_INTERNAL, "/usr/lib/x86_64-linux-gnu/libc.so.6", "");
	funcs_block(0, 0, basic_funcs, F_COUNT);
	static const struct fdef internal[] = {{"dlopen", 0}};
	funcs_block(1, F_COUNT, internal, 1);
	thread_block(1000, "main");
	thread_block(1001, "worker");
	refused_session();
	ftab = basic_funcs;
	nftab = F_COUNT;

	struct thr m = {.tid = 1000}, w = {.tid = 1001};
	uint64_t r[6] = {0};
	/* init */
	call(&m, F_INIT, 1000, 100000, r, 0, NULL, 0);
	entry(&m, F_VERSION, 102000, (uint64_t[6]){0x7ffc0000}, 0, NULL, 0);
	exit_rec(&m, F_VERSION, 102500, 0);
	data_rec(&m, F_VERSION, NAME(F_VERSION), 1, 1, (uint64_t[]){12040}, NULL);
	exp_calls[F_VERSION]++, exp_timed[F_VERSION]++, exp_total[F_VERSION] += 500;
	call(&m, F_DEVGET, 103000, zero_call ? 0 : 300, (uint64_t[6]){0x7ffc0010, 0}, 0, NULL, 0);
	entry(&m, F_CTXCREATE, 104000, (uint64_t[6]){0x7ffc0020, 0, 0}, 0, NULL, 0);
	exit_rec(&m, F_CTXCREATE, 204000, 0);
	data_rec(&m, F_CTXCREATE, NAME(F_CTXCREATE), 1, 1, (uint64_t[]){0xc0ffee}, NULL);
	exp_calls[F_CTXCREATE]++, exp_timed[F_CTXCREATE]++, exp_total[F_CTXCREATE] += 100000;
	flush(&m);
	/* load */
	entry(&m, F_MODLOAD, 300000, (uint64_t[6]){0x7ffc0030, 0x601000}, 0, NULL, 0);
	data_rec(&m, F_MODLOAD, NAME(F_MODLOAD), 0, 0, NULL, "/tmp/k.cubin");
	exit_rec(&m, F_MODLOAD, 800000, 0);
	data_rec(&m, F_MODLOAD, NAME(F_MODLOAD), 1, 1, (uint64_t[]){0x1000}, NULL);
	exp_calls[F_MODLOAD]++, exp_timed[F_MODLOAD]++, exp_total[F_MODLOAD] += 500000;
	entry(&m, F_GETFUNC, 801000, (uint64_t[6]){0x7ffc0040, 0x1000, 0x602000}, 0, NULL, 0);
	data_rec(&m, F_GETFUNC, NAME(F_GETFUNC), 0, 0, NULL, "vecAdd");
	exit_rec(&m, F_GETFUNC, 802000, 0);
	data_rec(&m, F_GETFUNC, NAME(F_GETFUNC), 1, 1, (uint64_t[]){0xf00d}, NULL);
	exp_calls[F_GETFUNC]++, exp_timed[F_GETFUNC]++, exp_total[F_GETFUNC] += 1000;
	for (uint64_t i = 0; i < 3; i++) {
		entry(&m, F_ALLOC, 810000 + i * 10000, (uint64_t[6]){0x7ffc0050 + 8 * i, MiB}, 0, NULL, 0);
		if (i == 1) { /* the agent's fast path writes this form */
			exit_any(&m, F_ALLOC, 812000 + i * 10000, 0, 1, 0x7f0000000000ull + i * MiB);
		} else {
			exit_rec(&m, F_ALLOC, 812000 + i * 10000, 0);
			data_rec(&m, F_ALLOC, NAME(F_ALLOC), 1, 1, (uint64_t[]){0x7f0000000000ull + i * MiB}, NULL);
		}
		exp_calls[F_ALLOC]++, exp_timed[F_ALLOC]++, exp_total[F_ALLOC] += 2000;
	}
	flush(&m);
	for (uint64_t i = 0; i < 2; i++)
		call(&m, F_H2D, 900000 + i * 100000, 50000, (uint64_t[6]){0x7f0000000000ull + i * MiB, 0x10000000, MiB},
		     0, NULL, 0);
	/* inference: worker events interleave with main's in separate blocks */
	uint64_t stack[5] = {1, 0, 0, 0x5000, 0}; /* bz, sharedMem, hStream, kernelParams, extra */
	uint64_t lr[6] = {0xf00d, 256, 1, 1, 128, 1};
	call(&m, F_LAUNCH, 1200000, 5000, lr, 5, stack, 0);
	call(&w, F_STREAMSYNC, 1250000, 20000, (uint64_t[6]){0x5}, 0, NULL, 0);
	flush(&w);
	entry(&m, F_LAUNCH, 1300000, lr, 5, stack, 0);
	entry(&m, F_PROCADDR, 1301000, (uint64_t[6]){0x603000, 0x7ffc0060, 12000, 0, 0}, 0, NULL, 0);
	data_rec(&m, F_PROCADDR, NAME(F_PROCADDR), 0, 0, NULL, "cuLaunchKernel");
	exit_rec(&m, F_PROCADDR, 1302000, 0);
	data_rec(&m, F_PROCADDR, NAME(F_PROCADDR), 1, 1, (uint64_t[]){0xabc}, NULL);
	exit_rec(&m, F_LAUNCH, 1305000, 0);
	exp_calls[F_PROCADDR]++, exp_timed[F_PROCADDR]++, exp_total[F_PROCADDR] += 1000;
	exp_calls[F_LAUNCH]++, exp_timed[F_LAUNCH]++, exp_total[F_LAUNCH] += 5000;
	call(&m, F_LAUNCH, 1400000, 5000, lr, 5, stack, 0);
	call(&m, F_LAUNCH, 1500000, 5000, lr, 5, stack, 0);
	flush(&m);
	call(&w, F_STREAMSYNC, 1410000, 30000, (uint64_t[6]){0x5}, 0, NULL, 0);
	call(&w, F_STREAMQUERY, 1520000, 700, (uint64_t[6]){0x5}, 0, NULL, 600);
	drop_rec(&w, 1600000, 5);
	entry(&w, F_STREAMSYNC, 1650000, (uint64_t[6]){0x5}, 0, NULL, 1);
	exp_calls[F_STREAMSYNC]++;
	flush(&w);
	call(&m, F_CTXSYNC, 1700000, 1000000, r, 0, NULL, 0);
	/* result */
	call(&m, F_D2H, 2800000, 100000, (uint64_t[6]){0x10000000, 0x7f0000000000ull, MiB}, 0, NULL, 0);
	/* teardown */
	for (uint64_t i = 0; i < 3; i++)
		call(&m, F_FREE, 3000000 + i * 10000, 3000, (uint64_t[6]){0x7f0000000000ull + i * MiB}, 0, NULL, 0);
	call(&m, F_MODUNLOAD, 3100000, 4000, (uint64_t[6]){0x1000}, 0, NULL, 0);
	if (unfinished)
		entry(&m, F_CTXDESTROY, 3200000, (uint64_t[6]){0xc0ffee}, 0, NULL, 0);
	else
		call(&m, F_CTXDESTROY, 3200000, 50000, (uint64_t[6]){0xc0ffee}, 0, NULL, 0);
	flush(&m);
	if (!no_end) {
		clock_block(4000000);
		end_block(2);
	}
	if (expect)
		write_expect(expect, n_calls);
	free(m.recs.p);
	free(w.recs.p);
}

/* Many calls, for speed and fuzzing: per thread a repeating pattern of a launch with a nested
 * call, an allocation with DATA, a copy, and a sync. */
static int big_vary;

static void scenario_big(uint64_t ncalls, uint32_t nthreads, const char *expect)
{
	static const char *const argv[] = {"./big", NULL};
	static const struct fdef fs[] = {{"cuLaunchKernel", 0}, {"cuGetProcAddress_v2", 0}, {"cuMemAlloc_v2", 0},
	                                 {"cuMemcpyHtoDAsync_v2", 0}, {"cuStreamSynchronize", 0}};
	file_header(777, argv, "/bin/big");
	clock_block(0);
	lib_block(0, 0, "/usr/lib/libcuda.so.1", "999.1");
	funcs_block(0, 0, fs, 5);
	ftab = fs;
	nftab = 5;
	struct thr *th = calloc(nthreads, sizeof(*th));
	for (uint32_t i = 0; i < nthreads; i++) {
		th[i].tid = 2000 + i;
		char name[16];
		snprintf(name, sizeof(name), "w%u", i);
		thread_block(th[i].tid, name);
	}
	uint64_t stack[5] = {1, 0, 0x7, 0x5000, 0};
	uint64_t lr[6] = {0xf00d, 64, 1, 1, 256, 1};
	uint64_t tnow = 1000, per_thread = ncalls / nthreads, made = 0;
	for (uint64_t k = 0; made < per_thread; k++) {
		/* --vary: durations times m; a thread's calls stay apart (5 * 997 < 6000 - 10 * 31) */
		uint64_t m = big_vary ? 1 + ((k * 2654435761u) >> 7) % 997 : 1;
		for (uint32_t i = 0; i < nthreads; i++) {
			struct thr *t = &th[i];
			uint64_t base = tnow + i * 10;
			switch (k % 4) {
			case 0:
				entry(t, 0, base, lr, 5, stack, 0);
				entry(t, 1, base + 1 * m, lr, 0, NULL, 0);
				exit_rec(t, 1, base + 2 * m, 0);
				exit_rec(t, 0, base + 3 * m, 0);
				exp_calls[0]++, exp_timed[0]++, exp_total[0] += 3 * m;
				exp_calls[1]++, exp_timed[1]++, exp_total[1] += 1 * m;
				break;
			case 1:
				entry(t, 2, base, (uint64_t[6]){0x7ffc0000, 4096}, 0, NULL, 0);
				exit_rec(t, 2, base + 4 * m, 0);
				data_rec(t, 2, fs[2].name, 1, 1, (uint64_t[]){0x7f0000000000ull + k}, NULL);
				exp_calls[2]++, exp_timed[2]++, exp_total[2] += 4 * m;
				break;
			case 2:
				call(t, 3, base, 2 * m, (uint64_t[6]){0x7f00, 0x1000, 4096, 7}, 0, NULL, 0);
				break;
			default:
				call(t, 4, base, 5 * m, (uint64_t[6]){7}, 0, NULL, 0);
				break;
			}
			if (t->recs.len > 60000)
				flush(t);
		}
		made += (k % 4 == 0) ? 2 : 1;
		tnow += big_vary ? 6000 : 100;
	}
	for (uint32_t i = 0; i < nthreads; i++) {
		flush(&th[i]);
		free(th[i].recs.p);
	}
	free(th);
	clock_block(tnow + 1000);
	end_block(nthreads);
	if (expect)
		write_expect(expect, n_calls);
}

/* Kernel names reached through every path the report knows, and copies whose size is
 * computed from several arguments:
 *   cuLibraryGetKernel "gemm" -> kernel 0xe1; cuKernelGetFunction(kernel 0xe1) -> function 0xf1;
 *   cuLaunchKernelEx(config, f = 0xf1) -> "gemm"; cuLaunchKernel(f = 0xe1, a CUkernel) -> "gemm";
 *   cuFuncGetName(&name, 0xf2) -> "softmax"; cuLaunchKernel(f = 0xf2) -> "softmax";
 *   cuLaunchKernel(f = 0xf3, never named) -> "function 0xf3";
 *   cuMemsetD32_v2(dst, value, 1024 elements) = 4 KiB; cuMemsetD2D8_v2 (pitch, value, width 256,
 *   height 4) = 1 KiB; cuMemcpyHtoDAsync_v2 of 64 KiB (async: no bandwidth);
 *   cuMemAllocPitch_v2 (width 512 bytes, height 8) = 4 KiB.
 * Each call lasts (index + 1) * 1000 ns so their order in the slowest list is known. */
static void scenario_kernels(const char *expect)
{
	static const char *const argv[] = {"./kernels", NULL};
	static const struct fdef fs[] = {
		{"cuLibraryLoadData", 0}, {"cuLibraryGetKernel", 0}, {"cuKernelGetFunction", 0},
		{"cuLaunchKernelEx", 0}, {"cuLaunchKernel", 0}, {"cuFuncGetName", 0}, {"cuMemsetD32_v2", 0},
		{"cuMemsetD2D8_v2", 0}, {"cuMemcpyHtoDAsync_v2", 0}, {"cuMemAllocPitch_v2", 0},
	};
	file_header(31, argv, "/bin/kernels");
	clock_block(0);
	lib_block(0, 0, "/usr/lib/libcuda.so.1", "999.1");
	funcs_block(0, 0, fs, sizeof(fs) / sizeof(fs[0]));
	thread_block(31, "kernels");
	ftab = fs;
	nftab = sizeof(fs) / sizeof(fs[0]);
	struct thr m = {.tid = 31};
	uint64_t t = 1000, k = 0;
#define DUR (++k * 1000)
	entry(&m, 0, t, (uint64_t[6]){0x7ffc0000, 0x600000}, 0, NULL, 0);
	exit_rec(&m, 0, t + DUR, 0);
	data_rec(&m, 0, fs[0].name, 1, 1, (uint64_t[]){0xaa}, NULL);
	t += 100000;
	entry(&m, 1, t, (uint64_t[6]){0x7ffc0008, 0xaa, 0x601000}, 0, NULL, 0);
	data_rec(&m, 1, fs[1].name, 0, 0, NULL, "gemm");
	exit_rec(&m, 1, t + DUR, 0);
	data_rec(&m, 1, fs[1].name, 1, 1, (uint64_t[]){0xe1}, NULL);
	t += 100000;
	entry(&m, 2, t, (uint64_t[6]){0x7ffc0010, 0xe1}, 0, NULL, 0);
	exit_rec(&m, 2, t + DUR, 0);
	data_rec(&m, 2, fs[2].name, 1, 1, (uint64_t[]){0xf1}, NULL);
	t += 100000;
	entry(&m, 5, t, (uint64_t[6]){0x7ffc0018, 0xf2}, 0, NULL, 0);
	exit_rec(&m, 5, t + DUR, 0);
	data_rec(&m, 5, fs[5].name, 1, 0, NULL, "softmax");
	t += 100000;
	uint64_t st[5] = {1, 256, 0x77, 0x5000, 0};
	call(&m, 3, t, DUR, (uint64_t[6]){0x7ffc0100, 0xf1, 0x5000, 0}, 0, NULL, 0);
	t += 100000;
	call(&m, 4, t, DUR, (uint64_t[6]){0xe1, 2, 3, 4, 32, 8}, 5, st, 0);
	t += 100000;
	call(&m, 4, t, DUR, (uint64_t[6]){0xf2, 1, 1, 1, 64, 1}, 5, st, 0);
	t += 100000;
	call(&m, 4, t, DUR, (uint64_t[6]){0xf3, 1, 1, 1, 64, 1}, 5, st, 0);
	t += 100000;
	call(&m, 6, t, DUR, (uint64_t[6]){0x7f0000000000ull, 0xffffffff, 1024}, 0, NULL, 0);
	t += 100000;
	call(&m, 7, t, DUR, (uint64_t[6]){0x7f0000000000ull, 1024, 0xab, 256, 4}, 0, NULL, 0);
	t += 100000;
	call(&m, 8, t, DUR, (uint64_t[6]){0x7f0000000000ull, 0x10000000, 65536, 0x77}, 0, NULL, 0);
	t += 100000;
	entry(&m, 9, t, (uint64_t[6]){0x7ffc0020, 0x7ffc0028, 512, 8, 4}, 0, NULL, 0);
	exit_rec(&m, 9, t + DUR, 0);
	data_rec(&m, 9, fs[9].name, 1, 2, (uint64_t[]){0x7f0000100000ull, 512}, NULL);
#undef DUR
	flush(&m);
	clock_block(t + 100000);
	end_block(1);
	if (expect)
		write_expect(expect, n_calls);
	free(m.recs.p);
}

/* The agent's kernel names and graphs (KNAMES, GRAPHS blocks):
 *   KNAMES: 0xf1 "_Z4gemmPKfS0_Pfi" (gemm(float const*, float const*, float*, int)), 0xf2 "softmax",
 *           0xf2 again "relu" (named again after an unload: the later entry wins);
 *   GRAPHS: exec 0x9e0 of graph 0x9a0: 3 nodes, 2 kernels: 0xf1 grid (8,1,1) block (128,1,1),
 *           0xf2 grid (4,1,1) block (64,1,1); exec 0x9e1 listed with 0 kernels of 1 node;
 *   cuLaunchKernel(0xf1, grid 2,2,1 block 32,1,1) x 3; cuLaunchKernel(0xf3, never named) x 1;
 *   cuGraphLaunch(0x9e0) x 2; cuGraphLaunch(0x9e2, never listed) x 1; a failed cuLaunchKernel
 *   of 0xf1 (ret 1) launches nothing.
 * So: gemm 3 direct + 2 graph nodes; relu 2 graph nodes; function 0xf3 1; graph_unknown 1. */
static void scenario_names(void)
{
	static const char *const argv[] = {"./names", NULL};
	static const struct fdef fs[] = {{"cuLaunchKernel", 0}, {"cuGraphLaunch", 0}};
	file_header(41, argv, "/bin/names");
	clock_block(0);
	lib_block(0, 0, "/usr/lib/libcuda.so.1", "999.1");
	funcs_block(0, 0, fs, 2);
	thread_block(41, "names");
	ftab = fs;
	nftab = 2;
	struct buf b = {0};
	static const struct {
		uint64_t h;
		const char *name;
	} kn[] = {{0xf1, "_Z4gemmPKfS0_Pfi"}, {0xf2, "softmax"}, {0xf2, "relu"}};
	struct cuhook_knames_block kb = {3, 0};
	buf_add(&b, &kb, sizeof(kb));
	for (unsigned i = 0; i < 3; i++) {
		struct cuhook_kname_entry e = {.handle = kn[i].h, .name_len = (uint16_t)strlen(kn[i].name), .kind = 1};
		static const uint8_t zeros[8];
		buf_add(&b, &e, sizeof(e));
		buf_add(&b, kn[i].name, e.name_len);
		buf_add(&b, zeros, CUHOOK_ALIGN8(e.name_len) - e.name_len);
	}
	block(CUHOOK_BLOCK_KNAMES, b.p, b.len);
	free(b.p);
	b = (struct buf){0};
	struct cuhook_graphs_block gb = {2, 0};
	buf_add(&b, &gb, sizeof(gb));
	struct cuhook_graph_entry g0 = {0x9e0, 0x9a0, 3, 2, 0, 0}, g1 = {0x9e1, 0x9a1, 1, 0, 0, 0};
	struct cuhook_graph_kernel k0 = {0xf1, {8, 1, 1}, {128, 1, 1}, 0, 0}, k1 = {0xf2, {4, 1, 1}, {64, 1, 1}, 0, 0};
	buf_add(&b, &g0, sizeof(g0));
	buf_add(&b, &k0, sizeof(k0));
	buf_add(&b, &k1, sizeof(k1));
	buf_add(&b, &g1, sizeof(g1));
	block(CUHOOK_BLOCK_GRAPHS, b.p, b.len);
	free(b.p);
	struct thr m = {.tid = 41};
	uint64_t st[5] = {1, 0, 0, 0, 0}, t = 1000;
	for (int i = 0; i < 3; i++, t += 10000)
		call(&m, 0, t, 2000, (uint64_t[6]){0xf1, 2, 2, 1, 32, 1}, 5, st, 0);
	call(&m, 0, t, 2000, (uint64_t[6]){0xf3, 1, 1, 1, 64, 1}, 5, st, 0);
	t += 10000;
	call(&m, 0, t, 2000, (uint64_t[6]){0xf1, 1, 1, 1, 0, 1}, 5, st, 1); /* failed */
	t += 10000;
	for (int i = 0; i < 2; i++, t += 10000)
		call(&m, 1, t, 3000, (uint64_t[6]){0x9e0, 0}, 0, NULL, 0);
	call(&m, 1, t, 3000, (uint64_t[6]){0x9e2, 0}, 0, NULL, 0);
	flush(&m);
	clock_block(t + 100000);
	end_block(1);
	free(m.recs.p);
}

/* Many very short calls, as PyTorch makes them (the count=GLOBS option's use):
 *   main   (tid 3000): N iterations (--iterations, default 24000), one every 5 us from 10 us:
 *          cuCtxGetCurrent (100 ns) each, cuStreamGetCaptureInfo_v2 (50 ns at +200) every 2nd,
 *          cuLaunchKernel (3 us at +300) every 3rd, cuPointerGetAttribute (200 ns at +3500) every 8th;
 *   worker (tid 3001): N/4 iterations, one every 20 us from 20 us: cuCtxGetCurrent (100 ns),
 *          cuStreamGetCaptureInfo_v2 (50 ns at +200) every 2nd, cuStreamSynchronize (2 us at +300)
 *          every 10th;
 *   tid 3002, which has no THREAD block: 5 x cuCtxGetCurrent (100 ns), 1 us apart, from 1.2 P.
 * The writer's flush rounds come at P = N * 25000 / 12 ns (50 ms for N = 24000) and 2 P, and the
 * last one at N * 5000 + 20000 ns: each thread's calls started before a round are drained in it.
 * With --count (the agent's count=cuCtxGetCurrent,cuStreamGetCaptureInfo_v2) those two functions
 * are counted, not recorded: in each round, right after a thread's EVENTS block, a COUNTS block
 * with its calls of them since its previous one. The last round gives tid 3002 a block with one
 * entry of 0 calls (the agent writes none; a reader must accept it). --count-capture counts
 * cuStreamGetCaptureInfo_v2 alone (cuCtxGetCurrent stays recorded). */
enum { H_CTXGET, H_CAPTURE, H_LAUNCH, H_POINTER, H_SYNC, H_COUNT };

static const struct fdef hot_funcs[H_COUNT] = {
	{"cuCtxGetCurrent", 0}, {"cuStreamGetCaptureInfo_v2", 0}, {"cuLaunchKernel", 0},
	{"cuPointerGetAttribute", 0}, {"cuStreamSynchronize", 0},
};

/* One call of a thread's iterations: `func` every `every` iterations, `offset` ns after the
 * iteration's start, lasting `dur` ns. */
struct hot_step {
	uint32_t func, every;
	uint64_t offset, dur;
};

struct hot_thr {
	struct thr t;
	uint64_t first, spacing, n, i;  /* iteration i (of n) starts at first + spacing * i */
	const struct hot_step *steps;
	unsigned nsteps;
	uint64_t pending[H_COUNT];      /* counted calls since the thread's last COUNTS block */
};

static int hot_count;

static void hot_call(struct hot_thr *h, uint32_t func, uint64_t start, uint64_t dur)
{
	static const uint64_t lr[6] = {0xf00d, 64, 1, 1, 128, 1}, stack[5] = {1, 0, 0x7, 0x5000, 0};
	if ((hot_count == 1 && func == H_CTXGET) || (hot_count && func == H_CAPTURE))
		h->pending[func]++;
	else if (func == H_LAUNCH)
		call(&h->t, func, start, dur, lr, 5, stack, 0);
	else
		call(&h->t, func, start, dur, (uint64_t[6]){0x7ffc0000, 0x7}, 0, NULL, 0);
}

/* A flush round at `at` for one thread: the iterations that started before it, its EVENTS
 * block, then its COUNTS block (if it counted any). */
static void hot_round(struct hot_thr *h, uint64_t at, int zero_entry)
{
	for (; h->i < h->n && h->first + h->spacing * h->i < at; h->i++)
		for (unsigned s = 0; s < h->nsteps; s++)
			if (h->i % h->steps[s].every == 0)
				hot_call(h, h->steps[s].func, h->first + h->spacing * h->i + h->steps[s].offset, h->steps[s].dur);
	uint32_t f[H_COUNT + 1], n = 0;
	uint64_t c[H_COUNT + 1];
	flush(&h->t);
	for (uint32_t i = 0; i < H_COUNT; i++)
		if (h->pending[i]) {
			f[n] = i;
			c[n++] = h->pending[i];
			h->pending[i] = 0;
		}
	if (zero_entry) {
		f[n] = H_CAPTURE;
		c[n++] = 0;
	}
	if (n)
		counts_block(h->t.tid, at, f, c, n);
}

static void scenario_hot(uint64_t iters, const char *expect)
{
	static const char *const argv[] = {"./hot", NULL};
	static const struct hot_step main_steps[] = {
		{H_CTXGET, 1, 0, 100}, {H_CAPTURE, 2, 200, 50}, {H_LAUNCH, 3, 300, 3000}, {H_POINTER, 8, 3500, 200}};
	static const struct hot_step worker_steps[] = {{H_CTXGET, 1, 0, 100}, {H_CAPTURE, 2, 200, 50}, {H_SYNC, 10, 300, 2000}};
	file_header(3000, argv, "/bin/hot");
	clock_block(0);
	lib_block(0, 0, "/usr/lib/libcuda.so.1", "999.1");
	funcs_block(0, 0, hot_funcs, H_COUNT);
	thread_block(3000, "main");
	thread_block(3001, "worker");
	ftab = hot_funcs;
	nftab = H_COUNT;
	const uint64_t period = iters * 25000 / 12, end = iters * 5000 + 20000;
	struct hot_thr th[3] = {
		{.t.tid = 3000, .first = 10000, .spacing = 5000, .n = iters, .steps = main_steps, .nsteps = 4},
		{.t.tid = 3001, .first = 20000, .spacing = 20000, .n = iters / 4, .steps = worker_steps, .nsteps = 3},
		{.t.tid = 3002, .first = period * 6 / 5, .spacing = 1000, .n = 5, .steps = main_steps, .nsteps = 1},
	};
	for (int r = 1; r <= 3; r++)
		for (int k = 0; k < 3; k++)
			hot_round(&th[k], r < 3 ? r * period : end, r == 3 && k == 2 && hot_count);
	clock_block(end);
	end_block(3);
	if (expect)
		write_expect(expect, n_calls);
	for (int k = 0; k < 3; k++)
		free(th[k].t.recs.p);
}

/* One rank of a job of `world` processes on one machine that wait for each other at every step
 * (a collective: every rank's wait ends when the last one arrives). Rank r's process starts r *
 * 137 us after rank 0's (its clocks, header and events are shifted by as much), pid 4000 + r.
 * Times below are on the job's common axis (ns from rank 0's start); step s starts at
 * G = 1 ms + s * 10 ms:
 *   main thread   cuLaunchKernel at G + 10 us (5 us); cuStreamQuery at A - 300 us (1 us, a poll);
 *                 cuStreamSynchronize from its arrival A = G + 1 ms + r * 50 us (+ 2 ms + s * 10 us
 *                 for the step's slow rank) to E + r * 7 us, E = the latest arrival + 40 us;
 *                 rank 0 alone: cuCtxSynchronize at G + 5 ms (100 us) every third step (nobody
 *                 waits with it)
 *   worker        cuStreamSynchronize at G + 8 ms + r * 300 us (20 us): the ranks' waits end
 *                 within 500 us of each other but never overlap, so they are not waiting together
 * Every rank but rank 2 has the agent's "job: rank=R world=W" NOTE (src/agent/job_env.c).
 * --expect writes what a correct report finds over all ranks (the same on every rank).
 * Collectives (NCCL kernels, matched by order across ranks): at G + 20 us a launch of a named
 * kernel that is not NCCL's (gemm); at H = G + 100 us + r * 20 us (+ 300 us + s us for the
 * collective's slow rank, ranks_coll_slow()) a launch of ncclDevKernel_AllReduce_... (5 us), or of
 * ncclDevKernel_Broadcast_... on rank 1 at step --coll-mismatch S. --gpu adds CUPTI's records of
 * the NCCL kernels: each starts on device r at H + 50 us (+ 3 ms for rank 0 on every step s % 4
 * == 1: its GPU was busy, so by the GPU it arrived last) and ends 30 us after the last start. */
enum { R_INIT, R_LAUNCH, R_STREAMSYNC, R_CTXSYNC, R_QUERY, R_GETFUNC, R_COUNT };

static unsigned ranks_slow(unsigned s, unsigned world)
{
	return s % 5 == 4 ? 0 : (s * 2 + 1) % world;
}

static uint64_t ranks_arrival(unsigned r, unsigned s, unsigned world)
{
	uint64_t g = 1000000 + (uint64_t)s * 10000000;
	return g + 1000000 + r * 50000 + (r == ranks_slow(s, world) ? 2000000 + (uint64_t)s * 10000 : 0);
}

static uint64_t ranks_last(unsigned s, unsigned world)
{
	uint64_t m = 0;
	for (unsigned r = 0; r < world; r++)
		if (ranks_arrival(r, s, world) > m)
			m = ranks_arrival(r, s, world);
	return m;
}

static int ranks_gpu = 0;                 /* --gpu: CUPTI's records of the NCCL kernels */
static unsigned ranks_mismatch = UINT32_MAX; /* --coll-mismatch S */

static unsigned ranks_coll_slow(unsigned s, unsigned world)
{
	return (s + 2) % world;
}

static uint64_t ranks_coll_host(unsigned r, unsigned s, unsigned world)
{
	uint64_t g = 1000000 + (uint64_t)s * 10000000;
	return g + 100000 + r * 20000 + (r == ranks_coll_slow(s, world) ? 300000 + (uint64_t)s * 1000 : 0);
}

static uint64_t ranks_coll_gpu(unsigned r, unsigned s, unsigned world)
{
	return ranks_coll_host(r, s, world) + 50000 + (r == 0 && s % 4 == 1 ? 3000000 : 0);
}

/* The collectives' part of the expectations: "collectives": {timing, matched, mismatch_at,
 * slowest: [pid by collective], processes: {pid: {kernels, last, waited_ns, caused_ns}}} */
static void ranks_expect_colls(FILE *f, unsigned world, unsigned steps)
{
	unsigned matched = ranks_mismatch < steps ? ranks_mismatch : steps;
	uint64_t (*arrival)(unsigned, unsigned, unsigned) = ranks_gpu ? ranks_coll_gpu : ranks_coll_host;
	fprintf(f, ", \"collectives\": {\"timing\": \"%s\", \"matched\": %u, \"mismatch_at\": ",
	        ranks_gpu ? "gpu" : "host", matched);
	if (matched < steps)
		fprintf(f, "%u", matched);
	else
		fprintf(f, "null");
	fprintf(f, ", \"slowest\": [");
	for (unsigned s = 0; s < matched; s++) {
		unsigned slow = 0;
		for (unsigned r = 1; r < world; r++)
			if (arrival(r, s, world) > arrival(slow, s, world))
				slow = r;
		fprintf(f, "%s%u", s ? ", " : "", 4000 + slow);
	}
	fprintf(f, "], \"processes\": {");
	for (unsigned r = 0; r < world; r++) {
		uint64_t waited = 0, caused = 0, last = 0;
		for (unsigned s = 0; s < matched; s++) {
			unsigned slow = 0;
			for (unsigned q = 1; q < world; q++)
				if (arrival(q, s, world) > arrival(slow, s, world))
					slow = q;
			uint64_t m = arrival(slow, s, world);
			waited += m - arrival(r, s, world);
			if (slow == r) {
				last++;
				for (unsigned q = 0; q < world; q++)
					caused += m - arrival(q, s, world);
			}
		}
		fprintf(f, "%s\"%u\": {\"kernels\": %u, \"last\": %llu, \"waited_ns\": %llu, \"caused_ns\": %llu}",
		        r ? ", " : "", 4000 + r, steps, (unsigned long long)last, (unsigned long long)waited,
		        (unsigned long long)caused);
	}
	fprintf(f, "}}");
}

static void ranks_expect(const char *path, unsigned world, unsigned steps)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fprintf(f, "{\"episodes\": %u, \"slowest\": [", steps);
	for (unsigned s = 0; s < steps; s++)
		fprintf(f, "%s%u", s ? ", " : "", 4000 + ranks_slow(s, world));
	fprintf(f, "], \"processes\": {");
	for (unsigned r = 0; r < world; r++) {
		uint64_t waited = 0, caused = 0, last = 0;
		for (unsigned s = 0; s < steps; s++) {
			uint64_t m = ranks_last(s, world);
			waited += m - ranks_arrival(r, s, world);
			if (ranks_slow(s, world) == r) {
				last++;
				for (unsigned q = 0; q < world; q++)
					caused += m - ranks_arrival(q, s, world);
			}
		}
		fprintf(f, "%s\"%u\": {\"waits\": %u, \"together\": %u, \"last\": %llu, \"waited_ns\": %llu, "
		           "\"caused_ns\": %llu}",
		        r ? ", " : "", 4000 + r, 2 * steps + (r == 0 ? (steps + 2) / 3 : 0), steps,
		        (unsigned long long)last, (unsigned long long)waited, (unsigned long long)caused);
	}
	fprintf(f, "}");
	ranks_expect_colls(f, world, steps);
	fprintf(f, "}\n");
	fclose(f);
}

static void scenario_ranks(unsigned rank, unsigned world, unsigned steps, const char *expect)
{
	static const struct fdef fs[R_COUNT] = {
		{"cuInit", 0}, {"cuLaunchKernel", 0}, {"cuStreamSynchronize", 0}, {"cuCtxSynchronize", 0},
		{"cuStreamQuery", 0}, {"cuModuleGetFunction", 0}};
	static const char *const knames[] = {"_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE",
	                                     "_Z31ncclDevKernel_Broadcast_RING_LL24ncclDevKernelArgsStorageILm4096EE",
	                                     "_Z4gemmPf"};
	static const uint64_t handles[] = {0xc1, 0xc2, 0xd1};
	static const struct kdim nccl = {{2, 1, 1}, {640, 1, 1}, 0, 4096, 96};
	char rank_arg[32];
	snprintf(rank_arg, sizeof(rank_arg), "--rank=%u", rank);
	const char *const argv[] = {"python3", "train.py", rank_arg, NULL};
	const uint64_t shift = rank * 137000ull; /* rank r's trace starts this much later */
	START_NS += shift;
	START_REAL += shift;
	ftab = fs;
	nftab = R_COUNT;
	file_header(4000 + rank, argv, "/usr/bin/python3.12");
	clock_block(0);
	lib_block(0, 0, "/usr/lib/libcuda.so.1", "580.159.04");
	funcs_block(0, 0, fs, R_COUNT);
	if (rank != 2) { /* rank 2's launcher said nothing: the report shows its pid alone */
		char job[64];
		snprintf(job, sizeof(job), "job: rank=%u world=%u local_rank=%u (from RANK)", rank, world, rank);
		note_block(0, job);
	}
	thread_block(40000 + rank * 10, "python3");
	thread_block(40001 + rank * 10, "pt_worker");
	struct thr m = {.tid = 40000 + rank * 10}, w = {.tid = 40001 + rank * 10};
	if (ranks_gpu)
		gpu_session(CUHOOK_GPU_STARTED, 500, 130001, "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13", 0);
	call(&m, R_INIT, 1000, 1000, NULL, 0, NULL, 0);
	for (unsigned k = 0; k < 3; k++) { /* the kernels' handles and names */
		uint64_t at = 10000 + k * 10000;
		entry(&m, R_GETFUNC, at, (uint64_t[6]){0x7ffc0000 + k * 8, 0xaa, 0x601000 + k * 0x100}, 0, NULL, 0);
		data_rec(&m, R_GETFUNC, fs[R_GETFUNC].name, 0, 0, NULL, knames[k]);
		exit_rec(&m, R_GETFUNC, at + 2000, 0);
		data_rec(&m, R_GETFUNC, fs[R_GETFUNC].name, 1, 1, (uint64_t[]){handles[k]}, NULL);
		exp_calls[R_GETFUNC]++;
		exp_timed[R_GETFUNC]++;
		exp_total[R_GETFUNC] += 2000;
	}
	if (ranks_gpu) {
		gpu_name(1, knames[0]);
		gpu_name(2, knames[1]);
	}
	for (unsigned s = 0; s < steps; s++) {
		uint64_t g = 1000000 + (uint64_t)s * 10000000, a = ranks_arrival(rank, s, world);
		uint64_t e = ranks_last(s, world) + 40000 + rank * 7000;
		call(&m, R_LAUNCH, g + 10000 - shift, 5000, NULL, 0, NULL, 0);
		call(&m, R_LAUNCH, g + 20000 - shift, 5000, (uint64_t[6]){handles[2], 1, 1, 1, 32, 1}, 0, NULL, 0);
		unsigned which = rank == 1 && s == ranks_mismatch ? 1 : 0;
		uint64_t h = ranks_coll_host(rank, s, world);
		call(&m, R_LAUNCH, h - shift, 5000, (uint64_t[6]){handles[which], 2, 1, 1, 640, 1}, 0, NULL, 0);
		if (ranks_gpu) {
			uint64_t last = 0;
			for (unsigned q = 0; q < world; q++)
				if (ranks_coll_gpu(q, s, world) > last)
					last = ranks_coll_gpu(q, s, world);
			gpu_api(s + 1, m.tid, R_LAUNCH, h - shift, h + 5000 - shift);
			gpu_kernel(s + 1, ranks_coll_gpu(rank, s, world) - shift, last + 30000 - shift, rank, 7, which + 1, &nccl, 0,
			           0);
		}
		call(&m, R_QUERY, a - 300000 - shift, 1000, NULL, 0, NULL, 600);
		call(&m, R_STREAMSYNC, a - shift, e - a, NULL, 0, NULL, 0);
		if (rank == 0 && s % 3 == 0)
			call(&m, R_CTXSYNC, g + 5000000 - shift, 100000, NULL, 0, NULL, 0);
		call(&w, R_STREAMSYNC, g + 8000000 + rank * 300000 - shift, 20000, NULL, 0, NULL, 0);
		if (s % 8 == 7) {
			flush(&m);
			flush(&w);
		}
	}
	flush(&m);
	flush(&w);
	if (ranks_gpu) {
		gpu_flush();
		gpu_session(CUHOOK_GPU_STOPPED, (uint64_t)steps * 10000000 - shift, 130001, "", 2 + 2 * (uint64_t)steps);
	}
	clock_block(1000000 + (uint64_t)steps * 10000000 - shift);
	end_block(2);
	if (expect)
		ranks_expect(expect, world, steps);
	free(m.recs.p);
	free(w.recs.p);
}

/* Memory in use (the report's memory.c) with known answers, times in ms from the trace's start:
 *   1 main  cuMemAlloc 4 MiB -> A 0xa000          12 main cuMemRelease H1 (refs: the mapping)
 *   2 main  cuMemAlloc 8 MiB -> B 0xb000 (the     13 main cuMemCreate 32 MiB -> H2 0x102: device
 *           exit with its value, as the agent's       + physical at its peak, 58 MiB
 *           fast path writes it)                  14 main cuMemRelease H2 (freed: never mapped)
 *   3 main  cuMemAlloc 1 GiB fails (error 2)      15 main cuMemUnmap 0x70000000: H1 freed
 *   4 work  cuMemAllocAsync 2 MiB -> C 0xc000     16 main cuMemRelease 0x555: a handle never seen
 *   5 main  cuMemFree A                               (imported)
 *   6 main  cuMemFree 0x9999: never allocated     17 main cuMemAllocManaged 64 MiB -> 0xd000
 *   7 main  cuMemFree NULL (frees nothing)        18 main cuMemHostAlloc 1 MiB -> 0xe000
 *   8 main  cuMemCreate 16 MiB -> H1 0x101        19 main cuMemHostAlloc 3 MiB -> 0xe100
 *   9 main  cuMemMap 0x70000000 16 MiB, H1        20 main cuMemFreeHost 0xe000
 *  10 main  cuMemRelease H1 (refs: the mapping)   21 work cuMemFreeAsync C
 *  11 main  cuMemRetainAllocationHandle at        22 main cuMemAlloc 1 MiB -> 0xa000 (A's
 *           0x70000000: H1 again                      address again)
 * The trace ends at 25 ms. Each call lasts 100 us. */
enum {
	M_ALLOC, M_FREE, M_ALLOCASYNC, M_FREEASYNC, M_CREATE, M_MAP, M_RELEASE, M_UNMAP, M_RETAIN, M_MANAGED,
	M_HOSTALLOC, M_FREEHOST, M_COUNT
};

static void scenario_memory(void)
{
	static const char *const argv[] = {"./mem", NULL};
	static const struct fdef fs[M_COUNT] = {
		{"cuMemAlloc_v2", 0}, {"cuMemFree_v2", 0}, {"cuMemAllocAsync", 0}, {"cuMemFreeAsync", 0},
		{"cuMemCreate", 0}, {"cuMemMap", 0}, {"cuMemRelease", 0}, {"cuMemUnmap", 0},
		{"cuMemRetainAllocationHandle", 0}, {"cuMemAllocManaged", 0}, {"cuMemHostAlloc", 0}, {"cuMemFreeHost", 0},
	};
	file_header(77, argv, "/bin/mem");
	clock_block(0);
	lib_block(0, 0, "/usr/lib/libcuda.so.1", "580.159.04");
	funcs_block(0, 0, fs, M_COUNT);
	thread_block(77, "main");
	thread_block(78, "worker");
	ftab = fs;
	nftab = M_COUNT;
	struct thr m = {.tid = 77}, w = {.tid = 78};
	const uint64_t ms = 1000000, d = 100000;
	/* an allocation returning VAL in a DATA record (FAST: in the EXIT itself) */
#define ALLOC(T, F, AT, R0, R1, R2, RET, VAL, FAST)                                                               \
	do {                                                                                                    \
		entry(T, F, AT, (uint64_t[6]){R0, R1, R2}, 0, NULL, 0);                                             \
		if (FAST) {                                                                                         \
			exit_any(T, F, (AT) + d, RET, 1, VAL);                                                          \
		} else {                                                                                            \
			exit_rec(T, F, (AT) + d, RET);                                                                  \
			if (!(RET))                                                                                     \
				data_rec(T, F, fs[F].name, 1, 1, (uint64_t[]){VAL}, NULL);                                  \
		}                                                                                                   \
	} while (0)
	ALLOC(&m, M_ALLOC, 1 * ms, 0x7ffc0000, 4 * MiB, 0, 0, 0xa000, 0);
	ALLOC(&m, M_ALLOC, 2 * ms, 0x7ffc0008, 8 * MiB, 0, 0, 0xb000, 1);
	ALLOC(&m, M_ALLOC, 3 * ms, 0x7ffc0010, 1024 * MiB, 0, 2, 0, 0);
	ALLOC(&w, M_ALLOCASYNC, 4 * ms, 0x7ffc1000, 2 * MiB, 0x7, 0, 0xc000, 0);
	call(&m, M_FREE, 5 * ms, d, (uint64_t[6]){0xa000}, 0, NULL, 0);
	call(&m, M_FREE, 6 * ms, d, (uint64_t[6]){0x9999}, 0, NULL, 0);
	call(&m, M_FREE, 7 * ms, d, (uint64_t[6]){0}, 0, NULL, 0);
	ALLOC(&m, M_CREATE, 8 * ms, 0x7ffc0018, 16 * MiB, 0x7ffc0100, 0, 0x101, 0);
	call(&m, M_MAP, 9 * ms, d, (uint64_t[6]){0x70000000, 16 * MiB, 0, 0x101, 0}, 0, NULL, 0);
	call(&m, M_RELEASE, 10 * ms, d, (uint64_t[6]){0x101}, 0, NULL, 0);
	call(&m, M_RETAIN, 11 * ms, d, (uint64_t[6]){0x7ffc0020, 0x70000000}, 0, NULL, 0);
	call(&m, M_RELEASE, 12 * ms, d, (uint64_t[6]){0x101}, 0, NULL, 0);
	ALLOC(&m, M_CREATE, 13 * ms, 0x7ffc0028, 32 * MiB, 0x7ffc0100, 0, 0x102, 0);
	call(&m, M_RELEASE, 14 * ms, d, (uint64_t[6]){0x102}, 0, NULL, 0);
	call(&m, M_UNMAP, 15 * ms, d, (uint64_t[6]){0x70000000, 16 * MiB}, 0, NULL, 0);
	call(&m, M_RELEASE, 16 * ms, d, (uint64_t[6]){0x555}, 0, NULL, 0);
	ALLOC(&m, M_MANAGED, 17 * ms, 0x7ffc0030, 64 * MiB, 1, 0, 0xd000, 0);
	ALLOC(&m, M_HOSTALLOC, 18 * ms, 0x7ffc0038, 1 * MiB, 0, 0, 0xe000, 0);
	ALLOC(&m, M_HOSTALLOC, 19 * ms, 0x7ffc0040, 3 * MiB, 0, 0, 0xe100, 0);
	call(&m, M_FREEHOST, 20 * ms, d, (uint64_t[6]){0xe000}, 0, NULL, 0);
	call(&w, M_FREEASYNC, 21 * ms, d, (uint64_t[6]){0xc000, 0x7}, 0, NULL, 0);
	ALLOC(&m, M_ALLOC, 22 * ms, 0x7ffc0048, 1 * MiB, 0, 0, 0xa000, 0);
#undef ALLOC
	flush(&m);
	flush(&w);
	clock_block(25 * ms);
	end_block(2);
	free(m.recs.p);
	free(w.recs.p);
}

/* Streams (the report's streams.c) with known answers. Thread 1 (t1, 90) and thread 2 (t2, 91);
 * streams 0x10, 0x20 and the legacy default stream 0x0; each call's duration in us:
 *   t1  cuLaunchKernel on 0x10 three times (5)      t2  cuLaunchKernel on 0x10 (5)
 *       cuLaunchKernelEx, config naming 0x20,            cuStreamSynchronize(0x20) (50)
 *         twice (4)                                      cuLaunchKernel on 0x0 twice (5)
 *       cuMemcpyHtoDAsync 1 MiB on 0x10 (10)             cuStreamQuery(0x10) (1)
 *       cuMemsetD32Async 256 values on 0x20 (3)          cuMemcpyHtoD 4 KiB (20): no stream
 *       cuStreamSynchronize(0x10) (100)
 *       cuEventRecord(0xe1, 0x10) (1)
 *       cuStreamWaitEvent(0x20, 0xe1) (1)
 *       cuGraphLaunch(0x9000, 0x20) (7)
 *       cuLaunchKernelEx without its config (2): no stream known */
enum { S_LAUNCH, S_LAUNCHEX, S_H2DASYNC, S_MEMSETASYNC, S_SYNC, S_RECORD, S_WAIT, S_GRAPH, S_QUERY, S_H2D, S_COUNT };

static void scenario_streams(void)
{
	static const char *const argv[] = {"./streams", NULL};
	static const struct fdef fs[S_COUNT] = {
		{"cuLaunchKernel", 0}, {"cuLaunchKernelEx", 0}, {"cuMemcpyHtoDAsync_v2", 0}, {"cuMemsetD32Async", 0},
		{"cuStreamSynchronize", 0}, {"cuEventRecord", 0}, {"cuStreamWaitEvent", 0}, {"cuGraphLaunch", 0},
		{"cuStreamQuery", 0}, {"cuMemcpyHtoD_v2", 0},
	};
	file_header(90, argv, "/bin/streams");
	clock_block(0);
	lib_block(0, 0, "/usr/lib/libcuda.so.1", "580.159.04");
	funcs_block(0, 0, fs, S_COUNT);
	thread_block(90, "t1");
	thread_block(91, "t2");
	ftab = fs;
	nftab = S_COUNT;
	struct thr a = {.tid = 90}, b = {.tid = 91};
	const uint64_t us = 1000;
	uint64_t at = 10 * us;
#define LAUNCH(T, STREAM)                                                                                        \
	call(T, S_LAUNCH, at, 5 * us, (uint64_t[6]){0xf00d, 1, 1, 1, 32, 1}, 5,                                   \
	     (uint64_t[5]){1, 0, STREAM, 0x5000, 0}, 0),                                                           \
	    at += 20 * us
	for (int i = 0; i < 3; i++)
		LAUNCH(&a, 0x10);
	for (int i = 0; i < 2; i++) {
		uint8_t cfg[CUHOOK_LAUNCH_CONFIG_BYTES] = {0};
		uint32_t dims[7] = {4, 1, 1, 64, 1, 1, 0};
		uint64_t stream = 0x20;
		memcpy(cfg, dims, sizeof(dims));
		memcpy(cfg + 32, &stream, sizeof(stream));
		entry(&a, S_LAUNCHEX, at, (uint64_t[6]){0x7ffc0100, 0xf00d, 0x5000, 0}, 0, NULL, 0);
		data_bytes(&a, S_LAUNCHEX, fs[S_LAUNCHEX].name, 0, 0, NULL, (const char *)cfg, sizeof(cfg));
		exit_rec(&a, S_LAUNCHEX, at + 4 * us, 0);
		exp_calls[S_LAUNCHEX]++, exp_timed[S_LAUNCHEX]++, exp_total[S_LAUNCHEX] += 4 * us;
		at += 20 * us;
	}
	call(&a, S_H2DASYNC, at, 10 * us, (uint64_t[6]){0x7f0000000000ull, 0x10000000, MiB, 0x10}, 0, NULL, 0);
	at += 20 * us;
	call(&a, S_MEMSETASYNC, at, 3 * us, (uint64_t[6]){0x7f0000000000ull, 0, 256, 0x20}, 0, NULL, 0);
	at += 20 * us;
	call(&a, S_SYNC, at, 100 * us, (uint64_t[6]){0x10}, 0, NULL, 0);
	at += 120 * us;
	call(&a, S_RECORD, at, 1 * us, (uint64_t[6]){0xe1, 0x10}, 0, NULL, 0);
	at += 20 * us;
	call(&a, S_WAIT, at, 1 * us, (uint64_t[6]){0x20, 0xe1, 0}, 0, NULL, 0);
	at += 20 * us;
	call(&a, S_GRAPH, at, 7 * us, (uint64_t[6]){0x9000, 0x20}, 0, NULL, 0);
	at += 20 * us;
	call(&a, S_LAUNCHEX, at, 2 * us, (uint64_t[6]){0x7ffc0100, 0xf00d, 0x5000, 0}, 0, NULL, 0);
	at += 20 * us;
	LAUNCH(&b, 0x10);
	call(&b, S_SYNC, at, 50 * us, (uint64_t[6]){0x20}, 0, NULL, 0);
	at += 60 * us;
	for (int i = 0; i < 2; i++)
		LAUNCH(&b, 0x0);
	call(&b, S_QUERY, at, 1 * us, (uint64_t[6]){0x10}, 0, NULL, 600);
	at += 20 * us;
	call(&b, S_H2D, at, 20 * us, (uint64_t[6]){0x7f0000000000ull, 0x10000000, 4096}, 0, NULL, 0);
	at += 30 * us;
#undef LAUNCH
	flush(&a);
	flush(&b);
	clock_block(at);
	end_block(2);
	free(a.recs.p);
	free(b.recs.p);
}

/* The devices of calls in a trace that begins after the program chose its contexts (devices.c):
 *   t1  10 us cuMemAlloc_v2 4 KiB      unknown (its context is not in the trace)
 *       20 us cuCtxGetCurrent -> 0xc1   3 (0xc1's device, told at 40 us)
 *       30 us cuMemcpyHtoD_v2 1 KiB     3
 *       40 us cuCtxGetDevice -> 3       3
 *   t2  50 us cuCtxSetCurrent(0xc1)     3 (learnt from t1)
 *       60 us cuLaunchKernel            3
 *       70 us cuCtxSetCurrent(NULL)     3 (pops 0xc1: what lies under is unknown)
 *       80 us cuMemAlloc_v2 8 KiB       unknown
 *       90 us cuCtxGetCurrent -> NULL   none (no context current)
 *      100 us cuMemcpyDtoH_v2 512 B     none
 *   t3 110 us cuDeviceGetAttribute(dev 99)             unknown (past the 64 devices followed)
 *      120 us cuDeviceGetAttribute(dev 2, upper half set) 2
 *      130 us cuMemFree_v2 (t1's 4 KiB) unknown
 * Every call lasts 1 us. */
enum { V_ALLOC, V_GETCUR, V_H2D, V_GETDEV, V_SETCUR, V_LAUNCH, V_D2H, V_ATTR, V_FREE, V_COUNT };

static void scenario_devices(void)
{
	static const char *const argv[] = {"./devices", NULL};
	static const struct fdef fs[V_COUNT] = {
		{"cuMemAlloc_v2", 0}, {"cuCtxGetCurrent", 0}, {"cuMemcpyHtoD_v2", 0}, {"cuCtxGetDevice", 0},
		{"cuCtxSetCurrent", 0}, {"cuLaunchKernel", 0}, {"cuMemcpyDtoH_v2", 0}, {"cuDeviceGetAttribute", 0},
		{"cuMemFree_v2", 0},
	};
	file_header(95, argv, "/bin/devices");
	clock_block(0);
	lib_block(0, 0, "/usr/lib/libcuda.so.1", "580.159.04");
	funcs_block(0, 0, fs, V_COUNT);
	thread_block(95, "t1");
	thread_block(96, "t2");
	thread_block(97, "t3");
	ftab = fs;
	nftab = V_COUNT;
	struct thr a = {.tid = 95}, b = {.tid = 96}, c = {.tid = 97};
	const uint64_t us = 1000;
/* a 1 us call whose EXIT carries one DATA value */
#define CALL_DATA(T, F, AT, REGS, VALUE)                                                                         	do {                                                                                                     		entry(T, F, (AT) * us, REGS, 0, NULL, 0);                                                           		exit_rec(T, F, (AT) * us + us, 0);                                                                  		data_rec(T, F, fs[F].name, 1, 1, (uint64_t[]){VALUE}, NULL);                                        		exp_calls[F]++, exp_timed[F]++, exp_total[F] += us;                                                 	} while (0)
	CALL_DATA(&a, V_ALLOC, 10, ((uint64_t[6]){0x7ffc0000, 4096}), 0x7f0000000000ull);
	CALL_DATA(&a, V_GETCUR, 20, ((uint64_t[6]){0x7ffc0008}), 0xc1);
	call(&a, V_H2D, 30 * us, us, (uint64_t[6]){0x7f0000000000ull, 0x10000000, 1024}, 0, NULL, 0);
	CALL_DATA(&a, V_GETDEV, 40, ((uint64_t[6]){0x7ffc0010}), 3);
	call(&b, V_SETCUR, 50 * us, us, (uint64_t[6]){0xc1}, 0, NULL, 0);
	call(&b, V_LAUNCH, 60 * us, us, (uint64_t[6]){0xf00d, 1, 1, 1, 32, 1}, 5, (uint64_t[5]){1, 0, 0, 0x5000, 0}, 0);
	call(&b, V_SETCUR, 70 * us, us, (uint64_t[6]){0}, 0, NULL, 0);
	CALL_DATA(&b, V_ALLOC, 80, ((uint64_t[6]){0x7ffc0018, 8192}), 0x7f0000100000ull);
	CALL_DATA(&b, V_GETCUR, 90, ((uint64_t[6]){0x7ffc0020}), 0);
	call(&b, V_D2H, 100 * us, us, (uint64_t[6]){0x10000000, 0x7f0000000000ull, 512}, 0, NULL, 0);
	call(&c, V_ATTR, 110 * us, us, (uint64_t[6]){0x7ffc0028, 1, 99}, 0, NULL, 0);
	call(&c, V_ATTR, 120 * us, us, (uint64_t[6]){0x7ffc0030, 1, 0xffffffff00000002ull}, 0, NULL, 0);
	call(&c, V_FREE, 130 * us, us, (uint64_t[6]){0x7f0000000000ull}, 0, NULL, 0);
#undef CALL_DATA
	flush(&a);
	flush(&b);
	flush(&c);
	clock_block(200 * us);
	end_block(3);
	free(a.recs.p);
	free(b.recs.p);
	free(c.recs.p);
}

static void scenario_nocalls(void)
{
	static const char *const argv[] = {"./idle", NULL};
	static const struct fdef fs[] = {{"cuInit", 0}, {"cuGetErrorName", CUHOOK_REFUSED_TOO_SMALL}};
	file_header(99, argv, "/bin/idle");
	clock_block(0);
	lib_block(0, 0, "/usr/lib/libcuda.so.1", "");
	funcs_block(0, 0, fs, 2);
	clock_block(1000);
	end_block(0);
}


/* Everything a traced program names itself, with terminal escape sequences in it (a window
 * title, a screen clear, colours, a C1 CSI, a byte that is not UTF-8): the text report must show
 * each of them escaped. Two calls of cuInit, one of the oddly named function (returning an
 * error), one nested in it. */
static void scenario_hostile(void)
{
	static const char *const argv[] = {"./\x1b]0;pwned\x07", "--x=\x1b[2J", NULL};
	static const struct fdef fs[] = {
		{"cuInit", 0}, {"cuEvil\x1b[31m", 0}, {"cuRefused\x1b[5m", CUHOOK_REFUSED_TOO_SMALL}};
	ftab = fs;
	nftab = 3;
	file_header(66, argv, "/tmp/\x1b]0;pwned\x07");
	clock_block(0);
	lib_block(0, 0, "/usr/lib/libcuda.so.1\xc2\x9b" "1m", "580\x1b[8m");
	funcs_block(0, 0, fs, 3);
	thread_block(6600, "\x1b]0;pwned\x07");
	thread_block(6601, "w\xff\x1b[2K");
	note_block(1, "a note \x1b[1mfrom the trace\x1b[0m");
	struct thr m = {.tid = 6600}, w = {.tid = 6601};
	call(&m, 0, 1000, 500, NULL, 0, NULL, 0);
	entry(&w, 1, 2000, NULL, 0, NULL, 0);
	call(&w, 0, 2100, 100, NULL, 0, NULL, 0);
	exit_rec(&w, 1, 3000, 999);
	exp_calls[1]++;
	call(&m, 0, 4000, 500, NULL, 0, NULL, 0);
	flush(&m);
	flush(&w);
	/* GPU records named by the program too: a kernel whose demangled name holds a C1 CSI, one
	 * that does not demangle and holds escapes, CUPTI's path */
	gpu_session(CUHOOK_GPU_STARTED, 500, 130001, "/tmp/\x1b]0;cupti\x07", 0);
	gpu_name(1, "_Z4k\xc2\x9b" "1v");
	gpu_name(2, "evil\x1b]0;x\x07\xff");
	gpu_api(1, 6600, 0, 0, 2500); /* the first cuInit, 1000..1500 */
	gpu_kernel(1, 2000, 2500, 0, 7, 1, &(struct kdim){{1, 1, 1}, {1, 1, 1}, 0, 0, 1}, 0, 0);
	gpu_kernel(2, 3000, 3100, 0, 7, 2, &(struct kdim){{1, 1, 1}, {1, 1, 1}, 0, 0, 1}, 0, 0);
	gpu_flush();
	gpu_session(CUHOOK_GPU_STOPPED, 4800, 130001, "", 5);
	clock_block(5000);
	end_block(2);
	free(m.recs.p);
	free(w.recs.p);
	free(gpu_recs.p);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: gen_trace basic|big|kernels|nocalls|hot|hostile|gpu|ranks|memory|streams|devices OUT [--tsc] [--one-clock] [--no-end] "
		                "[--expect FILE] [--calls N] [--threads T] [--vary] [--count | --count-capture] [--iterations N] [--agent-regs] "
		                "[--v3-reserved] [--v5 | --v5-long-exits] [--tsc-start TSC] [--end-unreported N] [--gpu-session no-cupti|other-user] [--lazy-first-launch] [--rank R --world W --steps S [--gpu] [--coll-mismatch S]]\n");
		return 2;
	}
	const char *scenario = argv[1], *out = argv[2], *expect = NULL;
	int one_clock = 0, no_end = 0;
	uint64_t ncalls = 1000000, iters = 24000;
	uint32_t nthreads = 4;
	unsigned rank = 0, world = 2, steps = 20;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--tsc"))
			use_tsc = 1;
		else if (!strcmp(argv[i], "--one-clock"))
			one_clock = 1;
		else if (!strcmp(argv[i], "--zero-call"))
			zero_call = 1;
		else if (!strcmp(argv[i], "--unfinished"))
			unfinished = 1;
		else if (!strcmp(argv[i], "--no-end"))
			no_end = 1;
		else if (!strcmp(argv[i], "--expect") && i + 1 < argc)
			expect = argv[++i];
		else if (!strcmp(argv[i], "--calls") && i + 1 < argc)
			ncalls = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--pid") && i + 1 < argc)
			pid_override = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--mono-offset") && i + 1 < argc)
			START_NS += strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--real-offset") && i + 1 < argc)
			START_REAL += strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--end-unreported") && i + 1 < argc)
			end_unreported = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--agent-regs"))
			regs_mode = REGS_AGENT;
		else if (!strcmp(argv[i], "--v3-reserved"))
			regs_mode = REGS_V3_RESERVED;
		else if (!strcmp(argv[i], "--vary"))
			big_vary = 1;
		else if (!strcmp(argv[i], "--v5"))
			v5 = 1;
		else if (!strcmp(argv[i], "--v5-long-exits"))
			v5 = v5_long_exits = 1;
		else if (!strcmp(argv[i], "--tsc-start") && i + 1 < argc)
			START_TSC = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--lazy-first-launch"))
			lazy_first_launch = 1;
		else if (!strcmp(argv[i], "--gpu-session") && i + 1 < argc &&
		         (!strcmp(argv[i + 1], "no-cupti") || !strcmp(argv[i + 1], "other-user")))
			gpu_refused = argv[++i];
		else if (!strcmp(argv[i], "--count"))
			hot_count = 1;
		else if (!strcmp(argv[i], "--count-capture"))
			hot_count = 2;
		else if (!strcmp(argv[i], "--iterations") && i + 1 < argc)
			iters = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--rank") && i + 1 < argc)
			rank = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--world") && i + 1 < argc)
			world = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--gpu"))
			ranks_gpu = 1;
		else if (!strcmp(argv[i], "--coll-mismatch") && i + 1 < argc)
			ranks_mismatch = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = (uint32_t)strtoul(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "gen_trace: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (!nthreads)
		nthreads = 1;
	if (!strcmp(scenario, "basic"))
		scenario_basic(one_clock, no_end, expect);
	else if (!strcmp(scenario, "big"))
		scenario_big(ncalls, nthreads, expect);
	else if (!strcmp(scenario, "nocalls"))
		scenario_nocalls();
	else if (!strcmp(scenario, "kernels"))
		scenario_kernels(expect);
	else if (!strcmp(scenario, "names"))
		scenario_names();
	else if (!strcmp(scenario, "hot"))
		scenario_hot(iters, expect);
	else if (!strcmp(scenario, "hostile"))
		scenario_hostile();
	else if (!strcmp(scenario, "gpu"))
		scenario_gpu();
	else if (!strcmp(scenario, "memory"))
		scenario_memory();
	else if (!strcmp(scenario, "streams"))
		scenario_streams();
	else if (!strcmp(scenario, "devices"))
		scenario_devices();
	else if (!strcmp(scenario, "ranks") && rank < world && world <= 8)
		scenario_ranks(rank, world, steps, expect);
	else {
		fprintf(stderr, "gen_trace: unknown scenario %s\n", scenario);
		return 2;
	}
	FILE *f = fopen(out, "wb");
	if (!f || fwrite(file.p, 1, file.len, f) != file.len || fclose(f)) {
		perror(out);
		return 1;
	}
	free(file.p);
	return 0;
}
