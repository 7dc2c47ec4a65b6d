/* A stand-in for libcuhook.so with the same API (its functions, and cuhook_agent_threads listing
 * its own thread), for testing the injector on its own. It patches nothing; it writes what it
 * was told into the output file:
 *
 *   prepare pid=P others_stopped=S options=...           one line per cuhook_agent_prepare
 *   start pid=P flags=F others_stopped=S options=...     one line per cuhook_agent_start
 *   tick                                                 every 10 ms while started (a thread)
 *   stop pid=P                                           one line per cuhook_agent_stop
 *   dump                                                 one line per dump asked for through
 *                                                        cuhook_agent_control (cuhook dump)
 *
 * others_stopped=1 says every other thread of the process was in a ptrace stop during start,
 * which is the CUHOOK_START_THREADS_STOPPED promise; for prepare, 0 is expected (the other
 * threads run meanwhile). Its own knobs come from the target's environment, not from the
 * options (cuhook accepts only the real agent's keys there): INJ_DUMMY_PREPARE_MS=N makes prepare
 * take N ms, like planning a large libcuda; INJ_DUMMY_START_MS=N and INJ_DUMMY_STOP_MS=N make
 * start and stop take N ms (for killing cuhook in the middle of those calls);
 * INJ_DUMMY_TICKER=0 starts no ticking thread; INJ_DUMMY_NO_DUMP=1 leaves dump requests
 * unanswered (started with a flight= option, the ticker answers them); INJ_DUMMY_CTOR_SPIN_MS=N keeps its constructor (the
 * dlopen) busy on the CPU for N ms. Built with -DDUMMY_NO_PREPARE it has no
 * cuhook_agent_prepare, like an older agent. Its fixup_ip maps the test target's
 * inj_park_from to inj_park_to until a stop, and inj_back_from to inj_back_to after one, so
 * the injector's moving of parked threads can be tested without the real agent. */
#include "cuhook_agent.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Its own thread (the ticker), listed by id as the real agent lists its writer: the injector
 * leaves it running (stop joins it). */
CUHOOK_API struct cuhook_agent_threads cuhook_agent_threads = {.magic = CUHOOK_AGENT_THREADS_MAGIC};

/* The flight recorder's control, as the real agent keeps it: flight is 1 while started with a
 * flight= option, and the ticker answers each request with a "dump" line, then counts it. */
CUHOOK_API volatile struct cuhook_agent_control cuhook_agent_control = {.magic = CUHOOK_AGENT_CONTROL_MAGIC};
static uint32_t dumps_asked; /* the requests answered so far */

static char output[4096];
static char last_error[4200] = "no error";
static atomic_int active;
static atomic_int stopped; /* a stop came after the last start */
static atomic_int ticker_stop;
static pthread_t ticker;
static atomic_int ticker_tid;

static bool no_ticker(void)
{
	const char *v = getenv("INJ_DUMMY_TICKER");
	return v && !strcmp(v, "0");
}

/* Sleep for the milliseconds the variable `name` says, if any. */
static void env_sleep(const char *name)
{
	const char *ms = getenv(name);
	if (ms)
		usleep((useconds_t)atoi(ms) * 1000);
}

/* A dlopen that is slow but working, as beside hundreds of busy threads: the constructor uses
 * the CPU for INJ_DUMMY_CTOR_SPIN_MS milliseconds. */
__attribute__((constructor)) static void spin_in_constructor(void)
{
	const char *ms = getenv("INJ_DUMMY_CTOR_SPIN_MS");
	if (!ms)
		return;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < atoi(ms));
}

static void out_line(const char *line)
{
	int fd = open(output, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	ssize_t r = write(fd, line, strlen(line));
	(void)r;
	close(fd);
}

/* 1 if every thread but us and our ticker is in a ptrace stop ('t' in /proc/self/task/N/stat). */
static int others_stopped(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	int self = (int)syscall(SYS_gettid), ok = 1;
	struct dirent *e;
	while ((e = readdir(d))) {
		int tid = atoi(e->d_name);
		if (tid <= 0 || tid == self || tid == atomic_load(&ticker_tid))
			continue;
		char p[64], buf[512];
		snprintf(p, sizeof(p), "/proc/self/task/%d/stat", tid);
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		char *rp = strrchr(buf, ')');
		if (!rp || rp[2] != 't')
			ok = 0;
	}
	closedir(d);
	return ok;
}

static void *tick(void *arg)
{
	(void)arg;
	atomic_store(&ticker_tid, (int)syscall(SYS_gettid));
	const char *no_dump = getenv("INJ_DUMMY_NO_DUMP");
	while (!atomic_load(&ticker_stop)) {
		out_line("tick\n");
		uint32_t req = cuhook_agent_control.dump_requests;
		if (cuhook_agent_control.flight && req != dumps_asked && !(no_dump && !strcmp(no_dump, "1"))) {
			dumps_asked = req;
			out_line("dump\n");
			__atomic_add_fetch(&cuhook_agent_control.dumps_written, 1, __ATOMIC_RELEASE);
		}
		usleep(10000);
	}
	cuhook_agent_threads.tid[0] = 0; /* while its id is still its own */
	__atomic_add_fetch(&cuhook_agent_threads.generation, 1, __ATOMIC_RELEASE);
	return NULL;
}

CUHOOK_API int cuhook_agent_start(const char *options, unsigned flags)
{
	if (atomic_load(&active)) {
		snprintf(last_error, sizeof(last_error), "already started");
		return -EALREADY;
	}
	const char *o = options ? strstr(options, "output=") : NULL;
	if (!o) {
		snprintf(last_error, sizeof(last_error), "dummy agent: no output= in '%s'", options ? options : "(null)");
		return -EINVAL;
	}
	snprintf(output, sizeof(output), "%.*s", (int)strcspn(o + 7, ";"), o + 7);
	char line[8192];
	snprintf(line, sizeof(line), "start pid=%d flags=%u others_stopped=%d options=%s\n", (int)getpid(),
	         flags, others_stopped(), options);
	out_line(line);
	dumps_asked = cuhook_agent_control.dump_requests;
	cuhook_agent_control.flight = strstr(options, "flight=") != NULL;
	atomic_store(&ticker_stop, 0);
	if (!no_ticker()) {
		pthread_create(&ticker, NULL, tick, NULL);
		/* Listed before start returns (the id from its CPU clock: (~tid << 3) | 6). */
		clockid_t c;
		if (pthread_getcpuclockid(ticker, &c) == 0) {
			cuhook_agent_threads.tid[0] = (int32_t)~(c >> 3);
			__atomic_add_fetch(&cuhook_agent_threads.generation, 1, __ATOMIC_RELEASE);
		}
		pthread_setname_np(ticker, "dummy-ticker");
	}
	atomic_store(&active, no_ticker() ? 2 : 1);
	atomic_store(&stopped, 0);
	snprintf(last_error, sizeof(last_error), "dummy agent started, writing %s", output);
	env_sleep("INJ_DUMMY_START_MS");
	return 0;
}

#ifndef DUMMY_NO_PREPARE
CUHOOK_API int cuhook_agent_prepare(const char *options)
{
	if (atomic_load(&active)) {
		snprintf(last_error, sizeof(last_error), "already started");
		return -EALREADY;
	}
	const char *o = options ? strstr(options, "output=") : NULL;
	if (!o) {
		snprintf(last_error, sizeof(last_error), "dummy agent: no output= in '%s'", options ? options : "(null)");
		return -EINVAL;
	}
	snprintf(output, sizeof(output), "%.*s", (int)strcspn(o + 7, ";"), o + 7);
	char line[8192];
	snprintf(line, sizeof(line), "prepare pid=%d others_stopped=%d options=%s\n", (int)getpid(),
	         others_stopped(), options);
	out_line(line);
	env_sleep("INJ_DUMMY_PREPARE_MS");
	return 0;
}
#endif

CUHOOK_API int cuhook_agent_stop(unsigned flags)
{
	(void)flags;
	int was = atomic_exchange(&active, 0);
	atomic_store(&stopped, 1);
	cuhook_agent_control.flight = 0;
	if (!was) {
		snprintf(last_error, sizeof(last_error), "not started");
		return -EINVAL;
	}
	if (was == 1) {
		atomic_store(&ticker_stop, 1);
		pthread_join(ticker, NULL);
		atomic_store(&ticker_tid, 0);
	}
	char line[64];
	snprintf(line, sizeof(line), "stop pid=%d\n", (int)getpid());
	out_line(line);
	env_sleep("INJ_DUMMY_STOP_MS");
	return 0;
}

CUHOOK_API uintptr_t cuhook_agent_fixup_ip(uintptr_t ip)
{
	/* Before a stop, inj_park_from stands for the first bytes of a planned function (the
	 * injector may ask before the start, as soon as they are planned); after one, inj_back_from
	 * for code that must be left. */
	const char *from = atomic_load(&stopped) ? "inj_back_from" : "inj_park_from";
	const char *to = atomic_load(&stopped) ? "inj_back_to" : "inj_park_to";
	void *f = dlsym(RTLD_DEFAULT, from), *t = dlsym(RTLD_DEFAULT, to);
	if (f && t && ip == (uintptr_t)f)
		return (uintptr_t)t;
	return ip;
}

CUHOOK_API const char *cuhook_agent_last_error(void)
{
	return last_error;
}

CUHOOK_API int cuhook_agent_active(void)
{
	return atomic_load(&active) != 0;
}
