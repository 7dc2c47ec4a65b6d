/* Name-based knowledge of the driver API: see categories.h. Tables, not code: adding a function
 * is adding a line. */
#include "categories.h"

#include <string.h>

const char *const rp_cat_names[RP_CAT_COUNT] = {
	"init", "context", "module", "memory", "transfer", "launch", "sync", "stream/event", "graph", "other",
};

const char *const rp_dir_names[RP_DIR_COUNT] = {
	"", "H2D", "D2H", "D2D", "P2P", "default", "array", "2D/3D", "memset",
};

const char *rp_base_name(const char *name, char *buf, unsigned len)
{
	static const char *const suffixes[] = {"_ptds", "_ptsz", "_v2", "_v3", "_v4"};
	size_t n = strlen(name);
	if (n >= len)
		n = len - 1;
	memcpy(buf, name, n);
	buf[n] = 0;
	for (int changed = 1; changed;) {
		changed = 0;
		for (unsigned i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
			size_t s = strlen(suffixes[i]);
			if (n > s && !strcmp(buf + n - s, suffixes[i])) {
				n -= s;
				buf[n] = 0;
				changed = 1;
			}
		}
	}
	return buf;
}

/* First match wins, so the exceptions come before the prefixes they would otherwise fall
 * under ("cuCtxSynchronize" before "cuCtx"). A trailing '*' marks a prefix; other entries are
 * exact base names. */
static const struct {
	const char *pat;
	uint8_t cat;
} cat_rules[] = {
	{"cuCtxSynchronize", RP_CAT_SYNC},
	{"cuStreamSynchronize", RP_CAT_SYNC},
	{"cuEventSynchronize", RP_CAT_SYNC},
	{"cuStreamQuery", RP_CAT_SYNC},
	{"cuEventQuery", RP_CAT_SYNC},
	{"cuStreamBeginCapture*", RP_CAT_GRAPH},
	{"cuStreamEndCapture", RP_CAT_GRAPH},
	{"cuStreamIsCapturing", RP_CAT_GRAPH},
	{"cuStreamGetCaptureInfo*", RP_CAT_GRAPH},
	{"cuStreamUpdateCaptureDependencies", RP_CAT_GRAPH},
	{"cuGraph*", RP_CAT_GRAPH},
	{"cuLaunch*", RP_CAT_LAUNCH},
	{"cuMemcpy*", RP_CAT_TRANSFER},
	{"cuMemset*", RP_CAT_TRANSFER},
	{"cuMem*", RP_CAT_MEMORY},
	{"cuPointer*", RP_CAT_MEMORY},
	{"cuIpc*", RP_CAT_MEMORY},
	{"cuModule*", RP_CAT_MODULE},
	{"cuLibrary*", RP_CAT_MODULE},
	{"cuLink*", RP_CAT_MODULE},
	{"cuKernel*", RP_CAT_MODULE},
	{"cuFunc*", RP_CAT_MODULE},
	{"cuDevicePrimaryCtx*", RP_CAT_CONTEXT},
	{"cuCtx*", RP_CAT_CONTEXT},
	{"cuInit", RP_CAT_INIT},
	{"cuDriverGetVersion", RP_CAT_INIT},
	{"cuDevice*", RP_CAT_INIT},
	{"cuGetProcAddress", RP_CAT_INIT},
	{"cuGetExportTable", RP_CAT_INIT},
	{"cuStream*", RP_CAT_STREAM},
	{"cuEvent*", RP_CAT_STREAM},
};

static int rule_match(const char *pat, const char *name)
{
	size_t n = strlen(pat);
	if (n && pat[n - 1] == '*')
		return !strncmp(name, pat, n - 1);
	return !strcmp(name, pat);
}

enum rp_cat rp_cat_of(const char *name)
{
	char base[128];
	rp_base_name(name, base, sizeof(base));
	for (unsigned i = 0; i < sizeof(cat_rules) / sizeof(cat_rules[0]); i++)
		if (rule_match(cat_rules[i].pat, base))
			return (enum rp_cat)cat_rules[i].cat;
	return RP_CAT_OTHER;
}

/* Copies and memsets by base name. Argument indices from the driver API's declarations. */
static const struct {
	const char *name;
	struct rp_xfer x;
} xfers[] = {
	/*                              dir            async bytes height elt stream */
	{"cuMemcpyHtoD",          {RP_DIR_H2D,     0, 2, -1, 1, -1}},
	{"cuMemcpyHtoDAsync",     {RP_DIR_H2D,     1, 2, -1, 1, 3}},
	{"cuMemcpyDtoH",          {RP_DIR_D2H,     0, 2, -1, 1, -1}},
	{"cuMemcpyDtoHAsync",     {RP_DIR_D2H,     1, 2, -1, 1, 3}},
	{"cuMemcpyDtoD",          {RP_DIR_D2D,     0, 2, -1, 1, -1}},
	{"cuMemcpyDtoDAsync",     {RP_DIR_D2D,     1, 2, -1, 1, 3}},
	{"cuMemcpy",              {RP_DIR_DEFAULT, 0, 2, -1, 1, -1}},
	{"cuMemcpyAsync",         {RP_DIR_DEFAULT, 1, 2, -1, 1, 3}},
	{"cuMemcpyPeer",          {RP_DIR_P2P,     0, 4, -1, 1, -1}},
	{"cuMemcpyPeerAsync",     {RP_DIR_P2P,     1, 4, -1, 1, 5}},
	{"cuMemcpyHtoA",          {RP_DIR_ARRAY,   0, 3, -1, 1, -1}},
	{"cuMemcpyHtoAAsync",     {RP_DIR_ARRAY,   1, 3, -1, 1, 4}},
	{"cuMemcpyAtoH",          {RP_DIR_ARRAY,   0, 3, -1, 1, -1}},
	{"cuMemcpyAtoHAsync",     {RP_DIR_ARRAY,   1, 3, -1, 1, 4}},
	{"cuMemcpyDtoA",          {RP_DIR_ARRAY,   0, 3, -1, 1, -1}},
	{"cuMemcpyAtoD",          {RP_DIR_ARRAY,   0, 3, -1, 1, -1}},
	{"cuMemcpyAtoA",          {RP_DIR_ARRAY,   0, 4, -1, 1, -1}},
	{"cuMemcpy2D",            {RP_DIR_2D3D,    0, -1, -1, 1, -1}},
	{"cuMemcpy2DUnaligned",   {RP_DIR_2D3D,    0, -1, -1, 1, -1}},
	{"cuMemcpy2DAsync",       {RP_DIR_2D3D,    1, -1, -1, 1, 1}},
	{"cuMemcpy3D",            {RP_DIR_2D3D,    0, -1, -1, 1, -1}},
	{"cuMemcpy3DAsync",       {RP_DIR_2D3D,    1, -1, -1, 1, 1}},
	{"cuMemcpy3DPeer",        {RP_DIR_2D3D,    0, -1, -1, 1, -1}},
	{"cuMemcpy3DPeerAsync",   {RP_DIR_2D3D,    1, -1, -1, 1, 1}},
	{"cuMemsetD8",            {RP_DIR_MEMSET,  0, 2, -1, 1, -1}},
	{"cuMemsetD16",           {RP_DIR_MEMSET,  0, 2, -1, 2, -1}},
	{"cuMemsetD32",           {RP_DIR_MEMSET,  0, 2, -1, 4, -1}},
	{"cuMemsetD8Async",       {RP_DIR_MEMSET,  1, 2, -1, 1, 3}},
	{"cuMemsetD16Async",      {RP_DIR_MEMSET,  1, 2, -1, 2, 3}},
	{"cuMemsetD32Async",      {RP_DIR_MEMSET,  1, 2, -1, 4, 3}},
	{"cuMemsetD2D8",          {RP_DIR_MEMSET,  0, 3, 4, 1, -1}},
	{"cuMemsetD2D16",         {RP_DIR_MEMSET,  0, 3, 4, 2, -1}},
	{"cuMemsetD2D32",         {RP_DIR_MEMSET,  0, 3, 4, 4, -1}},
	{"cuMemsetD2D8Async",     {RP_DIR_MEMSET,  1, 3, 4, 1, 5}},
	{"cuMemsetD2D16Async",    {RP_DIR_MEMSET,  1, 3, 4, 2, 5}},
	{"cuMemsetD2D32Async",    {RP_DIR_MEMSET,  1, 3, 4, 4, 5}},
};

int rp_xfer_of(const char *name, struct rp_xfer *x)
{
	char base[128];
	rp_base_name(name, base, sizeof(base));
	for (unsigned i = 0; i < sizeof(xfers) / sizeof(xfers[0]); i++)
		if (!strcmp(xfers[i].name, base)) {
			*x = xfers[i].x;
			return 1;
		}
	return 0;
}

int rp_alloc_of(const char *name, int *size_arg, int *size_arg2)
{
	static const char *const one[] = {"cuMemAlloc", "cuMemAllocHost", "cuMemHostAlloc",
	                                  "cuMemAllocManaged", "cuMemAllocAsync", "cuMemAllocFromPoolAsync",
	                                  "cuMemCreate"};
	char base[128];
	rp_base_name(name, base, sizeof(base));
	for (unsigned i = 0; i < sizeof(one) / sizeof(one[0]); i++)
		if (!strcmp(one[i], base)) {
			*size_arg = 1;
			*size_arg2 = -1;
			return 1;
		}
	if (!strcmp(base, "cuMemAllocPitch")) { /* (dptr, pitch, WidthInBytes, Height, ElementSize) */
		*size_arg = 2;
		*size_arg2 = 3;
		return 1;
	}
	return 0;
}

int rp_is_release(const char *name)
{
	static const char *const pats[] = {
		"cuMemFree*", "cuMemRelease", "cuMemUnmap", "cuMemAddressFree", "cuMemHostUnregister",
		"cuMemPoolDestroy", "cuModuleUnload", "cuLibraryUnload", "cuLinkDestroy", "cuCtxDestroy",
		"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxReset", "cuStreamDestroy", "cuEventDestroy",
		"cuGraphDestroy", "cuGraphExecDestroy", "cuArrayDestroy", "cuTexObjectDestroy",
		"cuSurfObjectDestroy",
	};
	char base[128];
	rp_base_name(name, base, sizeof(base));
	for (unsigned i = 0; i < sizeof(pats) / sizeof(pats[0]); i++)
		if (rule_match(pats[i], base))
			return 1;
	return 0;
}

int rp_launch_of(const char *name, struct rp_launch *l)
{
	char base[128];
	rp_base_name(name, base, sizeof(base));
	if (!strcmp(base, "cuLaunchKernel") || !strcmp(base, "cuLaunchCooperativeKernel")) {
		l->func_arg = 0;
		l->direct_layout = 1;
		return 1;
	}
	if (!strcmp(base, "cuLaunchKernelEx")) { /* (config, f, kernelParams, extra) */
		l->func_arg = 1;
		l->direct_layout = 0;
		return 1;
	}
	if (!strcmp(base, "cuLaunch") || !strcmp(base, "cuLaunchGrid") || !strcmp(base, "cuLaunchGridAsync")) {
		l->func_arg = 0;
		l->direct_layout = 0;
		return 1;
	}
	return 0;
}

int rp_oneoff_of(const char *name)
{
	static const char *const loading[] = {"cuModuleLoad*", "cuLibraryLoad*", "cuLinkCreate", "cuLinkAdd*",
	                                      "cuLinkComplete"};
	static const char *const init[] = {"cuInit", "cuCtxCreate", "cuDevicePrimaryCtxRetain"};
	char base[128];
	rp_base_name(name, base, sizeof(base));
	for (unsigned i = 0; i < sizeof(loading) / sizeof(loading[0]); i++)
		if (rule_match(loading[i], base))
			return RP_ONEOFF_LOAD;
	for (unsigned i = 0; i < sizeof(init) / sizeof(init[0]); i++)
		if (rule_match(init[i], base))
			return RP_ONEOFF_INIT;
	return RP_ONEOFF_NONE;
}

int rp_is_submission(const char *name)
{
	enum rp_cat c = rp_cat_of(name);
	if (c == RP_CAT_LAUNCH || c == RP_CAT_TRANSFER)
		return 1;
	char base[128];
	rp_base_name(name, base, sizeof(base));
	return !strcmp(base, "cuGraphLaunch");
}
