/* One thread under ptrace: seize, interrupt, wait (with a timeout), registers, memory.
 *
 * We use PTRACE_SEIZE rather than PTRACE_ATTACH: seizing does not send SIGSTOP (which the
 * process could observe, and which would leave a stopped process after a crash of ours), and
 * PTRACE_INTERRUPT stops a thread without any signal at all. Memory goes through /proc/PID/mem:
 * one pread/pwrite per block instead of a PTRACE_PEEK/POKE per word, and writes work on
 * read-only pages as ptrace pokes do. */
#include "internal.h"
#include "text_safe.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- errors and logging ---------------------------------------------------------------------- */

static char err_buf[2048];
static bool err_set;
int inj_verbose;

/* Messages name what the target chose (its program's path, its threads' and tracer's names, a
 * dlerror() text): the whole message is made safe for a terminal here, once, whatever the
 * caller put in it (none of ours holds a control character). */
void inj_error(const char *fmt, ...)
{
	if (err_set)
		return;
	char raw[sizeof(err_buf)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	text_safe(err_buf, sizeof(err_buf), raw);
	err_set = true;
}

void inj_error_clear(void)
{
	err_set = false;
	err_buf[0] = 0;
}

const char *inj_error_text(void)
{
	return err_set ? err_buf : "unknown error";
}

void inj_log(const char *fmt, ...)
{
	if (!inj_verbose)
		return;
	char raw[1024], safe[sizeof(raw) * 2];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	fprintf(stderr, "cuhook: %s\n", text_safe(safe, sizeof(safe), raw));
}

uint64_t inj_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- ptrace ---------------------------------------------------------------------------------- */

int pt_seize(pid_t tid)
{
	/* No PTRACE_O_EXITKILL: if cuhook dies, the target must go on, not die with us. */
	return ptrace(PTRACE_SEIZE, tid, 0, INJ_SEIZE_OPTIONS) == 0 ? 0 : -errno;
}

int pt_interrupt(pid_t tid)
{
	return ptrace(PTRACE_INTERRUPT, tid, 0, 0) == 0 ? 0 : -errno;
}

int pt_cont(pid_t tid, int sig)
{
	return ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig) == 0 ? 0 : -errno;
}

void inj_block_sigchld(void)
{
	/* Blocked, SIGCHLD stays pending when a tracee stops, so pt_wait can sleep in
	 * sigtimedwait() and wake exactly then, without a lost-wakeup race. */
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGCHLD);
	sigprocmask(SIG_BLOCK, &s, NULL);
}

/* Threads that must keep running while we wait for others: the agent's own, traced only so that
 * a group-stop cannot hold them (threads_lend_agent). Whatever stops one is passed on and it is
 * resumed; one that ends is forgotten. */
#define KEEP_MAX 16
static pid_t keep[KEEP_MAX];
static int nkeep;

int pt_keep_running(pid_t tid)
{
	if (nkeep == KEEP_MAX)
		return -1;
	keep[nkeep++] = tid;
	return 0;
}

void pt_keep_running_end(pid_t tid)
{
	for (int i = 0; i < nkeep; i++)
		if (keep[i] == tid) {
			keep[i] = keep[--nkeep];
			return;
		}
}

static void service_kept(pid_t waited)
{
	for (int i = 0; i < nkeep;) {
		int st;
		pid_t r = keep[i] == waited ? 0 : waitpid(keep[i], &st, __WALL | WNOHANG);
		if ((r < 0 && errno != EINTR) || (r > 0 && (WIFEXITED(st) || WIFSIGNALED(st)))) {
			keep[i] = keep[--nkeep];
			continue;
		}
		/* a signal-delivery-stop: the signal goes on (a stop signal then starts a group-stop,
		 * reported as an event stop, resumed in turn); an event stop: resumed */
		if (r > 0 && WIFSTOPPED(st))
			pt_cont(keep[i], (st >> 16) == 0 ? WSTOPSIG(st) : 0);
		i++;
	}
}

void pt_service_kept(void)
{
	service_kept(0);
}

bool pt_kept(pid_t tid)
{
	for (int i = 0; i < nkeep; i++)
		if (keep[i] == tid)
			return true;
	return false;
}

int pt_wait(pid_t tid, int *status, int timeout_ms)
{
	uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : inj_now_ns() + (uint64_t)timeout_ms * 1000000u;
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGCHLD);
	for (;;) {
		if (nkeep)
			service_kept(tid);
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);
		if (r == tid)
			return 1;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		uint64_t now = inj_now_ns();
		if (now >= deadline)
			return 0;
		/* At most 20 ms per sleep: should SIGCHLD be unblocked or consumed by someone else,
		 * we still notice the stop, just later. */
		uint64_t left = deadline - now;
		if (left > 20000000u)
			left = 20000000u;
		struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
		sigtimedwait(&s, NULL, &ts);
	}
}

int pt_getregs(pid_t tid, struct user_regs_struct *r)
{
	if (ptrace(PTRACE_GETREGS, tid, 0, r) == 0)
		return 0;
	inj_error("cannot read the registers of thread %d: %s", tid, strerror(errno));
	return -1;
}

int pt_setregs(pid_t tid, const struct user_regs_struct *r)
{
	if (ptrace(PTRACE_SETREGS, tid, 0, r) == 0)
		return 0;
	inj_error("cannot write the registers of thread %d: %s", tid, strerror(errno));
	return -1;
}

int pt_get_xstate(pid_t tid, struct xstate *x)
{
	struct iovec iov = {x->buf, sizeof(x->buf)};
	x->fp_only = false;
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov) == 0) {
		x->len = iov.iov_len;
		return 0;
	}
	/* Very old CPUs/kernels without XSAVE: the legacy FXSAVE area. */
	if (ptrace(PTRACE_GETFPREGS, tid, 0, x->buf) == 0) {
		x->fp_only = true;
		x->len = sizeof(struct user_fpregs_struct);
		return 0;
	}
	inj_error("cannot read the FPU/vector state of thread %d: %s", tid, strerror(errno));
	return -1;
}

int pt_set_xstate(pid_t tid, const struct xstate *x)
{
	int r;
	if (x->fp_only) {
		r = (int)ptrace(PTRACE_SETFPREGS, tid, 0, x->buf);
	} else {
		struct iovec iov = {(void *)x->buf, x->len};
		r = (int)ptrace(PTRACE_SETREGSET, tid, (void *)NT_X86_XSTATE, &iov);
	}
	if (r == 0)
		return 0;
	inj_error("cannot restore the FPU/vector state of thread %d: %s", tid, strerror(errno));
	return -1;
}

void ithread_add_pending(struct ithread *t, int sig)
{
	for (int i = 0; i < t->npending; i++)
		if (t->pending[i] == sig && sig < SIGRTMIN)
			return; /* standard signals do not queue: one is what the process would get */
	if (t->npending < INJ_MAX_PENDING)
		t->pending[t->npending++] = sig;
}

bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

int pt_wait_first_stop(struct itarget *tg, struct ithread *t, int timeout_ms)
{
	uint64_t deadline = inj_now_ns() + (uint64_t)timeout_ms * 1000000u;
	for (;;) {
		int st;
		uint64_t now = inj_now_ns();
		int r = pt_wait(t->tid, &st, now < deadline ? (int)((deadline - now) / 1000000u) : 0);
		if (r == 0) {
			inj_error("thread %d of process %d did not stop within %d ms (uninterruptible sleep in "
			          "the kernel? 'cat /proc/%d/task/%d/stack' tells where)",
			          t->tid, tg->pid, timeout_ms, tg->pid, t->tid);
			return -1;
		}
		if (r < 0) {
			if (r == -ECHILD)
				return 1; /* gone (reaped by someone, or exited) */
			inj_error("waiting for thread %d: %s", t->tid, strerror(-r));
			return -1;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st))
			return 1;
		if (!WIFSTOPPED(st)) {
			inj_error("thread %d: unexpected wait status 0x%x", t->tid, st);
			return -1;
		}
		int event = st >> 16, sig = WSTOPSIG(st);
		if (event == 0 && is_stop_signal(sig)) {
			/* A job-control stop on its way in. Passed on now, in the very stop where the
			 * kernel reported it: the kernel then stops the process unless a SIGCONT came
			 * since (as without us), and this thread reports the group-stop next. Held and
			 * given back at detach, it would stop the process after a SIGCONT sent meanwhile,
			 * for good. The report of a signal consumed our interrupt: ask again, for the case
			 * where the stop does not happen (cancelled, or the signal is handled). */
			if (pt_cont(t->tid, sig) == 0) {
				pt_interrupt(t->tid);
				continue;
			}
		}
		/* A signal-delivery-stop came before the interrupt: the thread is stopped just the
		 * same. We keep the signal and hand it over at detach, so the process still gets it. */
		if (event == 0)
			ithread_add_pending(t, sig);
		t->stopped = true;
		return 0;
	}
}

bool regs_in_restartable_syscall(const struct user_regs_struct *r)
{
	/* The kernel's -ERESTARTSYS (512), -ERESTARTNOINTR (513), -ERESTARTNOHAND (514),
	 * -ERESTART_RESTARTBLOCK (516): never seen by user space, only by a tracer. */
	long rax = (long)r->rax;
	return (long)r->orig_rax >= 0 && rax <= -512 && rax >= -516 && rax != -515;
}

/* ---- memory ---------------------------------------------------------------------------------- */

/* A thread of tg in a ptrace stop, for PTRACE_PEEKDATA/POKEDATA: one we hold, or the process
 * itself (stopped at its exec or its entry point before any thread is in tg). */
static pid_t stopped_tid(const struct itarget *tg)
{
	for (int i = 0; i < tg->nth; i++)
		if (tg->th[i].stopped)
			return tg->th[i].tid;
	return tg->pid;
}

/* Through ptrace, a word at a time: n bytes at addr, 0 or -errno. A write of part of a word reads
 * the word first. Like /proc/PID/mem, POKEDATA writes read-only (code) pages. */
static int ptrace_mem(const struct itarget *tg, uint64_t addr, void *buf, size_t n, bool write)
{
	pid_t tid = stopped_tid(tg);
	for (size_t done = 0; done < n;) {
		uint64_t at = addr + done, word_at = at & ~(uint64_t)7;
		size_t off = (size_t)(at - word_at), k = 8 - off < n - done ? 8 - off : n - done;
		errno = 0;
		long w = ptrace(PTRACE_PEEKDATA, tid, (void *)word_at, 0);
		if (errno)
			return -errno;
		if (write) {
			memcpy((char *)&w + off, (const char *)buf + done, k);
			if (ptrace(PTRACE_POKEDATA, tid, (void *)word_at, (void *)w) != 0)
				return -errno;
		} else {
			memcpy((char *)buf + done, (char *)&w + off, k);
		}
		done += k;
	}
	return 0;
}

bool mem_ready(const struct itarget *tg)
{
	return tg->memfd >= 0 || tg->mem_ptrace;
}

int mem_open(struct itarget *tg)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/mem", tg->pid);
	tg->memfd = open(p, O_RDWR | O_CLOEXEC);
	if (tg->memfd < 0 && errno == EACCES) {
		/* /proc/PID/mem is mode 0600 and belongs to the process's user: opening another user's
		 * needs CAP_DAC_OVERRIDE besides the ptrace right, and a cuhook given only
		 * CAP_SYS_PTRACE (setcap cap_sys_ptrace+ep) has that right alone. The stop we hold is
		 * all that PTRACE_PEEKDATA/POKEDATA need; what goes through memory is a few hundred
		 * bytes (strings, a breakpoint). */
		tg->mem_ptrace = true;
		inj_log("%s: %s; reading and writing memory with PTRACE_PEEKDATA/POKEDATA instead", p, strerror(errno));
		return 0;
	}
	if (tg->memfd < 0) {
		inj_error("cannot open %s: %s", p, strerror(errno));
		return -1;
	}
	return 0;
}

int mem_read(struct itarget *tg, uint64_t addr, void *buf, size_t len)
{
	if (tg->mem_ptrace) {
		int r = ptrace_mem(tg, addr, buf, len, false);
		if (r == 0)
			return 0;
		inj_error("cannot read %zu bytes at 0x%llx in process %d: %s", len, (unsigned long long)addr, tg->pid,
		          strerror(-r));
		return -1;
	}
	ssize_t n = pread(tg->memfd, buf, len, (off_t)addr);
	if (n == (ssize_t)len)
		return 0;
	inj_error("cannot read %zu bytes at 0x%llx in process %d: %s", len, (unsigned long long)addr,
	          tg->pid, n < 0 ? strerror(errno) : "short read");
	return -1;
}

int mem_write(struct itarget *tg, uint64_t addr, const void *buf, size_t len)
{
	if (tg->mem_ptrace) {
		int r = ptrace_mem(tg, addr, (void *)buf, len, true);
		if (r == 0)
			return 0;
		inj_error("cannot write %zu bytes at 0x%llx in process %d: %s", len, (unsigned long long)addr,
		          tg->pid, strerror(-r));
		return -1;
	}
	ssize_t n = pwrite(tg->memfd, buf, len, (off_t)addr);
	if (n == (ssize_t)len)
		return 0;
	inj_error("cannot write %zu bytes at 0x%llx in process %d: %s", len, (unsigned long long)addr,
	          tg->pid, n < 0 ? strerror(errno) : "short write");
	return -1;
}

size_t mem_read_some(struct itarget *tg, uint64_t addr, void *buf, size_t n)
{
	if (!tg->mem_ptrace) {
		ssize_t r = pread(tg->memfd, buf, n, (off_t)addr);
		return r > 0 ? (size_t)r : 0;
	}
	size_t got = 0;
	while (got < n) {
		size_t k = 8 - ((addr + got) & 7);
		if (k > n - got)
			k = n - got;
		if (ptrace_mem(tg, addr + got, (char *)buf + got, k, false) != 0)
			break;
		got += k;
	}
	return got;
}

int mem_read_string(struct itarget *tg, uint64_t addr, char *buf, size_t len)
{
	/* Byte by byte would be slow; a page-bounded block never reads past a mapping's end. */
	size_t got = 0;
	while (got + 1 < len) {
		size_t chunk = 4096 - ((addr + got) & 4095);
		if (chunk > len - 1 - got)
			chunk = len - 1 - got;
		/* through ptrace a word at a time: a string ends soon, the page may go on long after */
		if (tg->mem_ptrace && chunk > 8)
			chunk = 8;
		size_t n = mem_read_some(tg, addr + got, buf + got, chunk);
		if (n == 0)
			break;
		void *nul = memchr(buf + got, 0, n);
		got += n;
		if (nul)
			return 0;
	}
	buf[got] = 0;
	return got ? 0 : -1;
}

bool live_mem(pid_t pid, int fd, uint64_t addr, void *buf, size_t len, bool write)
{
	if (fd >= 0)
		return (write ? pwrite(fd, buf, len, (off_t)addr) : pread(fd, buf, len, (off_t)addr)) == (ssize_t)len;
	struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
	return (write ? process_vm_writev(pid, &local, 1, &remote, 1, 0)
	              : process_vm_readv(pid, &local, 1, &remote, 1, 0)) == (ssize_t)len;
}
