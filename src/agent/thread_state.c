#include "thread_state.h"

#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

__thread struct thread_state *cuhook_tls __attribute__((tls_model("initial-exec")));
__thread struct ring *cuhook_tls_ring __attribute__((tls_model("initial-exec")));
uint32_t thread_ring_bytes = 1u << 20;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* slow paths only */
static struct ring *rings;            /* registry, newest first; read lock-free by the writer */
static struct ring *free_rings;       /* drained rings of exited threads */
static struct thread_state *free_states;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void *map(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* Thread exit (pthread key destructor): the ring goes to the writer to drain; the state is
 * reused only if no traced call of this thread is still on its stack. */
static void on_thread_exit(void *p)
{
	struct thread_state *ts = p;
	if (cuhook_tls != ts)
		return;
	cuhook_tls = NULL;
	cuhook_tls_ring = NULL; /* no count lands in the ring once the writer may take it as final */
	if (ts->ring)
		__atomic_store_n(&ts->ring->dead, 1, __ATOMIC_RELEASE);
	if (ts->depth == 0) {
		pthread_mutex_lock(&lock);
		ts->next_free = free_states;
		free_states = ts;
		pthread_mutex_unlock(&lock);
	}
}

static void make_key(void)
{
	pthread_key_create(&exit_key, on_thread_exit);
}

static struct ring *ring_get(uint32_t tid)
{
	pthread_mutex_lock(&lock);
	struct ring **pp = &free_rings;
	while (*pp && (*pp)->size != thread_ring_bytes)
		pp = &(*pp)->next;
	struct ring *r = *pp;
	if (r)
		*pp = r->next;
	pthread_mutex_unlock(&lock);
	if (!r) {
		/* Populated now, in the thread's first call, rather than one page fault at a time in
		 * later calls. */
		void *m = mmap(NULL, sizeof(struct ring) + thread_ring_bytes, PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		r = m == MAP_FAILED ? NULL : m;
		if (!r)
			return NULL;
		r->size = thread_ring_bytes;
		r->data = (uint8_t *)(r + 1);
	}
	uint32_t size = r->size;
	uint8_t *data = r->data;
	memset(r, 0, sizeof(*r));
	r->size = size;
	r->data = data;
	r->tid = tid;
	prctl(PR_GET_NAME, r->name);
	/* Publish: the writer may walk the list at any time. */
	pthread_mutex_lock(&lock);
	r->next = rings;
	__atomic_store_n(&rings, r, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&lock);
	return r;
}

static void stack_bounds(struct thread_state *ts)
{
	pthread_attr_t a;
	void *addr;
	size_t size;
	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return;
	if (pthread_attr_getstack(&a, &addr, &size) == 0) {
		ts->stack_lo = (uintptr_t)addr;
		ts->stack_hi = (uintptr_t)addr + size;
	}
	pthread_attr_destroy(&a);
}

uintptr_t thread_state_create(void *unused)
{
	(void)unused;
	/* While this thread's state is being made, calls it makes into hooked functions (libc, when
	 * a user hooks libc) see a busy state and pass straight through instead of recursing. */
	static struct thread_state creating = {.busy = 1, .no_record = 1};
	cuhook_tls = &creating;
	pthread_once(&key_once, make_key);
	pthread_mutex_lock(&lock);
	struct thread_state *ts = free_states;
	if (ts)
		free_states = ts->next_free;
	pthread_mutex_unlock(&lock);
	if (!ts && !(ts = map(sizeof(*ts)))) {
		cuhook_tls = NULL;
		return 0;
	}
	memset(ts, 0, offsetof(struct thread_state, shadow));
	ts->tid = (uint32_t)gettid();
	stack_bounds(ts);
	ts->ring = ring_get(ts->tid);
	if (!ts->ring) {
		ts->no_record = 1; /* out of memory: pass calls through, never fail them */
	}
	cuhook_tls = ts;
	cuhook_tls_ring = ts->no_record ? NULL : ts->ring;
	pthread_setspecific(exit_key, ts);
	return (uintptr_t)ts;
}

void thread_state_mark_internal(void)
{
	struct thread_state *ts = map(sizeof(*ts));
	if (!ts)
		return;
	ts->no_record = 1;
	ts->tid = (uint32_t)gettid();
	cuhook_tls = ts;
}

struct ring *thread_rings(void)
{
	return __atomic_load_n(&rings, __ATOMIC_ACQUIRE);
}

bool thread_ring_try_recycle(struct ring *r)
{
	if (pthread_mutex_trylock(&lock) != 0)
		return false;
	struct ring **pp = &rings;
	while (*pp && *pp != r)
		pp = &(*pp)->next;
	if (*pp)
		*pp = r->next;
	r->next = free_rings;
	free_rings = r;
	pthread_mutex_unlock(&lock);
	return true;
}

void thread_state_after_fork_child(void)
{
	/* Only the forking thread exists in the child. The rings of the parent's threads are the
	 * parent's to write: forget them (their memory is a copy). The lock may have been held by a
	 * thread that does not exist here. */
	pthread_mutex_init(&lock, NULL);
	rings = NULL;
	free_rings = NULL;
	free_states = NULL;
	/* The forking thread goes on here with its state (it may even be inside traced calls, whose
	 * returns its shadow stack knows): its ring is registered again, under its new tid, so that
	 * a writer the child starts (follow) drains what it records. What the ring holds is the
	 * parent's; a new trace forgets it (writer_open). */
	struct thread_state *ts = cuhook_tls;
	if (ts && ts->ring) {
		ts->tid = (uint32_t)gettid();
		ts->ring->tid = ts->tid;
		ts->ring->dead = 0;
		ts->ring->dropped = 0; /* the parent's to report */
		ts->ring->dropped_total = 0;
		ts->ring->next = NULL;
		rings = ts->ring;
	}
}
