/* The writer: a thread of the agent that drains every thread's ring into trace.bin, with the
 * file header, library and function tables, clock pairs and notes (format: trace_format.h). */
#ifndef CUHOOK_WRITER_H
#define CUHOOK_WRITER_H

#include <stddef.h>
#include <stdint.h>

/* Create the file, write its header and start the thread. Returns 0, or -errno with a message
 * in err. */
int writer_open(const char *path, unsigned flush_ms, unsigned flags, char *err, size_t errlen);

/* Stop the thread, drain everything, write the END block, close. */
void writer_close(void);
/* The same, waiting at most timeout_ms (-1: no limit) for the writer thread to finish its last
 * round: 0 when the trace was closed, -1 when the writer did not finish in time (the file is
 * then left as it is, the thread still running). */
int writer_close_within(int timeout_ms);

/* Ask the thread to drain now (a ring is full). Async-signal-safe. */
void writer_wake(void);

/* Ask the thread to populate the rings further ahead of their producers now (a ring's producer
 * came near the end of its populated part). Async-signal-safe. */
void writer_wake_populate(void);

/* Queue a NOTE block. */
void writer_note(int level, const char *text);

/* Totals so far. */
uint64_t writer_events(void);
uint64_t writer_dropped(void);



/* In a fork child: the file belongs to the parent; drop it without writing. */
void writer_forget_after_fork(void);
#endif
