/* Per-thread state and rings (thread_state.h).
 *
 * A thread's first traced call creates its state here, and that call may come from anywhere: a
 * signal handler that interrupted malloc, or the thread's own pthread_exit. So nothing here takes
 * a lock or calls a libc function that allocates or locks (malloc's arena lock, the loader's,
 * glibc's per-thread lock): a handler waiting for a lock its own thread holds waits forever.
 * What it does use: mmap and madvise, gettid, prctl (system calls); lock-free lists; and the
 * thread descriptor glibc keeps at the thread pointer (read, never written).
 *
 * - Memory: a thread's state and ring live in one anonymous mapping, mapped on its first call
 *   or reused from a thread that is gone. The registry of rings is a list that threads push onto
 *   with a compare-and-swap and that nobody unlinks from; a ring is reused by claiming it
 *   (FREE -> CLAIMED, a compare-and-swap on its state).
 * - Thread exit: noticed by the writer (an idle ring whose thread no longer exists), not by a
 *   pthread key destructor: pthread_setspecific allocates for keys past the first 32.
 * - Stack bounds: the stack-argument reads and the longjmp logic of record.c need this
 *   thread's stack. pthread_getattr_np, which says it, allocates (and for the main thread reads
 *   /proc/self/maps with stdio). Here each thread reads them from its glibc thread descriptor,
 *   where they are kept since the thread was made (stackblock, stackblock_size, guardsize): the
 *   offset of that triple is learnt once per process, off the traced path, by matching
 *   pthread_getattr_np's answer for a live thread (the writer) against its descriptor, so it
 *   follows glibc's layout instead of assuming one. The main thread has no stackblock there
 *   (NULL); its bounds are learnt at the same time, the way glibc computes them. Where the
 *   offset cannot be learnt (not glibc, a layout that does not match), bounds are unknown:
 *   stack arguments are then read only up to the end of the current page, and the longjmp
 *   pruning is off, which is safe, only less precise. */
#include "thread_state.h"
#include "clock_read.h"

#include "agent_log.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

#define PAGE 4096u
#define PAGE_UP(x) (((x) + PAGE - 1) & ~(uint64_t)(PAGE - 1))

__thread struct thread_state *cuhook_tls __attribute__((tls_model("initial-exec")));
__thread struct ring *cuhook_tls_ring __attribute__((tls_model("initial-exec")));
uint32_t thread_ring_bytes = 1u << 20;

/* A thread's state and ring, in one mapping; the ring's data follows at the next page. */
struct thread_block {
	struct thread_state ts;
	struct ring ring;
};
#define BLOCK_HEADER PAGE_UP(sizeof(struct thread_block))

static struct ring *rings; /* newest first; pushed with a CAS, never unlinked */

/* Learnt by thread_stacks_learn: where glibc keeps a thread's stack in its descriptor (0:
 * unknown), and the main thread's stack. */
static size_t desc_stack_off;
static uintptr_t main_stack_lo, main_stack_hi;

/* Fault in [p, p + len) writable. MADV_POPULATE_WRITE keeps what the pages hold; without it
 * (before Linux 5.14) each page gets an atomic add of 0, which a concurrent writer of the same
 * word cannot lose. */
static void populate(uint8_t *p, uint64_t len)
{
	if (len == 0 || madvise(p, len, MADV_POPULATE_WRITE) == 0)
		return;
	for (uint64_t o = 0; o < len; o += PAGE)
		__atomic_fetch_add((uint64_t *)(p + o), 0, __ATOMIC_RELAXED);
}

static struct thread_block *block_of(struct ring *r)
{
	return (struct thread_block *)((uint8_t *)r - offsetof(struct thread_block, ring));
}

/* A free block whose ring has the wanted size, taken from the registry. */
static struct thread_block *claim(uint32_t size)
{
	for (struct ring *r = __atomic_load_n(&rings, __ATOMIC_ACQUIRE); r; r = r->next) {
		uint32_t want = RING_FREE;
		if (r->size == size && __atomic_load_n(&r->state, __ATOMIC_RELAXED) == RING_FREE &&
		    __atomic_compare_exchange_n(&r->state, &want, RING_CLAIMED, false, __ATOMIC_ACQUIRE,
		                                __ATOMIC_RELAXED))
			return block_of(r);
	}
	return NULL;
}

/* A new block: only the headers and the ring's first part are populated (thread_state.h). */
static struct thread_block *map_block(uint32_t size)
{
	uint8_t *m = mmap(NULL, BLOCK_HEADER + size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	uint64_t first = size < RING_POPULATE_MIN ? size : RING_POPULATE_MIN;
	populate(m, BLOCK_HEADER + first);
	struct thread_block *b = (struct thread_block *)m;
	b->ring.size = size;
	b->ring.data = m + BLOCK_HEADER;
	b->ring.populated = first;
	b->ring.state = RING_CLAIMED;
	return b;
}

static void publish(struct ring *r)
{
	struct ring *head = __atomic_load_n(&rings, __ATOMIC_RELAXED);
	do
		r->next = head;
	while (!__atomic_compare_exchange_n(&rings, &head, r, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

/* The ring as new (what the memory holds beyond the headers is overwritten before it is read). */
static void ring_reset(struct ring *r, uint32_t tid)
{
	uint32_t size = r->size;
	uint8_t *data = r->data;
	uint64_t populated = r->populated;
	struct ring *next = r->next;
	memset(r, 0, sizeof(*r));
	r->size = size;
	r->data = data;
	r->populated = populated;
	r->next = next;
	r->tid = tid;
	/* RING_SEGS segments of at least RING_SEG_MIN bytes (the ring is a power of two, >= 64 KiB) */
	uint32_t shift = 12;
	while ((1u << shift) < RING_SEG_MIN || (size >> shift) > RING_SEGS)
		shift++;
	r->seg_shift = shift;
	r->epoch = UINT32_MAX; /* none yet: the first record writes a TIME record */
	r->state = RING_CLAIMED;
	prctl(PR_GET_NAME, r->name);
}

/* This thread's stack from its glibc descriptor (see the top of this file); 0, 0 if unknown. */
static void stack_bounds(struct thread_state *ts)
{
	ts->stack_lo = ts->stack_hi = 0;
	size_t off = __atomic_load_n(&desc_stack_off, __ATOMIC_ACQUIRE);
	if (!off)
		return;
	const uintptr_t *w = (const uintptr_t *)((uintptr_t)pthread_self() + off);
	uintptr_t block = w[0], block_size = w[1], guard = w[2];
	if (!block) { /* glibc's initial thread */
		ts->stack_lo = main_stack_lo;
		ts->stack_hi = main_stack_hi;
	} else if (guard < block_size && block + block_size > block) {
		ts->stack_lo = block + guard;
		ts->stack_hi = block + block_size;
	}
}

uintptr_t thread_state_create(void *unused)
{
	(void)unused;
	/* While this thread's state is being made, calls it makes into hooked functions (libc, when
	 * a user hooks libc) see a busy state and pass straight through instead of recursing. */
	static struct thread_state creating = {.busy = 1, .no_record = 1};
	int saved_errno = errno;
	cuhook_tls = &creating;
	uint32_t size = thread_ring_bytes;
	struct thread_block *b = claim(size);
	bool fresh = !b;
	if (fresh && !(b = map_block(size))) {
		/* out of memory: pass this thread's calls through, never fail them */
		cuhook_tls = NULL;
		errno = saved_errno;
		return 0;
	}
	struct thread_state *ts = &b->ts;
	memset(ts, 0, offsetof(struct thread_state, shadow));
	ts->tid = (uint32_t)gettid();
	stack_bounds(ts);
	ring_reset(&b->ring, ts->tid);
	ts->ring = &b->ring;
	/* The writer reads a ring only when it is LIVE, and only after this store. */
	__atomic_store_n(&b->ring.state, RING_LIVE, __ATOMIC_RELEASE);
	if (fresh)
		publish(&b->ring);
	cuhook_tls = ts;
	cuhook_tls_ring = ts->ring;
	errno = saved_errno;
	return (uintptr_t)ts;
}

void thread_state_mark_internal(void)
{
	if (cuhook_tls) {
		/* A thread that made traced calls already (a CUPTI thread, gpu_activity.c): from now
		 * on it records nothing, and counts nothing (the count thunks find no ring). */
		cuhook_tls_ring = NULL;
		__atomic_store_n(&cuhook_tls->no_record, 1, __ATOMIC_RELAXED);
		return;
	}
	struct thread_state *ts = mmap(NULL, sizeof(*ts), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ts == MAP_FAILED)
		return;
	ts->no_record = 1;
	ts->tid = (uint32_t)gettid();
	cuhook_tls = ts;
}

struct ring *thread_rings(void)
{
	return __atomic_load_n(&rings, __ATOMIC_ACQUIRE);
}

bool thread_ring_owner_gone(struct ring *r)
{
	return syscall(SYS_tgkill, getpid(), r->tid, 0) != 0 && errno == ESRCH;
}

void thread_ring_recycle(struct ring *r)
{
	__atomic_store_n(&r->state, RING_FREE, __ATOMIC_RELEASE);
}

void thread_rings_populate(void)
{
	for (struct ring *r = thread_rings(); r; r = r->next) {
		uint64_t pop = __atomic_load_n(&r->populated, __ATOMIC_RELAXED);
		if (pop >= r->size || __atomic_load_n(&r->state, __ATOMIC_ACQUIRE) != RING_LIVE)
			continue;
		uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		uint64_t want = head >= r->size ? r->size : PAGE_UP(head + 2 * ring_populate_ahead(head));
		if (want > r->size)
			want = r->size;
		if (want <= pop)
			continue;
		populate(r->data + pop, want - pop);
		__atomic_store_n(&r->populated, want, __ATOMIC_RELEASE);
	}
}

/* ---- learning where the stacks are (off the traced path) ------------------------------------ */

/* The main thread's stack as glibc's pthread_getattr_np computes it: up to the page after
 * __libc_stack_end, down by RLIMIT_STACK, but not below the end of the mapping under it. Read
 * from /proc/self/maps with plain system calls. */
static void learn_main_stack(void)
{
	void **end_sym = dlsym(RTLD_DEFAULT, "__libc_stack_end");
	struct rlimit rl;
	if (!end_sym || !*end_sym || getrlimit(RLIMIT_STACK, &rl) != 0)
		return;
	uintptr_t stack_end = ((uintptr_t)*end_sym & ~(uintptr_t)(PAGE - 1)) + PAGE;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	char buf[4096];
	size_t have = 0;
	uintptr_t last_to = 0;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = 0;
		char *line = buf, *nl;
		while ((nl = strchr(line, '\n'))) {
			*nl = 0;
			char *dash;
			uintptr_t from = strtoull(line, &dash, 16);
			uintptr_t to = *dash == '-' ? strtoull(dash + 1, NULL, 16) : 0;
			if (from <= (uintptr_t)*end_sym && (uintptr_t)*end_sym < to) {
				uintptr_t size = rl.rlim_cur - (to - stack_end);
				size &= ~(uintptr_t)(PAGE - 1);
				if (size > stack_end - last_to)
					size = stack_end - last_to;
				main_stack_lo = stack_end - size;
				main_stack_hi = stack_end;
				close(fd);
				return;
			}
			last_to = to;
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1)
			have = 0; /* a line longer than the buffer: not one of the addresses' lines */
	}
	close(fd);
}

void thread_stacks_learn(pthread_t other)
{
	if (__atomic_load_n(&desc_stack_off, __ATOMIC_ACQUIRE))
		return; /* once per process (a fork child keeps its parent's) */
	pthread_attr_t a;
	void *addr;
	size_t size;
	if (pthread_getattr_np(other, &a) != 0)
		return;
	int rc = pthread_attr_getstack(&a, &addr, &size);
	pthread_attr_destroy(&a);
	if (rc != 0)
		return;
	/* glibc puts a thread's descriptor at the top of the stack block it maps for it, and
	 * reports the stack as [stackblock + guardsize, stackblock + stackblock_size) (before 2.27:
	 * from stackblock). Find that triple in the descriptor. */
	uintptr_t lo = (uintptr_t)addr, hi = lo + size, desc = (uintptr_t)other;
	if (desc <= lo || desc >= hi)
		return;
	const uintptr_t *w = (const uintptr_t *)desc;
	size_t n = (hi - desc) / sizeof(*w);
	if (n > 4096 / sizeof(*w))
		n = 4096 / sizeof(*w);
	for (size_t i = 1; i + 2 < n; i++) {
		if (w[i] && w[i] + w[i + 1] == hi && w[i + 2] < w[i + 1] &&
		    (w[i] + w[i + 2] == lo || w[i] == lo)) {
			learn_main_stack();
			__atomic_store_n(&desc_stack_off, i * sizeof(*w), __ATOMIC_RELEASE);
			agent_log(0, "thread stacks: at offset %zu of glibc's thread descriptor; main thread "
			          "0x%lx-0x%lx", i * sizeof(*w), (unsigned long)main_stack_lo,
			          (unsigned long)main_stack_hi);
			return;
		}
	}
	agent_log(1, "thread stacks not found in the thread descriptor (not glibc's layout): stack "
	          "arguments are read up to the end of their page only, and frames left by longjmp are "
	          "noticed less");
}

void thread_state_after_fork_child(void)
{
	/* Only the forking thread exists in the child. The rings of the parent's threads are the
	 * parent's to write: forget them (their memory is a copy). */
	rings = NULL;
	/* The forking thread goes on here with its state (it may even be inside traced calls, whose
	 * returns its shadow stack knows): its ring is registered again, under its new tid, so that
	 * a writer the child starts (follow) drains what it records. What the ring holds is the
	 * parent's; a new session forgets it (writer_start). */
	struct thread_state *ts = cuhook_tls;
	if (ts && ts->ring) {
		ts->tid = (uint32_t)gettid();
		ts->ring->tid = ts->tid;
		ts->ring->state = RING_LIVE;
		ts->ring->dropped = 0; /* the parent's to report */
		ts->ring->dropped_total = 0;
		ts->ring->next = NULL;
		rings = ts->ring;
	}
}

/* The outermost level of ts's shadow stack that is a call of a function `interesting` picks
 * (recorded_only: whose ENTRY was recorded), or -1. Reads another thread's shadow stack without
 * its consent: every load atomic, what it sees may be stale by the time it is used. */
static int first_call_open(struct thread_state *ts, bool (*interesting)(uint32_t hook_id), bool recorded_only)
{
	uint32_t d = __atomic_load_n(&ts->depth, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < d && i < SHADOW_MAX; i++)
		if ((!recorded_only || !__atomic_load_n(&ts->shadow[i].unrecorded, __ATOMIC_RELAXED)) &&
		    interesting(__atomic_load_n(&ts->shadow[i].id, __ATOMIC_RELAXED)))
			return (int)i;
	return -1;
}

/* Not the traced path (first_call_open); only a thread that left the call, or went deeper and
 * came back, is taken as done. */
int thread_calls_wait_left(bool (*interesting)(uint32_t hook_id), int max_ms)
{
	enum { MAXW = 256 };
	struct { struct thread_state *ts; uint32_t level; } w[MAXW];
	int n = 0;
	for (struct ring *r = thread_rings(); r && n < MAXW; r = r->next) {
		if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) != RING_LIVE)
			continue;
		struct thread_state *ts = &block_of(r)->ts;
		int level = first_call_open(ts, interesting, false);
		if (level >= 0) {
			w[n].ts = ts;
			w[n++].level = (uint32_t)level;
		}
	}
	struct timespec nap = {0, 200000};
	uint64_t deadline = monotonic_ns() + (uint64_t)max_ms * 1000000u;
	int left = n;
	while (left) {
		left = 0;
		for (int i = 0; i < n; i++)
			left += __atomic_load_n(&w[i].ts->depth, __ATOMIC_ACQUIRE) > w[i].level;
		if (!left)
			break;
		if (monotonic_ns() >= deadline)
			break;
		nanosleep(&nap, NULL);
	}
	return left;
}

int thread_recorded_calls_open(bool (*interesting)(uint32_t hook_id))
{
	int n = 0;
	for (struct ring *r = thread_rings(); r; r = r->next) {
		if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) != RING_LIVE)
			continue;
		n += first_call_open(&block_of(r)->ts, interesting, true) >= 0;
	}
	return n;
}
