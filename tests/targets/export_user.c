/* export_user: calls into the stand-in driver through its two export tables (fakecuda.h), a
 * known number of times, from several threads, directly and from inside a public call, and
 * prints what a trace of it must show (tests/engine/check_export_tables.py):
 *
 *   checksum 0x...     of every value returned: identical traced or not
 *   expect NAME COUNT  calls a trace must show per function (exported or "export:UUID[i]")
 *   nested NAME PARENT COUNT  of those, the calls made inside a call of PARENT
 *
 * usage: export_user [--threads N] [--iters M] LIBCUDA_PATH */
#include "fakecuda.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static CUresult (*p_cuInit)(unsigned);
static CUresult (*p_cuGetExportTable)(const void **, const CUuuid *);
static CUresult (*p_cuDriverGetVersion)(int *);
static unsigned (*p_cuFakeExportCall)(unsigned);
static int iters;
static atomic_uint_fast64_t checksum;

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static void fold(unsigned what, uint64_t v)
{
	atomic_fetch_add(&checksum, mix64(v * 131 + what));
}

static void *worker(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	const CUuuid u1 = FAKE_EXPORT_TABLE_UUID, u2 = FAKE_EXPORT_TABLE2_UUID;
	const void *a = NULL, *b = NULL;
	/* every thread asks for both tables, racing the others: each is read once */
	if (p_cuGetExportTable(&a, &u1) || p_cuGetExportTable(&b, &u2)) {
		fprintf(stderr, "export_user: cuGetExportTable failed\n");
		exit(2);
	}
	const struct fake_export_table *e1 = a;
	const struct fake_export_table2 *e2 = b;
	for (int i = 0; i < iters; i++) {
		unsigned x = (unsigned)i * 7u + t;
		fold(1, e1->mix(x));
		fold(2, e1->add3(x, t, 5));
		fold(3, e1->shared(x));
		fold(4, e2->shared(x + 1));
		fold(5, e2->first(x));
		fold(6, e2->nocfi(x));
		fold(7, p_cuFakeExportCall(x)); /* calls e1->mix inside */
		int v = 0;
		fold(8, (uint64_t)e1->driver_version(&v) << 32 | (unsigned)v);
	}
	return NULL;
}

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);
	if (!p) {
		fprintf(stderr, "export_user: %s: %s\n", name, dlerror());
		exit(2);
	}
	return p;
}

int main(int argc, char **argv)
{
	int threads = 4;
	iters = 100;
	int i = 1;
	for (; i < argc - 1; i++) {
		if (!strcmp(argv[i], "--threads"))
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--iters"))
			iters = atoi(argv[++i]);
		else
			break;
	}
	if (i != argc - 1 || threads < 1 || threads > 64 || iters < 0) {
		fprintf(stderr, "usage: export_user [--threads N] [--iters M] LIBCUDA_PATH\n");
		return 2;
	}
	void *h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "export_user: %s\n", dlerror());
		return 2;
	}
	p_cuInit = sym(h, "cuInit");
	p_cuGetExportTable = sym(h, "cuGetExportTable");
	p_cuDriverGetVersion = sym(h, "cuDriverGetVersion");
	p_cuFakeExportCall = sym(h, "cuFakeExportCall");
	if (p_cuInit(0))
		return 2;
	int v = 0;
	p_cuDriverGetVersion(&v);
	fold(9, (unsigned)v);
	const CUuuid bad = {{1, 2, 3}};
	const void *none = NULL;
	fold(10, p_cuGetExportTable(&none, &bad)); /* not found: nothing to read */
	pthread_t tid[64];
	for (int k = 0; k < threads; k++)
		pthread_create(&tid[k], NULL, worker, (void *)(uintptr_t)k);
	for (int k = 0; k < threads; k++)
		pthread_join(tid[k], NULL);
	uint64_t n = (uint64_t)threads * (uint64_t)iters;
	const char *t1 = "export:6bd5fb6c-5bf4-e74a-8987-d93912fd9df9", *t2 = "export:c0ffee00-1122-4344-8566-778899aabbcc";
	printf("checksum 0x%016" PRIx64 "\n", (uint64_t)atomic_load(&checksum));
	printf("expect cuGetExportTable %" PRIu64 "\n", 2 * (uint64_t)threads + 1);
	printf("expect cuFakeExportCall %" PRIu64 "\n", n);
	printf("expect cuDriverGetVersion %" PRIu64 "\n", n + 1);
	printf("expect %s[1] %" PRIu64 "\n", t1, 2 * n);
	printf("expect %s[2] %" PRIu64 "\n", t1, n);
	printf("expect %s[3] %" PRIu64 "\n", t1, 2 * n);
	printf("expect %s[0] %" PRIu64 "\n", t2, n);
	printf("nested %s[1] cuFakeExportCall %" PRIu64 "\n", t1, n);
	/* not traced: the slot at data, the empty slot, the shared function's second slot (counted
	 * under the first), the function without an unwind entry */
	printf("absent %s[4]\nabsent %s[5]\nabsent %s[6]\nabsent %s[1]\nabsent %s[2]\n", t1, t1, t1, t2, t2);
	return 0;
}
