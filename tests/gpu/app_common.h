/* What driver_app.c and runtime_app.cu (issue 5's C workloads) share, in C and in CUDA C++:
 * their arguments and input vectors, the count of the calls they make by name, and what they
 * print at the end: the arguments, a checksum of the result and the counts. */
#ifndef CUHOOK_GPU_APP_COMMON_H
#define CUHOOK_GPU_APP_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STR_(x) #x
#define STR(x) STR_(x)

/* Call fn, counting it under the name of the symbol called: fn is macro-expanded before STR_
 * stringizes it, so cuda.h's cuMemAlloc is counted as cuMemAlloc_v2 (the exported entry point,
 * the name cuhook and CUPTI report) and cuda_runtime.h's cudaMemcpy as cudaMemcpy_ptds under
 * per-thread default streams. Each program defines check(result, name): exit on failure. */
#define CALL(fn, ...)                                                                              \
	do {                                                                                       \
		count(STR(fn));                                                                    \
		check(fn(__VA_ARGS__), STR(fn));                                                   \
	} while (0)

/* Calls made, by name, in order of first call. */
static struct app_call {
	const char *name;
	long n;
} app_calls[32];
static int app_ncalls;

static void count(const char *name)
{
	for (int i = 0; i < app_ncalls; i++)
		if (!strcmp(app_calls[i].name, name)) {
			app_calls[i].n++;
			return;
		}
	if (app_ncalls < (int)(sizeof(app_calls) / sizeof(app_calls[0]))) {
		app_calls[app_ncalls].name = name;
		app_calls[app_ncalls++].n = 1;
	}
}

static uint64_t fnv1a(const void *p, size_t n)
{
	const unsigned char *b = (const unsigned char *)p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

struct app {
	int launches, n, sync_every;
	size_t bytes;     /* of each vector */
	float *hx, *hy;   /* the inputs; hy receives the result */
};

/* [LAUNCHES [ELEMENTS [SYNC_EVERY]]] (defaults 500, 1048576, 100) and the inputs; exits 2 on bad
 * arguments, 1 without memory. */
static void app_setup(int argc, char **argv, struct app *a)
{
	a->launches = argc > 1 ? atoi(argv[1]) : 500;
	a->n = argc > 2 ? atoi(argv[2]) : 1 << 20;
	a->sync_every = argc > 3 ? atoi(argv[3]) : 100;
	if (a->launches < 1 || a->n < 1 || a->sync_every < 1) {
		fprintf(stderr, "usage: %s [LAUNCHES [ELEMENTS [SYNC_EVERY]]]\n", argv[0]);
		exit(2);
	}
	a->bytes = (size_t)a->n * sizeof(float);
	a->hx = (float *)malloc(a->bytes);
	a->hy = (float *)malloc(a->bytes);
	if (!a->hx || !a->hy)
		exit(1);
	for (int i = 0; i < a->n; i++) {
		a->hx[i] = (float)(i % 97) * 0.25f;
		a->hy[i] = (float)(i % 13);
	}
}

/* The lines proof.sh reads: arguments, the result's checksum, the calls made. */
static void app_report(struct app *a)
{
	printf("launches %d elements %d sync_every %d\n", a->launches, a->n, a->sync_every);
	printf("checksum %016llx\n", (unsigned long long)fnv1a(a->hy, a->bytes));
	printf("calls {");
	for (int i = 0; i < app_ncalls; i++)
		printf("%s\"%s\": %ld", i ? ", " : "", app_calls[i].name, app_calls[i].n);
	printf("}\n");
	free(a->hx);
	free(a->hy);
}

#endif
