/* rt_longjmp: longjmp out of traced calls. cuFakeCallback(cb, x, arg) returns cb(x, arg) + 1,
 * and cb longjmps out of it, skipping the traced call's return.
 *   phase "inside" (INSIDE times): cuFakeCallback(outer_cb, j) at depth 0; outer_cb calls
 *       cuFakeCallback(jump_cb, j) (depth 1), whose jump_cb calls cuFakeInner(j + 100000)
 *       (depth 2) and longjmps back into outer_cb (skipping the depth-1 call), which returns
 *       2j normally: the outer call returns 2j + 1.
 *   phase "out" (OUT times): cuFakeCallback(jump_cb, j) at depth 0; jump_cb calls
 *       cuFakeInner(j + 200000) (depth 1) and longjmps back to main, past every traced call.
 *       Then main calls cuFakeInner(j) and cuFakeConstB() (both depth 0).
 *   phase "after" (AFTER times): cuFakeConstC() (depth 0).
 * Every result is checked.
 *
 * usage: rt_longjmp [--agent PATH] [--inside N] [--out N] [--after N] LIBCUDA
 * prints: "inside N", "out N", "after N", "bad N"; exit 3 if a result was wrong. */
#include "robust_common.h"

#include <setjmp.h>

static __typeof__(cuFakeCallback) *f_cb;
static __typeof__(cuFakeInner) *f_inner;
static long bad;

struct jump_arg {
	jmp_buf *env;
	int offset;
};

static int jump_cb(int x, void *arg)
{
	struct jump_arg *a = arg;
	if (f_inner(x + a->offset) != ((x + a->offset) ^ 0x1234))
		bad++;
	longjmp(*a->env, 1);
}

static int outer_cb(int x, void *arg)
{
	(void)arg;
	jmp_buf env;
	struct jump_arg a = {&env, 100000};
	if (setjmp(env) == 0) {
		f_cb(jump_cb, x, &a);
		bad++; /* not reached */
		return -1;
	}
	return 2 * x;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rt_longjmp [--agent PATH] [--inside N] ... LIBCUDA\n");
		return 2;
	}
	const char *agent = rt_opt(argc, argv, "--agent");
	long n_inside = rt_opt_long(argc, argv, "--inside", 20);
	long n_out = rt_opt_long(argc, argv, "--out", 200);
	long n_after = rt_opt_long(argc, argv, "--after", 20);

	void *lib = rt_load(agent, argv[argc - 1]);
	f_cb = RT_FN(lib, cuFakeCallback);
	f_inner = RT_FN(lib, cuFakeInner);
	__typeof__(cuFakeConstB) *constb = RT_FN(lib, cuFakeConstB);
	__typeof__(cuFakeConstC) *constc = RT_FN(lib, cuFakeConstC);

	for (long j = 0; j < n_inside; j++)
		if (f_cb(outer_cb, (int)j, NULL) != 2 * (int)j + 1)
			bad++;

	for (volatile long j = 0; j < n_out; j++) {
		jmp_buf env;
		struct jump_arg a = {&env, 200000};
		if (setjmp(env) == 0) {
			f_cb(jump_cb, (int)j, &a);
			bad++; /* not reached */
		} else {
			if (f_inner((int)j) != ((int)j ^ 0x1234))
				bad++;
			if (constb() != 0x5a)
				bad++;
		}
	}

	for (long i = 0; i < n_after; i++)
		if (constc() != 999)
			bad++;

	printf("inside %ld\nout %ld\nafter %ld\nbad %ld\n", n_inside, n_out, n_after, bad);
	return bad ? 3 : 0;
}
