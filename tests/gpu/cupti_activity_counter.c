/* cupti_activity_counter: ground truth for cuhook's GPU records on clients other than PyTorch
 * (issue 16, tests/gpu/gpu_proof.sh): what CUPTI's own activity API says the GPU ran.
 *
 * Put into an unmodified process by the driver, as NVIDIA documents for CUPTI tools:
 *   CUDA_INJECTION64_PATH=/abs/path/libcupti_activity_counter.so python3 app.py
 * cuInit dlopens it and calls InitializeInjection(), which enables the same activity kinds as
 * `cuhook --gpu` (concurrent kernels, memcpy, memset). At exit (destructor) it flushes CUPTI and
 * writes CUPTI_COUNTER_OUT ("%p" becomes the pid; unset: stderr): one JSON object
 * {"kernels": {mangled name: count}, "memcpy": {copy kind number: count}, "memset": count,
 *  "dropped": records CUPTI dropped}. Run it in a separate process from cuhook's: two CUPTI
 * users in one process would take each other's buffers. */
#include <cupti.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXK 8192
static struct { char *name; unsigned long n; } kern[MAXK];
static unsigned nkern;
static unsigned long copies[16], memsets, dropped;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void count_kernel(const char *name)
{
	for (unsigned i = 0; i < nkern; i++)
		if (!strcmp(kern[i].name, name)) {
			kern[i].n++;
			return;
		}
	if (nkern < MAXK) {
		kern[nkern].name = strdup(name ? name : "?");
		kern[nkern++].n = 1;
	}
}

static void CUPTIAPI buf_requested(uint8_t **buf, size_t *size, size_t *max)
{
	*size = 8u << 20;
	*buf = aligned_alloc(8, *size);
	*max = 0;
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t sid, uint8_t *buf, size_t size, size_t valid)
{
	CUpti_Activity *r = NULL;
	(void)size;
	pthread_mutex_lock(&mu);
	while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
		if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
			count_kernel(((CUpti_ActivityKernel10 *)r)->name);
		else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY)
			copies[((CUpti_ActivityMemcpy6 *)r)->copyKind & 15]++;
		else if (r->kind == CUPTI_ACTIVITY_KIND_MEMSET)
			memsets++;
	}
	size_t d = 0;
	if (cuptiActivityGetNumDroppedRecords(ctx, sid, &d) == CUPTI_SUCCESS)
		dropped += d;
	pthread_mutex_unlock(&mu);
	free(buf);
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
	cuptiActivityRegisterCallbacks(buf_requested, buf_completed);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
	return 1;
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++)
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	fputc('"', f);
}

__attribute__((destructor)) static void dump(void)
{
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	const char *out = getenv("CUPTI_COUNTER_OUT");
	char path[4096];
	FILE *f = stderr;
	if (out) {
		const char *p = strstr(out, "%p");
		if (p)
			snprintf(path, sizeof path, "%.*s%d%s", (int)(p - out), out, (int)getpid(), p + 2);
		else
			snprintf(path, sizeof path, "%s", out);
		f = fopen(path, "w");
		if (!f)
			f = stderr;
	}
	pthread_mutex_lock(&mu);
	unsigned long total = 0;
	fputs("{\"kernels\": {", f);
	for (unsigned i = 0; i < nkern; i++) {
		fputs(i ? ", " : "", f);
		json_string(f, kern[i].name);
		fprintf(f, ": %lu", kern[i].n);
		total += kern[i].n;
	}
	fputs("}, \"memcpy\": {", f);
	int first = 1;
	for (int k = 0; k < 16; k++)
		if (copies[k]) {
			fprintf(f, "%s\"%d\": %lu", first ? "" : ", ", k, copies[k]);
			first = 0;
		}
	fprintf(f, "}, \"memset\": %lu, \"dropped\": %lu}\n", memsets, dropped);
	pthread_mutex_unlock(&mu);
	if (f != stderr)
		fclose(f);
	fprintf(stderr, "cupti_activity_counter: %lu kernels (%u names), %lu memsets\n", total, nkern, memsets);
}
