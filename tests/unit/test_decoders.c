/* Unit tests of the decoder table (src/format/decoders.c): lookup by name, and the table's own
 * consistency (what the agent reads and the report labels must agree). */
#include "unit.h"

#include "decoders.h"

static void find_known(void)
{
	static const char *const names[] = {"cuMemAlloc_v2", "cuModuleGetFunction", "cuGetProcAddress_v2",
	                                    "cuLibraryGetKernel", "cuFuncGetName", "cuDeviceGet"};
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		unsigned id = cuhook_decoder_find(names[i]);
		CHECK(id > 0 && id < cuhook_decoder_count, "%s: id %u", names[i], id);
		if (id > 0 && id < cuhook_decoder_count)
			CHECK(strcmp(cuhook_decoders[id].func, names[i]) == 0, "%s: entry %u is %s", names[i], id,
			      cuhook_decoders[id].func);
	}
	unsigned id = cuhook_decoder_find("cuModuleGetFunction");
	CHECK(cuhook_decoders[id].str_kind == CUHOOK_STR_ARG && cuhook_decoders[id].str_arg == 2,
	      "cuModuleGetFunction reads the name in its 3rd argument");
	CHECK(cuhook_decoders[id].out_arg[0] == 0 && cuhook_decoders[id].out_size[0] == 8,
	      "cuModuleGetFunction writes a handle through its 1st argument");
	id = cuhook_decoder_find("cuLaunchKernelEx");
	CHECK(id && cuhook_decoders[id].str_kind == CUHOOK_STR_BYTES && cuhook_decoders[id].str_arg == 0 &&
	          cuhook_decoders[id].str_bytes == CUHOOK_LAUNCH_CONFIG_BYTES && cuhook_str_is_binary(CUHOOK_STR_BYTES),
	      "cuLaunchKernelEx copies the first 40 bytes of its CUlaunchConfig (1st argument)");
	id = cuhook_decoder_find("cuFuncGetName");
	CHECK(cuhook_decoders[id].str_kind == CUHOOK_STR_DEREF, "cuFuncGetName returns a string");
	id = cuhook_decoder_find("cuDeviceGet");
	CHECK(cuhook_decoders[id].out_size[0] == 4, "CUdevice is an int");
	/* libc's ioctl (agent option ioctl=1): raw argument bytes, two values the agent computes */
	id = cuhook_decoder_find("ioctl");
	CHECK(id > 0 && cuhook_decoders[id].str_kind == CUHOOK_STR_RAW && cuhook_decoders[id].str_arg == 2,
	      "ioctl copies the raw struct at its 3rd argument");
	CHECK(id > 0 && cuhook_decoders[id].out_arg[0] == CUHOOK_NO_ARG && cuhook_decoders[id].out_label[0] &&
	      cuhook_decoders[id].out_label[1], "ioctl's values are labelled but read by the agent's own rule");
}

static void find_unknown(void)
{
	CHECK(cuhook_decoder_find("cuInit") == 0, "cuInit has no decoder");
	CHECK(cuhook_decoder_find("") == 0, "the empty name (entry 0's) is not found");
	CHECK(cuhook_decoder_find("cumemalloc_v2") == 0, "case-sensitive");
	CHECK(cuhook_decoder_find("cuMemAlloc_v") == 0, "no prefix match");
	CHECK(cuhook_decoder_find("cuMemAlloc_v2 ") == 0, "no trailing blank");
}

/* Every entry is found at its own index (no duplicate names), and its fields are in range. */
static void table_consistent(void)
{
	CHECK(cuhook_decoder_count > 1, "entries %u", cuhook_decoder_count);
	CHECK(cuhook_decoders[0].func && cuhook_decoders[0].func[0] == 0, "entry 0 is the empty one");
	for (unsigned i = 1; i < cuhook_decoder_count; i++) {
		const struct cuhook_decoder *d = &cuhook_decoders[i];
		CHECK(d->func && d->func[0], "entry %u has a name", i);
		if (!d->func)
			continue;
		CHECK(cuhook_decoder_find(d->func) == i, "%s found at %u, not %u", d->func, cuhook_decoder_find(d->func), i);
		CHECK(d->str_kind <= CUHOOK_STR_BYTES, "%s: str_kind %u", d->func, d->str_kind);
		/* raw struct bytes: a size that fits a DATA record's string */
		CHECK((d->str_kind == CUHOOK_STR_BYTES) == (d->str_bytes != 0), "%s: str_bytes %u", d->func, d->str_bytes);
		CHECK(d->str_bytes <= CUHOOK_DECODER_MAX_STR, "%s: str_bytes %u", d->func, d->str_bytes);
		if (d->str_kind != CUHOOK_STR_NONE) {
			CHECK(d->str_arg < CUHOOK_DECODER_ARGS, "%s: str_arg %u", d->func, d->str_arg);
			CHECK(d->str_label != NULL, "%s: string without a label", d->func);
		}
		for (unsigned k = 0; k < CUHOOK_DECODER_MAX_OUT; k++) {
			if (d->out_arg[k] == CUHOOK_NO_ARG)
				continue;
			CHECK(d->out_arg[k] < CUHOOK_DECODER_ARGS, "%s: out_arg[%u] %u", d->func, k, d->out_arg[k]);
			CHECK(d->out_size[k] == 4 || d->out_size[k] == 8, "%s: out_size[%u] %u", d->func, k, d->out_size[k]);
			CHECK(d->out_label[k] != NULL, "%s: out %u without a label", d->func, k);
		}
		/* args_only: the agent's own reading of the arguments (kernel names), nothing in the trace */
		CHECK(d->args_only == (d->str_kind == CUHOOK_STR_NONE && d->out_arg[0] == CUHOOK_NO_ARG),
		      "%s: args_only %u, but %s", d->func, d->args_only, d->args_only ? "decodes something" : "decodes nothing");
	}
}

int main(void)
{
	RUN(find_known);
	RUN(find_unknown);
	RUN(table_consistent);
	UNIT_EXIT();
}
