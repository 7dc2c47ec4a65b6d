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
};

struct cuhook_decoder {
	const char *func;                          /* exact exported name */
	uint8_t str_kind;                          /* enum cuhook_str_kind */
	uint8_t str_arg;                           /* argument index 0..5 */
	uint8_t out_arg[CUHOOK_DECODER_MAX_OUT];   /* argument indices read at exit, CUHOOK_NO_ARG */
	uint8_t out_size[CUHOOK_DECODER_MAX_OUT];  /* 4 or 8 bytes */
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
