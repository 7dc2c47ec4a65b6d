/* Decode speed of the trace reader: opens the trace REPEAT times (the file is in the page cache
 * after the first) and prints the best rate in million events (ENTRY + EXIT records) per
 * second. With --min M, exits 1 when the best rate is below M.
 *   bench_reader [--repeat N] [--min M] trace.bin */
#include "trace_reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	int repeat = 5, i = 1;
	double min_rate = 0;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
			repeat = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--min") && i + 1 < argc)
			min_rate = atof(argv[++i]);
		else
			break;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: bench_reader [--repeat N] [--min MEVENTS_PER_S] trace.bin\n");
		return 2;
	}
	double best = 0;
	uint64_t events = 0;
	for (int r = 0; r < repeat; r++) {
		char err[512];
		double t0 = now();
		struct tr_trace *t = tr_open(argv[i], err, sizeof(err));
		double dt = now() - t0;
		if (!t) {
			fprintf(stderr, "bench_reader: %s\n", err);
			return 1;
		}
		events = t->nentry + t->nexit;
		double rate = (double)events / dt / 1e6;
		if (rate > best)
			best = rate;
		tr_close(t);
	}
	printf("bench_reader: %llu events, best %.1f M events/s%s\n", (unsigned long long)events, best,
	       min_rate > 0 ? (best >= min_rate ? " (ok)" : " (TOO SLOW)") : "");
	return min_rate > 0 && best < min_rate ? 1 : 0;
}
