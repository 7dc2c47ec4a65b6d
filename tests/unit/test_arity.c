/* Unit tests of the arity table (src/format/arity.c, generated from cuda.h by
 * scripts/gen_arity.py) and of the stack-slot rule the agent applies to it. */
#include "unit.h"

#include "arity.h"

static void sorted_and_sane(void)
{
	CHECK(cuhook_arity_count > 500, "%u functions (cuda.h 13 declares over 600)", cuhook_arity_count);
	for (unsigned i = 1; i < cuhook_arity_count; i++)
		CHECK(strcmp(cuhook_arities[i - 1].func, cuhook_arities[i].func) < 0, "not sorted at %s",
		      cuhook_arities[i].func);
	for (unsigned i = 0; i < cuhook_arity_count; i++)
		CHECK(cuhook_arities[i].nparams >= -1 && cuhook_arities[i].nparams <= 32, "%s: %d",
		      cuhook_arities[i].func, cuhook_arities[i].nparams);
}

static void known_signatures(void)
{
	/* CUresult cuLaunchKernel(CUfunction f, gx, gy, gz, bx, by, bz, sharedMemBytes, hStream,
	 * void **kernelParams, void **extra): 11 parameters, 5 of them on the stack */
	CHECK(cuhook_arity_find("cuLaunchKernel") == 11, "cuLaunchKernel");
	CHECK(cuhook_arity_find("cuLaunchKernel_ptsz") == 11, "per-thread-stream variant");
	CHECK(cuhook_arity_find("cuCtxGetCurrent") == 1, "cuCtxGetCurrent");
	CHECK(cuhook_arity_find("cuInit") == 1, "cuInit");
	/* versioned export names, as the macros of cuda.h bind them */
	CHECK(cuhook_arity_find("cuMemAlloc_v2") == 2, "cuMemAlloc_v2");
	CHECK(cuhook_arity_find("cuMemcpyHtoD_v2_ptds") == 3, "cuMemcpyHtoD_v2_ptds");
	/* a struct by value (CUipcMemHandle, 64 bytes, goes on the stack): the count alone is not
	 * enough, so it is unknown */
	CHECK(cuhook_arity_find("cuIpcOpenMemHandle_v2") == -1, "cuIpcOpenMemHandle_v2");
	CHECK(cuhook_arity_find("cuFakeOuter") == -1, "not in cuda.h");
	CHECK(cuhook_arity_find("") == -1, "empty name");
	CHECK(cuhook_arity_find("culaunchkernel") == -1, "case-sensitive");
}

static void stack_slots(void)
{
	CHECK(cuhook_stack_slots("cuLaunchKernel", 6) == 5, "cuLaunchKernel: 5 slots");
	CHECK(cuhook_stack_slots("cuCtxGetCurrent", 6) == 0, "cuCtxGetCurrent: none");
	CHECK(cuhook_stack_slots("cuFakeOuter", 6) == 6, "unknown: all");
	CHECK(cuhook_stack_slots("cuIpcOpenMemHandle_v2", 6) == 6, "struct by value: all");
	CHECK(cuhook_stack_slots("cuLaunchKernel", 3) == 3, "never above the maximum");
	int wide = 0;
	for (unsigned i = 0; i < cuhook_arity_count; i++)
		if (cuhook_arities[i].nparams > 12) {
			CHECK(cuhook_stack_slots(cuhook_arities[i].func, 6) == 6, "%s", cuhook_arities[i].func);
			wide++;
		}
	CHECK(wide > 0, "cuda.h has functions with more than 12 parameters (cuTensorMapEncode*)");
}

static void reg_args(void)
{
	CHECK(cuhook_reg_args("cuCtxGetCurrent") == 1, "cuCtxGetCurrent: 1 register");
	CHECK(cuhook_reg_args("cuCtxSynchronize") == 0, "cuCtxSynchronize: none");
	CHECK(cuhook_reg_args("cuMemcpyHtoD_v2") == 3, "cuMemcpyHtoD_v2: 3");
	CHECK(cuhook_reg_args("cuLaunchKernel") == 6, "cuLaunchKernel: all six (it has stack slots)");
	CHECK(cuhook_reg_args("cuFakeOuter") == 6, "unknown: all six");
	CHECK(cuhook_reg_args("cuIpcOpenMemHandle_v2") == 6, "struct by value: all six");
	/* Every declared function: exactly its parameters, up to six, and stack slots only with six. */
	for (unsigned i = 0; i < cuhook_arity_count; i++) {
		const char *f = cuhook_arities[i].func;
		int n = cuhook_arities[i].nparams;
		unsigned want = n < 0 || n > 6 ? 6u : (unsigned)n;
		CHECK(cuhook_reg_args(f) == want, "%s: %u registers, want %u", f, cuhook_reg_args(f), want);
		CHECK(cuhook_stack_slots(f, 6) == 0 || cuhook_reg_args(f) == 6, "%s: stack slots with fewer registers", f);
	}
}

int main(void)
{
	RUN(sorted_and_sane);
	RUN(reg_args);
	RUN(known_signatures);
	RUN(stack_slots);
	UNIT_EXIT();
}
