/* Unit tests of glob_filter_match (src/trampoline/glob_filter.c): CUHOOK_FUNCS and --funcs. */
#include "unit.h"

#include "glob_filter.h"

#define YES(filter, name) CHECK(glob_filter_match((filter), (name)), "'%s' should match '%s'", (filter), (name))
#define NO(filter, name) CHECK(!glob_filter_match((filter), (name)), "'%s' should not match '%s'", (filter), (name))

static void empty_filter_matches_everything(void)
{
	YES("", "cuInit");
	YES("", "");
	CHECK(glob_filter_match(NULL, "cuInit"), "NULL filter");
	YES(",", "cuInit");    /* only empty patterns */
	YES(",,,", "cuInit");
}

static void includes(void)
{
	YES("cu*", "cuInit");
	YES("cu*", "cu");
	NO("cu*", "nvmlInit");
	NO("cu*", "xcuInit");
	YES("cuInit", "cuInit");
	NO("cuInit", "cuInit_v2");
	YES("cuMemcpy*,cuLaunch*", "cuLaunchKernel");
	YES("cuMemcpy*,cuLaunch*", "cuMemcpyHtoD_v2");
	NO("cuMemcpy*,cuLaunch*", "cuInit");
	YES("cuCtx?etCurrent", "cuCtxGetCurrent");
	YES("cuCtx?etCurrent", "cuCtxSetCurrent");
	YES("cu[A-Z]*", "cuInit");
	NO("cu[A-Z]*", "cudbgApiInit");
	NO("CU*", "cuInit");                /* case-sensitive */
	YES(" cuInit", "cuInit");           /* leading blanks are skipped */
	YES("cuInit,,cuLaunch*", "cuInit"); /* empty patterns are ignored */
}

static void excludes(void)
{
	NO("cu*,-cuGetProcAddress*", "cuGetProcAddress_v2");
	YES("cu*,-cuGetProcAddress*", "cuInit");
	NO("cu*,!cudbg*", "cudbgApiInit");
	YES("cu*,!cudbg*", "cuInit");
	/* an exclude wins wherever it stands */
	NO("-cuInit,cu*", "cuInit");
	NO("cuInit,-cuInit", "cuInit");
	/* only excludes: everything else passes */
	YES("-cudbg*", "cuInit");
	NO("-cudbg*", "cudbgMain");
	YES("!cudbg*,-cuGetExportTable", "cuLaunchKernel");
	NO("!cudbg*,-cuGetExportTable", "cuGetExportTable");
	/* a bare '-' or '!' is an empty pattern: ignored */
	YES("-", "cuInit");
	YES("!", "cuInit");
	NO("*,-*", "cuInit");
	NO("cuMem*,-cuMemFree*", "cuInit");
	YES("cuMem*,-cuMemFree*", "cuMemAlloc_v2");
	NO("cuMem*,-cuMemFree*", "cuMemFree_v2");
	YES(" -x, cu*", "cuInit");
	NO(" -x, cu*", "x");
}

int main(void)
{
	RUN(empty_filter_matches_everything);
	RUN(includes);
	RUN(excludes);
	UNIT_EXIT();
}
