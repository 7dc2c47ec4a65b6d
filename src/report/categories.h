/* What a driver API function does, from its name alone: its category in the report, and for the
 * functions whose arguments the report interprets (copies, allocations, launches) where the
 * interesting argument is. The driver API's signatures are stable across versions; the _v2,
 * _v3, _ptds and _ptsz variants keep the argument order of their base function. */
#ifndef CUHOOK_REPORT_CATEGORIES_H
#define CUHOOK_REPORT_CATEGORIES_H

#include <stdint.h>

enum rp_cat {
	RP_CAT_INIT,      /* cuInit, driver/device queries, entry point lookup */
	RP_CAT_CONTEXT,
	RP_CAT_MODULE,    /* module/library load, function lookup, linking */
	RP_CAT_MEMORY,    /* allocation and free */
	RP_CAT_TRANSFER,  /* memcpy, memset */
	RP_CAT_LAUNCH,
	RP_CAT_SYNC,      /* the host waits (or polls) for the GPU */
	RP_CAT_STREAM,    /* stream and event management */
	RP_CAT_GRAPH,
	RP_CAT_OTHER,
	RP_CAT_COUNT
};

extern const char *const rp_cat_names[RP_CAT_COUNT];

enum rp_cat rp_cat_of(const char *name);

enum rp_dir {
	RP_DIR_NONE = 0,
	RP_DIR_H2D,
	RP_DIR_D2H,
	RP_DIR_D2D,
	RP_DIR_P2P,       /* cuMemcpyPeer: between two contexts' devices */
	RP_DIR_DEFAULT,   /* cuMemcpy / cuMemcpyAsync: unified addressing, direction from pointers */
	RP_DIR_ARRAY,     /* to or from a CUDA array */
	RP_DIR_2D3D,      /* cuMemcpy2D/3D: sizes are in a struct the agent does not read */
	RP_DIR_MEMSET,
	RP_DIR_COUNT
};

extern const char *const rp_dir_names[RP_DIR_COUNT];

/* A copy or memset: its direction, whether it is asynchronous (the call only queues the work,
 * so its duration says nothing about bandwidth), and how to get its byte count from the
 * arguments: args[bytes_arg] * elt_size, times args[height_arg] when height_arg is set (2D
 * memsets). bytes_arg < 0: unknown. */
struct rp_xfer {
	uint8_t dir;          /* enum rp_dir */
	uint8_t async;
	int8_t bytes_arg;
	int8_t height_arg;
	uint8_t elt_size;
	int8_t stream_arg;    /* -1 if none */
};

/* 1 and *x filled if `name` is a copy or memset. */
int rp_xfer_of(const char *name, struct rp_xfer *x);

/* An allocation: args[size_arg] (* args[size_arg2] when >= 0) bytes; the returned pointer is in
 * the DATA record (label from the decoder table). 1 if `name` allocates. */
int rp_alloc_of(const char *name, int *size_arg, int *size_arg2);

/* 1 if `name` frees or destroys something (teardown), used by stage detection. */
int rp_is_release(const char *name);

/* Kernel launches: where the function handle is (cuLaunchKernelEx: arg 1, behind a config
 * pointer for the grid) and whether the grid/block/shared/stream arguments are direct
 * (cuLaunchKernel layout: f, gx, gy, gz, bx, by, bz, shared, stream, params, extra). */
struct rp_launch {
	int8_t func_arg;
	uint8_t direct_layout;
};
int rp_launch_of(const char *name, struct rp_launch *l);

/* Work a program does once, not at every step: loading modules and libraries (cuModuleLoad*,
 * cuLibraryLoad*, linking), and initialization (cuInit, context creation and primary context
 * retention). */
enum rp_oneoff { RP_ONEOFF_NONE, RP_ONEOFF_LOAD, RP_ONEOFF_INIT };
int rp_oneoff_of(const char *name);

/* Work handed to the GPU (launches, copies, memsets, graph launches): the report measures host
 * gaps between these. */
int rp_is_submission(const char *name);

/* The name without its _v2/_v3/_ptds/_ptsz suffixes, into buf. */
const char *rp_base_name(const char *name, char *buf, unsigned len);

#endif
