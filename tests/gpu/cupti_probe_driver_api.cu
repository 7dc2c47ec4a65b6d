// Driver-API records when CUPTI is enabled before or after cuInit (issue 16, docs/validation.md).
// Variant letters (argv[1]): b = enable before CUDA init, c = cuptiActivityEnableDriverApi(cuLaunchKernel),
// D = CUPTI_ACTIVITY_KIND_DRIVER, R = RUNTIME kind, s = subscribe+unsubscribe first, k = keep it, t = a second thread,
// o = then every cbid but cuLaunchKernel disabled one by one.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
__global__ void k1(float *a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] += 1; }
static void CUPTIAPI breq(uint8_t **b, size_t *sz, size_t *max) { *sz = 1 << 22; *b = (uint8_t *)aligned_alloc(8, *sz); *max = 0; }
static int nk, na, nrt;
static void CUPTIAPI bdone(CUcontext c, uint32_t sid, uint8_t *buf, size_t size, size_t valid) {
	CUpti_Activity *r = NULL;
	while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
		if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) nk++;
		else if (r->kind == CUPTI_ACTIVITY_KIND_DRIVER) na++;
		else if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME) nrt++;
	}
	free(buf);
}
static void subcb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *p) {}
static float *d;
/* ns per cuCtxGetCurrent, over 10^6 calls: what CUPTI adds to every driver call it records */
static double ctx_get_ns(void) { CUcontext c; struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < 1000000; i++) cuCtxGetCurrent(&c); clock_gettime(CLOCK_MONOTONIC, &b);
	return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e6; }
static void *launcher(void *x) { for (int i = 0; i < 100; i++) k1<<<1, 32>>>(d, 32); cudaDeviceSynchronize(); return 0; }
int main(int argc, char **argv) {
	const char *v = argv[1];
	int before = strchr(v, 'b') != 0;   // enable before CUDA init
	double ns_off = 0;
	if (!before) { cudaMalloc(&d, 4096); cudaDeviceSynchronize(); ns_off = ctx_get_ns(); }
	if (strchr(v, 's')) { CUpti_SubscriberHandle s; cuptiSubscribe(&s, (CUpti_CallbackFunc)subcb, 0); if (strchr(v, 'k')) cuptiEnableDomain(1, s, CUPTI_CB_DOMAIN_DRIVER_API); else cuptiUnsubscribe(s); }
	cuptiActivityRegisterCallbacks(breq, bdone);
	if (strchr(v, 'D')) cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
	if (strchr(v, 'R')) cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
	if (strchr(v, 'o')) /* every other cbid off, one by one (cuLaunchKernel left alone) */
		for (int cb = 1; cb < CUPTI_DRIVER_TRACE_CBID_SIZE; cb++)
			if (cb != CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) cuptiActivityEnableDriverApi(cb, 0);
	if (strchr(v, 'c')) printf("enable cbid -> %d\n", cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1));
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	if (before) { cudaMalloc(&d, 4096); cudaDeviceSynchronize(); }
	launcher(0);
	if (strchr(v, 't')) { pthread_t t; pthread_create(&t, 0, launcher, 0); pthread_join(t, 0); }
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	int k = nk, a = na, rt = nrt;   /* before the timing loop's own records */
	double ns_on = ctx_get_ns();
	printf("variant %-6s kernels %d driver api %d runtime api %d; cuCtxGetCurrent %.1f ns before enabling, %.1f ns after\n",
	       v, k, a, rt, ns_off, ns_on);
	return 0;
}
