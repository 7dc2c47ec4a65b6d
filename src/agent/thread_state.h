/* Per-thread state of the agent: the thread's event ring (single producer: the thread; single
 * consumer: the writer), its shadow stack of hijacked return addresses, and the reentrancy
 * guard. Created on a thread's first traced call (the only slow path of a call), reached
 * through one initial-exec TLS pointer. A thread's first traced call may come from anywhere,
 * a signal handler that interrupted malloc included: making the state takes no lock and calls
 * nothing of libc that allocates or locks (thread_state.c). State and ring live in one mapping,
 * reused by a later thread once the writer has seen the thread gone and drained its ring. */
#ifndef CUHOOK_THREAD_STATE_H
#define CUHOOK_THREAD_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define SHADOW_MAX 128
#define RING_COUNT_SLOTS 256 /* functions a process can count instead of record (HOOK_COUNT) */
#define SHADOW_ARGS 5 /* argument registers a shadow entry keeps: decoders read indices 0..4 */

/* One cache line: a call touches exactly one entry. */
struct shadow_entry {
	uintptr_t ret;         /* the caller's real return address */
	uintptr_t slot;        /* where it was on the stack (to match returns after longjmp) */
	uint32_t id;           /* hook id */
	uint8_t has_args;      /* args[] kept (a decoder, an fd call) */
	uint8_t unrecorded;    /* the ENTRY was not recorded (a callback or fd hook entered while not
	                        * recording): nor is the EXIT. A recorded ENTRY gets its EXIT even
	                        * once recording is off (a window or range closed meanwhile). */
	uint16_t spare;
	uint64_t args[SHADOW_ARGS]; /* argument registers, kept only for hooks with a decoder */
};

/* A ring is cut into RING_SEGS segments (at least RING_SEG_MIN bytes each). A record never
 * straddles a segment's end: the producer's `limit` stops at it, and the C path that finds a
 * record does not fit (or the head on a segment's start) opens the next segment, which starts
 * with a TIME record (trace_format.h, version 5), and writes the summary below of the one
 * before it. Segment k is closed, its summary written, once the head is past its end. What the writer needs is in the
 * summaries, so it copies whole segments without reading their records: how many bytes hold
 * records (the rest is never written to a file), and the producer's running counts and epoch
 * at the segment's end, from which the counts of what it copies follow exactly. */
#define RING_SEGS 64u
#define RING_SEG_MIN 4096u
struct ring_seg {
	uint32_t used;        /* bytes of records from the segment's start */
	uint32_t epoch_end;   /* the epoch in force after its last record */
	uint64_t events_end;  /* the ring's `events` after its last record */
	uint64_t drops_end;   /* the ring's `drops_reported` after its last record */
};

/* Laid out for the cost of a call in a busy program, where little of this stays in the nearer
 * caches between two driver calls: everything the producer touches per record is in the first
 * cache line; the line the writer writes (tail) is read only when `limit` says the ring may be
 * full. */
struct ring {
	/* producer side, one line */
	_Alignas(64) uint64_t head;       /* bytes ever written; published with release */
	uint64_t dropped;                 /* records dropped and not yet reported in a DROP record */
	uint64_t limit;                   /* where the fast paths must come to C: at most the end of
	                                     the open segment (so a record below it never straddles
	                                     one), lower to wake the writer at half full or to ask
	                                     for memory (ring_reserve); 0 while `dropped` is nonzero
	                                     (the stubs then go to C, which reports the drops
	                                     first) */
	uint8_t *data;
	uint64_t kicked;                  /* 1 + the tail at which the writer was last woken early */
	uint32_t size;                    /* power of two; fixed (the writer reads it too) */
	uint32_t epoch;                   /* the epoch (trace_format.h: tsc >> 38) of the ring's last
	                                     TIME record: a record of another epoch goes to C, which
	                                     writes a TIME record first */
	uint64_t populate_asked;          /* `populated` when the producer last asked the writer
	                                     for more (ring_populate_ahead) */
	uint64_t events;                  /* ENTRY and EXIT records ever committed */
	/* producer side, written in C only */
	_Alignas(64) uint64_t drops_reported; /* records counted in DROP records ever committed */
	uint32_t seg_shift;               /* log2 of the segment size */
	uint32_t tail_waiting;            /* the producer waits on tail's futex (record_slow.c) */
	/* consumer side */
	_Alignas(64) uint64_t tail;       /* bytes ever consumed by the writer; its low half is the
	                                     futex word a producer waiting for room sleeps on */
	uint64_t dropped_total;           /* for the END block */
	uint64_t populated;               /* data bytes [0, populated) are in memory (written by the
	                                     writer as it pre-faults ahead of the producer); only
	                                     grows, and survives the ring's reuse */
	uint64_t idle_head;               /* writer: head at its last round (an idle ring's thread
	                                     is checked for being gone) */
	uint64_t w_events, w_drops;       /* writer: the producer's counts at `tail` */
	uint32_t w_epoch;                 /* writer: the epoch in force at `tail` (flight recorder: at
	                                     `dumped`) */
	uint64_t cut;                     /* flight recorder: where the next dump ends (flight.c) */
	uint64_t dumped;                  /* flight recorder: where the last dump ended */
	uint32_t d_nopen;                 /* flight recorder: calls the file has open on this thread */
	uint8_t d_open[SHADOW_MAX + 1];   /* ... their depths, outermost first */
	/* fixed */
	_Alignas(64) uint32_t tid;
	char name[16];
	uint32_t state;                   /* RING_LIVE, RING_FREE, RING_CLAIMED */
	uint32_t announced;               /* writer wrote its THREAD block */
	struct ring *next;                /* registry of all rings, never unlinked (writer walks it) */
	struct ring_seg seg[RING_SEGS];   /* summaries of closed segments, by index % RING_SEGS */
	/* HOOK_COUNT calls, by counter slot: the thread adds 1 with one instruction (a signal
	 * handler's count on the same thread cannot be lost); the writer reads them and writes the
	 * difference from counts_seen (what the file already has) in COUNTS blocks. */
	_Alignas(64) uint64_t counts[RING_COUNT_SLOTS];
	uint64_t counts_seen[RING_COUNT_SLOTS];
};

static inline uint64_t ring_seg_start(const struct ring *r, uint64_t k)
{
	return k << r->seg_shift;
}

/* The first cache line is what every call reads; then the shadow stack, one line per entry. */
struct thread_state {
	uint32_t busy;          /* inside a handler: nested traced calls pass through */
	uint32_t no_record;     /* cuhook's own threads (next to busy: the entry stub tests both
	                           with one 8-byte compare) */
	uint32_t depth;         /* shadow stack entries in use */
	uint32_t tid;
	uintptr_t stack_lo, stack_hi; /* this thread's stack, to bound stack-argument reads */
	struct ring *ring;
	uintptr_t reserved;     /* keeps busy_sp where the stubs expect it (stub_frame.h) */
	uintptr_t busy_sp;      /* stack pointer of the handler that set busy: a handler left by
	                           siglongjmp (from a signal that interrupted it) leaves busy set; a
	                           later call higher on the same stack knows it is stale */
	_Alignas(64) struct shadow_entry shadow[SHADOW_MAX];
	uint64_t entry_tsc[SHADOW_MAX]; /* entry times of the HOOK_SLOW calls open (flight.h) */
};

extern __thread struct thread_state *cuhook_tls __attribute__((tls_model("initial-exec")));
/* The thread's ring, next to its state pointer, for the counted functions' thunks (hook_table.c): it
 * reaches the counters without the thread state's line. Set with the state; NULL before, and in
 * cuhook's own threads. */
extern __thread struct ring *cuhook_tls_ring __attribute__((tls_model("initial-exec")));

/* A ring's owner: LIVE from its thread's first call until the writer has seen the thread gone
 * and drained it; FREE then, until a new thread CLAIMs it (and makes it LIVE again). */
enum { RING_LIVE = 1, RING_FREE = 2, RING_CLAIMED = 3 };

/* Slow path of a thread's first call: create (or reuse) its state and ring. Called through
 * cuhook_call_saving_vectors; returns the state or NULL (then the call is not traced). No lock,
 * no allocation: system calls only (mmap, madvise, gettid, prctl). */
uintptr_t thread_state_create(void *unused);

/* Where the stacks of the threads are, learnt once per process, off the traced path: the main
 * thread's from /proc/self/maps, every other thread's from where glibc keeps it in the thread's
 * descriptor, at an offset found by comparing pthread_getattr_np(other) with that descriptor.
 * `other` is a running thread that glibc created (the writer). thread_state.c says why. */
void thread_stacks_learn(pthread_t other);

/* Rings are populated as they fill, so that memory grows with use, not with the number of
 * threads: RING_POPULATE_MIN bytes at creation, then the writer keeps the populated part ahead
 * of the producer by twice ring_populate_ahead(head), and the producer asks it for more when it
 * comes within ring_populate_ahead(head) of the end of it. The distance grows with what the
 * thread has written, twice that, up to RING_POPULATE_MAX: a thread that records fast gets a
 * long runway (a writer woken late, on a busy machine, still comes before the thread reaches
 * memory it would have to fault in itself), and one that made a few calls holds little. */
#define RING_POPULATE_MIN (128u << 10)
#define RING_POPULATE_MAX (32u << 20)
static inline uint64_t ring_populate_ahead(uint64_t head)
{
	return head < RING_POPULATE_MIN / 2 ? RING_POPULATE_MIN
	       : head > RING_POPULATE_MAX / 2 ? RING_POPULATE_MAX
	                                      : 2 * head;
}

/* Writer: populate the rings' next parts ahead of their producers. */
void thread_rings_populate(void);

/* Mark the calling thread as cuhook's own: its calls are never recorded (nor counted), from
 * now on if it made traced calls before. */
void thread_state_mark_internal(void);

/* The registry of rings, newest first, for the writer. */
struct ring *thread_rings(void);

/* Writer: has the ring's thread ended? Asked of idle rings only (the head did not move since the
 * last round; a kill(tid, 0) each). A thread id reused meanwhile keeps the old ring alive
 * until the new thread ends too, which costs memory, never records. */
bool thread_ring_owner_gone(struct ring *r);

/* Writer: the ring's thread is gone and the ring drained: a new thread can reuse it. */
void thread_ring_recycle(struct ring *r);

/* Wait, at most max_ms, until every thread that is now inside a traced call of a function
 * `interesting` picks (by hook id) has returned from it. Returns how many had not. For the GPU
 * session's stop (gpu_activity.c): the driver's record of a call comes at its end. */
int thread_calls_wait_left(bool (*interesting)(uint32_t hook_id), int max_ms);

/* How many threads are now inside a call of a function `interesting` picks whose ENTRY was
 * recorded (their EXIT will be too, record.c). Not the traced path; the same caveats. */
int thread_recorded_calls_open(bool (*interesting)(uint32_t hook_id));

/* Per-thread ring size in bytes (power of two), set from the configuration before tracing. */
extern uint32_t thread_ring_bytes;

/* fork(): the child keeps only the forking thread; see agent.c. */
void thread_state_after_fork_child(void);

#endif
