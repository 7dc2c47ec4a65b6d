/* The call stacks of one view, analysed once for every writer (the writers only format):
 *  - each stack of the trace symbolized (symbolize.c) with the MAPS block in force where it was
 *    defined, and its Python frames merged into its native ones as py-spy --native does: each
 *    native frame of CPython's evaluation loop (_PyEval_EvalFrameDefault, 3.11+; 3.10's
 *    PyEval_EvalFrameDefault / _PyEval_EvalFrame) stands for the Python frames of one activation
 *    of the loop, and the agent marks each activation's outermost Python frame
 *    (CUHOOK_PYFRAME_ENTRY). When the counts differ (a walk cut short, a loop frame the symbols
 *    do not name) the Python frames all go in place of the innermost loop frame (or outermost,
 *    when there is none) and the stack is marked approximate, with a note;
 *  - each stack's call site: its innermost Python frame, else its innermost native frame outside
 *    the CUDA libraries (libcuda, libcudart, libcupti, libcublas*, libcudnn*, libnv*), cuhook and
 *    the libraries the trace says were traced;
 *  - per stacked function, its selected calls by call site, with counts and time. */
#include "report.h"

#include "symbolize.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const rp_frame_kind_names[RP_FRAME_KIND_COUNT] = {"native", "python", "anon", "unmapped"};

struct rp_arena {
	struct rp_arena *next;
	size_t len, cap;
	char buf[];
};

static char *arena_printf(struct rp_stacks *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *arena_printf(struct rp_stacks *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	struct rp_arena *a = s->arena_;
	if (!a || a->cap - a->len < (size_t)n + 1) {
		size_t cap = (size_t)n + 1 > 65536 ? (size_t)n + 1 : 65536;
		a = malloc(sizeof(*a) + cap);
		if (!a)
			return NULL;
		a->len = 0;
		a->cap = cap;
		a->next = s->arena_;
		s->arena_ = a;
	}
	char *d = a->buf + a->len;
	va_start(ap, fmt);
	vsnprintf(d, (size_t)n + 1, fmt, ap);
	va_end(ap);
	a->len += (size_t)n + 1;
	return d;
}

static int add_note(struct rp_stacks *s, const char *text)
{
	char **n = realloc(s->notes, (s->nnotes + 1) * sizeof(*n));
	if (!n)
		return -1;
	s->notes = n;
	if (!(n[s->nnotes] = strdup(text)))
		return -1;
	s->nnotes++;
	return 0;
}

/* ---- frames ------------------------------------------------------------------------------------ */

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

/* Libraries whose frames are not where the program made the call: the CUDA libraries, cuhook's
 * agent, and every library the trace's LIB blocks name as traced. */
static int cuda_object(const struct tr_trace *t, const char *path)
{
	static const char *const prefixes[] = {"libcuda.", "libcudart.", "libcupti.", "libcublas", "libcudnn", "libnv",
	                                       "libcuhook."};
	const char *b = base_name(path);
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(b, prefixes[i], strlen(prefixes[i])))
			return 1;
	for (uint32_t i = 0; i < t->nlibs; i++)
		if (!(t->libs[i].flags & CUHOOK_LIB_INTERNAL) && !strcmp(t->libs[i].path, path))
			return 1;
	return 0;
}

/* CPython's evaluation loop: the native frame an activation's Python frames stand for. GCC may
 * split a function's cold part into "name.cold". */
static int eval_frame(const char *func)
{
	static const char *const names[] = {"_PyEval_EvalFrameDefault", "PyEval_EvalFrameDefault", "_PyEval_EvalFrame"};
	if (!func)
		return 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t l = strlen(names[i]);
		if (!strncmp(func, names[i], l) && (func[l] == 0 || func[l] == '.'))
			return 1;
	}
	return 0;
}

static const struct tr_map *map_of(const struct tr_trace *t, uint32_t set, uint64_t pc)
{
	if (set == TR_NONE || !t->map_sets[set].n)
		return NULL; /* an empty list: t->maps may be NULL */
	const struct tr_map *m = t->maps + t->map_sets[set].first;
	uint32_t lo = 0, hi = t->map_sets[set].n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (m[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && pc < m[lo - 1].end ? &m[lo - 1] : NULL;
}

static int native_frame(struct rp_stacks *s, struct rp_symbolizer *sym, const struct tr_trace *t, uint32_t set,
                        uint64_t pc, struct rp_frame *f)
{
	memset(f, 0, sizeof(*f));
	f->pc = pc;
	f->map = TR_NONE;
	const struct tr_map *m = map_of(t, set, pc);
	if (m)
		f->map = (uint32_t)(m - t->maps);
	if (!m) {
		f->kind = RP_FRAME_UNMAPPED;
		f->label = arena_printf(s, "[0x%llx]", (unsigned long long)pc);
		return f->label ? 0 : -1;
	}
	if (!m->inode && !m->path[0]) {
		f->kind = RP_FRAME_ANON;
		f->label = arena_printf(s, "[anon:0x%llx]", (unsigned long long)pc);
		return f->label ? 0 : -1;
	}
	f->kind = RP_FRAME_NATIVE;
	f->object = m->path;
	f->cuda = (uint8_t)cuda_object(t, m->path);
	struct rp_sym y;
	int ok = rp_sym_lookup(sym, m, pc, &y);
	f->offset = y.file_off;
	if (ok && y.func) {
		f->func = arena_printf(s, "%s", y.func);
		if (y.file) {
			f->file = arena_printf(s, "%s", y.file);
			f->line = y.line;
			f->label = arena_printf(s, "%s (%s:%d)", y.func, y.file, y.line);
		} else {
			f->label = f->func;
		}
		return f->label && f->func && (!y.file || f->file) ? 0 : -1;
	}
	f->label = arena_printf(s, "[%s+0x%llx]", m->path, (unsigned long long)y.file_off);
	return f->label ? 0 : -1;
}

static int python_frame(struct rp_stacks *s, const struct tr_pyframe *p, struct rp_frame *f)
{
	memset(f, 0, sizeof(*f));
	f->map = TR_NONE;
	f->kind = RP_FRAME_PYTHON;
	f->func = p->func;
	f->file = p->file;
	f->line = p->line > 0 ? p->line : 0;
	if (p->line > 0)
		f->label = arena_printf(s, "%s (%s:%d)", p->func, p->file, p->line);
	else
		f->label = arena_printf(s, "%s (%s)", p->func, p->file);
	return f->label ? 0 : -1;
}

static int push_frame(struct rp_stacks *s, uint32_t *cap, const struct rp_frame *f)
{
	if (s->nframes == *cap) {
		uint32_t ncap = *cap ? *cap * 2 : 256;
		struct rp_frame *n = realloc(s->frames, ncap * sizeof(*n));
		if (!n)
			return -1;
		s->frames = n;
		*cap = ncap;
	}
	s->frames[s->nframes++] = *f;
	return 0;
}

/* Stack si, merged, appended to s->frames innermost first, then reversed. */
static int merge_stack(struct rp_stacks *s, uint32_t *cap, struct rp_symbolizer *sym, const struct tr_trace *t,
                       uint32_t si)
{
	const struct tr_stack *st = &t->stacks[si];
	struct rp_stack_frames *out = &s->stacks[si];
	out->first = s->nframes;
	out->site = TR_NONE;
	struct rp_frame *nat = calloc((size_t)st->nnative + 1, sizeof(*nat));
	struct rp_frame *py = calloc((size_t)st->npython + 1, sizeof(*py));
	int rc = -1;
	if (!nat || !py)
		goto done;
	uint32_t neval = 0, ngroups = 0;
	for (uint32_t i = 0; i < st->nnative; i++) {
		if (native_frame(s, sym, t, st->map_set, st->pc[i], &nat[i]))
			goto done;
		neval += eval_frame(nat[i].func);
	}
	for (uint32_t i = 0; i < st->npython; i++) {
		const struct tr_pyframe *p = tr_pyframe_get(t, st->pyframe[i]);
		if (!p || python_frame(s, p, &py[i]))
			goto done;
		/* an activation ends at its entry frame, or where the walk stopped */
		if ((st->pyframe[i] & CUHOOK_PYFRAME_ENTRY) || i == st->npython - 1u)
			ngroups++;
	}
	uint32_t next_py = 0;
	if (st->npython && st->nnative && neval == ngroups) {
		/* each loop frame, innermost first, is the Python frames of its activation */
		for (uint32_t i = 0; i < st->nnative; i++) {
			if (!eval_frame(nat[i].func)) {
				if (push_frame(s, cap, &nat[i]))
					goto done;
				continue;
			}
			while (next_py < st->npython) {
				uint32_t k = next_py++;
				if (push_frame(s, cap, &py[k]))
					goto done;
				if (st->pyframe[k] & CUHOOK_PYFRAME_ENTRY)
					break;
			}
		}
	} else {
		int placed = !st->npython;
		if (st->npython && st->nnative) {
			out->approximate = 1;
			s->approximate++;
		}
		for (uint32_t i = 0; i < st->nnative; i++) {
			if (!placed && eval_frame(nat[i].func)) {
				for (uint32_t k = 0; k < st->npython; k++)
					if (push_frame(s, cap, &py[k]))
						goto done;
				placed = 1;
				continue;
			}
			if (push_frame(s, cap, &nat[i]))
				goto done;
		}
		for (uint32_t k = 0; !placed && k < st->npython; k++)
			if (push_frame(s, cap, &py[k]))
				goto done;
	}
	out->n = s->nframes - out->first;
	/* outermost first */
	struct rp_frame *f = s->frames + out->first;
	for (uint32_t i = 0, j = out->n; i + 1 < j; i++, j--) {
		struct rp_frame x = f[i];
		f[i] = f[j - 1];
		f[j - 1] = x;
	}
	/* the call site: the innermost Python frame, else the innermost native frame that is not
	 * the CUDA libraries' or cuhook's */
	for (uint32_t i = out->n; i-- > 0 && out->site == TR_NONE;)
		if (f[i].kind == RP_FRAME_PYTHON)
			out->site = out->first + i;
	for (uint32_t i = out->n; i-- > 0 && out->site == TR_NONE && !st->npython;)
		if (!f[i].cuda)
			out->site = out->first + i;
	rc = 0;
done:
	free(nat);
	free(py);
	return rc;
}

/* ---- call sites ------------------------------------------------------------------------------- */

struct site_key {
	uint32_t func;
	const char *label;
	int64_t dur;
	int timed;
};

static int by_func_label(const void *a, const void *b)
{
	const struct site_key *x = a, *y = b;
	if (x->func != y->func)
		return x->func < y->func ? -1 : 1;
	return strcmp(x->label, y->label);
}

static int by_calls_time(const void *a, const void *b)
{
	const struct rp_call_site *x = a, *y = b;
	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->label, y->label);
}

static int by_stacked_calls(const void *a, const void *b, void *ctx)
{
	const struct rp_stack_func *x = a, *y = b;
	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return strcmp(tr_func_name(ctx, x->func), tr_func_name(ctx, y->func));
}

static int call_sites(struct rp_stacks *s, const struct rp_view *v)
{
	const struct tr_trace *t = v->t;
	struct site_key *k = malloc(((size_t)v->nsel + 1) * sizeof(*k));
	if (!k)
		return -1;
	uint32_t n = 0;
	for (uint32_t i = 0; i < v->nsel; i++) {
		uint32_t ci = v->sel[i];
		if (!t->call_stack_ || t->call_stack_[ci] == TR_NONE)
			continue; /* (v->stacks is not set yet: rp_call_frames cannot be used) */
		const struct rp_stack_frames *sf = &s->stacks[t->call_stack_[ci]];
		const struct tr_call *c = &t->calls[ci];
		k[n++] = (struct site_key){c->func, sf->site != TR_NONE ? s->frames[sf->site].label : "(no frame)",
		                           tr_call_timed(c) ? tr_call_dur(c) : 0, tr_call_timed(c)};
	}
	qsort(k, n, sizeof(*k), by_func_label);
	s->sites = calloc((size_t)n + 1, sizeof(*s->sites));
	s->funcs = calloc((size_t)n + 1, sizeof(*s->funcs));
	if (!s->sites || !s->funcs) {
		free(k);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!i || k[i].func != k[i - 1].func)
			s->funcs[s->nfuncs++] = (struct rp_stack_func){k[i].func, 0, s->nsites, 0};
		struct rp_stack_func *fn = &s->funcs[s->nfuncs - 1];
		if (!i || k[i].func != k[i - 1].func || strcmp(k[i].label, k[i - 1].label)) {
			s->sites[s->nsites++] = (struct rp_call_site){k[i].func, k[i].label, 0, 0};
			fn->n++;
		}
		struct rp_call_site *cs = &s->sites[s->nsites - 1];
		cs->calls++;
		cs->total = rp_sat_add(cs->total, k[i].dur);
		fn->calls++;
	}
	free(k);
	for (uint32_t i = 0; i < s->nfuncs; i++)
		qsort(s->sites + s->funcs[i].first, s->funcs[i].n, sizeof(*s->sites), by_calls_time);
	qsort_r(s->funcs, s->nfuncs, sizeof(*s->funcs), by_stacked_calls, (void *)t);
	return 0;
}

/* ---- the analysis ---------------------------------------------------------------------------- */

int rp_stacks_analyze(struct rp_view *v, struct rp_stacks **out)
{
	*out = NULL;
	const struct tr_trace *t = v->t;
	if (!t->nstacks && !t->nstack_recs)
		return 0;
	struct rp_stacks *s = calloc(1, sizeof(*s));
	struct rp_symbolizer *sym = rp_sym_new();
	if (!s || !sym)
		goto oom;
	s->stacks = calloc((size_t)t->nstacks + 1, sizeof(*s->stacks));
	if (!s->stacks)
		goto oom;
	uint32_t cap = 0;
	int unmapped = 0;
	for (uint32_t i = 0; i < t->nstacks; i++) {
		if (merge_stack(s, &cap, sym, t, i))
			goto oom;
		unmapped |= t->stacks[i].map_set == TR_NONE && t->stacks[i].nnative;
	}
	uint32_t nn;
	const char *const *notes = rp_sym_notes(sym, &nn);
	for (uint32_t i = 0; i < nn; i++)
		if (add_note(s, notes[i]))
			goto oom;
	char buf[256];
	if (unmapped && add_note(s, "no MAPS block came before some stacks: their native addresses are shown as [0xaddr]"))
		goto oom;
	if (s->approximate) {
		snprintf(buf, sizeof(buf),
		         "%llu stack%s: the Python frames did not pair with the interpreter's evaluation-loop frames "
		         "(merged approximately: in place of the innermost one)",
		         (unsigned long long)s->approximate, s->approximate == 1 ? "" : "s");
		if (add_note(s, buf))
			goto oom;
	}
	if (call_sites(s, v))
		goto oom;
	rp_sym_free(sym);
	*out = s;
	return 0;
oom:
	rp_sym_free(sym);
	rp_stacks_free(s);
	return -1;
}

void rp_stacks_free(struct rp_stacks *s)
{
	if (!s)
		return;
	free(s->frames);
	free(s->stacks);
	free(s->sites);
	free(s->funcs);
	for (uint32_t i = 0; i < s->nnotes; i++)
		free(s->notes[i]);
	free(s->notes);
	for (struct rp_arena *a = s->arena_, *n; a; a = n) {
		n = a->next;
		free(a);
	}
	free(s);
}
