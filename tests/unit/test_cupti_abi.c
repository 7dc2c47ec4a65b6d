/* The agent's own declaration of CUPTI's interface (src/agent/cupti_abi.h) against the CUDA
 * toolkit's headers: every record field the agent reads at the toolkit's offset and size, the
 * records' sizes, the constants. Built only where the toolkit's CUPTI headers are installed. */
#include "unit.h"

#include "cupti_abi.h"

#include <cupti.h>
#include <stddef.h>

#define SAME_FIELD(ours, theirs, o, t)                                                              \
	CHECK(offsetof(struct ours, o) == offsetof(theirs, t) &&                                    \
	          sizeof(((struct ours *)0)->o) == sizeof(((theirs *)0)->t),                        \
	      #theirs "." #t ": offset %zu size %zu, ours %zu %zu", offsetof(theirs, t),             \
	      sizeof(((theirs *)0)->t), offsetof(struct ours, o), sizeof(((struct ours *)0)->o))

static void api(void)
{
	CHECK(sizeof(struct cupti_api) == sizeof(CUpti_ActivityAPI), "size");
	SAME_FIELD(cupti_api, CUpti_ActivityAPI, kind, kind);
	SAME_FIELD(cupti_api, CUpti_ActivityAPI, cbid, cbid);
	SAME_FIELD(cupti_api, CUpti_ActivityAPI, start, start);
	SAME_FIELD(cupti_api, CUpti_ActivityAPI, end, end);
	SAME_FIELD(cupti_api, CUpti_ActivityAPI, thread_id, threadId);
	SAME_FIELD(cupti_api, CUpti_ActivityAPI, correlation_id, correlationId);
	SAME_FIELD(cupti_api, CUpti_ActivityAPI, return_value, returnValue);
}

static void kernel(void)
{
	CHECK(sizeof(struct cupti_kernel10) == sizeof(CUpti_ActivityKernel10), "size");
	SAME_FIELD(cupti_kernel10, CUpti_ActivityKernel10, kind, kind);
	SAME_FIELD(cupti_kernel10, CUpti_ActivityKernel10, registers_per_thread, registersPerThread);
	SAME_FIELD(cupti_kernel10, CUpti_ActivityKernel10, start, start);
	SAME_FIELD(cupti_kernel10, CUpti_ActivityKernel10, end, end);
	SAME_FIELD(cupti_kernel10, CUpti_ActivityKernel10, device_id, deviceId);
	SAME_FIELD(cupti_kernel10, CUpti_ActivityKernel10, context_id, contextId);
	SAME_FIELD(cupti_kernel10, CUpti_ActivityKernel10, stream_id, streamId);
	SAME_FIELD(cupti_kernel10, CUpti_ActivityKernel10, grid_x, gridX);
	SAME_FIELD(cupti_kernel10, CUpti_ActivityKernel10, grid_y, gridY);
	SAME_FIELD(cupti_kernel10, CUpti_ActivityKernel10, grid_z, gridZ);
	SAME_FIELD(cupti_kernel10, CUpti_ActivityKernel10, block_x, blockX);
	SAME_FIELD(cupti_kernel10, CUpti_ActivityKernel10, block_y, blockY);
	SAME_FIELD(cupti_kernel10, CUpti_ActivityKernel10, block_z, blockZ);
	SAME_FIELD(cupti_kernel10, CUpti_ActivityKernel10, static_shared_memory, staticSharedMemory);
	SAME_FIELD(cupti_kernel10, CUpti_ActivityKernel10, dynamic_shared_memory, dynamicSharedMemory);
	SAME_FIELD(cupti_kernel10, CUpti_ActivityKernel10, correlation_id, correlationId);
	SAME_FIELD(cupti_kernel10, CUpti_ActivityKernel10, name, name);
	SAME_FIELD(cupti_kernel10, CUpti_ActivityKernel10, graph_node_id, graphNodeId);
	SAME_FIELD(cupti_kernel10, CUpti_ActivityKernel10, graph_id, graphId);
}

static void memcpy6(void)
{
	CHECK(sizeof(struct cupti_memcpy6) == sizeof(CUpti_ActivityMemcpy6), "size");
	SAME_FIELD(cupti_memcpy6, CUpti_ActivityMemcpy6, copy_kind, copyKind);
	SAME_FIELD(cupti_memcpy6, CUpti_ActivityMemcpy6, src_kind, srcKind);
	SAME_FIELD(cupti_memcpy6, CUpti_ActivityMemcpy6, dst_kind, dstKind);
	SAME_FIELD(cupti_memcpy6, CUpti_ActivityMemcpy6, flags, flags);
	SAME_FIELD(cupti_memcpy6, CUpti_ActivityMemcpy6, bytes, bytes);
	SAME_FIELD(cupti_memcpy6, CUpti_ActivityMemcpy6, start, start);
	SAME_FIELD(cupti_memcpy6, CUpti_ActivityMemcpy6, end, end);
	SAME_FIELD(cupti_memcpy6, CUpti_ActivityMemcpy6, device_id, deviceId);
	SAME_FIELD(cupti_memcpy6, CUpti_ActivityMemcpy6, context_id, contextId);
	SAME_FIELD(cupti_memcpy6, CUpti_ActivityMemcpy6, stream_id, streamId);
	SAME_FIELD(cupti_memcpy6, CUpti_ActivityMemcpy6, correlation_id, correlationId);
	SAME_FIELD(cupti_memcpy6, CUpti_ActivityMemcpy6, graph_node_id, graphNodeId);
	SAME_FIELD(cupti_memcpy6, CUpti_ActivityMemcpy6, graph_id, graphId);
}

static void memset4(void)
{
	CHECK(sizeof(struct cupti_memset4) == sizeof(CUpti_ActivityMemset4), "size");
	SAME_FIELD(cupti_memset4, CUpti_ActivityMemset4, value, value);
	SAME_FIELD(cupti_memset4, CUpti_ActivityMemset4, bytes, bytes);
	SAME_FIELD(cupti_memset4, CUpti_ActivityMemset4, start, start);
	SAME_FIELD(cupti_memset4, CUpti_ActivityMemset4, end, end);
	SAME_FIELD(cupti_memset4, CUpti_ActivityMemset4, device_id, deviceId);
	SAME_FIELD(cupti_memset4, CUpti_ActivityMemset4, context_id, contextId);
	SAME_FIELD(cupti_memset4, CUpti_ActivityMemset4, stream_id, streamId);
	SAME_FIELD(cupti_memset4, CUpti_ActivityMemset4, correlation_id, correlationId);
	SAME_FIELD(cupti_memset4, CUpti_ActivityMemset4, flags, flags);
	SAME_FIELD(cupti_memset4, CUpti_ActivityMemset4, memory_kind, memoryKind);
	SAME_FIELD(cupti_memset4, CUpti_ActivityMemset4, graph_node_id, graphNodeId);
	SAME_FIELD(cupti_memset4, CUpti_ActivityMemset4, graph_id, graphId);
}

#define SAME_CONST(ours, theirs) CHECK((long)(ours) == (long)(theirs), #ours " %ld, " #theirs " %ld", (long)(ours), (long)(theirs))

static void constants(void)
{
	SAME_CONST(CUPTI_ABI_MAJOR, CUPTI_ABI_VERSION_MAJOR(CUPTI_API_VERSION));
	SAME_CONST(CUPTI_OK, CUPTI_SUCCESS);
	SAME_CONST(CUPTI_END_OF_RECORDS, CUPTI_ERROR_MAX_LIMIT_REACHED);
	SAME_CONST(CUPTI_MULTIPLE_SUBSCRIBERS, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	SAME_CONST(CUPTI_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY);
	SAME_CONST(CUPTI_KIND_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET);
	SAME_CONST(CUPTI_KIND_KERNEL, CUPTI_ACTIVITY_KIND_KERNEL);
	SAME_CONST(CUPTI_KIND_DRIVER, CUPTI_ACTIVITY_KIND_DRIVER);
	SAME_CONST(CUPTI_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	SAME_CONST(CUPTI_THREAD_ID_SYSTEM, CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	SAME_CONST(CUPTI_FLUSH_FORCED, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	SAME_CONST(CUPTI_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_DRIVER_API);
}

int main(void)
{
	RUN(api);
	RUN(kernel);
	RUN(memcpy6);
	RUN(memset4);
	RUN(constants);
	UNIT_EXIT();
}
