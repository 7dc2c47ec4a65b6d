/* The one line cuhook run and cuhook attach keep up to date on a terminal while the trace is
 * written: how long, the calls written so far, the trace's size, the records dropped, refreshed
 * in place once a second (as nsys and uftrace show their progress). The numbers are the agent's
 * own (cuhook_agent_control, read through /proc/PID/mem: src/inject/control.c): nothing is asked
 * of the traced process, which is neither stopped nor signalled for it. */
#ifndef CUHOOK_STATUS_LINE_H
#define CUHOOK_STATUS_LINE_H

#include "inject.h"

#include <stdbool.h>
#include <stdint.h>

#define STATUS_LINE_PERIOD_MS 1000

struct status_line {
	const char *prog;             /* "cuhook run": the line's prefix */
	struct cuhook_progress_src src;
	bool on;                      /* the agent was found: ticks draw */
	bool shown;                   /* a line is on the terminal now */
	uint64_t t0_ns;
};

/* Is the line wanted: stderr is a terminal (not "dumb"), and not -q. */
bool status_line_wanted(bool quiet);
/* Find the agent in pid. Nothing is drawn yet (the first tick after a period). */
void status_line_begin(struct status_line *s, const char *prog, pid_t pid, const char *agent_path);
/* Draw the line again, in place, with the agent's numbers now. */
void status_line_tick(struct status_line *s);
/* Take the line off the terminal, before another message or at the end (the trace's last
 * numbers are in its END block: cuhook report says them). */
void status_line_clear(struct status_line *s);
void status_line_end(struct status_line *s);

#endif
