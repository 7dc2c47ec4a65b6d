/* GPU blocks on their way from CUPTI's threads to the writer (writer.c): the GPU records of a
 * CUPTI buffer, and the GPU_SESSION blocks of a session's start and end.
 *
 * Producers (CUPTI's threads, the thread that flushes CUPTI, gpu_activity.c) push whole blocks;
 * the writer takes everything at each round. Neither side takes a lock or calls malloc: a
 * block is a mapping of its own (mmap/munmap are system calls), the queue a lock-free list. The
 * writer may drain it while every other thread of the process is stopped (cuhook_agent_stop
 * under cuhook attach), a producer among them. Bounded: a push that would make the queue hold
 * more than GPU_QUEUE_MAX bytes is refused, and its records counted as lost (said in a NOTE
 * after the session's STOPPED block), never silently gone. */
#ifndef CUHOOK_GPU_QUEUE_H
#define CUHOOK_GPU_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GPU_QUEUE_MAX (256u << 20)

enum gpu_qkind {
	GPU_Q_RECORDS = 1, /* data: GPU records (trace_format.h), nrecords of them */
	GPU_Q_SESSION = 2, /* data: struct cuhook_gpu_session_block + CUPTI's path */
};

struct gpu_qblock {
	struct gpu_qblock *next;
	size_t map_len;     /* the mapping's size */
	uint32_t kind;      /* enum gpu_qkind */
	uint32_t gen;       /* the session it belongs to (gpu_activity.h): a block of another one
	                       is dropped by the writer */
	uint32_t nrecords;
	uint32_t len;       /* bytes of data in use */
	uint32_t cap;       /* bytes of data there is room for */
	uint32_t reserved;
	_Alignas(8) uint8_t data[];
};

/* A new, empty block with room for cap bytes of data; NULL when memory ran out. */
struct gpu_qblock *gpu_qblock_new(uint32_t kind, uint32_t gen, size_t cap);
void gpu_qblock_free(struct gpu_qblock *b);

/* Hand b to the writer (and wake it). False when the queue is full: b is freed and its records
 * are counted as lost. */
bool gpu_queue_push(struct gpu_qblock *b);

/* Writer: every block queued so far, oldest first (a list through ->next), or NULL. */
struct gpu_qblock *gpu_queue_take(void);

/* GPU records lost since the last call (a full queue, and what the writer could not write:
 * gpu_queue_count_lost); the count is reset. */
uint64_t gpu_queue_lost_take(void);
void gpu_queue_count_lost(uint64_t records);

#endif
