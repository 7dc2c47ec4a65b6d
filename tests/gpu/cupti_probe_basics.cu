// CUPTI on the real driver, the basics the GPU side relies on (issue 16, docs/validation.md): per-cbid
// driver records, system thread ids, the timestamp callback, graph kernels, one subscriber.
// Build: nvcc -O2 -o probe cupti_probe_basics.cu -L$CUPTI_LIB -lcupti -lcuda -Xlinker -rpath=$CUPTI_LIB
// ./probe: per-cbid records enabled before CUDA init; ./probe late: CUDA initialised first, then
// CUPTI_ACTIVITY_KIND_DRIVER (which functions get driver records then). Prints records per function.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <x86intrin.h>
#include <time.h>
__global__ void k1(float *a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] += 1; }
__global__ void k2(float *a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= 2; }
static double ns_per_tick;
static uint64_t t0;
static uint64_t CUPTIAPI ts_cb(void) { return (uint64_t)((__rdtsc() - t0) * ns_per_tick) + 1000000000ull; }
static void CUPTIAPI breq(uint8_t **b, size_t *sz, size_t *max) { *sz = 1 << 20; *b = (uint8_t *)aligned_alloc(8, *sz); *max = 0; }
static int nk, nm, ns, na, nother;
static int bycb[4096];
static void CUPTIAPI bdone(CUcontext c, uint32_t sid, uint8_t *buf, size_t size, size_t valid) {
	CUpti_Activity *r = NULL;
	printf("bdone tid %ld valid %zu\n", syscall(SYS_gettid), valid);
	while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
		switch (r->kind) {
		case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: { CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)r; nk++;
			if (nk < 8 || k->graphId) printf("K corr %u %s start %llu end %llu dev %u ctx %u str %u grid %d block %d regs %u graph %u node %llu\n", k->correlationId, k->name, (unsigned long long)k->start, (unsigned long long)k->end, k->deviceId, k->contextId, k->streamId, k->gridX, k->blockX, k->registersPerThread, k->graphId, (unsigned long long)k->graphNodeId); break; }
		case CUPTI_ACTIVITY_KIND_MEMCPY: { CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)r; nm++; printf("M corr %u kind %u bytes %llu start %llu end %llu graph %u\n", m->correlationId, m->copyKind, (unsigned long long)m->bytes, (unsigned long long)m->start, (unsigned long long)m->end, m->graphId); break; }
		case CUPTI_ACTIVITY_KIND_MEMSET: { CUpti_ActivityMemset4 *m = (CUpti_ActivityMemset4 *)r; ns++; printf("S corr %u bytes %llu val %u start %llu\n", m->correlationId, (unsigned long long)m->bytes, m->value, (unsigned long long)m->start); break; }
		case CUPTI_ACTIVITY_KIND_DRIVER: { CUpti_ActivityAPI *a = (CUpti_ActivityAPI *)r; na++; if (a->cbid < 4096) bycb[a->cbid]++; break; if (na < 12 || a->cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch) printf("A corr %u cbid %u tid %u start %llu end %llu ret %u\n", a->correlationId, a->cbid, a->threadId, (unsigned long long)a->start, (unsigned long long)a->end, a->returnValue); break; }
		default: nother++; printf("other kind %d\n", r->kind);
		}
	}
	size_t d = 0; cuptiActivityGetNumDroppedRecords(c, sid, &d); if (d) printf("dropped %zu\n", d);
	free(buf);
}
#define CK(x) do { CUptiResult _r = (x); if (_r) { const char *s; cuptiGetResultString(_r, &s); printf("%s -> %d %s\n", #x, _r, s); } } while (0)
static void subcb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *p) {}
int main(int argc, char **argv) {
	int late = argc > 1; if (late) { void *p; cudaMalloc(&p, 16); cudaDeviceSynchronize(); }
	struct timespec a, b; uint64_t ta, tb; clock_gettime(CLOCK_MONOTONIC, &a); ta = __rdtsc(); usleep(100000); clock_gettime(CLOCK_MONOTONIC, &b); tb = __rdtsc();
	ns_per_tick = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double)(tb - ta); t0 = __rdtsc();
	uint32_t v = 0; cuptiGetVersion(&v); printf("cupti version %u main tid %ld\n", v, syscall(SYS_gettid));
	CUpti_SubscriberHandle s1, s2; CK(cuptiSubscribe(&s1, (CUpti_CallbackFunc)subcb, NULL)); CK(cuptiSubscribe(&s2, (CUpti_CallbackFunc)subcb, NULL)); CK(cuptiUnsubscribe(s1));
	CK(cuptiActivityRegisterTimestampCallback(ts_cb));
	CK(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM));
	CK(cuptiActivityRegisterCallbacks(breq, bdone));
	CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)); CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY)); CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
	int nen = 0; if (late) { CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER)); } else for (int cb = 1; cb < CUPTI_DRIVER_TRACE_CBID_SIZE; cb++) { const char *nm = NULL; if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cb, &nm) || !nm) continue;
		if (!strncmp(nm, "cuLaunch", 8) || !strncmp(nm, "cuMemcpy", 8) || !strncmp(nm, "cuMemset", 8) || !strncmp(nm, "cuGraphLaunch", 13)) { if (cuptiActivityEnableDriverApi(cb, 1) == 0) nen++; } }
	printf("driver cbids enabled %d\n", nen);
	int n = 1 << 20; float *d; cudaMalloc(&d, n * 4); float *h = (float *)calloc(n, 4);
	uint64_t tl0 = ts_cb();
	cudaMemcpy(d, h, n * 4, cudaMemcpyHostToDevice); cudaMemset(d, 0, n * 4);
	k1<<<n / 256, 256>>>(d, n); k2<<<n / 256, 256>>>(d, n);
	uint64_t tl1 = ts_cb(); cudaDeviceSynchronize(); uint64_t tl2 = ts_cb();
	printf("host: before launches %llu after %llu after sync %llu\n", (unsigned long long)tl0, (unsigned long long)tl1, (unsigned long long)tl2);
	cudaStream_t st; cudaStreamCreate(&st); cudaGraph_t g; cudaGraphExec_t ge;
	cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal); k1<<<n / 256, 256, 0, st>>>(d, n); k2<<<n / 256, 256, 0, st>>>(d, n); cudaMemsetAsync(d, 0, 64, st); cudaStreamEndCapture(st, &g);
	cudaGraphInstantiate(&ge, g, 0); for (int i = 0; i < 2; i++) cudaGraphLaunch(ge, st); cudaStreamSynchronize(st);
	cudaMemcpy(h, d, n * 4, cudaMemcpyDeviceToHost);
	// timing: empty-ish launches
	for (int rep = 0; rep < (late ? 0 : 2); rep++) { struct timespec x, y; clock_gettime(CLOCK_MONOTONIC, &x); for (int i = 0; i < 20000; i++) k1<<<1, 32>>>(d, 32); cudaDeviceSynchronize(); clock_gettime(CLOCK_MONOTONIC, &y);
		printf("20000 launches: %.1f us each (cupti on)\n", ((y.tv_sec - x.tv_sec) * 1e9 + (y.tv_nsec - x.tv_nsec)) / 20000 / 1e3); }
	CK(cuptiActivityFlushAll(1));
	for (int c = 0; c < 4096; c++) if (bycb[c]) { const char *nm = 0; cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, c, &nm); printf("  api %s (%d): %d\n", nm ? nm : "?", c, bycb[c]); }
	printf("totals kernels %d memcpy %d memset %d api %d other %d\n", nk, nm, ns, na, nother);
	CK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)); CK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY)); CK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET));
	for (int cb = 1; cb < CUPTI_DRIVER_TRACE_CBID_SIZE; cb++) cuptiActivityEnableDriverApi(cb, 0);
	CK(cuptiFinalize());
	{ struct timespec x, y; clock_gettime(CLOCK_MONOTONIC, &x); for (int i = 0; i < 20000; i++) k1<<<1, 32>>>(d, 32); cudaDeviceSynchronize(); clock_gettime(CLOCK_MONOTONIC, &y);
		printf("20000 launches: %.1f us each (after finalize)\n", ((y.tv_sec - x.tv_sec) * 1e9 + (y.tv_nsec - x.tv_nsec)) / 20000 / 1e3); }
	printf("after finalize kernels %d\n", nk);
	return 0;
}
