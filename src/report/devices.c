/* The device each call worked on, from the host side alone (no GPU record needed), and per device
 * what the selected calls did.
 *
 * A CUDA context belongs to one device; each thread has a stack of contexts, its top the current
 * one. The trace shows where contexts come from and go: cuCtxCreate (the device argument, the
 * context returned in its DATA record), cuDevicePrimaryCtxRetain (likewise), cuCtxSetCurrent
 * (replaces the top; NULL pops it), cuCtxPushCurrent, cuCtxPopCurrent, cuCtxDestroy (pops the
 * context when on top), cuCtxGetCurrent (its DATA record: the current context) and cuCtxGetDevice
 * (its DATA record: the current context's device). A call then works on:
 *   - the device it names: cuDeviceGetAttribute & co, cuDevicePrimaryCtx*, cuCtxCreate;
 *   - the context it names: cuCtxSetCurrent, cuCtxPushCurrent, cuCtxDestroy, and cuCtxGetDevice_v2,
 *     cuCtxSynchronize_v2 with a context (NULL: the current one); cuCtxPopCurrent: the one it pops;
 *   - its stream's context (a stream it submits to, waits on or destroys...), for a stream
 *     created in the trace (cuStreamCreate* in the context current then); the default streams and
 *     streams created before the trace: the current one;
 *   - no device (RP_DEV_NONE): cuInit, version and count queries, entry-point lookups, error
 *     strings, or no context current (the stack known to be empty);
 *   - else the current context's device.
 * What the trace does not show is unknown (RP_DEV_UNKNOWN), never guessed: a thread's contexts
 * before its first context call (an attach, a flight-recorder window), a context whose device no
 * call told (created before the trace, its cuCtxGetDevice not recorded: the agent counts it by
 * default), a device number past RP_MAX_DEVICES, an ioctl (the exports list them; ioctls are no
 * API call and in no per-device sum).
 *
 * Contexts and streams are handles valid program-wide while each thread's stack is its own, so two
 * passes over the calls in file order (each thread's in entry order) do: the first learns which
 * device each context is on and which context each stream was created in, the second gives each
 * call its device with all of that known. A handle reused after a destroy keeps the last device
 * learnt. Only successful calls (EXIT with 0) change a stack. A thread that lost records (DROP)
 * may have lost a context call with them: the DROP records say how many, not which, so its later
 * calls keep the context from before. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

enum op {
	OP_CURRENT,       /* works on the current context's device */
	OP_NONE,          /* concerns no device */
	OP_UNKNOWN,       /* an ioctl: its device file is not the context's (agent option ioctl=1) */
	/* from OP_SET to OP_STREAM_CREATE: the ops that change a stack or teach a fact (changes()) */
	OP_SET,           /* cuCtxSetCurrent(ctx) */
	OP_PUSH,          /* cuCtxPushCurrent(ctx) */
	OP_POP,           /* cuCtxPopCurrent(&ctx) */
	OP_CREATE,        /* cuCtxCreate(&ctx, ..., dev at arg): pushes */
	OP_DESTROY,       /* cuCtxDestroy(ctx) */
	OP_RETAIN,        /* cuDevicePrimaryCtxRetain(&ctx, dev) */
	OP_GET_CURRENT,   /* cuCtxGetCurrent(&ctx): "context" */
	OP_GET_DEVICE,    /* cuCtxGetDevice(&dev): "device" */
	OP_STREAM_CREATE, /* cuStreamCreate*(&stream, ...): "stream" */
	OP_DEVICE_GET,    /* cuDeviceGet(&dev, ordinal): "device" */
	OP_NAMES_DEVICE,  /* a device at arg */
	OP_NAMES_CTX,     /* a context at arg, NULL: the current one */
	OP_STREAM,        /* submits to, waits on or orders a stream (rp_stream_ref_of) */
	OP_STREAM_ARG,    /* names a stream at arg otherwise (cuStreamDestroy & co) */
};

struct fop {
	uint8_t op;
	int8_t arg;
	struct rp_stream_ref sref;
};

static struct fop op_of(const struct rp_view *v, uint32_t func)
{
	static const struct {
		const char *name; /* exact names first, then base names (rp_base_name) */
		uint8_t op;
		int8_t arg;
	} exact[] = {
		{"cuCtxCreate", OP_CREATE, 2}, {"cuCtxCreate_v2", OP_CREATE, 2}, {"cuCtxCreate_v3", OP_CREATE, 4},
		{"cuCtxCreate_v4", OP_CREATE, 3}, {"cuCtxGetDevice_v2", OP_NAMES_CTX, 1},
		{"cuCtxSynchronize_v2", OP_NAMES_CTX, 0},
	}, base[] = {
		{"cuCtxSetCurrent", OP_SET, 0}, {"cuCtxPushCurrent", OP_PUSH, 0}, {"cuCtxPopCurrent", OP_POP, -1},
		{"cuCtxDestroy", OP_DESTROY, 0}, {"cuDevicePrimaryCtxRetain", OP_RETAIN, 1},
		{"cuCtxGetCurrent", OP_GET_CURRENT, -1}, {"cuCtxGetDevice", OP_GET_DEVICE, -1},
		{"cuDeviceGet", OP_DEVICE_GET, -1}, {"cuStreamCreate", OP_STREAM_CREATE, -1},
		{"cuStreamCreateWithPriority", OP_STREAM_CREATE, -1},
		{"cuDevicePrimaryCtxRelease", OP_NAMES_DEVICE, 0}, {"cuDevicePrimaryCtxReset", OP_NAMES_DEVICE, 0},
		{"cuDevicePrimaryCtxSetFlags", OP_NAMES_DEVICE, 0}, {"cuDevicePrimaryCtxGetState", OP_NAMES_DEVICE, 0},
		{"cuDeviceGetAttribute", OP_NAMES_DEVICE, 2}, {"cuDeviceGetName", OP_NAMES_DEVICE, 2},
		{"cuDeviceTotalMem", OP_NAMES_DEVICE, 1}, {"cuDeviceComputeCapability", OP_NAMES_DEVICE, 2},
		{"cuDeviceGetProperties", OP_NAMES_DEVICE, 1}, {"cuDeviceGetUuid", OP_NAMES_DEVICE, 1},
		{"cuDeviceGetLuid", OP_NAMES_DEVICE, 2}, {"cuDeviceGetPCIBusId", OP_NAMES_DEVICE, 2},
		{"cuDeviceCanAccessPeer", OP_NAMES_DEVICE, 1}, {"cuDeviceGetP2PAttribute", OP_NAMES_DEVICE, 2},
		{"cuDeviceGetDefaultMemPool", OP_NAMES_DEVICE, 1}, {"cuDeviceGetMemPool", OP_NAMES_DEVICE, 1},
		{"cuDeviceSetMemPool", OP_NAMES_DEVICE, 0}, {"cuDeviceGetExecAffinitySupport", OP_NAMES_DEVICE, 2},
		{"cuDeviceGetGraphMemAttribute", OP_NAMES_DEVICE, 0}, {"cuDeviceSetGraphMemAttribute", OP_NAMES_DEVICE, 0},
		{"cuDeviceGraphMemTrim", OP_NAMES_DEVICE, 0}, {"cuDeviceGetTexture1DLinearMaxWidth", OP_NAMES_DEVICE, 3},
		{"cuInit", OP_NONE, -1}, {"cuDriverGetVersion", OP_NONE, -1}, {"cuDeviceGetCount", OP_NONE, -1},
		{"cuDeviceGetByPCIBusId", OP_NONE, -1}, {"cuGetProcAddress", OP_NONE, -1},
		{"cuGetExportTable", OP_NONE, -1}, {"cuGetErrorString", OP_NONE, -1}, {"cuGetErrorName", OP_NONE, -1},
		{"cuModuleGetLoadingMode", OP_NONE, -1}, {"ioctl", OP_UNKNOWN, -1},
		{"cuStreamDestroy", OP_STREAM_ARG, 0}, {"cuStreamGetPriority", OP_STREAM_ARG, 0},
		{"cuStreamGetFlags", OP_STREAM_ARG, 0}, {"cuStreamGetCtx", OP_STREAM_ARG, 0},
		{"cuStreamAddCallback", OP_STREAM_ARG, 0}, {"cuLaunchHostFunc", OP_STREAM_ARG, 0},
		{"cuStreamBeginCapture", OP_STREAM_ARG, 0}, {"cuStreamEndCapture", OP_STREAM_ARG, 0},
		{"cuStreamIsCapturing", OP_STREAM_ARG, 0}, {"cuStreamGetCaptureInfo", OP_STREAM_ARG, 0},
	};
	const char *name = tr_func_name(v->t, func);
	char b[128];
	for (unsigned i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (!strcmp(name, exact[i].name))
			return (struct fop){exact[i].op, exact[i].arg, {0, -1}};
	rp_base_name(name, b, sizeof(b));
	for (unsigned i = 0; i < sizeof(base) / sizeof(base[0]); i++)
		if (!strcmp(b, base[i].name))
			return (struct fop){base[i].op, base[i].arg, {0, -1}};
	struct rp_stream_ref r = rp_stream_ref_of(v, func);
	return (struct fop){r.role ? OP_STREAM : OP_CURRENT, -1, r};
}

/* ---- what the first pass learns: contexts' devices, streams' contexts ---- */

#define CTX_UNKNOWN UINT64_MAX /* a stack entry the trace does not show */

/* What the first pass learns of a handle: a context's device, or a stream's context (and when
 * that context is one the trace did not show, CTX_UNKNOWN, the device it was known to be on).
 * Open addressing by handle: a program has a few contexts and streams, a hostile trace as many
 * as calls. The last fact learnt of a handle wins. */
struct fact {
	uint64_t handle, ctx;
	int16_t dev;
	uint8_t used;
};

struct facts {
	struct fact *f;
	uint32_t cap, n;
};

static struct fact *fact_slot(const struct facts *m, uint64_t h)
{
	uint32_t i = (uint32_t)((h * 0x9e3779b97f4a7c15ull) >> 32) & (m->cap - 1);
	while (m->f[i].used && m->f[i].handle != h)
		i = (i + 1) & (m->cap - 1);
	return &m->f[i];
}

static const struct fact *fact_get(const struct facts *m, uint64_t h)
{
	const struct fact *e = m->cap ? fact_slot(m, h) : NULL;
	return e && e->used ? e : NULL;
}

static int fact_put(struct facts *m, uint64_t h, uint64_t ctx, int dev)
{
	if ((m->n + 1) * 2 > m->cap) {
		uint32_t cap = m->cap ? 2 * m->cap : 64;
		struct facts g = {calloc(cap, sizeof(struct fact)), cap, m->n};
		if (!g.f)
			return -1;
		for (uint32_t i = 0; i < m->cap; i++)
			if (m->f[i].used)
				*fact_slot(&g, m->f[i].handle) = m->f[i];
		free(m->f);
		*m = g;
	}
	struct fact *e = fact_slot(m, h);
	m->n += !e->used;
	*e = (struct fact){h, ctx, (int16_t)dev, 1};
	return 0;
}

/* One thread's contexts: its stack's top entries as far as the trace shows them. */
#define STACK_CAP 16
struct tstate {
	uint64_t ctx[STACK_CAP];
	int16_t hint[STACK_CAP];  /* the device a cuCtxGetDevice told for that entry, or unknown */
	uint8_t depth;
	uint8_t below_unknown;    /* what lies under the entries is unknown (else: nothing) */
	int16_t cur;              /* the second pass: the current context's device */
};

struct walk {
	const struct rp_view *v;
	struct fop *ops;           /* per function id */
	struct tstate *ts;         /* per thread */
	struct facts ctxs;         /* context -> device */
	struct facts streams;      /* stream -> the context it was created in */
	int second;                /* the second pass: give calls their device, learn nothing */
};

static int valid_dev(uint64_t d)
{
	return d < RP_MAX_DEVICES;
}

/* A CUdevice argument: an int in a 64-bit register whose upper half the caller need not clear. */
static uint64_t dev_arg(uint64_t reg)
{
	return (uint64_t)(int64_t)(int32_t)(uint32_t)reg;
}

static int dev_of_ctx(const struct walk *w, uint64_t ctx, int hint)
{
	if (ctx == 0)
		return RP_DEV_NONE;
	const struct fact *e = ctx != CTX_UNKNOWN ? fact_get(&w->ctxs, ctx) : NULL;
	return e ? e->dev : hint;
}

static int learn_ctx(struct walk *w, uint64_t ctx, uint64_t dev)
{
	if (w->second || !ctx || ctx == CTX_UNKNOWN || !valid_dev(dev))
		return 0;
	return fact_put(&w->ctxs, ctx, ctx, (int)dev);
}

static int learn_stream(struct walk *w, uint64_t stream, uint64_t ctx, int hint)
{
	return w->second ? 0 : fact_put(&w->streams, stream, ctx, hint);
}

static uint64_t top(const struct tstate *s)
{
	return s->depth ? s->ctx[s->depth - 1] : s->below_unknown ? CTX_UNKNOWN : 0;
}

static int top_hint(const struct tstate *s)
{
	return s->depth ? s->hint[s->depth - 1] : RP_DEV_UNKNOWN;
}

static int current_dev(const struct walk *w, const struct tstate *s)
{
	return dev_of_ctx(w, top(s), top_hint(s));
}

static void push(struct tstate *s, uint64_t ctx, int hint)
{
	if (s->depth == STACK_CAP) { /* deeper than followed: the bottom entry is forgotten */
		memmove(s->ctx, s->ctx + 1, (STACK_CAP - 1) * sizeof(s->ctx[0]));
		memmove(s->hint, s->hint + 1, (STACK_CAP - 1) * sizeof(s->hint[0]));
		s->depth--;
		s->below_unknown = 1;
	}
	s->ctx[s->depth] = ctx;
	s->hint[s->depth] = (int16_t)hint;
	s->depth++;
}

static void pop(struct tstate *s)
{
	if (s->depth)
		s->depth--;
}

static void set_top(struct tstate *s, uint64_t ctx, int hint)
{
	if (s->depth) {
		s->ctx[s->depth - 1] = ctx;
		s->hint[s->depth - 1] = (int16_t)hint;
	} else {
		push(s, ctx, hint);
	}
}

/* Whether an op changes its thread's stack or teaches a handle's facts: the first pass reads
 * only these calls, the second keeps each thread's current device up to date after them. */
static int changes(uint8_t op)
{
	return op >= OP_SET && op <= OP_STREAM_CREATE;
}

/* One call: its device (before what it changes, but for the calls that tell what is current),
 * then its effect on its thread's stack and what it teaches. Most calls only take their thread's
 * current device, which the second pass keeps in tstate.cur. */
static int step(struct walk *w, const struct tr_call *c, int *dev)
{
	const struct fop f = w->ops[c->func];
	struct tstate *s = &w->ts[c->thread];
	*dev = s->cur;
	if (f.op == OP_CURRENT || (!w->second && !changes(f.op)))
		return 0;
	const struct tr_trace *t = w->v->t;
	const int ok = tr_call_timed(c) && c->ret == 0;
	const int has_arg =
	        f.arg >= 0 && (unsigned)f.arg < tr_call_nargs(c) && (f.arg >= 6 || tr_call_has_reg(c, (unsigned)f.arg));
	const uint64_t arg = has_arg ? tr_call_arg(c, (unsigned)f.arg) : 0;
	uint64_t x;
	switch (f.op) {
	case OP_CURRENT:
		break;
	case OP_NONE:
		*dev = RP_DEV_NONE;
		break;
	case OP_UNKNOWN:
		*dev = RP_DEV_UNKNOWN;
		break;
	case OP_SET:
		if (!has_arg) {
			*dev = RP_DEV_UNKNOWN;
			break;
		}
		if (arg)
			*dev = dev_of_ctx(w, arg, RP_DEV_UNKNOWN);
		if (ok) {
			if (arg)
				set_top(s, arg, RP_DEV_UNKNOWN);
			else
				pop(s);
		}
		break;
	case OP_PUSH:
		*dev = has_arg ? dev_of_ctx(w, arg, RP_DEV_UNKNOWN) : RP_DEV_UNKNOWN;
		if (ok)
			push(s, has_arg ? arg : CTX_UNKNOWN, RP_DEV_UNKNOWN);
		break;
	case OP_POP:
		if (ok)
			pop(s);
		break;
	case OP_DESTROY:
		*dev = has_arg ? dev_of_ctx(w, arg, RP_DEV_UNKNOWN) : RP_DEV_UNKNOWN;
		if (ok && has_arg && top(s) == arg)
			pop(s);
		break;
	case OP_CREATE:
	case OP_RETAIN:
		*dev = has_arg && valid_dev(dev_arg(arg)) ? (int)dev_arg(arg) : RP_DEV_UNKNOWN;
		if (ok && tr_call_data_value(t, c, "context", &x)) {
			if (learn_ctx(w, x, has_arg ? dev_arg(arg) : UINT64_MAX))
				return -1;
			if (f.op == OP_CREATE)
				push(s, x, *dev);
		} else if (ok && f.op == OP_CREATE) {
			push(s, CTX_UNKNOWN, *dev);
		}
		break;
	case OP_GET_CURRENT:
		if (ok && tr_call_data_value(t, c, "context", &x) && x != top(s)) {
			if (x) {
				set_top(s, x, RP_DEV_UNKNOWN);
			} else {
				s->depth = 0;
				s->below_unknown = 0;
			}
			*dev = current_dev(w, s);
		}
		break;
	case OP_GET_DEVICE:
		if (ok && tr_call_data_value(t, c, "device", &x) && valid_dev(x)) {
			if (learn_ctx(w, top(s), x))
				return -1;
			if (top(s))
				set_top(s, top(s), (int)x);
			*dev = current_dev(w, s);
		}
		break;
	case OP_DEVICE_GET:
		*dev = ok && tr_call_data_value(t, c, "device", &x) && valid_dev(x) ? (int)x : RP_DEV_UNKNOWN;
		break;
	case OP_STREAM_CREATE:
		if (ok && tr_call_data_value(t, c, "stream", &x) && learn_stream(w, x, top(s), top_hint(s)))
			return -1;
		break;
	case OP_NAMES_DEVICE:
		*dev = has_arg && valid_dev(dev_arg(arg)) ? (int)dev_arg(arg) : RP_DEV_UNKNOWN;
		break;
	case OP_NAMES_CTX:
		if (has_arg && arg)
			*dev = dev_of_ctx(w, arg, RP_DEV_UNKNOWN);
		break;
	case OP_STREAM:
	case OP_STREAM_ARG:
		/* 0x0 and 0x1 (legacy), 0x2 (per-thread): the current context's default streams; with
		 * no stream created in the trace, every stream is the current context's (no argument
		 * read: most calls are these) */
		if (w->streams.n && (f.op == OP_STREAM ? rp_call_stream(w->v, c, f.sref, &x) : (x = arg, has_arg))) {
			const struct fact *sc = x > 2 ? fact_get(&w->streams, x) : NULL;
			if (sc)
				*dev = dev_of_ctx(w, sc->ctx, sc->dev);
		}
		break;
	}
	if (changes(f.op))
		s->cur = (int16_t)current_dev(w, s);
	return 0;
}

static int walk_calls(struct walk *w, int16_t *of_call)
{
	const struct tr_trace *t = w->v->t;
	for (uint32_t th = 0; th < t->nthreads; th++)
		w->ts[th] = (struct tstate){.below_unknown = 1, .cur = RP_DEV_UNKNOWN};
	for (uint32_t i = 0; i < t->ncalls; i++) {
		int dev;
		if (step(w, &t->calls[i], &dev))
			return -1;
		if (of_call)
			of_call[i] = (int16_t)dev;
	}
	return 0;
}

/* The selected calls' sums per device (outermost ones for time and work, as rp_analyze). */
static int add_up(const struct rp_view *v, struct rp_devices *d)
{
	const struct tr_trace *t = v->t;
	uint8_t *seen = calloc((size_t)RP_DEV_SLOTS * (t->nthreads ? t->nthreads : 1), 1);
	if (!seen)
		return -1;
	for (uint32_t i = 0; i < v->nsel; i++) {
		const struct tr_call *c = &t->calls[v->sel[i]];
		const struct rp_finfo *fi = &v->fi[c->func];
		unsigned slot = rp_dev_slot(d->of_call[v->sel[i]]);
		struct rp_device *r = &d->d[slot];
		r->calls++;
		if (!seen[(size_t)slot * t->nthreads + c->thread]) {
			seen[(size_t)slot * t->nthreads + c->thread] = 1;
			r->nthreads++;
		}
		if (c->parent != TR_NONE)
			continue;
		r->outer_calls++;
		r->host = rp_sat_add(r->host, tr_call_dur(c));
		if (fi->kind == RP_KIND_LAUNCH) {
			r->launches++;
		} else if (fi->kind == RP_KIND_XFER) {
			int known;
			uint64_t bytes = rp_call_bytes(v, c, &known);
			r->copies[fi->x.dir]++;
			if (known)
				r->bytes[fi->x.dir] += bytes;
		} else if (fi->kind == RP_KIND_ALLOC) {
			int known;
			r->alloc_calls++;
			r->alloc_bytes += rp_call_bytes(v, c, &known);
		}
	}
	for (unsigned k = 0; k < RP_MAX_DEVICES; k++)
		d->known += d->d[k].calls != 0;
	free(seen);
	return 0;
}

int rp_devices_analyze(const struct rp_view *v, struct rp_devices **out)
{
	const struct tr_trace *t = v->t;
	*out = NULL;
	if (!t->ncalls)
		return 0;
	struct rp_devices *d = calloc(1, sizeof(*d));
	struct walk w = {.v = v};
	int rc = -1;
	if (d)
		d->of_call = malloc((size_t)t->ncalls * sizeof(*d->of_call));
	w.ops = malloc((t->nfuncs ? t->nfuncs : 1) * sizeof(*w.ops));
	w.ts = malloc((t->nthreads ? t->nthreads : 1) * sizeof(*w.ts));
	if (!d || !d->of_call || !w.ops || !w.ts)
		goto out;
	for (uint32_t f = 0; f < t->nfuncs; f++)
		w.ops[f] = op_of(v, f);
	if (walk_calls(&w, NULL))
		goto out;
	w.second = 1;
	if (walk_calls(&w, d->of_call) || add_up(v, d))
		goto out;
	rc = 0;
out:
	free(w.ops);
	free(w.ts);
	free(w.ctxs.f);
	free(w.streams.f);
	if (rc)
		rp_devices_free(d);
	else
		*out = d;
	return rc;
}

void rp_devices_free(struct rp_devices *d)
{
	if (d)
		free(d->of_call);
	free(d);
}
