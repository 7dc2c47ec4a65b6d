/* What CUPTI records when its activity kinds are enabled after the driver was initialised (as
 * `cuhook attach --gpu` does): are the CUDA runtime's launches seen as driver API records, as
 * runtime API records, and does a kernel's correlation id name one of them? Prints counts.
 * Build and run on the GPU machine:
 *   nvcc -o /tmp/probe tests/gpu/cupti_runtime_probe.cu -lcupti -lcuda \
 *        -L/usr/local/cuda/targets/x86_64-linux/lib && /tmp/probe */
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <set>

__global__ void bump(int *p) { if (p) p[threadIdx.x]++; }

static std::set<uint32_t> rt_corr, drv_corr, work_corr;
static unsigned nkernel, nmemcpy, nrt, ndrv, rt_launch;

static void CUPTIAPI requested(uint8_t **buf, size_t *size, size_t *max)
{
	*size = 8 << 20;
	*buf = (uint8_t *)aligned_alloc(8, *size);
	*max = 0;
}

static void CUPTIAPI completed(CUcontext, uint32_t, uint8_t *buf, size_t, size_t valid)
{
	CUpti_Activity *r = NULL;
	while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
		switch (r->kind) {
		case CUPTI_ACTIVITY_KIND_RUNTIME: {
			CUpti_ActivityAPI *a = (CUpti_ActivityAPI *)r;
			nrt++;
			rt_corr.insert(a->correlationId);
			if (a->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)
				rt_launch++;
			break;
		}
		case CUPTI_ACTIVITY_KIND_DRIVER: {
			CUpti_ActivityAPI *a = (CUpti_ActivityAPI *)r;
			ndrv++;
			drv_corr.insert(a->correlationId);
			break;
		}
		case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
			nkernel++;
			work_corr.insert(((CUpti_ActivityKernel10 *)r)->correlationId);
			break;
		case CUPTI_ACTIVITY_KIND_MEMCPY:
			nmemcpy++;
			work_corr.insert(((CUpti_ActivityMemcpy6 *)r)->correlationId);
			break;
		default:
			break;
		}
	}
	free(buf);
}

int main()
{
	int *d;
	cudaMalloc(&d, 4096); /* the driver is initialised here, before CUPTI is touched */
	bump<<<1, 32>>>(d);
	cudaDeviceSynchronize();
	cuptiActivityRegisterCallbacks(requested, completed);
	CUptiResult r1 = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
	CUptiResult r2 = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
	CUptiResult r3 = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	CUptiResult r4 = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
	printf("enable runtime %d driver %d kernel %d memcpy %d\n", r1, r2, r3, r4);
	int h[1024] = {0};
	for (int i = 0; i < 10; i++)
		bump<<<1, 32>>>(d);
	for (int i = 0; i < 3; i++)
		cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice);
	CUfunction f; /* one launch straight through the driver */
	cudaFunction_t cf = (cudaFunction_t)bump;
	void *args[] = {&d};
	if (cudaGetFuncBySymbol(&f, (const void *)bump) == cudaSuccess)
		cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, args, NULL);
	(void)cf;
	cudaDeviceSynchronize();
	cuptiActivityFlushAll(1);
	unsigned in_rt = 0, in_drv = 0;
	for (uint32_t c : work_corr) {
		in_rt += rt_corr.count(c);
		in_drv += drv_corr.count(c);
	}
	printf("records: runtime %u (cudaLaunchKernel %u), driver %u, kernels %u, memcpys %u\n", nrt, rt_launch, ndrv,
	       nkernel, nmemcpy);
	printf("work correlation ids %zu: in a runtime record %u, in a driver record %u\n", work_corr.size(), in_rt,
	       in_drv);
	return 0;
}
