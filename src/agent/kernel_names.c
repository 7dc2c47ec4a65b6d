/* Kernel names asked of the driver, and the kernel nodes of executable graphs (kernel_names.h). */
#include "kernel_names.h"

#include "agent_log.h"
#include "agent_state.h"
#include "config.h"
#include "gpu_activity.h"
#include "hook_table.h"
#include "own_threads.h"
#include "trace_format.h"

#include <linux/futex.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct kn_slot kn_table[KN_SLOTS];
struct kn_slot kn_exec_table[KN_EXEC_SLOTS];
uint64_t kn_exec_table_full;
uint32_t kn_unload_seq;
uint32_t kn_pending;
uint64_t kn_table_full;

/* ---- which functions do what ------------------------------------------------------------- */

static const struct {
	const char *name;
	uint8_t role;
} roles[] = {
	{"cuLaunchKernel", KN_ROLE_FUNC_ARG0},
	{"cuLaunchKernel_ptsz", KN_ROLE_FUNC_ARG0},
	{"cuLaunchCooperativeKernel", KN_ROLE_FUNC_ARG0},
	{"cuLaunchCooperativeKernel_ptsz", KN_ROLE_FUNC_ARG0},
	{"cuLaunchKernelEx", KN_ROLE_FUNC_ARG1},
	{"cuLaunchKernelEx_ptsz", KN_ROLE_FUNC_ARG1},
	{"cuModuleUnload", KN_ROLE_UNLOAD},
	{"cuLibraryUnload", KN_ROLE_UNLOAD},
	{"cuGraphInstantiate_v2", KN_ROLE_GRAPH_INST},
	{"cuGraphInstantiateWithFlags", KN_ROLE_GRAPH_INST},
	{"cuGraphInstantiateWithParams", KN_ROLE_GRAPH_INST},
	{"cuGraphInstantiateWithParams_ptsz", KN_ROLE_GRAPH_INST},
	{"cuGraphExecUpdate", KN_ROLE_GRAPH_UPDATE},
	{"cuGraphExecUpdate_v2", KN_ROLE_GRAPH_UPDATE},
	{"cuGraphLaunch", KN_ROLE_GRAPH_LAUNCH},
	{"cuGraphLaunch_ptsz", KN_ROLE_GRAPH_LAUNCH},
};

uint8_t kernel_names_role(const char *name)
{
	for (unsigned i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
		if (!strcmp(roles[i].name, name))
			return roles[i].role;
	return KN_ROLE_NONE;
}

/* ---- the driver functions the agent calls -------------------------------------------------- */

typedef int (*get_name_fn)(const char **name, uint64_t handle);
typedef int (*get_nodes_fn)(uint64_t graph, uint64_t *nodes, size_t *count);
typedef int (*node_type_fn)(uint64_t node, int *type);
typedef int (*kernel_params_fn)(uint64_t node, void *params);

static struct {
	get_name_fn func_name, kernel_name;
	get_nodes_fn get_nodes;
	node_type_fn node_type;
	kernel_params_fn kernel_params;
} drv; /* each pointer stored once, atomically; NULL until found */

/* Where to call a driver function without going through its hook: its relocated prologue when
 * it has one (the same function: the first instructions, then a jump back into it), else its
 * own address (not patched). 0: not in a traced library. */
static uintptr_t untraced_entry(const char *name)
{
	uint32_t n = __atomic_load_n(&patch_count, __ATOMIC_ACQUIRE);
	for (uint32_t id = 0; id < n; id++) {
		const struct patch_site *hc = &patch_sites[id];
		if (!hc->name || strcmp(hc->name, name) != 0)
			continue;
		uint32_t lib = patch_sites[id].lib_id;
		bool traced_lib = false;
		for (unsigned i = 0; i < agent_nlibs; i++)
			if (agent_libs[i].lib_id == lib)
				traced_lib = !agent_libs[i].internal && !agent_libs[i].ioctl;
		if (!traced_lib)
			continue;
		uintptr_t r = hooks_hot[id].relocated;
		return r ? r : hc->addr;
	}
	return 0;
}

static void resolve_one(void *slot, const char *name)
{
	if (__atomic_load_n((uintptr_t *)slot, __ATOMIC_ACQUIRE))
		return;
	uintptr_t p = untraced_entry(name);
	if (p)
		__atomic_store_n((uintptr_t *)slot, p, __ATOMIC_RELEASE);
}

void kernel_names_resolve(void)
{
	resolve_one(&drv.func_name, "cuFuncGetName");
	resolve_one(&drv.kernel_name, "cuKernelGetName");
	resolve_one(&drv.get_nodes, "cuGraphGetNodes");
	resolve_one(&drv.node_type, "cuGraphNodeGetType");
	resolve_one(&drv.kernel_params, "cuGraphKernelNodeGetParams_v2");
}

/* ---- names: the thread, and its ring to the writer ---------------------------------------- */

#define NAME_MAX_BYTES 4096u       /* longer names are cut */
#define RING_BYTES (1u << 20)
/* An entry whose handle is 0 marks the end of the ring's lap: the next entry is at 0. */

static struct {
	uint8_t *buf;                /* RING_BYTES, mapped once */
	uint64_t head, tail;         /* bytes produced / consumed (the names thread / the writer) */
} ring;

static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER; /* between names threads only */
static uint32_t names_gen;       /* the current thread's generation; older ones leave */
static uint32_t names_wake;      /* futex word */
static unsigned names_poll_ms = 50;
static uint32_t file_gen, file_gen_seen; /* kernel_names_new_file() calls / as the thread saw */
static uint32_t seq_seen;        /* kn_unload_seq as the names thread last acted on it */
static uint32_t names_exiting;   /* the process exits (names_atexit) */
static uint64_t names_failed;    /* handles the driver named by neither query */
static int names_last_error;     /* the CUresult of the last refused cuFuncGetName */

static uint64_t hash_name(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
	return h | 1; /* never 0: 0 is "none given to this file" */
}

/* Room for one entry of `len` bytes at the ring's head; NULL when the writer has not taken
 * enough yet. */
static uint8_t *ring_room(size_t len)
{
	uint64_t tail = __atomic_load_n(&ring.tail, __ATOMIC_ACQUIRE);
	uint64_t pos = ring.head % RING_BYTES;
	if (pos + len + sizeof(struct cuhook_kname_entry) > RING_BYTES) {
		/* not enough before the end for this entry and an end marker after it */
		if (ring.head + (RING_BYTES - pos) + len - tail > RING_BYTES)
			return NULL;
		memset(ring.buf + pos, 0, sizeof(struct cuhook_kname_entry)); /* handle 0: the lap ends */
		__atomic_store_n(&ring.head, ring.head + (RING_BYTES - pos), __ATOMIC_RELEASE);
		pos = 0;
	}
	if (ring.head + len - tail > RING_BYTES)
		return NULL;
	return ring.buf + pos;
}

/* Ask the driver for one handle's name. 0 on success. */
static int query(uint64_t h, const char **name, uint8_t *kind)
{
	get_name_fn f = __atomic_load_n(&drv.func_name, __ATOMIC_ACQUIRE);
	get_name_fn k = __atomic_load_n(&drv.kernel_name, __ATOMIC_ACQUIRE);
	*name = NULL;
	int rc = f ? f(name, h) : -1;
	if (rc == 0 && *name) {
		*kind = CUHOOK_KNAME_FUNCTION;
		return 0;
	}
	names_last_error = rc;
	*name = NULL;
	if (k && k(name, h) == 0 && *name) {
		*kind = CUHOOK_KNAME_KERNEL;
		return 0;
	}
	return -1;
}

/* One pass over the table: the pending handles named. False when the ring to the writer is full
 * (the rest waits for the next pass). */
static bool name_pending(void)
{
	for (uint32_t i = 0; i < KN_SLOTS; i++) {
		struct kn_slot *s = &kn_table[i];
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != KN_PENDING)
			continue;
		uint64_t h = __atomic_load_n(&s->handle, __ATOMIC_RELAXED);
		uint32_t seq = __atomic_load_n(&kn_unload_seq, __ATOMIC_ACQUIRE);
		if (s->seq != seq) {
			/* an unload since the launch: the handle may be gone; its next launch re-arms it */
			__atomic_store_n(&s->state, KN_RETRY, __ATOMIC_RELEASE);
			continue;
		}
		if (__atomic_load_n(&names_exiting, __ATOMIC_ACQUIRE))
			return true;
		const char *name;
		uint8_t kind;
		int rc = query(h, &name, &kind);
		if (__atomic_load_n(&kn_unload_seq, __ATOMIC_ACQUIRE) != seq) {
			__atomic_store_n(&s->state, KN_RETRY, __ATOMIC_RELEASE); /* answered in doubt */
			continue;
		}
		if (rc != 0) {
			__atomic_add_fetch(&names_failed, 1, __ATOMIC_RELAXED);
			__atomic_store_n(&s->state, KN_DONE, __ATOMIC_RELEASE);
			continue;
		}
		size_t n = strnlen(name, NAME_MAX_BYTES);
		uint64_t nh = hash_name(name, n);
		if (nh != s->name_hash) {
			size_t len = CUHOOK_ALIGN8(sizeof(struct cuhook_kname_entry) + n);
			uint8_t *p = ring_room(len);
			if (!p) {
				__atomic_store_n(&kn_pending, 1, __ATOMIC_RELEASE); /* come back to it */
				return false;
			}
			struct cuhook_kname_entry e = {.handle = h, .name_len = (uint16_t)n, .kind = kind};
			memcpy(p, &e, sizeof(e));
			memcpy(p + sizeof(e), name, n);
			memset(p + sizeof(e) + n, 0, len - sizeof(e) - n);
			__atomic_store_n(&ring.head, ring.head + len, __ATOMIC_RELEASE);
			s->name_hash = nh;
		}
		__atomic_store_n(&s->state, KN_DONE, __ATOMIC_RELEASE);
	}
	return true;
}

/* Every named handle goes back to KN_RETRY: after an unload (the handle may now be another
 * kernel's) or for a new file (which must get every name again: forget what was given). */
static void retry_all(bool new_file)
{
	for (uint32_t i = 0; i < KN_SLOTS; i++) {
		struct kn_slot *s = &kn_table[i];
		uint32_t st = KN_DONE;
		__atomic_compare_exchange_n(&s->state, &st, KN_RETRY, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
		if (new_file)
			s->name_hash = 0;
	}
}

/* The process exits: no driver call from now on (the driver's own exit handlers may have torn
 * it down), and none still running when this returns (at most 100 ms waited for one). Registered
 * by the names thread before its first query, so after the driver's handlers, which run later. */
static bool atexit_done;

static void names_atexit(void)
{
	__atomic_store_n(&names_exiting, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 100; i++) {
		if (pthread_mutex_trylock(&names_lock) == 0) {
			pthread_mutex_unlock(&names_lock);
			return;
		}
		struct timespec t = {0, 1000000L};
		nanosleep(&t, NULL);
	}
}

/* ---- the names window ---------------------------------------------------------------------- */

/* An executable graph instantiated before tracing began has no listing, and the driver has no
 * call that lists an executable graph's nodes. Its kernels are named by the GPU instead: the
 * names thread opens a GPU session of its own (gpu_window_open: CUPTI's kernel records, each
 * linked to the cuGraphLaunch that submitted it), keeps it for window_ms after it opened and
 * after the last such graph was first seen launched, and closes it. The report names every
 * launch of that graph from the kernels of one launch the window saw (docs/agent.md). */
static const struct cuhook_config *names_cfg; /* the agent's configuration (lives as long) */
static struct {
	unsigned ms;            /* names_window=: 0, or gpu=1 records anyway: never opened */
	bool refused;           /* an open failed (no CUPTI, another user...): not tried again */
	bool on;
	uint64_t until_ns;      /* open until then, at least */
	uint64_t unlisted;      /* executable graphs launched without a listing (for the log) */
} win;

static bool exec_listed(uint64_t exec);

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The graphs launched since the last pass: those without a listing keep the window open. */
static void execs_pending(void)
{
	uint32_t fresh = 0;
	for (uint32_t i = 0; i < KN_EXEC_SLOTS; i++) {
		struct kn_slot *s = &kn_exec_table[i];
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != KN_PENDING)
			continue;
		if (!exec_listed(__atomic_load_n(&s->handle, __ATOMIC_RELAXED)))
			fresh++;
		__atomic_store_n(&s->state, KN_DONE, __ATOMIC_RELEASE);
	}
	if (!fresh || !win.ms || win.refused)
		return;
	win.unlisted += fresh;
	uint64_t until = now_ns() + (uint64_t)win.ms * 1000000u;
	if (!win.on) {
		agent_log(1, "names window: %u graph%s instantiated before tracing began launched: recording "
		          "the GPU's kernels for %u ms to name theirs", fresh, fresh == 1 ? "" : "s", win.ms);
		if (!gpu_window_open(names_cfg)) {
			gpu_window_close();
			win.refused = true;
			agent_log(1, "names window: no GPU records (see the GPU note): the kernels of graphs "
			          "instantiated before tracing began stay unnamed");
			return;
		}
		win.on = true;
		until = now_ns() + (uint64_t)win.ms * 1000000u; /* from the start, which took a while */
	}
	win.until_ns = until;
}

static void window_round(void)
{
	if (win.on && now_ns() >= win.until_ns) {
		gpu_window_close();
		win.on = false;
		agent_log(1, "names window closed: %llu graph%s instantiated before tracing began seen launched",
		          (unsigned long long)win.unlisted, win.unlisted == 1 ? "" : "s");
	}
}

static void names_round(void)
{
	uint32_t fg = __atomic_load_n(&file_gen, __ATOMIC_ACQUIRE);
	uint32_t seq = __atomic_load_n(&kn_unload_seq, __ATOMIC_ACQUIRE);
	if (fg != file_gen_seen || seq != seq_seen) {
		retry_all(fg != file_gen_seen);
		file_gen_seen = fg;
		seq_seen = seq;
	}
	window_round();
	if (__atomic_load_n(&names_exiting, __ATOMIC_ACQUIRE) || !__atomic_exchange_n(&kn_pending, 0, __ATOMIC_ACQ_REL))
		return;
	execs_pending();
	if (!atexit_done) {
		atexit_done = true;
		atexit(names_atexit);
	}
	if (!__atomic_load_n(&drv.func_name, __ATOMIC_ACQUIRE) && !__atomic_load_n(&drv.kernel_name, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&agent_lock);
		kernel_names_resolve();
		pthread_mutex_unlock(&agent_lock);
	}
	name_pending();
}

static uint32_t names_left; /* futex word: the generation of the last thread that left */

static void *names_main(void *arg)
{
	uint32_t me = (uint32_t)(uintptr_t)arg;
	own_thread_enter();
	thread_state_mark_internal(); /* whatever the driver calls through its hooks: not ours */
	while (__atomic_load_n(&names_gen, __ATOMIC_ACQUIRE) == me) {
		/* the wake word as it is before this round: a wake during it ends the wait at once */
		uint32_t wake = __atomic_load_n(&names_wake, __ATOMIC_ACQUIRE);
		pthread_mutex_lock(&names_lock);
		if (__atomic_load_n(&names_gen, __ATOMIC_ACQUIRE) == me)
			names_round();
		pthread_mutex_unlock(&names_lock);
		struct timespec t = {(time_t)(names_poll_ms / 1000), (long)(names_poll_ms % 1000) * 1000000L};
		if (__atomic_load_n(&names_gen, __ATOMIC_ACQUIRE) == me)
			syscall(SYS_futex, &names_wake, FUTEX_WAIT_PRIVATE, wake, &t, NULL, 0);
	}
	own_thread_leave(); /* while this id is still ours */
	__atomic_store_n(&names_left, me, __ATOMIC_RELEASE);
	syscall(SYS_futex, &names_left, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
	return NULL;
}

static bool names_running;

void kernel_names_prepare(const struct cuhook_config *c)
{
	names_poll_ms = c->flush_ms ? c->flush_ms : 50;
	names_cfg = c;
	/* read by the names thread under names_lock */
	pthread_mutex_lock(&names_lock);
	win.ms = c->gpu ? 0 : c->names_window_ms;
	win.refused = false;
	win.on = false; /* the last session's stop closed it */
	gpu_window_allow();
	pthread_mutex_unlock(&names_lock);
	if (!ring.buf) {
		void *p = mmap(NULL, RING_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return;
		ring.buf = p;
	}
	if (names_running)
		return;
	uint32_t gen = __atomic_add_fetch(&names_gen, 1, __ATOMIC_ACQ_REL);
	pthread_t t;
	if (own_thread_create(&t, names_main, (void *)(uintptr_t)gen, "cuhook-names") == 0)
		names_running = true;
}

void kernel_names_stop(bool wait)
{
	if (!names_running)
		return;
	/* It leaves at its next look (a thread inside a driver call leaves once it returns). */
	uint32_t old = __atomic_fetch_add(&names_gen, 1, __ATOMIC_ACQ_REL);
	__atomic_add_fetch(&names_wake, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &names_wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	names_running = false;
	/* With the program's threads running, a little while for it to be gone (off the agent's
	 * list of threads); never with them stopped: one of them may hold a driver lock it waits on. */
	for (int i = 0; wait && i < 20; i++) {
		uint32_t left = __atomic_load_n(&names_left, __ATOMIC_ACQUIRE);
		if (left == old)
			break;
		struct timespec t = {0, 10000000L};
		syscall(SYS_futex, &names_left, FUTEX_WAIT_PRIVATE, left, &t, NULL, 0);
	}
}

void kernel_names_after_fork_child(void)
{
	names_running = false;
	atexit_done = true; /* the parent's handler is the child's too */
	pthread_mutex_init(&names_lock, NULL);
}

/* ---- graphs -------------------------------------------------------------------------------- */

#define ARENA_BYTES (64u << 20)       /* reserved address space; pages come as used */
#define GRAPH_MAX_NODES (1u << 20)    /* nodes listed per graph at most */
#define CU_GRAPH_NODE_TYPE_KERNEL 0

/* An arena record: a ready word (its bytes, set last), then the entry and its kernels. */
static struct {
	uint8_t *base;
	uint64_t used;       /* bytes reserved (atomic) */
	uint64_t emitted;    /* the writer's: bytes given to the current file */
} arena;
static uint64_t graphs_unlisted;

/* CUDA_KERNEL_NODE_PARAMS_v2 (cuda.h): func, grid, block, shared memory, then pointers. */
struct kernel_node_params {
	uint64_t func;
	uint32_t grid[3], block[3], shared;
	uint32_t pad;
	uint64_t kernel_params, extra, kern, ctx;
};

uintptr_t kernel_names_graph(void *argp)
{
	const struct kn_graph_arg *a = argp;
	get_nodes_fn get_nodes = __atomic_load_n(&drv.get_nodes, __ATOMIC_ACQUIRE);
	node_type_fn node_type = __atomic_load_n(&drv.node_type, __ATOMIC_ACQUIRE);
	kernel_params_fn params = __atomic_load_n(&drv.kernel_params, __ATOMIC_ACQUIRE);
	size_t n = 0;
	if (!arena.base || !get_nodes || !node_type || !params || !a->exec || get_nodes(a->graph, NULL, &n) != 0) {
		__atomic_add_fetch(&graphs_unlisted, 1, __ATOMIC_RELAXED);
		return 0;
	}
	uint32_t flags = 0;
	if (n > GRAPH_MAX_NODES) {
		n = GRAPH_MAX_NODES;
		flags |= CUHOOK_GRAPH_TRUNCATED;
	}
	/* the nodes and the kernels found, in memory of this listing's own */
	size_t tmp_len = n * (sizeof(uint64_t) + sizeof(struct cuhook_graph_kernel)) + 4096;
	uint8_t *tmp = mmap(NULL, tmp_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (tmp == MAP_FAILED) {
		__atomic_add_fetch(&graphs_unlisted, 1, __ATOMIC_RELAXED);
		return 0;
	}
	uint64_t *nodes = (uint64_t *)tmp;
	struct cuhook_graph_kernel *k = (struct cuhook_graph_kernel *)(nodes + n);
	size_t got = n;
	uint32_t nk = 0;
	if (n && get_nodes(a->graph, nodes, &got) != 0)
		got = 0;
	if (got > n) {
		got = n;
		flags |= CUHOOK_GRAPH_TRUNCATED;
	}
	for (size_t i = 0; i < got; i++) {
		int type = -1;
		struct kernel_node_params p;
		memset(&p, 0, sizeof(p));
		if (node_type(nodes[i], &type) != 0 || type != CU_GRAPH_NODE_TYPE_KERNEL || params(nodes[i], &p) != 0)
			continue;
		struct cuhook_graph_kernel *e = &k[nk++];
		memset(e, 0, sizeof(*e));
		e->func = p.func ? p.func : p.kern;
		memcpy(e->grid, p.grid, sizeof(e->grid));
		memcpy(e->block, p.block, sizeof(e->block));
		e->shared = p.shared;
		kn_enqueue(e->func); /* valid now: the names thread names it */
	}
	size_t len = 8 + sizeof(struct cuhook_graph_entry) + nk * sizeof(struct cuhook_graph_kernel);
	uint64_t at = __atomic_fetch_add(&arena.used, len, __ATOMIC_ACQ_REL);
	if (at + len > ARENA_BYTES) {
		__atomic_add_fetch(&graphs_unlisted, 1, __ATOMIC_RELAXED);
		/* the arena ends here for good: what was reserved past it is never published */
	} else {
		uint8_t *p = arena.base + at;
		struct cuhook_graph_entry g = {a->exec, a->graph, (uint32_t)got, nk, flags, 0};
		memcpy(p + 8, &g, sizeof(g));
		memcpy(p + 8 + sizeof(g), k, nk * sizeof(*k));
		__atomic_store_n((uint64_t *)p, len, __ATOMIC_RELEASE);
	}
	munmap(tmp, tmp_len);
	return 0;
}

static void arena_map(void)
{
	if (arena.base)
		return;
	void *p = mmap(NULL, ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p != MAP_FAILED)
		__atomic_store_n(&arena.base, (uint8_t *)p, __ATOMIC_RELEASE);
}

/* Whether an executable graph has a listing (the names thread's; the arena only grows). */
static bool exec_listed(uint64_t exec)
{
	if (!arena.base)
		return false;
	uint64_t used = __atomic_load_n(&arena.used, __ATOMIC_ACQUIRE);
	for (uint64_t at = 0; at + 8 + sizeof(struct cuhook_graph_entry) <= used && at + 8 <= ARENA_BYTES;) {
		uint64_t len = __atomic_load_n((const uint64_t *)(arena.base + at), __ATOMIC_ACQUIRE);
		if (!len)
			return false; /* reserved, not published yet: a listing under way (not this one's) */
		struct cuhook_graph_entry g;
		memcpy(&g, arena.base + at + 8, sizeof(g));
		if (g.exec == exec)
			return true;
		at += len;
	}
	return false;
}

/* ---- the writer's side --------------------------------------------------------------------- */

void kernel_names_new_file(void)
{
	arena_map();
	arena.emitted = 0;
	__atomic_add_fetch(&file_gen, 1, __ATOMIC_ACQ_REL);
}

/* The names in the ring, [tail, head): at most one lap's end inside, so two blocks at most. */
static void put_names(kn_put_fn put)
{
	if (!ring.buf)
		return;
	uint64_t head = __atomic_load_n(&ring.head, __ATOMIC_ACQUIRE);
	while (ring.tail < head) {
		uint64_t pos = ring.tail % RING_BYTES, end = pos, stop = pos + (head - ring.tail);
		uint32_t count = 0;
		bool lap = false;
		while (end < stop && end < RING_BYTES) {
			const struct cuhook_kname_entry *e = (const struct cuhook_kname_entry *)(ring.buf + end);
			if (!e->handle) {
				lap = true;
				break;
			}
			end += CUHOOK_ALIGN8(sizeof(*e) + e->name_len);
			count++;
		}
		if (count) {
			struct cuhook_knames_block b = {count, 0};
			put(CUHOOK_BLOCK_KNAMES, &b, sizeof(b), ring.buf + pos, end - pos);
		}
		uint64_t taken = lap ? RING_BYTES - pos : end - pos;
		__atomic_store_n(&ring.tail, ring.tail + taken, __ATOMIC_RELEASE);
		if (!taken)
			break;
	}
}

/* One GRAPHS block per graph (graphs are few; an entry is written as listed, without its ready
 * word). */
static void put_graphs(kn_put_fn put)
{
	if (!arena.base)
		return;
	uint64_t used = __atomic_load_n(&arena.used, __ATOMIC_ACQUIRE);
	if (used > ARENA_BYTES)
		used = ARENA_BYTES;
	while (arena.emitted + 8 <= used) {
		uint8_t *p = arena.base + arena.emitted;
		uint64_t len = __atomic_load_n((uint64_t *)p, __ATOMIC_ACQUIRE);
		if (!len)
			break; /* reserved, not yet filled: the next round */
		struct cuhook_graphs_block b = {1, 0};
		put(CUHOOK_BLOCK_GRAPHS, &b, sizeof(b), p + 8, len - 8);
		arena.emitted += len;
	}
}

void kernel_names_put(kn_put_fn put)
{
	put_names(put);
	put_graphs(put);
}

void kernel_names_losses(uint64_t *table_full, uint64_t *unlisted, uint64_t *failed, int *last_error)
{
	*table_full = __atomic_load_n(&kn_table_full, __ATOMIC_RELAXED) +
	              __atomic_load_n(&kn_exec_table_full, __ATOMIC_RELAXED);
	*unlisted = __atomic_load_n(&graphs_unlisted, __ATOMIC_RELAXED);
	*failed = __atomic_load_n(&names_failed, __ATOMIC_RELAXED);
	*last_error = __atomic_load_n(&names_last_error, __ATOMIC_RELAXED);
}
