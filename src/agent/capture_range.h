/* Recording only part of a session: between cuProfilerStart and cuProfilerStop (capture_range=
 * cudaProfilerApi, as Nsight Systems' --capture-range=cudaProfilerApi), or in a window of time
 * (delay_ms=, duration_ms=: `cuhook run --delay --duration`). docs/agent.md, "Capture ranges and
 * recording windows", says what is recorded at the edges and why.
 *
 * The switch is cuhook_recording (record.h), turned on and off at the edges; counted functions
 * (HOOK_COUNT), whose thunks count whether or not recording is on, are made to respect the edges
 * here: every thread's counters are read at each edge, and the writer writes a thread's counts
 * less what was counted outside (capture_count). Nothing here runs on the per-call path: the
 * edges run in the exit callback of cuProfilerStart/cuProfilerStop (HOOK_CALLBACK) or on the
 * writer thread. */
#ifndef CUHOOK_CAPTURE_RANGE_H
#define CUHOOK_CAPTURE_RANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cuhook_config;
struct ring;

/* A session's preparation (threads running; the options were checked by config.c): map the
 * counters' table, queue the NOTE that says what will be recorded. */
void capture_prepare(const struct cuhook_config *c);

/* While the functions of a library are classified: the HOOK_* flags of `name` (hook `id`) when
 * a capture range needs its exit (cuProfilerStart/cuProfilerStop: HOOK_CALLBACK alone, not
 * recorded, their on_exit set), or 0 (and an on_exit of ours taken away). */
uint8_t capture_classify(const char *name, uint32_t id);

/* The session starts (every other thread maybe stopped: no lock, no allocation): what
 * cuhook_recording starts as (0 or 1). fork_child: a follow=1 fork child, which goes on with
 * its parent's range or window as it was at the fork. */
int capture_begin(bool fork_child);

/* The writer, at each round: opens and closes a window of time when its moment has come, and
 * queues the NOTEs of the edges passed. True when the window is over: the session ends (the
 * writer closes the trace; the program runs on), why (len bytes) left empty. */
bool capture_window_over(char *why, size_t len);

/* The session ends (stop, exit, _exit): the NOTEs of what is left to say. threads_stopped: with
 * every other thread stopped (no waiting for a lock). */
void capture_end(bool threads_stopped);

/* The writer: the calls of counter slot `slot` of ring r to write as counted (what it writes is
 * this less r->counts_seen[slot]): r->counts[slot] without the calls counted outside the ranges
 * or window. Never less than r->counts_seen[slot]. */
uint64_t capture_count(const struct ring *r, unsigned slot);

#endif
