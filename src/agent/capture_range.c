/* Capture ranges and recording windows (capture_range.h; docs/agent.md, "Capture ranges and
 * recording windows").
 *
 * An edge (a range or window opening or closing) is made by one thread at a time: the thread
 * that returns from cuProfilerStart/cuProfilerStop, in its exit callback (through the vector-
 * saving shim, busy set: a signal handler's traced calls on that thread pass through), or the
 * writer for a window. They take `edge_busy`, a flag spun on with sched_yield: two threads
 * making edges at the same instant is the only wait, and an edge is a few microseconds.
 *
 * Counted functions. A count thunk (hook_table.c) adds 1 to its thread's counter whether or not
 * recording is on, and the stubs are not this file's to change. So at each edge every live
 * ring's counters are read into a table kept here, by ring: `at_stop` (the counters at the last
 * closing edge) and `off` (everything counted outside the ranges until the last opening edge).
 * What the writer writes as counted (capture_count) is then counters - off inside a range,
 * at_stop - off outside: it stands still outside, and goes on from where it stopped. The table
 * changes under a sequence count (odd while it changes); the writer, which only reads it, takes
 * what it read only if the count was even and the same before and after, else writes nothing
 * new for that counter this round. A ring's counters are reset when a later thread reuses it
 * (thread_state.c): an entry whose thread id differs, or whose head is behind the ring's, is
 * that of an earlier owner and counts as none. */
#include "capture_range.h"

#include "agent_log.h"
#include "clock_read.h"
#include "config.h"
#include "hook_table.h"
#include "record.h"
#include "thread_state.h"
#include "to_writer.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum mode { MODE_OFF, MODE_RANGE, MODE_WINDOW };

/* Edges kept for their NOTEs; past these, ranges are still recorded, and said in one last NOTE. */
#define EDGES_NOTED 256

struct edge {
	uint64_t ns, clock;         /* when: CLOCK_MONOTONIC, and the events' clock */
	uint64_t from_ns, from_clock; /* a closing edge: when its range opened */
	uint32_t tid;
	uint32_t range;             /* 1, 2, ... */
	bool opening;
	int pid;                    /* the process that made it: a fork child's copy is not its own */
};

/* The counters' table: one entry per ring, open addressing on the ring's address. Entries of
 * an earlier session (another gen) are free. Mapped once (never unmapped: a thread still in an
 * edge of an earlier session may read it), only its touched pages in memory. */
#define TABLE_SLOTS 2048u
struct ring_counts {
	const struct ring *ring;
	uint32_t gen;
	uint32_t tid;
	uint64_t head;
	uint64_t off[RING_COUNT_SLOTS];
	uint64_t at_stop[RING_COUNT_SLOTS];
};

static struct {
	enum mode mode;
	bool end_none;              /* capture_range_end=none: cuProfilerStop ends nothing */
	unsigned max_ranges;        /* 0: every range */
	uint64_t delay_ns, duration_ns;
	uint64_t t0_ns;             /* the trace's start: NOTE times are seconds after it */
	uint64_t begin_ns;          /* the session's start: a window's delay counts from it */
	int armed;                  /* the session is on: edges may switch cuhook_recording */
	int open;                   /* between an opening edge and its closing one */
	unsigned ranges;            /* ranges (or the window) opened this session */
	uint64_t open_ns, open_clock; /* when the open range opened */
	int edge_busy;
	uint32_t seq;               /* odd while the table or `open` change */
	uint32_t gen;               /* this session's table entries */
	bool table_full;            /* a ring found no entry: its counts were not kept to the ranges */
	struct edge edges[EDGES_NOTED];
	uint32_t nedges;            /* edges made (past EDGES_NOTED: not kept) */
	uint32_t noted;             /* edges whose NOTE is queued */
	bool start_hooked;          /* cuProfilerStart was classified for this session */
} C;

static struct ring_counts *table;

/* ---- the edge flag -------------------------------------------------------------------------- */

static void edge_lock(void)
{
	while (__atomic_exchange_n(&C.edge_busy, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

static bool edge_trylock(void)
{
	return !__atomic_exchange_n(&C.edge_busy, 1, __ATOMIC_ACQUIRE);
}

static void edge_unlock(void)
{
	__atomic_store_n(&C.edge_busy, 0, __ATOMIC_RELEASE);
}

/* ---- the counters' table -------------------------------------------------------------------- */

/* The entry of ring r this session, or (insert) a new one; NULL when none (the table is full). A
 * lookup stops at the first free slot: within a session entries are only added, so r's entry,
 * if any, lies before it. Inserted only by an edge, inside its odd sequence. */
static struct ring_counts *entry_of(const struct ring *r, bool insert)
{
	uint32_t k = (uint32_t)((((uintptr_t)r >> 6) * 0x9e3779b97f4a7c15ull) >> 53) & (TABLE_SLOTS - 1);
	for (unsigned i = 0; i < TABLE_SLOTS; i++, k = (k + 1) & (TABLE_SLOTS - 1)) {
		struct ring_counts *e = &table[k];
		bool used = e->ring && e->gen == C.gen;
		if (used && e->ring == r)
			return e;
		if (used)
			continue;
		if (!insert)
			return NULL;
		e->ring = r;
		e->gen = C.gen;
		e->tid = 0; /* taken as an earlier owner's: reset before use (entry_fresh) */
		return e;
	}
	return NULL;
}

/* Is e the entry of r's present owner? (A ring reused by a later thread starts from 0.) */
static bool entry_current(const struct ring_counts *e, const struct ring *r, uint64_t head)
{
	return e->tid == r->tid && head >= e->head;
}

enum edge_kind { EDGE_BASE, EDGE_OPEN, EDGE_CLOSE };

/* Read every live ring's counters at an edge (thread_state.h's registry: lock-free). BASE: the
 * session's start, or a fork child's: what the writer has as seen (writer_start) is where
 * counting goes on from. The open flag changes here, inside the odd sequence, so that the
 * writer reads it together with the table. */
static void counts_edge(enum edge_kind kind)
{
	__atomic_add_fetch(&C.seq, 1, __ATOMIC_ACQ_REL);
	if (table) {
		uint32_t nslots = __atomic_load_n(&hook_count_slots, __ATOMIC_ACQUIRE);
		for (struct ring *r = thread_rings(); r; r = r->next) {
			if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) != RING_LIVE)
				continue;
			struct ring_counts *e = entry_of(r, true);
			if (!e) {
				C.table_full = true;
				continue;
			}
			uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
			if (kind == EDGE_BASE || !entry_current(e, r, head)) {
				memset(e->off, 0, sizeof(e->off));
				memset(e->at_stop, 0, sizeof(e->at_stop));
			}
			e->tid = r->tid;
			e->head = head;
			for (uint32_t s = 0; s < nslots; s++) {
				uint64_t c = __atomic_load_n(&r->counts[s], __ATOMIC_RELAXED);
				if (kind == EDGE_OPEN)
					e->off[s] += c - e->at_stop[s];
				else
					e->at_stop[s] = c;
			}
		}
	}
	if (kind == EDGE_OPEN)
		__atomic_store_n(&C.open, 1, __ATOMIC_RELAXED);
	else if (kind == EDGE_CLOSE)
		__atomic_store_n(&C.open, 0, __ATOMIC_RELAXED);
	__atomic_add_fetch(&C.seq, 1, __ATOMIC_RELEASE);
}

uint64_t capture_count(const struct ring *r, unsigned slot)
{
	if (C.mode == MODE_OFF || !table)
		return __atomic_load_n(&r->counts[slot], __ATOMIC_RELAXED);
	const uint64_t seen = r->counts_seen[slot];
	uint32_t q = __atomic_load_n(&C.seq, __ATOMIC_ACQUIRE);
	if (q & 1)
		return seen;
	bool open = __atomic_load_n(&C.open, __ATOMIC_RELAXED);
	uint64_t c = __atomic_load_n(&r->counts[slot], __ATOMIC_RELAXED);
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	const struct ring_counts *e = entry_of(r, false);
	uint64_t v;
	if (!e || !entry_current(e, r, head))
		v = open ? c : 0; /* no edge since its thread began: all inside, or all outside */
	else if (open)
		v = c >= e->off[slot] ? c - e->off[slot] : 0;
	else
		v = e->at_stop[slot] >= e->off[slot] ? e->at_stop[slot] - e->off[slot] : 0;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&C.seq, __ATOMIC_RELAXED) != q)
		return seen;
	return v > seen ? v : seen;
}

/* ---- edges ---------------------------------------------------------------------------------- */

/* Keep an edge for its NOTE (written by the writer, queue_notes). Under the edge flag. */
static void keep_edge(bool opening, uint64_t ns, uint64_t clock)
{
	uint32_t n = C.nedges;
	if (n < EDGES_NOTED)
		C.edges[n] = (struct edge){ns, clock, C.open_ns, C.open_clock, (uint32_t)gettid(), C.ranges, opening,
		                           (int)getpid()};
	__atomic_store_n(&C.nedges, n + 1, __ATOMIC_RELEASE);
}

/* Open a range (or the window): the counters first, then recording on, so that this thread's
 * calls after the edge are both counted and recorded. Under the edge flag. */
static void open_edge(void)
{
	/* not after the writer has gone (it ended the session itself): nothing would drain */
	if (!__atomic_load_n(&C.armed, __ATOMIC_ACQUIRE) || !__atomic_load_n(&cuhook_writer_alive, __ATOMIC_ACQUIRE) ||
	    C.open || (C.max_ranges && C.ranges >= C.max_ranges))
		return;
	counts_edge(EDGE_OPEN);
	C.ranges++;
	C.open_ns = monotonic_ns();
	C.open_clock = trace_clock_now();
	__atomic_store_n(&cuhook_recording, 1, __ATOMIC_RELEASE);
	/* A stop that came meanwhile (this thread stopped by a detach between the check and the
	 * store), or the writer's own end, has switched recording off already: leave it off. */
	if (!__atomic_load_n(&C.armed, __ATOMIC_ACQUIRE) || !__atomic_load_n(&cuhook_writer_alive, __ATOMIC_ACQUIRE))
		__atomic_store_n(&cuhook_recording, 0, __ATOMIC_RELEASE);
	keep_edge(true, C.open_ns, C.open_clock);
}

/* Close it: recording off first, then the counters, so that this thread's calls before the edge
 * are both. Under the edge flag. */
static void close_edge(void)
{
	if (!__atomic_load_n(&C.armed, __ATOMIC_ACQUIRE) || !C.open)
		return;
	__atomic_store_n(&cuhook_recording, 0, __ATOMIC_RELEASE);
	uint64_t ns = monotonic_ns(), clock = trace_clock_now();
	counts_edge(EDGE_CLOSE);
	keep_edge(false, ns, clock);
}

/* The exits of cuProfilerStart and cuProfilerStop (HOOK_CALLBACK). The range begins when
 * cuProfilerStart has returned, whatever it returned (nsys, too, starts on the call). */
static void on_profiler_start(void)
{
	if (C.mode != MODE_RANGE)
		return;
	edge_lock();
	open_edge();
	edge_unlock();
}

static void on_profiler_stop(void)
{
	if (C.mode != MODE_RANGE || C.end_none)
		return;
	edge_lock();
	close_edge();
	edge_unlock();
}

uint8_t capture_classify(const char *name, uint32_t id)
{
	void (*cb)(void) = !strcmp(name, "cuProfilerStart") ? on_profiler_start
	                   : !strcmp(name, "cuProfilerStop") ? on_profiler_stop
	                                                     : NULL;
	if (!cb)
		return 0;
	if (C.mode != MODE_RANGE) {
		if (hooks_calls[id].on_exit == on_profiler_start || hooks_calls[id].on_exit == on_profiler_stop)
			hooks_calls[id].on_exit = NULL;
		return 0;
	}
	/* Not recorded: they are the range's edges (their NOTEs say when and on which thread). A
	 * recorded exit could also come without its entry: a cuProfilerStop entered outside, while
	 * another thread's cuProfilerStart opens a range. */
	hooks_calls[id].on_exit = cb;
	if (cb == on_profiler_start)
		C.start_hooked = true;
	return HOOK_CALLBACK;
}

/* ---- the session ---------------------------------------------------------------------------- */

void capture_prepare(const struct cuhook_config *c)
{
	edge_lock();
	C.mode = c->capture_range ? MODE_RANGE : (c->delay_ms || c->duration_ms) ? MODE_WINDOW : MODE_OFF;
	C.end_none = c->capture_end == CAPTURE_END_NONE;
	C.max_ranges = c->capture_end == CAPTURE_END_STOP ? 1 : c->capture_ranges;
	C.delay_ns = c->delay_ms * 1000000ull;
	C.duration_ns = c->duration_ms * 1000000ull;
	C.t0_ns = monotonic_ns();
	__atomic_store_n(&C.armed, 0, __ATOMIC_RELEASE);
	C.open = 0;
	C.ranges = 0;
	C.nedges = C.noted = 0;
	C.table_full = false;
	C.start_hooked = false;
	C.gen++;
	if (C.mode != MODE_OFF && !table) {
		void *m = mmap(NULL, TABLE_SLOTS * sizeof(struct ring_counts), PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		table = m == MAP_FAILED ? NULL : m;
	}
	edge_unlock();
	if (C.mode == MODE_RANGE) {
		char which[80] = "every range";
		if (C.end_none)
			snprintf(which, sizeof(which), "from the first cuProfilerStart to the end (cuProfilerStop ignored)");
		else if (C.max_ranges == 1)
			snprintf(which, sizeof(which), "the first range only");
		else if (C.max_ranges)
			snprintf(which, sizeof(which), "the first %u ranges", C.max_ranges);
		agent_log(1, "capture range cudaProfilerApi: calls are recorded (and counted) only between "
		          "cuProfilerStart and cuProfilerStop, %s; times in these notes are seconds after the "
		          "trace's start", which);
	} else if (C.mode == MODE_WINDOW) {
		char d[128] = "to the end";
		if (C.duration_ns)
			snprintf(d, sizeof(d), "for %.3f s, then the trace is closed and the program runs on "
			         "untraced", c->duration_ms / 1e3);
		agent_log(1, "recording window: calls are recorded (and counted) from %.3f s after the start %s",
		          c->delay_ms / 1e3, d);
	}
	if (C.mode != MODE_OFF && !table)
		agent_log(2, "capture: no memory for the counters' table: counted functions are counted over the "
		          "whole session, not only inside the recorded ranges");
}

int capture_begin(bool fork_child)
{
	if (C.mode == MODE_OFF)
		return 1;
	/* Tried only: this may run with every other thread stopped (one of them, from an earlier
	 * session, could hold the flag; it then finds the session not armed and changes nothing). */
	bool locked = edge_trylock();
	counts_edge(EDGE_BASE);
	if (fork_child) {
		/* the parent's range or window goes on; its edges were the parent's to tell */
		C.t0_ns = monotonic_ns();
		C.noted = C.nedges;
		if (C.open) { /* for this trace, an open range begins with it */
			C.open_ns = C.t0_ns;
			C.open_clock = trace_clock_now();
		}
		agent_log(1, "fork child: the parent's %s goes on here (%s at the fork)",
		          C.mode == MODE_RANGE ? "capture range" : "recording window",
		          C.open ? "recording" : "not recording");
	} else {
		C.begin_ns = monotonic_ns();
	}
	__atomic_store_n(&C.armed, 1, __ATOMIC_RELEASE);
	if (!fork_child && C.mode == MODE_WINDOW && !C.delay_ns)
		open_edge();
	int recording = C.open;
	if (locked)
		edge_unlock();
	return recording;
}

/* ---- notes ---------------------------------------------------------------------------------- */

static double secs(uint64_t ns)
{
	return ns >= C.t0_ns ? (double)(ns - C.t0_ns) / 1e9 : -(double)(C.t0_ns - ns) / 1e9;
}

static void edge_note(const struct edge *e, bool wait)
{
	char text[400];
	if (C.mode == MODE_WINDOW && e->opening)
		snprintf(text, sizeof(text), "recording window opened at %.6f s (events' clock %llu)", secs(e->ns),
		         (unsigned long long)e->clock);
	else if (C.mode == MODE_WINDOW)
		snprintf(text, sizeof(text), "recording window closed at %.6f s: recorded from %.6f s to %.6f s "
		         "(events' clock %llu to %llu); the trace ends here, the program runs on untraced",
		         secs(e->ns), secs(e->from_ns), secs(e->ns), (unsigned long long)e->from_clock,
		         (unsigned long long)e->clock);
	else if (e->opening)
		snprintf(text, sizeof(text), "capture range %u opened at %.6f s (cuProfilerStart on thread %u; "
		         "events' clock %llu)", e->range, secs(e->ns), e->tid, (unsigned long long)e->clock);
	else
		snprintf(text, sizeof(text), "capture range %u closed at %.6f s (cuProfilerStop on thread %u): "
		         "recorded from %.6f s to %.6f s (events' clock %llu to %llu)", e->range, secs(e->ns), e->tid,
		         secs(e->from_ns), secs(e->ns), (unsigned long long)e->from_clock,
		         (unsigned long long)e->clock);
	writer_note(0, text, wait);
}

/* Queue the NOTEs of the edges made since the last call; each edge is claimed once (the writer
 * and a stop may both come here). Not those a fork child has from its parent: its writer runs
 * before capture_begin marks them told. */
static void queue_notes(bool wait)
{
	uint32_t n = __atomic_load_n(&C.nedges, __ATOMIC_ACQUIRE);
	int pid = (int)getpid();
	for (uint32_t i = __atomic_load_n(&C.noted, __ATOMIC_ACQUIRE); i < n && i < EDGES_NOTED;
	     i = __atomic_load_n(&C.noted, __ATOMIC_ACQUIRE)) {
		if (__atomic_compare_exchange_n(&C.noted, &i, i + 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) &&
		    C.edges[i].pid == pid)
			edge_note(&C.edges[i], wait);
	}
}

bool capture_window_over(char *why, size_t len)
{
	if (len)
		why[0] = 0;
	if (C.mode == MODE_OFF)
		return false;
	bool over = false;
	if (C.mode == MODE_WINDOW && __atomic_load_n(&C.armed, __ATOMIC_ACQUIRE)) {
		uint64_t now = monotonic_ns();
		edge_lock();
		if (!C.open && !C.ranges && now - C.begin_ns >= C.delay_ns) {
			open_edge();
		} else if (C.open && C.duration_ns && now - C.open_ns >= C.duration_ns) {
			close_edge();
			/* the writer ends the session now: no edge after it */
			__atomic_store_n(&C.armed, 0, __ATOMIC_RELEASE);
			over = true;
		}
		edge_unlock();
	}
	queue_notes(true);
	return over;
}

void capture_end(bool threads_stopped)
{
	if (C.mode == MODE_OFF || !__atomic_exchange_n(&C.armed, 0, __ATOMIC_ACQ_REL))
		return;
	bool wait = !threads_stopped;
	queue_notes(wait);
	char text[300];
	uint32_t edges = __atomic_load_n(&C.nedges, __ATOMIC_ACQUIRE);
	if (edges > EDGES_NOTED) {
		snprintf(text, sizeof(text), "capture: %u more edges (ranges opened or closed) than the %u noted "
		         "above; their calls are recorded all the same", edges - EDGES_NOTED, EDGES_NOTED);
		writer_note(0, text, wait);
	}
	if (__atomic_load_n(&C.open, __ATOMIC_ACQUIRE)) {
		snprintf(text, sizeof(text), "%s %u still open at the end of the trace: recorded from %.6f s "
		         "(events' clock %llu) to the end", C.mode == MODE_WINDOW ? "recording window" : "capture range",
		         C.ranges, secs(C.open_ns), (unsigned long long)C.open_clock);
		writer_note(0, text, wait);
	} else if (!C.ranges && C.mode == MODE_RANGE) {
		writer_note(1, C.start_hooked ? "capture range: cuProfilerStart was never called: no call was recorded"
		                              : "capture range: cuProfilerStart is not hooked (not found in the traced "
		                                "library, or refused: see the function table): no call was recorded",
		            wait);
	} else if (!C.ranges) {
		writer_note(0, "recording window: the trace ended before the delay was over: no call was recorded", wait);
	}
	if (C.table_full)
		writer_note(1, "capture: more threads than the counters' table holds: some threads' counted calls "
		            "are counted outside the ranges too", wait);
}
