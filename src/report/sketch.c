/* The log-bucket quantile sketch (sketch.h). A value v >= RP_SKETCH_EXACT with its highest bit at
 * position e falls in bucket (e - SUB_BITS) * 64 + (its next 6 bits): every bucket of that power
 * of two is 2^(e - 6) wide, and v >= 2^e, so the middle of the bucket is within 2^(e - 7) <= v/128
 * of v. */
#include "sketch.h"

static unsigned bucket_of(uint64_t v)
{
	if (v < RP_SKETCH_EXACT)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= SUB_BITS + 1 */
	unsigned sub = (unsigned)(v >> (e - RP_SKETCH_SUB_BITS)) & ((1u << RP_SKETCH_SUB_BITS) - 1);
	return RP_SKETCH_EXACT + (e - RP_SKETCH_SUB_BITS - 1) * (1u << RP_SKETCH_SUB_BITS) + sub;
}

/* The middle of bucket b: the value itself for an exact one. */
static double middle_of(unsigned b)
{
	if (b < RP_SKETCH_EXACT)
		return (double)b;
	unsigned rel = b - RP_SKETCH_EXACT;
	unsigned e = rel / (1u << RP_SKETCH_SUB_BITS) + RP_SKETCH_SUB_BITS + 1;
	unsigned sub = rel % (1u << RP_SKETCH_SUB_BITS);
	double width = (double)(UINT64_C(1) << (e - RP_SKETCH_SUB_BITS));
	double lo = (double)(UINT64_C(1) << e) + (double)sub * width;
	return lo + width / 2;
}

void rp_sketch_add(struct rp_sketch *s, int64_t v)
{
	s->count[bucket_of(v < 0 ? 0 : (uint64_t)v)]++;
	s->n++;
}

double rp_sketch_rank(const struct rp_sketch *s, uint64_t k)
{
	uint64_t seen = 0;
	for (unsigned b = 0; b < RP_SKETCH_BUCKETS; b++) {
		seen += s->count[b];
		if (seen > k)
			return middle_of(b);
	}
	return 0;
}

double rp_sketch_median(const struct rp_sketch *s)
{
	if (!s->n)
		return 0;
	double hi = rp_sketch_rank(s, s->n / 2);
	if (s->n % 2)
		return hi;
	return (rp_sketch_rank(s, s->n / 2 - 1) + hi) / 2;
}
