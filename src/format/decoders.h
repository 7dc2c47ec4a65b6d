/* Decoders: the few driver calls whose pointed-to arguments are worth reading. Everything else
 * in cuhook is signature-agnostic (raw registers); these entries say, for a known function name,
 * which argument holds a string to copy, which out-parameters to read back, and what to call
 * the values in reports. Everything is read at exit, and only when the call returned 0
 * (CUDA_SUCCESS): a pointer the driver has just written through or a string it has just read is
 * valid, while before the call (or after a failed one) it may be garbage the driver rejected.
 * Shared by the agent (what to read) and the report (how to label it). */
#ifndef CUHOOK_DECODERS_H
#define CUHOOK_DECODERS_H

#include <stdint.h>

#define CUHOOK_NO_ARG 0xffu
#define CUHOOK_DECODER_MAX_OUT 2
#define CUHOOK_DECODER_MAX_STR 256 /* longer strings are cut (kernel names can be long) */

enum cuhook_str_kind {
	CUHOOK_STR_NONE = 0,
	CUHOOK_STR_ARG = 1,    /* args[str_arg] is a const char * (an input, e.g. a kernel name) */
	CUHOOK_STR_DEREF = 2,  /* *(const char **)args[str_arg]: a string the call returned */
	CUHOOK_STR_RAW = 3,    /* raw bytes, not text: the agent copies them with its own rule
	                          (the "ioctl" decoder: the argument struct at args[str_arg], see
	                          below); readers show them in hex or decode them */
	CUHOOK_STR_BYTES = 4,  /* raw bytes: the first str_bytes bytes of the struct args[str_arg]
	                          points to, an input the call has just read (cuLaunchKernelEx's
	                          CUlaunchConfig); readers show them in hex or decode them */
};

/* Both raw kinds are bytes, not text. */
static inline int cuhook_str_is_binary(unsigned kind)
{
	return kind == CUHOOK_STR_RAW || kind == CUHOOK_STR_BYTES;
}

/* What the "config" bytes of cuLaunchKernelEx hold (CUlaunchConfig's first members, cuda.h):
 * gridDimX..Z, blockDimX..Z, sharedMemBytes as u32 at 0, 4, ... 24; hStream at 32. */
#define CUHOOK_LAUNCH_CONFIG_BYTES 40

/* The "ioctl" decoder (libc's ioctl, traced with the agent option ioctl=1 on NVIDIA device files
 * only). Its DATA record, written at every EXIT, has
 *   values[0] "arg_bytes": how many bytes of the argument struct (argp, args[2]) follow;
 *   values[1] "errno":     errno when the ioctl returned non-zero, else 0;
 *   str: values[0] bytes copied from argp after the call, then, for the NVIDIA frontend's
 *        NV_ESC_IOCTL_XFER_CMD ('F', 211), the bytes of the struct its pointer names
 *        (str_len - values[0] of them).
 * Bytes are read only when the ioctl returned 0 (the driver has just read and written them):
 * at most CUHOOK_IOCTL_MAX_BYTES of _IOC_SIZE(request) for requests that encode a size, and for
 * the nvidia-uvm driver's raw request numbers (1..2047 and 0x30000001, which carry no size) up
 * to CUHOOK_IOCTL_MAX_BYTES without crossing argp's page; nothing for other raw numbers (their
 * argument may not be a pointer). Every decoding (names, RM classes and commands, status codes)
 * happens in the report, from the request code. */
#define CUHOOK_IOCTL_MAX_BYTES 64

/* Decoders read arguments 0..CUHOOK_DECODER_ARGS-1 only: the agent keeps that many argument
 * registers of a decoded call until its exit (the shadow stack entry is one cache line). */
#define CUHOOK_DECODER_ARGS 5

struct cuhook_decoder {
	const char *func;                          /* exact exported name */
	uint8_t str_kind;                          /* enum cuhook_str_kind */
	uint8_t str_arg;                           /* argument index 0..5 */
	uint8_t str_bytes;                         /* CUHOOK_STR_BYTES: how many bytes */
	uint8_t out_arg[CUHOOK_DECODER_MAX_OUT];   /* argument indices read at exit, CUHOOK_NO_ARG */
	uint8_t out_size[CUHOOK_DECODER_MAX_OUT];  /* 4 or 8 bytes */
	uint8_t args_only;                         /* 1: nothing decoded, no DATA record: the agent
	                                              keeps the arguments for its own reading at a
	                                              successful exit (kernel names of launches,
	                                              src/agent/kernel_names.h) */
	const char *str_label;                     /* "name", "symbol", "path" */
	const char *out_label[CUHOOK_DECODER_MAX_OUT];
};

/* Index 0 is "no decoder"; the rest are stable for a given CUHOOK_TRACE_VERSION only through the
 * name: readers look decoders up by the function's name, never trust the numeric id alone. */
extern const struct cuhook_decoder cuhook_decoders[];
extern const unsigned cuhook_decoder_count;

/* Index into cuhook_decoders of the decoder for `name`, or 0 if none. */
unsigned cuhook_decoder_find(const char *name);

#endif
