#include "gpu_queue.h"

#include "to_writer.h"

#include <sys/mman.h>

static struct gpu_qblock *head;  /* newest first */
static uint64_t pending;         /* bytes of the blocks queued */
static uint64_t lost;

struct gpu_qblock *gpu_qblock_new(uint32_t kind, uint32_t gen, size_t cap)
{
	size_t len = (sizeof(struct gpu_qblock) + cap + 4095) & ~(size_t)4095;
	struct gpu_qblock *b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED)
		return NULL;
	b->map_len = len;
	b->kind = kind;
	b->gen = gen;
	b->cap = (uint32_t)(len - sizeof(*b));
	return b;
}

void gpu_qblock_free(struct gpu_qblock *b)
{
	munmap(b, b->map_len);
}

void gpu_queue_count_lost(uint64_t records)
{
	__atomic_add_fetch(&lost, records, __ATOMIC_RELAXED);
}

bool gpu_queue_push(struct gpu_qblock *b)
{
	if (__atomic_add_fetch(&pending, b->len, __ATOMIC_ACQ_REL) > GPU_QUEUE_MAX) {
		__atomic_sub_fetch(&pending, b->len, __ATOMIC_ACQ_REL);
		gpu_queue_count_lost(b->nrecords);
		gpu_qblock_free(b);
		return false;
	}
	struct gpu_qblock *old = __atomic_load_n(&head, __ATOMIC_RELAXED);
	do
		b->next = old;
	while (!__atomic_compare_exchange_n(&head, &old, b, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	writer_wake();
	return true;
}

struct gpu_qblock *gpu_queue_take(void)
{
	/* all of it at once: the producers only ever push, so no block is seen twice (no ABA) */
	struct gpu_qblock *b = __atomic_exchange_n(&head, NULL, __ATOMIC_ACQUIRE), *fifo = NULL;
	while (b) {
		struct gpu_qblock *next = b->next;
		__atomic_sub_fetch(&pending, b->len, __ATOMIC_ACQ_REL);
		b->next = fifo;
		fifo = b;
		b = next;
	}
	return fifo;
}

uint64_t gpu_queue_lost_take(void)
{
	return __atomic_exchange_n(&lost, 0, __ATOMIC_RELAXED);
}
