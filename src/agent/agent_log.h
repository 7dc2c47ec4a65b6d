/* The agent's messages: to stderr, and as NOTE blocks into the trace. */
#ifndef CUHOOK_AGENT_LOG_H
#define CUHOOK_AGENT_LOG_H

#include <stdbool.h>

/* The options that choose what goes to stderr (quiet, verbose): set by the life cycle. */
void agent_log_configure(bool quiet, int verbose);

/* A message: level 0 goes to stderr with CUHOOK_VERBOSE; 1 also becomes an info NOTE in the
 * trace; 2 a warning NOTE, and always goes to stderr. */
void agent_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The writer could not write the trace (errno err: a full disk...) and tracing stopped. Said on
 * stderr when that is the operator's (constructor mode, cuhook run), and kept for the answer of
 * cuhook_agent_stop() (cuhook attach, where stderr=0: the process's stderr is someone else's).
 * Called on the writer thread. */
void agent_trace_failed(int err);

/* What agent_trace_failed() said this session, or NULL when it was not called. */
const char *agent_trace_failure(void);
/* A new session: no failure yet. */
void agent_trace_failure_clear(void);

#endif
