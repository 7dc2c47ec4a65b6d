/* names_user: kernels whose handles the program has before tracing begins, for the kernel-name
 * tests (tests/engine/check_kernel_names.py). It loads the stand-in libcuda, looks up three
 * kernels, builds and instantiates graph A (2 nodes) and only then lets tracing begin:
 *
 *   names_user LIBCUDA --agent AGENT   dlopen the agent now (constructor mode: CUHOOK_* set by
 *                                      the caller), do the work, sleep 1 s (the agent names
 *                                      handles every flush_ms, on its own thread), exit
 *   names_user LIBCUDA --wait          print "ready", wait for a line on stdin (the caller
 *                                      attaches meanwhile), do the work, print "done", wait for
 *                                      another line, exit
 *   names_user LIBCUDA --wait --window as --wait, for cuhook's names window (the stand-in CUPTI
 *                                      found by the agent): graph A launched every 10 ms until
 *                                      the stand-in CUPTI has recorded a launch's kernels (the
 *                                      window opened), then until a launch's are not recorded
 *                                      (it closed)
 *
 * The work, with tracing on: N_SCALE cuLaunchKernel of fake_scale_add, N_RELU cuLaunchKernelEx
 * of fake_relu, N_FILL cuLaunchKernel of fake::fill32; graph B made of fake_scale_add, fake_relu,
 * fake::fill32 (3 kernel nodes), instantiated and destroyed at once (as PyTorch does), launched
 * M_B times; graph A (instantiated before tracing) launched M_A times. It prints the counts as
 * "expect KEY N" lines. Exit status 0 only when every call succeeded. */
#include "fakecuda.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N_SCALE 7
#define N_RELU 5
#define N_FILL 3
#define M_B 4
#define M_A 2

#define FUNCS(X)                                                                                   \
	X(cuInit) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuMemAlloc_v2) X(cuModuleLoadData)  \
	X(cuModuleGetFunction) X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuGraphCreate)                 \
	X(cuGraphAddKernelNode_v2) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphDestroy)   \
	X(cuGraphExecDestroy) X(cuCtxSynchronize)

static struct {
#define X(n) __typeof__(n) *n;
	FUNCS(X)
#undef X
} D;

static int failures;

static void ok(CUresult r, const char *what)
{
	if (r != FAKE_SUCCESS) {
		fprintf(stderr, "names_user: %s failed: %d\n", what, r);
		failures++;
	}
}

static void *idle_main(void *arg)
{
	for (;;)
		pause();
	return arg;
}

static const char image[] = FAKE_IMAGE_MAGIC "\0fake_scale_add\0fake_relu\0_ZN4fake6fill32EPjjj\0";

int main(int argc, char **argv)
{
	if (argc < 3 || (strcmp(argv[2], "--wait") && (strcmp(argv[2], "--agent") || argc < 4))) {
		fprintf(stderr, "usage: names_user LIBCUDA --agent AGENT | --wait [--window]\n");
		return 2;
	}
	bool window = argc > 3 && !strcmp(argv[2], "--wait") && !strcmp(argv[3], "--window");
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "names_user: %s\n", dlerror());
		return 2;
	}
#define X(n)                                                                                       \
	if (!(D.n = (__typeof__(n) *)dlsym(lib, #n))) {                                                \
		fprintf(stderr, "names_user: no %s\n", #n);                                                \
		return 2;                                                                                  \
	}
	FUNCS(X)
#undef X
	CUcontext ctx;
	CUmodule mod;
	CUfunction scale, relu, fill;
	CUdeviceptr buf;
	ok(D.cuInit(0), "cuInit");
	ok(D.cuDevicePrimaryCtxRetain(&ctx, 0), "cuDevicePrimaryCtxRetain");
	ok(D.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	ok(D.cuMemAlloc_v2(&buf, 4096), "cuMemAlloc");
	ok(D.cuModuleLoadData(&mod, image), "cuModuleLoadData");
	ok(D.cuModuleGetFunction(&scale, mod, "fake_scale_add"), "get fake_scale_add");
	ok(D.cuModuleGetFunction(&relu, mod, "fake_relu"), "get fake_relu");
	ok(D.cuModuleGetFunction(&fill, mod, "_ZN4fake6fill32EPjjj"), "get fill32");
	if (failures)
		return 1;
	unsigned n = 256, mul = 3, add = 1, v = 7;
	void *p_scale[] = {&buf, &n, &mul, &add};
	void *p_relu[] = {&buf, &n};
	void *p_fill[] = {&buf, &n, &v};

	/* graph A, before tracing: 2 nodes */
	CUgraph ga;
	CUgraphNode node;
	CUgraphExec ea;
	CUDA_KERNEL_NODE_PARAMS np = {scale, 2, 1, 1, 128, 1, 1, 0, p_scale, NULL, NULL, NULL};
	ok(D.cuGraphCreate(&ga, 0), "cuGraphCreate A");
	ok(D.cuGraphAddKernelNode_v2(&node, ga, NULL, 0, &np), "node A1");
	np.func = relu;
	np.kernelParams = p_relu;
	ok(D.cuGraphAddKernelNode_v2(&node, ga, NULL, 0, &np), "node A2");
	ok(D.cuGraphInstantiateWithFlags(&ea, ga, 0), "instantiate A");

	if (!strcmp(argv[2], "--agent")) {
		if (!dlopen(argv[3], RTLD_NOW | RTLD_LOCAL)) {
			fprintf(stderr, "names_user: %s\n", dlerror());
			return 2;
		}
	} else {
		/* a second thread, as real programs have: cuhook attach then loads and prepares the
		 * agent beside the running threads (a one-thread process is prepared in the stop) */
		pthread_t idle;
		if (pthread_create(&idle, NULL, idle_main, NULL) != 0)
			return 2;
		char line[64];
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 2;
	}

	for (int i = 0; i < N_SCALE; i++)
		ok(D.cuLaunchKernel(scale, 2, 1, 1, 128, 1, 1, 0, NULL, p_scale, NULL), "launch scale");
	CUlaunchConfig cfg = {4, 2, 1, 64, 1, 1, 0, NULL, NULL, 0};
	for (int i = 0; i < N_RELU; i++)
		ok(D.cuLaunchKernelEx(&cfg, relu, p_relu, NULL), "launch relu");
	for (int i = 0; i < N_FILL; i++)
		ok(D.cuLaunchKernel(fill, 1, 1, 1, 256, 1, 1, 0, NULL, p_fill, NULL), "launch fill");

	/* graph B, while traced: 3 nodes, the graph destroyed right after its instantiation */
	CUgraph gb;
	CUgraphExec eb;
	ok(D.cuGraphCreate(&gb, 0), "cuGraphCreate B");
	CUDA_KERNEL_NODE_PARAMS nb[3] = {
		{scale, 8, 1, 1, 32, 1, 1, 0, p_scale, NULL, NULL, NULL},
		{relu, 8, 1, 1, 32, 1, 1, 0, p_relu, NULL, NULL, NULL},
		{fill, 1, 1, 1, 256, 1, 1, 0, p_fill, NULL, NULL, NULL},
	};
	for (int i = 0; i < 3; i++)
		ok(D.cuGraphAddKernelNode_v2(&node, gb, NULL, 0, &nb[i]), "node B");
	ok(D.cuGraphInstantiateWithFlags(&eb, gb, 0), "instantiate B");
	ok(D.cuGraphDestroy(gb), "destroy B");
	for (int i = 0; i < M_B; i++)
		ok(D.cuGraphLaunch(eb, NULL), "launch B");
	int launches_a = M_A;
	if (window) {
		unsigned long (*kernels)(void) = (unsigned long (*)(void))dlsym(lib, "fakecuda_profiler_kernels");
		if (!kernels) {
			fprintf(stderr, "names_user: no fakecuda_profiler_kernels\n");
			return 2;
		}
		/* The first launch opens the window. Launch until one is recorded (the window records),
		 * then until one is not (it closed): the first launch and the last are outside it. */
		launches_a = 0;
		bool seen = false;
		for (int i = 0;; i++) {
			if (i == 12000) {
				fprintf(stderr, "names_user: the names window %s within 120 s\n", seen ? "did not close" : "did not open");
				failures++;
				break;
			}
			unsigned long before = kernels();
			ok(D.cuGraphLaunch(ea, NULL), "launch A");
			launches_a++;
			bool recorded = kernels() != before;
			if (seen && !recorded)
				break;
			seen = seen || recorded;
			struct timespec t = {0, 10000000L};
			nanosleep(&t, NULL);
		}
	} else {
		for (int i = 0; i < M_A; i++)
			ok(D.cuGraphLaunch(ea, NULL), "launch A");
	}
	ok(D.cuCtxSynchronize(), "cuCtxSynchronize");

	printf("expect fake_scale_add %d %d\n", N_SCALE, M_B);
	printf("expect fake_relu %d %d\n", N_RELU, M_B);
	printf("expect fake::fill32(unsigned int*, unsigned int, unsigned int) %d %d\n", N_FILL, M_B);
	printf("expect graph_calls %d\n", M_B + launches_a);
	printf("expect graph_unknown %d\n", launches_a);
	if (!strcmp(argv[2], "--agent")) {
		/* the agent's names thread asks for names every flush_ms: let it see these launches
		 * before the trace ends at exit */
		struct timespec t = {1, 0};
		nanosleep(&t, NULL);
	} else {
		char line[64];
		printf("done\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 2;
	}
	return failures ? 1 : 0;
}
