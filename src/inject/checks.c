/* What can be refused before the target is touched, each with a message that says what is wrong
 * and what to change. Everything here only reads /proc. */
#include "internal.h"
#include "inject.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int target_seccomp_mode(pid_t pid)
{
	char v[32];
	return proc_status_field(pid, "Seccomp", v, sizeof(v)) ? atoi(v) : -1;
}

int check_target(pid_t pid, bool stopped_ok)
{
	char p[64], v[64];
	if (pid <= 0) {
		inj_error("no such process: %d", pid);
		return -1;
	}
	if (pid == getpid()) {
		inj_error("cuhook cannot attach to itself");
		return -1;
	}
	snprintf(p, sizeof(p), "/proc/%d/status", pid);
	if (access(p, F_OK) != 0) {
		inj_error("no such process: %d", pid);
		return -1;
	}
	if (check_no_other_tracer(pid) < 0)
		return -1;
	if (proc_status_field(pid, "State", v, sizeof(v))) {
		if (v[0] == 'Z' || v[0] == 'X') {
			inj_error("process %d has exited (zombie)", pid);
			return -1;
		}
		if (v[0] == 'T' && !stopped_ok) {
			/* Nothing to trace until it runs again. (Its threads would be left stopped, as found:
			 * seized in a group-stop, a thread can still run our calls, and one detached while
			 * the group-stop is in effect stops again. A detach does that, for a process
			 * stopped during the tracing window.) */
			inj_error("process %d is stopped (job control); continue it first (kill -CONT %d)", pid, pid);
			return -1;
		}
	}
	if (target_seccomp_mode(pid) == 1) {
		inj_error("process %d runs in strict seccomp mode (only read, write, exit allowed): the "
		          "agent cannot be loaded into it", pid);
		return -1;
	}
	snprintf(p, sizeof(p), "/proc/%d/exe", pid);
	char exe[4096];
	ssize_t n = readlink(p, exe, sizeof(exe) - 1);
	if (n < 0) {
		if (errno == EACCES || errno == EPERM)
			explain_seize_error(pid, EPERM);
		else if (errno == ENOENT)
			inj_error("process %d has no executable (a kernel thread?)", pid);
		else
			inj_error("cannot read %s: %s", p, strerror(errno));
		return -1;
	}
	exe[n] = 0;
	char what[4200];
	snprintf(what, sizeof(what), "process %d (%s)", pid, exe);
	if (elf_check_x86_64(p, what) < 0)
		return -1;
	if (elf_has_interp(p) == 0) {
		/* Without a dynamic loader there is no dlopen to call (static glibc's dlopen needs the
		 * very libc.so it would load, and a static-pie has no loader either). */
		struct maps m;
		bool has_libc = false;
		if (maps_read(pid, &m) == 0) {
			has_libc = maps_find_object(&m, "libc.so") || maps_find_object(&m, "libc-") ||
			           maps_find_object(&m, "ld-linux");
			maps_free(&m);
		}
		if (!has_libc) {
			inj_error("process %d runs a statically linked program (%s): no dynamic loader and no "
			          "dlopen to load the agent with", pid, exe);
			return -1;
		}
	}
	return 0;
}

int cuhook_inject_check(pid_t pid)
{
	inj_error_clear();
	return check_target(pid, false);
}
