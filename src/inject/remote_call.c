/* Calling a function inside the target, on one of its threads that we hold stopped.
 *
 * The thread's registers are saved, replaced by a call frame (System V x86-64 ABI: arguments in
 * rdi, rsi, rdx, rcx, r8, r9; rsp 16-byte aligned before the call pushes the return address;
 * direction flag clear), and the thread resumed. The return address we push is 0: when the
 * function returns, the thread faults fetching address 0, and that SIGSEGV stops it for us
 * (ptrace sees every signal before the process does, so the target's own SIGSEGV handler never
 * runs; we drop the signal). Then every register, vector state included, is put back.
 *
 * The frame goes below the thread's red zone: the 128 bytes under rsp that the ABI lets leaf
 * code use without moving rsp may hold live data at the point where we stopped it. Whatever we
 * write below that is, by the same ABI, garbage the thread does not rely on.
 *
 * A fault on a thread that blocks the signal makes the kernel unblock it and reset its handler to
 * SIG_DFL for the whole process (force_sig_info); threads often block every signal. So for the
 * call the thread's signal mask blocks everything except the synchronous faults we wait for,
 * and the mask is put back with the registers. Blocking the rest also keeps the target's signal
 * handlers from running in the middle of our call.
 *
 * A thread stopped inside a system call (rax = -ERESTART*, orig_rax = the call number) must not
 * see our call restart its system call: orig_rax is set to -1 for the call. Restoring the
 * registers exactly afterwards, orig_rax included, lets the kernel restart (or fail with EINTR)
 * the interrupted call when the thread resumes, exactly as after a signal handler. */
#include "internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1 /* si_code of a SIGSYS sent by seccomp (asm-generic/siginfo.h) */
#endif
#define EFLAGS_TF 0x100u
#define EFLAGS_DF 0x400u

void rcall_begin(struct rcall *rc, struct itarget *tg, struct ithread *th)
{
	memset(rc, 0, sizeof(*rc));
	rc->tg = tg;
	rc->th = th;
	rc->sp = (th->regs.rsp - RC_RED_ZONE) & ~(uint64_t)15;
}

uint64_t rcall_push(struct rcall *rc, const void *data, size_t len)
{
	uint64_t addr = (rc->sp - len) & ~(uint64_t)15;
	if (mem_write(rc->tg, addr, data, len) < 0)
		return 0;
	rc->sp = addr;
	return addr;
}

uint64_t rcall_push_string(struct rcall *rc, const char *s)
{
	return rcall_push(rc, s, strlen(s) + 1);
}

const char *syscall_name(long nr, char *buf, size_t len)
{
	/* the ones loading a library makes; others by number */
	static const struct {
		long nr;
		const char *name;
	} names[] = {{0, "read"}, {2, "open"}, {3, "close"}, {4, "stat"}, {5, "fstat"}, {9, "mmap"},
	             {10, "mprotect"}, {11, "munmap"}, {17, "pread64"}, {21, "access"}, {56, "clone"},
	             {257, "openat"}, {262, "newfstatat"}, {435, "clone3"}};
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].nr == nr) {
			snprintf(buf, len, "%s (%ld)", names[i].name, nr);
			return buf;
		}
	snprintf(buf, len, "system call %ld", nr);
	return buf;
}

static const char *sig_name(int sig)
{
	const char *d = sigabbrev_np(sig);
	return d ? d : "?";
}

/* Put the thread back as it was before the call. */
static int restore(struct rcall *rc, const struct xstate *xs, uint64_t mask)
{
	if (pt_setregs(rc->th->tid, &rc->th->regs) < 0)
		return -1;
	if (ptrace(PTRACE_SETSIGMASK, rc->th->tid, (void *)sizeof(mask), &mask) != 0) {
		inj_error("cannot restore the signal mask of thread %d: %s", rc->th->tid, strerror(errno));
		return -1;
	}
	return pt_set_xstate(rc->th->tid, xs);
}

/* Every signal blocked but the faults that end (or break) a remote call. */
static uint64_t call_sigmask(void)
{
	uint64_t m = ~(uint64_t)0;
	int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS, SIGABRT};
	for (unsigned i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		m &= ~((uint64_t)1 << (faults[i] - 1));
	return m;
}

/* The call did not come back in time: stop the thread where it is and put it back. Whatever
 * the function did up to here stays done (typically: it waits for a lock that a stopped
 * thread holds, and has changed nothing yet). */
/* "libfoo.so+0x1234" for an address of the target, for messages. */
static void describe_addr(const struct maps *m, uint64_t a, char *buf, size_t len)
{
	const struct mapping *mp = maps_find_addr(m, a);
	const char *name = mp && mp->path ? strrchr(mp->path, '/') : NULL;
	if (mp && mp->path)
		snprintf(buf, len, "%s+0x%llx", name ? name + 1 : mp->path,
		         (unsigned long long)(a - mp->start + mp->offset));
	else
		snprintf(buf, len, "0x%llx", (unsigned long long)a);
}

/* Where a stuck call is: its ip and, as a hint, the return addresses found on its stack (code
 * addresses of file mappings; without frame pointers, a scan is what there is). */
static void describe_stuck(struct rcall *rc, const struct user_regs_struct *r, char *buf, size_t len)
{
	struct maps m;
	size_t pos = 0;
	buf[0] = 0;
	if (maps_read(rc->tg->pid, &m) < 0)
		return;
	char a[256];
	describe_addr(&m, r->rip, a, sizeof(a));
	pos += (size_t)snprintf(buf + pos, len - pos, "; it was at %s", a);
	if ((long)r->orig_rax >= 0 && pos < len)
		pos += (size_t)snprintf(buf + pos, len - pos, " in system call %lld", (long long)r->orig_rax);
	uint64_t stack[512];
	size_t n = 0;
	if (r->rsp < rc->sp && rc->sp - r->rsp <= sizeof(stack))
		n = (rc->sp - r->rsp) / 8;
	else if (r->rsp < rc->sp)
		n = sizeof(stack) / 8;
	if (n && mem_read(rc->tg, r->rsp, stack, n * 8) == 0) {
		int shown = 0;
		for (size_t i = 0; i < n && shown < 8 && pos < len; i++) {
			const struct mapping *mp = maps_find_addr(&m, stack[i]);
			if (!mp || !mp->path || mp->perms[2] != 'x')
				continue;
			describe_addr(&m, stack[i], a, sizeof(a));
			pos += (size_t)snprintf(buf + pos, len - pos, "%s%s", shown++ ? " < " : ", called from ", a);
		}
	}
	maps_free(&m);
}

static int abandon(struct rcall *rc, const struct xstate *xs, uint64_t mask, char *where, size_t wlen)
{
	pid_t tid = rc->th->tid;
	where[0] = 0;
	pt_interrupt(tid);
	for (;;) {
		int st;
		int r = pt_wait(tid, &st, 2000);
		if (r <= 0)
			return -1;
		if (!WIFSTOPPED(st))
			return -1;
		int event = st >> 16;
		if (event == 0 && is_stop_signal(WSTOPSIG(st))) {
			/* a job-control stop: passed on now (internal.h), and the interrupt asked again
			 * (the report consumed it); the group-stop or the interrupt comes next */
			pt_cont(tid, WSTOPSIG(st));
			pt_interrupt(tid);
			continue;
		}
		if (event == 0 && WSTOPSIG(st) != SIGSEGV && WSTOPSIG(st) != SIGTRAP) {
			/* a signal on the way: keep it for the process, the interrupt stop comes next */
			ithread_add_pending(rc->th, WSTOPSIG(st));
			pt_cont(tid, 0);
			continue;
		}
		struct user_regs_struct now;
		if (pt_getregs(tid, &now) == 0)
			describe_stuck(rc, &now, where, wlen);
		return restore(rc, xs, mask);
	}
}

int rcall_invoke(struct rcall *rc, uint64_t fn, const uint64_t *args, int nargs, uint64_t *ret,
                 int timeout_ms, const char *what)
{
	struct ithread *th = rc->th;
	struct itarget *tg = rc->tg;
	static struct xstate xs; /* 16 KiB: not on our stack; calls are never nested */

	if (pt_get_xstate(th->tid, &xs) < 0)
		return RC_ERROR;
	/* The return address: 0, on a 16-byte aligned stack minus 8, as after a real `call`. */
	uint64_t sp = (rc->sp & ~(uint64_t)15) - 8;
	uint64_t zero = 0;
	if (mem_write(tg, sp, &zero, sizeof(zero)) < 0)
		return RC_ERROR;

	uint64_t mask, cmask = call_sigmask();
	if (ptrace(PTRACE_GETSIGMASK, th->tid, (void *)sizeof(mask), &mask) != 0) {
		inj_error("cannot read the signal mask of thread %d: %s", th->tid, strerror(errno));
		return RC_ERROR;
	}

	struct user_regs_struct r = th->regs;
	unsigned long long *argregs[6] = {&r.rdi, &r.rsi, &r.rdx, &r.rcx, &r.r8, &r.r9};
	for (int i = 0; i < nargs && i < 6; i++)
		*argregs[i] = args[i];
	r.rip = fn;
	r.rsp = sp;
	r.rax = 0;           /* no vector registers used by a variadic callee */
	r.orig_rax = (unsigned long long)-1; /* no system call to restart on resume */
	r.eflags &= ~(unsigned long long)(EFLAGS_DF | EFLAGS_TF);
	if (ptrace(PTRACE_SETSIGMASK, th->tid, (void *)sizeof(cmask), &cmask) != 0) {
		inj_error("cannot set the signal mask of thread %d: %s", th->tid, strerror(errno));
		return RC_ERROR;
	}
	if (pt_setregs(th->tid, &r) < 0) {
		restore(rc, &xs, mask);
		return RC_ERROR;
	}

	uint64_t t0 = inj_now_ns();
	if (pt_cont(th->tid, 0) < 0) {
		inj_error("cannot resume thread %d for %s: %s", th->tid, what, strerror(errno));
		restore(rc, &xs, mask);
		return RC_ERROR;
	}
	for (;;) {
		int st;
		int64_t left = timeout_ms - (int64_t)((inj_now_ns() - t0) / 1000000u);
		int w = pt_wait(th->tid, &st, left > 0 ? (int)left : 0);
		if (w == 0 && rc->on_slow && !rc->slow) {
			rc->slow = true;
			rc->on_slow(rc);
			th = rc->th;
			t0 = inj_now_ns();
			continue;
		}
		if (w == 0) {
			char where[1024];
			int ok = abandon(rc, &xs, mask, where, sizeof(where));
			inj_error("%s in process %d did not return within %.1f s: %s holds a lock it "
			          "needs (the dynamic loader's, malloc's, or the agent's)%s. Backed out: the "
			          "thread %s. If the call had taken a lock itself, the process may now stall "
			          "in it.",
			          what, tg->pid, (rc->slow ? 2 : 1) * timeout_ms / 1000.0,
			          rc->slow ? "some thread of the process (even running freely)" :
			                     "another thread (stopped by us) probably",
			          where, ok == 0 ? "was put back where it was" : "could not be put back: the process may be damaged");
			return RC_TIMEOUT;
		}
		if (w < 0 || WIFEXITED(st) || WIFSIGNALED(st)) {
			inj_error("process %d ended during %s%s%s", tg->pid, what,
			          w >= 0 && WIFSIGNALED(st) ? ", killed by " : "",
			          w >= 0 && WIFSIGNALED(st) ? sig_name(WTERMSIG(st)) : "");
			return RC_EXITED;
		}
		int sig = WSTOPSIG(st), event = st >> 16;
		if (event != 0) {
			/* PTRACE_EVENT_STOP: an interrupt still pending from the seize, or a group-stop
			 * (someone sent SIGSTOP); the call must finish first. */
			pt_cont(th->tid, 0);
			continue;
		}
		if (sig == SIGSEGV) {
			struct user_regs_struct now;
			if (pt_getregs(th->tid, &now) < 0)
				return RC_ERROR;
			if (now.rip == 0 && now.rsp == sp + 8) {
				/* Our return: the function executed `ret` to address 0. */
				*ret = now.rax;
				return restore(rc, &xs, mask) == 0 ? RC_OK : RC_ERROR;
			}
			inj_error("%s crashed in process %d (SIGSEGV at ip 0x%llx); the thread was put back "
			          "but the process may be in a bad state",
			          what, tg->pid, (unsigned long long)now.rip);
			restore(rc, &xs, mask);
			return RC_CRASH;
		}
		if (sig == SIGSYS) {
			/* SECCOMP_RET_TRAP: the system call was skipped. Abandoning the call here would
			 * leave whatever it holds (dlopen: the loader lock) held forever; failing that one
			 * system call with EPERM lets the function fail cleanly and return. */
			siginfo_t si;
			struct user_regs_struct now;
			if (ptrace(PTRACE_GETSIGINFO, th->tid, 0, &si) == 0 && si.si_code == SYS_SECCOMP &&
			    pt_getregs(th->tid, &now) == 0 && rc->seccomp_denied < 10000) {
				if (!rc->seccomp_denied++)
					rc->seccomp_nr = si.si_syscall;
				now.rax = (unsigned long long)-EPERM;
				if (pt_setregs(th->tid, &now) == 0) {
					pt_cont(th->tid, 0);
					continue;
				}
			}
			inj_error("a seccomp filter of process %d killed %s with SIGSYS; the thread was put "
			          "back but the process may be in a bad state", tg->pid, what);
			restore(rc, &xs, mask);
			return RC_CRASH;
		}
		if (sig == SIGILL || sig == SIGBUS || sig == SIGFPE || sig == SIGABRT || sig == SIGTRAP) {
			struct user_regs_struct now;
			pt_getregs(th->tid, &now);
			inj_error("%s failed in process %d with %s at ip 0x%llx; the thread was put back but "
			          "the process may be in a bad state",
			          what, tg->pid, sig_name(sig), (unsigned long long)now.rip);
			restore(rc, &xs, mask);
			return RC_CRASH;
		}
		if (is_stop_signal(sig)) {
			/* SIGSTOP (the others are blocked): passed on now (internal.h); the group-stop
			 * it starts is reported next, as an event stop, and the call goes on. */
			pt_cont(th->tid, sig);
			continue;
		}
		/* Any other signal (a timer, SIGCHLD, a kill aimed at the process) would run a handler
		 * in the middle of our call. Keep it; the process gets it when we let go. */
		ithread_add_pending(th, sig);
		pt_cont(th->tid, 0);
	}
}
