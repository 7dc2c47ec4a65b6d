/* Sustained recording, side by side in one run (issue 18's targets; bench/run.sh):
 *   untraced:  a tight loop calling the stand-in cuCtxGetCurrent (bench/standin.S)
 *   burst:     the same loop traced, a burst that fits in half the ring, the ring's memory
 *              already touched and the writer idle: what a call costs when nothing waits
 *   sustained: T threads (1, then 2) calling it in tight loops, N calls in all, the agent at its
 *              defaults, its writer draining into a trace file the whole time: calls/s, the
 *              added ns per call, the producers' time on CPU (the rest they waited for ring
 *              room) and the agent threads' CPU per call (user + system time of the
 *              "cuhook*" threads: the writer); R rounds of both, alternating, the best kept
 *   bytes:     trace.bin bytes per call of a 0-, a 1- and a 3-argument function: the whole
 *              file, and the EVENTS blocks' records only
 *   flight:    the burst again in the flight recorder (flight=16M): its added ns, beside the burst's
 *   drop mode: drop=1 (lossy), default ring, one thread paced at half the best 1-thread
 *              lossless rate: records dropped (END block)
 * The trace files are read only through their block headers and END block, which every trace
 * version has (src/format/trace_format.h), never record by record. Every lossless run checks
 * its END block: ENTRY + EXIT records == 2 x calls and none dropped; a failed check (or a failed
 * start) exits 1, an unmet target does not. */
#include "bench_agent.h"
#include "trace_format.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cuCtxSynchronize(void);
int cuCtxSetCurrent(void *ctx);
int cuMemsetD8_v2(unsigned long long dptr, unsigned char uc, size_t n);

#define now_ns bench_now_ns
#define REPS 7
#define BURST_CALLS 20000
#define MAX_THREADS 2
#define MAX_ROUNDS 20

static struct bench_agent ag;
static char dir[4096];
static int failed; /* a check failed: the exit status says so */

/* ---- the agent's threads' CPU -------------------------------------------------------------- */

#define MAX_TASKS 256
struct task_cpu {
	int n;
	int tid[MAX_TASKS];
	double ns[MAX_TASKS];                 /* user + system, from the thread's CPU clock */
	unsigned long long user[MAX_TASKS], sys[MAX_TASKS]; /* utime, stime (clock ticks) */
};

/* CPU time of every thread whose name starts with "cuhook" (the writer, and whatever other
 * threads the agent runs), found in /proc/self/task. The total comes from the thread's CPU
 * clock, in ns (the kernel's clock id for a thread, what pthread_getcpuclockid makes of its
 * tid): /proc's utime and stime come in 10 ms ticks, too coarse for a total over a second's run,
 * but they say how it splits between the writer's own work and the kernel's (write()'s copy
 * into the page cache). */
static void agent_cpu(struct task_cpu *c)
{
	c->n = 0;
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) && c->n < MAX_TASKS) {
		if (e->d_name[0] == '.')
			continue;
		char path[300], buf[1024];
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = 0;
		/* "tid (comm) state ...": comm may hold spaces and parentheses, the last ')' ends it;
		 * after it: state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
		 * utime stime */
		char *open_paren = strchr(buf, '('), *close_paren = strrchr(buf, ')');
		int tid = atoi(e->d_name);
		struct timespec t;
		if (!open_paren || !close_paren || strncmp(open_paren + 1, "cuhook", 6) != 0 ||
		    sscanf(close_paren + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &c->user[c->n],
		           &c->sys[c->n]) != 2 ||
		    clock_gettime((clockid_t)((~(unsigned)tid << 3) | 6), &t) != 0)
			continue;
		c->tid[c->n] = tid;
		c->ns[c->n++] = t.tv_sec * 1e9 + t.tv_nsec;
	}
	closedir(d);
}

/* Seconds of CPU the agent's threads used from `a` to `b` (a thread new in b counts whole),
 * and the system time's share of it. */
static double agent_cpu_s(const struct task_cpu *a, const struct task_cpu *b, double *sys_share)
{
	double t = 0;
	unsigned long long user = 0, sys = 0;
	for (int i = 0; i < b->n; i++) {
		int k = -1;
		for (int j = 0; j < a->n; j++)
			if (a->tid[j] == b->tid[i])
				k = j;
		t += b->ns[i] - (k >= 0 ? a->ns[k] : 0);
		user += b->user[i] - (k >= 0 ? a->user[k] : 0);
		sys += b->sys[i] - (k >= 0 ? a->sys[k] : 0);
	}
	*sys_share = user + sys ? (double)sys / (double)(user + sys) : 0;
	return t / 1e9;
}

/* ---- trace files, through their block headers ---------------------------------------------- */

struct trace_sum {
	unsigned long long file_bytes, events_bytes; /* events: EVENTS payloads less their header */
	unsigned long long events, dropped;          /* from the END block */
	bool has_end;
};

static int read_trace(const char *path, struct trace_sum *s)
{
	memset(s, 0, sizeof(*s));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	struct cuhook_file_header h;
	if (fd < 0 || fstat(fd, &st) != 0 || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    memcmp(h.magic, CUHOOK_TRACE_MAGIC, sizeof(h.magic)) != 0) {
		fprintf(stderr, "%s: not a readable trace\n", path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	s->file_bytes = (unsigned long long)st.st_size;
	unsigned long long at = h.header_size;
	struct cuhook_block b;
	while (at + sizeof(b) <= s->file_bytes && pread(fd, &b, sizeof(b), (off_t)at) == (ssize_t)sizeof(b)) {
		if (b.magic != CUHOOK_BLOCK_MAGIC) {
			fprintf(stderr, "%s: no block at offset %llu\n", path, at);
			break;
		}
		if (b.type == CUHOOK_BLOCK_EVENTS)
			s->events_bytes += b.size - sizeof(struct cuhook_events_block);
		struct cuhook_end_block e;
		if (b.type == CUHOOK_BLOCK_END &&
		    pread(fd, &e, sizeof(e), (off_t)(at + sizeof(b))) == (ssize_t)sizeof(e)) {
			s->has_end = true;
			s->events = e.events;
			s->dropped = e.dropped;
		}
		at += sizeof(b) + b.size;
	}
	close(fd);
	return 0;
}

/* ---- sessions ------------------------------------------------------------------------------- */

/* Start a session recording `funcs` (nothing counted, no stacks) into DIR/name, with `extra`
 * options ("" for the agent's defaults). */
static void start(const char *name, const char *funcs, const char *extra)
{
	char opts[8192];
	snprintf(opts, sizeof(opts), "output=%s/%s;lib=libbench_standin.so;funcs=%s;count=;stacks=%s%s", dir,
	         name, funcs, *extra ? ";" : "", extra);
	if (ag.start(opts, 0) != 0) {
		fprintf(stderr, "agent start failed: %s\n", opts);
		char path[8192];
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		unlink(path);
		rmdir(dir);
		exit(1);
	}
}

/* Stop the session, read its file and delete it (they are big). */
static void stop(const char *name, struct trace_sum *s)
{
	ag.stop(0);
	char path[8192];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (read_trace(path, s) != 0)
		failed = 1;
	unlink(path);
}

/* A lossless session's END block must count every call's ENTRY and EXIT, and no drop. */
static void check_lossless(const char *what, const struct trace_sum *s, unsigned long long calls)
{
	if (s->has_end && s->events == 2 * calls && s->dropped == 0)
		return;
	fprintf(stderr, "CHECK FAILED: %s: %llu calls, END block %s, %llu records, %llu dropped\n", what,
	        calls, s->has_end ? "present" : "missing", s->events, s->dropped);
	failed = 1;
}

/* ---- the loops ------------------------------------------------------------------------------ */

struct producer {
	pthread_t t;
	pthread_barrier_t *go;
	long calls;
	double t0, t1;   /* monotonic ns: loop start and end */
	double cpu_ns;   /* this thread's CPU time in the loop */
};

static double thread_cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void *produce(void *arg)
{
	struct producer *p = arg;
	void *c;
	cuCtxGetCurrent(&c); /* the thread's first traced call creates its ring */
	pthread_barrier_wait(p->go);
	double c0 = thread_cpu_ns();
	p->t0 = now_ns();
	for (long i = 0; i < p->calls; i++)
		cuCtxGetCurrent(&c);
	p->t1 = now_ns();
	p->cpu_ns = thread_cpu_ns() - c0;
	return NULL;
}

struct sustained {
	double calls_per_s;     /* all threads together, over the wall time */
	double ns_per_call;     /* per thread: its loop time / its calls, the mean over threads */
	double on_cpu;          /* producers' CPU time / their loop time */
	double agent_ns;        /* agent threads' CPU ns per call */
	double agent_share;     /* ... as a share of one core over the wall time */
	double agent_sys;       /* ... the system time's share of it */
	double bytes;           /* trace file bytes per call */
};

static struct sustained sustained(int nthreads, long total)
{
	struct producer p[MAX_THREADS];
	pthread_barrier_t go;
	pthread_barrier_init(&go, NULL, (unsigned)nthreads + 1);
	char name[64];
	snprintf(name, sizeof(name), "sustained%d.bin", nthreads);
	start(name, "cuCtxGetCurrent", "");
	for (int i = 0; i < nthreads; i++) {
		p[i] = (struct producer){.go = &go, .calls = total / nthreads};
		if (pthread_create(&p[i].t, NULL, produce, &p[i]) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			exit(1);
		}
	}
	struct task_cpu a, b;
	/* after every thread's first call: what the writer does for a new ring is not counted */
	pthread_barrier_wait(&go);
	agent_cpu(&a);
	for (int i = 0; i < nthreads; i++)
		pthread_join(p[i].t, NULL);
	/* before the stop: its final drain is not part of the loop */
	agent_cpu(&b);
	struct trace_sum s;
	stop(name, &s);
	pthread_barrier_destroy(&go);
	double first = p[0].t0, last = p[0].t1, per_call = 0, cpu = 0, busy = 0;
	unsigned long long calls = 0;
	for (int i = 0; i < nthreads; i++) {
		first = p[i].t0 < first ? p[i].t0 : first;
		last = p[i].t1 > last ? p[i].t1 : last;
		per_call += (p[i].t1 - p[i].t0) / p[i].calls / nthreads;
		cpu += p[i].cpu_ns;
		busy += p[i].t1 - p[i].t0;
		calls += (unsigned long long)p[i].calls + 1;
	}
	check_lossless(name, &s, calls);
	double sys_share, wall = last - first, agent_s = agent_cpu_s(&a, &b, &sys_share);
	return (struct sustained){
		.calls_per_s = (calls - nthreads) / wall * 1e9,
		.ns_per_call = per_call,
		.on_cpu = cpu / busy,
		.agent_ns = agent_s * 1e9 / (calls - nthreads),
		.agent_share = agent_s * 1e9 / wall,
		.agent_sys = sys_share,
		.bytes = (double)s.file_bytes / calls,
	};
}

/* Calls of one stand-in, recorded with the agent's defaults: trace bytes per call, whole file
 * and EVENTS records. */
struct per_call {
	const char *func, *shape;
	double file, events;
};

static void bytes_per_call(struct per_call *b, long calls)
{
	char name[64];
	snprintf(name, sizeof(name), "bytes-%s.bin", b->func);
	start(name, b->func, "");
	void *c;
	for (long i = 0; i < calls; i++) { /* not timed: the name is looked at every call */
		if (!strcmp(b->func, "cuCtxSynchronize"))
			cuCtxSynchronize();
		else if (!strcmp(b->func, "cuCtxSetCurrent"))
			cuCtxSetCurrent((void *)0x5a5a0000);
		else if (!strcmp(b->func, "cuMemsetD8_v2"))
			cuMemsetD8_v2(0x7f0000000000ull, 0x5a, 4096);
		else
			cuCtxGetCurrent(&c);
	}
	struct trace_sum s;
	stop(name, &s);
	check_lossless(name, &s, (unsigned long long)calls);
	b->file = (double)s.file_bytes / calls;
	b->events = (double)s.events_bytes / calls;
}

/* One thread calling at `rate` calls/s (TSC-paced) in drop mode with the default ring: the
 * records dropped (END block), those written, the rate achieved and the thread's time on CPU.
 * A thread that falls behind by more than 100 us (the machine took its core) does not catch up
 * in one burst: its schedule starts again from now. */
static unsigned long long drop_mode(double rate, long calls, double ns_per_tick, double *achieved,
                                    double *on_cpu, unsigned long long *written)
{
	start("drop.bin", "cuCtxGetCurrent", "drop=1");
	void *c;
	cuCtxGetCurrent(&c);
	unsigned long long period = (unsigned long long)(1e9 / rate / ns_per_tick);
	unsigned long long slack = (unsigned long long)(100e3 / ns_per_tick);
	double t0 = now_ns(), c0 = thread_cpu_ns();
	unsigned long long next = __rdtsc();
	for (long i = 0; i < calls; i++) {
		unsigned long long t;
		while ((t = __rdtsc()) < next)
			_mm_pause();
		cuCtxGetCurrent(&c);
		next += period;
		if (t > next + slack)
			next = t;
	}
	double dt = now_ns() - t0;
	*on_cpu = (thread_cpu_ns() - c0) / dt;
	*achieved = calls / dt * 1e9;
	struct trace_sum s;
	stop("drop.bin", &s);
	/* a dropped ENTRY takes its EXIT with it and counts once: between 1 and 2 records missing
	 * per drop */
	unsigned long long records = 2 * (unsigned long long)(calls + 1);
	if (!s.has_end || s.events + s.dropped > records || s.events + 2 * s.dropped < records) {
		fprintf(stderr, "CHECK FAILED: drop mode: END block %s, %llu records and %llu dropped for %ld calls\n",
		        s.has_end ? "present" : "missing", s.events, s.dropped, calls + 1);
		failed = 1;
	}
	*written = s.events;
	return s.dropped;
}

static void target(const char *what, double value, const char *unit, bool met)
{
	printf("  %-52s %10.2f %-8s %s\n", what, value, unit, met ? "met" : "NOT met");
}

int main(int argc, char **argv)
{
	long n = 10000000;
	int rounds = 3;
	const char *agent = NULL, *parent = getenv("TMPDIR");
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--agent") && i + 1 < argc)
			agent = argv[++i];
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			n = atol(argv[++i]);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			parent = argv[++i];
		else {
			fprintf(stderr, "usage: %s --agent libcuhook.so [-n calls] [--rounds R] [--dir DIR (for the trace files)]\n",
			        argv[0]);
			return 2;
		}
	}
	if (!agent || n < 1000 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "%s: --agent is required, -n at least 1000, --rounds 1 to %d\n", argv[0], MAX_ROUNDS);
		return 2;
	}
	if (bench_agent_load(agent, &ag) != 0)
		return 1;
	snprintf(dir, sizeof(dir), "%s/cuhook-sustained.XXXXXX", parent && *parent ? parent : "/tmp");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "%s: cannot make a directory for the trace files: %s\n", dir, strerror(errno));
		return 1;
	}
	double ns_per_tick = bench_ns_per_tick();

	struct per_call bytes[] = {
		{.func = "cuCtxSynchronize", .shape = "0 args"},
		{.func = "cuCtxSetCurrent", .shape = "1 arg"},
		{.func = "cuCtxGetCurrent", .shape = "1 arg + decoded value"},
		{.func = "cuMemsetD8_v2", .shape = "3 args"},
	};
	for (size_t i = 0; i < sizeof(bytes) / sizeof(bytes[0]); i++)
		bytes_per_call(&bytes[i], n / 10);

	double plain = bench_best_loop(BURST_CALLS, REPS, 0);
	/* The burst: a 16 MiB ring, every page of it touched by a first lap and a quarter (the
	 * agent populates a ring as it fills), then bursts that fit in half of it, each after a
	 * pause in which the writer (flush_ms=20) empties it. */
	start("burst.bin", "cuCtxGetCurrent", "buffer_kb=16384;flush_ms=20");
	long warm = (long)(1.25 * (16 << 20) / bytes[2].events);
	void *c;
	for (long i = 0; i < warm; i++)
		cuCtxGetCurrent(&c);
	double burst = bench_best_loop(BURST_CALLS, REPS, 100);
	struct trace_sum s;
	stop("burst.bin", &s);
	check_lossless("burst.bin", &s, (unsigned long long)(warm + REPS * BURST_CALLS));

	/* The same burst in the flight recorder (flight=16M): its ring overwrites, nothing is written
	 * until the end's dump, which holds the newest calls only (not checked for all of them). */
	start("flight.bin", "cuCtxGetCurrent", "flight=16M");
	for (long i = 0; i < warm; i++)
		cuCtxGetCurrent(&c);
	double flight = bench_best_loop(BURST_CALLS, REPS, 100);
	stop("flight.bin", &s);
	if (!s.has_end) {
		fprintf(stderr, "CHECK FAILED: flight.bin: no END block after the end's dump\n");
		failed = 1;
	}

	/* Rounds of both, alternating; the best of each is kept (as the burst's best loop is): what
	 * the agent sustains when the machine's other users leave it alone. */
	struct sustained round[MAX_ROUNDS][2], one = {0}, two = {0};
	for (int r = 0; r < rounds; r++) {
		round[r][0] = sustained(1, n);
		round[r][1] = sustained(2, n);
		if (round[r][0].calls_per_s > one.calls_per_s)
			one = round[r][0];
		if (round[r][1].calls_per_s > two.calls_per_s)
			two = round[r][1];
	}

	double achieved, on_cpu;
	unsigned long long written;
	unsigned long long dropped = drop_mode(one.calls_per_s / 2, n / 2, ns_per_tick, &achieved, &on_cpu, &written);
	rmdir(dir);

	double added = burst - plain;
	printf("sustained recording (issue 18): %ld calls a run, best of %d rounds; best of %d loops of %d for the burst\n",
	       n, rounds, REPS, BURST_CALLS);
	printf("untraced call                  %8.2f ns\n", plain);
	printf("burst (fits the ring)          %8.2f ns   added %7.2f ns\n", burst, added);
	printf("burst, flight recorder         %8.2f ns   added %7.2f ns\n", flight, flight - plain);
	const struct sustained *runs[] = {&one, &two};
	for (int t = 0; t < 2; t++) {
		const struct sustained *r = runs[t];
		printf("sustained, %d thread%s           %8.2f ns   added %7.2f ns (%4.1fx burst)  %6.2f M calls/s\n", t + 1,
		       t ? "s" : " ", r->ns_per_call, r->ns_per_call - plain, (r->ns_per_call - plain) / added,
		       r->calls_per_s / 1e6);
		printf("    producers on CPU %3.0f%% of their loop; agent threads (writer) %5.1f ns CPU per call"
		       " (%2.0f%% system), %3.0f%% of a core; %.1f bytes per call\n",
		       100 * r->on_cpu, r->agent_ns, 100 * r->agent_sys, 100 * r->agent_share, r->bytes);
		printf("    rounds, M calls/s:");
		for (int k = 0; k < rounds; k++)
			printf(" %.2f", round[k][t].calls_per_s / 1e6);
		printf("\n");
	}
	printf("trace.bin bytes per call (%ld calls)        whole file   EVENTS records\n", n / 10);
	for (size_t i = 0; i < sizeof(bytes) / sizeof(bytes[0]); i++)
		printf("  %-18s %-22s %10.2f %12.2f\n", bytes[i].func, bytes[i].shape, bytes[i].file, bytes[i].events);
	printf("drop mode (drop=1, default ring), 1 thread paced at half the 1-thread lossless rate:\n"
	       "  %ld calls at %.2f M calls/s (asked %.2f; on CPU %.0f%%): %llu records dropped (END block),"
	       " %llu of %ld ENTRY and EXIT records written\n",
	       n / 2, achieved / 1e6, one.calls_per_s / 2e6, 100 * on_cpu, dropped, written, 2 * (n / 2 + 1));
	printf("targets (issue 18):\n");
	target("sustained, 2 threads >= 20 M calls/s", two.calls_per_s / 1e6, "M/s", two.calls_per_s >= 20e6);
	double ratio = (one.ns_per_call - plain) / added;
	target("sustained added / burst added <= 2 (1 thread)", ratio, "x", ratio <= 2);
	target("flight recorder burst added <= burst added (ns)", flight - plain, "ns", flight - plain <= added);
	target("bytes per 0-argument call <= 32 (whole file)", bytes[0].file, "bytes", bytes[0].file <= 32);
	target("bytes per 1-argument call <= 32 (whole file)", bytes[1].file, "bytes", bytes[1].file <= 32);
	target("bytes per 3-argument call <= 48 (whole file)", bytes[3].file, "bytes", bytes[3].file <= 48);
	target("drop mode at half capacity: records dropped == 0", (double)dropped, "records", dropped == 0);
	return failed;
}
