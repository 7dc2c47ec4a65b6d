/* Unit tests of the agent option codec (src/common/agent_options.c): what the agent parses and
 * what cuhook builds and checks before it injects anything. */
#include "unit.h"

#include "agent_options.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* What a parse saw: the keys in order and their values. */
struct seen {
	int n;
	enum aopt_key key[16];
	char value[16][64];
	union aopt_value v[16];
};

static int record(void *ctx, enum aopt_key key, const char *value, const union aopt_value *v, char *err,
                  size_t errlen)
{
	struct seen *s = ctx;
	if (s->n == 16) {
		snprintf(err, errlen, "too many");
		return -1;
	}
	s->key[s->n] = key;
	snprintf(s->value[s->n], sizeof(s->value[0]), "%s", value);
	s->v[s->n++] = *v;
	return 0;
}

static void parse_in_order(void)
{
	struct seen s = {0};
	char err[512] = "";
	int r = aopt_parse("output=/t/x.bin;;funcs=cu*,-cudbg*;buffer_kb=2048;drop=yes;clock=monotonic;"
	                   "count=;stderr=0;output=/t/y.bin",
	                   record, &s, err, sizeof(err));
	CHECK(r == 0, "parse failed: %s", err);
	CHECK(s.n == 8, "8 items (the empty one skipped), got %d", s.n);
	CHECK(s.key[0] == AOPT_OUTPUT && !strcmp(s.value[0], "/t/x.bin"), "output first");
	CHECK(s.key[1] == AOPT_FUNCS && !strcmp(s.value[1], "cu*,-cudbg*"), "funcs: '%s'", s.value[1]);
	CHECK(s.key[2] == AOPT_BUFFER_KB && s.v[2].u == 2048, "buffer_kb 2048: %u", s.v[2].u);
	CHECK(s.key[3] == AOPT_DROP && s.v[3].b, "drop=yes is true");
	CHECK(s.key[4] == AOPT_CLOCK && !strcmp(aopt_defs[AOPT_CLOCK].choices[s.v[4].choice], "monotonic"),
	      "clock=monotonic");
	CHECK(s.key[5] == AOPT_COUNT && s.value[5][0] == 0, "an empty count list is a value");
	CHECK(s.key[6] == AOPT_STDERR && !s.v[6].b, "stderr=0");
	CHECK(s.key[7] == AOPT_OUTPUT && !strcmp(s.value[7], "/t/y.bin"), "a later output");
	char out[64];
	CHECK(aopt_get("output=/t/x.bin;funcs=a;output=/t/y.bin", AOPT_OUTPUT, out, sizeof(out)) == 1 &&
	          !strcmp(out, "/t/y.bin"),
	      "aopt_get takes the last one, as the agent does: '%s'", out);
	CHECK(aopt_get("xoutput=/a;funcs=output=/b", AOPT_OUTPUT, out, sizeof(out)) == 0 && !out[0],
	      "aopt_get matches whole keys only: '%s'", out);
}

/* Every bad item is refused with a reason that names the key, and nothing after it is seen. */
static void refusals(void)
{
	static const struct {
		const char *opts, *why;
	} bad[] = {
		{"bogus=1", "unknown option 'bogus'"},
		{"output", "has no '='"},
		{"Output=/x", "unknown option 'Output'"},
		{"buffer_kb=12", "'buffer_kb' must be a number from 64 to 1048576, not '12'"},
		{"buffer_kb=-1", "'buffer_kb' must be a number"},
		{"buffer_kb= 128", "'buffer_kb' must be a number"},
		{"buffer_kb=99999999999999999999", "'buffer_kb' must be a number"},
		{"flush_ms=0", "'flush_ms' must be a number from 1 to 60000"},
		{"verbose=4", "'verbose' must be a number from 0 to 3"},
		{"drop=maybe", "'drop' must be 0 or 1, not 'maybe'"},
		{"clock=hpet", "'clock' must be one of tsc, auto, monotonic, not 'hpet'"},
		{"funcs=cu[", "'funcs': pattern 'cu[' has a '[' without its ']'"},
		{"count=cuInit,cuMem[A-", "'count': pattern 'cuMem[A-' has a '[' without its ']'"},
		{"lib=libcuda.so[", "'lib': pattern 'libcuda.so[' has a '[' without its ']'"},
		{"ioctl_paths=", "'ioctl_paths' must not be empty"},
		{"output=", "'output' must not be empty"},
		{"drop=\x1b[2Jx\x07", "not '\\x1b[2Jx\\x07'"}, /* shown escaped */
		{"force=maybe", "'force' must be 0 or 1, not 'maybe'"},
		{"max_size=10K", "'max_size' must be 0 or a size of at least 64K (bytes, or with K, M, G), not '10K'"},
		{"max_size=65535", "'max_size' must be 0 or a size of at least 64K"},
		{"max_size=1.5M", "'max_size' must be 0 or a size"},
		{"max_size=-1", "'max_size' must be 0 or a size"},
		{"max_size=12Q", "'max_size' must be 0 or a size"},
		{"max_size=99999999999999999999", "'max_size' must be 0 or a size"},
		{"max_size=17179869184G", "'max_size' must be 0 or a size"}, /* 2^64 bytes */
		{"funcs=cu*;bogus=1;drop=1", "unknown option 'bogus'"},
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct seen s = {0};
		char err[512] = "";
		int r = aopt_parse(bad[i].opts, record, &s, err, sizeof(err));
		CHECK(r == -1, "'%s' should be refused", bad[i].opts);
		CHECK(strstr(err, bad[i].why) != NULL, "'%s': '%s', wanted '%s'", bad[i].opts, err, bad[i].why);
		CHECK(s.n == (i == sizeof(bad) / sizeof(bad[0]) - 1 ? 1 : 0), "'%s': %d items seen before", bad[i].opts,
		      s.n);
	}
	char err[512];
	char longv[AOPT_GLOBS_MAX + 16];
	memset(longv, 'a', sizeof(longv) - 1);
	longv[sizeof(longv) - 1] = 0;
	memcpy(longv, "funcs=", 6);
	CHECK(aopt_parse(longv, NULL, NULL, err, sizeof(err)) == -1 && strstr(err, "too long"), "%s", err);
	char pat[300] = "funcs=cu*,";
	memset(pat + 10, 'b', 260);
	pat[270] = 0;
	CHECK(aopt_parse(pat, NULL, NULL, err, sizeof(err)) == -1 && strstr(err, "longer than 255 characters"), "%s",
	      err);
}

/* The builder checks what it appends, and what it builds parses back to the same. */
static void build_and_read_back(void)
{
	char buf[256], err[512] = "";
	size_t pos = 0;
	CHECK(aopt_append(buf, sizeof(buf), &pos, "output", "/tmp/a b.bin", err, sizeof(err)) == 0, "%s", err);
	CHECK(aopt_append(buf, sizeof(buf), &pos, "funcs", "cuLaunch*,cuMem*", err, sizeof(err)) == 0, "%s", err);
	CHECK(aopt_append_item(buf, sizeof(buf), &pos, "flush_ms=20", err, sizeof(err)) == 0, "%s", err);
	CHECK(!strcmp(buf, "output=/tmp/a b.bin;funcs=cuLaunch*,cuMem*;flush_ms=20"), "built '%s'", buf);
	size_t before = pos;
	CHECK(aopt_append(buf, sizeof(buf), &pos, "output", "/tmp/x;drop=1", err, sizeof(err)) == -1 &&
	          strstr(err, "cannot contain ';'"),
	      "a ';' in a value is refused: %s", err);
	CHECK(aopt_append_item(buf, sizeof(buf), &pos, "flush_ms=1;bogus=2", err, sizeof(err)) == -1 &&
	          strstr(err, "cannot contain ';'"),
	      "an item with a ';' is refused: %s", err);
	CHECK(aopt_append_item(buf, sizeof(buf), &pos, "bogus=1", err, sizeof(err)) == -1 &&
	          strstr(err, "unknown option 'bogus'"),
	      "an unknown key is refused: %s", err);
	CHECK(aopt_append(buf, sizeof(buf), &pos, "funcs", "cu[", err, sizeof(err)) == -1, "a bad glob is refused");
	CHECK(pos == before && strlen(buf) == before, "refusals leave the string as it was: '%s'", buf);
	/* too long for the buffer: refused, the string unchanged */
	char small[24];
	size_t p2 = 0;
	CHECK(aopt_append(small, sizeof(small), &p2, "output", "/a/rather/long/path.bin", err, sizeof(err)) == -1 &&
	          p2 == 0 && small[0] == 0,
	      "overflow refused: %s", err);
	struct seen s = {0};
	CHECK(aopt_parse(buf, record, &s, err, sizeof(err)) == 0 && s.n == 3 && s.v[2].u == 20, "read back: %s", err);
	CHECK(aopt_check_item("ioctl=1", err, sizeof(err)) == 0, "a good item");
}

/* Sizes (max_size=): bytes or K/M/G/T, powers of 1024; 0 or empty is no cap. */
static void sizes(void)
{
	static const struct {
		const char *opts;
		uint64_t bytes;
	} good[] = {
		{"max_size=65536", 65536},  {"max_size=64K", 65536},       {"max_size=2M", 2097152},
		{"max_size=2mib", 2097152}, {"max_size=100003", 100003},   {"max_size=1G", 1ull << 30},
		{"max_size=3T", 3ull << 40}, {"max_size=0", 0},            {"max_size=", 0},
	};
	for (unsigned i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct seen s = {0};
		char err[512] = "";
		CHECK(aopt_parse(good[i].opts, record, &s, err, sizeof(err)) == 0, "'%s' refused: %s", good[i].opts, err);
		CHECK(s.n == 1 && s.key[0] == AOPT_MAX_SIZE && s.v[0].size == good[i].bytes, "'%s': %llu bytes, wanted %llu",
		      good[i].opts, (unsigned long long)s.v[0].size, (unsigned long long)good[i].bytes);
	}
	struct seen s = {0};
	char err[512] = "";
	CHECK(aopt_parse("force=1;force=off", record, &s, err, sizeof(err)) == 0 && s.n == 2 &&
	          s.key[0] == AOPT_FORCE && s.v[0].b && !s.v[1].b,
	      "force is a boolean: %s", err);
}

/* The watch of cuhook attach (injector=, deadline_ms=): numbers in range, and never read from a
 * CUHOOK_ variable (constructor mode has no injector). */
static void watch_keys(void)
{
	struct seen s = {0};
	char err[512] = "";
	CHECK(aopt_parse("injector=4194304;deadline_ms=4294967295;deadline_ms=1", record, &s, err, sizeof(err)) == 0,
	      "refused: %s", err);
	CHECK(s.n == 3 && s.key[0] == AOPT_INJECTOR && s.v[0].u == 4194304 && s.key[1] == AOPT_DEADLINE_MS &&
	          s.v[1].u == 4294967295u && s.v[2].u == 1,
	      "values as given (%d items)", s.n);
	static const struct {
		const char *opts, *why;
	} bad[] = {
		{"injector=0", "'injector' must be a number from 1 to 2147483647, not '0'"},
		{"injector=-3", "'injector' must be a number"},
		{"injector=2147483648", "'injector' must be a number"},
		{"injector=", "'injector' must be a number"},
		{"deadline_ms=0", "'deadline_ms' must be a number from 1 to 4294967295, not '0'"},
		{"deadline_ms=4294967296", "'deadline_ms' must be a number"},
		{"deadline_ms=1.5", "'deadline_ms' must be a number"},
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(aopt_parse(bad[i].opts, NULL, NULL, err, sizeof(err)) == -1 && strstr(err, bad[i].why),
		      "'%s': '%s', wanted '%s'", bad[i].opts, err, bad[i].why);
	}
	for (int k = 0; k < AOPT_NKEYS; k++)
		CHECK(aopt_defs[k].no_env == (k == AOPT_INJECTOR || k == AOPT_DEADLINE_MS), "key %s: no_env %d",
		      aopt_defs[k].name, aopt_defs[k].no_env);
}

/* gpu= and cupti= (the GPU side, src/agent/gpu_activity.h): read as given; a cupti= without a
 * path is refused, as is a gpu= that is not a truth value. */
static void gpu_keys(void)
{
	struct seen s = {0};
	char err[512] = "";
	CHECK(aopt_parse("gpu=1;cupti=/opt/cuda/extras/CUPTI/lib64/libcupti.so.13", record, &s, err, sizeof(err)) == 0,
	      "parse failed: %s", err);
	CHECK(s.n == 2 && s.key[0] == AOPT_GPU && s.v[0].b, "gpu=1 is true");
	CHECK(s.key[1] == AOPT_CUPTI && !strcmp(s.value[1], "/opt/cuda/extras/CUPTI/lib64/libcupti.so.13"),
	      "cupti as given: '%s'", s.value[1]);
	CHECK(aopt_parse("cupti=", NULL, NULL, err, sizeof(err)) == -1 && strstr(err, "'cupti' must not be empty"),
	      "an empty cupti= is refused: '%s'", err);
	CHECK(aopt_parse("gpu=2", NULL, NULL, err, sizeof(err)) == -1 && strstr(err, "'gpu' must be 0 or 1"),
	      "gpu=2 is refused: '%s'", err);
	char n[64];
	CHECK(!strcmp(aopt_env_name(AOPT_GPU, n, sizeof(n)), "CUHOOK_GPU"), "%s", n);
	CHECK(!strcmp(aopt_env_name(AOPT_CUPTI, n, sizeof(n)), "CUHOOK_CUPTI"), "%s", n);
	CHECK(!aopt_defs[AOPT_GPU].no_env && !aopt_defs[AOPT_CUPTI].no_env, "both from the environment too");
}

/* The capture keys (src/agent/capture_range.h): Nsight Systems' names, the default first (what
 * an empty value means), and milliseconds as 32-bit numbers. */
static void capture_keys(void)
{
	struct seen s = {0};
	char err[512] = "";
	CHECK(aopt_parse("capture_range=cudaProfilerApi;capture_range_end=stop;capture_ranges=3;delay_ms=0;"
	                 "duration_ms=4294967295;capture_range=;capture_range_end=",
	                 record, &s, err, sizeof(err)) == 0, "parse failed: %s", err);
	CHECK(s.n == 7, "7 items, got %d", s.n);
	CHECK(s.key[0] == AOPT_CAPTURE_RANGE && s.v[0].choice == 1, "cudaProfilerApi is choice 1: %u", s.v[0].choice);
	CHECK(s.key[1] == AOPT_CAPTURE_RANGE_END && !strcmp(aopt_defs[AOPT_CAPTURE_RANGE_END].choices[s.v[1].choice], "stop"),
	      "capture_range_end=stop");
	CHECK(s.key[2] == AOPT_CAPTURE_RANGES && s.v[2].u == 3, "capture_ranges=3: %u", s.v[2].u);
	CHECK(s.key[3] == AOPT_DELAY_MS && s.v[3].u == 0, "delay_ms=0");
	CHECK(s.key[4] == AOPT_DURATION_MS && s.v[4].u == 4294967295u, "duration_ms at its largest: %u", s.v[4].u);
	CHECK(s.v[5].choice == 0 && !strcmp(aopt_defs[AOPT_CAPTURE_RANGE].choices[0], "none"),
	      "an empty capture_range= is none");
	CHECK(s.v[6].choice == 0 && !strcmp(aopt_defs[AOPT_CAPTURE_RANGE_END].choices[0], "repeat"),
	      "an empty capture_range_end= is repeat, the default");
	static const struct {
		const char *opts, *why;
	} bad[] = {
		{"capture_range=nvtx", "'capture_range' must be one of none, cudaProfilerApi, not 'nvtx'"},
		{"capture_range=cudaprofilerapi", "'capture_range' must be one of none, cudaProfilerApi"},
		{"capture_range_end=stop-shutdown", "'capture_range_end' must be one of repeat, stop, none, not 'stop-shutdown'"},
		{"capture_range_end=repeat:2", "'capture_range_end' must be one of repeat, stop, none, not 'repeat:2'"},
		{"capture_ranges=-1", "'capture_ranges' must be a number from 0 to 4294967295"},
		{"delay_ms=4294967296", "'delay_ms' must be a number from 0 to 4294967295"},
		{"duration_ms=1.5", "'duration_ms' must be a number from 0 to 4294967295, not '1.5'"},
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(aopt_parse(bad[i].opts, NULL, NULL, err, sizeof(err)) == -1 && strstr(err, bad[i].why),
		      "%s: refused saying '%s'; got '%s'", bad[i].opts, bad[i].why, err);
	}
	char n[64];
	CHECK(!strcmp(aopt_env_name(AOPT_CAPTURE_RANGE_END, n, sizeof(n)), "CUHOOK_CAPTURE_RANGE_END"), "%s", n);
	CHECK(!strcmp(aopt_env_name(AOPT_DURATION_MS, n, sizeof(n)), "CUHOOK_DURATION_MS"), "%s", n);
}

static void env_names(void)
{
	char n[64];
	CHECK(!strcmp(aopt_env_name(AOPT_BUFFER_KB, n, sizeof(n)), "CUHOOK_BUFFER_KB"), "%s", n);
	CHECK(!strcmp(aopt_env_name(AOPT_IOCTL_PATHS, n, sizeof(n)), "CUHOOK_IOCTL_PATHS"), "%s", n);
	for (int k = 0; k < AOPT_NKEYS; k++) {
		CHECK(aopt_defs[k].name != NULL, "key %d has a name", k);
		CHECK(aopt_find(aopt_defs[k].name, strlen(aopt_defs[k].name)) == k, "key %d found by name", k);
	}
	CHECK(aopt_find("out", 3) == -1 && aopt_find("outputs", 7) == -1, "whole names only");
}

int main(void)
{
	RUN(parse_in_order);
	RUN(refusals);
	RUN(build_and_read_back);
	RUN(sizes);
	RUN(watch_keys);
	RUN(gpu_keys);
	RUN(capture_keys);
	RUN(env_names);
	UNIT_EXIT();
}
