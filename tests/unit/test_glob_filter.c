/* Unit tests of glob_filter_match (src/trampoline/glob_filter.c): CUHOOK_FUNCS and --funcs. */
#include "unit.h"

#include "glob_filter.h"

#include <stdio.h>
#include <string.h>

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
	YES("cuInit ", "cuInit");           /* and trailing ones */
	YES("cuLaunch*\t, cuInit ,x", "cuInit");
	YES(" cuLaunch* ,\tcuMem*\t", "cuMemAlloc_v2");
	NO("cuInit ,cuMem*", "cuInit_v2");
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

/* A pattern too long to match anything is still an include: it must not turn the filter into
 * "everything" (it did when overlong patterns were skipped). glob_filter_check refuses it. */
static void overlong_patterns(void)
{
	char longp[GLOB_PATTERN_MAX + 40], filter[2 * sizeof(longp)];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = 0;
	NO(longp, "cuInit");
	CHECK(glob_filter_check(longp) == -1, "an overlong pattern is refused");
	snprintf(filter, sizeof(filter), "cuInit,%s", longp);
	YES(filter, "cuInit");
	NO(filter, "cuLaunchKernel");
	snprintf(filter, sizeof(filter), "-%s", longp);
	YES(filter, "cuInit");              /* an overlong exclude excludes nothing */
	CHECK(glob_filter_check("cu*,-cudbg*, cuLaunch* ") == 0, "a normal filter is accepted");
	memset(longp + GLOB_PATTERN_MAX, 0, sizeof(longp) - GLOB_PATTERN_MAX);
	CHECK(glob_filter_check(longp) == 0, "a pattern of exactly GLOB_PATTERN_MAX is accepted");
	YES(longp, longp);
	snprintf(filter, sizeof(filter), "!%s", longp);
	CHECK(glob_filter_check(filter) == 0, "an exclude of GLOB_PATTERN_MAX is accepted");
	NO(filter, longp);
	/* One character more: refused whether include or exclude (the marker is not counted), as
	 * the pattern then matches nothing. */
	memset(longp, 'a', GLOB_PATTERN_MAX + 1);
	longp[GLOB_PATTERN_MAX + 1] = 0;
	CHECK(glob_filter_check(longp) == -1, "an include of GLOB_PATTERN_MAX + 1 is refused");
	NO(longp, longp);
	snprintf(filter, sizeof(filter), "-%s", longp);
	CHECK(glob_filter_check(filter) == -1, "an exclude of GLOB_PATTERN_MAX + 1 is refused");
}

int main(void)
{
	RUN(empty_filter_matches_everything);
	RUN(overlong_patterns);
	RUN(includes);
	RUN(excludes);
	UNIT_EXIT();
}
