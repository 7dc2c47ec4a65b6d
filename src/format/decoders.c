#include "decoders.h"

#include <string.h>

#define NONE CUHOOK_NO_ARG
/* An out-parameter read at exit: arg a, 8 or 4 bytes. */
#define OUT1(a, sz, label) .out_arg = {a, NONE}, .out_size = {sz, 0}, .out_label = {label, 0}
#define OUT2(a, sa, la, b, sb, lb) .out_arg = {a, b}, .out_size = {sa, sb}, .out_label = {la, lb}
#define NOOUT .out_arg = {NONE, NONE}
#define ARGS_ONLY NOOUT, .args_only = 1
#define STR_IN(a, label) .str_kind = CUHOOK_STR_ARG, .str_arg = a, .str_label = label
#define STR_OUT(a, label) .str_kind = CUHOOK_STR_DEREF, .str_arg = a, .str_label = label
#define BYTES_IN(a, n, label) .str_kind = CUHOOK_STR_BYTES, .str_arg = a, .str_bytes = n, .str_label = label

const struct cuhook_decoder cuhook_decoders[] = {
	{.func = "", NOOUT},
	/* memory: the pointer an allocation returned */
	{.func = "cuMemAlloc_v2", OUT1(0, 8, "dptr")},
	{.func = "cuMemAlloc", OUT1(0, 4, "dptr")},
	{.func = "cuMemAllocPitch_v2", OUT2(0, 8, "dptr", 1, 8, "pitch")},
	{.func = "cuMemAllocHost_v2", OUT1(0, 8, "hostptr")},
	{.func = "cuMemHostAlloc", OUT1(0, 8, "hostptr")},
	{.func = "cuMemAllocManaged", OUT1(0, 8, "dptr")},
	{.func = "cuMemAllocAsync", OUT1(0, 8, "dptr")},
	{.func = "cuMemAllocAsync_ptsz", OUT1(0, 8, "dptr")},
	{.func = "cuMemAllocFromPoolAsync", OUT1(0, 8, "dptr")},
	{.func = "cuMemAllocFromPoolAsync_ptsz", OUT1(0, 8, "dptr")},
	{.func = "cuMemAddressReserve", OUT1(0, 8, "ptr")},
	{.func = "cuMemCreate", OUT1(0, 8, "handle")},
	/* modules, libraries, kernels: handles and names */
	{.func = "cuModuleLoad", OUT1(0, 8, "module"), STR_IN(1, "path")},
	{.func = "cuModuleLoadData", OUT1(0, 8, "module")},
	{.func = "cuModuleLoadDataEx", OUT1(0, 8, "module")},
	{.func = "cuModuleLoadFatBinary", OUT1(0, 8, "module")},
	{.func = "cuModuleGetFunction", OUT1(0, 8, "function"), STR_IN(2, "name")},
	{.func = "cuModuleGetGlobal_v2", OUT2(0, 8, "dptr", 1, 8, "bytes"), STR_IN(3, "name")},
	{.func = "cuLibraryLoadData", OUT1(0, 8, "library")},
	{.func = "cuLibraryLoadFromFile", OUT1(0, 8, "library"), STR_IN(1, "path")},
	{.func = "cuLibraryGetKernel", OUT1(0, 8, "kernel"), STR_IN(2, "name")},
	{.func = "cuLibraryGetModule", OUT1(0, 8, "module")},
	{.func = "cuKernelGetFunction", OUT1(0, 8, "function")},
	{.func = "cuFuncGetName", STR_OUT(0, "name"), NOOUT},
	/* launches described by a struct: grid, block, shared memory, stream */
	{.func = "cuLaunchKernelEx", BYTES_IN(0, CUHOOK_LAUNCH_CONFIG_BYTES, "config"), NOOUT},
	{.func = "cuLaunchKernelEx_ptsz", BYTES_IN(0, CUHOOK_LAUNCH_CONFIG_BYTES, "config"), NOOUT},
	{.func = "cuKernelGetName", STR_OUT(0, "name"), NOOUT},
	/* contexts, devices, streams, events */
	{.func = "cuCtxCreate_v2", OUT1(0, 8, "context")},
	{.func = "cuCtxCreate_v3", OUT1(0, 8, "context")},
	{.func = "cuCtxCreate_v4", OUT1(0, 8, "context")},
	{.func = "cuDevicePrimaryCtxRetain", OUT1(0, 8, "context")},
	{.func = "cuCtxGetCurrent", OUT1(0, 8, "context")},
	{.func = "cuCtxGetDevice", OUT1(0, 4, "device")},
	{.func = "cuDeviceGet", OUT1(0, 4, "device")},
	{.func = "cuDeviceGetCount", OUT1(0, 4, "count")},
	{.func = "cuDriverGetVersion", OUT1(0, 4, "version")},
	{.func = "cuStreamCreate", OUT1(0, 8, "stream")},
	{.func = "cuStreamCreateWithPriority", OUT1(0, 8, "stream")},
	{.func = "cuEventCreate", OUT1(0, 8, "event")},
	{.func = "cuGraphInstantiateWithFlags", OUT1(0, 8, "graphExec")},
	{.func = "cuGraphInstantiate_v2", OUT1(0, 8, "graphExec")},
	{.func = "cuGraphInstantiateWithParams", OUT1(0, 8, "graphExec")},
	{.func = "cuGraphInstantiateWithParams_ptsz", OUT1(0, 8, "graphExec")},
	/* nothing recorded: the agent reads their arguments at a successful exit for kernel names
	 * (src/agent/kernel_names.h), and writes no DATA record for them */
	{.func = "cuLaunchKernel", ARGS_ONLY},
	{.func = "cuLaunchKernel_ptsz", ARGS_ONLY},
	{.func = "cuLaunchCooperativeKernel", ARGS_ONLY},
	{.func = "cuLaunchCooperativeKernel_ptsz", ARGS_ONLY},
	{.func = "cuModuleUnload", ARGS_ONLY},
	{.func = "cuLibraryUnload", ARGS_ONLY},
	{.func = "cuGraphExecUpdate", ARGS_ONLY},
	{.func = "cuGraphExecUpdate_v2", ARGS_ONLY},
	/* the executable graph, for the names window (src/agent/kernel_names.h) */
	{.func = "cuGraphLaunch", ARGS_ONLY},
	{.func = "cuGraphLaunch_ptsz", ARGS_ONLY},
	/* how the runtime finds driver entry points */
	{.func = "cuGetProcAddress_v2", OUT1(1, 8, "pfn"), STR_IN(0, "symbol")},
	{.func = "cuGetProcAddress", OUT1(1, 8, "pfn"), STR_IN(0, "symbol")},
	{.func = "cuGetExportTable", OUT1(0, 8, "table")},
	/* libc's ioctl on NVIDIA device files (agent option ioctl=1): raw argument bytes, decoded by
	 * the report; the two values are written by the agent's own rule (decoders.h) */
	{.func = "ioctl", .str_kind = CUHOOK_STR_RAW, .str_arg = 2, .str_label = "arg",
	 .out_arg = {NONE, NONE}, .out_label = {"arg_bytes", "errno"}},
};

const unsigned cuhook_decoder_count = sizeof(cuhook_decoders) / sizeof(cuhook_decoders[0]);

unsigned cuhook_decoder_find(const char *name)
{
	for (unsigned i = 1; i < cuhook_decoder_count; i++)
		if (strcmp(cuhook_decoders[i].func, name) == 0)
			return i;
	return 0;
}
