/* rt_recurse: recursion through a traced entry point deeper than the agent's shadow stack.
 * cuFakeRecurse(n, acc) makes n nested calls of itself (fakecuda.h); the program compares the
 * result with the reference computed here, then makes FOLLOW calls of cuFakeInner (which must be
 * traced normally again: depth 0, with an exit), and repeats all that REPEAT times.
 *
 * usage: rt_recurse [--agent PATH] [--depth N] [--repeat R] [--follow M] LIBCUDA
 * prints: "depth N", "repeat R", "follow M", "result 0x..." per repetition, "bad N"; exit 3 on a
 * wrong result. */
#include "robust_common.h"

/* fakecuda.h: R(1, acc) = acc*31 + 1; R(n, acc) = R(n-1, acc*31 + n) * 3 + n */
static unsigned reference(unsigned n, unsigned acc)
{
	if (n <= 1)
		return acc * 31u + 1u;
	return reference(n - 1, acc * 31u + n) * 3u + n;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rt_recurse [--agent PATH] [--depth N] ... LIBCUDA\n");
		return 2;
	}
	const char *agent = rt_opt(argc, argv, "--agent");
	unsigned depth = (unsigned)rt_opt_long(argc, argv, "--depth", 300);
	long repeat = rt_opt_long(argc, argv, "--repeat", 3);
	long follow = rt_opt_long(argc, argv, "--follow", 10);

	void *lib = rt_load(agent, argv[argc - 1]);
	__typeof__(cuFakeRecurse) *rec = RT_FN(lib, cuFakeRecurse);
	__typeof__(cuFakeInner) *inner = RT_FN(lib, cuFakeInner);

	long bad = 0;
	printf("depth %u\nrepeat %ld\nfollow %ld\n", depth, repeat, follow);
	for (long r = 0; r < repeat; r++) {
		unsigned seed = 0x1000u + (unsigned)r;
		unsigned got = rec(depth, seed), want = reference(depth, seed);
		printf("result 0x%08x\n", got);
		if (got != want) {
			fprintf(stderr, "rt_recurse: cuFakeRecurse(%u, 0x%x) = 0x%x, expected 0x%x\n", depth,
			        seed, got, want);
			bad++;
		}
		for (long i = 0; i < follow; i++)
			if (inner((int)i) != ((int)i ^ 0x1234))
				bad++;
	}
	printf("bad %ld\n", bad);
	return bad ? 3 : 0;
}
