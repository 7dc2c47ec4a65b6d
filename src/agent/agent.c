/* The agent's life cycle: start (configure, open the trace, patch what is loaded through the
 * library registry, watch for libraries loaded later), stop (unpatch, flush), the constructor
 * and destructor of constructor mode, fork, and the exported API (cuhook_agent.h). It drives
 * the other parts; none of them calls back into it except through what it hands them (the
 * scan after a dlopen, the close at _exit). */
#include "cuhook_agent.h"

#include "agent_log.h"
#include "agent_state.h"
#include "capture_range.h"
#include "clock_read.h"
#include "config.h"
#include "exec_maps.h"
#include "exit_watch.h"
#include "export_tables.h"
#include "flight.h"
#include "freeze.h"
#include "gpu_activity.h"
#include "hook_table.h"
#include "injector_watch.h"
#include "job_env.h"
#include "kernel_names.h"
#include "lib_registry.h"
#include "loaded_objects.h"
#include "loader_watch.h"
#include "nvfd.h"
#include "own_threads.h"
#include "py_stack.h"
#include "record.h"
#include "self_maps.h"
#include "stack_capture.h"
#include "thread_state.h"
#include "trace_format.h"
#include "writer.h"

#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

/* Read by the assembly shim (stubs.S). */
__attribute__((visibility("hidden"))) uint32_t cuhook_xsave_size;
__attribute__((visibility("hidden"))) uint64_t cuhook_xsave_mask;

static struct cuhook_config cfg;
/* A preparation (agent_prepared, agent_state.h): the trace file is open, its writer thread
 * waits, the libraries and the agent's own hooks are planned (stubs written, no jump). The
 * options it was made for: a start with the same ones uses it. */
static char prepared_options[8192];
static char trace_file[PATH_MAX];         /* this session's (or preparation's) trace */
static bool watch_planned, exit_planned;  /* the dlopen watch and the _exit hook have stubs */
static pid_t session_pid; /* the process that started this session (close_at_exit) */
static bool jumps_left; /* a session ended without taking its jumps out (by itself, writer.c) */
static char last_error[PATH_MAX + 512];

static void set_error(const char *msg)
{
	snprintf(last_error, sizeof(last_error), "%s", msg);
}

/* The XSAVE area the shim needs: every state component the OS enabled except AMX tiles
 * (nothing cuhook or libc runs touches them, and they are 8 KiB). */
static void detect_xsave(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 26)) || !(c & (1u << 27)))
		return; /* FXSAVE fallback */
	uint32_t lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	uint64_t xcr0 = ((uint64_t)hi << 32) | lo;
	__cpuid_count(0xd, 0, a, b, c, d);
	cuhook_xsave_mask = xcr0 & ~((1ull << 17) | (1ull << 18));
	cuhook_xsave_size = b + 64;
}

/* This session's writer options, as cfg says. */
static struct writer_opts trace_opts(void)
{
	return (struct writer_opts){.flush_ms = cfg.flush_ms, .flags = cfg.drop ? CUHOOK_FILE_LOSSY : 0,
	                            .replace = cfg.force, .max_size = cfg.max_size, .gpu = config_gpu_possible(&cfg),
	                            .stacks = cfg.stacks[0] != 0, .flight = cfg.flight != 0};
}

/* Tracing, as far as the API goes: started, and not ended by the writer itself (its injector is
 * gone or late: injector_watch.h). Such a session is over; its jumps, left in place, pass calls
 * through until the next start or stop takes them out. For the API's calls only (start, stop,
 * prepare: one at a time, from the injector or at exit). */
static bool session_open(void)
{
	if (agent_active && writer_ended_itself()) {
		agent_active = 0;
		jumps_left = true;
		injector_watch_end();
	}
	return agent_active;
}

/* A library was loaded (the dlopen watch, CUPTI's start): patch it if it is to be traced. */
static void agent_scan_libraries(void)
{
	/* not after the writer ended the session itself: nothing would be recorded */
	if (agent_active && !writer_ended_itself()) {
		if (cfg.stacks[0]) {
			exec_maps_learn(); /* the build ids of what was loaded, for MAPS */
			py_stack_setup();  /* a libpython loaded by the program */
		}
		registry_scan(false);
		pthread_mutex_lock(&agent_lock);
		kernel_names_resolve();
		pthread_mutex_unlock(&agent_lock);
		if (cfg.gpu && registry_driver_patched())
			gpu_driver_loaded();
	}
}

/* follow=1: the fork child traces into a file of its own (FILE.PID), with a writer of its own,
 * started here, in the child's atfork handler, before fork() returns to the program.
 *
 * Why creating a thread here is safe: glibc runs the atfork child handlers after it has made
 * the child consistent again: malloc's arena locks, the loader's locks (dl_load_lock and the TLS
 * one) and stdio's list lock are reset, the stacks of the threads that do not exist in the child
 * are reclaimed, and the thread list holds the forking thread alone. pthread_create needs just
 * that (a stack from mmap or the cache, clone), and the child goes on multi-threaded the same
 * way a Python child that starts threads after os.fork() does. What glibc cannot reset are
 * locks of other code that a vanished thread held; the writer takes only the agent's own
 * (agent_lock, the notes lock; the rings' registry takes none), and those are re-initialised
 * first.
 * The forking thread's ring, a copy of the parent's, is registered again under the child's tid
 * (thread_state_after_fork_child) and emptied by writer_start (in writer_open): the child's
 * file holds the calls the child makes, none of the parent's. A child that execs right away loses the thread with
 * the rest of the image; its file (header and tables only) is replaced by the new image's when
 * cuhook run --follow injects that (docs/injection.md).
 *
 * vfork() and clone() without CLONE_THREAD run no atfork handler: a vfork child shares the
 * parent's memory (its agent, its writer) until it execs, which is all it may do. */
static void start_in_fork_child(void)
{
	char path[PATH_MAX], err[400];
	config_output_path(&cfg, path, sizeof(path));
	struct writer_opts wo = trace_opts();
	int rc = writer_open(path, &wo, err, sizeof(err));
	if (rc != 0) {
		agent_log(2, "fork child %d: %s; the child is not traced", (int)getpid(), err);
		return;
	}
	agent_active = 1;
	session_pid = getpid();
	__atomic_store_n(&cuhook_recording, capture_begin(true), __ATOMIC_RELEASE);
	agent_log(1, "fork child of %d: tracing into %s", (int)getppid(), path);
	job_env_note();
	if (cfg.gpu)
		agent_log(1, "GPU: a fork child records no GPU work (CUPTI's session, like the driver's "
		          "state, is the parent's); its API calls are traced");
	snprintf(last_error, sizeof(last_error), "tracing to %s", path);
}

static void on_fork_child(void)
{
	/* Without follow the child stops tracing (docs/agent.md): only the forking thread exists,
	 * the writer does not, and the trace file is the parent's. Hooks stay in place and pass
	 * calls through. With follow, it then starts a trace of its own. */
	int saved_errno = errno;
	bool follow = agent_active && cfg.follow;
	cuhook_recording = 0;
	cuhook_writer_alive = 0;
	agent_active = 0;
	agent_prepared = false; /* the waiting writer thread is the parent's */
	pthread_mutex_init(&agent_lock, NULL);
	own_threads_after_fork_child();
	thread_state_after_fork_child();
	writer_forget_after_fork();
	kernel_names_after_fork_child();
	injector_watch_end();
	gpu_after_fork_child();
	if (follow)
		start_in_fork_child();
	errno = saved_errno;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* How long an _exit waits for the writer's last round before it lets the process go. */
#define EXIT_CLOSE_MS 2000

/* _exit's entry (exit_watch.h): close this session's trace as the destructor would. */
static void close_at_exit(void)
{
	static int closing;
	if (!agent_active || getpid() != session_pid || __atomic_exchange_n(&closing, 1, __ATOMIC_ACQ_REL))
		return; /* not tracing, a vfork/posix_spawn child in our memory, or closing already */
	int saved_errno = errno;
	if (config_gpu_possible(&cfg))
		gpu_stop(); /* the other threads still run: CUPTI can be flushed */
	capture_end(false);
	__atomic_store_n(&cuhook_recording, 0, __ATOMIC_RELEASE);
	if (writer_close_within(EXIT_CLOSE_MS) == 0)
		agent_active = 0;
	__atomic_store_n(&closing, 0, __ATOMIC_RELEASE);
	errno = saved_errno;
}

static void unpatch_all(bool threads_stopped)
{
	pthread_mutex_lock(&agent_lock);
	patch_unpatch_all(threads_stopped, hook_own_tid);
	pthread_mutex_unlock(&agent_lock);
	jumps_left = false;
}

/* stacks=: load the unwinder, map the stack table, learn the build ids of what is loaded. */
static void prepare_stacks(void)
{
	const char *why;
	if (!stack_capture_setup(cfg.stack_depth, &why))
		agent_log(1, "stacks: %s; no native frames are taken (native_end UNSUPPORTED)", why);
	exec_maps_learn();
	agent_log(1, "stacks: calls of traced functions matching %s get the caller's stack, at most %u "
	          "frames", cfg.stacks, cfg.stack_depth);
}

/* Everything of a start that allocates, locks or calls into the loader, done by
 * cuhook_agent_prepare while the program's threads run; or by the start itself when nothing
 * was prepared for its options (constructor mode, `cuhook run` at the entry point where nothing
 * else runs, an injector without prepare): the trace file and its writer thread (waiting), the
 * scan of the loaded objects, the plans and stubs of their functions and of the agent's own
 * hooks. A preparation for the same options is reused (scanned again: what was loaded since is
 * planned too); one for other options is discarded. */
static int prepare(const struct cuhook_config *c, const char *options, bool stopped, enum gpu_how gpu_how)
{
	static bool once;
	/* The jumps of a session the writer ended by itself: out first, so that this session's
	 * options choose what is planned and patched. */
	if (jumps_left)
		unpatch_all(stopped);
	bool same = agent_prepared && options && strlen(options) < sizeof(prepared_options) &&
	            !strcmp(options, prepared_options);
	if (agent_prepared && !same) {
		writer_discard();
		agent_prepared = false;
	}
	if (!agent_prepared) {
		cfg = *c;
		registry_configure(&cfg);
		agent_log_configure(cfg.quiet, cfg.verbose);
		agent_trace_failure_clear();
		if (!once) {
			detect_xsave();
			pthread_atfork(NULL, NULL, on_fork_child);
			once = true;
		}
		cuhook_lossy = cfg.drop;
		cuhook_clock_monotonic = cfg.monotonic;
		char err[400];
		if (flight_configure(&cfg, err, sizeof(err)) != 0) {
			set_error(err);
			return -EINVAL;
		}
		thread_ring_bytes = cfg.flight ? (uint32_t)cfg.flight : cfg.buffer_kb * 1024u;
		config_output_path(&cfg, trace_file, sizeof(trace_file));
		struct writer_opts wo = trace_opts();
		int rc = writer_prepare(trace_file, &wo, err, sizeof(err));
		if (rc != 0) {
			set_error(err);
			return rc;
		}
		agent_prepared = true;
		/* an options string too long to keep is never taken for the same as another */
		snprintf(prepared_options, sizeof(prepared_options), "%s",
		         options && strlen(options) < sizeof(prepared_options) ? options : "\x01");
		capture_prepare(&cfg);
		/* Said in the trace, so a report can tell why these functions have counts and no times. */
		if (cfg.count[0])
			agent_log(1, "traced functions matching %s are counted, not recorded (%s)", cfg.count,
			          strcmp(cfg.count, CUHOOK_COUNT_DEFAULT) ? "count option"
			                                                  : "the default; --record-all records them");
		job_env_note();
	}
	/* Before the scan: what loading CUPTI loads (a libcuda) is then planned and in the
	 * snapshot the start checks. */
	if (cfg.gpu)
		gpu_prepare(&cfg, gpu_how, agent_scan_libraries);
	/* Before the scan, whose classification marks the stacked functions: the unwinder and
	 * the stack table are ready before any of their jumps. */
	if (cfg.stacks[0])
		prepare_stacks();
	registry_scan(true);
	/* the names thread, created while the program's threads run (it asks the driver for the
	 * names of kernel handles launched: kernel_names.h) */
	kernel_names_prepare(&cfg);
	watch_planned = loader_watch_prepare(agent_scan_libraries) == 0;
	exit_planned = exit_watch_prepare(close_at_exit) == 0;
	if (cfg.ioctl)
		nvfd_prepare(cfg.ioctl_paths);
	/* Last, once every stub pool is mapped: the start writes its jumps, and the stop takes them
	 * out, with the program's threads stopped, from protections read now rather than then. */
	patch_snapshot_protections();
	return 0;
}

/* The start proper, after prepare: write the planned jumps, start the writer, begin the
 * session. stopped (CUHOOK_START_THREADS_STOPPED): every other thread of the process is
 * stopped wherever it was, maybe inside malloc, pthread_create or the loader, holding their
 * locks. So nothing here allocates, takes a lock (the agent's own is only tried: no other
 * thread holds it between sessions), or calls a libc function that does: the loaded objects are
 * compared with the preparation's snapshot through the loader's debugger interface, the jumps
 * written with plain stores (mprotect and membarrier are system calls), notes queued only if
 * their lock is free. -EAGAIN: an object was loaded or unloaded since the preparation (prepare
 * again); -EBUSY: the agent's lock is held. The preparation stays for a next try. */
static int go(bool stopped)
{
	double t0 = now_ms();
	if (stopped ? pthread_mutex_trylock(&agent_lock) != 0 : pthread_mutex_lock(&agent_lock) != 0) {
		set_error("another thread holds the agent's lock; not started");
		return -EBUSY;
	}
	if (stopped && loaded_changed_since_snapshot()) {
		pthread_mutex_unlock(&agent_lock);
		set_error("a library was loaded or unloaded since the preparation; not started");
		return -EAGAIN;
	}
	agent_threads_stopped = stopped;
	/* the writer's first round waits for agent_lock: the tables it writes are then complete */
	writer_start();
	agent_active = 1;
	agent_prepared = false;
	session_pid = getpid();
	/* on now, or at the first cuProfilerStart, or after a delay (capture_range.h) */
	__atomic_store_n(&cuhook_recording, capture_begin(false), __ATOMIC_RELEASE);
	double t1 = now_ms();
	registry_arm();
	export_tables_arm(stopped);
	double t2 = now_ms();
	kernel_names_resolve(); /* plain reads of the hook table */
	bool watching = watch_planned && loader_watch_arm(stopped) == 0;
	bool exit_hooked = exit_planned && exit_watch_arm(stopped) == 0;
	if (cfg.ioctl)
		nvfd_arm(stopped);
	pthread_mutex_unlock(&agent_lock);
	if (!watching)
		agent_log(1, "cannot watch dlopen: libraries loaded later will not be traced");
	if (!exit_hooked)
		agent_log(1, "cannot hook _exit: a process ending with _exit() will lose its last records");
	agent_log(0, "started in %.2f ms: writer %.2f ms, libraries %.2f ms, dlopen watch %.2f ms",
	          now_ms() - t0, t1 - t0, t2 - t1, now_ms() - t2);
	if (!registry_driver_patched())
		agent_log(1, "no library matching '%s' is loaded yet; it will be patched when loaded", cfg.lib);
	/* Last, and while the other threads are still taken as stopped (agent_log): the writer must
	 * not end a session this start has not finished opening. */
	injector_watch_begin(cfg.injector, cfg.deadline_ms);
	agent_threads_stopped = false;
	snprintf(last_error, sizeof(last_error), "tracing to %s", trace_file);
	return 0;
}

static int driver_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	const char *name = info->dlpi_name, *base = name ? strrchr(name, '/') : NULL;
	base = base ? base + 1 : name;
	return base && *base && fnmatch((const char *)ctx, base, 0) == 0;
}

/* Is a library the agent would trace (libcuda) loaded? */
static bool driver_loaded(const char *lib_glob)
{
	return dl_iterate_phdr(driver_cb, (void *)lib_glob) != 0;
}

static int start(const struct cuhook_config *c, const char *options, unsigned flags)
{
	if (session_open()) {
		set_error("already tracing");
		return -EALREADY;
	}
	bool ready = agent_prepared && options && !strcmp(options, prepared_options);
	/* Where CUPTI is called (gpu_activity.h): prepared beside, on the GPU thread. A start that
	 * prepares itself calls it here where no thread can be inside the driver: in constructor
	 * mode, or before any libcuda is loaded (cuhook run at the entry point); else (an injector
	 * that stops a one-thread process, which may be stopped inside the driver) on the GPU
	 * thread. */
	enum gpu_how how = GPU_BESIDE;
	if (!ready) {
		if (!options || !driver_loaded(c->lib))
			how = GPU_HERE;
		int rc = prepare(c, options, flags & CUHOOK_START_THREADS_STOPPED, how);
		if (rc != 0)
			return rc;
	}
	int rc = go(flags & CUHOOK_START_THREADS_STOPPED);
	if (rc == 0 && cfg.gpu) {
		gpu_start(how, registry_driver_patched());
		/* for cuhook attach, whose target's stderr is not the operator's: said there */
		const char *why = gpu_problem();
		size_t n = strlen(last_error);
		if (*why)
			snprintf(last_error + n, sizeof(last_error) - n, "\n%s", why);
	}
	return rc;
}

CUHOOK_API volatile uint64_t cuhook_agent_stop_ns[CUHOOK_STOP_STEPS];

/* The step that ended now: its time since *t into cuhook_agent_stop_ns (t moves on). */
static void stop_step(unsigned step, uint64_t *t)
{
	monotonic_step(&cuhook_agent_stop_ns[step], t);
}

static void stop(bool unpatch, bool threads_stopped)
{
	if (!agent_active)
		return;
	uint64_t t = monotonic_ns();
	/* CUPTI only while the program's threads run (cuhook_agent_prepare_stop did it then) */
	if (config_gpu_possible(&cfg) && threads_stopped)
		gpu_abandon();
	else if (config_gpu_possible(&cfg))
		gpu_stop();
	stop_step(CUHOOK_STOP_STEP_GPU, &t);
	capture_end(threads_stopped);
	__atomic_store_n(&cuhook_recording, 0, __ATOMIC_RELEASE);
	stop_step(CUHOOK_STOP_STEP_CAPTURE, &t);
	if (unpatch)
		unpatch_all(threads_stopped);
	stop_step(CUHOOK_STOP_STEP_UNPATCH, &t);
	writer_close();
	stop_step(CUHOOK_STOP_STEP_TRACE, &t);
	injector_watch_end();
	stop_step(CUHOOK_STOP_STEP_WATCH, &t);
	kernel_names_stop(!threads_stopped);
	stop_step(CUHOOK_STOP_STEP_NAMES, &t);
	agent_active = 0;
}

/* Is our tracer the cuhook injector? Then it configures us through cuhook_agent_start. Known by
 * its name, which the injector sets to exactly "cuhook" (src/cli/main.c) whatever its file is
 * called: the whole name, not a prefix, so that a program that traces its children and whose
 * name merely begins so (cuhook_app) is not taken for it. (The thread ids of the process are
 * no help here: the tracer is another process, and the agent has nothing of it before this
 * constructor runs.) */
static bool traced_by_cuhook(void)
{
	char buf[4096];
	/* This thread's tracer: the injector may have let the other threads go meanwhile. */
	int fd = open("/proc/thread-self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	const char *t = strstr(buf, "TracerPid:");
	int pid = t ? atoi(t + 10) : 0;
	if (pid <= 0)
		return false;
	char path[64], comm[32] = {0};
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, comm, sizeof(comm) - 1);
	close(fd);
	return n > 0 && strcmp(comm, "cuhook\n") == 0;
}

/* Is cuhook's injector loading us (or was it, and left its dlopen to finish without it)? Its
 * call gate, a one-page anonymous read+exec mapping that starts with CUHOOK_GATE_MAGIC, is mapped
 * for as long as one of its calls may return into it (src/inject/remote_call.c). */
static bool gate_line(uintptr_t lo, uintptr_t hi, const char *rest, void *ctx)
{
	char perms[8];
	unsigned long ino;
	int end = 0;
	if (hi - lo != 4096 || sscanf(rest, "%7s %*s %*s %lu %n", perms, &ino, &end) < 2 || ino != 0 ||
	    strcmp(perms, "r-xp") != 0 || rest[end])
		return false;
	*(bool *)ctx = memcmp((const void *)lo, CUHOOK_GATE_MAGIC, sizeof(CUHOOK_GATE_MAGIC)) == 0;
	return *(bool *)ctx;
}

static bool injector_gate_mapped(void)
{
	bool found = false;
	self_maps_each(gate_line, &found);
	return found;
}

/* Does this process run with privileges its starter may not have: executed set-user-ID,
 * set-group-ID or with file capabilities (AT_SECURE), or with effective ids other than its real
 * ones? Then whoever set its environment must not choose what it writes where: the agent takes
 * no options from the environment there (its options come from the injector alone, which had
 * the right to ptrace the process). */
static bool privileges_differ(void)
{
	return getauxval(AT_SECURE) != 0 || getuid() != geteuid() || getgid() != getegid();
}

#define PRIVILEGED_REFUSAL "the process runs with other privileges than its starter's (set-user-ID, " \
	"set-group-ID or file capabilities): no tracing from its environment"

__attribute__((constructor)) static void agent_constructor(void)
{
	if (traced_by_cuhook() || injector_gate_mapped())
		return;
	if (privileges_differ()) {
		fprintf(stderr, "cuhook: %s; not tracing\n", PRIVILEGED_REFUSAL);
		return;
	}
	struct cuhook_config c;
	char err[400];
	config_defaults(&c);
	if (config_from_env(&c, err, sizeof(err)) != 0) {
		fprintf(stderr, "cuhook: %s; not tracing\n", err);
		return;
	}
	if (c.disable)
		return;
	cfg.verbose = c.verbose;
	agent_log_configure(cfg.quiet, cfg.verbose);
	if (start(&c, NULL, 0) != 0)
		fprintf(stderr, "cuhook: %s; not tracing\n", last_error);
}

__attribute__((destructor)) static void agent_destructor(void)
{
	/* Process exit: flush, leave the jumps (other threads may still be running; they now pass
	 * straight through). */
	stop(false, false);
}

/* The API's options string, or the environment when it is NULL (never in a process whose
 * privileges differ from its starter's: privileges_differ). */
static int parse_options(const char *options, struct cuhook_config *c)
{
	char err[400];
	config_defaults(c);
	if (!options && privileges_differ()) {
		set_error(PRIVILEGED_REFUSAL);
		return -1;
	}
	int rc = options ? config_from_string(c, options, err, sizeof(err))
	                 : config_from_env(c, err, sizeof(err));
	if (rc != 0)
		set_error(err);
	return rc;
}

int cuhook_agent_start(const char *options, unsigned flags)
{
	struct cuhook_config c;
	if (parse_options(options, &c) != 0)
		return -EINVAL;
	return start(&c, options, flags);
}

int cuhook_agent_prepare(const char *options)
{
	struct cuhook_config c;
	if (parse_options(options, &c) != 0)
		return -EINVAL;
	if (session_open()) {
		set_error("already tracing");
		return -EALREADY;
	}
	return prepare(&c, options, false, GPU_BESIDE_WAIT);
}

int cuhook_agent_prepare_stop(void)
{
	if (session_open() && config_gpu_possible(&cfg))
		gpu_stop();
	return 0;
}

uint32_t cuhook_agent_prepare_stop_begin(void)
{
	return session_open() && config_gpu_possible(&cfg) ? gpu_stop_begin() : 0;
}

int cuhook_agent_stop(unsigned flags)
{
	/* this stop's figures only: a stop that does not reach stop() (a session the writer ended,
	 * a discarded preparation) leaves them 0, not the last session's */
	for (unsigned i = 0; i < CUHOOK_STOP_STEPS; i++)
		cuhook_agent_stop_ns[i] = 0;
	if (!session_open() && agent_prepared) {
		/* prepared, never started (an injector that backed out, or died in between) */
		writer_discard();
		agent_prepared = false;
		set_error("not tracing: a preparation was discarded");
		return 0;
	}
	if (!session_open()) {
		if (!jumps_left) {
			set_error("not tracing");
			return -ENOENT;
		}
		/* The session ended by itself (its injector was late: a stopped cuhook continued);
		 * what is left of it, its jumps, goes as at any stop, and a write that failed before
		 * is told as at any stop. */
		unpatch_all(flags & CUHOOK_START_THREADS_STOPPED);
		set_error("the trace had been ended by the agent itself (cuhook was gone or late)");
	} else {
		stop(true, flags & CUHOOK_START_THREADS_STOPPED);
	}
	/* The writer has ended: what it failed to write, if anything, is for the injector to say. */
	const char *failure = agent_trace_failure();
	if (failure) {
		set_error(failure);
		return CUHOOK_STOP_TRACE_FAILED;
	}
	return 0;
}

uintptr_t cuhook_agent_fixup_ip(uintptr_t ip)
{
	return patch_fixup_ip(ip);
}

size_t cuhook_agent_fixup_ips(uintptr_t *ips, size_t n)
{
	size_t moved = 0;
	for (size_t i = 0; i < n; i++) {
		uintptr_t to = patch_fixup_ip(ips[i]);
		moved += to != ips[i];
		ips[i] = to;
	}
	return moved;
}

const char *cuhook_agent_last_error(void)
{
	return last_error;
}

int cuhook_agent_active(void)
{
	return agent_active && !writer_ended_itself();
}
