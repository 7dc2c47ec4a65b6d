/* Notes for the trace from a tool outside the process (cuhook_agent_inbox, cuhook_agent.h): the
 * cuhook injector hands over how long it held each thread at the attach, which it knows only once
 * every thread runs again (after the start). The writer takes them on its thread. */
#ifndef CUHOOK_INBOX_H
#define CUHOOK_INBOX_H

/* A session starts (its writer is let go): what the inbox held before is not for it. */
void inbox_session_begins(void);

/* On the writer's thread, each round: a note handed over since, queued as a NOTE. */
void inbox_take(void);

#endif
