/* trace.bin reader: see trace_reader.h for what it produces and docs/trace-format.md for the
 * format.
 *
 * Two passes over the blocks:
 *  1. walk every block header, validating it against the bytes that remain, and decode the small
 *     metadata blocks (CLOCK, LIB, FUNCS, THREAD, NOTE, END). The walk stops at the first
 *     damaged or cut block: that offset is where the readable prefix ends. Knowing every CLOCK
 *     block before any event lets pass 2 convert timestamps on the fly with the line through the
 *     first and last CLOCK pair, and knowing every FUNCS block makes an event that names a
 *     function defined later (which the writer never does) merely tolerated, not an error.
 *  2. walk the same, already validated, prefix again and decode the EVENTS blocks: the hot loop.
 *     No allocation per event: calls and DATA records go into arrays grown geometrically, and
 *     argument values stay in the bytes read (the call keeps a pointer to its ENTRY record's). A
 *     record of any version is decoded into one form (struct call_rec) that one piece of code
 *     matches (match_entry, match_exit, match_other).
 *     COUNTS blocks (version 3) are decoded in this pass too, where the clock and every function
 *     are known: their times convert like events' and their ids are checked like events'. So are
 *     GPU_SESSION and GPU blocks (trace_gpu.c); once every call is matched, the GPU records are
 *     linked to the calls that submitted them (tr_gpu_link).
 *
 * The bytes come from trace_input.c, read into memory of the trace's own as the passes ask for
 * them: the header alone first, then block by block, never far past what has been validated. */
#include "trace_reader.h"

#include "decoders.h"
#include "put.h"
#include "trace_input.h"
#include "trace_reader_impl.h"
#include "trace_stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A hostile FUNCS block could name id 4e9: refuse ids beyond this instead of allocating for them.
 * libcuda exports ~1000 functions; a process patching several libraries stays far below. */
#define TR_MAX_FUNC_ID (1u << 20)

/* The newest version read: readers learnt version 5 before the agent writes it. */
#define TR_VERSION_MAX                                                                             \
	(CUHOOK_TRACE_VERSION > CUHOOK_TRACE_VERSION_REC5 ? CUHOOK_TRACE_VERSION : CUHOOK_TRACE_VERSION_REC5)

/* The agent writes a header of at most 8 KiB (a 4 KiB command line, a PATH_MAX executable); a
 * header_size beyond this is corrupt, and refusing it keeps a hostile header from making the
 * reader read gigabytes as a "command line". */
#define TR_MAX_HEADER_BYTES (1u << 20)

_Static_assert(sizeof(struct cuhook_file_header) == 72, "file header layout");
_Static_assert(sizeof(struct cuhook_block) == 16, "block header layout");
_Static_assert(sizeof(struct cuhook_rec_entry) == 24, "entry layout");
_Static_assert(sizeof(struct cuhook_rec_exit) == 32, "exit layout");
_Static_assert(sizeof(struct cuhook_rec_data) == 16, "data layout");
_Static_assert(sizeof(struct cuhook_rec_drop) == 24, "drop layout");
_Static_assert(sizeof(struct cuhook_func_entry) == 24, "func entry layout");
_Static_assert(sizeof(struct cuhook_counts_block) == 16, "counts block layout");
_Static_assert(sizeof(struct cuhook_rec5_entry_info) == 8, "ENTRY5_X info layout");
/* A call is kept per ENTRY record: it must not grow (a 10 M-call trace holds 10 M of them). */
_Static_assert(sizeof(struct tr_call) == 56, "call size");
_Static_assert(sizeof(struct cuhook_count_entry) == 16, "count entry layout");

/* ---- small helpers ------------------------------------------------------------------------- */

static void set_truncated(struct tr_trace *t, uint64_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_truncated(struct tr_trace *t, uint64_t off, const char *fmt, ...)
{
	t->truncated = 1;
	t->truncated_at = off;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->truncated_reason, sizeof(t->truncated_reason), fmt, ap);
	va_end(ap);
}

static void fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ---- threads ------------------------------------------------------------------------------- */

static uint32_t tid_slot(uint32_t tid, uint32_t mask)
{
	return (tid * 2654435761u) & mask;
}

/* Index of thread `tid`, created on first sight. TR_NONE when out of memory. */
static uint32_t thread_get(struct tr_trace *t, uint32_t tid)
{
	if (t->tid_hash_cap_) {
		uint32_t mask = t->tid_hash_cap_ - 1;
		for (uint32_t s = tid_slot(tid, mask);; s = (s + 1) & mask) {
			uint32_t v = t->tid_hash_[s];
			if (!v)
				break;
			if (t->threads[v - 1].tid == tid)
				return v - 1;
		}
	}
	if ((uint64_t)(t->nthreads + 1) * 2 > t->tid_hash_cap_) {
		uint32_t ncap = t->tid_hash_cap_ ? t->tid_hash_cap_ * 2 : 64;
		uint32_t *h = calloc(ncap, sizeof(*h));
		if (!h)
			return TR_NONE;
		for (uint32_t i = 0; i < t->nthreads; i++) {
			uint32_t s = tid_slot(t->threads[i].tid, ncap - 1);
			while (h[s])
				s = (s + 1) & (ncap - 1);
			h[s] = i + 1;
		}
		free(t->tid_hash_);
		t->tid_hash_ = h;
		t->tid_hash_cap_ = ncap;
	}
	if (tr_grow((void **)&t->threads, &t->threads_cap_, t->nthreads + 1, sizeof(*t->threads)))
		return TR_NONE;
	uint32_t idx = t->nthreads++;
	struct tr_thread *th = &t->threads[idx];
	memset(th, 0, sizeof(*th));
	th->tid = tid;
	th->last_entry_ = th->last_exit_ = TR_NONE;
	uint32_t s = tid_slot(tid, t->tid_hash_cap_ - 1);
	while (t->tid_hash_[s])
		s = (s + 1) & (t->tid_hash_cap_ - 1);
	t->tid_hash_[s] = idx + 1;
	return idx;
}

/* ---- file header --------------------------------------------------------------------------- */

/* The file header is read alone, and checked, before anything else is read. */
static int parse_header(struct tr_trace *t, struct tr_input *in, char *err, size_t errlen)
{
	const uint8_t *m = tr_input_peek(in, 0, sizeof(struct cuhook_file_header), 0);
	size_t size = sizeof(struct cuhook_file_header);
	if (!m && !in->oom) { /* shorter than a header: what there is */
		size = (size_t)tr_input_avail(in);
		m = size ? tr_input_peek(in, 0, size, 0) : NULL;
	}
	if (in->oom)
		goto oom;
	if (in->read_errno) {
		fail(err, errlen, "%s: %s", t->path, strerror(in->read_errno));
		return -1;
	}
	if (size == 0 || !m) {
		fail(err, errlen, "%s: empty file (the traced process wrote nothing)", t->path);
		return -1;
	}
	if (memcmp(m, CUHOOK_TRACE_MAGIC, size < 8 ? size : 8) != 0) {
		fail(err, errlen, "%s: not a cuhook trace (bad magic)", t->path);
		return -1;
	}
	if (size < 12) { /* the start of a trace, cut */
		fail(err, errlen, "%s: truncated file header (%zu bytes)", t->path, size);
		return -1;
	}
	uint32_t version;
	memcpy(&version, m + 8, 4);
	t->version = version;
	if (version < CUHOOK_TRACE_VERSION_MIN || version > TR_VERSION_MAX) {
		fail(err, errlen, "%s: unsupported trace version %u (this cuhook reads versions %u to %u)",
		     t->path, version, CUHOOK_TRACE_VERSION_MIN, TR_VERSION_MAX);
		return -1;
	}
	if (size < sizeof(struct cuhook_file_header)) {
		fail(err, errlen, "%s: truncated file header (%zu of %zu bytes)", t->path, size,
		     sizeof(struct cuhook_file_header));
		return -1;
	}
	const struct cuhook_file_header *h = (const void *)m;
	uint64_t need = sizeof(*h) + (uint64_t)h->cmdline_len + h->exe_len;
	if (h->header_size < need || h->header_size % 8) {
		fail(err, errlen, "%s: corrupt file header (header_size %u, strings need %llu)", t->path,
		     h->header_size, (unsigned long long)need);
		return -1;
	}
	if (h->header_size > TR_MAX_HEADER_BYTES) {
		fail(err, errlen, "%s: corrupt file header (header_size %u, more than the %u bytes a header "
		     "can have)", t->path, h->header_size, TR_MAX_HEADER_BYTES);
		return -1;
	}
	uint32_t header_size = h->header_size;
	h = (const void *)tr_input_peek(in, 0, header_size, 0);
	if (in->oom)
		goto oom;
	if (!h) {
		fail(err, errlen, "%s: truncated file header (%llu of %u bytes)", t->path,
		     (unsigned long long)tr_input_avail(in), header_size);
		return -1;
	}
	t->header_size_ = header_size;
	if (h->clock_source > CUHOOK_CLOCK_MONOTONIC) {
		fail(err, errlen, "%s: corrupt file header (unknown clock source %u)", t->path, h->clock_source);
		return -1;
	}
	t->pid = h->pid;
	t->ppid = h->ppid;
	t->clock_source = h->clock_source;
	t->file_flags = h->flags;
	t->buffer_bytes = h->buffer_bytes;
	t->start_realtime_ns = h->start_realtime_ns;
	t->start_monotonic_ns = h->start_monotonic_ns;
	t->start_tsc = h->start_tsc;

	/* argv: NUL-separated, like /proc/PID/cmdline; a final NUL does not start another arg. */
	const char *cl = (const char *)(h + 1);
	uint32_t n = h->cmdline_len, argc = 0;
	for (uint32_t i = 0; i < n; i++)
		if (cl[i] == 0 || i == n - 1)
			argc++;
	t->argv = calloc((size_t)argc + 1, sizeof(char *));
	char *joined = calloc((size_t)n + 1, 1);
	if (!t->argv || !joined) {
		free(joined);
		goto oom;
	}
	for (uint32_t i = 0, start = 0; i < n; i++) {
		if (cl[i] == 0 || i == n - 1) {
			uint32_t end = cl[i] == 0 ? i : i + 1;
			t->argv[t->argc++] = tr_arena_strndup(t, cl + start, end - start);
			start = i + 1;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		joined[i] = cl[i] == 0 ? ' ' : cl[i];
	while (n && joined[n - 1] == ' ')
		joined[--n] = 0;
	t->cmdline = tr_arena_strndup(t, joined, n);
	free(joined);
	t->exe = tr_arena_strndup(t, cl + h->cmdline_len, h->exe_len);
	for (uint32_t i = 0; i < t->argc; i++)
		if (!t->argv[i])
			t->cmdline = NULL;
	if (!t->cmdline || !t->exe)
		goto oom;
	return 0;
oom:
	fail(err, errlen, "%s: out of memory", t->path);
	return -1;
}

/* ---- metadata blocks (pass 1) -------------------------------------------------------------- */

/* Each returns 0, or -1 only when out of memory. Corrupt content is counted, not fatal: the
 * block boundary is intact, so the next block can still be read. */

static int block_lib(struct tr_trace *t, const uint8_t *p, uint32_t size)
{
	const struct cuhook_lib_block *b = (const void *)p;
	if (size < sizeof(*b) || (uint64_t)b->path_len + b->version_len > size - sizeof(*b)) {
		tr_add_error(t, "corrupt LIB block (%u bytes)", size);
		return 0;
	}
	if (tr_grow((void **)&t->libs, &t->libs_cap_, t->nlibs + 1, sizeof(*t->libs)))
		return -1;
	struct tr_lib *l = &t->libs[t->nlibs];
	l->id = b->lib_id;
	l->flags = b->flags;
	l->base = b->base;
	l->path = tr_arena_strndup(t, b + 1, b->path_len);
	l->version = tr_arena_strndup(t, (const char *)(b + 1) + b->path_len, b->version_len);
	if (!l->path || !l->version)
		return -1;
	t->nlibs++;
	return 0;
}

static int block_funcs(struct tr_trace *t, const uint8_t *p, uint32_t size)
{
	const struct cuhook_funcs_block *b = (const void *)p;
	if (size < sizeof(*b)) {
		tr_add_error(t, "corrupt FUNCS block (%u bytes)", size);
		return 0;
	}
	if (b->first_id >= TR_MAX_FUNC_ID || b->count > TR_MAX_FUNC_ID - b->first_id) {
		tr_add_error(t, "FUNCS block with ids %u..+%u beyond the supported %u", b->first_id, b->count,
		          TR_MAX_FUNC_ID);
		return 0;
	}
	const uint8_t *q = p + sizeof(*b), *end = p + size;
	for (uint32_t i = 0; i < b->count; i++) {
		const struct cuhook_func_entry *e = (const void *)q;
		if ((size_t)(end - q) < sizeof(*e) ||
		    CUHOOK_ALIGN8(sizeof(*e) + e->name_len) > (size_t)(end - q)) {
			tr_add_error(t, "corrupt FUNCS block: entry %u of %u runs past the block", i, b->count);
			return 0;
		}
		uint32_t id = b->first_id + i;
		if (id >= t->nfuncs) {
			if (tr_grow((void **)&t->funcs, &t->funcs_cap_, id + 1, sizeof(*t->funcs)))
				return -1;
			memset(t->funcs + t->nfuncs, 0, (size_t)(id + 1 - t->nfuncs) * sizeof(*t->funcs));
			for (uint32_t j = t->nfuncs; j <= id; j++)
				t->funcs[j].name = "";
			t->nfuncs = id + 1;
		}
		struct tr_func *f = &t->funcs[id];
		if (f->defined)
			tr_add_error(t, "function id %u defined twice", id);
		f->name = tr_arena_strndup(t, e + 1, e->name_len);
		if (!f->name)
			return -1;
		f->offset = e->offset;
		f->size = e->size;
		f->lib_id = b->lib_id;
		f->status = e->status;
		f->patch_len = e->patch_len;
		f->decoder = (uint16_t)cuhook_decoder_find(f->name);
		f->defined = 1;
		if (e->status >= CUHOOK_STATUS_COUNT)
			tr_add_error(t, "function %s: unknown patch status %u", f->name, e->status);
		/* Before version 5 these were a reserved word; an ENTRY5 of a function whose counts are
		 * impossible cannot be sized (block_events skips the rest of its block). */
		f->nregs = t->version >= CUHOOK_TRACE_VERSION_REC5 ? e->nregs : 0;
		f->nstack = t->version >= CUHOOK_TRACE_VERSION_REC5 ? e->nstack : 0;
		if (f->nregs > 6 || f->nstack > CUHOOK_MAX_STACK_ARGS || (f->nstack && f->nregs != 6)) {
			tr_add_error(t, "function %s: impossible argument counts (%u registers, %u stack slots)", f->name,
			             f->nregs, f->nstack);
			f->nregs = TR_FUNC_ARGS_BAD;
			f->nstack = 0;
		}
		q += CUHOOK_ALIGN8(sizeof(*e) + e->name_len);
	}
	return 0;
}

static int block_thread(struct tr_trace *t, const uint8_t *p, uint32_t size)
{
	const struct cuhook_thread_block *b = (const void *)p;
	if (size < sizeof(*b)) {
		tr_add_error(t, "corrupt THREAD block (%u bytes)", size);
		return 0;
	}
	uint32_t idx = thread_get(t, b->tid);
	if (idx == TR_NONE)
		return -1;
	char *name = t->threads[idx].name;
	size_t i;
	for (i = 0; i < 16 && b->name[i]; i++) {
		unsigned char c = (unsigned char)b->name[i];
		name[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	name[i] = 0;
	return 0;
}

static int block_note(struct tr_trace *t, const uint8_t *p, uint32_t size)
{
	const struct cuhook_note_block *b = (const void *)p;
	if (size < sizeof(*b) || b->len > size - sizeof(*b)) {
		tr_add_error(t, "corrupt NOTE block (%u bytes)", size);
		return 0;
	}
	if (tr_grow((void **)&t->notes, &t->notes_cap_, t->nnotes + 1, sizeof(*t->notes)))
		return -1;
	t->notes[t->nnotes].level = b->level;
	t->notes[t->nnotes].text = tr_arena_strndup(t, b + 1, b->len);
	if (!t->notes[t->nnotes].text)
		return -1;
	t->nnotes++;
	return 0;
}

/* KNAMES: entries of a header and a name each; a damaged one ends the block's reading. */
static int block_knames(struct tr_trace *t, const uint8_t *p, uint32_t size)
{
	const struct cuhook_knames_block *b = (const void *)p;
	if (size < sizeof(*b)) {
		tr_add_error(t, "corrupt KNAMES block (%u bytes)", size);
		return 0;
	}
	size_t off = sizeof(*b);
	for (uint32_t i = 0; i < b->count; i++) {
		struct cuhook_kname_entry e;
		if (size - off < sizeof(e)) {
			tr_add_error(t, "corrupt KNAMES block: entry %u of %u cut", i, b->count);
			return 0;
		}
		memcpy(&e, p + off, sizeof(e));
		size_t len = CUHOOK_ALIGN8(sizeof(e) + e.name_len);
		if (len > size - off || !e.handle) {
			tr_add_error(t, "corrupt KNAMES block: entry %u of %u runs past it", i, b->count);
			return 0;
		}
		if (tr_grow((void **)&t->knames, &t->knames_cap_, t->nknames + 1, sizeof(*t->knames)))
			return -1;
		struct tr_kname *k = &t->knames[t->nknames];
		k->handle = e.handle;
		k->len = e.name_len;
		k->kind = e.kind;
		k->name = tr_arena_strndup(t, p + off + sizeof(e), e.name_len);
		if (!k->name)
			return -1;
		t->nknames++;
		off += len;
	}
	if (off != size)
		tr_add_error(t, "KNAMES block: %zu bytes after its %u entries", size - off, b->count);
	return 0;
}

/* GRAPHS: an entry and its kernel nodes each. */
static int block_graphs(struct tr_trace *t, const uint8_t *p, uint32_t size)
{
	const struct cuhook_graphs_block *b = (const void *)p;
	if (size < sizeof(*b)) {
		tr_add_error(t, "corrupt GRAPHS block (%u bytes)", size);
		return 0;
	}
	size_t off = sizeof(*b);
	for (uint32_t i = 0; i < b->count; i++) {
		struct cuhook_graph_entry e;
		if (size - off < sizeof(e)) {
			tr_add_error(t, "corrupt GRAPHS block: entry %u of %u cut", i, b->count);
			return 0;
		}
		memcpy(&e, p + off, sizeof(e));
		off += sizeof(e);
		if (e.nkernels > (size - off) / sizeof(struct cuhook_graph_kernel) || e.nkernels > e.nnodes) {
			tr_add_error(t, "corrupt GRAPHS block: entry %u of %u: %u kernels", i, b->count, e.nkernels);
			return 0;
		}
		if (tr_grow((void **)&t->graphs, &t->graphs_cap_, t->ngraphs + 1, sizeof(*t->graphs)))
			return -1;
		struct tr_graph *g = &t->graphs[t->ngraphs];
		size_t kb = (size_t)e.nkernels * sizeof(struct cuhook_graph_kernel);
		struct cuhook_graph_kernel *k = NULL;
		if (kb) {
			if (!(k = malloc(kb)))
				return -1;
			memcpy(k, p + off, kb);
		}
		*g = (struct tr_graph){e.exec, e.graph, e.nnodes, e.nkernels, e.flags, k};
		t->ngraphs++;
		off += kb;
	}
	if (off != size)
		tr_add_error(t, "GRAPHS block: %zu bytes after its %u entries", size - off, b->count);
	return 0;
}

struct clock_pairs {
	struct cuhook_clock_block first, last;
};

static void setup_clock(struct tr_trace *t, const struct clock_pairs *cp)
{
	t->clock_guessed = 0;
	if (t->clock_source == CUHOOK_CLOCK_MONOTONIC) {
		t->clock_tsc0 = 0;
		t->clock_ns0 = 0;
		t->ns_per_tick = 1.0;
		return;
	}
	/* The line through the first and the last CLOCK pair; with only one, the header's start
	 * pair stands in for the first. */
	uint64_t tsc0 = cp->first.tsc, tsc1 = cp->last.tsc;
	uint64_t ns0 = cp->first.monotonic_ns, ns1 = cp->last.monotonic_ns;
	if (t->nclock < 2 || tsc0 == tsc1) {
		tsc0 = t->start_tsc;
		ns0 = t->start_monotonic_ns;
	}
	if (t->nclock >= 1 && tsc1 > tsc0 && ns1 > ns0 && ns0 <= (uint64_t)TR_NS_LIMIT) {
		t->clock_tsc0 = tsc0;
		t->clock_ns0 = (int64_t)ns0;
		t->ns_per_tick = (double)(ns1 - ns0) / (double)(tsc1 - tsc0);
		return;
	}
	/* No usable pair: keep times relative to the start pair and count ticks as nanoseconds,
	 * and say so (the report prints a warning). */
	t->clock_guessed = 1;
	t->clock_tsc0 = t->start_tsc;
	t->clock_ns0 = t->start_monotonic_ns > (uint64_t)TR_NS_LIMIT ? 0 : (int64_t)t->start_monotonic_ns;
	t->ns_per_tick = 1.0;
}

/* realtime - monotonic from a pair sampled together: the header's, else the first CLOCK block's.
 * Both values must be within TR_NS_LIMIT, so the offset fits an int64_t with room to spare. */
static void setup_realtime(struct tr_trace *t, const struct clock_pairs *cp)
{
	const uint64_t lim = (uint64_t)TR_NS_LIMIT;
	t->has_realtime = 0;
	t->realtime_offset_ns = 0;
	if (t->start_realtime_ns && t->start_realtime_ns <= lim && t->start_monotonic_ns <= lim) {
		t->has_realtime = 1;
		t->realtime_offset_ns = (int64_t)t->start_realtime_ns - (int64_t)t->start_monotonic_ns;
	} else if (t->nclock && cp->first.realtime_ns && cp->first.realtime_ns <= lim &&
	           cp->first.monotonic_ns <= lim) {
		t->has_realtime = 1;
		t->realtime_offset_ns = (int64_t)cp->first.realtime_ns - (int64_t)cp->first.monotonic_ns;
	}
}

/* tr_tsc_to_ns (trace_data.h), inlined in the event loop */
static inline int64_t tsc_to_ns(const struct tr_trace *t, uint64_t tsc)
{
	return tr_tsc_to_ns(t, tsc);
}

static const char *block_type_name(unsigned type)
{
	static const char *const names[] = {"?",   "CLOCK", "LIB",    "FUNCS",       "THREAD", "EVENTS",
	                                    "NOTE", "END",  "COUNTS", "GPU_SESSION", "GPU",
	                                    "STACKS", "PYFRAMES", "MAPS", "KNAMES", "GRAPHS"};
	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "unknown";
}

static int block_decoded_now(unsigned type)
{
	return type == CUHOOK_BLOCK_CLOCK || type == CUHOOK_BLOCK_LIB || type == CUHOOK_BLOCK_FUNCS ||
	       type == CUHOOK_BLOCK_THREAD || type == CUHOOK_BLOCK_NOTE || type == CUHOOK_BLOCK_END ||
	       type == CUHOOK_BLOCK_KNAMES || type == CUHOOK_BLOCK_GRAPHS;
}

/* Pass 1: each block header is read and checked before anything after it is read (a sequential
 * input reads the payloads too, a seekable one only those of metadata blocks). Returns the offset
 * where the readable prefix ends, or (uint64_t)-1 when out of memory. */
static uint64_t pass_blocks(struct tr_trace *t, struct tr_input *in, struct clock_pairs *cp)
{
	uint64_t off = t->header_size_;
	uint32_t expect_seq = 0;
	for (;;) {
		const struct cuhook_block *bp = (const void *)tr_input_peek(in, off, sizeof(*bp), 1);
		if (in->oom)
			return (uint64_t)-1;
		uint64_t size = tr_input_avail(in);
		if (!bp) {
			if (off >= size)
				break;
			set_truncated(t, off, "block header cut at offset %llu (%llu bytes remain)",
			              (unsigned long long)off, (unsigned long long)(size - off));
			return off;
		}
		const struct cuhook_block hdr = *bp, *b = &hdr; /* the next peek may move the bytes */
		if (b->magic != CUHOOK_BLOCK_MAGIC) {
			set_truncated(t, off, "bad block magic at offset %llu", (unsigned long long)off);
			return off;
		}
		if (b->size % 8 || b->size > CUHOOK_BLOCK_MAX_PAYLOAD) {
			set_truncated(t, off, "corrupt block header at offset %llu (payload size %u)",
			              (unsigned long long)off, b->size);
			return off;
		}
		/* The metadata is decoded now; EVENTS, COUNTS and GPU payloads wait for pass 2, and unknown
		 * blocks are skipped. */
		const uint8_t *p = NULL;
		int whole;
		if (block_decoded_now(b->type))
			whole = (p = tr_input_peek(in, off + sizeof(*b), b->size, 1)) != NULL;
		else
			whole = tr_input_reaches(in, off + sizeof(*b) + b->size);
		if (in->oom)
			return (uint64_t)-1;
		size = tr_input_avail(in);
		if (!whole) {
			set_truncated(t, off, "%s block at offset %llu cut: payload of %u bytes, %llu remain",
			              block_type_name(b->type), (unsigned long long)off, b->size,
			              (unsigned long long)(size - off - sizeof(*b)));
			return off;
		}
		if (b->seq != expect_seq) {
			t->seq_gaps++;
			tr_add_error(t, "block sequence gap at offset %llu: %u after %u (blocks lost)",
			          (unsigned long long)off, b->seq, expect_seq - 1);
		}
		expect_seq = b->seq + 1;
		t->nblocks++;
		int rc = 0;
		switch (b->type) {
		case CUHOOK_BLOCK_CLOCK:
			if (b->size < sizeof(struct cuhook_clock_block)) {
				tr_add_error(t, "corrupt CLOCK block (%u bytes)", b->size);
				break;
			}
			if (!t->nclock)
				memcpy(&cp->first, p, sizeof(cp->first));
			memcpy(&cp->last, p, sizeof(cp->last));
			t->nclock++;
			break;
		case CUHOOK_BLOCK_LIB:
			rc = block_lib(t, p, b->size);
			break;
		case CUHOOK_BLOCK_FUNCS:
			rc = block_funcs(t, p, b->size);
			break;
		case CUHOOK_BLOCK_THREAD:
			rc = block_thread(t, p, b->size);
			break;
		case CUHOOK_BLOCK_EVENTS:
			t->events_bytes_ += b->size; /* decoded by pass 2 */
			break;
		case CUHOOK_BLOCK_COUNTS:
		case CUHOOK_BLOCK_GPU_SESSION:
		case CUHOOK_BLOCK_GPU:
		case CUHOOK_BLOCK_STACKS:
		case CUHOOK_BLOCK_PYFRAMES:
		case CUHOOK_BLOCK_MAPS:
			break; /* decoded by pass 2, once the clock and every function are known (stacks: in
			          file order, where the MAPS in force and the ids defined so far are known) */
		case CUHOOK_BLOCK_NOTE:
			rc = block_note(t, p, b->size);
			break;
		case CUHOOK_BLOCK_KNAMES:
			rc = block_knames(t, p, b->size);
			break;
		case CUHOOK_BLOCK_GRAPHS:
			rc = block_graphs(t, p, b->size);
			break;
		case CUHOOK_BLOCK_END:
			if (b->size < sizeof(struct cuhook_end_block)) {
				tr_add_error(t, "corrupt END block (%u bytes)", b->size);
				break;
			}
			memcpy(&t->end, p, sizeof(t->end));
			t->has_end = 1;
			t->end_at_ = off;
			break;
		default:
			/* A newer writer's block type: its size is known, so skip it. */
			tr_add_error(t, "unknown block type %u at offset %llu skipped", b->type, (unsigned long long)off);
			break;
		}
		if (rc)
			return (uint64_t)-1;
		off += sizeof(*b) + b->size;
	}
	return off;
}

/* ---- events (pass 2) ----------------------------------------------------------------------- */

/* calls[] is sized once, before pass 2, for the most calls the EVENTS payload can hold (each
 * needs an ENTRY record: at least 24 bytes, 8 since version 5): no reallocation and copy while
 * decoding. A big
 * array is mmap'ed with transparent huge pages: only the pages actually written are committed,
 * and with 2 MB pages the first touch of 560 MB (10 M calls) costs hundreds of page faults
 * instead of 140000. */
static int reserve_calls(struct tr_trace *t)
{
	if (t->stream_)
		return 0; /* slots come as calls open (trace_stream.c) */
	uint64_t n = t->events_bytes_ / (t->version >= CUHOOK_TRACE_VERSION_REC5 ? 8 : sizeof(struct cuhook_rec_entry)) + 1;
	if (n > UINT32_MAX - 1)
		n = UINT32_MAX - 1;
	size_t bytes = (size_t)n * sizeof(*t->calls);
	if (bytes < (4u << 20)) {
		t->calls = malloc(bytes);
		if (!t->calls)
			return -1;
	} else {
		void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return -1;
		madvise(p, bytes, MADV_HUGEPAGE);
		t->calls = p;
		t->calls_bytes_ = bytes;
	}
	t->calls_cap_ = (uint32_t)n;
	return 0;
}

/* The call an ENTRY opens. Returns its index, TR_NONE when out of room (which the reservation
 * above rules out). */
static inline uint32_t new_call(struct tr_trace *t)
{
	if (t->stream_)
		return tr_stream_new_call(t);
	if (t->ncalls == t->calls_cap_)
		return TR_NONE;
	return t->ncalls++;
}

static inline int stack_push(struct tr_thread *th, uint32_t call)
{
	if (th->stack_len_ == th->stack_cap_ &&
	    tr_grow((void **)&th->stack_, &th->stack_cap_, th->stack_len_ + 1, sizeof(*th->stack_)))
		return -1;
	th->stack_[th->stack_len_++] = call;
	return 0;
}

/* Pop the calls of the thread's stack deeper than (or, with `ge`, as deep as) `depth`: their
 * EXITs never came. */
static inline void stack_unwind(struct tr_trace *t, struct tr_thread *th, uint16_t depth, int ge)
{
	while (th->stack_len_) {
		struct tr_call *c = &t->calls[th->stack_[th->stack_len_ - 1]];
		if (ge ? c->depth < depth : c->depth <= depth)
			break;
		c->flags |= TR_CALL_UNFINISHED;
		t->lost_exits++;
		th->stack_len_--;
		if (t->stream_)
			tr_stream_done(t, th->stack_[th->stack_len_]);
	}
}

enum { LAST_NONE = 0, LAST_ENTRY = 1, LAST_EXIT = 2, LAST_SKIPPED = 3 };

static inline void note_time(struct tr_trace *t, int64_t ns)
{
	if (ns < t->first_ns)
		t->first_ns = ns;
	if (ns > t->last_ns)
		t->last_ns = ns;
}

/* Decoded values of call ci: `nvalues` values, then str_len string bytes, in the bytes read. */
static int add_data(struct tr_trace *t, uint32_t ci, uint32_t func, int at_exit, unsigned nvalues,
                    const uint64_t *values, unsigned str_len)
{
	if (t->ndata == t->data_cap_ &&
	    tr_grow((void **)&t->data, &t->data_cap_, t->ndata + 1, sizeof(*t->data)))
		return -1;
	struct tr_data *td = &t->data[t->ndata++];
	td->call = ci;
	td->decoder = t->funcs[func].decoder;
	td->at_exit = at_exit ? 1 : 0;
	td->nvalues = (uint8_t)nvalues;
	td->values = values;
	td->str = (const char *)(values + nvalues);
	td->str_len = (uint16_t)str_len;
	t->calls[ci].ndata++;
	return 0;
}

/* 1, counted as an error, when no FUNCS block defined id `func`; the first one in the file gets
 * a message saying which record (`what`) named it. */
static inline int unknown_func(struct tr_trace *t, uint32_t func, const char *what)
{
	if (func < t->nfuncs && t->funcs[func].defined)
		return 0;
	t->unknown_funcs++;
	if (t->unknown_funcs == 1)
		tr_add_error(t, "%s of unknown function id %u", what, func);
	else
		t->errors++;
	return 1;
}

/* A STACK record: the stack of the call whose ENTRY came right before it on the thread (the
 * decoding of the stack tables is trace_stacks.c's). It leaves the thread's last record as it
 * was, so a DATA record read at entry still finds its call. Returns 0, or -1 when out of memory. */
static int rec_stack(struct tr_trace *t, struct tr_thread *th, const uint8_t *q)
{
	const struct cuhook_rec_stack *s = (const void *)q;
	if (s->h.size < sizeof(*s)) {
		t->bad_records++;
		tr_add_error(t, "corrupt STACK record (size %u)", s->h.size);
		return 0;
	}
	if (th->last_rec_ == LAST_SKIPPED)
		return 0; /* belongs to a record already counted as bad */
	if (th->last_rec_ != LAST_ENTRY || t->calls[th->last_entry_].func != s->h.func) {
		t->bad_records++;
		tr_add_error(t, "STACK record (tid %u, function id %u) not right after its call's ENTRY: skipped", th->tid,
		             s->h.func);
		return 0;
	}
	return tr_stack_record(t, th->last_entry_, s->stack);
}

/* What the matching below needs of an ENTRY or EXIT record, whatever the version that wrote it:
 * rec4_read() and rec5_read() decode a record into it and hand it to match_entry() or
 * match_exit(). DATA, DROP and STACK records have one layout in every version (match_other). */
struct call_rec {
	uint32_t func;
	uint16_t depth;
	uint8_t flags;          /* CUHOOK_RF_NO_EXIT (ENTRY), CUHOOK_RF_VALUE (EXIT) */
	uint8_t nregs, nstack;  /* ENTRY: args holds nregs registers, then nstack stack slots */
	uint64_t tsc;           /* the full timestamp */
	const uint64_t *args;   /* ENTRY */
	uint64_t ret;           /* EXIT */
	const uint64_t *value;  /* EXIT with CUHOOK_RF_VALUE: the decoded value */
};

/* Streaming: the thread's finished call waiting for its DATA records goes to the sink. */
static inline void stream_flush(struct tr_trace *t, struct tr_thread *th)
{
	if (th->pending_) {
		tr_stream_done(t, th->pending_ - 1);
		th->pending_ = 0;
	}
}

/* The two matchers are inlined into both decoders' loops: the reading speed of a big trace is
 * theirs (bench/run.sh). Return 0, or -1 when out of memory. */
static inline __attribute__((always_inline)) int match_entry(struct tr_trace *t, uint32_t ti, struct tr_thread *th,
                                                              const struct call_rec *e)
{
	if (t->stream_)
		stream_flush(t, th);
	if (unknown_func(t, e->func, "ENTRY")) {
		th->last_rec_ = LAST_SKIPPED;
		return 0;
	}
	stack_unwind(t, th, e->depth, 1);
	uint32_t ci = new_call(t);
	if (ci == TR_NONE)
		return -1;
	struct tr_call *c = &t->calls[ci];
	c->start_ns = c->end_ns = tsc_to_ns(t, e->tsc);
	c->ret = 0;
	c->args_ = e->args;
	c->func = e->func;
	c->thread = ti;
	c->parent = th->stack_len_ ? th->stack_[th->stack_len_ - 1] : TR_NONE;
	c->data_first = TR_NONE;
	c->depth = e->depth;
	c->ndata = 0;
	c->nregs_ = e->nregs;
	c->nstack_ = e->nstack;
	if (e->flags & CUHOOK_RF_NO_EXIT) {
		c->flags = TR_CALL_NO_EXIT;
	} else {
		c->flags = 0;
		if (stack_push(th, ci))
			return -1;
	}
	note_time(t, c->start_ns);
	th->ncalls += !t->stream_; /* streaming: calls[] holds none of them */
	th->events++;
	t->nentry++;
	th->last_entry_ = ci;
	th->last_rec_ = LAST_ENTRY;
	if (t->stream_) {
		tr_stream_opened(t, ci);
		if (c->flags & TR_CALL_NO_EXIT)
			th->pending_ = ci + 1; /* finished, but its DATA records are still to come */
	}
	return 0;
}

static inline __attribute__((always_inline)) int match_exit(struct tr_trace *t, struct tr_thread *th,
                                                             const struct call_rec *x)
{
	if (t->stream_)
		stream_flush(t, th);
	if (x->func >= t->nfuncs || !t->funcs[x->func].defined) {
		t->unknown_funcs++;
		t->errors++;
		th->last_rec_ = LAST_SKIPPED;
		return 0;
	}
	/* Back at depth x->depth: anything deeper lost its EXIT (dropped records). */
	stack_unwind(t, th, x->depth, 0);
	struct tr_call *c = th->stack_len_ ? &t->calls[th->stack_[th->stack_len_ - 1]] : NULL;
	if (!c || c->depth != x->depth || c->func != x->func) {
		/* Its ENTRY was dropped, or came before tracing started. */
		t->orphan_exits++;
		t->errors++;
		th->last_rec_ = LAST_SKIPPED;
		return 0;
	}
	th->stack_len_--;
	int64_t ns = tsc_to_ns(t, x->tsc);
	if (ns < c->start_ns || ns - c->start_ns > TR_MAX_DURATION_NS) {
		/* corrupt times: keep the call, without a duration that would poison sums */
		c->flags |= TR_CALL_CLAMPED;
		tr_add_error(t, "EXIT %s its ENTRY (tid %u, %s)", ns < c->start_ns ? "before" : "days after", th->tid,
		             tr_func_name(t, x->func));
		ns = c->start_ns;
	}
	c->end_ns = ns;
	c->ret = x->ret;
	note_time(t, ns);
	th->events++;
	t->nexit++;
	th->last_exit_ = (uint32_t)(c - t->calls);
	th->last_rec_ = LAST_EXIT;
	if (t->stream_) {
		/* handed over at the thread's next ENTRY or EXIT: DATA records after the EXIT are
		 * checked against it as in a whole read */
		th->pending_ = th->last_exit_ + 1;
		if (x->flags & CUHOOK_RF_VALUE) {
			t->ndata_recs++;
			if (tr_stream_data(t, th->last_exit_, x->func, 1, 1, x->value, 0))
				return -1;
		}
		return 0;
	}
	if (x->flags & CUHOOK_RF_VALUE) {
		/* The same as a DATA record of one value after this EXIT. */
		t->ndata_recs++;
		if (add_data(t, th->last_exit_, x->func, 1, 1, x->value, 0))
			return -1;
	}
	return 0;
}

/* A DATA, DROP or STACK record (struct cuhook_rec header, `size` bytes, all readable), or one of
 * a type no version defines. Returns 0, or -1 when out of memory. */
static int match_other(struct tr_trace *t, struct tr_thread *th, unsigned type, const uint8_t *q, uint32_t size)
{
	const struct cuhook_rec *r = (const void *)q;
	switch (type) {
	case CUHOOK_REC_DATA: {
		const struct cuhook_rec_data *d = (const void *)q;
		t->ndata_recs++;
		if (size < sizeof(*d) || sizeof(*d) + 8u * d->nvalues + (uint64_t)d->str_len > size) {
			t->bad_records++;
			tr_add_error(t, "corrupt DATA record (size %u)", size);
			return 0;
		}
		uint32_t ci = TR_NONE;
		if (d->at_exit && th->last_rec_ == LAST_EXIT)
			ci = th->last_exit_;
		else if (!d->at_exit && th->last_rec_ == LAST_ENTRY)
			ci = th->last_entry_;
		else if (th->last_rec_ == LAST_SKIPPED)
			return 0; /* belongs to a record already counted as bad */
		if (ci == TR_NONE || t->calls[ci].func != r->func || t->calls[ci].ndata == UINT8_MAX) {
			t->orphan_data++;
			t->errors++;
			return 0;
		}
		if (t->stream_) /* kept with its call (open, or pending) until it is handed over */
			return tr_stream_data(t, ci, r->func, d->at_exit, d->nvalues, (const uint64_t *)(d + 1), d->str_len);
		return add_data(t, ci, r->func, d->at_exit, d->nvalues, (const uint64_t *)(d + 1), d->str_len);
	}
	case CUHOOK_REC_DROP: {
		const struct cuhook_rec_drop *dr = (const void *)q;
		if (size < sizeof(*dr)) {
			t->bad_records++;
			tr_add_error(t, "corrupt DROP record (size %u)", size);
			return 0;
		}
		t->ndrop_recs++;
		th->dropped += dr->count;
		t->dropped += dr->count;
		th->last_rec_ = LAST_NONE;
		return 0;
	}
	case CUHOOK_REC_STACK:
		if (t->stream_) {
			tr_stream_skips(t)->stack_recs++;
			return 0;
		}
		return rec_stack(t, th, q);
	default:
		t->bad_records++;
		tr_add_error(t, "unknown record type %u skipped", type);
		th->last_rec_ = LAST_SKIPPED;
		return 0;
	}
}

/* A record the rest of whose block cannot be read (its length is unknown or impossible). */
static void corrupt_rest(struct tr_trace *t, struct tr_thread *th, uint64_t off, uint32_t nrec, unsigned size,
                         size_t left)
{
	t->bad_records++;
	tr_add_error(t, "EVENTS block at offset %llu: corrupt record %u (size %u, %zu bytes left); "
	             "rest of the block skipped", (unsigned long long)off, nrec, size, left);
	th->last_rec_ = LAST_NONE;
}

/* Decode and match the record before version 5 (struct cuhook_rec header) at q, of which `left`
 * bytes are readable. Returns its size; 0 when its header is corrupt (counted: the rest of the
 * block is skipped); -1 when out of memory. */
static inline long rec4_read(struct tr_trace *t, uint32_t ti, struct tr_thread *th, const uint8_t *q, size_t left,
                             uint64_t off, uint32_t nrec)
{
	const struct cuhook_rec *r = (const void *)q;
	/* Every record needs a sane size before anything else is read: >= its 8-byte header, a
	 * multiple of 8 (so the loop always advances and stays aligned), inside the block. */
	if (left < sizeof(*r) || r->size < sizeof(*r) || r->size % 8 || r->size > left) {
		corrupt_rest(t, th, off, nrec, left < sizeof(*r) ? 0 : r->size, left);
		return 0;
	}
	switch (r->type) {
	case CUHOOK_REC_ENTRY: {
		const struct cuhook_rec_entry *e = (const void *)q;
		/* regs_omitted was a reserved byte before version 4, not always zeroed. */
		unsigned omitted = r->size < sizeof(*e) || t->version < 4 ? 0 : e->regs_omitted;
		unsigned nregs = omitted > 6 ? 0 : 6 - omitted;
		if (r->size < sizeof(*e) || e->nstack > CUHOOK_MAX_STACK_ARGS || omitted > 6 ||
		    r->size < CUHOOK_REC_ENTRY_SIZE(nregs, e->nstack)) {
			t->bad_records++;
			tr_add_error(t, "corrupt ENTRY record (size %u, nstack %u, registers %u)", r->size,
			             r->size < sizeof(*e) ? 0 : e->nstack, nregs);
			th->last_rec_ = LAST_SKIPPED;
			break;
		}
		const struct call_rec c = {.func = r->func, .depth = e->depth, .flags = r->flags, .nregs = (uint8_t)nregs,
		                           .nstack = e->nstack, .tsc = e->tsc, .args = e->regs};
		if (match_entry(t, ti, th, &c))
			return -1;
		break;
	}
	case CUHOOK_REC_EXIT: {
		const struct cuhook_rec_exit_value *x = (const void *)q;
		if (r->size < sizeof(x->x) || ((r->flags & CUHOOK_RF_VALUE) && r->size < sizeof(*x))) {
			t->bad_records++;
			tr_add_error(t, "corrupt EXIT record (size %u)", r->size);
			th->last_rec_ = LAST_SKIPPED;
			break;
		}
		const struct call_rec c = {.func = r->func, .depth = x->x.depth, .flags = r->flags, .tsc = x->x.tsc,
		                           .ret = x->x.ret, .value = &x->value};
		if (match_exit(t, th, &c))
			return -1;
		break;
	}
	case CUHOOK_REC_PAD:
		break;
	default:
		if (match_other(t, th, r->type, q, r->size))
			return -1;
		break;
	}
	return r->size;
}

/* Version 5: the epoch in force in the block being read. */
struct rec5_time {
	uint32_t epoch;
	int seen;               /* a TIME record came in this block */
};

/* Decode and match the version-5 record at q (trace_format.h, "version 5 records"), of which
 * `left` bytes are readable. Returns its size; 0 when it cannot be sized (counted: the rest of
 * the block is skipped); -1 when out of memory. */
static inline long rec5_read(struct tr_trace *t, uint32_t ti, struct tr_thread *th, struct rec5_time *tm,
                             const uint8_t *q, size_t left, uint64_t off, uint32_t nrec)
{
	const uint64_t *w = (const void *)q;
	if (left < 8) {
		corrupt_rest(t, th, off, nrec, 0, left);
		return 0;
	}
	const unsigned type = CUHOOK_REC5_TYPE(w[0]);
	if (type == CUHOOK_REC5_TIME) {
		tm->epoch = th->epoch_ = CUHOOK_REC5_TIME_EPOCH(w[0]);
		tm->seen = 1;
		return 8;
	}
	if (!tm->seen) {
		/* The writer starts every block with one; without it, go on with what the thread's
		 * previous block left in force (right unless the epoch changed in between). */
		tm->seen = 1;
		tr_add_error(t, "EVENTS block at offset %llu (tid %u) does not start with a TIME record: the "
		             "epoch of the thread's previous block used", (unsigned long long)off, th->tid);
	}
	const uint32_t func = CUHOOK_REC5_FUNC(w[0]);
	unsigned nargs = 0;
	if (type == CUHOOK_REC5_ENTRY) {
		/* Its length comes from its function's FUNCS entry: without a usable one, nothing after
		 * it in the block can be found. */
		if (unknown_func(t, func, "ENTRY") || t->funcs[func].nregs == TR_FUNC_ARGS_BAD) {
			corrupt_rest(t, th, off, nrec, 0, left);
			return 0;
		}
		nargs = t->funcs[func].nregs + t->funcs[func].nstack;
	}
	const uint32_t size = cuhook_rec5_size(w, left, nargs);
	if (!size) {
		int hdr = type == CUHOOK_REC_DATA || type == CUHOOK_REC_DROP || type == CUHOOK_REC_STACK;
		corrupt_rest(t, th, off, nrec, hdr ? (unsigned)((w[0] >> 16) & 0xffffu) : 0, left);
		return 0;
	}
	struct call_rec c = {.func = func, .depth = (uint16_t)CUHOOK_REC5_DEPTH(w[0]),
	                     .tsc = CUHOOK_REC5_TSC(w[0], tm->epoch)};
	switch (type) {
	case CUHOOK_REC5_ENTRY:
		c.nregs = t->funcs[func].nregs;
		c.nstack = t->funcs[func].nstack;
		c.args = w + 1;
		if (match_entry(t, ti, th, &c))
			return -1;
		break;
	case CUHOOK_REC5_ENTRY_X: {
		const struct cuhook_rec5_entry_info *i = (const void *)(w + 1);
		c.flags = i->flags;
		c.nregs = i->nregs;
		c.nstack = i->nstack;
		c.args = w + 2;
		if (match_entry(t, ti, th, &c))
			return -1;
		break;
	}
	case CUHOOK_REC5_EXIT:
	case CUHOOK_REC5_EXIT_VALUE:
		c.flags = type == CUHOOK_REC5_EXIT_VALUE ? CUHOOK_RF_VALUE : 0;
		c.ret = w[1];
		c.value = w + 2;
		if (match_exit(t, th, &c))
			return -1;
		break;
	case CUHOOK_REC5_EXIT_ZERO:
	case CUHOOK_REC5_EXIT_ZERO_VALUE: /* rax 0, not stored */
		c.flags = type == CUHOOK_REC5_EXIT_ZERO_VALUE ? CUHOOK_RF_VALUE : 0;
		c.value = w + 1;
		if (match_exit(t, th, &c))
			return -1;
		break;
	default: /* DATA, DROP, STACK: cuhook_rec5_size knows no other type */
		if (match_other(t, th, type, q, size))
			return -1;
		break;
	}
	return size;
}

/* Decode one EVENTS block. Returns 0, or -1 when out of memory. */
static int block_events(struct tr_trace *t, const uint8_t *p, uint32_t size, uint64_t off)
{
	const struct cuhook_events_block *eb = (const void *)p;
	if (size < sizeof(*eb)) {
		t->bad_records++;
		tr_add_error(t, "corrupt EVENTS block at offset %llu (%u bytes)", (unsigned long long)off, size);
		return 0;
	}
	uint32_t ti = thread_get(t, eb->tid);
	if (ti == TR_NONE)
		return -1;
	struct tr_thread *th = &t->threads[ti];
	const uint8_t *q = p + sizeof(*eb), *end = p + size;
	uint32_t nrec = 0;
	long n;
	/* A reader returning 0 counted a record that cannot be sized: the rest of the block is lost. */
	if (t->version >= CUHOOK_TRACE_VERSION_REC5) {
		struct rec5_time tm = {th->epoch_, 0};
		for (; q < end; q += n, nrec++)
			if ((n = rec5_read(t, ti, th, &tm, q, (size_t)(end - q), off, nrec)) <= 0)
				return (int)n;
		return 0; /* nrecords is 0: the writer copies records without counting them */
	}
	for (; q < end; q += n, nrec++)
		if ((n = rec4_read(t, ti, th, q, (size_t)(end - q), off, nrec)) <= 0)
			return (int)n;
	if (nrec != eb->nrecords)
		tr_add_error(t, "EVENTS block at offset %llu holds %u records, header says %u",
		             (unsigned long long)off, nrec, eb->nrecords);
	return 0;
}

/* Decode one COUNTS block: for one thread, calls of counted functions since its previous COUNTS
 * block. The entries must fill the payload exactly, else the whole block is skipped (its numbers
 * cannot be trusted); an entry naming an undefined function is skipped like an event would be.
 * Returns 0, or -1 when out of memory. */
static int block_counts(struct tr_trace *t, const uint8_t *p, uint32_t size, uint64_t off)
{
	const struct cuhook_counts_block *cb = (const void *)p;
	t->ncount_blocks++;
	if (size < sizeof(*cb) ||
	    (uint64_t)cb->count * sizeof(struct cuhook_count_entry) != (uint64_t)size - sizeof(*cb)) {
		t->bad_records++;
		tr_add_error(t, "corrupt COUNTS block at offset %llu (%u bytes, %u entries): skipped",
		          (unsigned long long)off, size, size < sizeof(*cb) ? 0 : cb->count);
		return 0;
	}
	uint32_t ti = thread_get(t, cb->tid);
	if (ti == TR_NONE)
		return -1;
	struct tr_thread *th = &t->threads[ti];
	const int64_t ns = tsc_to_ns(t, cb->tsc);
	const struct cuhook_count_entry *e = (const void *)(cb + 1);
	for (uint32_t i = 0; i < cb->count; i++, e++) {
		if (unknown_func(t, e->func, "COUNTS entry"))
			continue;
		if (t->ncounts >= UINT32_MAX - 1) { /* a 64 GB file of nothing else */
			t->bad_records++;
			tr_add_error(t, "too many COUNTS entries: the rest skipped");
			return 0;
		}
		if (t->ncounts == t->counts_cap_ &&
		    tr_grow((void **)&t->counts, &t->counts_cap_, t->ncounts + 1, sizeof(*t->counts)))
			return -1;
		t->counts[t->ncounts++] = (struct tr_count){ns, e->calls, e->func, ti};
		t->funcs[e->func].counted = tr_sat_add_u64(t->funcs[e->func].counted, e->calls);
		th->counted = tr_sat_add_u64(th->counted, e->calls);
		t->counted_calls = tr_sat_add_u64(t->counted_calls, e->calls);
	}
	return 0;
}

void (*tr_progress)(const char *path, uint64_t done, uint64_t total);

/* The GPU and call stack blocks of pass 2. Returns 0, or -1 when out of memory. */
static int other_block(struct tr_trace *t, unsigned type, const uint8_t *p, uint32_t size, uint64_t off)
{
	switch (type) {
	case CUHOOK_BLOCK_GPU_SESSION:
		return tr_gpu_session_block(t, p, size, off);
	case CUHOOK_BLOCK_GPU:
		return tr_gpu_block(t, p, size, off);
	case CUHOOK_BLOCK_STACKS:
	case CUHOOK_BLOCK_PYFRAMES:
	case CUHOOK_BLOCK_MAPS:
		return tr_stacks_block(t, type, p, size, off);
	default:
		return 0;
	}
}

/* Streaming: GPU records and call stacks are tied to calls that are not kept, so their blocks
 * are counted and skipped. */
static void stream_block(struct tr_trace *t, unsigned type)
{
	struct tr_stream_skipped *sk = tr_stream_skips(t);
	if (type == CUHOOK_BLOCK_GPU_SESSION || type == CUHOOK_BLOCK_GPU)
		sk->gpu_blocks++;
	if (type == CUHOOK_BLOCK_STACKS || type == CUHOOK_BLOCK_PYFRAMES || type == CUHOOK_BLOCK_MAPS)
		sk->stack_blocks++;
}

/* Pass 2 over [header_size, stop), which pass 1 found readable. The bytes come as they are read
 * (tr_input_wait), and each block header is checked again: a regular file is read a second time
 * here and may have shrunk or changed since pass 1. Sets *cut to where decoding stopped (stop, or
 * the offset of the first block that could not be read, or differs: *changed). Returns 0, or -1
 * when out of memory. */
static int pass_events(struct tr_trace *t, struct tr_input *in, uint64_t stop, uint64_t *cut, int *changed)
{
	uint64_t off = t->header_size_, have = 0, released = off;
	uint64_t next_report = 64ull << 20;
	if (t->stream_)
		tr_input_release(in, off); /* from here on the reader thread keeps a window ahead */
	const uint64_t bh = sizeof(struct cuhook_block);
	*cut = stop;
	*changed = 0;
	while (off < stop) {
		if (off + bh > have)
			have = tr_input_wait(in, off + bh);
		const struct cuhook_block *b = (const void *)(in->buf + off);
		if (off + bh > have) {
			*cut = off;
			break;
		}
		if (stop - off < bh || b->magic != CUHOOK_BLOCK_MAGIC || b->size % 8 || b->size > stop - off - bh) {
			*cut = off;
			*changed = 1;
			break;
		}
		if (off + bh + b->size > have)
			have = tr_input_wait(in, off + bh + b->size);
		if (off + bh + b->size > have) {
			*cut = off;
			break;
		}
		if (b->type == CUHOOK_BLOCK_EVENTS && block_events(t, in->buf + off + bh, b->size, off))
			return -1;
		if (b->type == CUHOOK_BLOCK_COUNTS && block_counts(t, in->buf + off + bh, b->size, off))
			return -1;
		if (t->stream_)
			stream_block(t, b->type);
		else if (other_block(t, b->type, in->buf + off + bh, b->size, off))
			return -1;
		off += bh + b->size;
		if (t->stream_) {
			if (tr_stream_failed(t))
				return -1;
			/* decoded: the bytes go (slots keep their own copy of the arguments) */
			if (off - released >= (4u << 20)) {
				tr_input_release(in, off);
				released = off;
			}
		}
		if (tr_progress && off >= next_report) {
			tr_progress(t->path, off, stop);
			next_report = off + (64ull << 20);
		}
	}
	if (tr_progress && stop >= (64ull << 20))
		tr_progress(t->path, stop, stop);
	return 0;
}

/* Stable merge sort of the DATA records by call: exit-time records arrive after the records of
 * nested calls, so the array is nearly but not always sorted. */
static int sort_data(struct tr_trace *t)
{
	uint32_t n = t->ndata;
	int sorted = 1;
	for (uint32_t i = 1; i < n && sorted; i++)
		sorted = t->data[i - 1].call <= t->data[i].call;
	if (!sorted) {
		struct tr_data *tmp = malloc((size_t)n * sizeof(*tmp));
		if (!tmp)
			return -1;
		struct tr_data *a = t->data, *b = tmp;
		for (uint32_t w = 1; w < n; w *= 2) {
			for (uint32_t lo = 0; lo < n; lo += 2 * w) {
				uint32_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
				uint32_t i = lo, j = mid, k = lo;
				while (i < mid && j < hi)
					b[k++] = a[j].call < a[i].call ? a[j++] : a[i++];
				while (i < mid)
					b[k++] = a[i++];
				while (j < hi)
					b[k++] = a[j++];
			}
			struct tr_data *s = a;
			a = b;
			b = s;
		}
		if (a != t->data)
			memcpy(t->data, a, (size_t)n * sizeof(*a));
		free(tmp);
	}
	for (uint32_t i = 0; i < n; i++)
		if (t->calls[t->data[i].call].data_first == TR_NONE)
			t->calls[t->data[i].call].data_first = i;
	return 0;
}

/* The input ended before its limit: the file shrank while it was read (someone truncated it), or
 * a read failed. What the passes made of the bytes that came is kept; the reason (the cut pass 1
 * or 2 found where the bytes ended) is prefixed with why there were no more. */
static void input_ended(struct tr_trace *t, const struct tr_input *in)
{
	char was[sizeof(t->truncated_reason)];
	snprintf(was, sizeof(was), "%s", t->truncated_reason);
	if (in->read_errno)
		set_truncated(t, t->truncated_at, "read error (%s): %s", strerror(in->read_errno), was);
	else
		set_truncated(t, t->truncated_at, "the file shrank while it was read (%llu bytes when opened, "
		              "%llu now): %s", (unsigned long long)in->limit, (unsigned long long)in->size_now, was);
}

static int decode(struct tr_trace *t, struct tr_input *in, char *err, size_t errlen)
{
	if (parse_header(t, in, err, errlen))
		return -1;
	struct clock_pairs cp;
	memset(&cp, 0, sizeof(cp));
	uint64_t stop = pass_blocks(t, in, &cp);
	if (stop == (uint64_t)-1)
		goto oom;
	if (!t->truncated) {
		t->truncated_at = stop;
		if (!t->has_end)
			set_truncated(t, stop, "no END block: the traced process did not finish tracing "
			                       "cleanly (killed, or still running)");
	}
	setup_clock(t, &cp);
	setup_realtime(t, &cp);
	int head_only = t->stream_ ? tr_stream_begin(t) : 0;
	if (head_only < 0)
		goto oom;
	if (head_only) {
		tr_stream_finish(t);
		return 0;
	}
	t->first_ns = INT64_MAX;
	t->last_ns = INT64_MIN;
	uint64_t cut;
	int changed;
	if (reserve_calls(t) || tr_input_load(in, t->header_size_, stop) || pass_events(t, in, stop, &cut, &changed))
		goto oom;
	tr_input_stop(in);
	if (cut < stop) {
		/* Pass 1 read these blocks; the file lost or changed them before pass 2 read them again. */
		if (changed)
			set_truncated(t, cut, "the file changed while it was read: the block at offset %llu is not "
			              "the one read before", (unsigned long long)cut);
		else
			set_truncated(t, cut, "blocks from offset %llu on could not be read", (unsigned long long)cut);
		if (t->has_end && t->end_at_ >= cut)
			t->has_end = 0;
	}
	if (in->shrank || in->read_errno)
		input_ended(t, in);
	/* The END block counts every record dropped, also those a thread never got to report in a
	 * DROP record (it dropped its last records, or the ring was still full at the close). */
	if (t->has_end && t->end.dropped > t->dropped)
		t->dropped = t->end.dropped;
	if (t->first_ns > t->last_ns)
		t->first_ns = t->last_ns = 0;
	/* Calls still open at the end never got their EXIT. */
	for (uint32_t i = 0; i < t->nthreads; i++) {
		struct tr_thread *th = &t->threads[i];
		if (t->stream_)
			stream_flush(t, th);
		stack_unwind(t, th, 0, 1);
		if (tr_stream_failed(t))
			goto oom;
		free(th->stack_);
		th->stack_ = NULL;
		th->stack_cap_ = 0;
	}
	if (t->stream_)
		tr_stream_finish(t);
	if (sort_data(t) || tr_gpu_finish(t))
		goto oom;
	return 0;
oom:
	fail(err, errlen, "%s: out of memory", t->path);
	return -1;
}

/* ---- open / close -------------------------------------------------------------------------- */

static struct tr_trace *trace_new(const char *name)
{
	struct tr_trace *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->path = name;
	char *p = tr_arena_strndup(t, name, strlen(name));
	if (!p) {
		free(t);
		return NULL;
	}
	t->path = p;
	t->gpu_open_ = TR_NONE;
	return t;
}

/* What a path is when it cannot hold a trace; NULL for a regular file or a pipe. */
static const char *not_a_trace_file(mode_t mode)
{
	if (S_ISREG(mode) || S_ISFIFO(mode))
		return NULL;
	if (S_ISDIR(mode))
		return "is a directory";
	if (S_ISCHR(mode))
		return "is a character device";
	if (S_ISBLK(mode))
		return "is a block device";
	if (S_ISSOCK(mode))
		return "is a socket";
	return "is not a regular file";
}

/* Decode, keep the bytes read, close the input and its file. */
static struct tr_trace *finish(struct tr_trace *t, struct tr_input *in, char *err, size_t errlen)
{
	int rc = decode(t, in, err, errlen);
	tr_input_stop(in);
	t->size_ = (size_t)in->size;
	tr_input_take(in, &t->map_, &t->map_cap_);
	tr_input_close(in);
	if (in->fd >= 0)
		close(in->fd);
	if (rc) {
		tr_close(t);
		return NULL;
	}
	return t;
}

/* Streaming a pipe (or a file that does not know its size): its bytes go to an unnamed file
 * first (O_TMPFILE in $TMPDIR, else /tmp), which is then read as a regular file is, so that memory
 * stays bounded whatever comes down the pipe; the disk holds the bytes for the time of the report.
 * The new descriptor (fd closed), its size in *size; -1 with a message. */
static int spool(int fd, const char *path, uint64_t *size, char *err, size_t errlen)
{
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	int out = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (out < 0) {
		fail(err, errlen, "%s: cannot keep the pipe's bytes in a temporary file in %s (%s): --no-stream reads "
		     "them into memory", path, dir, strerror(errno));
		close(fd);
		return -1;
	}
	enum { CHUNK = 1 << 20 };
	uint8_t *buf = malloc(CHUNK);
	uint64_t total = 0;
	int bad = buf ? 0 : ENOMEM;
	while (!bad) {
		ssize_t n = read(fd, buf, CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			bad = n < 0 ? errno : 0;
			break;
		}
		for (ssize_t done = 0; done < n && !bad;) {
			ssize_t w = write(out, buf + done, (size_t)(n - done));
			if (w < 0 && errno != EINTR)
				bad = errno;
			else if (w > 0)
				done += w;
		}
		total += (uint64_t)n;
	}
	free(buf);
	close(fd);
	if (bad) {
		fail(err, errlen, "%s: cannot keep the pipe's bytes in a temporary file in %s (%s): --no-stream reads "
		     "them into memory", path, dir, strerror(bad));
		close(out);
		return -1;
	}
	*size = total;
	return out;
}

static struct tr_trace *open_path(const char *path, const struct tr_stream_sink *sink, char *err, size_t errlen)
{
	/* Look before opening: opening a device can act (a watchdog starts counting, a tape
	 * rewinds), and a FIFO is opened blocking only when it is one, to wait for its writer. */
	struct stat st;
	if (stat(path, &st) < 0) {
		fail(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	const char *what = not_a_trace_file(st.st_mode);
	if (what) {
		fail(err, errlen, "%s: %s, not a trace", path, what);
		return NULL;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | (S_ISFIFO(st.st_mode) ? 0 : O_NONBLOCK));
	if (fd < 0) {
		fail(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	/* The path may have changed in between: what counts is what was opened. */
	if (fstat(fd, &st) < 0 || (what = not_a_trace_file(st.st_mode)) != NULL) {
		if (what)
			fail(err, errlen, "%s: %s, not a trace", path, what);
		else
			fail(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && (fl & O_NONBLOCK))
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	struct tr_trace *t = trace_new(path);
	if (!t || (sink && tr_stream_init(t, sink))) {
		fail(err, errlen, "%s: out of memory", path);
		tr_close(t);
		close(fd);
		return NULL;
	}
	/* A regular file is read up to the size it had when opened; a pipe (or a file that does not
	 * know its size, like those in /proc) until it ends. Both only as far as they are a trace
	 * (trace_input.h). */
	struct tr_input in;
	int seekable = S_ISREG(st.st_mode) && st.st_size > 0;
	uint64_t size = seekable ? (uint64_t)st.st_size : UINT64_MAX;
	if (sink && !seekable) {
		if ((fd = spool(fd, path, &size, err, errlen)) < 0) {
			tr_close(t);
			return NULL;
		}
		seekable = size > 0;
		if (!seekable)
			size = UINT64_MAX;
	}
	tr_input_fd(&in, fd, size, seekable);
	if (seekable)
		posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	return finish(t, &in, err, errlen);
}

struct tr_trace *tr_open(const char *path, char *err, size_t errlen)
{
	return open_path(path, NULL, err, errlen);
}

struct tr_trace *tr_open_stream(const char *path, const struct tr_stream_sink *sink, char *err, size_t errlen)
{
	return open_path(path, sink, err, errlen);
}

static struct tr_trace *open_mem(const void *buf, size_t len, const char *name, const struct tr_stream_sink *sink,
                                 char *err, size_t errlen)
{
	struct tr_trace *t = trace_new(name ? name : "<memory>");
	if (!t || (sink && tr_stream_init(t, sink))) {
		fail(err, errlen, "%s: out of memory", name ? name : "<memory>");
		tr_close(t);
		return NULL;
	}
	/* Copied as a pipe is read, behind the validation: the fuzzers run that code. */
	struct tr_input in;
	tr_input_mem(&in, buf, len);
	return finish(t, &in, err, errlen);
}

struct tr_trace *tr_open_mem(const void *buf, size_t len, const char *name, char *err, size_t errlen)
{
	return open_mem(buf, len, name, NULL, err, errlen);
}

struct tr_trace *tr_open_stream_mem(const void *buf, size_t len, const char *name, const struct tr_stream_sink *sink,
                                    char *err, size_t errlen)
{
	return open_mem(buf, len, name, sink, err, errlen);
}

void tr_close(struct tr_trace *t)
{
	if (!t)
		return;
	tr_stream_free(t);
	tr_input_free_buf(t->map_, t->map_cap_);
	for (uint32_t i = 0; i < t->nthreads; i++)
		free(t->threads[i].stack_);
	free(t->threads);
	free(t->tid_hash_);
	free(t->libs);
	free(t->funcs);
	if (t->calls_bytes_)
		munmap(t->calls, t->calls_bytes_);
	else
		free(t->calls);
	free(t->data);
	free(t->notes);
	free(t->knames);
	for (uint32_t i = 0; i < t->ngraphs; i++)
		free(t->graphs[i].kernels);
	free(t->graphs);
	free(t->counts);
	free(t->argv);
	free(t->thread_call_index_);
	tr_gpu_free(t);
	tr_stacks_free(t);
	tr_arena_free(t);
	free(t);
}

/* ---- queries ------------------------------------------------------------------------------- */

const uint32_t *tr_thread_calls(struct tr_trace *t, uint32_t thread, uint32_t *n)
{
	*n = 0;
	if (thread >= t->nthreads)
		return NULL;
	if (!t->thread_call_index_ && t->ncalls) {
		/* One counting-sort pass for all threads: their calls are contiguous afterwards. */
		uint32_t *idx = malloc((size_t)t->ncalls * sizeof(*idx));
		uint32_t *pos = malloc((size_t)t->nthreads * sizeof(*pos));
		if (!idx || !pos) {
			free(idx);
			free(pos);
			return NULL;
		}
		uint32_t sum = 0;
		for (uint32_t i = 0; i < t->nthreads; i++) {
			pos[i] = sum;
			t->threads[i].calls_ = idx + sum;
			sum += t->threads[i].ncalls;
		}
		for (uint32_t i = 0; i < t->ncalls; i++)
			idx[pos[t->calls[i].thread]++] = i;
		free(pos);
		t->thread_call_index_ = idx;
	}
	*n = t->threads[thread].ncalls;
	return *n ? t->threads[thread].calls_ : NULL;
}

const char *tr_data_value_label(const struct tr_data *d, unsigned i)
{
	if (!d->decoder || d->decoder >= cuhook_decoder_count || i >= CUHOOK_DECODER_MAX_OUT)
		return NULL;
	const struct cuhook_decoder *dec = &cuhook_decoders[d->decoder];
	/* Values are the out-parameters, read at exit, in out_arg order; a raw-bytes decoder
	 * ("ioctl") labels values the agent computes by its own rule. */
	if (!d->at_exit || (dec->out_arg[i] == CUHOOK_NO_ARG && dec->str_kind != CUHOOK_STR_RAW))
		return NULL;
	return dec->out_label[i];
}

const char *tr_data_str_label(const struct tr_data *d)
{
	if (!d->decoder || d->decoder >= cuhook_decoder_count)
		return NULL;
	const struct cuhook_decoder *dec = &cuhook_decoders[d->decoder];
	return dec->str_kind != CUHOOK_STR_NONE ? dec->str_label : NULL;
}

size_t tr_call_format_data(const struct tr_trace *t, const struct tr_call *c, char *buf, size_t len)
{
	size_t pos = 0;
	if (!len)
		return 0;
	buf[0] = 0;
	for (uint32_t k = 0; k < c->ndata; k++) {
		const struct tr_data *d = &t->data[c->data_first + k];
		for (unsigned i = 0; i < d->nvalues; i++) {
			const char *label = tr_data_value_label(d, i);
			if (pos)
				pos = rp_put(buf, len, pos, ";");
			if (label)
				pos = rp_put(buf, len, pos, "%s=0x%llx", label, (unsigned long long)d->values[i]);
			else
				pos = rp_put(buf, len, pos, "%s%u=0x%llx", d->at_exit ? "out" : "in", i,
				             (unsigned long long)d->values[i]);
		}
		if (d->str_len) {
			const char *label = tr_data_str_label(d);
			if (pos)
				pos = rp_put(buf, len, pos, ";");
			pos = rp_put(buf, len, pos, "%s=", label ? label : "str");
			if (d->decoder && d->decoder < cuhook_decoder_count &&
			    cuhook_str_is_binary(cuhook_decoders[d->decoder].str_kind)) {
				/* raw bytes (an ioctl's argument struct, a launch config): hex, two digits a byte */
				for (uint16_t i = 0; i < d->str_len && pos + 2 < len; i++)
					pos = rp_put(buf, len, pos, "%02x", (unsigned char)d->str[i]);
				continue;
			}
			for (uint16_t i = 0; i < d->str_len && pos + 1 < len; i++) {
				unsigned char ch = (unsigned char)d->str[i];
				buf[pos++] = (ch < 0x20 || ch == 0x7f || ch == ';' || ch == '=') ? '?' : (char)ch;
			}
			buf[pos] = 0;
		}
	}
	return pos;
}

int tr_call_data_str(const struct tr_trace *t, const struct tr_call *c, const char *label,
                     const char **str, uint16_t *len)
{
	for (uint32_t k = 0; k < c->ndata; k++) {
		const struct tr_data *d = &t->data[c->data_first + k];
		const char *l = tr_data_str_label(d);
		if (d->str_len && l && !strcmp(l, label)) {
			*str = d->str;
			*len = d->str_len;
			return 1;
		}
	}
	return 0;
}

int tr_call_data_value(const struct tr_trace *t, const struct tr_call *c, const char *label,
                       uint64_t *value)
{
	for (uint32_t k = 0; k < c->ndata; k++) {
		const struct tr_data *d = &t->data[c->data_first + k];
		for (unsigned i = 0; i < d->nvalues; i++) {
			const char *l = tr_data_value_label(d, i);
			if (l && !strcmp(l, label)) {
				*value = d->values[i];
				return 1;
			}
		}
	}
	return 0;
}
