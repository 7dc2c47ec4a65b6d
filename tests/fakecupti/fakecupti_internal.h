/* Shared by the stand-in libcupti's files (README.md describes it):
 *   cupti_api.c      the exported CUPTI functions and the settings they make
 *   records.c        the record queue, the client's buffers, the worker thread, flushes, drops
 *   driver_events.c  the profiler attached to the stand-in libcuda: its calls become records
 *   names.c          name tables generated from the toolkit's headers (gen_names.py) */
#ifndef FAKECUPTI_INTERNAL_H
#define FAKECUPTI_INTERNAL_H

#include <cupti.h>
#include <stddef.h>
#include <stdint.h>

#include "fakecuda_profiler.h"

#define FC_HIDDEN __attribute__((visibility("hidden")))
#define FC_EXPORT __attribute__((visibility("default")))

/* ---- cupti_api.c: settings the recording path reads (relaxed atomics) ---------------------- */
enum fc_work_kind { FC_KERNEL, FC_MEMCPY, FC_MEMSET, FC_WORK_KINDS };
FC_HIDDEN extern uint8_t fc_work_on[FC_WORK_KINDS];
FC_HIDDEN extern uint8_t fc_cbid_on[CUPTI_DRIVER_TRACE_CBID_SIZE];
FC_HIDDEN extern uint8_t fc_cbid_applied[CUPTI_DRIVER_TRACE_CBID_SIZE]; /* cupti_api.c */
FC_HIDDEN extern uint8_t fc_per_cbid;
FC_HIDDEN extern uint8_t fc_driver_kind_late; /* KIND_DRIVER was enabled after cuInit */
FC_HIDDEN extern uint8_t fc_runtime_on;       /* KIND_RUNTIME */
/* Now on the client's clock: its timestamp callback, else CLOCK_REALTIME ns. */
FC_HIDDEN uint64_t fc_now(void);
/* The calling thread's id as cuptiSetThreadIdType says. */
FC_HIDDEN uint32_t fc_thread_id(void);

/* ---- records.c ----------------------------------------------------------------------------- */
/* Starts a session: the queue and the worker thread. Its id (never 0), or 0 when out of memory
 * or threads. */
FC_HIDDEN uint32_t fc_records_open(void);
/* Ends it: no record is queued from now on; what was queued is delivered to the client (if it
 * registered buffer callbacks), the worker joined, the queue freed. */
FC_HIDDEN void fc_records_close(void);
/* The current session (0: none), read without a lock: a hint, fc_push checks again. */
FC_HIDDEN uint32_t fc_session_now(void);
/* Queues a copy of one record of session `session` (ignored if it is not the current one);
 * counted as dropped if the queue is full. */
FC_HIDDEN void fc_push(uint32_t session, const void *record, size_t size);
FC_HIDDEN void fc_set_buffer_callbacks(CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc done);
FC_HIDDEN CUptiResult fc_flush(void);
/* Records dropped since the last call; resets the count. */
FC_HIDDEN size_t fc_take_dropped(void);
/* The size of a record of that kind in a buffer, 0 for a kind the stand-in never writes. */
FC_HIDDEN size_t fc_record_size(CUpti_ActivityKind kind);

/* ---- driver_events.c ----------------------------------------------------------------------- */
FC_HIDDEN extern const struct fakecuda_profiler fc_driver_profiler;
/* Forgets the simulated GPU's streams (a new session starts on an idle GPU). */
FC_HIDDEN void fc_gpu_reset(void);

/* ---- names.c (generated) ------------------------------------------------------------------- */
FC_HIDDEN extern const char *const fc_driver_cbid_names[CUPTI_DRIVER_TRACE_CBID_SIZE];
FC_HIDDEN extern const char *const fc_runtime_cbid_names[CUPTI_RUNTIME_TRACE_CBID_SIZE];
FC_HIDDEN const char *fc_result_name(CUptiResult r);

#endif
