/* What the files of the trace reader share (trace_reader.c decodes the file and its call
 * events, trace_gpu.c the GPU blocks, trace_stacks.c the stacks; trace_reader_util.c holds the
 * helpers below): not part of the reader's interface (trace_reader.h). */
#ifndef CUHOOK_TRACE_READER_IMPL_H
#define CUHOOK_TRACE_READER_IMPL_H

#include "trace_data.h"

/* A NUL-terminated copy of n bytes in the trace's arena, control characters replaced by '?';
 * NULL when out of memory. */
char *tr_arena_strndup(struct tr_trace *t, const void *src, size_t n);
/* Frees the arena (tr_close). */
void tr_arena_free(struct tr_trace *t);
/* Grow *arr (elements of size elt) so that index need - 1 fits; -1 when out of memory. */
int tr_grow(void **arr, uint32_t *cap, uint32_t need, size_t elt);
/* Count an error; the first few keep their message. */
void tr_add_error(struct tr_trace *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Pass 2 (the clock and every function are known): a GPU_SESSION block and a GPU block at file
 * offset off. Return 0, or -1 when out of memory; damage is counted, never fatal. */
int tr_gpu_session_block(struct tr_trace *t, const uint8_t *p, uint32_t size, uint64_t off);
int tr_gpu_block(struct tr_trace *t, const uint8_t *p, uint32_t size, uint64_t off);
/* After pass 2, once every call is matched: check the kernels' name ids and link the GPU
 * records to their calls (tr_gpu_link). 0, or -1 when out of memory. */
int tr_gpu_finish(struct tr_trace *t);
void tr_gpu_free(struct tr_trace *t);

/* Pass 2, call stacks (trace_stacks.c): a STACKS, PYFRAMES or MAPS block at file offset off, in
 * file order; the STACK record of call ci. Return 0, or -1 when out of memory; damage is counted,
 * never fatal. */
int tr_stacks_block(struct tr_trace *t, unsigned type, const uint8_t *p, uint32_t size, uint64_t off);
int tr_stack_record(struct tr_trace *t, uint32_t ci, uint32_t id);
void tr_stacks_free(struct tr_trace *t);

/* Streaming mode (trace_stream.c): t->stream_ set by tr_stream_init before decoding. The reader
 * takes a slot for each ENTRY (tr_stream_new_call: TR_NONE when out of memory), has the slot copy
 * its arguments once filled (tr_stream_opened), copies its DATA records (tr_stream_data), and hands each finished call over
 * (tr_stream_done, which frees the slot); a sink's failure is kept for pass 2 to see
 * (tr_stream_failed). tr_stream_finish drops the pool after decoding. */
struct tr_stream_sink;
int tr_stream_init(struct tr_trace *t, const struct tr_stream_sink *sink);
uint32_t tr_stream_new_call(struct tr_trace *t);
void tr_stream_opened(struct tr_trace *t, uint32_t ci);
void tr_stream_done(struct tr_trace *t, uint32_t ci);
/* A DATA record of open (or pending) call ci, copied into its slot: 0, or -1 when out of memory. */
int tr_stream_data(struct tr_trace *t, uint32_t ci, uint32_t func, int at_exit, unsigned nvalues,
                   const uint64_t *values, unsigned str_len);
int tr_stream_failed(const struct tr_trace *t);
/* The sink's begin (after pass 1): 0 read the events, 1 stop there, -1 failed. */
int tr_stream_begin(struct tr_trace *t);
struct tr_stream_skipped *tr_stream_skips(struct tr_trace *t);
void tr_stream_finish(struct tr_trace *t);
void tr_stream_free(struct tr_trace *t);

#endif
