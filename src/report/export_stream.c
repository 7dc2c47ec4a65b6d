/* The call-by-call exports in bounded memory (export_stream.h): each file read once by the
 * streaming reader, its selected calls handed to the format as they finish. Several files (not
 * --separate) are first read as far as their metadata, to line them up on one time axis as a
 * whole read does (rp_align), then streamed one after the other. */
#include "export_stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- the slices of a thread, begun in start order (export_stream.h) ------------------------- */

struct rp_sx_thread {
	uint64_t *begun;           /* ordinals of the open calls whose begin is written, outermost first */
	uint32_t n, cap;
	int64_t last_ns;           /* the time of the thread's last event written */
};

static int push_begun(struct rp_sx_thread *th, uint64_t ordinal)
{
	if (th->n == th->cap) {
		uint32_t ncap = th->cap ? th->cap * 2 : 16;
		uint64_t *p = realloc(th->begun, (size_t)ncap * sizeof(*p));
		if (!p)
			return -1;
		th->begun = p;
		th->cap = ncap;
	}
	th->begun[th->n++] = ordinal;
	return 0;
}

static void wrote(struct rp_sx_thread *th, int64_t ns)
{
	if (ns > th->last_ns)
		th->last_ns = ns;
}

/* The begins of c's selected open ancestors not begun yet, outermost first. */
static int begin_ancestors(struct rp_sx_thread *th, const struct rp_view *v, const struct tr_call *c,
                           rp_sx_slice_fn fn, void *ctx)
{
	const struct tr_trace *t = v->t;
	const uint64_t top = th->n ? th->begun[th->n - 1] : UINT64_MAX;
	uint32_t n = 0, found = 0;
	for (uint32_t p = c->parent; p != TR_NONE; p = tr_stream_open_call(t, p)->parent) {
		if (tr_stream_open_ordinal(t, p) == top) {
			found = 1;
			break;
		}
		n += (uint32_t)rp_call_in_selection(v, tr_stream_open_call(t, p));
	}
	if (!found)
		th->n = 0; /* not reached: a begun call is an ancestor until it is handed over */
	if (!n)
		return 0;
	uint32_t *anc = malloc((size_t)n * sizeof(*anc)), i = n;
	if (!anc)
		return -1;
	for (uint32_t p = c->parent; i; p = tr_stream_open_call(t, p)->parent)
		if (rp_call_in_selection(v, tr_stream_open_call(t, p)))
			anc[--i] = p;
	int rc = 0;
	for (i = 0; i < n && !rc; i++) {
		const struct tr_call *a = tr_stream_open_call(t, anc[i]);
		fn(ctx, a, RP_SLICE_BEGIN, a->start_ns, 1);
		wrote(th, a->start_ns);
		rc = push_begun(th, tr_stream_open_ordinal(t, anc[i]));
	}
	free(anc);
	return rc;
}

int rp_sx_slices_call(struct rp_sx_slices *s, const struct rp_view *v, const struct tr_call *c,
                      const struct tr_stream_info *info, rp_sx_slice_fn fn, void *ctx)
{
	if (c->thread >= s->nth) {
		uint32_t n = v->t->nthreads > c->thread ? v->t->nthreads : c->thread + 1;
		struct rp_sx_thread *th = realloc(s->th, (size_t)n * sizeof(*th));
		if (!th)
			return -1;
		memset(th + s->nth, 0, (size_t)(n - s->nth) * sizeof(*th));
		for (uint32_t i = s->nth; i < n; i++)
			th[i].last_ns = INT64_MIN;
		s->th = th;
		s->nth = n;
	}
	struct rp_sx_thread *th = &s->th[c->thread];
	if (th->n && th->begun[th->n - 1] == info->ordinal) {
		/* its begin went out with its first child's events */
		th->n--;
		int64_t end = tr_call_timed(c) ? c->end_ns : th->last_ns;
		fn(ctx, c, RP_SLICE_END, end, 1);
		wrote(th, end);
		return 0;
	}
	if (begin_ancestors(th, v, c, fn, ctx))
		return -1;
	if (!tr_call_timed(c)) {
		fn(ctx, c, RP_SLICE_INSTANT, c->start_ns, 0);
		wrote(th, c->start_ns);
		return 0;
	}
	fn(ctx, c, RP_SLICE_BEGIN, c->start_ns, 0);
	fn(ctx, c, RP_SLICE_END, c->end_ns, 0);
	wrote(th, c->end_ns);
	return 0;
}

void rp_sx_slices_free(struct rp_sx_slices *s)
{
	for (uint32_t i = 0; i < s->nth; i++)
		free(s->th[i].begun);
	free(s->th);
	s->th = NULL;
	s->nth = 0;
}

/* ---- parts a format may have nothing to do in ------------------------------------------------- */

int rp_sx_file_nothing(struct rp_sx *x, const struct rp_view *v, unsigned k)
{
	return 0;
}

int rp_sx_finish_file(struct rp_sx *x, const struct rp_view *v0)
{
	return ferror(x->f) ? -1 : 0;
}

void rp_sx_free_nothing(struct rp_sx *x)
{
}

/* ---- the driver ---------------------------------------------------------------------------- */

struct sx_file {
	const struct rp_opts *o;
	struct rp_sx *x;
	unsigned k;
	int64_t shift;
	int realtime;
	struct rp_view v;          /* from the metadata on: selection, kernel names */
	int have_view;
	struct rp_sel_cache cache;
	struct rp_thread_calls per_thread; /* its calls, selected or not */
	FILE *(*open_out)(const struct rp_opts *o);
	int out_failed;            /* the output could not be opened (said) */
	int format_failed;         /* the format's call failed: out of memory, or its database */
};

static int head_only(void *ctx, struct tr_trace *t)
{
	return 1;
}

static int no_call(void *ctx, const struct tr_trace *t, const struct tr_call *c, const struct tr_stream_info *info)
{
	return -1; /* not reached: head_only stops before the events */
}

static int sx_begin(void *ctx, struct tr_trace *t)
{
	struct sx_file *s = ctx;
	char err[64];
	if (rp_view_init_at(&s->v, t, s->o, s->shift, err, sizeof(err)))
		return -1;
	s->have_view = 1;
	s->v.axis_realtime = s->realtime;
	if (!s->x->opened) {
		if (s->x->open ? s->x->open(s->x, s->o) : !(s->x->f = s->open_out(s->o))) {
			s->out_failed = 1;
			return -1;
		}
		s->x->opened = 1;
	}
	return s->x->file_begin(s->x, &s->v, s->k);
}

static int sx_call(void *ctx, const struct tr_trace *t, const struct tr_call *c, const struct tr_stream_info *info)
{
	struct sx_file *s = ctx;
	if (rp_thread_calls_add(&s->per_thread, t, c->thread))
		return -1;
	/* kernel names from every call, selected or not, as a whole read takes them */
	if (s->v.fi[c->func].names_kernel && rp_view_name_call(&s->v, c))
		return -1;
	int sel = rp_stream_selects(&s->v, &s->cache, c);
	if (sel <= 0)
		return sel;
	if (s->x->call(s->x, &s->v, s->k, c, info)) {
		s->format_failed = 1;
		return -1;
	}
	return 0;
}

/* Lines several files up as a whole read does, from their metadata: shift[] and whether by
 * realtime. A file that cannot be read keeps shift 0 (it fails again when streamed). */
static int align(const struct rp_opts *o, char **files, int nfiles, int64_t *shift)
{
	struct tr_trace **heads = calloc((size_t)nfiles + 1, sizeof(*heads));
	int *where = calloc((size_t)nfiles + 1, sizeof(*where));
	int64_t *sh = calloc((size_t)nfiles + 1, sizeof(*sh));
	unsigned n = 0;
	int realtime = 0;
	if (heads && where && sh) {
		const struct tr_stream_sink sink = {.call = no_call, .begin = head_only};
		char err[4608];
		for (int i = 0; i < nfiles; i++)
			if ((heads[n] = tr_open_stream(files[i], &sink, err, sizeof(err))) != NULL)
				where[n++] = i;
		if (n)
			realtime = rp_align(heads, n, o, sh);
		for (unsigned i = 0; i < n; i++) {
			shift[where[i]] = sh[i];
			tr_close(heads[i]);
		}
	}
	free(heads);
	free(where);
	free(sh);
	return realtime;
}

/* What the file had that streaming leaves out, said on stderr; the words for the output. */
static const char *left_out(const struct tr_trace *t)
{
	struct tr_stream_skipped sk;
	tr_stream_get_skipped(t, &sk);
	int gpu = sk.gpu_blocks != 0, stacks = sk.stack_blocks || sk.stack_recs;
	if (!gpu && !stacks)
		return NULL;
	const char *what = gpu && stacks ? "GPU records and call stacks" : gpu ? "GPU records" : "call stacks";
	fprintf(stderr, "cuhook report: warning: %s: %s are not read when streaming: the export leaves them out "
	        "(--no-stream gives them)\n", rp_safe(t->path), what);
	return what;
}

int rp_sx_run(const struct rp_opts *o, char **files, int nfiles, FILE *(*open_out)(const struct rp_opts *o),
              void (*warn)(const struct tr_trace *t), struct rp_sx *x, int *damaged)
{
	int status = RP_EXIT_OK, rc = 0;
	int64_t *shift = calloc((size_t)nfiles + 1, sizeof(*shift));
	if (!shift) {
		fprintf(stderr, "cuhook report: out of memory\n");
		return RP_EXIT_ERROR;
	}
	int realtime = x->merged ? align(o, files, nfiles, shift) : 0;
	struct tr_trace *t0 = NULL;
	struct rp_view v0;
	unsigned k = 0;
	for (int i = 0; i < nfiles && !rc; i++) {
		char err[4608];
		struct sx_file s = {.o = o, .x = x, .k = k, .shift = shift[i], .realtime = realtime, .open_out = open_out};
		const struct tr_stream_sink sink = {.call = sx_call, .begin = sx_begin, .ctx = &s};
		struct tr_trace *t = tr_open_stream(files[i], &sink, err, sizeof(err));
		struct rp_view v;
		if (t && rp_view_init_at(&v, t, o, shift[i], err, sizeof(err))) {
			tr_close(t);
			t = NULL;
		}
		if (!t) {
			/* a database says its own failure (x->free) */
			if (!s.out_failed && !(s.format_failed && !x->f))
				fprintf(stderr, "cuhook report: %s\n", err);
			status = RP_EXIT_ERROR;
			if (s.have_view)
				rp_view_free(&s.v);
			free(s.cache.thread_sel);
			free(s.per_thread.calls);
			if (s.out_failed || s.format_failed)
				break;
			continue;
		}
		v.axis_realtime = realtime;
		rp_view_take_names(&v, &s.v);
		warn(t);
		*damaged |= t->truncated || t->errors;
		const char *lo = left_out(t);
		if (lo)
			x->left_out = lo;
		struct tr_stream_skipped sk;
		tr_stream_get_skipped(t, &sk);
		x->thread_calls = s.per_thread.calls;
		x->nthread_calls = s.per_thread.n;
		x->file_calls = sk.calls;
		rc = x->file_end(x, &v, k);
		x->thread_calls = NULL;
		x->nthread_calls = 0;
		rp_view_free(&s.v);
		free(s.cache.thread_sel);
		free(s.per_thread.calls);
		if (!k) { /* the first file's view stays for finish (the time origin) */
			t0 = t;
			v0 = v;
		} else {
			rp_view_free(&v);
			tr_close(t);
		}
		k++;
	}
	if (x->opened && !rc)
		rc = x->finish(x, t0 ? &v0 : NULL);
	if (rc && x->opened) {
		if (x->f) /* a database says its own */
			fprintf(stderr, "cuhook report: writing %s failed: %s\n", o->output ? o->output : "stdout",
			        errno ? strerror(errno) : "out of memory");
		status = RP_EXIT_ERROR;
	}
	if (t0) {
		rp_view_free(&v0);
		tr_close(t0);
	}
	free(shift);
	return status;
}
