/* The part of CUPTI's interface the agent uses, as CUPTI 13 defines it (cupti_activity.h,
 * cupti_callbacks.h, cupti_result.h, cupti_version.h of the CUDA 13.0 toolkit): the functions
 * it looks up with dlsym, the constants it passes, and the activity records it reads, laid out
 * byte for byte. Declared here, not included, so that the agent builds without a CUDA toolkit;
 * tests/unit/test_cupti_abi.c checks every offset and size against the toolkit's headers
 * wherever they are installed. The agent loads a CUPTI only when cuptiGetVersion() says it is
 * of this major version (CUPTI_ABI_MAJOR): records of another one may be laid out otherwise. */
#ifndef CUHOOK_CUPTI_ABI_H
#define CUHOOK_CUPTI_ABI_H

#include <stddef.h>
#include <stdint.h>

/* cuptiGetVersion() answers major * 10000 + minor * 1000 + ... (130001 for CUPTI 13.0.1) */
#define CUPTI_ABI_MAJOR 13u
#define CUPTI_ABI_VERSION_MAJOR(v) ((v) / 10000u)

typedef int cupti_result;                 /* CUptiResult */
enum {
	CUPTI_OK = 0,                         /* CUPTI_SUCCESS */
	CUPTI_END_OF_RECORDS = 12,            /* CUPTI_ERROR_MAX_LIMIT_REACHED: no more records */
	CUPTI_MULTIPLE_SUBSCRIBERS = 39,      /* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED */
};

enum {                                    /* CUpti_ActivityKind */
	CUPTI_KIND_MEMCPY = 1,
	CUPTI_KIND_MEMSET = 2,
	CUPTI_KIND_KERNEL = 3,
	CUPTI_KIND_DRIVER = 4,
	CUPTI_KIND_RUNTIME = 5,
	CUPTI_KIND_CONCURRENT_KERNEL = 10,
};

#define CUPTI_THREAD_ID_SYSTEM 1          /* CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM */
#define CUPTI_FLUSH_FORCED 1u             /* CUPTI_ACTIVITY_FLAG_FLUSH_FORCED */
#define CUPTI_DOMAIN_DRIVER_API 1         /* CUPTI_CB_DOMAIN_DRIVER_API */
#define CUPTI_DOMAIN_RUNTIME_API 2        /* CUPTI_CB_DOMAIN_RUNTIME_API */

typedef void *cupti_subscriber;           /* CUpti_SubscriberHandle */
typedef void (*cupti_callback_fn)(void *userdata, int domain, uint32_t cbid, const void *cbdata);
typedef void (*cupti_buffer_requested_fn)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*cupti_buffer_completed_fn)(void *ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                          size_t valid_size);
typedef uint64_t (*cupti_timestamp_fn)(void);

/* The functions, by the names dlsym finds them under (gpu_activity.c). */
struct cupti_fns {
	cupti_result (*GetVersion)(uint32_t *version);
	cupti_result (*GetResultString)(cupti_result r, const char **str);
	cupti_result (*Subscribe)(cupti_subscriber *s, cupti_callback_fn fn, void *userdata);
	cupti_result (*Unsubscribe)(cupti_subscriber s);
	cupti_result (*GetCallbackName)(int domain, uint32_t cbid, const char **name);
	cupti_result (*SetThreadIdType)(int type);
	cupti_result (*ActivityRegisterTimestampCallback)(cupti_timestamp_fn fn);
	cupti_result (*ActivityRegisterCallbacks)(cupti_buffer_requested_fn requested,
	                                          cupti_buffer_completed_fn completed);
	cupti_result (*ActivityEnable)(int kind);
	cupti_result (*ActivityDisable)(int kind);
	cupti_result (*ActivityEnableDriverApi)(uint32_t cbid, uint8_t enable);
	cupti_result (*ActivityFlushAll)(uint32_t flag);
	cupti_result (*ActivityGetNextRecord)(uint8_t *buffer, size_t valid_size, void **record);
	cupti_result (*ActivityGetNumDroppedRecords)(void *ctx, uint32_t stream, size_t *dropped);
	cupti_result (*Finalize)(void);
};

/* Activity records: CUPTI packs them and aligns them to 8 bytes. Only the fields the agent reads
 * are named; the rest is padding of the right size. */
#define CUPTI_RECORD __attribute__((packed, aligned(8)))

struct CUPTI_RECORD cupti_record {       /* CUpti_Activity: every record begins so */
	uint32_t kind;
};

struct CUPTI_RECORD cupti_api {          /* CUpti_ActivityAPI (kinds DRIVER and RUNTIME) */
	uint32_t kind;
	uint32_t cbid;
	uint64_t start, end;
	uint32_t process_id;
	uint32_t thread_id;
	uint32_t correlation_id;
	uint32_t return_value;
};

struct CUPTI_RECORD cupti_kernel10 {     /* CUpti_ActivityKernel10 (kind CONCURRENT_KERNEL) */
	uint32_t kind;
	uint8_t cache_config, shared_memory_config;
	uint16_t registers_per_thread;
	uint8_t pad8[8];
	uint64_t start, end;
	uint64_t completed;
	uint32_t device_id, context_id, stream_id;
	int32_t grid_x, grid_y, grid_z;
	int32_t block_x, block_y, block_z;
	int32_t static_shared_memory;
	int32_t dynamic_shared_memory;
	uint32_t local_memory_per_thread;
	uint32_t local_memory_total;
	uint32_t correlation_id;
	int64_t grid_id;
	const char *name;
	uint8_t pad112[32];
	uint64_t graph_node_id;
	uint32_t shmem_limit_config;
	uint32_t graph_id;
	uint8_t pad160[56];
};

struct CUPTI_RECORD cupti_memcpy6 {      /* CUpti_ActivityMemcpy6 (kind MEMCPY) */
	uint32_t kind;
	uint8_t copy_kind, src_kind, dst_kind, flags;
	uint64_t bytes;
	uint64_t start, end;
	uint32_t device_id, context_id, stream_id;
	uint32_t correlation_id;
	uint8_t pad48[16];
	uint64_t graph_node_id;
	uint32_t graph_id;
	uint8_t pad76[20];
};

struct CUPTI_RECORD cupti_memset4 {      /* CUpti_ActivityMemset4 (kind MEMSET) */
	uint32_t kind;
	uint32_t value;
	uint64_t bytes;
	uint64_t start, end;
	uint32_t device_id, context_id, stream_id;
	uint32_t correlation_id;
	uint16_t flags;
	uint16_t memory_kind;
	uint8_t pad52[12];
	uint64_t graph_node_id;
	uint32_t graph_id;
	uint8_t pad76[12];
};

_Static_assert(sizeof(struct cupti_api) == 40, "CUpti_ActivityAPI");
_Static_assert(sizeof(struct cupti_kernel10) == 216, "CUpti_ActivityKernel10");
_Static_assert(sizeof(struct cupti_memcpy6) == 96, "CUpti_ActivityMemcpy6");
_Static_assert(sizeof(struct cupti_memset4) == 88, "CUpti_ActivityMemset4");

#endif
