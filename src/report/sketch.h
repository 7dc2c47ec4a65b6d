/* A fixed-size quantile sketch of durations (ns >= 0) for the streaming report (text_stream.c):
 * log buckets, 64 per power of two, so that a quantile it gives is within 1/128 (0.8 %) of the
 * true value relative to it, and exact below 128 ns (one bucket per value there). The median of
 * an even count is the mean of the two middle values' estimates, within the same bound.
 * Buckets are counted, so adding is O(1) and the sketch's size (30 KiB) does not depend on the
 * number of values. */
#ifndef CUHOOK_SKETCH_H
#define CUHOOK_SKETCH_H

#include <stdint.h>

#define RP_SKETCH_SUB_BITS 6                       /* 64 buckets per power of two */
#define RP_SKETCH_EXACT (2u << RP_SKETCH_SUB_BITS) /* values below this have a bucket each */
#define RP_SKETCH_BUCKETS (RP_SKETCH_EXACT + (64 - RP_SKETCH_SUB_BITS - 1) * (1u << RP_SKETCH_SUB_BITS))

struct rp_sketch {
	uint64_t n;
	uint64_t count[RP_SKETCH_BUCKETS];
};

void rp_sketch_add(struct rp_sketch *s, int64_t v);
/* The value of rank k (0-based, k < n) as the middle of its bucket; exact below RP_SKETCH_EXACT. */
double rp_sketch_rank(const struct rp_sketch *s, uint64_t k);
/* The median as rp_middle() defines it (report.h), from the bucket estimates; 0 when empty. */
double rp_sketch_median(const struct rp_sketch *s);

#endif
