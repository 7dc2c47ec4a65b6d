/* timed_calls: calls the stand-in libcuda.so.1 (tests/fakecuda) at a steady pace for a while and
 * says when each call was made, for the recording-window tests (cuhook run --delay --duration,
 * tests/engine/check_capture.py). Each round calls cuCtxGetDevice (counted by the agent's
 * default) and then cuCtxSynchronize (recorded), between two readings of CLOCK_MONOTONIC, and
 * prints them at the end:
 *
 *   call I BEFORE_NS AFTER_NS     round I began after BEFORE_NS and ended before AFTER_NS
 *   sleep BEFORE_NS AFTER_NS      a cuFakeSleep (below) began after BEFORE_NS, ended before AFTER_NS
 *   bad TEXT                      a call returned something else than it must (exit 3)
 *
 * usage: timed_calls LIBCUDA_PATH SECONDS INTERVAL_MS [AT_S SLEEP_MS]...
 *
 * Each AT_S SLEEP_MS: once AT_S seconds have passed since the start, the next round first calls
 * cuFakeSleep(SLEEP_MS), a call that spans a chosen moment (a recording window's edge). */
#include "fakecuda.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc < 4 || argc % 2) {
		fprintf(stderr, "usage: timed_calls LIBCUDA_PATH SECONDS INTERVAL_MS [AT_S SLEEP_MS]...\n");
		return 2;
	}
	uint64_t start = now_ns();
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	__typeof__(cuInit) *init = h ? dlsym(h, "cuInit") : NULL;
	__typeof__(cuDeviceGet) *device_get = h ? dlsym(h, "cuDeviceGet") : NULL;
	__typeof__(cuDevicePrimaryCtxRetain) *retain = h ? dlsym(h, "cuDevicePrimaryCtxRetain") : NULL;
	__typeof__(cuCtxSetCurrent) *set_current = h ? dlsym(h, "cuCtxSetCurrent") : NULL;
	__typeof__(cuCtxSynchronize) *synchronize = h ? dlsym(h, "cuCtxSynchronize") : NULL;
	__typeof__(cuCtxGetDevice) *get_device = h ? dlsym(h, "cuCtxGetDevice") : NULL;
	__typeof__(cuFakeSleep) *sleep_ms = h ? dlsym(h, "cuFakeSleep") : NULL;
	CUdevice dev;
	CUcontext ctx;
	if (!init || !device_get || !retain || !set_current || !synchronize || !get_device || !sleep_ms || init(0) ||
	    device_get(&dev, 0) || retain(&ctx, dev) || set_current(ctx)) {
		fprintf(stderr, "timed_calls: the stand-in driver did not start\n");
		return 2;
	}
	double seconds = atof(argv[2]);
	long interval_ms = atol(argv[3]);
	size_t cap = (size_t)(seconds * 1000 / (interval_ms > 0 ? interval_ms : 1)) + 16;
	uint64_t(*t)[2] = calloc(cap, sizeof(*t));
	if (!t)
		return 2;
	int bad = 0;
	size_t n = 0;
	int next_sleep = 4; /* argv index of the next AT_S */
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
	while (n < cap && now_ns() < end) {
		if (next_sleep < argc && now_ns() - start >= (uint64_t)(atof(argv[next_sleep]) * 1e9)) {
			uint64_t s0 = now_ns();
			if (sleep_ms((unsigned)atoi(argv[next_sleep + 1])) != FAKE_SUCCESS) {
				printf("bad sleep\n");
				bad = 1;
			}
			printf("sleep %llu %llu\n", (unsigned long long)s0, (unsigned long long)now_ns());
			next_sleep += 2;
		}
		t[n][0] = now_ns();
		CUdevice d = -1;
		if (get_device(&d) != FAKE_SUCCESS || d != 0 || synchronize() != FAKE_SUCCESS) {
			printf("bad call %zu\n", n);
			bad = 1;
		}
		t[n][1] = now_ns();
		n++;
		struct timespec pause = {interval_ms / 1000, (interval_ms % 1000) * 1000000L};
		nanosleep(&pause, NULL);
	}
	for (size_t i = 0; i < n; i++)
		printf("call %zu %llu %llu\n", i, (unsigned long long)t[i][0], (unsigned long long)t[i][1]);
	free(t);
	return bad ? 3 : 0;
}
