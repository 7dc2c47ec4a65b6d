/* Stop every other thread of this process around a patch (see freeze.c). */
#ifndef CUHOOK_FREEZE_H
#define CUHOOK_FREEZE_H

/* Returns 1 when every other thread is stopped (jumps may be written with plain stores),
 * 0 when some could not be stopped (write atomically), -1 when none were (ptrace refused:
 * Yama, a debugger already attached, seccomp). Call thaw_others() after writing, whatever the
 * result. Between the two, the caller must not allocate or take locks: a stopped thread may
 * hold them. */
int freeze_others(void);

/* Move stopped threads that sit inside overwritten bytes (cuhook_agent_fixup_ip) and resume
 * them all. */
void thaw_others(void);

/* After thaw: how many threads were stopped, and how many were moved. */
int freeze_stopped_threads(void);
int freeze_moved_threads(void);

#endif
