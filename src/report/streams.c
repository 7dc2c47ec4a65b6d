/* The streams the program used, from the stream arguments of its calls: what each stream was
 * given (launches, copies and memsets with their bytes, graph launches), how the host waited on it
 * (cuStreamSynchronize, cuStreamQuery) and ordered it (cuEventRecord, cuStreamWaitEvent), the
 * driver time of the calls that named it, and how many threads did.
 *
 * Where the stream is: cuLaunchKernel & co pass it in stack slot 2 (argument 8); cuLaunchKernelEx
 * in its CUlaunchConfig, whose bytes its DATA record holds (decoders.h); copies and memsets in the
 * argument categories.c gives; cuGraphLaunch, cuEventRecord in argument 1; cuStreamSynchronize,
 * cuStreamQuery, cuStreamWaitEvent in argument 0. A synchronous copy or memset, or a launch whose
 * configuration the trace lacks, names no stream: those are counted apart. Handles are the
 * program's: 0x0 is the legacy default stream, 0x2 the per-thread default stream. */
#include "report.h"
#include "decoders.h"

#include <stdlib.h>
#include <string.h>

enum role { R_NONE, R_LAUNCH, R_LAUNCH_CONFIG, R_COPY, R_MEMSET, R_GRAPH, R_SYNC, R_QUERY, R_RECORD, R_WAIT };

struct rp_stream_ref rp_stream_ref_of(const struct rp_view *v, uint32_t func)
{
	const struct rp_finfo *fi = &v->fi[func];
	char base[128];
	rp_base_name(tr_func_name(v->t, func), base, sizeof(base));
	if (fi->kind == RP_KIND_LAUNCH)
		return fi->l.direct_layout ? (struct rp_stream_ref){R_LAUNCH, 8} : (struct rp_stream_ref){R_LAUNCH_CONFIG, -1};
	if (fi->kind == RP_KIND_XFER)
		return (struct rp_stream_ref){fi->x.dir == RP_DIR_MEMSET ? R_MEMSET : R_COPY, fi->x.stream_arg};
	if (!strcmp(base, "cuGraphLaunch"))
		return (struct rp_stream_ref){R_GRAPH, 1};
	if (!strcmp(base, "cuStreamSynchronize"))
		return (struct rp_stream_ref){R_SYNC, 0};
	if (!strcmp(base, "cuStreamQuery"))
		return (struct rp_stream_ref){R_QUERY, 0};
	if (!strcmp(base, "cuEventRecord") || !strcmp(base, "cuEventRecordWithFlags"))
		return (struct rp_stream_ref){R_RECORD, 1};
	if (!strcmp(base, "cuStreamWaitEvent"))
		return (struct rp_stream_ref){R_WAIT, 0};
	return (struct rp_stream_ref){R_NONE, -1};
}

int rp_call_stream(const struct rp_view *v, const struct tr_call *c, struct rp_stream_ref r, uint64_t *s)
{
	if (r.role == R_LAUNCH_CONFIG) {
		const char *cfg;
		uint16_t n;
		if (!tr_call_data_str(v->t, c, "config", &cfg, &n) || n < CUHOOK_LAUNCH_CONFIG_BYTES)
			return 0;
		memcpy(s, cfg + 32, sizeof(*s));
		return 1;
	}
	if (r.arg < 0 || (unsigned)r.arg >= tr_call_nargs(c) || (r.arg < 6 && !tr_call_has_reg(c, (unsigned)r.arg)))
		return 0;
	*s = tr_call_arg(c, (unsigned)r.arg);
	return 1;
}

static int by_api(const void *a, const void *b)
{
	const struct rp_stream *x = a, *y = b;
	if (x->api != y->api)
		return x->api > y->api ? -1 : 1;
	return x->stream < y->stream ? -1 : x->stream > y->stream;
}

/* A stream's row, found or added (linear: programs use tens of streams, not thousands; a hostile
 * trace with more is cut at RP_MAX_STREAMS, the rest counted in `more`). */
static struct rp_stream *row(struct rp_streams *s, uint64_t stream)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (s->s[i].stream == stream)
			return &s->s[i];
	if (s->n == RP_MAX_STREAMS)
		return NULL;
	struct rp_stream *r = &s->s[s->n++];
	memset(r, 0, sizeof(*r));
	r->stream = stream;
	return r;
}

int rp_streams_analyze(const struct rp_view *v, struct rp_streams **out)
{
	const struct tr_trace *t = v->t;
	*out = NULL;
	struct rp_streams *s = calloc(1, sizeof(*s));
	struct rp_stream_ref *roles = malloc((t->nfuncs ? t->nfuncs : 1) * sizeof(*roles));
	if (s)
		s->s = malloc(RP_MAX_STREAMS * sizeof(*s->s));
	if (!roles || !s || !s->s) {
		free(roles);
		rp_streams_free(s);
		return -1;
	}
	for (uint32_t f = 0; f < t->nfuncs; f++)
		roles[f] = rp_stream_ref_of(v, f);
	for (uint32_t i = 0; i < v->nsel; i++) {
		const struct tr_call *c = &t->calls[v->sel[i]];
		struct rp_stream_ref r = roles[c->func];
		uint64_t stream;
		if (r.role == R_NONE)
			continue;
		if (!rp_call_stream(v, c, r, &stream)) {
			if (r.role <= R_GRAPH)
				s->unnamed++;
			continue;
		}
		struct rp_stream *st = row(s, stream);
		if (!st) {
			s->more++;
			continue;
		}
		st->calls++;
		st->api = rp_sat_add(st->api, tr_call_dur(c));
		uint32_t k = 0;
		while (k < st->nthreads && k < RP_STREAM_THREADS && st->thread[k] != c->thread)
			k++;
		if (k == st->nthreads) { /* a thread not seen on it yet (past RP_STREAM_THREADS: counted) */
			if (k < RP_STREAM_THREADS)
				st->thread[k] = c->thread;
			st->nthreads++;
		}
		switch (r.role) {
		case R_LAUNCH:
		case R_LAUNCH_CONFIG:
			st->launches++;
			break;
		case R_COPY:
		case R_MEMSET: {
			int known;
			uint64_t bytes = rp_call_bytes(v, c, &known);
			if (r.role == R_COPY)
				st->copies++;
			else
				st->memsets++;
			st->bytes += bytes;
			break;
		}
		case R_GRAPH:
			st->graph_launches++;
			break;
		case R_SYNC:
			st->syncs++;
			st->sync_time = rp_sat_add(st->sync_time, tr_call_dur(c));
			break;
		case R_QUERY:
			st->queries++;
			break;
		case R_RECORD:
			st->records++;
			break;
		case R_WAIT:
			st->waits++;
			break;
		}
	}
	qsort(s->s, s->n, sizeof(*s->s), by_api);
	free(roles);
	if (s->n)
		*out = s;
	else
		rp_streams_free(s);
	return 0;
}

void rp_streams_free(struct rp_streams *s)
{
	if (s)
		free(s->s);
	free(s);
}
