/* Stopping every other thread of this process while jumps are written, from inside it.
 *
 * A thread that happens to be executing the first instructions of a function when the jump is
 * written would resume in the middle of the jump and crash. `cuhook attach` avoids that by
 * stopping every thread with ptrace and moving those inside overwritten bytes; constructor mode
 * needs the same. A thread may not ptrace threads of its own process, so the agent starts a
 * helper *process* that shares its memory (clone with CLONE_VM, without CLONE_THREAD): the
 * helper seizes and interrupts every other thread, records where each stopped, lets the patcher
 * write, moves any thread whose instruction pointer lies inside overwritten bytes to the same
 * instruction in the relocated copy, and detaches. ptrace stops restart interrupted system
 * calls transparently, unlike signals, so the program sees nothing.
 *
 * The helper runs on its own small stack in our address space and only makes system calls: no
 * allocation, no locks (other threads are stopped while it runs and may hold them). */
#include "freeze.h"

#include "patcher.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FREEZE_MAX_THREADS 1024
#define HELPER_STACK (64 * 1024)

enum phase { P_START, P_GO, P_STOPPED, P_PATCHED, P_DONE, P_FAILED };

struct freeze_state {
	volatile int phase;
	int pid;                 /* this process */
	int self_tid;            /* the patching thread: never stopped */
	int n;                   /* threads stopped */
	int incomplete;          /* some thread could not be stopped */
	int tids[FREEZE_MAX_THREADS];
	uint64_t rip[FREEZE_MAX_THREADS];
	uint64_t new_rip[FREEZE_MAX_THREADS];
};

static struct freeze_state S;
static int helper_pid;
static void *helper_stack;

/* Raw system call: returns -errno on failure and never touches errno, which lives in the
 * patching thread's TLS that the helper shares. */
static long sys(long n, long a, long b, long c, long d)
{
	long r;
	register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
	return r;
}

static void set_phase(int p)
{
	__atomic_store_n(&S.phase, p, __ATOMIC_RELEASE);
	sys(SYS_futex, (long)&S.phase, FUTEX_WAKE, 1, 0);
}

static int wait_phase_change(int from, long timeout_ms)
{
	struct timespec ts = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
	while (__atomic_load_n(&S.phase, __ATOMIC_ACQUIRE) == from)
		if (sys(SYS_futex, (long)&S.phase, FUTEX_WAIT, from, (long)&ts) == -ETIMEDOUT)
			return -1;
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec t;
	sys(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&t, 0, 0);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static int known(int tid)
{
	if (tid == S.self_tid)
		return 1;
	for (int i = 0; i < S.n; i++)
		if (S.tids[i] == tid)
			return 1;
	return 0;
}

/* Seize and stop one thread; 0 on success. */
static int stop_thread(int tid, uint64_t deadline)
{
	long r = sys(SYS_ptrace, PTRACE_SEIZE, tid, 0, 0);
	if (r != 0)
		return r == -ESRCH ? 1 : -1; /* ESRCH: it exited meanwhile */
	if (sys(SYS_ptrace, PTRACE_INTERRUPT, tid, 0, 0) != 0) {
		sys(SYS_ptrace, PTRACE_DETACH, tid, 0, 0);
		return 1;
	}
	for (;;) {
		int status;
		r = sys(SYS_wait4, tid, (long)&status, __WALL | WNOHANG, 0);
		if (r == tid) {
			if (WIFSTOPPED(status) && (status >> 16) == PTRACE_EVENT_STOP)
				break;
			if (WIFEXITED(status) || WIFSIGNALED(status))
				return 1;
			/* A signal arrived first: let it be delivered as it would have been, and wait
			 * for our interrupt stop. */
			sys(SYS_ptrace, PTRACE_CONT, tid, 0, WIFSTOPPED(status) ? WSTOPSIG(status) : 0);
			continue;
		}
		if (r < 0 && r != -EINTR)
			return 1;
		if (now_ms() > deadline) {
			sys(SYS_ptrace, PTRACE_DETACH, tid, 0, 0);
			return -1;
		}
		struct timespec ts = {0, 100000};
		sys(SYS_nanosleep, (long)&ts, 0, 0, 0);
	}
	struct user_regs_struct regs;
	if (sys(SYS_ptrace, PTRACE_GETREGS, tid, 0, (long)&regs) != 0) {
		sys(SYS_ptrace, PTRACE_DETACH, tid, 0, 0);
		return -1;
	}
	S.tids[S.n] = tid;
	S.rip[S.n] = regs.rip;
	S.new_rip[S.n] = regs.rip;
	S.n++;
	return 0;
}

/* One pass over /proc/PID/task; returns how many new threads were found. */
static int stop_new_threads(uint64_t deadline)
{
	/* Not /proc/self: that is the helper, a process of its own. */
	char path[64] = "/proc/", digits[16];
	int nd = 0, len = 6;
	for (int v = S.pid; v > 0; v /= 10)
		digits[nd++] = (char)('0' + v % 10);
	while (nd > 0)
		path[len++] = digits[--nd];
	memcpy(path + len, "/task", 6);
	int fd = (int)sys(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int found = 0;
	char buf[4096];
	long n;
	while ((n = sys(SYS_getdents64, fd, (long)buf, sizeof(buf), 0)) > 0) {
		for (long off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			off += d->d_reclen;
			int tid = 0;
			for (const char *c = d->d_name; *c >= '0' && *c <= '9'; c++)
				tid = tid * 10 + (*c - '0');
			if (tid <= 0 || known(tid))
				continue;
			if (S.n == FREEZE_MAX_THREADS) {
				S.incomplete = 1;
				continue;
			}
			int r = stop_thread(tid, deadline);
			if (r == 0)
				found++;
			else if (r < 0)
				S.incomplete = 1;
		}
	}
	sys(SYS_close, fd, 0, 0, 0);
	return found;
}

static int helper_main(void *unused)
{
	(void)unused;
	/* Wait until the parent allowed us to trace it (Yama). */
	while (__atomic_load_n(&S.phase, __ATOMIC_ACQUIRE) == P_START)
		sys(SYS_futex, (long)&S.phase, FUTEX_WAIT, P_START, 0);
	uint64_t deadline = now_ms() + 1000;
	/* Threads may be created while we stop others: repeat until a pass finds none. */
	for (int pass = 0; pass < 100; pass++) {
		int found = stop_new_threads(deadline);
		if (found <= 0)
			break;
	}
	set_phase(P_STOPPED);
	while (__atomic_load_n(&S.phase, __ATOMIC_ACQUIRE) == P_STOPPED)
		sys(SYS_futex, (long)&S.phase, FUTEX_WAIT, P_STOPPED, 0);
	for (int i = 0; i < S.n; i++) {
		if (S.new_rip[i] != S.rip[i]) {
			struct user_regs_struct regs;
			if (sys(SYS_ptrace, PTRACE_GETREGS, S.tids[i], 0, (long)&regs) == 0) {
				regs.rip = S.new_rip[i];
				sys(SYS_ptrace, PTRACE_SETREGS, S.tids[i], 0, (long)&regs);
			}
		}
		sys(SYS_ptrace, PTRACE_DETACH, S.tids[i], 0, 0);
	}
	set_phase(P_DONE);
	return 0;
}

int freeze_others(void)
{
	int saved_errno = errno;
	memset(&S, 0, sizeof(S));
	helper_pid = 0;
	S.pid = getpid();
	S.self_tid = (int)gettid();
	if (!helper_stack) {
		helper_stack = mmap(NULL, HELPER_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (helper_stack == MAP_FAILED) {
			helper_stack = NULL;
			return -1;
		}
	}
	/* No exit signal: the program must not see a SIGCHLD for a child it did not start.
	 * CLONE_VM: the helper works on our memory; no CLONE_THREAD: it may ptrace us. */
	helper_pid = clone(helper_main, (char *)helper_stack + HELPER_STACK, CLONE_VM | CLONE_UNTRACED, NULL);
	if (helper_pid < 0) {
		errno = saved_errno;
		return -1;
	}
	int yama = prctl(PR_SET_PTRACER, helper_pid, 0, 0, 0);
	set_phase(P_GO);
	if (wait_phase_change(P_GO, 3000) != 0 || S.phase != P_STOPPED) {
		/* The helper is stuck: kill it (its tracees are released when it dies). */
		kill(helper_pid, SIGKILL);
		waitpid(helper_pid, NULL, __WALL);
		helper_pid = 0;
		if (yama == 0)
			prctl(PR_SET_PTRACER, 0, 0, 0, 0);
		errno = saved_errno;
		return -1;
	}
	if (yama == 0)
		prctl(PR_SET_PTRACER, 0, 0, 0, 0);
	errno = saved_errno;
	return S.incomplete ? 0 : 1;
}

void thaw_others(void)
{
	if (!helper_pid)
		return;
	int saved_errno = errno;
	for (int i = 0; i < S.n; i++)
		S.new_rip[i] = patch_fixup_ip(S.rip[i]);
	set_phase(P_PATCHED);
	waitpid(helper_pid, NULL, __WALL);
	helper_pid = 0;
	errno = saved_errno;
}

int freeze_moved_threads(void)
{
	int moved = 0;
	for (int i = 0; i < S.n; i++)
		moved += S.new_rip[i] != S.rip[i];
	return moved;
}

int freeze_stopped_threads(void)
{
	return S.n;
}
