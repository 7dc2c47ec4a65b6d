// Driver-API records when CUPTI is enabled before or after cuInit (issue 16, docs/validation.md).
// Variant letters (argv[1]): b = enable before CUDA init, c = cuptiActivityEnableDriverApi(cuLaunchKernel),
// D = CUPTI_ACTIVITY_KIND_DRIVER, R = RUNTIME kind, s = subscribe+unsubscribe first, k = keep it, t = a second thread.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
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
static void *launcher(void *x) { for (int i = 0; i < 100; i++) k1<<<1, 32>>>(d, 32); cudaDeviceSynchronize(); return 0; }
int main(int argc, char **argv) {
	const char *v = argv[1];
	int before = strchr(v, 'b') != 0;   // enable before CUDA init
	if (!before) { cudaMalloc(&d, 4096); cudaDeviceSynchronize(); }
	if (strchr(v, 's')) { CUpti_SubscriberHandle s; cuptiSubscribe(&s, (CUpti_CallbackFunc)subcb, 0); if (strchr(v, 'k')) cuptiEnableDomain(1, s, CUPTI_CB_DOMAIN_DRIVER_API); else cuptiUnsubscribe(s); }
	cuptiActivityRegisterCallbacks(breq, bdone);
	if (strchr(v, 'D')) cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
	if (strchr(v, 'R')) cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
	if (strchr(v, 'c')) printf("enable cbid -> %d\n", cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1));
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	if (before) { cudaMalloc(&d, 4096); cudaDeviceSynchronize(); }
	launcher(0);
	if (strchr(v, 't')) { pthread_t t; pthread_create(&t, 0, launcher, 0); pthread_join(t, 0); }
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	printf("variant %-6s kernels %d driver api %d runtime api %d\n", v, nk, na, nrt);
	return 0;
}
