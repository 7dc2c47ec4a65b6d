/* The watch on the cuhook attach that started the session (options injector= and deadline_ms=,
 * docs/agent.md): a cuhook that is killed (SIGKILL, the OOM killer, a lost ssh session) cannot
 * stop the agent any more, and one that is stopped (Ctrl-Z) past the end of its --duration will
 * not stop it in time. The writer asks at each round, and ends the trace by itself when the
 * answer is yes, rather than write until the disk is full. */
#ifndef CUHOOK_INJECTOR_WATCH_H
#define CUHOOK_INJECTOR_WATCH_H

#include <stdbool.h>
#include <stddef.h>

/* At the end of a start, while the injector is certainly alive (it is calling us): watch pid
 * (0: no injector to watch, as under cuhook run) and end the session deadline_ms after now
 * (0: no deadline). */
void injector_watch_begin(int pid, unsigned deadline_ms);

/* Should the session end by itself? true, with the reason (a sentence for the trace's NOTE) in
 * why. For the writer thread, once a round: no allocation, no lock, a poll and at most a few
 * reads of /proc. */
bool injector_watch_gone(char *why, size_t len);

/* The session ended (the writer no longer asks), or this is a fork child, whose copy of the
 * watch was the parent's session's: stop watching. */
void injector_watch_end(void);

#endif
