/* cupti_counter: ground truth for cuhook's call counts, and NVIDIA's own tracing path as a peer
 * (issue 5, tests/gpu/proof.sh).
 *
 * A CUPTI callback subscriber of the whole driver-API domain. The driver loads it: with
 *   CUDA_INJECTION64_PATH=/abs/path/libcupti_counter.so
 * cuInit dlopens it and calls InitializeInjection() — NVIDIA's documented way to put a CUPTI
 * tool into an unmodified process. So the same library serves PyTorch and the C programs, and
 * `cuhook` itself (which never calls cuInit) never loads it when the variable is set around
 * `cuhook run`. Calls made before that point are not seen: cuInit itself and whatever came
 * before it (cuGetProcAddress / cuDriverGetVersion lookups by the runtime); none of those is
 * among the functions compared.
 *
 * Per call: at API_ENTER the callback id's counter goes up (atomic, any thread); at API_ENTER
 * and API_EXIT an (rdtsc, cbid, site) record goes into a ring of the thread. The ring is what a
 * CUPTI-based tracer does at the least, so that "tokens/s with CUPTI" and "ns per call with
 * CUPTI" measure a tracer recording the same calls as cuhook, not a bare counter. The ring
 * overwrites itself and is never written out (cuhook writes its trace to disk: that difference
 * favours CUPTI).
 *
 * Names: cuptiGetCallbackName(DRIVER_API, cbid), e.g. "cuMemAlloc_v2" for
 * CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2 and "cuLaunchKernel_ptsz" for its per-thread-stream
 * variant. Those are the names of the exported symbols the calls went through — the names
 * cuhook reports: every cu* export of the CUDA 13.0 stub libcuda.so has a CBID of exactly its
 * name (checked when this was written; proof.sh checks the real libcuda's exports again). The
 * unversioned CBIDs (cuMemAlloc, cbid 29) are distinct entry points that libcuda also exports
 * for old binaries; they are counted apart, like cuhook does. If a name is unavailable, the
 * key is "cbid_N".
 *
 * Output at exit (destructor): CUPTI_COUNTER_OUT ("%p" becomes the pid; unset: stderr), one
 * JSON object {"function name": count} of the non-zero counts, and a line on stderr. */
#define _GNU_SOURCE /* pthread_getname_np */
#include <cupti.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <x86intrin.h>

#define NCBID CUPTI_DRIVER_TRACE_CBID_SIZE
#define RING (1u << 16) /* records per thread; a power of two */

struct rec {
	uint64_t t;
	uint32_t cbid, site;
};

static uint64_t counts[NCBID];
static const char *seen_name[NCBID]; /* functionName of the first call, if CUPTI gives no name */
static CUpti_SubscriberHandle subscriber;
static int subscribed;
static __thread struct rec *ring;
static __thread uint32_t ring_pos;
/* The calls of cuhook's own threads (named cuhook-*: its writer, its kernel-name queries) are not
 * the program's: cuhook does not record them, so they are left out here too (counted apart). */
static __thread int thread_kind;  /* 0 not looked at yet, 1 the program's, 2 cuhook's */
static uint64_t cuhook_calls;

static int cuhook_thread(void)
{
	if (!thread_kind) {
		char name[16] = "";
		pthread_getname_np(pthread_self(), name, sizeof(name));
		thread_kind = strncmp(name, "cuhook-", 7) ? 1 : 2;
	}
	return thread_kind == 2;
}

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *cbdata)
{
	(void)userdata;
	const CUpti_CallbackData *d = cbdata;
	if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cbid >= NCBID)
		return;
	if (cuhook_thread()) {
		if (d->callbackSite == CUPTI_API_ENTER)
			__atomic_fetch_add(&cuhook_calls, 1, __ATOMIC_RELAXED);
		return;
	}
	if (d->callbackSite == CUPTI_API_ENTER) {
		__atomic_fetch_add(&counts[cbid], 1, __ATOMIC_RELAXED);
		if (!seen_name[cbid])
			seen_name[cbid] = d->functionName;
	}
	if (!ring) {
		ring = malloc(RING * sizeof(*ring));
		if (!ring)
			return;
	}
	struct rec *r = &ring[ring_pos++ & (RING - 1)];
	r->t = __rdtsc();
	r->cbid = cbid;
	r->site = d->callbackSite;
}

static void report_error(const char *what, CUptiResult r)
{
	const char *s = "?";
	cuptiGetResultString(r, &s);
	fprintf(stderr, "cupti_counter: %s failed: %s (%d); not counting\n", what, s, (int)r);
}

/* Called by the driver inside cuInit (CUDA_INJECTION64_PATH). Returns 1 on success. */
__attribute__((visibility("default"))) int InitializeInjection(void)
{
	if (subscribed)
		return 1;
	CUptiResult r = cuptiSubscribe(&subscriber, on_callback, NULL);
	if (r != CUPTI_SUCCESS) {
		report_error("cuptiSubscribe", r);
		return 0;
	}
	r = cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
	if (r != CUPTI_SUCCESS) {
		report_error("cuptiEnableDomain(DRIVER_API)", r);
		cuptiUnsubscribe(subscriber);
		return 0;
	}
	subscribed = 1;
	return 1;
}

/* CUPTI_COUNTER_OUT with %p replaced by the pid. */
static FILE *open_output(char *path, size_t len)
{
	const char *tmpl = getenv("CUPTI_COUNTER_OUT");
	if (!tmpl || !*tmpl) {
		snprintf(path, len, "stderr");
		return stderr;
	}
	size_t o = 0;
	for (const char *p = tmpl; *p && o + 24 < len; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			o += (size_t)snprintf(path + o, len - o, "%d", (int)getpid());
			p++;
		} else {
			path[o++] = *p;
		}
	}
	path[o] = 0;
	return fopen(path, "w");
}

static const char *cb_name(uint32_t cbid, char *buf, size_t len)
{
	const char *name = NULL;
	if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) == CUPTI_SUCCESS && name && *name)
		return name;
	if (seen_name[cbid])
		return seen_name[cbid];
	snprintf(buf, len, "cbid_%u", cbid);
	return buf;
}

/* Runs in the loader's exit processing, after every atexit handler (the CUDA runtime's teardown
 * included): the latest point a library can report from. */
__attribute__((destructor)) static void write_counts(void)
{
	if (!subscribed)
		return;
	char path[4096];
	FILE *f = open_output(path, sizeof(path));
	if (!f) {
		fprintf(stderr, "cupti_counter: cannot write %s\n", path);
		return;
	}
	uint64_t total = 0;
	int first = 1;
	fputc('{', f);
	for (uint32_t i = 0; i < NCBID; i++) {
		uint64_t n = __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
		if (!n)
			continue;
		char buf[32];
		/* Two CBIDs never share a name in cupti_driver_cbid.h, so keys are unique. */
		fprintf(f, "%s\n  \"%s\": %llu", first ? "" : ",", cb_name(i, buf, sizeof(buf)),
		        (unsigned long long)n);
		first = 0;
		total += n;
	}
	fputs("\n}\n", f);
	if (f != stderr)
		fclose(f);
	fprintf(stderr, "cupti_counter: %llu driver API calls counted, written to %s (%llu more on cuhook's own threads, left out)\n",
	        (unsigned long long)total, path, (unsigned long long)cuhook_calls);
}
