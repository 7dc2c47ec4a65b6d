/* What the agent's parts hand the writer thread (writer.c) without calling into it: notes for
 * the trace, and wake-ups. The writer takes them; nothing here knows the file. */
#ifndef CUHOOK_TO_WRITER_H
#define CUHOOK_TO_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Queued NOTE payloads: a fixed buffer, so that neither the threads queueing notes nor the
 * writer taking them calls malloc. */
#define NOTES_CAP 32768

/* Why the writer is woken before its next round is due: to drain (a ring is half full, or the
 * trace is closing), or only to populate the rings further ahead of their producers, which
 * needs no round (writing blocks while a program records flat out would compete with it). */
enum { WAKE_DRAIN = 1, WAKE_POPULATE = 2 };

/* Ask the thread to drain now (a ring is full). Async-signal-safe. */
void writer_wake(void);

/* Ask the thread to populate the rings further ahead of their producers now (a ring's producer
 * came near the end of its populated part). Async-signal-safe. */
void writer_wake_populate(void);

/* Queue a NOTE block. wait false: only if its lock is free at once (a start with the other
 * threads stopped must not wait for one of them); the note is lost otherwise. */
void writer_note(int level, const char *text, bool wait);

/* The writer's side. The WAKE_* bits asked since the last call, cleared. */
uint32_t to_writer_take_wakes(void);
/* Sleep until woken or t has passed. */
void to_writer_wait(const struct timespec *t);
/* Move the queued notes (level byte + text + NUL, back to back) into out[NOTES_CAP]: their
 * length, and in *lost how many did not fit the queue. */
size_t to_writer_take_notes(char *out, unsigned *lost);
/* Drop the queued notes (they were for a file that is discarded), if their lock is free at
 * once: this may run with the other threads stopped. */
void to_writer_drop_notes(void);
/* In a fork child: the queue's lock may be held by a thread that is gone. */
void to_writer_after_fork(void);

#endif
