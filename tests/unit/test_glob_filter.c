/* Unit tests of glob_filter_match (src/common/glob_filter.c): CUHOOK_FUNCS and --funcs. */
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

/* A thread, known by its tid and its name: an include may match either, an exclude of either
 * drops it (report --thread). */
static void several_names(void)
{
	const char *worker[] = {"1001", "worker"}, *main_thread[] = {"1000", "python"};
	CHECK(glob_filter_match_any("worker", worker, 2), "include by name");
	CHECK(glob_filter_match_any("1001", worker, 2), "include by tid");
	CHECK(!glob_filter_match_any("1001", main_thread, 2), "neither name included");
	CHECK(!glob_filter_match_any("-worker", worker, 2), "exclude by name");
	CHECK(glob_filter_match_any("-worker", main_thread, 2), "only excludes: the others pass");
	CHECK(!glob_filter_match_any("10*,-1001", worker, 2), "included by tid, excluded by tid");
	CHECK(!glob_filter_match_any("1001,-work*", worker, 2), "included by tid, excluded by name");
	CHECK(!glob_filter_match_any("1001,-work*", main_thread, 2), "not included");
	CHECK(glob_filter_match_any("", worker, 0), "no names, no includes: passes");
	CHECK(!glob_filter_match_any("w*", worker, 0), "no names cannot match an include");
}

/* A pattern too long to match anything is still an include: it must not turn the filter into
 * "everything" (it did when overlong patterns were skipped). glob_filter_check refuses it. */
static void overlong_patterns(void)
{
	char why[128];
	char longp[GLOB_PATTERN_MAX + 40], filter[2 * sizeof(longp)];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = 0;
	NO(longp, "cuInit");
	CHECK(glob_filter_check(longp, why, sizeof(why)) == -1, "an overlong pattern is refused");
	snprintf(filter, sizeof(filter), "cuInit,%s", longp);
	YES(filter, "cuInit");
	NO(filter, "cuLaunchKernel");
	snprintf(filter, sizeof(filter), "-%s", longp);
	YES(filter, "cuInit");              /* an overlong exclude excludes nothing */
	CHECK(glob_filter_check("cu*,-cudbg*, cuLaunch* ", why, sizeof(why)) == 0, "a normal filter is accepted");
	memset(longp + GLOB_PATTERN_MAX, 0, sizeof(longp) - GLOB_PATTERN_MAX);
	CHECK(glob_filter_check(longp, why, sizeof(why)) == 0, "a pattern of exactly GLOB_PATTERN_MAX is accepted");
	YES(longp, longp);
	snprintf(filter, sizeof(filter), "!%s", longp);
	CHECK(glob_filter_check(filter, why, sizeof(why)) == 0, "an exclude of GLOB_PATTERN_MAX is accepted");
	NO(filter, longp);
	/* One character more: refused whether include or exclude (the marker is not counted), as
	 * the pattern then matches nothing. */
	memset(longp, 'a', GLOB_PATTERN_MAX + 1);
	longp[GLOB_PATTERN_MAX + 1] = 0;
	CHECK(glob_filter_check(longp, why, sizeof(why)) == -1, "an include of GLOB_PATTERN_MAX + 1 is refused");
	NO(longp, longp);
	snprintf(filter, sizeof(filter), "-%s", longp);
	CHECK(glob_filter_check(filter, why, sizeof(why)) == -1, "an exclude of GLOB_PATTERN_MAX + 1 is refused");
}

/* Patterns fnmatch takes silently otherwise than meant (matching nothing, or a literal '['):
 * refused with the reason; well-formed brackets, classes and escapes pass. */
static void malformed_patterns(void)
{
	static const struct {
		const char *filter, *why; /* why: NULL when accepted */
	} cases[] = {
		{"cu[", "has a '[' without its ']'"},
		{"cuMem*,cu[A-Z", "has a '[' without its ']'"},
		{"-cu[", "has a '[' without its ']'"},
		{"cu[]", "has a '[' without its ']'"},      /* ']' first is a member: still open */
		{"cu[!]", "has a '[' without its ']'"},
		{"cu[a\\]", "has a '[' without its ']'"},   /* the ']' is escaped */
		{"[[:alpha:]", "has a '[' without its ']'"}, /* the class's ']' does not close the set */
		{"cu\\", "ends with a lone '\\'"},
		{"[[:bogus:]]", "names an unknown [:class:]"},
		{"cu[]]", NULL},
		{"cu[!]]x", NULL},
		{"cu[[:upper:]]*", NULL},
		{"[[:alpha]", NULL},                      /* '[', ':', 'a'... and its ']' */
		{"cu\\[", NULL},                          /* an escaped '[' is a character */
		{"cu[a-z]*, -cu[[:digit:]]", NULL},
		{"cu*,-cudbg*", NULL},
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char why[512] = "";
		int r = glob_filter_check(cases[i].filter, why, sizeof(why));
		if (!cases[i].why) {
			CHECK(r == 0, "'%s' should be accepted (%s)", cases[i].filter, why);
			continue;
		}
		CHECK(r == -1, "'%s' should be refused", cases[i].filter);
		CHECK(strstr(why, cases[i].why) != NULL, "'%s': reason '%s', wanted '%s'", cases[i].filter, why,
		      cases[i].why);
	}
	/* the pattern in the reason is the one at fault, shown safely */
	char why[512];
	CHECK(glob_filter_check("cuInit, cu\x1b[", why, sizeof(why)) == -1 &&
	          strcmp(why, "pattern 'cu\\x1b[' has a '[' without its ']'") == 0,
	      "reason: %s", why);
}

int main(void)
{
	RUN(empty_filter_matches_everything);
	RUN(overlong_patterns);
	RUN(malformed_patterns);
	RUN(includes);
	RUN(excludes);
	RUN(several_names);
	UNIT_EXIT();
}
