/* Calling a function inside the target, on one of its threads that we hold stopped, so that the
 * call completes correctly whether or not cuhook is still there when it returns.
 *
 * The thread's state as it would resume (registers, signal mask, vector state) is written below
 * its stack pointer as the kernel's own signal frame (struct rt_sigframe), and the function is
 * entered with that frame's first word as its return address. The function returns into our
 * gate (gate.S, copied into a page we map in the target), which executes rt_sigreturn: the
 * kernel puts the whole state back from the frame, exactly as after a signal handler, and the
 * thread goes on where it was. Nothing of that needs cuhook: if cuhook is killed, loses its
 * terminal or runs out of memory at any instant of a call, the thread still returns to where it
 * was (the previous scheme returned to address 0 and relied on cuhook to catch the SIGSEGV: a
 * killed cuhook killed the program).
 *
 * While cuhook is there, it wants the result and the thread back in its hands: the gate first
 * sends the thread a signal that the process leaves at its default action "ignore" (SIGURG,
 * SIGWINCH or SIGCHLD, whichever it has no handler for). ptrace reports even an ignored signal
 * before delivery, so the thread stops there; we read the result and put the thread back
 * ourselves (exactly: orig_rax included, so an interrupted system call restarts as it would
 * have), and drop the signal. Untraced, the kernel discards such a signal when it is sent. A
 * process with handlers for all three, or with a seccomp filter (which might refuse tgkill), gets
 * the same calls observed through system-call stops instead (PTRACE_SYSCALL): slower, as sound.
 *
 * The page itself is mapped by a first call of libc's mmap whose frame returns straight into
 * libc's own rt_sigreturn trampoline (__restore_rt), observed through system-call stops: with us
 * there, the thread is put back at mmap's system-call exit (finish_at_syscall_exit); without us,
 * __restore_rt does it. The page is unmapped the same way when the sequence ends. A call left to
 * finish on its own (a stuck call with the other threads running, see call_run) keeps the page,
 * which the thread will return into.
 *
 * What rt_sigreturn cannot do is restart a sleep: it discards a pending restart_syscall, so a
 * thread whose nanosleep (or poll, or timed futex wait) we interrupted sees EINTR if it comes back
 * through the frame rather than through us. That happens only when cuhook vanished mid-call, or
 * for a process whose calls are watched by system-call stops (no report signal).
 *
 * The frame goes below the thread's red zone: the 128 bytes under rsp that the ABI lets leaf
 * code use without moving rsp may hold live data at the point where we stopped it. Whatever we
 * write below that is, by the same ABI, garbage the thread does not rely on.
 *
 * A fault on a thread that blocks the signal makes the kernel unblock it and reset its handler to
 * SIG_DFL for the whole process (force_sig_info); threads often block every signal. So for the
 * call the thread's signal mask blocks everything except the synchronous faults and the gate's
 * signal, and the frame puts the mask back. Blocking the rest also keeps the target's signal
 * handlers from running in the middle of our call.
 *
 * A thread stopped inside a system call (rax = -ERESTART*, orig_rax = the call number) must not
 * see our call restart its system call: orig_rax is -1 for the call. The frame holds the
 * registers as the kernel would resume them without a handler (the system call instruction
 * again, rax its number, or restart_syscall), since rt_sigreturn never restarts anything. */
#include "internal.h"

#include "cuhook_agent.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1 /* si_code of a SIGSYS sent by seccomp (asm-generic/siginfo.h) */
#endif
#define EFLAGS_TF 0x100u
#define EFLAGS_DF 0x400u
#define ERESTART_RESTARTBLOCK 516
#define NR_RT_SIGRETURN 15
#define GATE_PAGE 4096u
#define GATE_CODE_OFF 64u /* after the magic: CUHOOK_GATE_MAGIC, for the agent to recognise */

/* The kernel's struct rt_sigframe on x86-64 (arch/x86/include/asm/sigframe.h): what
 * rt_sigreturn reads at rsp - 8. The siginfo that follows the ucontext is not read back by it:
 * the gate's report parameters live there (RGATE_* in gate.S). */
struct sigframe {
	uint64_t pretcode;                        /* the called function's return address */
	uint64_t uc_flags, uc_link;
	uint64_t ss_sp;
	int32_t ss_flags, ss_pad;
	uint64_t ss_size;
	uint64_t gregs[18];                       /* struct sigcontext: r8..r15, rdi, rsi, rbp, rbx, */
	uint16_t cs, gs, fs, ss;                  /*   rdx, rax, rcx, rsp, rip, eflags             */
	uint64_t err, trapno, oldmask, cr2, fpstate, reserved1[8];
	uint64_t sigmask;
	uint64_t tgid, tid, sig;                  /* siginfo area: the gate's report */
	uint64_t info_rest[13];
};
_Static_assert(offsetof(struct sigframe, gregs) == 48, "sigcontext at uc + 40");
_Static_assert(offsetof(struct sigframe, sigmask) == 304, "uc_sigmask at uc + 296");
_Static_assert(offsetof(struct sigframe, tgid) == 8 + 0x130, "RGATE_TGID in gate.S");
_Static_assert(offsetof(struct sigframe, sig) == 8 + 0x140, "RGATE_SIG in gate.S");
_Static_assert(sizeof(struct sigframe) == 8 + 304 + 128, "rt_sigframe");

#define UC_FP_XSTATE 0x1
#define UC_SIGCONTEXT_SS 0x2
#define UC_STRICT_RESTORE_SS 0x4
#undef FP_XSTATE_MAGIC1
#undef FP_XSTATE_MAGIC2
#define FP_XSTATE_MAGIC1 0x46505853u
#define FP_XSTATE_MAGIC2 0x46505845u
#define FX_SW_OFF 464 /* struct _fpx_sw_bytes in the legacy area's software-reserved bytes */
/* An ss_flags value the kernel refuses: rt_sigreturn then leaves the thread's alternate signal
 * stack as it is (it ignores that error) instead of setting it from our frame. */
#define SS_FLAGS_KEEP 3

extern const unsigned char rgate_code[], rgate_reported[], rgate_returned[], rgate_code_end[];
extern const unsigned char rentry_code[], rentry_reported[], rentry_target[], rentry_code_end[];
#define ENTRY_STUB_OFF 512u /* where the entry stub goes in the page, after the gate */

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

/* ---- finding what the gate needs in the target -------------------------------------------------- */

/* The bytes of `mov $15, %rax; syscall`: libc's __restore_rt (glibc and musl alike). */
static const unsigned char restore_rt_bytes[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};

/* The first occurrence of the n bytes `pat` in [lo, hi) of the target, or 0. */
static uint64_t scan_bytes(struct itarget *tg, uint64_t lo, uint64_t hi, const unsigned char *pat, size_t n)
{
	enum { CHUNK = 1 << 18 };
	unsigned char *buf = malloc(CHUNK);
	uint64_t found = 0;
	for (uint64_t a = lo; buf && a < hi && !found;) {
		size_t want = hi - a < CHUNK ? (size_t)(hi - a) : CHUNK;
		size_t got = mem_read_some(tg, a, buf, want);
		if (got < n)
			break;
		for (unsigned char *p = buf; !found && (p = memchr(p, pat[0], (size_t)(buf + got - p))); p++)
			if (p + n <= buf + got && !memcmp(p, pat, n))
				found = a + (uint64_t)(p - buf);
		/* overlap so that a match across two chunks is seen */
		a += (uint64_t)got - n + 1;
	}
	free(buf);
	return found;
}

static uint64_t scan_restore_rt(struct itarget *tg, uint64_t lo, uint64_t hi)
{
	return scan_bytes(tg, lo, hi, restore_rt_bytes, sizeof(restore_rt_bytes));
}

/* A signal the process leaves at its default action "ignore": the gate's report. 0 if none (or
 * a seccomp filter, which might refuse the tgkill or kill the process for it). */
static int pick_report_signal(pid_t pid)
{
	if (target_seccomp_mode(pid) != 0)
		return 0;
	char p[64], line[256];
	snprintf(p, sizeof(p), "/proc/%d/status", pid);
	FILE *f = fopen(p, "re");
	if (!f)
		return 0;
	unsigned long long caught = ~0ull;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "SigCgt:", 7))
			caught = strtoull(line + 7, NULL, 16);
	fclose(f);
	const int candidates[] = {SIGURG, SIGWINCH, SIGCHLD};
	for (unsigned i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++)
		if (!(caught & (1ull << (candidates[i] - 1))))
			return candidates[i];
	return 0;
}

/* libc's mmap, munmap and __restore_rt in the target. 0, or -1 with a message. */
static int gate_probe(struct itarget *tg)
{
	struct rgate *g = &tg->gate;
	if (g->restore_rt)
		return 0;
	struct maps m;
	if (maps_read(tg->pid, &m) < 0)
		return -1;
	const char *libs[] = {"libc.so.6", "libc-", "libc.so", "ld-musl", "libc.musl"};
	const char *lib = NULL;
	for (unsigned i = 0; !lib && i < sizeof(libs) / sizeof(libs[0]); i++)
		lib = maps_find_object(&m, libs[i]);
	if (lib) {
		g->mmap_fn = target_symbol(tg->pid, &m, lib, "mmap");
		g->munmap_fn = target_symbol(tg->pid, &m, lib, "munmap");
		/* __restore_rt is not exported; it lives beside sigaction (glibc: libc_sigaction.c). */
		uint64_t sa = target_symbol(tg->pid, &m, lib, "sigaction");
		for (int i = 0; i < m.n && sa && !g->restore_rt; i++)
			if (m.m[i].perms[2] == 'x' && sa >= m.m[i].start && sa < m.m[i].end) {
				uint64_t lo = sa > m.m[i].start + 8192 ? sa - 8192 : m.m[i].start;
				uint64_t hi = sa + 8192 < m.m[i].end ? sa + 8192 : m.m[i].end;
				g->restore_rt = scan_restore_rt(tg, lo, hi);
			}
		for (int i = 0; i < m.n && !g->restore_rt; i++)
			if (m.m[i].perms[2] == 'x' && m.m[i].path && !strcmp(m.m[i].path, lib))
				g->restore_rt = scan_restore_rt(tg, m.m[i].start, m.m[i].end);
	}
	char libname[256]; /* lib points into m */
	snprintf(libname, sizeof(libname), "%s", lib ? lib : "");
	maps_free(&m);
	if (!lib || !g->mmap_fn || !g->munmap_fn || !g->restore_rt) {
		inj_error("process %d: no %s found in its C library%s%s: cuhook cannot make calls in it "
		          "that complete without cuhook", tg->pid,
		          !lib ? "C library" : !g->restore_rt ? "rt_sigreturn trampoline" : "mmap/munmap",
		          lib ? " " : "", libname);
		g->restore_rt = 0;
		return -1;
	}
	g->sig = pick_report_signal(tg->pid);
	inj_log("remote calls return through %s (rt_sigreturn at 0x%llx in %s)",
	        g->sig ? sigabbrev_np(g->sig) : "system-call stops", (unsigned long long)g->restore_rt,
	        libname);
	return 0;
}

int rcall_probe(struct itarget *tg)
{
	return gate_probe(tg);
}

/* ---- the frame ------------------------------------------------------------------------------ */

/* Every signal blocked but the faults that break a call, and the gate's report. */
static uint64_t call_sigmask(int report)
{
	uint64_t m = ~(uint64_t)0;
	int keep[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS, SIGABRT, report};
	for (unsigned i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (keep[i])
			m &= ~((uint64_t)1 << (keep[i] - 1));
	return m;
}

/* The registers as the kernel resumes a thread stopped with r when no handler runs: an
 * interrupted system call restarts (arch_do_signal_or_restart). rt_sigreturn restores registers
 * and never restarts anything itself. */
static void resume_regs(const struct user_regs_struct *r, struct user_regs_struct *out)
{
	*out = *r;
	if (regs_in_restartable_syscall(r)) {
		out->rax = (long)r->rax == -ERESTART_RESTARTBLOCK ? SYS_restart_syscall : r->orig_rax;
		out->rip -= 2;
	}
	out->orig_rax = (unsigned long long)-1;
}

/* What one call needs to undo it: the state the thread had, as we read it. */
struct saved {
	struct xstate xs;
	uint64_t mask;
	uint64_t frame;   /* where the sigframe is */
};

/* Write the frame (and the vector state it points to) for a call on rc->th that returns to
 * `ret`; fill s. 0 or -1 with a message. */
static int write_frame(struct rcall *rc, uint64_t ret, int report, struct saved *s)
{
	struct ithread *th = rc->th;
	struct itarget *tg = rc->tg;
	if (pt_get_xstate(th->tid, &s->xs) < 0)
		return -1;
	if (ptrace(PTRACE_GETSIGMASK, th->tid, (void *)sizeof(s->mask), &s->mask) != 0) {
		inj_error("cannot read the signal mask of thread %d: %s", th->tid, strerror(errno));
		return -1;
	}
	/* The vector state, 64-byte aligned as xrstor wants it, with the software bytes and the
	 * trailing magic that tell rt_sigreturn it is a whole XSAVE area. */
	size_t len = s->xs.len;
	static unsigned char fp[sizeof(s->xs.buf) + 4] __attribute__((aligned(64)));
	memcpy(fp, s->xs.buf, len);
	if (!s->xs.fp_only) {
		uint64_t xcr0; /* what ptrace leaves in the software-reserved bytes */
		memcpy(&xcr0, fp + FX_SW_OFF, 8);
		struct {
			uint32_t magic1, extended_size;
			uint64_t xfeatures;
			uint32_t xstate_size, pad[7];
		} sw = {FP_XSTATE_MAGIC1, (uint32_t)len + 4, xcr0, (uint32_t)len, {0}};
		memcpy(fp + FX_SW_OFF, &sw, sizeof(sw));
		uint32_t magic2 = FP_XSTATE_MAGIC2;
		memcpy(fp + len, &magic2, 4);
		len += 4;
	}
	uint64_t fpa = (rc->sp - len) & ~(uint64_t)63;
	uint64_t frame = ((fpa - sizeof(struct sigframe) - 8) & ~(uint64_t)15) + 8; /* as after a call */

	struct user_regs_struct r;
	resume_regs(&th->regs, &r);
	struct sigframe f;
	memset(&f, 0, sizeof(f));
	f.pretcode = ret;
	f.uc_flags = (s->xs.fp_only ? 0 : UC_FP_XSTATE) | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS;
	f.ss_flags = SS_FLAGS_KEEP;
	const unsigned long long g[18] = {r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rdi,
	                                  r.rsi, r.rbp, r.rbx, r.rdx, r.rax, r.rcx, r.rsp, r.rip, r.eflags};
	for (int i = 0; i < 18; i++)
		f.gregs[i] = g[i];
	f.cs = (uint16_t)r.cs;
	f.ss = (uint16_t)r.ss;
	f.fpstate = fpa;
	f.sigmask = s->mask;
	f.tgid = (uint64_t)tg->pid;
	f.tid = (uint64_t)th->tid;
	f.sig = (uint64_t)report;
	if (mem_write(tg, fpa, fp, len) < 0 || mem_write(tg, frame, &f, sizeof(f)) < 0)
		return -1;
	s->frame = frame;
	return 0;
}

/* Put the thread back as it was before the call, by ptrace: mask and vector state first, the
 * registers last, so that a thread we are killed in the middle of still holds the call's
 * registers and finishes through the frame on its own. */
static int restore(struct rcall *rc, const struct saved *s)
{
	if (ptrace(PTRACE_SETSIGMASK, rc->th->tid, (void *)sizeof(s->mask), &s->mask) != 0) {
		inj_error("cannot restore the signal mask of thread %d: %s", rc->th->tid, strerror(errno));
		return -1;
	}
	if (pt_set_xstate(rc->th->tid, &s->xs) < 0)
		return -1;
	return pt_setregs(rc->th->tid, &rc->th->regs);
}

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
static void describe_stuck(struct rcall *rc, const struct user_regs_struct *r, uint64_t top, char *buf,
                           size_t len)
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
	if (r->rsp < top && top - r->rsp <= sizeof(stack))
		n = (top - r->rsp) / 8;
	else if (r->rsp < top)
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

/* Stop the running call's thread (PTRACE_INTERRUPT) and say where it is. 0: stopped. */
static int interrupt_call(struct rcall *rc, uint64_t top, struct user_regs_struct *now, char *where,
                          size_t wlen)
{
	pid_t tid = rc->th->tid;
	where[0] = 0;
	pt_interrupt(tid);
	for (;;) {
		int st;
		int r = pt_wait(tid, &st, 2000);
		if (r <= 0 || !WIFSTOPPED(st))
			return -1;
		int event = st >> 16;
		if (event == 0 && is_stop_signal(WSTOPSIG(st))) {
			/* a job-control stop: passed on now (internal.h), and the interrupt asked again
			 * (the report consumed it); the group-stop or the interrupt comes next */
			pt_cont(tid, WSTOPSIG(st));
			pt_interrupt(tid);
			continue;
		}
		if (event == 0 && WSTOPSIG(st) != SIGSEGV && WSTOPSIG(st) != SIGTRAP &&
		    WSTOPSIG(st) != (SIGTRAP | 0x80) /* a system-call stop: stopped as well */) {
			/* a signal on the way: keep it for the process, the interrupt stop comes next */
			if (WSTOPSIG(st) != rc->tg->gate.sig)
				ithread_add_pending(rc->th, WSTOPSIG(st));
			pt_cont(tid, 0);
			continue;
		}
		if (pt_getregs(tid, now) < 0)
			return -1;
		describe_stuck(rc, now, top, where, wlen);
		return 0;
	}
}

/* Let the call finish without us: the thread is detached while it runs the call, returns
 * through the frame on its own and goes on where it was. Whatever the call holds (the loader's
 * lock, say) it releases as it would have. The gate page stays mapped: it is where it returns. */
static int leave_call(struct rcall *rc)
{
	struct itarget *tg = rc->tg;
	struct ithread *th = rc->th;
	tg->gate.keep = true;
	int sig = th->npending ? th->pending[0] : 0;
	for (int i = 1; i < th->npending; i++)
		syscall(SYS_tgkill, tg->pid, th->tid, th->pending[i]);
	int r = ptrace(PTRACE_DETACH, th->tid, 0, (void *)(long)sig) == 0 ? 0 : -1;
	for (int i = 0; i < tg->nth; i++)
		if (&tg->th[i] == th) {
			tg->th[i] = tg->th[--tg->nth];
			break;
		}
	rc->th = NULL;
	return r;
}

/* ---- running a call ------------------------------------------------------------------------- */

/* CPU time the thread has used, 0 if unknown. */
static uint64_t thread_cpu(pid_t pid, pid_t tid)
{
	uint64_t cpu = 0;
	task_stat(pid, tid, NULL, &cpu);
	return cpu;
}

/* With the other threads running, a call that is slow but working (a dlopen beside hundreds of
 * busy threads on a few cores) gets more time, up to this many timeouts; one that used no CPU
 * in a whole timeout is stuck. */
#define RC_MAX_EXTENSIONS 10

/* The thread is at a system-call-exit stop and its call is over: put it back exactly, and into
 * an interrupt stop, like the one it was found in. Exactly means the registers as they were,
 * orig_rax and -ERESTART* included, resumed from inside the kernel's signal path, which is where
 * an interrupted system call is restarted (from a system-call-exit stop the kernel would hand
 * -ERESTART* to the program). So: PTRACE_INTERRUPT first, which makes the thread pass through
 * the signal path on its way out, and stop there. Should we die in between, the kernel wakes the
 * thread into that same path (a tracer's exit kicks its stopped tracees with a pending-signal
 * wake-up), and the restart happens as it would have. The kernel's rt_sigreturn is not used for
 * that: it also discards a pending restart_syscall (an interrupted nanosleep would return EINTR).
 * 0, or -1 with a message. */
static int finish_at_syscall_exit(struct rcall *rc, const struct saved *s)
{
	pid_t tid = rc->th->tid;
	if (pt_interrupt(tid) < 0 || restore(rc, s) < 0 || pt_cont(tid, 0) < 0) {
		inj_error("cannot put thread %d back after a call: %s", tid, strerror(errno));
		return -1;
	}
	for (;;) {
		int st;
		if (pt_wait(tid, &st, 2000) <= 0 || !WIFSTOPPED(st)) {
			inj_error("thread %d did not stop after a call", tid);
			return -1;
		}
		if ((st >> 16) == PTRACE_EVENT_STOP)
			return 0;
		if ((st >> 16) == 0 && is_stop_signal(WSTOPSIG(st))) {
			/* a job-control stop: passed on now (internal.h), and the interrupt asked again;
			 * the group-stop or the interrupt stop comes next, either a stop to leave it in */
			pt_cont(tid, WSTOPSIG(st));
			pt_interrupt(tid);
			continue;
		}
		/* a signal on its way: the process gets it when we let go */
		if ((st >> 16) == 0)
			ithread_add_pending(rc->th, WSTOPSIG(st));
		pt_cont(tid, 0);
	}
}

/* Is this stop (wait status st) a system-call stop of PTRACE_SYSCALL? With
 * PTRACE_O_TRACESYSGOOD (INJ_SEIZE_OPTIONS) it reports SIGTRAP | 0x80; a thread seized by someone
 * else's options would report SIGTRAP with that si_code; a real SIGTRAP (int3, a single step)
 * has another. */
static bool syscall_stop(pid_t tid, int st)
{
	if (!WIFSTOPPED(st) || (st >> 16) != 0)
		return false;
	if (WSTOPSIG(st) == (SIGTRAP | 0x80))
		return true;
	siginfo_t si;
	return WSTOPSIG(st) == SIGTRAP && ptrace(PTRACE_GETSIGINFO, tid, 0, &si) == 0 && si.si_code == SIGTRAP;
}

struct call {
	uint64_t fn;
	const uint64_t *args;
	int nargs;
	uint64_t ret;            /* return address: the gate, or libc's __restore_rt */
	int report;              /* the gate's report signal; 0: watch system-call stops */
	long result_nr;          /* system-call stops: the result is this system call's return value
	                          * (-1: r12 at rt_sigreturn's entry, the gate's) */
	uint64_t sigreturn_ip;   /* rip at rt_sigreturn's entry stop */
	bool leave_on_timeout;   /* the other threads run: a stuck call may finish without us */
};

/* The wait loop's answer. */
static int call_run(struct rcall *rc, const struct call *c, uint64_t *ret, int timeout_ms, const char *what)
{
	struct itarget *tg = rc->tg;
	struct ithread *th = rc->th;
	static struct saved s; /* 16 KiB: not on our stack; calls are never nested */
	if (write_frame(rc, c->ret, c->report, &s) < 0)
		return RC_ERROR;
	uint64_t top = s.frame; /* the call's own stack starts below its frame */

	struct user_regs_struct r = th->regs;
	unsigned long long *argregs[6] = {&r.rdi, &r.rsi, &r.rdx, &r.rcx, &r.r8, &r.r9};
	for (int i = 0; i < c->nargs && i < 6; i++)
		*argregs[i] = c->args[i];
	r.rip = c->fn;
	r.rsp = s.frame;
	r.rax = 0;           /* no vector registers used by a variadic callee */
	r.orig_rax = (unsigned long long)-1; /* no system call to restart on resume */
	r.eflags &= ~(unsigned long long)(EFLAGS_DF | EFLAGS_TF);
	/* Registers first: from here on, whatever happens to us, the thread runs the call and
	 * returns through the frame. Then the call's mask (the frame holds the thread's own). */
	if (pt_setregs(th->tid, &r) < 0)
		return RC_ERROR;
	uint64_t cmask = call_sigmask(c->report);
	if (ptrace(PTRACE_SETSIGMASK, th->tid, (void *)sizeof(cmask), &cmask) != 0) {
		inj_error("cannot set the signal mask of thread %d: %s", th->tid, strerror(errno));
		restore(rc, &s);
		return RC_ERROR;
	}

	const enum __ptrace_request resume = c->report ? PTRACE_CONT : PTRACE_SYSCALL;
	long entry_nr = -1;     /* system-call stops: the call whose exit comes next */
	bool have_result = false;
	uint64_t t0 = inj_now_ns(), t_begin = t0, cpu_seen = thread_cpu(tg->pid, th->tid);
	int extensions = 0;
	if (ptrace(resume, th->tid, 0, 0) != 0) {
		inj_error("cannot resume thread %d for %s: %s", th->tid, what, strerror(errno));
		restore(rc, &s);
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
		if (w == 0 && (c->leave_on_timeout || rc->slow) && extensions < RC_MAX_EXTENSIONS) {
			uint64_t cpu = thread_cpu(tg->pid, th->tid);
			if (cpu > cpu_seen) {
				cpu_seen = cpu;
				extensions++;
				inj_log("%s still working after %.1f s: waiting on", what,
				        (inj_now_ns() - t_begin) / 1e9);
				t0 = inj_now_ns();
				continue;
			}
		}
		if (w == 0) {
			char where[1024];
			double secs = (inj_now_ns() - t_begin) / 1e9;
			const char *holder = rc->slow ? "some thread of the process (even running freely)" :
			                                "another thread (stopped by us) probably";
			struct user_regs_struct now;
			int ok = interrupt_call(rc, top, &now, where, sizeof(where));
			/* With the other threads running (after on_slow: dlopen's case), a call still not
			 * back is either waiting for a lock that someone else keeps (a futex wait: it holds
			 * nothing itself, since the loader's lock is the first it takes; put it back) or
			 * still working (left to finish on its own, releasing what it took as it would). */
			bool waiting = regs_in_restartable_syscall(&now) && now.orig_rax == SYS_futex;
			if ((c->leave_on_timeout || rc->slow) && ok == 0 && !waiting && leave_call(rc) == 0) {
				inj_error("%s in process %d did not return within %.1f s%s; it is still working "
				          "(not waiting for a lock). Left to finish on its own: the thread goes "
				          "back to where it was when it returns; the process goes on untraced.",
				          what, tg->pid, secs, where);
				return RC_TIMEOUT;
			}
			ok = ok == 0 ? restore(rc, &s) : -1;
			inj_error("%s in process %d did not return within %.1f s: %s holds a lock it "
			          "needs (the dynamic loader's, malloc's, or the agent's)%s. Backed out: the "
			          "thread %s. If the call had taken a lock itself, the process may now stall "
			          "in it.",
			          what, tg->pid, secs, holder, where,
			          ok == 0 ? "was put back where it was" : "could not be put back: the process may be damaged");
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
			 * (someone sent SIGSTOP); the call must finish first. PTRACE_EVENT_CLONE (asked for
			 * by the caller, PTRACE_O_TRACECLONE): the new thread's id. */
			unsigned long msg = 0;
			if (event == PTRACE_EVENT_CLONE && ptrace(PTRACE_GETEVENTMSG, th->tid, 0, &msg) == 0)
				rc->cloned = (pid_t)msg;
			ptrace(resume, th->tid, 0, 0);
			continue;
		}
		if (c->report && sig == c->report) {
			siginfo_t si;
			struct user_regs_struct now;
			if (ptrace(PTRACE_GETSIGINFO, th->tid, 0, &si) == 0 && si.si_code == SI_TKILL &&
			    si.si_pid == tg->pid && pt_getregs(th->tid, &now) == 0 &&
			    now.rip == tg->gate.page + GATE_CODE_OFF + (uint64_t)(rgate_reported - rgate_code)) {
				/* Our gate: the result is in r12. The signal is dropped when the thread is
				 * resumed (with signal 0) from this stop. */
				*ret = now.r12;
				return restore(rc, &s) == 0 ? RC_OK : RC_ERROR;
			}
		}
		if (!c->report && syscall_stop(th->tid, st)) {
			/* Entry and exit stops alternate: each system call has both. */
			struct user_regs_struct now;
			if (pt_getregs(th->tid, &now) < 0)
				return RC_ERROR;
			if (entry_nr < 0) {
				entry_nr = (long)now.orig_rax;
				if (entry_nr == NR_RT_SIGRETURN && now.rip == c->sigreturn_ip && c->result_nr < 0) {
					*ret = now.r12; /* the gate's */
					have_result = true;
				}
				if (entry_nr < 0)
					entry_nr = INT32_MAX; /* a skipped call still has its exit stop */
			} else {
				if (c->result_nr >= 0 && entry_nr == c->result_nr && !have_result) {
					/* The mmap or munmap is done; the rest of libc's function and the
					 * rt_sigreturn are not needed with us here. */
					*ret = now.rax;
					return finish_at_syscall_exit(rc, &s) == 0 ? RC_OK : RC_ERROR;
				}
				if (entry_nr == NR_RT_SIGRETURN && have_result)
					return finish_at_syscall_exit(rc, &s) == 0 ? RC_OK : RC_ERROR;
				entry_nr = -1;
			}
			ptrace(PTRACE_SYSCALL, th->tid, 0, 0);
			continue;
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
					ptrace(resume, th->tid, 0, 0);
					continue;
				}
			}
			inj_error("a seccomp filter of process %d killed %s with SIGSYS; the thread was put "
			          "back but the process may be in a bad state", tg->pid, what);
			restore(rc, &s);
			return RC_CRASH;
		}
		if (sig == SIGSEGV || sig == SIGILL || sig == SIGBUS || sig == SIGFPE || sig == SIGABRT ||
		    sig == SIGTRAP) {
			struct user_regs_struct now;
			pt_getregs(th->tid, &now);
			inj_error("%s crashed in process %d (%s at ip 0x%llx); the thread was put back but "
			          "the process may be in a bad state",
			          what, tg->pid, sig_name(sig), (unsigned long long)now.rip);
			restore(rc, &s);
			return RC_CRASH;
		}
		if (is_stop_signal(sig)) {
			/* SIGSTOP (the others are blocked): passed on now (internal.h), resumed as the
			 * call is (system-call stops stay watched); the group-stop it starts is reported
			 * next, as an event stop, and the call goes on. */
			ptrace(resume, th->tid, 0, (void *)(long)sig);
			continue;
		}
		/* Any other signal (a timer, SIGCHLD, a kill aimed at the process) would run a handler
		 * in the middle of our call. Keep it; the process gets it when we let go. */
		ithread_add_pending(th, sig);
		ptrace(resume, th->tid, 0, 0);
	}
}

/* A call of libc's mmap or munmap that returns straight into libc's __restore_rt, observed
 * through system-call stops: what maps and unmaps the gate itself. */
static int bootstrap_call(struct itarget *tg, struct ithread *th, uint64_t sp, uint64_t fn,
                          const uint64_t *args, int nargs, long nr, uint64_t *ret, const char *what)
{
	struct rcall rc;
	rcall_begin(&rc, tg, th);
	if (sp)
		rc.sp = sp; /* below what the caller pushed for its own call */
	struct call c = {.fn = fn, .args = args, .nargs = nargs, .ret = tg->gate.restore_rt,
	                 .result_nr = nr, .sigreturn_ip = tg->gate.restore_rt + sizeof(restore_rt_bytes)};
	return call_run(&rc, &c, ret, 2000, what);
}

/* Write the page mapped at `page`: the magic, the gate and, with entry, the entry stub that
 * reports with `sig` and goes on to `entry`. It is read-only for the process; /proc/PID/mem
 * writes it as ptrace would. */
static int gate_fill(struct itarget *tg, uint64_t page, const uint64_t *entry, int sig)
{
	unsigned char code[GATE_PAGE];
	size_t n = (size_t)(rgate_code_end - rgate_code), len = GATE_CODE_OFF + n;
	_Static_assert(GATE_CODE_OFF + 128 <= ENTRY_STUB_OFF, "the gate fits before the entry stub");
	memset(code, 0xcc, sizeof(code));
	memset(code, 0, GATE_CODE_OFF);
	memcpy(code, CUHOOK_GATE_MAGIC, sizeof(CUHOOK_GATE_MAGIC));
	memcpy(code + GATE_CODE_OFF, rgate_code, n);
	if (entry) {
		size_t m = (size_t)(rentry_code_end - rentry_code), t = (size_t)(rentry_target - rentry_code);
		uint64_t words[3] = {*entry, (uint64_t)tg->pid, (uint64_t)sig};
		memcpy(code + ENTRY_STUB_OFF, rentry_code, m);
		memcpy(code + ENTRY_STUB_OFF + t, words, sizeof(words));
		len = ENTRY_STUB_OFF + m;
	}
	tg->gate.page = page;
	tg->gate.keep = false;
	return mem_write(tg, page, code, len); /* on failure the page stays, unmapped at the end */
}

static int gate_open(struct itarget *tg, struct ithread *th, uint64_t sp)
{
	struct rgate *g = &tg->gate;
	if (gate_probe(tg) < 0)
		return -1;
	uint64_t args[6] = {0, GATE_PAGE, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
	                    (uint64_t)-1, 0}, page = 0;
	int r = bootstrap_call(tg, th, sp, g->mmap_fn, args, 6, SYS_mmap, &page, "mapping the call gate");
	if (r != RC_OK)
		return -1;
	if (page >= (uint64_t)-4095 || (page & (GATE_PAGE - 1))) {
		inj_error("process %d could not map a page for the call gate: %s", tg->pid,
		          page >= (uint64_t)-4095 ? strerror((int)-(int64_t)page) : "unaligned");
		return -1;
	}
	return gate_fill(tg, page, NULL, 0);
}

void rcall_end_sequence(struct itarget *tg, struct ithread *th)
{
	struct rgate *g = &tg->gate;
	if (g->page && !g->keep && th && th->stopped) {
		uint64_t args[2] = {g->page, GATE_PAGE}, rv;
		bootstrap_call(tg, th, 0, g->munmap_fn, args, 2, SYS_munmap, &rv, "unmapping the call gate");
	}
	g->page = 0;
	g->keep = false;
}

int rcall_invoke(struct rcall *rc, uint64_t fn, const uint64_t *args, int nargs, uint64_t *ret,
                 int timeout_ms, const char *what)
{
	struct itarget *tg = rc->tg;
	if (gate_probe(tg) < 0 || (!tg->gate.page && gate_open(tg, rc->th, rc->sp) < 0))
		return RC_ERROR;
	uint64_t code = tg->gate.page + GATE_CODE_OFF;
	struct call c = {.fn = fn, .args = args, .nargs = nargs, .ret = code, .report = tg->gate.sig,
	                 .result_nr = -1, .sigreturn_ip = code + (uint64_t)(rgate_returned - rgate_code),
	                 .leave_on_timeout = rc->leave_on_timeout};
	return call_run(rc, &c, ret, timeout_ms, what);
}

/* ---- a program's entry (cuhook run, exec under --follow) ---------------------------------------- */

/* At execve's exit stop: r0 gets the registers, and the thread is set to make the mmap
 * through the `syscall; ret` at gadget, returning to where it was. */
static int exec_mmap_setup(struct itarget *tg, uint64_t gadget, struct user_regs_struct *r0)
{
	pid_t pid = tg->pid;
	if (pt_getregs(pid, r0) < 0)
		return -1;
	struct user_regs_struct r = *r0;
	r.rsp = r0->rsp - 8; /* nothing lives below the initial stack pointer */
	if (mem_write(tg, r.rsp, &r0->rip, 8) < 0)
		return -1;
	r.rip = gadget;
	r.rax = SYS_mmap;
	r.orig_rax = (unsigned long long)-1;
	r.rdi = 0;
	r.rsi = GATE_PAGE;
	r.rdx = PROT_READ | PROT_EXEC;
	r.r10 = MAP_PRIVATE | MAP_ANONYMOUS;
	r.r8 = (unsigned long long)-1;
	r.r9 = 0;
	return pt_setregs(pid, &r);
}

/* At the exec stop of tg->pid, nothing of the new image has run and no C library is mapped: the
 * gate page is mapped by one mmap system call made through a `syscall; ret` of the vDSO (or of
 * the dynamic loader), with the loader's entry point as the return address. Should we die at any
 * point of it, the thread makes the call and goes on into the loader as if nothing happened (at
 * the loader's entry only rsp and the stack above it matter). 0 and *page, or -1. */
static int map_at_exec(struct itarget *tg, uint64_t *page)
{
	static const unsigned char syscall_ret[] = {0x0f, 0x05, 0xc3};
	struct maps m;
	if (maps_read(tg->pid, &m) < 0)
		return -1;
	uint64_t gadget = 0;
	for (int pass = 0; pass < 2 && !gadget; pass++)
		for (int i = 0; i < m.n && !gadget; i++) {
			const char *p = m.m[i].path, *b = p ? strrchr(p, '/') : NULL;
			bool vdso = p && !strcmp(p, "[vdso]");
			bool loader = b && (!strncmp(b + 1, "ld-linux", 8) || !strncmp(b + 1, "ld-musl", 7) ||
			                    !strncmp(b + 1, "ld64.so", 7));
			if (m.m[i].perms[2] == 'x' && (pass == 0 ? vdso : loader))
				gadget = scan_bytes(tg, m.m[i].start, m.m[i].end, syscall_ret, sizeof(syscall_ret));
		}
	maps_free(&m);
	if (!gadget) {
		inj_error("process %d: no 'syscall; ret' in its vDSO or dynamic loader to map a page with", tg->pid);
		return -1;
	}
	pid_t pid = tg->pid;
	struct user_regs_struct r0, r;
	/* From the exec event to execve's own system-call exit: the registers the new image starts
	 * with are final only there. Then the mmap: its entry and its exit. */
	for (int stop = 0; stop < 3; stop++) {
		int st = 0;
		if (ptrace(PTRACE_SYSCALL, pid, 0, 0) != 0 || pt_wait(pid, &st, 2000) != 1 || !WIFSTOPPED(st) ||
		    !syscall_stop(pid, st)) {
			inj_error("process %d: mapping a page at its exec did not go as expected (status 0x%x)", pid, st);
			if (stop > 0)
				pt_setregs(pid, &r0);
			return -1;
		}
		if (stop == 0 && exec_mmap_setup(tg, gadget, &r0) < 0)
			return -1;
	}
	if (pt_getregs(pid, &r) < 0 || pt_setregs(pid, &r0) < 0)
		return -1;
	if (r.rax >= (unsigned long long)-4095) {
		inj_error("process %d could not map a page at its exec: %s", pid, strerror((int)-(long long)r.rax));
		return -1;
	}
	*page = r.rax;
	return 0;
}

/* The address of the AT_ENTRY value in the auxiliary vector on the initial stack at rsp (argc,
 * argv, NULL, envp, NULL, then the auxv pairs), or 0. */
static uint64_t auxv_entry_slot(struct itarget *tg, uint64_t rsp)
{
	uint64_t argc, a = rsp, w[2];
	if (mem_read(tg, a, &argc, 8) < 0 || argc > (1u << 24))
		return 0;
	a += 8 * (argc + 2); /* argv and its NULL */
	for (int i = 0; i < (1 << 20); i++, a += 8)
		if (mem_read(tg, a, w, 8) < 0 || !w[0])
			break;
	a += 8; /* envp's NULL */
	for (int i = 0; i < 256; i++, a += 16) {
		if (mem_read(tg, a, w, 16) < 0 || w[0] == 0 /* AT_NULL */)
			return 0;
		if (w[0] == 9 /* AT_ENTRY */)
			return a + 8;
	}
	return 0;
}

int rentry_install(struct itarget *tg, uint64_t entry, struct rentry *e)
{
	memset(e, 0, sizeof(*e));
	struct user_regs_struct r0;
	if (pt_getregs(tg->pid, &r0) < 0)
		return -1;
	e->entry = entry;
	e->auxv_slot = auxv_entry_slot(tg, r0.rsp);
	uint64_t v = 0;
	if (!e->auxv_slot || mem_read(tg, e->auxv_slot, &v, 8) < 0 || v != entry) {
		inj_error("process %d: no AT_ENTRY on its initial stack", tg->pid);
		return -1;
	}
	uint64_t page;
	if (map_at_exec(tg, &page) < 0)
		return -1;
	/* SIGURG: at an exec every handler is reset; only a library constructor could have set
	 * one by the time the loader jumps to the stub. */
	if (gate_fill(tg, page, &entry, SIGURG) < 0)
		return -1;
	e->page = page;
	e->stub = page + ENTRY_STUB_OFF;
	e->stop_ip = e->stub + (uint64_t)(rentry_reported - rentry_code);
	return mem_write(tg, e->auxv_slot, &e->stub, 8);
}

bool rentry_reached(pid_t pid, int status, const struct rentry *e)
{
	struct user_regs_struct r;
	siginfo_t si;
	return WIFSTOPPED(status) && (status >> 16) == 0 && WSTOPSIG(status) == SIGURG &&
	       ptrace(PTRACE_GETSIGINFO, pid, 0, &si) == 0 && si.si_code == SI_TKILL &&
	       pt_getregs(pid, &r) == 0 && r.rip == e->stop_ip;
}

int rentry_finish(struct itarget *tg, struct user_regs_struct *r, const struct rentry *e)
{
	/* The stub kept the loader's rdx in r15; the program starts at its own entry point. */
	r->rip = e->entry;
	r->rdx = r->r15;
	tg->gate.page = e->page;
	tg->gate.keep = false;
	return mem_write(tg, e->auxv_slot, &e->entry, 8);
}
