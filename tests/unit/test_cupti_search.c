/* Unit tests of the CUPTI search order (src/agent/cupti_search.c): the candidates the agent
 * tries, in order, for an explicit path, a libcupti already loaded, the program's NVIDIA wheels
 * and libcudart, $CUDA_HOME / $CUDA_PATH, /usr/local/cuda and the loader's search. */
#include "unit.h"

#include "cupti_search.h"

static struct cupti_candidates c; /* 128 KiB: not on the stack */

/* The candidates, exactly these, in this order. */
static void expect(const char *const *want, unsigned n, unsigned nsearched)
{
	CHECK(c.n == n, "%u candidates, wanted %u", c.n, n);
	CHECK(c.nsearched == nsearched, "%u searched, wanted %u", c.nsearched, nsearched);
	for (unsigned i = 0; i < n && i < c.n; i++)
		CHECK(!strcmp(c.path[i], want[i]), "candidate %u: '%s', wanted '%s'", i, c.path[i], want[i]);
}

static void explicit_path_alone(void)
{
	const char *loaded[] = {"/usr/lib/libcupti.so.13", "/x/nvidia/cu13/lib/libcublas.so.13"};
	struct cupti_search_input in = {"/opt/my/libcupti.so", loaded, 2, "/cuda", NULL};
	cupti_search(&in, &c);
	const char *want[] = {"/opt/my/libcupti.so"};
	CHECK(c.kind == CUPTI_EXPLICIT, "kind %d", c.kind);
	expect(want, 1, 1);
}

static void loaded_one_alone(void)
{
	const char *loaded[] = {"", "/usr/lib/x86_64-linux-gnu/libc.so.6",
	                        "/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13",
	                        "/usr/local/cuda/lib64/libcupti.so.12"};
	struct cupti_search_input in = {"", loaded, 4, "/cuda", NULL};
	cupti_search(&in, &c);
	const char *want[] = {"/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13"};
	CHECK(c.kind == CUPTI_LOADED, "kind %d", c.kind);
	expect(want, 1, 1);
}

static void full_order(void)
{
	const char *loaded[] = {
	    "",
	    "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so",
	    "/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublas.so.13",
	    "/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13",
	    "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2", /* same wheels dir */
	    "relative/libcudart.so.13",                                         /* not a place */
	};
	struct cupti_search_input in = {NULL, loaded, 6, "/opt/cuda-13.0/", "/cudapath"};
	cupti_search(&in, &c);
	const char *want[] = {
	    "/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13",
	    "/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so",
	    "/venv/lib/python3.12/site-packages/nvidia/cuda_cupti/lib/libcupti.so.13",
	    "/venv/lib/python3.12/site-packages/nvidia/cuda_cupti/lib/libcupti.so",
	    /* libcudart's own directory is the cu13/lib one already; its toolkit's extras: */
	    "/venv/lib/python3.12/site-packages/nvidia/cu13/lib/../extras/CUPTI/lib64/libcupti.so.13",
	    "/venv/lib/python3.12/site-packages/nvidia/cu13/lib/../extras/CUPTI/lib64/libcupti.so",
	    "/opt/cuda-13.0/extras/CUPTI/lib64/libcupti.so.13",
	    "/opt/cuda-13.0/extras/CUPTI/lib64/libcupti.so",
	    "/opt/cuda-13.0/lib64/libcupti.so.13",
	    "/opt/cuda-13.0/lib64/libcupti.so",
	    "/cudapath/extras/CUPTI/lib64/libcupti.so.13",
	    "/cudapath/extras/CUPTI/lib64/libcupti.so",
	    "/cudapath/lib64/libcupti.so.13",
	    "/cudapath/lib64/libcupti.so",
	    "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
	    "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
	    "/usr/local/cuda/lib64/libcupti.so.13",
	    "/usr/local/cuda/lib64/libcupti.so",
	    "libcupti.so.13",
	    "libcupti.so",
	};
	CHECK(c.kind == CUPTI_SEARCHED, "kind %d", c.kind);
	expect(want, sizeof(want) / sizeof(want[0]), 18);
}

/* A toolkit's libcudart outside any wheel; no environment; a relative $CUDA_HOME is no place. */
static void toolkit_cudart(void)
{
	const char *loaded[] = {"/opt/cuda-13.1/lib64/libcudart.so.13.1.80"};
	struct cupti_search_input in = {NULL, loaded, 1, "cuda", NULL};
	cupti_search(&in, &c);
	const char *want[] = {
	    "/opt/cuda-13.1/lib64/libcupti.so.13",
	    "/opt/cuda-13.1/lib64/libcupti.so",
	    "/opt/cuda-13.1/lib64/../extras/CUPTI/lib64/libcupti.so.13",
	    "/opt/cuda-13.1/lib64/../extras/CUPTI/lib64/libcupti.so",
	    "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
	    "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
	    "/usr/local/cuda/lib64/libcupti.so.13",
	    "/usr/local/cuda/lib64/libcupti.so",
	    "libcupti.so.13",
	    "libcupti.so",
	};
	expect(want, sizeof(want) / sizeof(want[0]), 8);
}

static void names(void)
{
	CHECK(cupti_is_libcupti("/a/libcupti.so"), "libcupti.so");
	CHECK(cupti_is_libcupti("libcupti.so.13.0.1"), "versioned");
	CHECK(!cupti_is_libcupti("/a/libcupti.sox"), "not libcupti.sox");
	CHECK(!cupti_is_libcupti("/a/libcupti_static.so"), "not another library");
	CHECK(!cupti_is_libcupti("/libcupti.so/libc.so.6"), "the file name, not a directory");
}

int main(void)
{
	RUN(explicit_path_alone);
	RUN(loaded_one_alone);
	RUN(full_order);
	RUN(toolkit_cudart);
	RUN(names);
	UNIT_EXIT();
}
