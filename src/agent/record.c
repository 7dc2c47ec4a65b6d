/* The per-call path: the C handlers the assembly stubs call on every traced function's entry
 * and exit. Built with -mgeneral-regs-only (the traced function's float arguments and results
 * live in xmm registers that this code must not touch) and without builtin memcpy/memset calls;
 * the rare paths that need libc go through cuhook_call_saving_vectors. No locks, no allocation,
 * no system calls here. */
#include "record.h"

#include "decoders.h"
#include "exit_watch.h"
#include "flight.h"
#include "hook_table.h"
#include "kernel_names.h"
#include "nvfd.h"
#include "stack_capture.h"
#include "stub_frame.h"
#include "thread_state.h"
#include "trace_format.h"

#include <stdbool.h>
#include <stddef.h>

#define PAGE 4096u
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* The assembly fast paths (stubs.S) read these structures through the offsets in stub_frame.h. */
#define FAST_CHECK(c) _Static_assert(c, "stub_frame.h offsets out of date: " #c)
FAST_CHECK(offsetof(struct thread_state, busy) == TS_BUSY);
FAST_CHECK(offsetof(struct thread_state, depth) == TS_DEPTH);
FAST_CHECK(offsetof(struct thread_state, no_record) == TS_NO_RECORD);
FAST_CHECK(offsetof(struct thread_state, stack_lo) == TS_STACK_LO);
FAST_CHECK(offsetof(struct thread_state, stack_hi) == TS_STACK_HI);
FAST_CHECK(offsetof(struct thread_state, ring) == TS_RING);
FAST_CHECK(offsetof(struct thread_state, busy_sp) == TS_BUSY_SP);
FAST_CHECK(offsetof(struct thread_state, shadow) == TS_SHADOW);
FAST_CHECK(sizeof(struct shadow_entry) == 1u << SH_SHIFT);
FAST_CHECK(offsetof(struct thread_state, shadow) % 64 == 0);
FAST_CHECK(offsetof(struct shadow_entry, ret) == SH_RET);
FAST_CHECK(offsetof(struct shadow_entry, slot) == SH_SLOT);
FAST_CHECK(offsetof(struct shadow_entry, id) == SH_ID);
FAST_CHECK(offsetof(struct shadow_entry, has_args) == SH_HAS_ARGS);
FAST_CHECK(offsetof(struct shadow_entry, unrecorded) == SH_HAS_ARGS + 1);
FAST_CHECK(offsetof(struct shadow_entry, args) == SH_ARGS);
FAST_CHECK(offsetof(struct ring, head) == RING_HEAD);
FAST_CHECK(offsetof(struct ring, limit) == RING_LIMIT);
FAST_CHECK(offsetof(struct ring, size) == RING_SIZE);
FAST_CHECK(offsetof(struct ring, data) == RING_DATA);
FAST_CHECK(offsetof(struct ring, tail) == 128);
FAST_CHECK(offsetof(struct ring, counts) == RING_COUNTS);
FAST_CHECK(sizeof(struct hook_hot) == 1u << HOT_SHIFT);
FAST_CHECK(offsetof(struct hook_hot, relocated) == HOT_RELOCATED);
FAST_CHECK(offsetof(struct hook_hot, decoder) == HOT_DECODER);
FAST_CHECK(offsetof(struct hook_hot, flags) == HOT_FLAGS);
FAST_CHECK(offsetof(struct hook_hot, nstack) == HOT_NSTACK);
FAST_CHECK(offsetof(struct hook_hot, fast_out) == HOT_FAST_OUT);
FAST_CHECK(SHADOW_ARGS <= FAST_OUT_ARG + 1 && SHADOW_ARGS == CUHOOK_DECODER_ARGS);
FAST_CHECK(HOOK_RECORD == FAST_HOOK_FLAGS);
FAST_CHECK(SHADOW_MAX == FAST_SHADOW_MAX);
FAST_CHECK(CUHOOK_REC5_EXIT == FAST_EXIT_TYPE && CUHOOK_REC5_EXIT_VALUE == FAST_EXITV_TYPE);
FAST_CHECK(CUHOOK_REC5_EXIT_ZERO == FAST_EXITZ_TYPE && CUHOOK_REC5_EXIT_ZERO_VALUE == FAST_EXITZV_TYPE);
FAST_CHECK(CUHOOK_REC5_WORD(0, 1, 0, 0) == 1u << FAST_DEPTH_SHIFT);
FAST_CHECK(CUHOOK_REC5_WORD(0, 0, 1, 0) == 1u << FAST_FUNC_SHIFT);
FAST_CHECK(CUHOOK_REC5_WORD(0, 0, 0, 1) == 1ull << FAST_TSC_SHIFT);
FAST_CHECK(CUHOOK_REC5_TSC_BITS == FAST_EPOCH_SHIFT && FAST_TSC_SHIFT + FAST_EPOCH_SHIFT == 64);
FAST_CHECK(SHADOW_MAX < 256); /* a depth fits the record word's 8 bits */
FAST_CHECK(offsetof(struct hook_hot, entry_hdr) == HOT_ENTRY_HDR);
FAST_CHECK(offsetof(struct hook_hot, entry_info) == HOT_ENTRY_INFO);
FAST_CHECK(8 + 8 * (6 + CUHOOK_MAX_STACK_ARGS) == FAST_ENTRY_MAX);
FAST_CHECK(HOOK_STACK_DEFAULT == CUHOOK_MAX_STACK_ARGS && HOOK_REGS_DEFAULT == 6);
FAST_CHECK(offsetof(struct ring, epoch) == RING_EPOCH && offsetof(struct ring, events) == RING_EVENTS);
FAST_CHECK(offsetof(struct ring, drops_reported) == 64);

int cuhook_lossy;
/* Successful graph launches (kernel_names_hot.h counts them at their exit): a GPU session's stop
 * asks whether any came while CUPTI recorded (gpu_activity.c). */
uint64_t kn_graph_launches;
volatile int cuhook_writer_alive;
volatile uint32_t cuhook_session;

/* The stubs read cuhook_tls through this copy of its offset (record.h). Set before anything can
 * arm a hook: priority 101 runs before the agent's own constructor, and every start comes
 * later still. */
__attribute__((constructor(101))) static void record_tls_offset_init(void)
{
	uintptr_t off;
	__asm__("movq cuhook_tls@gottpoff(%%rip), %0" : "=r"(off));
	cuhook_tls_offset = off;
	__asm__("movq cuhook_tls_ring@gottpoff(%%rip), %0" : "=r"(off));
	cuhook_tls_ring_offset = off;
}

uint8_t record_fast_out(uint16_t decoder)
{
	if (!decoder || decoder >= cuhook_decoder_count)
		return 0;
	const struct cuhook_decoder *dec = &cuhook_decoders[decoder];
	if (dec->str_kind != CUHOOK_STR_NONE || dec->out_arg[0] >= SHADOW_ARGS ||
	    dec->out_arg[1] != CUHOOK_NO_ARG || (dec->out_size[0] != 4 && dec->out_size[0] != 8))
		return 0;
	return (uint8_t)(FAST_OUT_VALID | (dec->out_size[0] == 4 ? FAST_OUT_4BYTE : 0) | dec->out_arg[0]);
}

static inline uint64_t now(void)
{
	if (likely(!cuhook_clock_monotonic))
		return __builtin_ia32_rdtsc();
	/* vDSO code may use vector registers: go through the saving shim (a fallback mode). */
	return cuhook_call_saving_vectors(record_monotonic_ns, NULL);
}

static __attribute__((noinline, cold)) void ring_kick_writer(void)
{
	if (cuhook_writer_alive)
		cuhook_call_saving_vectors(record_kick_writer, NULL);
}

static __attribute__((noinline, cold)) void ring_ask_populate(void)
{
	if (cuhook_writer_alive)
		cuhook_call_saving_vectors(record_ask_populate, NULL);
}

/* A reservation: where the record goes, and what its commit changes in the ring. Nothing of the
 * ring's state changes before the commit: a handler left by siglongjmp between the two (a signal
 * handler that interrupted this one jumped out) leaves the ring as it was, its reserved bytes
 * unpublished. */
struct resv {
	uint64_t at;        /* the record's position */
	uint64_t head;      /* the head when reserved (the end of the segment it closes, if any) */
	uint64_t limit;     /* the fast paths' limit after the commit */
	uint32_t epoch;     /* the epoch in force after the commit */
	bool new_seg;       /* the record opens a new segment after one that needs its summary */
};

/* Reserve `need` bytes (a multiple of 8) for a record of the given epoch, in the open segment or
 * in the next one (which then starts with a TIME record), with a TIME record first when the
 * epoch changes. Returns where the record goes, or NULL when the next segment is not free yet
 * (*want_tail: the tail that frees it). The record, and any TIME record before it, become
 * visible to the writer at ring_commit(). */
static inline __attribute__((always_inline)) uint8_t *ring_reserve(struct ring *r, uint32_t need, uint32_t epoch,
                                                                   struct resv *v, uint64_t *want_tail)
{
	uint64_t head = r->head;
	uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
	/* Half full: wake the writer now rather than at its next flush_ms tick, so a thread that
	 * records faster than the ring drains at that pace never waits for it. The fast paths come
	 * here when they pass `limit`: at half full (once per tail value), then at each segment's
	 * end. */
	const uint32_t half = r->size / 2;
	uint64_t limit;
	if (unlikely(cuhook_flight)) {
		limit = UINT64_MAX; /* the flight recorder: nobody drains, nobody is woken */
	} else if (head - tail >= half) {
		if (r->kicked != tail + 1) {
			r->kicked = tail + 1;
			ring_kick_writer();
		}
		limit = UINT64_MAX;
	} else {
		limit = tail + half;
	}
	/* The first lap's memory comes in as the ring fills (thread_state.h): within reach of the
	 * populated part's end, ask the writer for more, once per end, and come back here a quarter
	 * of the way on to look again; before that, come back when entering that reach. A thread
	 * that outruns the writer takes the page faults itself. */
	uint64_t pop = __atomic_load_n(&r->populated, __ATOMIC_RELAXED);
	if (unlikely(pop < r->size) && head < r->size) {
		uint64_t ahead = ring_populate_ahead(head);
		uint64_t check = head + ahead < pop ? pop - ahead : head + ahead / 4;
		if (head + ahead >= pop && r->populate_asked != pop) {
			r->populate_asked = pop;
			ring_ask_populate();
		}
		if (limit > check)
			limit = check;
	}
	/* The open segment is the one the head is inside; a head on a segment's start (a fresh ring,
	 * or a record that ended exactly at the end of one) has none open. */
	const uint64_t seg_bytes = 1ull << r->seg_shift;
	const bool none_open = (head & (seg_bytes - 1)) == 0;
	uint64_t seg_end = none_open ? head : (head | (seg_bytes - 1)) + 1;
	uint32_t time_len = epoch != r->epoch ? 8u : 0u;
	uint64_t at = head;
	v->new_seg = false;
	if (unlikely(none_open || head + time_len + need > seg_end)) {
		/* The next segment, whole: a segment is opened only when all of it is free, or, in
		 * the flight recorder, the oldest is overwritten (a dump checks what it copied). */
		if (seg_end + seg_bytes - tail > r->size && likely(!cuhook_flight)) {
			*want_tail = seg_end + seg_bytes - r->size;
			r->limit = 0; /* come back here: this record, or the next, waits or is dropped */
			return NULL;
		}
		v->new_seg = head > 0; /* the segment before it gets its summary */
		at = seg_end;
		seg_end += seg_bytes;
		time_len = 8; /* every segment starts with a TIME record (a dump reads from there) */
	}
	/* The fast paths write below `limit` only: never past the open segment. */
	v->limit = limit < seg_end ? limit : seg_end;
	v->head = head;
	v->epoch = epoch;
	if (time_len) {
		*(uint64_t *)(r->data + ((uint32_t)at & (r->size - 1))) = CUHOOK_REC5_TIME_WORD(epoch);
		at += 8;
	}
	v->at = at;
	return r->data + ((uint32_t)at & (r->size - 1));
}

/* The summary of the segment that ends where the record's new segment starts (thread_state.h),
 * for the writer: written before the head moves past that segment's end. Nothing else
 * describes a segment: which one is open follows from the head alone, so a commit left by
 * siglongjmp half done leaves nothing that disagrees (the summary is written again, the same). */
static inline __attribute__((always_inline)) void seg_summary(struct ring *r, const struct resv *v)
{
	uint64_t k = ((v->at - 8) >> r->seg_shift) - 1; /* v->at: after the new segment's TIME record */
	struct ring_seg *s = &r->seg[k % RING_SEGS];
	s->used = (uint32_t)(v->head - ring_seg_start(r, k));
	s->epoch_end = r->epoch;
	s->events_end = r->events;
	s->drops_end = r->drops_reported;
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

/* Publish a reserved record of `len` bytes (and the TIME record before it, if any): `events`
 * ENTRY/EXIT records, `drops` records reported dropped. Every change to the ring is here, the
 * head last. */
static inline __attribute__((always_inline)) void ring_commit(struct ring *r, const struct resv *v, uint32_t len,
                                                              unsigned events, uint64_t drops)
{
	if (unlikely(v->new_seg))
		seg_summary(r, v);
	r->epoch = v->epoch;
	r->events += events;
	r->drops_reported += drops;
	r->dropped -= drops;
	r->limit = unlikely(r->dropped) ? 0 : v->limit;
	__atomic_store_n(&r->head, v->at + len, __ATOMIC_RELEASE);
}

/* Rare path: the next segment is not free. Waits for the writer in lossless mode (through the
 * vector-saving shim: it sleeps in libc); returns the record space or NULL if the record must
 * be dropped. */
static __attribute__((noinline, cold)) uint8_t *ring_reserve_slow(struct thread_state *ts, uint32_t need, uint32_t epoch,
                                                                  struct resv *v, uint64_t want_tail)
{
	struct ring *r = ts->ring;
	if (!cuhook_lossy && cuhook_writer_alive) {
		uint32_t session = __atomic_load_n(&cuhook_session, __ATOMIC_ACQUIRE);
		struct ring_wait_arg a = {r, want_tail, &cuhook_writer_alive};
		cuhook_call_saving_vectors(record_wait_for_space, &a);
		/* The wait may outlast the trace it was for (the writer gone at a stop, the thread not
		 * run again until a later attach opened a new file): this record belongs to none. */
		if (__atomic_load_n(&cuhook_session, __ATOMIC_ACQUIRE) != session)
			return NULL;
		uint8_t *p = ring_reserve(r, need, epoch, v, &want_tail);
		if (p)
			return p;
	}
	r->dropped++;
	r->limit = 0; /* the fast paths come here first: the drops are reported before any record */
	return NULL;
}

/* Report drops as soon as there is room again, so a reader sees where records are missing. */
static __attribute__((noinline, cold)) void emit_drops(struct ring *r)
{
	struct resv v;
	uint64_t want = 0;
	uint64_t t = now();
	uint8_t *p = ring_reserve(r, sizeof(struct cuhook_rec_drop), r->epoch, &v, &want);
	if (!p)
		return;
	struct cuhook_rec_drop *d = (struct cuhook_rec_drop *)p;
	d->h.type = CUHOOK_REC_DROP;
	d->h.flags = 0;
	d->h.size = sizeof(*d);
	d->h.func = 0;
	d->tsc = t;
	d->count = r->dropped;
	ring_commit(r, &v, sizeof(*d), 0, d->count);
}

/* Room for a record of `need` bytes taken at time t (0: of no time of its own, as a DATA
 * record, which follows a record of the epoch in force). */
static inline __attribute__((always_inline)) uint8_t *reserve(struct thread_state *ts, uint32_t need, uint64_t t,
                                                              struct resv *v)
{
	struct ring *r = ts->ring;
	if (unlikely(r->dropped))
		emit_drops(r);
	uint32_t epoch = t ? CUHOOK_REC5_EPOCH(t) : r->epoch;
	uint64_t want_tail = 0;
	uint8_t *p = ring_reserve(r, need, epoch, v, &want_tail);
	if (unlikely(!p))
		p = ring_reserve_slow(ts, need, epoch, v, want_tail);
	return p;
}

/* How many of the caller's stack slots above the return address can be read without risk:
 * up to the top of this thread's stack, or to the end of the current page on a stack we do not
 * know (sigaltstack, coroutines). */
static inline unsigned readable_stack_slots(const struct thread_state *ts, uintptr_t sp)
{
	uintptr_t limit;
	if (sp >= ts->stack_lo && sp < ts->stack_hi)
		limit = ts->stack_hi;
	else
		limit = (sp | (PAGE - 1)) + 1;
	uintptr_t n = (limit - sp) / 8;
	return n < CUHOOK_MAX_STACK_ARGS ? (unsigned)n : CUHOOK_MAX_STACK_ARGS;
}

static inline int on_thread_stack(const struct thread_state *ts, uintptr_t a)
{
	return a >= ts->stack_lo && a < ts->stack_hi;
}

uintptr_t cuhook_on_entry(struct entry_frame *f)
{
	const uint32_t id = (uint32_t)f->id;
	const struct hook_hot *hh = &hooks_hot[id];
	/* _exit (exit_watch.h): close the trace, then on into the kernel. Needs no thread state. */
	if (unlikely(hh->flags & HOOK_PROC_EXIT)) {
		cuhook_call_saving_vectors(exit_watch_on_exit, NULL);
		return hh->relocated;
	}
	/* The ioctl watch (nvfd.h): an ioctl on a file that is not an NVIDIA device passes straight
	 * through; the fd-changing calls update the fd table. Needs no thread state. */
	if (unlikely(hh->flags & (HOOK_IOCTL | HOOK_FDOP)) && !nvfd_entry(hh, f))
		return hh->relocated;
	struct thread_state *ts = cuhook_tls;
	if (unlikely(!ts)) {
		/* fd calls never create thread state: in a thread without it their entry side is
		 * enough (nvfd.h), and a vfork child must not make the parent's */
		if ((!cuhook_recording && !(hh->flags & HOOK_CALLBACK)) || (hh->flags & HOOK_FDOP))
			return hh->relocated;
		ts = (struct thread_state *)cuhook_call_saving_vectors(thread_state_create, NULL);
		if (!ts)
			return hh->relocated;
	}
	if (unlikely(hh->flags & HOOK_COUNT)) {
		/* Counted even while busy: the increment is one instruction on the thread's own
		 * counter (as in the count thunks, hook_table.c), so a signal handler's count is never lost. */
		if (likely(cuhook_recording) && !ts->no_record && ts->ring)
			__asm__ volatile("incq %0" : "+m"(ts->ring->counts[hh->aux]));
		return hh->relocated;
	}
	const uintptr_t slot = (uintptr_t)&f->ret;
	if (unlikely(ts->busy)) {
		/* Busy because a handler of ours runs below us on this stack (a signal interrupted it):
		 * pass through. Busy although the handler that set it lies below a frame we are now
		 * above on the same stack: that handler was left by siglongjmp; it is gone. */
		if (!(on_thread_stack(ts, slot) && on_thread_stack(ts, ts->busy_sp) && slot > ts->busy_sp))
			return hh->relocated;
	}
	ts->busy = 1;
	ts->busy_sp = (uintptr_t)f;
	uint32_t d = ts->depth;
	/* Shadow entries whose return slot is at or below this call's, on the same stack, belong to
	 * frames that no longer exist (left by longjmp without returning): drop them, so depth and
	 * the returns of live frames stay right. */
	if (unlikely(d > 0 && ts->shadow[d - 1].slot <= slot)) {
		while (d > 0 && ts->shadow[d - 1].slot <= slot && on_thread_stack(ts, slot) &&
		       on_thread_stack(ts, ts->shadow[d - 1].slot))
			d--;
		ts->depth = d;
	}
	uint8_t rec_flags = 0;
	uint8_t unrecorded = 1;

	if (likely(hh->flags & HOOK_RECORD) && likely(cuhook_recording) && !ts->no_record) {
		unrecorded = 0;
		/* Who made the call (stacks=): taken before the entry's time, so that the call's
		 * duration does not include it; its STACK record goes right after the ENTRY, in the
		 * same reservation (both or neither). libunwind may touch vector registers: through
		 * the saving shim. */
		uint32_t stack = 0, stack_len = 0;
		if (unlikely(hh->flags & HOOK_STACK)) {
			stack = (uint32_t)cuhook_call_saving_vectors(stack_capture_call, f);
			stack_len = sizeof(struct cuhook_rec_stack);
		}
		uint64_t t = now();
		unsigned nstack = readable_stack_slots(ts, (uintptr_t)f->stack);
		if (nstack > hh->nstack)
			nstack = hh->nstack;
		const unsigned nregs = hh->nregs; /* 6 whenever hh->nstack > 0 (hook_table.c, hot_layout) */
		if (unlikely(d >= SHADOW_MAX))
			rec_flags = CUHOOK_RF_NO_EXIT;
		/* ENTRY5 when the record is what the function's FUNCS entry says; ENTRY5_X, which says
		 * its own counts and flags, when it is not. */
		const unsigned explicit_info = rec_flags || nstack != hh->nstack;
		uint32_t len = 8u * (1 + explicit_info + nregs + nstack);
		struct resv v;
		uint64_t *w = (uint64_t *)reserve(ts, len + stack_len, t, &v);
		if (unlikely(!w)) {
			ts->busy = 0;
			return hh->relocated; /* dropped: no exit record either */
		}
		w[0] = CUHOOK_REC5_WORD(explicit_info ? CUHOOK_REC5_ENTRY_X : CUHOOK_REC5_ENTRY, d, id, t);
		uint64_t *a = w + 1;
		if (unlikely(explicit_info)) {
			/* struct cuhook_rec5_entry_info: flags, nregs, nstack, zeros */
			*a++ = (uint64_t)rec_flags | (uint64_t)nregs << 8 | (uint64_t)nstack << 16;
		}
		const uint64_t regs[6] = {f->rdi, f->rsi, f->rdx, f->rcx, f->r8, f->r9};
		for (unsigned i = 0; i < nregs; i++)
			a[i] = regs[i];
		uint64_t *st = a + nregs;
		if (likely(nstack == CUHOOK_MAX_STACK_ARGS)) {
			st[0] = f->stack[0];
			st[1] = f->stack[1];
			st[2] = f->stack[2];
			st[3] = f->stack[3];
			st[4] = f->stack[4];
			st[5] = f->stack[5];
		} else {
			for (unsigned i = 0; i < nstack; i++)
				st[i] = f->stack[i];
		}
		if (unlikely(stack_len)) {
			struct cuhook_rec_stack *sr = (struct cuhook_rec_stack *)((uint8_t *)w + len);
			sr->h.type = CUHOOK_REC_STACK;
			sr->h.flags = 0;
			sr->h.size = sizeof(*sr);
			sr->h.func = id;
			sr->stack = stack;
			sr->reserved = 0;
		}
		ring_commit(ts->ring, &v, len + stack_len, 1, 0);
		/* the slow trigger's measure is the recorded call's own duration (flight.h) */
		if (unlikely(hh->flags & HOOK_SLOW) && d < SHADOW_MAX)
			ts->entry_tsc[d] = t;
	} else if (!(hh->flags & (HOOK_CALLBACK | HOOK_FDOP)) || ts->no_record) {
		ts->busy = 0;
		return hh->relocated;
	}

	if (likely(!rec_flags) && d < SHADOW_MAX) {
		struct shadow_entry *s = &ts->shadow[d];
		s->ret = f->ret;
		s->slot = (uintptr_t)&f->ret;
		s->id = id;
		s->unrecorded = unrecorded;
		s->has_args = hh->decoder != 0 || (hh->flags & HOOK_FDOP);
		if (s->has_args) {
			s->args[0] = f->rdi;
			s->args[1] = f->rsi;
			s->args[2] = f->rdx;
			s->args[3] = f->rcx;
			s->args[4] = f->r8;
		}
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		ts->depth = d + 1;
		f->ret = (uint64_t)cuhook_exit_stub;
	}
	ts->busy = 0;
	return hh->relocated;
}

/* Copy a NUL-terminated string of at most max bytes; returns its length. */
static inline unsigned copy_str(char *dst, const char *src, unsigned max)
{
	unsigned n = 0;
	while (n < max && src[n]) {
		dst[n] = src[n];
		n++;
	}
	return n;
}

/* Reserve a DATA record of `nvalues` values and `str_len` string bytes for hook `id`, with its
 * header filled in; *len is its padded size. NULL if it must be dropped. */
static inline struct cuhook_rec_data *reserve_data(struct thread_state *ts, uint32_t id, uint16_t decoder,
                                                   unsigned nvalues, unsigned str_len, uint32_t *len,
                                                   struct resv *v)
{
	*len = (uint32_t)CUHOOK_ALIGN8(sizeof(struct cuhook_rec_data) + nvalues * 8 + str_len);
	struct cuhook_rec_data *r = (struct cuhook_rec_data *)reserve(ts, *len, 0, v);
	if (!r)
		return NULL;
	r->h.type = CUHOOK_REC_DATA;
	r->h.flags = 0;
	r->h.size = (uint16_t)*len;
	r->h.func = id;
	r->decoder = decoder;
	r->nvalues = (uint8_t)nvalues;
	r->at_exit = 1;
	r->str_len = (uint16_t)str_len;
	r->reserved = 0;
	return r;
}

/* A successful call the kernel names want to know of (kernel_names.h): a launch's handle is
 * enqueued (lock-free); an unload makes every name doubtful; a graph instantiation or update
 * lists the graph's kernel nodes now, before the program may destroy the graph (a rare call,
 * milliseconds long itself: its listing goes through the vector-saving shim into libc and the
 * driver, whose functions it calls through their relocated prologues, this thread busy). */
static __attribute__((noinline)) void names_at_exit(uint8_t role, const struct shadow_entry *s)
{
	switch (role) {
	case KN_ROLE_FUNC_ARG0:
		kn_enqueue(s->args[0]);
		break;
	case KN_ROLE_FUNC_ARG1:
		kn_enqueue(s->args[1]);
		break;
	case KN_ROLE_UNLOAD:
		__atomic_add_fetch(&kn_unload_seq, 1, __ATOMIC_ACQ_REL);
		break;
	case KN_ROLE_GRAPH_LAUNCH:
		kn_exec_launched(s->args[0]);
		break;
	case KN_ROLE_GRAPH_INST:
	case KN_ROLE_GRAPH_UPDATE: {
		struct kn_graph_arg a = {role == KN_ROLE_GRAPH_INST ? (s->args[0] ? *(const uint64_t *)s->args[0] : 0)
		                                                     : s->args[0],
		                         s->args[1]};
		if (a.exec && a.graph)
			cuhook_call_saving_vectors(kernel_names_graph, &a);
		break;
	}
	default:
		break;
	}
}

/* Out-parameters and strings of a known function, read after it succeeded (a pointer the
 * driver just wrote through, or a string it just read, is valid; before the call it may not
 * be, and the driver would have rejected it rather than crash). */
static __attribute__((noinline)) void record_data(struct thread_state *ts, const struct shadow_entry *s, uint16_t decoder)
{
	const struct cuhook_decoder *dec = &cuhook_decoders[decoder];
	const uint8_t role = hooks_hot[s->id].names_role;
	if (unlikely(role))
		names_at_exit(role, s);
	if (dec->args_only)
		return; /* its arguments were for the kernel names alone: no DATA record */
	const char *str = NULL;
	unsigned slen = 0;
	if (dec->str_kind == CUHOOK_STR_ARG)
		str = (const char *)s->args[dec->str_arg];
	else if (dec->str_kind == CUHOOK_STR_DEREF && s->args[dec->str_arg])
		str = *(const char *const *)s->args[dec->str_arg];
	if (dec->str_kind == CUHOOK_STR_BYTES) {
		/* a struct the successful call has just read: its first str_bytes bytes exist */
		str = (const char *)s->args[dec->str_arg];
		slen = str ? dec->str_bytes : 0;
	} else if (str) {
		while (slen < CUHOOK_DECODER_MAX_STR && str[slen])
			slen++;
	}
	unsigned nval = 0;
	for (unsigned i = 0; i < CUHOOK_DECODER_MAX_OUT; i++)
		if (dec->out_arg[i] != CUHOOK_NO_ARG)
			nval = i + 1;
	uint32_t len;
	struct resv rv;
	struct cuhook_rec_data *r = reserve_data(ts, s->id, decoder, nval, slen, &len, &rv);
	if (!r)
		return;
	uint64_t *v = (uint64_t *)(r + 1);
	for (unsigned i = 0; i < nval; i++) {
		uint64_t x = 0;
		const void *p = (const void *)s->args[dec->out_arg[i]];
		if (p && dec->out_arg[i] != CUHOOK_NO_ARG)
			x = dec->out_size[i] == 4 ? *(const uint32_t *)p : *(const uint64_t *)p;
		v[i] = x;
	}
	char *sd = (char *)(v + nval);
	if (dec->str_kind == CUHOOK_STR_BYTES)
		for (unsigned i = 0; i < slen; i++)
			sd[i] = str[i];
	else
		copy_str(sd, str ? str : "", slen);
	for (unsigned i = slen; i < len - sizeof(*r) - nval * 8; i++)
		sd[i] = 0;
	ring_commit(ts->ring, &rv, len, 0, 0);
}

/* Called by the exit fast path for a decoded function whose value it does not write itself
 * (hooks_hot[].fast_out 0: two values, or a string): the full DATA record. */
void cuhook_exit_data(struct thread_state *ts, const struct shadow_entry *s)
{
	record_data(ts, s, hooks_hot[s->id].decoder);
}

/* The DATA record of an ioctl on an NVIDIA device file (decoders.h, the "ioctl" decoder): after a
 * successful call the argument struct's first bytes (and the struct an XFER_CMD points to),
 * which the driver has just read and written; after a failed one, errno. The report decodes
 * everything from the request code. */
static __attribute__((noinline)) void record_ioctl_data(struct thread_state *ts, const struct shadow_entry *s,
                                                        uint64_t ret)
{
	const uint8_t *arg = (const uint8_t *)s->args[2];
	const uint8_t *inner = NULL;
	unsigned n = 0, ni = 0;
	uint64_t err = 0;
	if ((int)ret == 0) {
		n = nvfd_arg_bytes(s->args[1], (uintptr_t)arg);
		ni = nvfd_xfer_bytes(s->args[1], arg, n, &inner);
	} else {
		err = cuhook_call_saving_vectors(nvfd_errno, NULL);
	}
	uint32_t len;
	struct resv rv;
	struct cuhook_rec_data *r = reserve_data(ts, s->id, hooks_hot[s->id].decoder, 2, n + ni, &len, &rv);
	if (!r)
		return;
	uint64_t *v = (uint64_t *)(r + 1);
	v[0] = n;
	v[1] = err;
	uint8_t *d = (uint8_t *)(v + 2);
	unsigned i = 0;
	for (unsigned k = 0; k < n; k++)
		d[i++] = arg[k];
	for (unsigned k = 0; k < ni; k++)
		d[i++] = inner[k];
	for (; i < len - sizeof(*r) - 2 * 8; i++)
		d[i] = 0;
	ring_commit(ts->ring, &rv, len, 0, 0);
}

/* The flight recorder's triggers, after a recorded call's EXIT (flight.h): an error it returned,
 * or its duration. */
static __attribute__((noinline, cold)) void flight_watch_exit(struct thread_state *ts, const struct hook_hot *hh,
                                                              uint32_t d, uint64_t t, uint64_t rax)
{
	const char *why = NULL;
	if (trigger_error_fires(&flight_trigger_error, rax))
		why = "a traced call returned an error (--trigger error)";
	else if ((hh->flags & HOOK_SLOW) && flight_slow_ticks && t - ts->entry_tsc[d] > flight_slow_ticks)
		why = "a traced call took longer than its limit (--trigger slow)";
	if (why)
		cuhook_call_saving_vectors(record_flight_trigger, (void *)&(struct flight_arg){why, (uint32_t)(hh - hooks_hot)});
}

uintptr_t cuhook_on_exit(struct exit_frame *f)
{
	struct thread_state *ts = cuhook_tls;
	uintptr_t slot = (uintptr_t)(f + 1) - 8;
	uint32_t d = ts->depth;
	/* The entry whose return-address slot we are returning through. Entries above it belong to
	 * frames that were left without returning (longjmp, exceptions): drop them. */
	uint32_t k = d;
	while (k > 0 && ts->shadow[k - 1].slot != slot)
		k--;
	if (unlikely(k == 0))
		k = d; /* no match cannot happen; use the top rather than lose the return address */
	const struct shadow_entry *s = &ts->shadow[k - 1];
	const uintptr_t ret = s->ret;
	const uint32_t id = s->id;
	const struct hook_hot *hh = &hooks_hot[id];
	uint32_t busy = ts->busy;
	if (unlikely(busy) && on_thread_stack(ts, slot) && on_thread_stack(ts, ts->busy_sp) &&
	    slot > ts->busy_sp)
		busy = 0; /* set by a handler left by siglongjmp (see cuhook_on_entry) */
	if (likely(!busy)) {
		/* busy before depth drops: a signal handler's traced calls pass through and cannot
		 * overwrite the entry still being read. */
		ts->busy = 1;
		ts->busy_sp = (uintptr_t)f;
		ts->depth = k - 1;
		/* The EXIT of every recorded ENTRY, whether recording is still on or not: a call in
		 * flight when a window or range closed ends in the trace, whole (the writer waits for
		 * such calls before the last round of a session it ends itself); none of a call whose
		 * ENTRY was not recorded (no EXIT without its ENTRY when a range opens). */
		if (likely(hh->flags & HOOK_RECORD) && likely(!s->unrecorded)) {
			uint64_t t = now();
			struct resv v;
			/* rax 0 (success), the common case, in the word alone */
			const uint32_t len = f->rax ? 16 : 8;
			uint64_t *x = (uint64_t *)reserve(ts, len, t, &v);
			if (likely(x != NULL)) {
				x[0] = CUHOOK_REC5_WORD(f->rax ? CUHOOK_REC5_EXIT : CUHOOK_REC5_EXIT_ZERO, k - 1, id, t);
				if (f->rax)
					x[1] = f->rax;
				ring_commit(ts->ring, &v, len, 1, 0);
				if (unlikely(cuhook_flight))
					flight_watch_exit(ts, hh, k - 1, t, f->rax);
				if (unlikely(hh->flags & HOOK_IOCTL))
					record_ioctl_data(ts, s, f->rax);
				else if (unlikely(s->has_args) && (uint32_t)f->rax == 0)
					record_data(ts, s, hh->decoder);
			}
		}
		if (unlikely(hh->flags & HOOK_FDOP))
			nvfd_exit(hh, s->args, f->rax);
		if (unlikely(hh->flags & HOOK_CALLBACK)) {
			struct callback_arg a = {id, s->has_args ? s->args : NULL, f->rax};
			cuhook_call_saving_vectors(record_run_callback, &a);
		}
		ts->busy = 0;
	} else {
		ts->depth = k - 1;
	}
	return ret;
}
