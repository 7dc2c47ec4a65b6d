/* tr_gpu_link (src/report/gpu_link.c) on hand-made calls and CUPTI records: each GPU work record
 * gets the call that submitted it, exactly, or stays unlinked with its reason; never the call
 * nearest in time. Every case states the call, the API record and the expected link. */
#include "trace_reader.h"

#include "../unit/unit.h"

enum { F_LAUNCH = 3, F_MEMCPY = 4, F_OTHER = 5 };

/* which functions submit work (runtime records hold one of those): launch and memcpy */
static const uint8_t submits[6] = {[F_LAUNCH] = 1, [F_MEMCPY] = 1};

/* Calls of two threads (index 0: tid 100, index 1: tid 200). */
static struct tr_thread threads[2];
static struct tr_call calls[16];
static uint32_t ncalls;
static struct tr_gpu_api api[16];
static uint32_t napi;
static struct tr_gpu_work work[16];
static uint32_t nwork;
static struct tr_gpu_link_stats st;

static void reset(void)
{
	memset(threads, 0, sizeof(threads));
	threads[0].tid = 100;
	threads[1].tid = 200;
	ncalls = napi = nwork = 0;
}

static uint32_t add_call(uint32_t thread, uint32_t func, int64_t start, int64_t end, uint8_t flags)
{
	struct tr_call *c = &calls[ncalls];
	memset(c, 0, sizeof(*c));
	c->start_ns = start;
	c->end_ns = flags ? start : end;
	c->func = func;
	c->thread = thread;
	c->parent = c->data_first = TR_NONE;
	c->flags = flags;
	return ncalls++;
}

static uint32_t add_api(uint32_t session, uint32_t corr, uint32_t tid, uint32_t func, int64_t start, int64_t end)
{
	api[napi] = (struct tr_gpu_api){.start_ns = start, .end_ns = end, .session = session, .correlation = corr,
	                                .tid = tid, .func = func};
	return napi++;
}

/* A CUDA runtime call's record (cudaLaunchKernel, cudaMemcpy): no driver function of its own. */
static uint32_t add_runtime_api(uint32_t session, uint32_t corr, uint32_t tid, int64_t start, int64_t end)
{
	uint32_t a = add_api(session, corr, tid, UINT32_MAX, start, end);
	api[a].runtime = 1;
	return a;
}

static uint32_t add_work(uint32_t session, uint32_t corr, int64_t start)
{
	work[nwork] = (struct tr_gpu_work){.start_ns = start, .end_ns = start + 10, .kind = TR_GPU_KERNEL,
	                                   .session = session, .correlation = corr};
	return nwork++;
}

static void run_link(int lost_unattributed)
{
	int rc = tr_gpu_link(calls, ncalls, threads, 2, submits, sizeof(submits), lost_unattributed, api, napi, work,
	                     nwork, &st);
	CHECK(rc == 0, "tr_gpu_link returned %d", rc);
}

#define CHECK_LINK(w, want_link, want_call)                                                        \
	CHECK(work[w].link == (want_link) && work[w].call == (want_call), "work %u: link %u call %u, want %u %u", \
	      (unsigned)(w), work[w].link, work[w].call, (unsigned)(want_link), (unsigned)(want_call))

/* The API record lies in the call: entry <= start, end <= exit, bounds included. */
static void linked_inside_the_call(void)
{
	reset();
	uint32_t c = add_call(0, F_LAUNCH, 1000, 2000, 0);
	add_call(0, F_LAUNCH, 3000, 4000, 0);
	add_api(0, 7, 100, F_LAUNCH, 1000, 2000); /* exactly the call's span */
	uint32_t w = add_work(0, 7, 2500);
	run_link(0);
	CHECK_LINK(w, TR_GPU_LINKED, c);
	CHECK(api[0].call == c && api[0].link == TR_GPU_LINKED, "API record: call %u link %u", api[0].call, api[0].link);
	CHECK(st.work[TR_GPU_LINKED] == 1 && st.api[TR_GPU_LINKED] == 1, "counts %llu %llu",
	      (unsigned long long)st.work[TR_GPU_LINKED], (unsigned long long)st.api[TR_GPU_LINKED]);
}

/* A graph launch: several kernels, one correlation id, one call. */
static void graph_launch_links_every_kernel(void)
{
	reset();
	uint32_t c = add_call(0, F_LAUNCH, 1000, 2000, 0);
	add_api(0, 9, 100, F_LAUNCH, 1100, 1900);
	uint32_t a = add_work(0, 9, 2100), b = add_work(0, 9, 2200), d = add_work(0, 9, 2300);
	run_link(0);
	CHECK_LINK(a, TR_GPU_LINKED, c);
	CHECK_LINK(b, TR_GPU_LINKED, c);
	CHECK_LINK(d, TR_GPU_LINKED, c);
	CHECK(work[a].api == 0 && work[d].api == 0, "API index %u %u", work[a].api, work[d].api);
	CHECK(st.work[TR_GPU_LINKED] == 3, "linked %llu", (unsigned long long)st.work[TR_GPU_LINKED]);
}

/* Correlation ids start again in each session: the work of session 1 links to session 1's record,
 * even when session 0 has the same id. */
static void correlation_ids_are_per_session(void)
{
	reset();
	uint32_t c0 = add_call(0, F_LAUNCH, 1000, 2000, 0);
	uint32_t c1 = add_call(0, F_LAUNCH, 9000, 9500, 0);
	add_api(0, 1, 100, F_LAUNCH, 1100, 1900);
	add_api(1, 1, 100, F_LAUNCH, 9100, 9400);
	uint32_t w1 = add_work(1, 1, 9600), w0 = add_work(0, 1, 2100);
	run_link(0);
	CHECK_LINK(w0, TR_GPU_LINKED, c0);
	CHECK_LINK(w1, TR_GPU_LINKED, c1);
	CHECK(work[w1].api == 1, "session 1's work uses API record %u", work[w1].api);
}

/* An API record between two calls is in neither: it is not linked to the nearest one. */
static void never_the_nearest_call(void)
{
	reset();
	add_call(0, F_LAUNCH, 1000, 2000, 0);
	add_call(0, F_LAUNCH, 2010, 3000, 0);
	add_api(0, 1, 100, F_LAUNCH, 2001, 2005);  /* 1 ns after the first call, 5 before the next */
	add_api(0, 2, 100, F_LAUNCH, 1500, 2001);  /* starts in the first call, ends after it */
	uint32_t w1 = add_work(0, 1, 4000), w2 = add_work(0, 2, 4100);
	run_link(0);
	CHECK_LINK(w1, TR_GPU_NO_CALL, TR_NONE);
	CHECK_LINK(w2, TR_GPU_NO_CALL, TR_NONE);
	CHECK(st.api[TR_GPU_NO_CALL] == 2, "API records in no call: %llu", (unsigned long long)st.api[TR_GPU_NO_CALL]);
}

/* Same time, another thread or another function: not its call. */
static void same_thread_and_function_only(void)
{
	reset();
	add_call(0, F_LAUNCH, 1000, 2000, 0);
	add_call(1, F_MEMCPY, 1000, 2000, 0);
	add_api(0, 1, 200, F_LAUNCH, 1100, 1900);  /* thread 200 made no launch */
	add_api(0, 2, 100, F_MEMCPY, 1100, 1900);  /* thread 100 made no copy */
	add_api(0, 3, 300, F_LAUNCH, 1100, 1900);  /* a thread the trace never saw */
	add_api(0, 4, 100, UINT32_MAX, 1100, 1900); /* a function cuhook has no id for */
	uint32_t w[4];
	for (uint32_t i = 0; i < 4; i++)
		w[i] = add_work(0, i + 1, 3000);
	run_link(0);
	for (uint32_t i = 0; i < 4; i++)
		CHECK_LINK(w[i], TR_GPU_NO_CALL, TR_NONE);
}

/* No API record with the work's correlation id (in its session). */
static void no_api_record(void)
{
	reset();
	add_call(0, F_LAUNCH, 1000, 2000, 0);
	add_api(0, 1, 100, F_LAUNCH, 1100, 1900);
	uint32_t w = add_work(0, 2, 3000), x = add_work(1, 1, 3000);
	run_link(0);
	CHECK_LINK(w, TR_GPU_NO_API, TR_NONE);
	CHECK_LINK(x, TR_GPU_NO_API, TR_NONE);
	CHECK(work[w].api == TR_NONE, "api %u", work[w].api);
	CHECK(st.work[TR_GPU_NO_API] == 2, "no API: %llu", (unsigned long long)st.work[TR_GPU_NO_API]);
}

/* The call is missing and the thread lost records, or its EXIT was lost: "call dropped". */
static void dropped_calls(void)
{
	reset();
	threads[1].dropped = 4;
	add_call(0, F_LAUNCH, 1000, 0, TR_CALL_UNFINISHED); /* EXIT lost */
	add_api(0, 1, 100, F_LAUNCH, 1100, 1900);
	add_api(0, 2, 200, F_LAUNCH, 1100, 1900);  /* thread 200 dropped records */
	add_api(0, 3, 300, F_LAUNCH, 1100, 1900);  /* unknown thread, no drop anywhere else */
	uint32_t a = add_work(0, 1, 3000), b = add_work(0, 2, 3000), c = add_work(0, 3, 3000);
	run_link(0);
	CHECK_LINK(a, TR_GPU_CALL_DROPPED, TR_NONE);
	CHECK_LINK(b, TR_GPU_CALL_DROPPED, TR_NONE);
	CHECK_LINK(c, TR_GPU_NO_CALL, TR_NONE);
	/* drops the END block counts that no DROP record places: any thread may have lost the call */
	run_link(1);
	CHECK_LINK(c, TR_GPU_CALL_DROPPED, TR_NONE);
	CHECK(st.work[TR_GPU_CALL_DROPPED] == 3, "dropped %llu", (unsigned long long)st.work[TR_GPU_CALL_DROPPED]);
}

/* Two API records with one (session, correlation): the first in the file is used, and counted. */
static void duplicate_api_records(void)
{
	reset();
	uint32_t c = add_call(0, F_LAUNCH, 1000, 2000, 0);
	add_call(0, F_LAUNCH, 5000, 6000, 0);
	add_api(0, 1, 100, F_LAUNCH, 1100, 1900);
	add_api(0, 1, 100, F_LAUNCH, 5100, 5900);
	uint32_t w = add_work(0, 1, 3000);
	run_link(0);
	CHECK_LINK(w, TR_GPU_LINKED, c);
	CHECK(work[w].api == 0, "api %u", work[w].api);
	CHECK(st.duplicate_api == 1, "duplicates %llu", (unsigned long long)st.duplicate_api);
}

/* Many calls of one function on one thread: each record finds its own call. */
static void the_right_call_among_many(void)
{
	reset();
	uint32_t c[10];
	for (uint32_t i = 0; i < 10; i++)
		c[i] = add_call(i % 2, F_LAUNCH, 1000 + 1000 * i, 1500 + 1000 * i, 0);
	for (uint32_t i = 0; i < 10; i++) {
		add_api(0, 10 - i, threads[i % 2].tid, F_LAUNCH, 1100 + 1000 * i, 1400 + 1000 * i);
		add_work(0, 10 - i, 20000);
	}
	run_link(0);
	for (uint32_t i = 0; i < 10; i++)
		CHECK_LINK(i, TR_GPU_LINKED, c[i]);
}

/* A runtime record holds the driver call the runtime made: the first submitting call of its
 * thread that starts in it and ends in it; not a call of another thread, not one that is not a
 * submitting function, not one that outlasts it. */
static void runtime_record_holds_the_call(void)
{
	reset();
	add_call(0, F_LAUNCH, 500, 900, 0);             /* before the runtime call */
	add_call(0, F_OTHER, 1100, 1200, 0);            /* in it, not submitting */
	uint32_t c = add_call(0, F_LAUNCH, 1300, 1400, 0);
	add_call(0, F_LAUNCH, 1500, 1600, 0);           /* a second one in it: the first is the one */
	add_call(1, F_LAUNCH, 1050, 1100, 0);           /* another thread */
	uint32_t d = add_call(0, F_MEMCPY, 3000, 3500, 0);
	uint32_t late = add_call(1, F_LAUNCH, 5100, 6000, 0);
	add_runtime_api(0, 7, 100, 1000, 2000);
	add_runtime_api(0, 8, 100, 3000, 3500);         /* bounds included */
	add_runtime_api(0, 9, 200, 5000, 5500);         /* its call outlasts the record: not linked */
	add_runtime_api(0, 10, 100, 7000, 8000);        /* nothing in it */
	uint32_t w1 = add_work(0, 7, 2500), w2 = add_work(0, 8, 3600), w3 = add_work(0, 9, 5600),
	         w4 = add_work(0, 10, 8100);
	run_link(0);
	CHECK_LINK(w1, TR_GPU_LINKED, c);
	CHECK_LINK(w2, TR_GPU_LINKED, d);
	CHECK_LINK(w3, TR_GPU_NO_CALL, TR_NONE);
	CHECK_LINK(w4, TR_GPU_NO_CALL, TR_NONE);
	CHECK(late != c && st.via_runtime == 2, "linked through runtime records: %llu, want 2",
	      (unsigned long long)st.via_runtime);
	CHECK(st.api[TR_GPU_LINKED] == 2 && st.api[TR_GPU_NO_CALL] == 2, "API links %llu linked, %llu none",
	      (unsigned long long)st.api[TR_GPU_LINKED], (unsigned long long)st.api[TR_GPU_NO_CALL]);
}

/* Work with both a driver and a runtime record of its correlation id goes by the driver's, in
 * either file order; a driver record next to a runtime one is no duplicate. A runtime record
 * holding an entry-only call is a dropped call. */
static void driver_record_before_runtime(void)
{
	reset();
	uint32_t outer = add_call(0, F_LAUNCH, 1000, 1800, 0);
	uint32_t inner = add_call(0, F_LAUNCH, 1100, 1200, 0); /* nested: the driver record's */
	add_runtime_api(0, 7, 100, 900, 1900);
	add_api(0, 7, 100, F_LAUNCH, 1110, 1190);
	add_call(1, F_LAUNCH, 3000, 3000, TR_CALL_NO_EXIT);
	add_runtime_api(0, 8, 200, 2900, 3100);
	uint32_t w = add_work(0, 7, 2000), w2 = add_work(0, 8, 3200);
	run_link(0);
	CHECK_LINK(w, TR_GPU_LINKED, inner);
	CHECK(api[0].call == outer, "the runtime record holds call %u, want %u", api[0].call, outer);
	CHECK_LINK(w2, TR_GPU_CALL_DROPPED, TR_NONE);
	CHECK(st.duplicate_api == 0 && st.via_runtime == 0, "duplicates %llu, via runtime %llu",
	      (unsigned long long)st.duplicate_api, (unsigned long long)st.via_runtime);
	/* no submitting functions known: a runtime record holds nothing */
	int rc = tr_gpu_link(calls, ncalls, threads, 2, NULL, 0, 0, api, napi, work, nwork, &st);
	CHECK(rc == 0 && api[0].link == TR_GPU_NO_CALL && work[w].call == inner, "without submits: rc %d link %u", rc,
	      api[0].link);
}

int main(void)
{
	RUN(linked_inside_the_call);
	RUN(graph_launch_links_every_kernel);
	RUN(correlation_ids_are_per_session);
	RUN(never_the_nearest_call);
	RUN(same_thread_and_function_only);
	RUN(no_api_record);
	RUN(dropped_calls);
	RUN(duplicate_api_records);
	RUN(the_right_call_among_many);
	RUN(runtime_record_holds_the_call);
	RUN(driver_record_before_runtime);
	UNIT_EXIT();
}
