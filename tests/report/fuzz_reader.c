/* Robustness test of the trace reader and the report on damaged input: for each seed trace,
 *  1. every prefix (the file cut at every 8th byte, and at every byte of the first 512) must
 *     give either a clean error or a trace marked truncated;
 *  2. ITERATIONS random mutations (bytes flipped, size/count/id fields set to edge values, 8-byte
 *     words duplicated or removed) must never crash, read out of bounds or loop forever.
 * Every trace that opens must hold consistent calls and counts (COUNTS entries with valid ids,
 * their sums per function, per thread and in all equal) and GPU records (indices in range, every
 * link pointing to an API record of the work's session and correlation id and to a call of the
 * API record's thread and function that holds it, counts by link status that add up).
 * Every trace that opens is also run through the whole report (view, stats, analysis, text, json,
 * csv, jsonl, chrome, folded, perfetto) into /dev/null. Every input is also read as a file (a
 * memfd opened by its /proc path): tr_open() reads a regular file otherwise than tr_open_mem()
 * reads memory (trace_input.h: pass 1 skips EVENTS payloads, pass 2 reads them again), and both
 * must give the same trace or the same error. The streaming reader (trace_stream.h) reads it
 * too, from the file, and must hand over exactly the calls of the whole read (same times,
 * return values, functions, threads, flags, arguments, parent's function) with the same counts
 * and damage, then the streaming text report runs on it. Built with AddressSanitizer and UBSan
 * when the compiler has them, so an out-of-bounds read fails the test even when it does not
 * crash.
 *
 *   fuzz_reader [--iterations N] [--seed S] seed.bin...
 * Exit status 0 when every check held; a crash or a sanitizer report fails the test. */
#include "result.h"
#include "trace_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static FILE *devnull;
static int memfd = -1;
static char memfd_path[64];
static unsigned long opened, refused, truncated_ok;

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void run_report(struct tr_trace *t)
{
	static const enum rp_sort sorts[] = {RP_SORT_TOTAL, RP_SORT_MED, RP_SORT_NAME};
	struct rp_opts o;
	memset(&o, 0, sizeof(o));
	o.top = 5;
	o.width = 40;
	o.all = 1;
	o.sort = sorts[rnd() % 3];
	if (rnd() % 4 == 0) {
		o.has_range = 1;
		o.range_start_ns = 1000;
		o.range_end_ns = 2000000;
	}
	struct rp_view v;
	char err[256];
	struct rp_result r;
	if (rp_view_init(&v, t, &o, err, sizeof(err)))
		return;
	if (rp_result_build(&v, 1, 1, &r)) {
		rp_view_free(&v);
		return;
	}
	rp_write_text(devnull, &v, &r.per[0]);
	rp_write_json(devnull, &v, &r);
	rp_write_csv(devnull, &v, 1);
	rp_write_jsonl(devnull, &v, 1);
	rp_write_chrome(devnull, &v, 1);
	rp_write_folded(devnull, &v, 1);
	rp_write_perfetto(devnull, &v, 1);
	rp_result_free(&v, 1, &r);
	rp_view_free(&v);
	/* several files on one axis: the trace twice, the second at an offset (its own realtime
	 * alignment is exercised by rp_align) */
	if (rnd() % 4 == 0) {
		struct tr_trace *two[2] = {t, t};
		int64_t shift[2];
		struct rp_view vs[2];
		rp_align(two, 2, &o, shift);
		if (rp_view_init_at(&vs[0], t, &o, shift[0], err, sizeof(err)))
			return;
		if (rp_view_init_at(&vs[1], t, &o, (int64_t)(rnd() % 5000000), err, sizeof(err))) {
			rp_view_free(&vs[0]);
			return;
		}
		if (rp_result_build(vs, 2, 1, &r)) {
			rp_view_free(&vs[0]);
			rp_view_free(&vs[1]);
			return;
		}
		rp_write_text_merged(devnull, vs, &r, 1);
		rp_write_json(devnull, vs, &r);
		rp_write_csv(devnull, vs, 2);
		rp_write_jsonl(devnull, vs, 2);
		rp_write_chrome(devnull, vs, 2);
		rp_write_perfetto(devnull, vs, 2);
		rp_result_free(vs, 2, &r);
		rp_view_free(&vs[0]);
		rp_view_free(&vs[1]);
	}
}

/* The message after "NAME: " (the two readers name the input differently). */
static const char *after_name(const char *err)
{
	const char *p = strstr(err, ": ");
	return p ? p + 2 : err;
}

/* The same bytes read from a file: the same trace (or error) as from memory. */
static int same_as_file(const struct tr_trace *m, const char *merr, const uint8_t *buf, size_t len,
                        const char *what)
{
	if (ftruncate(memfd, 0) || (len && pwrite(memfd, buf, len, 0) != (ssize_t)len)) {
		fprintf(stderr, "FAIL %s: cannot write the memfd\n", what);
		return -1;
	}
	char err[512] = "";
	struct tr_trace *f = tr_open(memfd_path, err, sizeof(err));
	int bad = 0;
	if (!m || !f) {
		bad = !m != !f || strcmp(after_name(merr), after_name(err));
	} else {
		bad = f->ncalls != m->ncalls || f->nentry != m->nentry || f->nexit != m->nexit ||
		      f->ndata != m->ndata || f->ncounts != m->ncounts || f->counted_calls != m->counted_calls ||
		      f->nthreads != m->nthreads || f->nfuncs != m->nfuncs || f->nblocks != m->nblocks ||
		      f->truncated != m->truncated || f->truncated_at != m->truncated_at ||
		      strcmp(f->truncated_reason, m->truncated_reason) || f->errors != m->errors ||
		      f->has_end != m->has_end || f->dropped != m->dropped || f->first_ns != m->first_ns ||
		      f->last_ns != m->last_ns || f->ngpu_sessions != m->ngpu_sessions || f->ngpu_api != m->ngpu_api ||
		      f->ngpu_work != m->ngpu_work || f->ngpu_names != m->ngpu_names ||
		      memcmp(&f->gpu_links, &m->gpu_links, sizeof(f->gpu_links));
		for (uint32_t i = 0; !bad && i < m->ngpu_work; i++) {
			const struct tr_gpu_work *a = &m->gpu_work[i], *b = &f->gpu_work[i];
			bad = a->start_ns != b->start_ns || a->end_ns != b->end_ns || a->call != b->call || a->api != b->api ||
			      a->link != b->link || a->session != b->session || a->name_id != b->name_id;
		}
		for (uint32_t i = 0; !bad && i < m->ncalls; i++) {
			const struct tr_call *a = &m->calls[i], *b = &f->calls[i];
			bad = a->start_ns != b->start_ns || a->end_ns != b->end_ns || a->ret != b->ret ||
			      a->func != b->func || a->thread != b->thread || a->parent != b->parent ||
			      a->flags != b->flags || a->ndata != b->ndata || tr_call_nargs(a) != tr_call_nargs(b);
			for (unsigned k = 0; !bad && k < tr_call_nargs(a); k++)
				bad = tr_call_arg(a, k) != tr_call_arg(b, k);
		}
	}
	if (bad)
		fprintf(stderr, "FAIL %s (%zu bytes): read from a file, not the trace read from memory (%s | %s)\n",
		        what, len, m ? m->truncated_reason : merr, f ? f->truncated_reason : err);
	tr_close(f);
	return bad ? -1 : 0;
}

/* The streaming reader's calls against the whole read's. */
struct stream_check {
	const struct tr_trace *m;
	int64_t *child;         /* per call of the whole read: its timed children's durations */
	uint64_t seen;
	int bad;
};

static int stream_call(void *ctx, const struct tr_trace *t, const struct tr_call *c, const struct tr_stream_info *info)
{
	struct stream_check *sc = ctx;
	const uint64_t ordinal = info->ordinal;
	const struct tr_trace *m = sc->m;
	sc->seen++;
	if (ordinal >= m->ncalls) {
		sc->bad = 1;
		return 0;
	}
	const struct tr_call *a = &m->calls[ordinal];
	int bad = a->start_ns != c->start_ns || a->end_ns != c->end_ns || a->ret != c->ret || a->func != c->func ||
	          a->thread != c->thread || a->flags != c->flags || a->depth != c->depth || a->ndata != c->ndata ||
	          tr_call_nargs(a) != tr_call_nargs(c) || (a->parent == TR_NONE) != (c->parent == TR_NONE) ||
	          info->parent_ordinal != (a->parent == TR_NONE ? UINT64_MAX : a->parent);
	for (unsigned k = 0; !bad && k < tr_call_nargs(a); k++)
		bad = tr_call_arg(a, k) != tr_call_arg(c, k);
	/* its DATA records: copies of the whole read's, in the same order */
	for (unsigned k = 0; !bad && k < c->ndata; k++) {
		const struct tr_data *x = &m->data[a->data_first + k], *y = &t->data[c->data_first + k];
		bad = x->decoder != y->decoder || x->at_exit != y->at_exit || x->nvalues != y->nvalues ||
		      x->str_len != y->str_len || (x->nvalues && memcmp(x->values, y->values, 8u * x->nvalues)) ||
		      (x->str_len && memcmp(x->str, y->str, x->str_len));
	}
	if (!bad && a->parent != TR_NONE)
		bad = m->calls[a->parent].func != tr_stream_open_call(t, c->parent)->func;
	/* the children's time, as a whole read sums it */
	bad |= sc->child[ordinal] != info->child_ns;
	sc->bad |= bad;
	return 0;
}

static unsigned long stream_reports;

/* The file the memfd holds (same_as_file wrote it), read by the streaming reader. */
static int same_streamed(const struct tr_trace *m, const char *merr, const char *what)
{
	struct stream_check sc = {m, NULL, 0, 0};
	const struct tr_stream_sink sink = {.call = stream_call, .ctx = &sc};
	if (m) {
		sc.child = calloc((size_t)m->ncalls + 1, sizeof(*sc.child));
		if (!sc.child)
			return -1;
		for (uint32_t i = 0; i < m->ncalls; i++)
			if (m->calls[i].parent != TR_NONE && tr_call_timed(&m->calls[i]))
				sc.child[m->calls[i].parent] = rp_sat_add(sc.child[m->calls[i].parent], tr_call_dur(&m->calls[i]));
	}
	char err[512] = "";
	struct tr_trace *s = tr_open_stream(memfd_path, &sink, err, sizeof(err));
	int bad;
	if (!m || !s) {
		bad = !m != !s || strcmp(after_name(merr), after_name(err));
	} else {
		struct tr_stream_skipped sk;
		tr_stream_get_skipped(s, &sk);
		/* GPU and stack blocks are skipped, so the errors in them are not counted */
		int same_errors = sk.gpu_blocks || sk.stack_blocks || sk.stack_recs ||
		                  (s->errors == m->errors && s->orphan_data == m->orphan_data);
		bad = sc.bad || sc.seen != m->ncalls || sk.calls != m->ncalls || s->ncalls || s->nentry != m->nentry ||
		      s->nexit != m->nexit || s->ndata_recs != m->ndata_recs || s->lost_exits != m->lost_exits ||
		      s->orphan_exits != m->orphan_exits || s->ncounts != m->ncounts ||
		      s->counted_calls != m->counted_calls || s->nthreads != m->nthreads || s->truncated != m->truncated ||
		      s->truncated_at != m->truncated_at || s->first_ns != m->first_ns || s->last_ns != m->last_ns ||
		      !same_errors;
		if (!bad && stream_reports++ % 4 == 0) {
			/* the streaming report on it, into /dev/null (one input in four: the reading
			 * above is what differs from a whole read) */
			struct rp_opts o;
			memset(&o, 0, sizeof(o));
			o.top = 3;
			struct rp_stream_report *r;
			tr_close(s);
			struct rp_folded folded = {0};
			s = rp_stream_read(&o, memfd_path, NULL, 0, &r, err, sizeof(err));
			if (s)
				rp_stream_write_text(devnull, r);
			rp_stream_free(r);
			tr_close(s);
			/* and the folded stacks */
			s = rp_stream_read(&o, memfd_path, &folded, 1, &r, err, sizeof(err));
			rp_stream_free(r);
			rp_folded_finish(devnull, &folded, 0);
		}
	}
	if (bad)
		fprintf(stderr, "FAIL %s: the streaming reader disagrees with the whole read (%s | %s)\n", what,
		        m ? m->truncated_reason : merr, s ? s->truncated_reason : err);
	free(sc.child);
	tr_close(s);
	return bad ? -1 : 0;
}

/* Open len bytes; a prefix shorter than the file must never be reported as complete. */
static int check(const uint8_t *buf, size_t len, int is_prefix, const char *what)
{
	char err[512] = "";
	struct tr_trace *t = tr_open_mem(buf, len, "fuzz", err, sizeof(err));
	if (same_as_file(t, err, buf, len, what) || same_streamed(t, err, what)) {
		tr_close(t);
		return -1;
	}
	if (!t) {
		if (!err[0]) {
			fprintf(stderr, "FAIL %s: NULL trace without an error message\n", what);
			return -1;
		}
		refused++;
		return 0;
	}
	opened++;
	if (is_prefix && !t->truncated) {
		fprintf(stderr, "FAIL %s (%zu bytes): a cut file was not reported truncated\n", what, len);
		tr_close(t);
		return -1;
	}
	if (t->truncated)
		truncated_ok++;
	/* Consistency the report relies on. */
	for (uint32_t i = 0; i < t->ncalls; i++) {
		const struct tr_call *c = &t->calls[i];
		if (c->func >= t->nfuncs || c->thread >= t->nthreads || (c->parent != TR_NONE && c->parent >= i) ||
		    c->end_ns < c->start_ns || (c->ndata && c->data_first + c->ndata > t->ndata)) {
			fprintf(stderr, "FAIL %s: inconsistent call %u\n", what, i);
			tr_close(t);
			return -1;
		}
	}
	if (!tr_gpu_consistent(t)) {
		fprintf(stderr, "FAIL %s: inconsistent GPU records\n", what);
		tr_close(t);
		return -1;
	}
	/* Counts: valid ids, and the saturating sums (min(true sum, UINT64_MAX), whatever the order)
	 * of the entries, per function, per thread and the total all agree. */
	uint64_t by_entry = 0, by_func = 0, by_thread = 0;
	for (uint32_t i = 0; i < t->ncounts; i++) {
		const struct tr_count *c = &t->counts[i];
		if (c->func >= t->nfuncs || !t->funcs[c->func].defined || c->thread >= t->nthreads) {
			fprintf(stderr, "FAIL %s: inconsistent count entry %u\n", what, i);
			tr_close(t);
			return -1;
		}
		by_entry = tr_sat_add_u64(by_entry, c->calls);
	}
	for (uint32_t i = 0; i < t->nfuncs; i++)
		by_func = tr_sat_add_u64(by_func, t->funcs[i].counted);
	for (uint32_t i = 0; i < t->nthreads; i++)
		by_thread = tr_sat_add_u64(by_thread, t->threads[i].counted);
	if (by_entry != t->counted_calls || by_func != t->counted_calls || by_thread != t->counted_calls) {
		fprintf(stderr, "FAIL %s: counted sums disagree\n", what);
		tr_close(t);
		return -1;
	}
	run_report(t);
	tr_close(t);
	return 0;
}

static void mutate(uint8_t *b, size_t len)
{
	unsigned n = 1 + (unsigned)(rnd() % 4);
	for (unsigned k = 0; k < n; k++) {
		size_t at = (size_t)(rnd() % len);
		switch (rnd() % 6) {
		case 0: /* flip a byte */
			b[at] ^= (uint8_t)(1u << (rnd() % 8));
			break;
		case 1: /* random byte */
			b[at] = (uint8_t)rnd();
			break;
		case 2: { /* an aligned 16-bit field to an edge value (record sizes, name lengths) */
			static const uint16_t edge[] = {0, 1, 7, 8, 16, 24, 0x7fff, 0xfff8, 0xffff};
			at &= ~(size_t)1;
			if (at + 2 <= len) {
				uint16_t v = edge[rnd() % (sizeof(edge) / sizeof(edge[0]))];
				memcpy(b + at, &v, 2);
			}
			break;
		}
		case 3: { /* an aligned 32-bit field to an edge value (block sizes, counts, ids) */
			static const uint32_t edge[] = {0, 1, 8, 0x1000, 64u << 20, 0x7fffffff, 0xfffffff8, 0xffffffff};
			at &= ~(size_t)3;
			if (at + 4 <= len) {
				uint32_t v = edge[rnd() % (sizeof(edge) / sizeof(edge[0]))];
				memcpy(b + at, &v, 4);
			}
			break;
		}
		case 4: /* a small byte (depth, nstack, type, nvalues) */
			b[at] = (uint8_t)(rnd() % 9);
			break;
		default: { /* copy an 8-byte word over another one */
			size_t from = (size_t)(rnd() % len) & ~(size_t)7;
			at &= ~(size_t)7;
			if (from + 8 <= len && at + 8 <= len)
				memmove(b + at, b + from, 8);
			break;
		}
		}
	}
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	uint8_t *b = malloc(cap);
	for (size_t r; b && (r = fread(b + n, 1, cap - n, f)) > 0;) {
		n += r;
		if (n == cap)
			b = realloc(b, cap *= 2);
	}
	fclose(f);
	*len = n;
	return b;
}

int main(int argc, char **argv)
{
	unsigned long iterations = 20000;
	int i = 1, fails = 0;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--iterations") && i + 1 < argc)
			iterations = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			rng = strtoull(argv[++i], NULL, 10) | 1;
		else {
			fprintf(stderr, "usage: fuzz_reader [--iterations N] [--seed S] seed.bin...\n");
			return 2;
		}
	}
	if (i >= argc) {
		fprintf(stderr, "usage: fuzz_reader [--iterations N] [--seed S] seed.bin...\n");
		return 2;
	}
	devnull = fopen("/dev/null", "w");
	memfd = memfd_create("fuzz_reader", MFD_CLOEXEC);
	if (!devnull || memfd < 0)
		return 1;
	snprintf(memfd_path, sizeof(memfd_path), "/proc/self/fd/%d", memfd);
	for (; i < argc; i++) {
		size_t len;
		uint8_t *seed = slurp(argv[i], &len);
		if (!seed || !len) {
			fprintf(stderr, "fuzz_reader: cannot read %s\n", argv[i]);
			return 1;
		}
		char what[600];
		snprintf(what, sizeof(what), "%s whole", argv[i]);
		fails += check(seed, len, 0, what) != 0;
		for (size_t cut = 0; cut < len; cut += cut < 512 ? 1 : 8) {
			snprintf(what, sizeof(what), "%s cut at %zu", argv[i], cut);
			fails += check(seed, cut, 1, what) != 0;
		}
		uint8_t *m = malloc(len);
		for (unsigned long it = 0; it < iterations && m; it++) {
			memcpy(m, seed, len);
			mutate(m, len);
			size_t l = rnd() % 8 == 0 ? (size_t)(rnd() % len) : len;
			snprintf(what, sizeof(what), "%s mutation %lu", argv[i], it);
			fails += check(m, l, 0, what) != 0;
		}
		free(m);
		free(seed);
	}
	printf("fuzz_reader: %lu opened (%lu truncated), %lu refused with an error, %d failure%s\n", opened,
	       truncated_ok, refused, fails, fails == 1 ? "" : "s");
	return fails ? 1 : 0;
}
