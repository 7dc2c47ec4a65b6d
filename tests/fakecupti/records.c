/* Where the stand-in libcupti's records go: a queue filled by the application's threads (inside
 * driver calls, never calling the client there), emptied into the client's buffers by a worker
 * thread of the stand-in, as CUPTI's own thread does.
 *
 *   - the worker asks the client for buffers (bufferRequested), fills each one and hands it back
 *     (bufferCompleted) when the next record does not fit or maxNumRecords is reached; a buffer
 *     only partly filled stays with the stand-in until a flush;
 *   - cuptiActivityFlushAll (fc_flush) does the same on the caller's thread and also hands back
 *     the partly filled buffer, before returning;
 *   - a record is dropped (and counted, cuptiActivityGetNumDroppedRecords) when the client gives
 *     no buffer or one too small for it, or when the queue is full (the worker is far behind).
 *
 * Records lie in a buffer back to back, each at an 8-byte boundary, as cuptiActivityGetNextRecord
 * reads them. Two locks: queue_lock (short, taken by the application's threads) and deliver_lock
 * (held by whichever thread fills and hands back buffers, across the client's callbacks). */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "fakecupti_internal.h"

union record {
	CUpti_Activity any;
	CUpti_ActivityKernel10 kernel;
	CUpti_ActivityMemcpy6 memcpy;
	CUpti_ActivityMemset4 memset;
	CUpti_ActivityAPI api;
};

#define QUEUE_SLOTS 16384u
#define ALIGN8(x) (((x) + 7u) & ~(size_t)7u)

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;
/* under queue_lock */
static union record *queue; /* QUEUE_SLOTS */
static uint64_t queue_head, queue_tail;
static uint32_t session, sessions; /* session: read without the lock too (atomic) */
static int worker_running, worker_stop;
static pthread_t worker;
static size_t dropped;
static CUpti_BuffersCallbackRequestFunc buffer_requested;
static CUpti_BuffersCallbackCompleteFunc buffer_completed;

/* under deliver_lock: the client's buffer being filled */
static pthread_mutex_t deliver_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint8_t *buf;
	size_t size, used, records, max_records;
} cur;
/* set on the thread holding deliver_lock: a flush from inside the client's callbacks would
 * wait for itself */
static __thread int delivering;

FC_HIDDEN size_t fc_record_size(CUpti_ActivityKind kind)
{
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
	case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
	case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
	case CUPTI_ACTIVITY_KIND_DRIVER:
	case CUPTI_ACTIVITY_KIND_RUNTIME: return sizeof(CUpti_ActivityAPI);
	default: return 0;
	}
}

FC_HIDDEN uint32_t fc_session_now(void)
{
	return __atomic_load_n(&session, __ATOMIC_ACQUIRE);
}

FC_HIDDEN void fc_push(uint32_t s, const void *record, size_t size)
{
	pthread_mutex_lock(&queue_lock);
	if (s != session || !queue) {
		pthread_mutex_unlock(&queue_lock);
		return;
	}
	if (queue_tail - queue_head == QUEUE_SLOTS) {
		dropped++;
	} else {
		memcpy(&queue[queue_tail % QUEUE_SLOTS], record, size);
		queue_tail++;
	}
	pthread_mutex_unlock(&queue_lock);
	pthread_cond_signal(&queue_cond);
}

FC_HIDDEN size_t fc_take_dropped(void)
{
	pthread_mutex_lock(&queue_lock);
	size_t n = dropped;
	dropped = 0;
	pthread_mutex_unlock(&queue_lock);
	return n;
}

FC_HIDDEN void fc_set_buffer_callbacks(CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc done)
{
	pthread_mutex_lock(&queue_lock);
	buffer_requested = req;
	buffer_completed = done;
	pthread_mutex_unlock(&queue_lock);
	pthread_cond_signal(&queue_cond);
}

static void count_dropped(void)
{
	pthread_mutex_lock(&queue_lock);
	dropped++;
	pthread_mutex_unlock(&queue_lock);
}

/* ---- filling the client's buffers (deliver_lock held) ------------------------------------- */

static void hand_back(CUpti_BuffersCallbackCompleteFunc done)
{
	if (cur.buf)
		done(NULL, 0, cur.buf, cur.size, cur.records ? cur.used : 0);
	memset(&cur, 0, sizeof(cur));
}

static void request(CUpti_BuffersCallbackRequestFunc req)
{
	uint8_t *buf = NULL;
	size_t size = 0, max_records = 0;
	req(&buf, &size, &max_records);
	cur.buf = buf;
	cur.size = buf ? size : 0;
	/* records start at an 8-byte boundary, the buffer's first one included */
	cur.used = buf ? ALIGN8((uintptr_t)buf) - (uintptr_t)buf : 0;
	cur.records = 0;
	cur.max_records = max_records;
}

static int fits(size_t size)
{
	return cur.buf && cur.used <= cur.size && size <= cur.size - cur.used &&
	       (cur.max_records == 0 || cur.records < cur.max_records);
}

/* One record into the client's buffers: into the current one, else into a new one (the full
 * one handed back first), else dropped. A new buffer too small for it is kept for later ones. */
static void place(const union record *r, CUpti_BuffersCallbackRequestFunc req,
                  CUpti_BuffersCallbackCompleteFunc done)
{
	size_t size = fc_record_size(r->any.kind);
	if (!fits(size)) {
		if (cur.buf && cur.records)
			hand_back(done);
		if (!cur.buf)
			request(req);
		if (!fits(size)) {
			count_dropped();
			return;
		}
	}
	memcpy(cur.buf + cur.used, r, size);
	cur.used += ALIGN8(size);
	if (cur.used > cur.size)
		cur.used = cur.size;
	cur.records++;
}

/* Moves every queued record into the client's buffers; with `all`, hands back the one being
 * filled too. Records stay queued while the client has registered no callbacks. */
static void deliver(int all)
{
	pthread_mutex_lock(&deliver_lock);
	delivering = 1;
	for (;;) {
		union record r;
		pthread_mutex_lock(&queue_lock);
		CUpti_BuffersCallbackRequestFunc req = buffer_requested;
		CUpti_BuffersCallbackCompleteFunc done = buffer_completed;
		int have = req && done && queue && queue_head != queue_tail;
		if (have) {
			const union record *q = &queue[queue_head % QUEUE_SLOTS];
			memcpy(&r, q, fc_record_size(q->any.kind));
			queue_head++;
		}
		pthread_mutex_unlock(&queue_lock);
		if (!have) {
			if (all && done)
				hand_back(done);
			break;
		}
		place(&r, req, done);
	}
	delivering = 0;
	pthread_mutex_unlock(&deliver_lock);
}

static void *worker_main(void *arg)
{
	pthread_mutex_lock(&queue_lock);
	for (;;) {
		while (!worker_stop && (queue_head == queue_tail || !buffer_requested || !buffer_completed))
			pthread_cond_wait(&queue_cond, &queue_lock);
		if (worker_stop)
			break;
		pthread_mutex_unlock(&queue_lock);
		deliver(0);
		pthread_mutex_lock(&queue_lock);
	}
	pthread_mutex_unlock(&queue_lock);
	return NULL;
}

FC_HIDDEN CUptiResult fc_flush(void)
{
	pthread_mutex_lock(&queue_lock);
	int registered = buffer_requested && buffer_completed;
	pthread_mutex_unlock(&queue_lock);
	if (!registered || delivering)
		return CUPTI_ERROR_INVALID_OPERATION;
	deliver(1);
	return CUPTI_SUCCESS;
}

/* ---- sessions ------------------------------------------------------------------------------ */

FC_HIDDEN uint32_t fc_records_open(void)
{
	union record *q = malloc(QUEUE_SLOTS * sizeof(*q));
	if (!q)
		return 0;
	pthread_mutex_lock(&queue_lock);
	queue = q;
	queue_head = queue_tail = 0;
	worker_stop = 0;
	/* the worker takes no signal meant for the application's threads */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	worker_running = pthread_create(&worker, NULL, worker_main, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!worker_running) {
		queue = NULL;
		pthread_mutex_unlock(&queue_lock);
		free(q);
		return 0;
	}
	if (++sessions == 0)
		sessions = 1;
	__atomic_store_n(&session, sessions, __ATOMIC_RELEASE);
	uint32_t s = session;
	pthread_mutex_unlock(&queue_lock);
	return s;
}

FC_HIDDEN void fc_records_close(void)
{
	pthread_mutex_lock(&queue_lock);
	__atomic_store_n(&session, 0, __ATOMIC_RELEASE);
	worker_stop = 1;
	int joinable = worker_running;
	worker_running = 0;
	pthread_mutex_unlock(&queue_lock);
	pthread_cond_broadcast(&queue_cond);
	if (joinable) {
		if (pthread_equal(worker, pthread_self()))
			pthread_detach(worker); /* closed from inside the client's callback */
		else
			pthread_join(worker, NULL);
	}
	if (!delivering)
		deliver(1);
	pthread_mutex_lock(&queue_lock);
	union record *q = queue;
	queue = NULL;
	queue_head = queue_tail = 0;
	dropped = 0;
	pthread_mutex_unlock(&queue_lock);
	free(q);
}

/* fork: the child has no worker; its records wait for a flush. The queue lock is taken around
 * fork so that the child's copy is consistent; the delivery lock may have been held by a thread
 * that does not exist in the child. */
static void before_fork(void) { pthread_mutex_lock(&queue_lock); }
static void after_fork_parent(void) { pthread_mutex_unlock(&queue_lock); }
static void after_fork_child(void)
{
	worker_running = 0;
	pthread_mutex_init(&deliver_lock, NULL);
	delivering = 0;
	pthread_mutex_unlock(&queue_lock);
}

__attribute__((constructor)) static void records_init(void)
{
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}
