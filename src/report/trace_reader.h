/* Reading trace.bin (src/format/trace_format.h): one call, tr_open(), validates the file and
 * decodes it into flat arrays that the report, the exporters, the tests and the fuzzers share
 * (their structures and the queries on them: trace_data.h).
 *
 *  - the header (pid, command line, executable, clock), libraries, the function table (id ->
 *    name, library, patch status, decoder), threads (tid -> name), notes;
 *  - calls: every ENTRY matched with its EXIT on the same thread (a stack per thread, matched by
 *    depth), times converted to CLOCK_MONOTONIC nanoseconds, arguments, return value, nesting
 *    (parent call), and the DATA records the agent attached to the call;
 *  - counts (version 3): the calls of functions the agent counted instead of recording (agent
 *    option count=GLOBS), summed per function, per thread and in all, and each COUNTS entry
 *    with its thread and the time the writer read it;
 *  - the GPU side (agent option gpu=1): GPU sessions, CUPTI's records of the submitting calls
 *    (API) and of the GPU's work (kernels, copies, memsets) on the trace's clock, kernel names,
 *    and each work record linked to the traced call that submitted it (tr_gpu_link);
 *  - call stacks (agent option stacks=, trace_stacks.c): the MAPS blocks' mappings, the Python
 *    frames and the stacks by id, and each call's stack (tr_call_stack);
 *  - what went wrong: truncation (first damaged block, or no END block), corrupt records,
 *    unknown function ids, exits without entries, block sequence gaps, dropped records.
 *
 * Robustness: every size in the file is checked against the bytes that remain before it is used,
 * so truncated, corrupt or hostile input yields either a fatal error (not a trace, unsupported
 * version, header cut) or a trace of the readable prefix with `truncated` set and counters of
 * what was skipped — never a read out of bounds or a loop without progress.
 *
 * Input is read, never mapped, into memory of the trace's own, as far as it is valid and never
 * far beyond: a file that shrinks or changes while (or after) it is read cannot make the reader
 * or the report fault, and garbage after a valid prefix costs little memory (trace_reader.c,
 * "input"). Argument values and DATA values/strings point into that copy, so they stay valid
 * until tr_close(). */
#ifndef CUHOOK_TRACE_READER_H
#define CUHOOK_TRACE_READER_H

#include <stddef.h>
#include <stdint.h>

#include "trace_data.h"

/* Open and decode a trace file: a regular file (read up to the size it had when opened) or a
 * pipe. Returns the trace (possibly marked truncated / with errors: also a file that shrank while
 * it was read), or NULL with a one-line reason in err when the file cannot be read as a trace at
 * all: missing, a directory or a device, empty, not a trace (bad magic), unsupported version,
 * header cut or corrupt, out of memory. */
/* Optional: called while a big trace is decoded (every 64 MiB of events, then once at the end
 * with done == total), for a progress indicator. NULL (the default): silent. */
extern void (*tr_progress)(const char *path, uint64_t done, uint64_t total);

struct tr_trace *tr_open(const char *path, char *err, size_t errlen);

/* The same for bytes in memory (fuzzers, tests). The buffer is copied. */
struct tr_trace *tr_open_mem(const void *buf, size_t len, const char *name, char *err, size_t errlen);

void tr_close(struct tr_trace *t);

#endif
