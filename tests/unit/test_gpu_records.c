/* Unit tests of the GPU side's pure parts: the clock CUPTI stamps with and its exact way back
 * (src/agent/gpu_clock.c), and CUPTI's activity records into the trace's GPU records with
 * kernel names interned per file (src/agent/gpu_records.c), on records made by hand. */
#include "unit.h"

#include "gpu_clock.h"
#include "gpu_records.h"
#include "trace_format.h"

#include <stdlib.h>

static void clock_round_trip(void)
{
	/* 2.7 GHz, 1 GHz, 3.9 GHz ticks */
	const double ns_per_tick[] = {1 / 2.7, 1.0, 1 / 3.9};
	for (unsigned k = 0; k < 3; k++) {
		struct gpu_clock c = {(uint64_t)(ns_per_tick[k] * 4294967296.0), false};
		uint64_t t = 123456789012345ull;
		for (unsigned i = 0; i < 100000; i++, t += 1 + (t % 7919)) {
			uint64_t ns = gpu_clock_ns(&c, t), back = gpu_clock_to_trace(&c, ns);
			if (back > t || gpu_clock_ns(&c, back) != ns || (back > 0 && gpu_clock_ns(&c, back - 1) == ns)) {
				CHECK(0, "tick %llu: ns %llu, back %llu (ns %llu): not the first tick of its ns",
				      (unsigned long long)t, (unsigned long long)ns, (unsigned long long)back,
				      (unsigned long long)gpu_clock_ns(&c, back));
				return;
			}
		}
	}
	struct gpu_clock id = {0, true};
	CHECK(gpu_clock_ns(&id, 777) == 777 && gpu_clock_to_trace(&id, 777) == 777, "identity");
	struct gpu_clock c = {1u << 31, false};
	CHECK(gpu_clock_to_trace(&c, 0) == 0, "0 (not known) stays 0");
}

static void clock_calibrates(void)
{
	struct gpu_clock c;
	CHECK(gpu_clock_calibrate(&c, false, 5) == 0 && c.mul > (1ull << 28) && c.mul < (1ull << 34),
	      "ns per tick between 1/16 and 4: %llu / 2^32", (unsigned long long)c.mul);
	CHECK(gpu_clock_calibrate(&c, true, 5) == 0 && c.identity, "monotonic: identity");
}

static struct gpu_conv cv;
static struct gpu_clock halves = {1ull << 31, false}; /* 2 ticks a nanosecond */

static const struct cuhook_gpu_rec *rec_at(const uint8_t *out, size_t off)
{
	return (const struct cuhook_gpu_rec *)(out + off);
}

static void api_record(void)
{
	gpu_conv_reset(&cv, &halves);
	struct cupti_api a = {.kind = CUPTI_KIND_DRIVER, .cbid = 307, .start = 1000, .end = 1500,
	                      .process_id = 9, .thread_id = 4242, .correlation_id = 77, .return_value = 2};
	uint8_t out[256];
	size_t len = 0;
	CHECK(gpu_conv_record(&cv, (const struct cupti_record *)&a, out, sizeof(out), &len) == 1, "one record");
	const struct cuhook_gpu_api *r = (const struct cuhook_gpu_api *)out;
	CHECK(len == sizeof(*r) && r->h.type == CUHOOK_GPU_REC_API && r->h.size == sizeof(*r) && r->h.flags == 0,
	      "header: len %zu type %u size %u", len, r->h.type, r->h.size);
	CHECK(r->h.correlation == 77 && r->tid == 4242 && r->cbid == 307 && r->ret == 2 && r->func == UINT32_MAX,
	      "fields");
	CHECK(r->start == 2000 && r->end == 3000, "times back on the trace clock: %llu %llu",
	      (unsigned long long)r->start, (unsigned long long)r->end);
	CHECK(gpu_conv_record(&cv, (const struct cupti_record *)&a, out, sizeof(*r) - 8, &(size_t){0}) == -1,
	      "no room: -1");
}

static struct cupti_kernel10 kernel(const char *name, uint32_t corr)
{
	return (struct cupti_kernel10){
	    .kind = CUPTI_KIND_CONCURRENT_KERNEL, .registers_per_thread = 32, .start = 5000, .end = 6000,
	    .device_id = 0, .context_id = 1, .stream_id = 13, .grid_x = 4, .grid_y = 2, .grid_z = 1,
	    .block_x = 128, .block_y = 1, .block_z = 1, .static_shared_memory = 1024,
	    .dynamic_shared_memory = 256, .correlation_id = corr, .name = name, .graph_node_id = 5,
	    .graph_id = 3};
}

/* Convert k into out; the kernel record's offset in *at. Returns what gpu_conv_record did. */
static int put_kernel(struct cupti_kernel10 k, uint8_t *out, size_t cap, size_t *len, size_t *at)
{
	int n = gpu_conv_record(&cv, (const struct cupti_record *)&k, out, cap, len);
	*at = *len - sizeof(struct cuhook_gpu_kernel);
	return n;
}

static void kernels_and_names(void)
{
	gpu_conv_reset(&cv, &halves);
	uint8_t out[4096];
	size_t len = 0, at;
	CHECK(put_kernel(kernel("_ZN4fake6fill32EPjjj", 10), out, sizeof(out), &len, &at) == 2, "NAME then KERNEL");
	const struct cuhook_gpu_name *n = (const struct cuhook_gpu_name *)out;
	CHECK(n->h.type == CUHOOK_GPU_REC_NAME && n->h.correlation == 0 && n->name_id == 1 && n->len == 20 &&
	          n->h.size == CUHOOK_ALIGN8(sizeof(*n) + 20) && !memcmp(n + 1, "_ZN4fake6fill32EPjjj", 20),
	      "NAME 1: size %u len %u", n->h.size, n->len);
	CHECK(!memcmp((const char *)(n + 1) + 20, "\0\0\0\0", 4), "padding zeroed");
	const struct cuhook_gpu_kernel *k = (const struct cuhook_gpu_kernel *)(out + at);
	CHECK(k->h.type == CUHOOK_GPU_REC_KERNEL && k->h.size == sizeof(*k) && k->h.correlation == 10 && k->name_id == 1,
	      "kernel: type %u corr %u name %u", k->h.type, k->h.correlation, k->name_id);
	CHECK(k->start == 10000 && k->end == 12000 && k->device == 0 && k->context == 1 && k->stream == 13, "where, when");
	CHECK(k->grid[0] == 4 && k->grid[1] == 2 && k->grid[2] == 1 && k->block[0] == 128 && k->block[1] == 1 &&
	          k->block[2] == 1,
	      "grid, block");
	CHECK(k->shared_static == 1024 && k->shared_dynamic == 256 && k->registers == 32 && k->graph_id == 3 &&
	          k->graph_node_id == 5,
	      "shared memory, registers, graph");
	/* the same name again: its id, no NAME; another: id 2 */
	CHECK(put_kernel(kernel("_ZN4fake6fill32EPjjj", 11), out, sizeof(out), &len, &at) == 1, "a known name");
	CHECK(rec_at(out, at)->type == CUHOOK_GPU_REC_KERNEL && ((const struct cuhook_gpu_kernel *)(out + at))->name_id == 1,
	      "id 1 again");
	/* no room for NAME + KERNEL: nothing written, nothing interned */
	size_t room = len + sizeof(struct cuhook_gpu_kernel) + 8;
	CHECK(put_kernel(kernel("fake_relu", 12), out, room, &len, &at) == -1, "no room for the name too");
	CHECK(put_kernel(kernel("fake_relu", 12), out, sizeof(out), &len, &at) == 2 &&
	          ((const struct cuhook_gpu_kernel *)(out + at))->name_id == 2,
	      "then id 2, with its NAME");
	CHECK(put_kernel(kernel(NULL, 13), out, sizeof(out), &len, &at) == 1 &&
	          ((const struct cuhook_gpu_kernel *)(out + at))->name_id == 0,
	      "no name: id 0");
	/* a new file: ids from 1 again */
	gpu_conv_reset(&cv, &halves);
	len = 0;
	CHECK(put_kernel(kernel("fake_relu", 14), out, sizeof(out), &len, &at) == 2 &&
	          ((const struct cuhook_gpu_kernel *)(out + at))->name_id == 1,
	      "a new file names from 1");
	/* many names: the table grows, every name keeps its id */
	gpu_conv_reset(&cv, &halves);
	char names[1000][16];
	for (unsigned i = 0; i < 1000; i++) {
		snprintf(names[i], sizeof(names[i]), "k%u", i);
		len = 0;
		put_kernel(kernel(names[i], i), out, sizeof(out), &len, &at);
	}
	bool same = true;
	for (unsigned i = 0; i < 1000; i++) {
		len = 0;
		same &= put_kernel(kernel(names[i], i), out, sizeof(out), &len, &at) == 1 &&
		        ((const struct cuhook_gpu_kernel *)(out + at))->name_id == i + 1;
	}
	CHECK(same, "1000 names keep ids 1..1000");
}

static void copies_and_sets(void)
{
	gpu_conv_reset(&cv, &halves);
	struct cupti_memcpy6 m = {.kind = CUPTI_KIND_MEMCPY, .copy_kind = 8, .src_kind = 3, .dst_kind = 3,
	                          .flags = 1, .bytes = 1 << 20, .start = 100, .end = 200, .device_id = 0,
	                          .context_id = 1, .stream_id = 14, .correlation_id = 21, .graph_node_id = 0,
	                          .graph_id = 0};
	uint8_t out[256];
	size_t len = 0;
	CHECK(gpu_conv_record(&cv, (const struct cupti_record *)&m, out, sizeof(out), &len) == 1, "memcpy");
	const struct cuhook_gpu_memcpy *c = (const struct cuhook_gpu_memcpy *)out;
	CHECK(c->h.type == CUHOOK_GPU_REC_MEMCPY && c->h.size == sizeof(*c) && c->h.correlation == 21 && c->start == 200 &&
	          c->end == 400 && c->stream == 14 && c->copy_kind == CUHOOK_COPY_DTOD && c->src_kind == 3 &&
	          c->dst_kind == 3 && c->flags == 1 && c->bytes == 1 << 20,
	      "memcpy fields");
	struct cupti_memset4 s = {.kind = CUPTI_KIND_MEMSET, .value = 0xdeadbeef, .bytes = 4096, .start = 300,
	                          .end = 301, .device_id = 0, .context_id = 1, .stream_id = 7, .correlation_id = 22,
	                          .flags = 1, .memory_kind = 3, .graph_node_id = 9, .graph_id = 2};
	len = 0;
	CHECK(gpu_conv_record(&cv, (const struct cupti_record *)&s, out, sizeof(out), &len) == 1, "memset");
	const struct cuhook_gpu_memset *z = (const struct cuhook_gpu_memset *)out;
	CHECK(z->h.type == CUHOOK_GPU_REC_MEMSET && z->h.size == sizeof(*z) && z->h.correlation == 22 && z->start == 600 &&
	          z->end == 602 && z->value == 0xdeadbeef && z->bytes == 4096 && z->mem_kind == 3 && z->flags == 1 &&
	          z->graph_id == 2 && z->graph_node_id == 9,
	      "memset fields");
	struct cupti_record other = {.kind = 5 /* RUNTIME */};
	len = 0;
	CHECK(gpu_conv_record(&cv, &other, out, sizeof(out), &len) == 0 && len == 0, "another kind: nothing");
}

int main(void)
{
	RUN(clock_round_trip);
	RUN(clock_calibrates);
	RUN(api_record);
	RUN(kernels_and_names);
	RUN(copies_and_sets);
	UNIT_EXIT();
}
