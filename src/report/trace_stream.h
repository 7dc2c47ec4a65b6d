/* Reading a trace without keeping its calls (cuhook report --stream): the reader decodes and
 * matches the events exactly as tr_open() does (trace_reader.h), but hands each call to a sink
 * as soon as it is finished instead of keeping it, and lets go of the file's bytes once they are
 * decoded. Memory then grows with the calls open at one time (per-thread stacks), the threads,
 * the functions and the COUNTS entries, never with the number of calls.
 *
 * The trace it returns has every table tr_open() fills (header, clock, libraries, functions,
 * threads, notes, kernel names, graphs, COUNTS entries, the totals and the damage counters), but
 * no calls (ncalls == 0, and each thread's ncalls 0), no DATA records (each call's are handed
 * over with it), no GPU records and no call stacks: those blocks and records are counted
 * (struct tr_stream_skipped) and skipped. A pipe's bytes are first copied to an unnamed
 * temporary file and read from there (trace_reader.c, spool): memory stays bounded for pipes too. */
#ifndef CUHOOK_TRACE_STREAM_H
#define CUHOOK_TRACE_STREAM_H

#include "trace_reader.h"

/* What the streaming reader knows of a finished call besides the call itself. */
struct tr_stream_info {
	uint64_t ordinal;         /* its index in calls[] when tr_open() reads the same file (the
	                             order of the ENTRY records), for ordering ties the same way */
	int64_t child_ns;         /* the durations of its timed direct children, summed (saturating):
	                             every child is handed over before its parent */
	uint64_t parent_ordinal;  /* the ordinal of c->parent; UINT64_MAX when it has none */
};

struct tr_stream_sink {
	/* A finished call: its EXIT matched (end_ns set), or an entry-only call
	 * (TR_CALL_NO_EXIT), or one whose EXIT never came, when a later record of its thread or the
	 * end of the trace shows it lost (TR_CALL_UNFINISHED); handed over at its thread's next
	 * ENTRY or EXIT (the DATA records that follow a call are checked against it as a whole read
	 * does), or at the end. The call is valid during the callback only:
	 * its arguments are a copy of its own (tr_call_arg works); its DATA records, copies the
	 * reader kept while the call was pending, are t->data[c->data_first ..] during the callback
	 * (tr_call_format_data, tr_call_data_str... work; t->data is NULL after it); c->parent, when not
	 * TR_NONE, names a call still open, readable with tr_stream_open_call(). Returns 0, or -1
	 * to stop reading (out of memory: tr_open_stream fails). */
	int (*call)(void *ctx, const struct tr_trace *t, const struct tr_call *c, const struct tr_stream_info *info);
	/* Optional: called once, before the first call, when the metadata blocks are read (header,
	 * clock, libraries, functions, the THREAD blocks' threads, notes, kernel names, graphs; a
	 * thread with no THREAD block is added when its first record comes). Returns 0 to read the
	 * events, 1 to stop there (tr_open_stream returns the trace without its events: enough to
	 * line several files up, rp_align), -1 to fail ("out of memory"). */
	int (*begin)(void *ctx, struct tr_trace *t);
	void *ctx;
};

/* What the streaming reader counted and skipped. */
struct tr_stream_skipped {
	uint64_t stack_recs;      /* STACK records */
	uint64_t gpu_blocks;      /* GPU_SESSION and GPU blocks */
	uint64_t stack_blocks;    /* STACKS, PYFRAMES and MAPS blocks */
	uint64_t calls;           /* calls handed to the sink */
};

/* tr_open() with the calls handed to `sink` (called while the file is read). NULL with a reason
 * in err as tr_open(), also when the sink returned -1 ("out of memory"). */
struct tr_trace *tr_open_stream(const char *path, const struct tr_stream_sink *sink, char *err, size_t errlen);

/* The same for bytes in memory (tests, fuzzers); the buffer is copied. */
struct tr_trace *tr_open_stream_mem(const void *buf, size_t len, const char *name, const struct tr_stream_sink *sink,
                                    char *err, size_t errlen);

/* During a callback: the open call c->parent names (its arguments readable; not its DATA
 * records, which t->data does not hold), and its ordinal (struct tr_stream_info). */
const struct tr_call *tr_stream_open_call(const struct tr_trace *t, uint32_t ci);
uint64_t tr_stream_open_ordinal(const struct tr_trace *t, uint32_t ci);

/* After tr_open_stream: what was skipped; all zero for a trace read by tr_open(). */
void tr_stream_get_skipped(const struct tr_trace *t, struct tr_stream_skipped *out);

#endif
