/* The writer: a thread of the agent that drains every thread's ring into trace.bin, with the
 * file header, library and function tables, clock pairs and notes (format: trace_format.h). */
#ifndef CUHOOK_WRITER_H
#define CUHOOK_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct writer_opts {
	unsigned flush_ms;  /* the writer's period */
	unsigned flags;     /* the file header's CUHOOK_FILE_* */
	bool replace;       /* an existing file at the path may be replaced (src/format/out_file.h) */
	uint64_t max_size;  /* the size cap, 0 none: once the next block would not leave room below
	                       it for the closing blocks, nothing more is written but those (a
	                       CLOCK, a NOTE saying so, the END block, whose dropped count includes
	                       the ENTRY/EXIT records not written); the rings are still drained, so
	                       no thread waits, and the file never exceeds max_size */
	bool gpu;           /* gpu=1: the GPU blocks queued for this file (gpu_queue.h) are written
	                       at each round, and room below the size cap is kept for the session's
	                       STOPPED block and its NOTE of lost records */
	bool stacks;        /* stacks=: the stacks interned (stack_table.h) are written at each
	                       round, with the MAPS they need, before the events that name them */
	bool flight;        /* flight=: the flight recorder (flight.h): the file stays empty until
	                       a dump; each dump writes what the rings hold since the last one */
};

/* Create the file (exclusively, src/format/out_file.h), write its header and create the writer
 * thread, which then waits, writing nothing, for writer_start(). It takes glibc's locks (open,
 * pthread_create): call it while the program's threads run. Returns 0, or -errno with a message
 * in err. */
int writer_prepare(const char *path, const struct writer_opts *o, char *err, size_t errlen);

/* Start the prepared writer: the session begins with the rings as they are now. No lock, no
 * allocation; a futex wake is its one system call: for a start with every other thread
 * stopped, wherever they stopped. */
void writer_start(void);

/* A prepared writer that will not be started: its thread leaves (without waiting for it), the
 * file (header only) is closed. Nothing when not prepared, or started. */
void writer_discard(void);

/* writer_prepare() then writer_start(). */
int writer_open(const char *path, const struct writer_opts *o, char *err, size_t errlen);

/* Stop the thread, drain everything, write the END block, close. */
void writer_close(void);
/* The same, waiting at most timeout_ms (-1: no limit) for the writer thread to finish its last
 * round: 0 when the trace was closed, -1 when the writer did not finish in time (the file is
 * then left as it is, the thread still running). */
int writer_close_within(int timeout_ms);

/* The last session was ended by the writer itself, its file closed: the injector that started it
 * is gone or late (injector_watch.h). Its jumps are still in place and pass calls through. */
bool writer_ended_itself(void);


/* In a fork child: the file belongs to the parent; drop it without writing. */
void writer_forget_after_fork(void);
#endif
