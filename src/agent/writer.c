#include "writer.h"
#include "clock_read.h"

#include "agent_log.h"
#include "agent_state.h"
#include "capture_range.h"
#include "gpu_activity.h"
#include "gpu_cbids.h"
#include "gpu_queue.h"
#include "hook_table.h"
#include "patch_status_map.h"
#include "kernel_names.h"
#include "own_threads.h"
#include "stack_table.h"
#include "record.h"
#include "thread_state.h"
#include "to_writer.h"
#include "trace_format.h"

#include "cuhook_agent.h"
#include "exec_maps.h"
#include "flight.h"
#include "py_stack.h"
#include "inbox.h"
#include "injector_watch.h"
#include "out_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* Who ends the session: the thread that stops it (writer_close_within), or the writer itself when
 * the injector that started it is gone (injector_watch.h). The first to claim it writes the last
 * blocks; the other only waits for W.done. */
enum { CLOSER_NONE, CLOSER_CALLER, CLOSER_WRITER };

/* The closing blocks: a CLOCK, at most three NOTEs (why the writer ended the session itself,
 * what the kernel names lost, and that the size cap was reached; text at most CLOSE_NOTE_MAX bytes each) and the END block.
 * Their room is kept below the size cap from the start, so the closed file never exceeds it,
 * and the reason a session ended by itself is in the file whatever the cap left. */
#define CLOSE_NOTE_MAX 192
#define CAP_CLOSE_ROOM                                                                         \
	(5 * sizeof(struct cuhook_block) + sizeof(struct cuhook_clock_block) +                     \
	 3 * (sizeof(struct cuhook_note_block) + CLOSE_NOTE_MAX) + sizeof(struct cuhook_end_block))
/* With gpu=1, also the GPU session's STOPPED block (no path) and a NOTE of the GPU records lost. */
#define GPU_CLOSE_ROOM                                                                         \
	(2 * sizeof(struct cuhook_block) + sizeof(struct cuhook_gpu_session_block) +               \
	 sizeof(struct cuhook_note_block) + CLOSE_NOTE_MAX)
#define CLOSE_ROOM (CAP_CLOSE_ROOM + (W.gpu ? GPU_CLOSE_ROOM : 0))

static struct {
	int fd;
	volatile int stop;
	uint32_t gen;              /* the writer thread prepared last; an older one that has not
	                              started (its preparation discarded) leaves when it sees this */
	uint32_t go;               /* futex word: 1 once started (writer_start) */
	int closer;                /* CLOSER_*: claimed once per session */
	uint32_t done;             /* futex word: 1 once the thread has left its loop (and, when it
	                              ended the session itself, closed the file) */
	uint32_t seq;              /* next block sequence number */
	unsigned flush_ms;
	int failed;                /* a write failed: tracing stopped, rings are discarded */
	uint64_t events, dropped;
	uint64_t counted;          /* counted calls written (COUNTS blocks) */
	uint64_t bytes;            /* the file's size so far */
	uint64_t max_size;         /* the size cap, 0 none */
	int capped;                /* a block did not fit below the cap: nothing more is written but
	                              the closing blocks */
	int closing;               /* writing the closing blocks, which the cap has room for */
	uint64_t cap_events;       /* ENTRY/EXIT records not written because of the cap */
	uint64_t cap_counted;      /* counted calls not written because of the cap */
	bool gpu;                  /* gpu=1 (writer_opts) */
	bool stacks;               /* stacks= (writer_opts) */
	uint64_t maps_digest;      /* the mappings this file's last MAPS block listed (0: none yet) */
	bool stacks_full_noted;    /* this file said that the stack table is full */
	uint64_t gpu_records;      /* GPU records written in this file's session */
	unsigned libs_written;
	uint32_t funcs_written;
	uint64_t last_clock_ns;
	void *scratch[8];          /* the writer's working memory (scratch()) */
	size_t scratch_len[8];
	bool flight;               /* flight=: the flight recorder (writer_opts) */
	bool header_pending;       /* flight recorder: the file header waits for the first dump */
	uint32_t dumps;            /* flight recorder: dumps in this file */
	size_t header_len;
	uint8_t header[sizeof(struct cuhook_file_header) + 4096 + PATH_MAX + 8];
} W = {.fd = -1};

/* A round that drained at least this much is followed by another at once. */
#define KEEP_DRAINING_BYTES (256u << 10)

/* Working memory for one round, mapped rather than malloc'd. The writer keeps running while
 * cuhook_agent_stop() waits for it with every other thread of the process stopped under ptrace,
 * and a stopped thread may hold a malloc arena lock (the traced program allocates too): the
 * round must not need one. Used by one thread at a time: the writer, or the thread closing the
 * trace once the writer is done. */
enum { SCRATCH_FUNCS, SCRATCH_NOTES, SCRATCH_SNAP, SCRATCH_MAPS, SCRATCH_STACKS, SCRATCH_PYFRAMES,
       SCRATCH_DUMP_IN, SCRATCH_DUMP_OUT, SCRATCH_COUNT }; /* one buffer each: they are in use together */
_Static_assert(SCRATCH_COUNT == sizeof W.scratch / sizeof W.scratch[0], "a scratch buffer each");

static void *scratch(unsigned which, size_t bytes)
{
	if (bytes > W.scratch_len[which]) {
		size_t len = (bytes + 65535) & ~(size_t)65535;
		void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		if (W.scratch[which])
			munmap(W.scratch[which], W.scratch_len[which]);
		W.scratch[which] = p;
		W.scratch_len[which] = len;
	}
	return W.scratch[which];
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void fail(int err)
{
	if (W.failed)
		return;
	W.failed = err;
	cuhook_recording = 0;
	agent_trace_failed(err);
}

/* May a block of `total` bytes be written under the size cap? The first one that may not ends
 * the writing for good (W.capped): the file stays a prefix of the uncapped one, with no block
 * after a missing one (no events of a function whose table was left out, no sequence gap). */
static bool fits_cap(size_t total)
{
	if (!W.max_size || W.closing)
		return true;
	if (!W.capped && W.bytes + total + CLOSE_ROOM <= W.max_size)
		return true;
	W.capped = 1;
	return false;
}

/* Write one block: header, then the payload in iov[0..n) (n <= BLOCK_IOV_MAX), padded to 8, with
 * one system call (more only if the kernel writes less). False when it was not written (a write
 * error, or the size cap). */
#define PIECES_MAX (RING_SEGS + 2) /* pieces of ring in one EVENTS block */
#define BLOCK_IOV_MAX (PIECES_MAX + 2)
static bool put_iov(uint16_t type, const struct iovec *payload, unsigned n)
{
	if (W.failed)
		return false;
	static const uint8_t zeros[8];
	size_t len = 0;
	for (unsigned i = 0; i < n; i++)
		len += payload[i].iov_len;
	size_t pad = CUHOOK_ALIGN8(len) - len;
	size_t total = sizeof(struct cuhook_block) + len + pad;
	if (!fits_cap(total))
		return false;
	struct cuhook_block h = {CUHOOK_BLOCK_MAGIC, type, 0, (uint32_t)(len + pad), W.seq++};
	struct iovec iov[BLOCK_IOV_MAX + 2];
	int iovcnt = 0;
	iov[iovcnt++] = (struct iovec){&h, sizeof(h)};
	for (unsigned i = 0; i < n; i++)
		if (payload[i].iov_len)
			iov[iovcnt++] = payload[i];
	if (pad)
		iov[iovcnt++] = (struct iovec){(void *)zeros, pad};
	W.bytes += total;
	struct iovec *v = iov;
	while (total > 0) {
		ssize_t k = writev(W.fd, v, iovcnt);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			fail(errno);
			return false;
		}
		if (k == 0) {
			fail(EIO);
			return false;
		}
		total -= (size_t)k;
		while (k > 0 && iovcnt > 0) {
			if ((size_t)k >= v->iov_len) {
				k -= (ssize_t)v->iov_len;
				v++;
				iovcnt--;
			} else {
				v->iov_base = (char *)v->iov_base + k;
				v->iov_len -= (size_t)k;
				k = 0;
			}
		}
	}
	return true;
}

/* Write header + payload (a then b) as one block. */
static bool put_block(uint16_t type, const void *a, size_t alen, const void *b, size_t blen)
{
	const struct iovec p[2] = {{(void *)a, alen}, {(void *)b, blen}};
	return put_iov(type, p, 2);
}

/* An EVENTS block: its header, the TIME record that opens it, then the ring's pieces. */
static bool put_blockv(uint16_t type, const void *a, size_t alen, const uint64_t *time_word,
                       const struct iovec *pieces, unsigned n)
{
	struct iovec p[BLOCK_IOV_MAX];
	p[0] = (struct iovec){(void *)a, alen};
	p[1] = (struct iovec){(void *)time_word, 8};
	for (unsigned i = 0; i < n; i++)
		p[2 + i] = pieces[i];
	return put_iov(type, p, n + 2);
}

static void put_clock(void)
{
	struct cuhook_clock_block c;
	c.tsc = __builtin_ia32_rdtsc();
	c.monotonic_ns = monotonic_ns();
	c.realtime_ns = clock_ns(CLOCK_REALTIME);
	W.last_clock_ns = c.monotonic_ns;
	put_block(CUHOOK_BLOCK_CLOCK, &c, sizeof(c), NULL, 0);
}

/* Library and function tables for everything patched since the last round. Called with
 * agent_lock held, so the hook table is consistent and no jump of an unlisted id is live. */
static void put_tables(void)
{
	for (; W.libs_written < agent_nlibs; W.libs_written++) {
		const struct agent_lib *l = &agent_libs[W.libs_written];
		struct cuhook_lib_block b = {l->lib_id,
		                             (l->internal ? CUHOOK_LIB_INTERNAL : 0) | (l->ioctl ? CUHOOK_LIB_IOCTL : 0), l->base,
		                             (uint32_t)strlen(l->path), (uint32_t)strlen(l->version)};
		char buf[sizeof(l->path) + sizeof(l->version)];
		memcpy(buf, l->path, b.path_len);
		memcpy(buf + b.path_len, l->version, b.version_len);
		put_block(CUHOOK_BLOCK_LIB, &b, sizeof(b), buf, b.path_len + b.version_len);
	}
	while (W.funcs_written < patch_count) {
		uint32_t first = W.funcs_written, lib = patch_sites[first].lib_id, n = 0;
		size_t bytes = 0;
		while (first + n < patch_count && patch_sites[first + n].lib_id == lib && n < 4096) {
			bytes += CUHOOK_ALIGN8(sizeof(struct cuhook_func_entry) + strlen(patch_sites[first + n].name));
			n++;
		}
		uint8_t *buf = scratch(SCRATCH_FUNCS, bytes);
		if (!buf)
			return;
		memset(buf, 0, bytes);
		size_t off = 0;
		uintptr_t base = 0;
		for (unsigned i = 0; i < agent_nlibs; i++)
			if (agent_libs[i].lib_id == lib)
				base = agent_libs[i].base;
		for (uint32_t id = first; id < first + n; id++) {
			const struct patch_site *hc = &patch_sites[id];
			struct cuhook_func_entry *e = (struct cuhook_func_entry *)(buf + off);
			size_t nl = strlen(hc->name);
			if (nl > 0xffff)
				nl = 0xffff;
			e->offset = hc->addr - base;
			e->size = hc->size;
			e->status = patch_status_trace(hc->status);
			e->name_len = (uint16_t)nl;
			e->patch_len = hc->status == PATCH_OK ? hc->patch_len : 0;
			e->decoder = hooks_hot[id].decoder;
			e->nregs = hooks_hot[id].nregs;   /* what its ENTRY5 records carry */
			e->nstack = hooks_hot[id].nstack;
			memcpy(e + 1, hc->name, nl);
			off += CUHOOK_ALIGN8(sizeof(*e) + nl);
		}
		struct cuhook_funcs_block fb = {lib, first, n, 0};
		put_block(CUHOOK_BLOCK_FUNCS, &fb, sizeof(fb), buf, off);
		W.funcs_written = first + n;
	}
}

static void put_note(uint8_t level, const char *text, size_t len)
{
	struct cuhook_note_block nb = {level, (uint32_t)len};
	put_block(CUHOOK_BLOCK_NOTE, &nb, sizeof(nb), text, len);
}

static void put_notes(void)
{
	char *notes = scratch(SCRATCH_NOTES, NOTES_CAP);
	if (!notes)
		return;
	unsigned lost;
	size_t len = to_writer_take_notes(notes, &lost);
	for (size_t off = 0; off < len;) {
		const char *text = notes + off + 1;
		size_t len = strlen(text);
		put_note((uint8_t)notes[off], text, len);
		off += 1 + len + 1;
	}
	if (lost) {
		char text[80];
		int tl = snprintf(text, sizeof(text), "%u notes lost: more than %d bytes queued in one round", lost,
		                  NOTES_CAP);
		put_note(1, text, (size_t)tl);
	}
}

/* Bytes of records one more EVENTS block may hold under the size cap. */
static uint64_t events_room(void)
{
	uint64_t used = W.bytes + CLOSE_ROOM + sizeof(struct cuhook_block) + sizeof(struct cuhook_events_block) + 8;
	return W.max_size > used ? W.max_size - used : 0;
}

/* What the walk of records in a ring found: ENTRY/EXIT records, records counted in DROP
 * records, the epoch in force after them. */
struct walk {
	uint64_t events, drops;
	uint32_t epoch;
};

/* Read the records in [p, end) of a ring's data one by one (trace_format.h, cuhook_rec5_size),
 * stopping before the first that would end past `room` bytes from p: the writer's one walk,
 * for the part of the open segment that it drains (the summaries of closed segments say the
 * same without it) and for the cut at the size cap. Returns where it stopped. */
static uint32_t walk_records(const struct ring *r, uint32_t p, uint32_t end, uint64_t room, struct walk *w)
{
	const uint32_t from = p;
	while (p < end) {
		const uint64_t *q = (const uint64_t *)(r->data + p);
		unsigned type = CUHOOK_REC5_TYPE(q[0]), nargs = 0;
		if (type == CUHOOK_REC5_ENTRY) {
			uint32_t f = CUHOOK_REC5_FUNC(q[0]);
			nargs = f < patch_count ? hooks_hot[f].nregs + hooks_hot[f].nstack : 0;
		}
		uint32_t len = cuhook_rec5_size(q, end - p, nargs);
		if (!len)
			return end; /* cannot happen: records are written whole; never loop */
		if (p + len - from > room)
			break;
		if (type == CUHOOK_REC5_ENTRY || type == CUHOOK_REC5_ENTRY_X || type == CUHOOK_REC5_EXIT ||
		    type == CUHOOK_REC5_EXIT_VALUE || type == CUHOOK_REC5_EXIT_ZERO || type == CUHOOK_REC5_EXIT_ZERO_VALUE)
			w->events++;
		else if (type == CUHOOK_REC5_TIME)
			w->epoch = CUHOOK_REC5_TIME_EPOCH(q[0]);
		else if (type == CUHOOK_REC_DROP)
			w->drops += ((const struct cuhook_rec_drop *)q)->count;
		p += len;
	}
	return p;
}

/* One drain's EVENTS block: a TIME record (the epoch in force at its first record), then the
 * pieces of the ring it copies, each inside one segment. */
struct events_out {
	uint64_t time_word;
	struct iovec iov[PIECES_MAX];
	unsigned n;
	uint64_t bytes, events;
};

static void out_begin(struct events_out *o, uint32_t epoch)
{
	o->time_word = CUHOOK_REC5_TIME_WORD(epoch);
	o->n = 0;
	o->bytes = o->events = 0;
}

/* Write what `o` holds as one block. Under the size cap, only the records that fit: the rest
 * is counted as kept out (W.cap_events), and nothing after it is written. */
static void out_flush(struct ring *r, struct events_out *o)
{
	if (!o->n || W.failed)
		return;
	if (W.max_size && !W.capped && !W.closing && o->bytes > events_room()) {
		/* The cap is reached inside this block: the records that still fit go out as a
		 * shorter block, so that the file fills up to the cap. */
		uint64_t room = events_room(), kept_events = 0, kept_bytes = 0;
		unsigned keep = 0;
		while (keep < o->n) {
			struct iovec *v = &o->iov[keep];
			uint32_t p = (uint32_t)((uint8_t *)v->iov_base - r->data);
			struct walk w = {0, 0, 0};
			uint32_t end = walk_records(r, p, p + (uint32_t)v->iov_len, room - kept_bytes, &w);
			kept_events += w.events;
			kept_bytes += end - p;
			keep += end > p;
			if (end - p < v->iov_len) {
				v->iov_len = end - p;
				break;
			}
		}
		W.cap_events += o->events - kept_events;
		struct cuhook_events_block eb = {r->tid, 0};
		if (kept_bytes && put_blockv(CUHOOK_BLOCK_EVENTS, &eb, sizeof(eb), &o->time_word, o->iov, keep))
			W.events += kept_events;
		W.capped = 1;
		return;
	}
	struct cuhook_events_block eb = {r->tid, 0};
	if (put_blockv(CUHOOK_BLOCK_EVENTS, &eb, sizeof(eb), &o->time_word, o->iov, o->n))
		W.events += o->events;
	else if (W.capped)
		W.cap_events += o->events;
}

static void announce(struct ring *r)
{
	if (r->announced)
		return;
	struct cuhook_thread_block tb = {r->tid, 0, {0}};
	memcpy(tb.name, r->name, sizeof(tb.name));
	put_block(CUHOOK_BLOCK_THREAD, &tb, sizeof(tb), NULL, 0);
	r->announced = 1;
}

/* Move the tail, and wake the ring's producer if it waits for room (record_slow.c). */
static void publish_tail(struct ring *r, uint64_t tail)
{
	__atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* Dekker with the producer's flag */
	if (__atomic_load_n(&r->tail_waiting, __ATOMIC_RELAXED))
		syscall(SYS_futex, (uint32_t *)&r->tail, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Copy a ring's records up to `head` into the file. Closed segments are copied whole, counted
 * from their summaries (thread_state.h), their padding skipped; only the open segment's part is
 * read record by record. Returns the bytes of records drained. */
static uint64_t drain(struct ring *r, uint64_t head)
{
	uint64_t tail = r->tail;
	if (head == tail)
		return 0;
	announce(r);
	const uint64_t seg_bytes = 1ull << r->seg_shift;
	struct events_out o;
	out_begin(&o, r->w_epoch);
	uint64_t moved = 0;
	while (tail < head) {
		uint64_t k = tail >> r->seg_shift, start = k << r->seg_shift;
		uint32_t pos = (uint32_t)start & (r->size - 1);
		uint64_t to;
		/* A segment the head read with the tables is past is closed: its summary was written
		 * before that head, and all its records are below it (records above it may name
		 * functions the file has no FUNCS entry for yet). It is taken whole; the segment the
		 * head is in is read record by record. */
		const struct ring_seg *sg = &r->seg[k % RING_SEGS];
		bool whole = head > start + seg_bytes;
		if (whole) {
			to = start + sg->used;
			o.events += sg->events_end - r->w_events;
			W.dropped += sg->drops_end - r->w_drops;
			r->w_events = sg->events_end;
			r->w_drops = sg->drops_end;
			r->w_epoch = sg->epoch_end;
		} else {
			to = head;
			struct walk w = {0, 0, r->w_epoch};
			walk_records(r, pos + (uint32_t)(tail - start), pos + (uint32_t)(to - start), UINT64_MAX, &w);
			o.events += w.events;
			W.dropped += w.drops;
			r->w_events += w.events;
			r->w_drops += w.drops;
			r->w_epoch = w.epoch;
		}
		if (to > tail) {
			o.iov[o.n].iov_base = r->data + pos + (tail - start);
			o.iov[o.n].iov_len = to - tail;
			o.n++;
			o.bytes += to - tail;
			moved += to - tail;
		}
		/* Past a closed segment's unused end, to the next one's start (below the head). The
		 * open segment is drained up to the head: done. */
		if (whole) {
			tail = start + seg_bytes;
		} else {
			tail = to;
			break;
		}
		if (o.n == PIECES_MAX || o.bytes >= (16u << 20)) {
			out_flush(r, &o);
			out_begin(&o, r->w_epoch);
			publish_tail(r, tail);
		}
	}
	if (o.n && !W.failed)
		out_flush(r, &o);
	publish_tail(r, tail);
	return moved;
}

/* The calls of counted functions this thread made since the file last said (COUNTS block). */
static void put_counts(struct ring *r, const uint32_t *func, uint32_t nslots)
{
	struct cuhook_count_entry e[RING_COUNT_SLOTS];
	uint32_t n = 0;
	uint64_t calls = 0;
	for (uint32_t s = 0; s < nslots; s++) {
		uint64_t c = capture_count(r, s); /* without what a capture range left out */
		if (c == r->counts_seen[s])
			continue;
		e[n].func = func[s];
		e[n].reserved = 0;
		e[n].calls = c - r->counts_seen[s];
		calls += e[n].calls;
		r->counts_seen[s] = c;
		n++;
	}
	if (!n || W.failed)
		return;
	announce(r);
	/* the events' clock (trace_format.h: the file's clock source) */
	uint64_t tsc = trace_clock_now();
	struct cuhook_counts_block cb = {r->tid, n, tsc};
	if (put_block(CUHOOK_BLOCK_COUNTS, &cb, sizeof(cb), e, n * sizeof(e[0])))
		W.counted += calls;
	else if (W.capped)
		W.cap_counted += calls;
}

/* A GPU_SESSION block as queued; a STOPPED one gets the count of GPU records written, then a
 * NOTE of those lost, if any (both in the room kept below a size cap). */
static void put_gpu_session(struct gpu_qblock *b)
{
	struct cuhook_gpu_session_block *sb = (struct cuhook_gpu_session_block *)b->data;
	if (sb->status != CUHOOK_GPU_STOPPED) {
		W.gpu_records = 0;
		gpu_queue_lost_take(); /* an earlier session's */
		put_block(CUHOOK_BLOCK_GPU_SESSION, b->data, b->len, NULL, 0);
		return;
	}
	sb->records = W.gpu_records;
	int closing = W.closing;
	W.closing = 1;
	put_block(CUHOOK_BLOCK_GPU_SESSION, b->data, b->len, NULL, 0);
	uint64_t lost = gpu_queue_lost_take();
	if (lost) {
		char text[CLOSE_NOTE_MAX];
		int n = snprintf(text, sizeof(text), "GPU: %llu GPU records were not written (their queue was "
		                 "full, memory ran out, or the size cap was reached)", (unsigned long long)lost);
		put_note(1, text, (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1);
	}
	W.closing = closing;
}

/* The GPU blocks queued since the last round (gpu_queue.h), in their order: records get the
 * ids of their functions (whose FUNCS entries this round has written), and whatever is not for
 * this file's session is dropped. */
static void put_gpu(void)
{
	uint32_t gen = gpu_session_gen();
	for (struct gpu_qblock *b = gpu_queue_take(), *next; b; b = next) {
		next = b->next;
		if (b->gen != gen) {
			/* a block of an earlier session, late: not this file's */
		} else if (b->kind == GPU_Q_SESSION) {
			put_gpu_session(b);
		} else {
			gpu_api_resolve(b->data, b->len, W.funcs_written);
			struct cuhook_gpu_block gb = {b->nrecords, 0};
			if (put_block(CUHOOK_BLOCK_GPU, &gb, sizeof(gb), b->data, b->len))
				W.gpu_records += b->nrecords;
			else
				gpu_queue_count_lost(b->nrecords);
		}
		gpu_qblock_free(b);
	}
}

/* MAPS, when the executable mappings differ from those the file's last MAPS block listed (or it
 * has none yet): read only when there are stacks to write, and before them. */
static void put_maps(void)
{
	for (size_t cap = 256u << 10; cap <= (16u << 20); cap *= 4) {
		uint8_t *buf = scratch(SCRATCH_MAPS, cap);
		if (!buf)
			return;
		uint32_t count;
		uint64_t digest;
		size_t len = exec_maps_read(buf, cap, &count, &digest);
		if (!len)
			continue; /* more than cap (or unreadable: tried at each size, then given up) */
		if (digest != W.maps_digest) {
			struct cuhook_maps_block mb = {count, 0};
			if (put_block(CUHOOK_BLOCK_MAPS, &mb, sizeof(mb), buf, len))
				W.maps_digest = digest;
		}
		return;
	}
}

/* The Python frames not yet in the file (py_frames.c), in PYFRAMES blocks. */
static void put_pyframes(void)
{
	const size_t cap = 256u << 10;
	uint8_t *buf = scratch(SCRATCH_PYFRAMES, cap);
	if (!buf)
		return;
	uint32_t count;
	size_t len;
	while ((len = py_frames_take(buf, cap, &count)) > 0) {
		struct cuhook_pyframes_block pb = {count, 0};
		put_block(CUHOOK_BLOCK_PYFRAMES, &pb, sizeof(pb), buf, len);
	}
}

/* Stacks are written whenever the table has any, even in a session without stacks=: a call
 * whose walk began in the last session (its function still stacked then) may commit its STACK
 * record after this session started, into this file, which must then define it. */
static bool stacks_in_use(void)
{
	return W.stacks || stack_table_bound() > 0;
}

/* The stacks interned since the last round (stack_table.h), after the ring heads were read:
 * every STACK record below those heads names an entry published before it, so complete here,
 * and its STACKS block goes before the EVENTS block of that record. MAPS first, then the Python
 * frames, then the stacks, as trace_format.h orders them. */
static void put_stacks(void)
{
	if (!stacks_in_use())
		return;
	if (stack_table_full_take() && !W.stacks_full_noted) {
		static const char text[] = "stacks: the stack table is full; calls after it have no stack "
		                           "(their STACK records say CUHOOK_STACK_NONE)";
		put_note(1, text, sizeof(text) - 1);
		W.stacks_full_noted = true;
	}
	uint32_t bound = stack_table_bound();
	if (!stack_table_pending(bound))
		return;
	put_maps(); /* after the bound: every stack below it was walked in mappings there now */
	const size_t cap = 1u << 20;
	uint8_t *buf = scratch(SCRATCH_STACKS, cap);
	if (!buf)
		return;
	uint32_t count;
	size_t len;
	while ((len = stack_table_take(buf, cap, bound, &count)) > 0) {
		/* The Python frames after the stacks are taken, before they are written: a thread
		 * interns its frames before the stack that names them, so every frame a stack taken
		 * here names is complete now, and the PYFRAMES block goes before the STACKS block. */
		put_pyframes();
		struct cuhook_stacks_block sb = {count, 0};
		put_block(CUHOOK_BLOCK_STACKS, &sb, sizeof(sb), buf, len);
	}
}

/* What a round or a dump works on, taken under agent_lock right after the tables are written
 * (every record below a snapshot's position names a function the file has a FUNCS entry for):
 * each live ring, how far to write it (a round: its head; a dump: its cut), and whether its
 * thread is gone; the counted functions' slots. */
struct snap {
	struct ring *r;
	uint64_t pos;
	bool gone;
};
struct snapshot {
	struct snap *s;
	unsigned n;
	uint32_t nslots;
	uint32_t count_func[RING_COUNT_SLOTS];
};

static bool take_snapshot(struct snapshot *v, bool dump)
{
	pthread_mutex_lock(&agent_lock);
	put_tables();
	unsigned n = 0;
	for (struct ring *r = thread_rings(); r; r = r->next)
		n++;
	v->s = scratch(SCRATCH_SNAP, (n ? n : 1) * sizeof(*v->s));
	v->n = 0;
	if (!v->s) {
		pthread_mutex_unlock(&agent_lock);
		return false;
	}
	for (struct ring *r = thread_rings(); r && n > 0; r = r->next, n--) {
		if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) != RING_LIVE)
			continue; /* free, or being taken by a new thread */
		struct snap *e = &v->s[v->n++];
		e->r = r;
		if (dump) {
			e->gone = thread_ring_owner_gone(r);
			e->pos = __atomic_load_n(&r->cut, __ATOMIC_RELAXED);
			continue;
		}
		/* Whether the thread is gone is asked before its head is read: what it wrote before it
		 * ended is then all below that head. Asked of idle rings only (one system call each). */
		uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		e->gone = head == r->idle_head && thread_ring_owner_gone(r);
		e->pos = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		r->idle_head = e->pos;
	}
	v->nslots = hook_count_slots;
	memcpy(v->count_func, hook_count_func, v->nslots * sizeof(v->count_func[0]));
	if (stacks_in_use())
		exec_maps_sync();
	pthread_mutex_unlock(&agent_lock);
	return true;
}

/* After a ring was written for the last time: its drops counted, its memory for a new thread. */
static void ring_done(struct ring *r)
{
	W.dropped += r->dropped;
	thread_ring_recycle(r);
}

/* ---- the flight recorder (flight.h) ------------------------------------------------------ */

/* The file header, written at the first dump (the file stays empty until then). */
static void put_header_now(void)
{
	if (!W.header_pending || W.failed)
		return;
	W.header_pending = false;
	size_t off = 0;
	while (off < W.header_len) {
		ssize_t n = write(W.fd, W.header + off, W.header_len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fail(n < 0 ? errno : EIO);
			return;
		}
		off += (size_t)n;
	}
	W.bytes = W.header_len;
	put_clock();
}

/* Keep or leave out one record of a dump, so that the file holds whole calls: an EXIT whose ENTRY
 * is not in the file (overwritten before the dump) is left out with the DATA records after it;
 * calls still open at the cut stay open (a later dump may bring their EXIT). The ring's d_open
 * stack holds the depths of the calls the file has open on the thread. */
enum { KEEP, LEAVE_OUT };
static int dump_filter(struct ring *r, const uint64_t *q, bool *skip_data, uint64_t *events)
{
	unsigned type = CUHOOK_REC5_TYPE(q[0]);
	unsigned d = CUHOOK_REC5_DEPTH(q[0]);
	switch (type) {
	case CUHOOK_REC5_ENTRY:
	case CUHOOK_REC5_ENTRY_X:
		*skip_data = false;
		(*events)++;
		if (type == CUHOOK_REC5_ENTRY_X &&
		    (((const struct cuhook_rec5_entry_info *)&q[1])->flags & CUHOOK_RF_NO_EXIT))
			return KEEP;
		while (r->d_nopen && r->d_open[r->d_nopen - 1] >= d)
			r->d_nopen--; /* their EXITs never came */
		if (r->d_nopen <= SHADOW_MAX)
			r->d_open[r->d_nopen++] = (uint8_t)d;
		return KEEP;
	case CUHOOK_REC5_EXIT:
	case CUHOOK_REC5_EXIT_VALUE:
	case CUHOOK_REC5_EXIT_ZERO:
	case CUHOOK_REC5_EXIT_ZERO_VALUE: {
		uint32_t k = r->d_nopen;
		while (k && r->d_open[k - 1] != d)
			k--;
		if (!k) {
			*skip_data = true;
			return LEAVE_OUT;
		}
		r->d_nopen = k - 1;
		*skip_data = false;
		(*events)++;
		return KEEP;
	}
	case CUHOOK_REC_DATA:
		return *skip_data ? LEAVE_OUT : KEEP;
	default: /* TIME, DROP, STACK (right after its ENTRY) */
		return KEEP;
	}
}

/* One thread's part of a dump: its records from where the last dump ended (or, if those were
 * overwritten since, from its oldest intact segment, which starts with a TIME record) up to its
 * cut. The segments are copied first, then checked: any the producer reopened meanwhile are
 * left out (they are the oldest ones). */
static void dump_ring(struct ring *r, uint64_t cut)
{
	if (cut <= r->dumped)
		return;
	const uint32_t nseg = r->size >> r->seg_shift;
	const uint64_t seg_bytes = 1ull << r->seg_shift;
	uint8_t *in = scratch(SCRATCH_DUMP_IN, r->size);
	uint64_t *out = scratch(SCRATCH_DUMP_OUT, r->size);
	if (!in || !out)
		return;
	/* Intact: a segment the thread will not overwrite by opening its next one, which it may be
	 * writing already before its head shows it (segments it is past, the one it is in). */
	uint64_t head0 = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	uint64_t lo = head0 + seg_bytes > r->size ? head0 + seg_bytes - r->size : 0;
	uint64_t from = r->dumped, oldest = (lo + seg_bytes - 1) & ~(seg_bytes - 1);
	bool gap = from < oldest;
	if (gap)
		from = oldest;
	struct piece {
		uint64_t start;
		uint32_t off, len;
	} pieces[RING_SEGS + 1];
	unsigned np = 0;
	uint32_t n = 0;
	for (uint64_t s = from & ~(seg_bytes - 1); s < cut && np < nseg + 1; s += seg_bytes) {
		/* a segment the head is past has its summary; the one it is in, records up to the cut */
		uint64_t e = head0 > s + seg_bytes ? s + r->seg[(s >> r->seg_shift) % RING_SEGS].used : cut;
		uint64_t b = from > s ? from : s;
		if (e > cut)
			e = cut;
		if (e <= b)
			continue;
		memcpy(in + n, r->data + ((uint32_t)b & (r->size - 1)), e - b);
		pieces[np++] = (struct piece){s, n, (uint32_t)(e - b)};
		n += (uint32_t)(e - b);
	}
	uint64_t head1 = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	uint64_t valid = head1 + seg_bytes > r->size ? head1 + seg_bytes - r->size : 0;
	unsigned first = 0;
	while (first < np && pieces[first].start < valid)
		first++;
	if (first) {
		gap = true;
		if (first == np) {
			r->dumped = cut;
			r->d_nopen = 0;
			return; /* all of it overwritten while it was copied */
		}
	}
	if (gap)
		r->d_nopen = 0; /* the file's open calls on this thread lost their EXITs */
	/* The copy, filtered into whole calls. */
	uint32_t epoch = r->w_epoch;
	uint64_t time_word = CUHOOK_REC5_TIME_WORD(epoch), events = 0;
	/* after a gap, DATA records before the first ENTRY or EXIT belong to a call outside it */
	bool skip_data = gap;
	uint32_t p = np ? pieces[first].off : 0, o = 0;
	while (p < n) {
		const uint64_t *q = (const uint64_t *)(in + p);
		unsigned nargs = 0;
		if (CUHOOK_REC5_TYPE(q[0]) == CUHOOK_REC5_ENTRY) {
			uint32_t f = CUHOOK_REC5_FUNC(q[0]);
			nargs = f < patch_count ? hooks_hot[f].nregs + hooks_hot[f].nstack : 0;
		}
		uint32_t len = cuhook_rec5_size(q, n - p, nargs);
		if (!len)
			break; /* cannot happen: segments hold whole records */
		if (CUHOOK_REC5_TYPE(q[0]) == CUHOOK_REC5_TIME)
			epoch = CUHOOK_REC5_TIME_EPOCH(q[0]);
		if (dump_filter(r, q, &skip_data, &events) == KEEP) {
			memcpy((uint8_t *)out + o, q, len);
			o += len;
		}
		p += len;
	}
	r->w_epoch = epoch;
	r->dumped = cut;
	if (!o)
		return;
	announce(r);
	struct cuhook_events_block eb = {r->tid, 0};
	struct iovec v = {out, o};
	if (put_blockv(CUHOOK_BLOCK_EVENTS, &eb, sizeof(eb), &time_word, &v, 1))
		W.events += events;
	else if (W.capped)
		W.cap_events += events;
}

/* A dump: tables, notes, stacks, every thread's window up to its cut, counts, a clock. */
static void dump_once(void)
{
	put_header_now();
	uint32_t func;
	const char *why = flight_take_reason(&func);
	static struct snapshot v;
	bool ok = take_snapshot(&v, true);
	flight_cuts_read();
	if (!ok)
		return;
	W.dumps++;
	char text[CLOSE_NOTE_MAX + 128];
	int tl = snprintf(text, sizeof(text), "flight recorder: dump %u: %s%s%s", W.dumps,
	                  why ? why : W.stop ? "the trace ends" : "asked for (cuhook dump)",
	                  func < patch_count ? " in " : "", func < patch_count ? patch_sites[func].name : "");
	put_note(0, text, (size_t)tl < sizeof(text) ? (size_t)tl : sizeof(text) - 1);
	put_notes();
	put_stacks();
	kernel_names_put(put_block);
	for (unsigned i = 0; i < v.n; i++) {
		struct ring *r = v.s[i].r;
		dump_ring(r, v.s[i].pos);
		put_counts(r, v.count_func, v.nslots);
		if (v.s[i].gone && r->dumped == __atomic_load_n(&r->head, __ATOMIC_ACQUIRE))
			ring_done(r); /* a thread gone, all of its records in the file */
	}
	put_clock();
	flight_dump_written();
}

/* A round of the flight recorder: the rings' memory, and a dump when one is due. */
static uint64_t flight_round(void)
{
	thread_rings_populate();
	if (flight_dump_due())
		dump_once();
	return 0;
}

/* How far the trace has come, for a tool outside the process (cuhook run's and attach's status
 * line, cuhook_agent_control): the writer's own counts, after a round. */
static void publish_progress(void)
{
	volatile struct cuhook_agent_control *c = &cuhook_agent_control;
	__atomic_store_n(&c->events, W.events, __ATOMIC_RELAXED);
	__atomic_store_n(&c->counted, W.counted, __ATOMIC_RELAXED);
	__atomic_store_n(&c->bytes, W.bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&c->dropped, W.dropped + W.cap_events, __ATOMIC_RELAXED);
}

/* One round: tables, notes, stacks, every ring drained, counts, GPU blocks. Returns the bytes of
 * records it drained. */
static uint64_t round_once(void)
{
	inbox_take();
	if (W.flight)
		return flight_round();
	static struct snapshot v;
	if (!take_snapshot(&v, false))
		return 0;
	uint64_t moved = 0;
	thread_rings_populate();
	put_notes();
	put_stacks();
	kernel_names_put(put_block); /* before the events whose launches they name */
	for (unsigned i = 0; i < v.n; i++) {
		moved += drain(v.s[i].r, v.s[i].pos);
		put_counts(v.s[i].r, v.count_func, v.nslots);
		if (v.s[i].gone)
			ring_done(v.s[i].r); /* drained for the last time */
	}
	if (W.gpu)
		put_gpu();
	if (monotonic_ns() - W.last_clock_ns > 500000000ull)
		put_clock();
	return moved;
}

static bool claim_close(int who)
{
	int none = CLOSER_NONE;
	return __atomic_compare_exchange_n(&W.closer, &none, who, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

static void finish_file(const char *why);

/* Prepared and not started: wait for writer_start(), touching nothing. True when started (the
 * session may be over already: the loop then does its part of the close); false when this
 * preparation was discarded (or replaced by a newer one): then leave at once, without a round
 * and without W.done, which belong to the current writer. */
static bool wait_for_start(uint32_t me)
{
	for (;;) {
		uint32_t go = __atomic_load_n(&W.go, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&W.gen, __ATOMIC_ACQUIRE) != me)
			return false;
		if (go)
			return true;
		if (W.stop)
			return false;
		syscall(SYS_futex, &W.go, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	}
}

/* How long a session the writer ends itself (a recording window's end, the injector gone) waits
 * for the recorded calls still running to return, so that their EXITs are in the file. */
#define ENDING_CALLS_WAIT_MS 1000

static bool recorded_hook(uint32_t id)
{
	return id < patch_count && (hooks_hot[id].flags & HOOK_RECORD);
}

static void *writer_main(void *gen)
{
	own_thread_enter();
	thread_state_mark_internal();
	hook_own_tid = (int)gettid();
	if (!wait_for_start((uint32_t)(uintptr_t)gen)) {
		own_thread_leave(); /* as below: while this id is still ours */
		return NULL;
	}
	/* A round every flush_ms, and whenever a thread asks to be drained; between rounds, only
	 * what populating the rings needs. The wake bits are taken before the work they ask for, so
	 * none that comes during it is lost. The injector watch is asked only once started: a
	 * preparation never started has no injector to lose. */
	char why_end[CLOSE_NOTE_MAX];
	bool ending = false;
	uint64_t next_round = 0;
	while (!W.stop) {
		uint32_t why = to_writer_take_wakes();
		uint64_t now = monotonic_ns();
		if ((why & ~(uint32_t)WAKE_POPULATE) || now >= next_round) {
			/* A round that moved much means threads record fast: the next one at once, so
			 * that none of them waits for room while the writer sleeps. */
			uint64_t moved = round_once();
			publish_progress();
			next_round = moved >= KEEP_DRAINING_BYTES ? 0 : monotonic_ns() + W.flush_ms * 1000000ull;
			/* The injector that started us is gone, or late past its deadline: nobody will
			 * stop this session, so the writer ends it (unless a stop is claiming it right
			 * now). Likewise at the end of a recording window (capture_range.h). */
			if ((injector_watch_gone(why_end, sizeof(why_end)) || capture_window_over(why_end, sizeof(why_end))) &&
			    claim_close(CLOSER_WRITER)) {
				W.stop = 1;
				ending = true;
				break;
			}
		} else {
			thread_rings_populate();
		}
		now = monotonic_ns();
		uint64_t left = next_round > now ? next_round - now : 0;
		struct timespec t = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
		if (!W.stop && left)
			to_writer_wait(&t);
	}
	/* Done: threads waiting for room in a full ring stop waiting (their record is dropped and
	 * counted) rather than depend on the closing thread's last round, which may never come if
	 * cuhook backs out of a stop; and the closing thread may go on. What the thread does after
	 * returning (glibc frees its caches, which takes a malloc arena lock a stopped thread may
	 * hold) is nobody's wait: the thread is detached. */
	__atomic_store_n(&cuhook_writer_alive, 0, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (struct ring *r = thread_rings(); r; r = r->next)
		if (__atomic_load_n(&r->tail_waiting, __ATOMIC_RELAXED))
			syscall(SYS_futex, (uint32_t *)&r->tail, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	if (ending) {
		/* Calls pass straight through from now on (the jumps stay: writing code while the
		 * program runs is not the writer's business); the file gets the last events, the
		 * reason (in the room kept for it below a size cap) and its END block. The agent
		 * learns it at its next start or stop (writer_ended_itself). */
		/* The GPU session first, while calls are still recorded: every API record CUPTI
		 * makes until it is disabled then lies in a recorded call (the program's threads run:
		 * CUPTI is flushed into the last round). */
		if (W.gpu)
			gpu_stop();
		__atomic_store_n(&cuhook_recording, 0, __ATOMIC_RELEASE);
		/* The calls recorded and still running (a window closed in the middle of one) get
		 * their EXIT all the same (record.c): wait for them, draining, at most
		 * ENDING_CALLS_WAIT_MS, so that the file holds them whole. The program's threads run;
		 * a call that outlasts the wait ends the file without its EXIT, as before. */
		uint64_t calls_deadline = monotonic_ns() + ENDING_CALLS_WAIT_MS * 1000000ull;
		while (thread_recorded_calls_open(recorded_hook) && monotonic_ns() < calls_deadline) {
			round_once();
			struct timespec nap = {0, 1000000};
			nanosleep(&nap, NULL);
		}
		finish_file(why_end[0] ? why_end : NULL); /* a window's end says itself in its NOTE */
	}
	own_thread_leave(); /* while this id is still ours: no other thread can have it yet */
	__atomic_store_n(&W.done, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &W.done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return NULL;
}

static size_t read_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t len = 0;
	ssize_t n;
	while (len < cap && (n = read(fd, buf + len, cap - len)) > 0)
		len += (size_t)n;
	close(fd);
	return len;
}

int writer_prepare(const char *path, const struct writer_opts *o, char *err, size_t errlen)
{
	int fd = cuhook_out_create(path, o->replace, "trace file",
	                           "not replaced without force=1 (cuhook --force, CUHOOK_FORCE=1); or choose another name",
	                           err, errlen);
	if (fd < 0)
		return fd;
	W.fd = fd;
	W.stop = 0;
	W.closer = CLOSER_NONE;
	W.seq = 0;
	W.failed = 0;
	W.events = W.dropped = W.counted = 0;
	W.max_size = o->max_size;
	W.capped = W.closing = 0;
	W.cap_events = W.cap_counted = 0;
	W.libs_written = 0;
	W.funcs_written = 0;
	W.gpu = o->gpu;
	W.gpu_records = 0;
	/* A new file (a second attach, a fork child's) defines again every stack it will name. */
	W.stacks = o->stacks;
	W.maps_digest = 0;
	W.stacks_full_noted = false;
	stack_table_rewind();
	py_frames_rewind();
	kernel_names_new_file(); /* every kernel name and graph again */
	W.flush_ms = o->flush_ms ? o->flush_ms : 50;

	static char cmdline[4096], exe[PATH_MAX];
	size_t cl = read_file("/proc/self/cmdline", cmdline, sizeof(cmdline));
	ssize_t el = readlink("/proc/self/exe", exe, sizeof(exe));
	if (el < 0)
		el = 0;
	struct cuhook_file_header h;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, CUHOOK_TRACE_MAGIC, 8);
	h.version = CUHOOK_TRACE_VERSION;
	h.header_size = (uint32_t)CUHOOK_ALIGN8(sizeof(h) + cl + (size_t)el);
	h.pid = (uint32_t)getpid();
	h.ppid = (uint32_t)getppid();
	h.clock_source = cuhook_clock_monotonic ? CUHOOK_CLOCK_MONOTONIC : CUHOOK_CLOCK_TSC;
	h.cmdline_len = (uint32_t)cl;
	h.exe_len = (uint32_t)el;
	h.flags = o->flags;
	h.start_tsc = __builtin_ia32_rdtsc();
	h.start_monotonic_ns = monotonic_ns();
	h.start_realtime_ns = clock_ns(CLOCK_REALTIME);
	h.buffer_bytes = thread_ring_bytes;
	static const uint8_t zeros[8];
	struct iovec iov[4] = {{&h, sizeof(h)}, {cmdline, cl}, {exe, (size_t)el},
	                       {(void *)zeros, h.header_size - sizeof(h) - cl - (size_t)el}};
	W.flight = o->flight;
	W.dumps = 0;
	W.header_pending = false;
	if (W.flight) {
		/* nothing in the file until a dump: the header is kept for it */
		size_t off = 0;
		for (int i = 0; i < 4; i++) {
			memcpy(W.header + off, iov[i].iov_base, iov[i].iov_len);
			off += iov[i].iov_len;
		}
		W.header_len = off;
		W.header_pending = true;
		W.bytes = 0;
	} else if (writev(fd, iov, 4) != (ssize_t)h.header_size) {
		int e = errno ? errno : EIO;
		snprintf(err, errlen, "cannot write trace file '%s': %s", path, strerror(e));
		close(fd);
		W.fd = -1;
		return -e;
	}
	if (!W.flight) {
		W.bytes = h.header_size;
		put_clock();
	}

	/* The thread is created now, while the program's threads run: pthread_create takes glibc's
	 * locks (the thread list, the stack cache), which a thread stopped by cuhook for the start
	 * may hold. It waits for writer_start(). It runs until W.stop or a newer preparation,
	 * neither of which can come before this: the handle stays valid here. Listed as the agent's
	 * own (for the injector, which stops every other thread for the start) before it may even
	 * have run. */
	pthread_t thread;
	W.done = 0;
	__atomic_store_n(&W.go, 0, __ATOMIC_RELEASE);
	uint32_t gen = __atomic_add_fetch(&W.gen, 1, __ATOMIC_ACQ_REL);
	int rc = own_thread_create(&thread, writer_main, (void *)(uintptr_t)gen, "cuhook-writer");
	if (rc != 0) {
		snprintf(err, errlen, "cannot start the writer thread: %s", strerror(rc));
		close(fd);
		W.fd = -1;
		return -rc;
	}
	thread_stacks_learn(thread);
	return 0;
}

void writer_start(void)
{
	/* A new file (a second attach): name every thread again, and forget what a previous
	 * session left in the rings (calls that were in flight when it stopped, calls counted
	 * since). */
	for (struct ring *r = thread_rings(); r; r = r->next) {
		if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) != RING_LIVE)
			continue; /* a ring a thread takes is made new by that thread */
		r->announced = 0;
		/* the producer's counts at the new tail (a record committed meanwhile by a thread
		 * that runs could be counted on the wrong side: threads are stopped at an attach) */
		r->w_events = __atomic_load_n(&r->events, __ATOMIC_ACQUIRE);
		r->w_drops = __atomic_load_n(&r->drops_reported, __ATOMIC_ACQUIRE);
		uint32_t epoch = __atomic_load_n(&r->epoch, __ATOMIC_ACQUIRE);
		r->w_epoch = epoch == UINT32_MAX ? 0 : epoch;
		uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		publish_tail(r, head);
		r->dumped = r->cut = head; /* the flight recorder's dumps start here too */
		r->d_nopen = 0;
		for (unsigned c = 0; c < RING_COUNT_SLOTS; c++)
			r->counts_seen[c] = __atomic_load_n(&r->counts[c], __ATOMIC_RELAXED);
	}
	flight_session(W.flight);
	publish_progress(); /* this session's: nothing yet */
	__atomic_add_fetch(&cuhook_agent_control.sessions, 1, __ATOMIC_RELEASE);
	inbox_session_begins();
	__atomic_add_fetch(&cuhook_session, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&cuhook_writer_alive, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&W.go, 1, __ATOMIC_RELEASE);
	/* every waiter: an older writer whose preparation was discarded may wait there too */
	syscall(SYS_futex, &W.go, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

void writer_discard(void)
{
	if (W.fd < 0 || __atomic_load_n(&W.go, __ATOMIC_ACQUIRE))
		return; /* nothing prepared, or started (writer_close's business) */
	W.stop = 1;
	syscall(SYS_futex, &W.go, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	/* The waiting thread never touches the file: no need to wait for it to leave. */
	close(W.fd);
	W.fd = -1;
	/* The notes were for that file. (Tried only: this may run with the other threads stopped;
	 * none of them takes this lock while nothing is started, but should one hold it, its notes
	 * go into the next file rather than this waiting for it.) */
	to_writer_drop_notes();
}

int writer_open(const char *path, const struct writer_opts *o, char *err, size_t errlen)
{
	int rc = writer_prepare(path, o, err, errlen);
	if (rc == 0)
		writer_start();
	return rc;
}

void writer_close(void)
{
	writer_close_within(-1);
}

int writer_close_within(int timeout_ms)
{
	if (W.fd < 0)
		return 0;
	/* A call that timed out before claimed it already: this one finishes for it. */
	bool mine = claim_close(CLOSER_CALLER) || __atomic_load_n(&W.closer, __ATOMIC_ACQUIRE) == CLOSER_CALLER;
	W.stop = 1;
	writer_wake();
	/* Wait for the thread to leave its loop (W.done), not for the thread to end (a join): see
	 * writer_main. */
	uint64_t until = monotonic_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000ull;
	while (!__atomic_load_n(&W.done, __ATOMIC_ACQUIRE)) {
		struct timespec t = {0, 100000000L}, *tp = NULL;
		if (timeout_ms >= 0) {
			uint64_t now = monotonic_ns();
			if (now >= until)
				return -1; /* the writer is still running: the file is its to finish */
			uint64_t left = until - now < 100000000ull ? until - now : 100000000ull;
			t.tv_nsec = (long)left;
			tp = &t;
		}
		syscall(SYS_futex, &W.done, FUTEX_WAIT_PRIVATE, 0, tp, NULL, 0);
	}
	/* cuhook_writer_alive is 0 already: the writer cleared it as it left */
	if (mine)
		finish_file(NULL);
	/* else the writer ended the session itself and closed the file before W.done */
	return 0;
}

/* A closing NOTE: its text cut to CLOSE_NOTE_MAX bytes, the room kept for it. */
static void put_closing_note(const char *text)
{
	size_t len = strlen(text);
	put_note(1, text, len < CLOSE_NOTE_MAX ? len : CLOSE_NOTE_MAX - 1);
}

/* The last round, the END block, close. From the thread that stops the session (the program's,
 * at exit or at stop) once the writer has left its loop, or from the writer itself, which says
 * why it ended the session. */
static void finish_file(const char *why)
{
	/* A file size limit must not kill the program with SIGXFSZ: block it while writing and
	 * discard one that our writes raised. */
	sigset_t xfsz, old, pending;
	sigemptyset(&xfsz);
	sigaddset(&xfsz, SIGXFSZ);
	pthread_sigmask(SIG_BLOCK, &xfsz, &old);
	sigpending(&pending);
	int was_pending = sigismember(&pending, SIGXFSZ);
	inbox_take(); /* a note handed over since the last round */
	if (W.flight) {
		/* a trigger's dump first, then everything since: the end is a dump too */
		if (flight_dump_due())
			dump_once();
		dump_once();
		flight_session(false);
	} else {
		round_once();
	}
	uint32_t threads = 0;
	for (struct ring *r = thread_rings(); r; r = r->next) {
		if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) != RING_LIVE)
			continue; /* drained and counted already, free for a new thread */
		threads++;
		W.dropped += r->dropped;
	}
	W.closing = 1;
	put_clock();
	if (why)
		put_closing_note(why);
	uint64_t kn_full, kn_unlisted, kn_failed;
	int kn_err;
	kernel_names_losses(&kn_full, &kn_unlisted, &kn_failed, &kn_err);
	if (kn_full || kn_unlisted || kn_failed) {
		char text[CLOSE_NOTE_MAX];
		snprintf(text, sizeof(text), "kernel names, in this process so far: %llu launches beyond the names "
		         "table, %llu graphs not listed, %llu handles the driver did not name (CUresult %d)",
		         (unsigned long long)kn_full, (unsigned long long)kn_unlisted, (unsigned long long)kn_failed,
		         kn_err);
		put_closing_note(text);
	}
	if (W.capped) {
		char text[CLOSE_NOTE_MAX];
		snprintf(text, sizeof(text), "trace size cap of %llu bytes reached: %llu event records "
		         "(counted as dropped) and %llu counted calls after it were not written",
		         (unsigned long long)W.max_size, (unsigned long long)W.cap_events,
		         (unsigned long long)W.cap_counted);
		put_closing_note(text);
	}
	struct cuhook_end_block e = {W.events, W.dropped + W.cap_events, threads, 0};
	put_block(CUHOOK_BLOCK_END, &e, sizeof(e), NULL, 0);
	publish_progress();
	close(W.fd);
	W.fd = -1;
	if (!was_pending) {
		struct timespec zero = {0, 0};
		sigpending(&pending);
		if (sigismember(&pending, SIGXFSZ))
			sigtimedwait(&xfsz, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

bool writer_ended_itself(void)
{
	return __atomic_load_n(&W.done, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&W.closer, __ATOMIC_ACQUIRE) == CLOSER_WRITER;
}

void writer_forget_after_fork(void)
{
	if (W.fd >= 0)
		close(W.fd);
	W.fd = -1;
	W.stop = 1;
	to_writer_after_fork();
}
