/* rt_loop: a plain loop of traced calls, for the tests of the agent's failure paths (unwritable
 * output, disk full, SIGKILL). Call i is cuFakeInner(i), which returns i ^ 0x1234; the program
 * checks every result.
 *
 * usage: rt_loop [--agent PATH] [--iters N] [--pause-after K --pause-ms MS] [--progress FILE]
 *                [--exit CODE] LIBCUDA
 *   --iters N         calls to make (default 1000); 0: forever (until killed)
 *   --pause-after K   sleep MS milliseconds after the first K calls (lets the agent's writer
 *                     drain them before the rest come)
 *   --progress FILE   a shared mapping of FILE holds the number of calls made so far (a u64,
 *                     updated after every call): readable after a SIGKILL
 *   --exit CODE       exit status on success (default 0): must come out unchanged
 *   --throttle K      sleep 100 us after every K calls (keeps an endless run's trace small)
 *   --crash-after K   after K calls, crash (a store through a null pointer): a target that
 *                     dies on its own, with cuhook's flushes behind it
 *   --wait-tracer 1   before loading anything, wait (10 s at most) until a tracer is attached
 * prints: "calls N", "checksum 0x...", "bad N" (wrong results; exit 3 if any) */
#include "robust_common.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rt_loop [--agent PATH] [--iters N] ... LIBCUDA\n");
		return 2;
	}
	const char *agent = rt_opt(argc, argv, "--agent");
	long iters = rt_opt_long(argc, argv, "--iters", 1000);
	long pause_after = rt_opt_long(argc, argv, "--pause-after", -1);
	long pause_ms = rt_opt_long(argc, argv, "--pause-ms", 0);
	const char *progress_path = rt_opt(argc, argv, "--progress");
	int code = (int)rt_opt_long(argc, argv, "--exit", 0);
	long throttle = rt_opt_long(argc, argv, "--throttle", 0);
	long crash_after = rt_opt_long(argc, argv, "--crash-after", -1);

	volatile uint64_t *progress = NULL;
	static volatile uintptr_t progress_null; /* 0: the address the crash writes to */
	if (progress_path) {
		int fd = open(progress_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || ftruncate(fd, 4096) != 0) {
			perror("rt_loop: progress file");
			return 2;
		}
		void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			perror("rt_loop: mmap");
			return 2;
		}
		progress = m;
		close(fd);
	}

	if (rt_opt_long(argc, argv, "--wait-tracer", 0)) {
		for (int i = 0; i < 10000 && rt_proc_status("TracerPid") <= 0; i++) {
			struct timespec ts = {0, 1000000L};
			nanosleep(&ts, NULL);
		}
	}

	void *lib = rt_load(agent, argv[argc - 1]);
	__typeof__(cuFakeInner) *inner = RT_FN(lib, cuFakeInner);

	unsigned long long sum = RT_MIX_INIT;
	long bad = 0, n = 0;
	for (long i = 0; iters == 0 || i < iters; i++) {
		int r = inner((int)i);
		if (r != ((int)i ^ 0x1234))
			bad++;
		sum = rt_mix(sum, (unsigned)r);
		n++;
		if (progress)
			*progress = (uint64_t)n;
		if (throttle > 0 && n % throttle == 0) {
			struct timespec ts = {0, 100000L};
			nanosleep(&ts, NULL);
		}
		if (i + 1 == pause_after && pause_ms > 0) {
			struct timespec ts = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
			nanosleep(&ts, NULL);
		}
		if (i + 1 == crash_after)
			*(volatile int *)(uintptr_t)progress_null = 1;
	}
	printf("calls %ld\nchecksum 0x%016llx\nbad %ld\n", n, sum, bad);
	return bad ? 3 : code;
}
