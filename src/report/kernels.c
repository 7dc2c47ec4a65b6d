/* The Kernels section: launches per kernel name, direct launches (cuLaunchKernel & co) and the
 * kernel nodes of graph launches (cuGraphLaunch, counted by the GRAPHS entry of its executable
 * graph), with the grid shapes the launch arguments give and the launch calls' time. */
#include "report.h"

#include "decoders.h"

#include <stdlib.h>
#include <string.h>

#define SHAPES_KEPT 4

struct shape {
	uint32_t grid[3], block[3];
	uint64_t launches;
};

struct acc {
	uint64_t handle;        /* the first handle seen under this key */
	char *name;             /* display name (malloc'ed) */
	int named;
	uint64_t direct, graph;
	int64_t call_ns;
	struct shape shapes[SHAPES_KEPT];
	uint32_t nshapes, more_shapes;
};

static void add_shape(struct acc *a, const uint32_t grid[3], const uint32_t block[3], uint64_t n)
{
	for (uint32_t i = 0; i < a->nshapes; i++)
		if (!memcmp(a->shapes[i].grid, grid, 12) && !memcmp(a->shapes[i].block, block, 12)) {
			a->shapes[i].launches += n;
			return;
		}
	if (a->nshapes == SHAPES_KEPT) {
		a->more_shapes++;
		return;
	}
	struct shape *s = &a->shapes[a->nshapes++];
	memcpy(s->grid, grid, 12);
	memcpy(s->block, block, 12);
	s->launches = n;
}

struct table {
	struct acc *a;
	uint32_t n, cap;
};

static struct acc *acc_new(struct table *t)
{
	if (t->n == t->cap) {
		uint32_t nc = t->cap ? t->cap * 2 : 64;
		struct acc *na = realloc(t->a, nc * sizeof(*na));
		if (!na)
			return NULL;
		t->a = na;
		t->cap = nc;
	}
	struct acc *a = &t->a[t->n++];
	memset(a, 0, sizeof(*a));
	return a;
}

/* The accumulator of a kernel name (as recorded: len bytes), by its display form. */
static struct acc *acc_by_name(struct table *t, const char *s, size_t len, uint64_t handle)
{
	char *raw = strndup(s, len);
	if (!raw)
		return NULL;
	char *dm = rp_demangle(raw);
	if (dm) {
		free(raw);
		raw = dm;
	}
	for (uint32_t i = 0; i < t->n; i++)
		if (t->a[i].named && !strcmp(t->a[i].name, raw)) {
			free(raw);
			return &t->a[i];
		}
	struct acc *a = acc_new(t);
	if (!a) {
		free(raw);
		return NULL;
	}
	a->handle = handle;
	a->named = 1;
	a->name = raw;
	return a;
}

/* The accumulator of a handle: by its name when it has one (handles of one kernel in several
 * contexts or modules count together), else by the handle. */
static struct acc *acc_of(struct table *t, const struct rp_view *v, uint64_t h)
{
	const char *s;
	uint16_t len;
	if (rp_kernel_name(v, h, &s, &len))
		return acc_by_name(t, s, len, h);
	for (uint32_t i = 0; i < t->n; i++)
		if (!t->a[i].named && t->a[i].handle == h)
			return &t->a[i];
	struct acc *a = acc_new(t);
	if (!a)
		return NULL;
	char key[64];
	snprintf(key, sizeof(key), "function 0x%llx", (unsigned long long)h);
	a->handle = h;
	if (!(a->name = strdup(key))) {
		t->n--;
		return NULL;
	}
	return a;
}

/* The last GRAPHS entry of an executable graph, or NULL. */
static const struct tr_graph *graph_of(const struct tr_trace *t, uint64_t exec)
{
	for (uint32_t i = t->ngraphs; i-- > 0;)
		if (t->graphs[i].exec == exec)
			return &t->graphs[i];
	return NULL;
}

static int by_launches(const void *x, const void *y)
{
	const struct rp_kstat *a = x, *b = y;
	uint64_t la = a->direct + a->graph, lb = b->direct + b->graph;
	if (la != lb)
		return la > lb ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* n launches of a kernel as a graph's node. */
static void node_launch(struct rp_kernels *out, struct acc *a, const uint32_t grid[3], const uint32_t block[3],
                        uint64_t n)
{
	a->graph += n;
	out->launches += n;
	out->graph_nodes += n;
	if (a->named)
		out->named += n;
	add_shape(a, grid, block, n);
}

/* Executable graphs with no GRAPHS entry whose kernels the GPU recorded for one of their launches
 * (the model: the first such launch in the trace, selected or not): their other launches, which
 * have no GPU records of their own (before the names window opened, after it closed), are
 * counted with the model's kernels. Open addressing, by executable graph. */
struct sibling {
	uint64_t exec;
	uint32_t model;          /* index in calls[] */
	uint64_t copies;         /* selected launches counted with the model's kernels */
};
struct siblings {
	struct sibling *s;
	uint32_t mask;           /* slots - 1; 0 with no table */
};

static struct sibling *sibling_slot(struct siblings *sb, uint64_t exec)
{
	uint64_t h = exec * 0x9e3779b97f4a7c15ull;
	for (uint32_t i = (uint32_t)(h >> 32) & sb->mask;; i = (i + 1) & sb->mask)
		if (!sb->s[i].exec || sb->s[i].exec == exec)
			return &sb->s[i];
}

static bool is_graph_launch(const struct rp_view *v, const struct tr_call *c)
{
	return v->fi[c->func].graph_launch;
}

/* The models: 0, or -1 out of memory. */
static int siblings_find(const struct rp_view *v, const uint8_t *gpu_of_call, struct siblings *sb)
{
	const struct tr_trace *t = v->t;
	memset(sb, 0, sizeof(*sb));
	if (!gpu_of_call)
		return 0;
	uint32_t n = 0;
	for (uint32_t i = 0; i < t->ncalls; i++)
		n += gpu_of_call[i] && is_graph_launch(v, &t->calls[i]);
	if (!n)
		return 0;
	uint32_t slots = 16;
	while (slots < 2 * n)
		slots *= 2;
	if (!(sb->s = calloc(slots, sizeof(*sb->s))))
		return -1;
	sb->mask = slots - 1;
	for (uint32_t i = 0; i < t->ncalls; i++) {
		const struct tr_call *c = &t->calls[i];
		if (!gpu_of_call[i] || !is_graph_launch(v, c) || !tr_call_arg(c, 0) || graph_of(t, tr_call_arg(c, 0)))
			continue;
		struct sibling *s = sibling_slot(sb, tr_call_arg(c, 0));
		if (!s->exec)
			*s = (struct sibling){tr_call_arg(c, 0), i, 0};
	}
	return 0;
}

int rp_kernel_stats(const struct rp_view *v, struct rp_kernels *out)
{
	memset(out, 0, sizeof(*out));
	const struct tr_trace *t = v->t;
	struct table tb = {0};
	/* With GPU records (--gpu): which calls submitted kernels (1), and, of those, the graph
	 * launches whose kernels are to be taken from them (2) */
	uint8_t *gpu_of_call = NULL;
	struct siblings sb = {0};
	if (t->ngpu_work) {
		if (!(gpu_of_call = calloc(t->ncalls ? t->ncalls : 1, 1)))
			goto oom;
		for (uint32_t w = 0; w < t->ngpu_work; w++)
			if (t->gpu_work[w].kind == TR_GPU_KERNEL && t->gpu_work[w].call < t->ncalls)
				gpu_of_call[t->gpu_work[w].call] = 1;
	}
	if (siblings_find(v, gpu_of_call, &sb) < 0)
		goto oom;
	for (uint32_t i = 0; i < v->nsel; i++) {
		const struct tr_call *c = &t->calls[v->sel[i]];
		const struct rp_finfo *fi = &v->fi[c->func];
		int timed = tr_call_timed(c);
		if (fi->kind == RP_KIND_LAUNCH && fi->l.func_arg >= 0) {
			if (timed && (uint32_t)c->ret != 0)
				continue; /* a failed launch launched nothing */
			uint64_t h = tr_call_arg(c, (unsigned)fi->l.func_arg);
			struct acc *a = acc_of(&tb, v, h);
			if (!a)
				goto oom;
			a->direct++;
			out->launches++;
			out->direct++;
			if (a->named)
				out->named++;
			if (timed)
				a->call_ns += tr_call_dur(c);
			uint32_t grid[3], block[3];
			const char *cfg;
			uint16_t cn;
			if (fi->l.direct_layout && tr_call_nargs(c) >= 7) {
				for (int k = 0; k < 3; k++) {
					grid[k] = (uint32_t)tr_call_arg(c, 1 + k);
					block[k] = (uint32_t)tr_call_arg(c, 4 + k);
				}
				add_shape(a, grid, block, 1);
			} else if (!fi->l.direct_layout && tr_call_data_str(t, c, "config", &cfg, &cn) &&
			           cn >= CUHOOK_LAUNCH_CONFIG_BYTES) {
				memcpy(grid, cfg, 12);
				memcpy(block, cfg + 12, 12);
				add_shape(a, grid, block, 1);
			}
			continue;
		}
		if (!is_graph_launch(v, c))
			continue;
		if (timed && (uint32_t)c->ret != 0)
			continue;
		out->graph_calls++;
		if (timed)
			out->graph_call_ns += tr_call_dur(c);
		const struct tr_graph *g = graph_of(t, tr_call_arg(c, 0));
		if (!g && gpu_of_call && gpu_of_call[v->sel[i]]) {
			gpu_of_call[v->sel[i]] = 2; /* its kernels as the GPU ran them, below */
			out->graph_from_gpu++;
			continue;
		}
		struct sibling *s = !g && sb.mask ? sibling_slot(&sb, tr_call_arg(c, 0)) : NULL;
		if (s && s->exec) {
			s->copies++; /* the model's kernels, below */
			out->graph_from_gpu++;
			out->graph_from_sibling++;
			continue;
		}
		if (!g) {
			out->graph_unknown++;
			continue;
		}
		for (uint32_t k = 0; k < g->nkernels; k++) {
			const struct cuhook_graph_kernel *gk = &g->kernels[k];
			struct acc *a = acc_of(&tb, v, gk->func);
			if (!a)
				goto oom;
			node_launch(out, a, gk->grid, gk->block, 1);
		}
	}
	for (uint32_t w = 0; gpu_of_call && w < t->ngpu_work; w++) {
		const struct tr_gpu_work *gw = &t->gpu_work[w];
		if (gw->kind != TR_GPU_KERNEL || gw->call >= t->ncalls)
			continue;
		uint64_t n = gpu_of_call[gw->call] == 2; /* its own launch, selected */
		if (sb.mask && is_graph_launch(v, &t->calls[gw->call])) {
			const struct sibling *s = sibling_slot(&sb, tr_call_arg(&t->calls[gw->call], 0));
			if (s->exec && s->model == gw->call)
				n += s->copies;
		}
		if (!n)
			continue;
		const char *name = tr_gpu_work_name(t, gw);
		struct acc *a;
		if (name) {
			a = acc_by_name(&tb, name, strlen(name), 0);
		} else {
			a = acc_new(&tb);
			if (a && !(a->name = strdup("(unnamed kernel)")))
				tb.n--, a = NULL;
		}
		if (!a)
			goto oom;
		uint32_t grid[3], block[3];
		for (int k = 0; k < 3; k++) {
			grid[k] = (uint32_t)gw->grid[k];
			block[k] = (uint32_t)gw->block[k];
		}
		node_launch(out, a, grid, block, n);
	}
	free(gpu_of_call);
	gpu_of_call = NULL;
	free(sb.s);
	sb.s = NULL;
	out->k = calloc(tb.n ? tb.n : 1, sizeof(*out->k));
	if (!out->k)
		goto oom;
	for (uint32_t i = 0; i < tb.n; i++) {
		const struct acc *a = &tb.a[i];
		struct rp_kstat *k = &out->k[i];
		k->name = a->name;
		k->named = a->named;
		k->direct = a->direct;
		k->graph = a->graph;
		k->call_ns = a->call_ns;
		k->shapes = a->nshapes + a->more_shapes;
		uint64_t best = 0;
		for (uint32_t s = 0; s < a->nshapes; s++)
			if (a->shapes[s].launches > best) {
				best = a->shapes[s].launches;
				memcpy(k->grid, a->shapes[s].grid, 12);
				memcpy(k->block, a->shapes[s].block, 12);
			}
	}
	out->n = tb.n;
	free(tb.a);
	qsort(out->k, out->n, sizeof(*out->k), by_launches);
	return 0;
oom:
	free(gpu_of_call);
	free(sb.s);
	for (uint32_t i = 0; i < tb.n; i++)
		free(tb.a[i].name);
	free(tb.a);
	free(out->k);
	memset(out, 0, sizeof(*out));
	return -1;
}

void rp_kernels_free(struct rp_kernels *k)
{
	for (uint32_t i = 0; i < k->n; i++)
		free(k->k[i].name);
	free(k->k);
	memset(k, 0, sizeof(*k));
}

#define KERNELS_SHOWN 20
/* What names them: the names window (src/agent/kernel_names.h) or --gpu. */
#define NAMES_WINDOW_HINT                                                                          \
	"  (cuhook attach --names-window 1 names them from a second of the GPU's kernel records; it "   \
	"loads CUPTI into the program, where it stays: see docs/agent.md)\n"

void rp_kernels_write_text(FILE *f, const struct rp_view *v, const struct rp_kernels *kp)
{
	const struct rp_kernels ks = *kp;
	if (!ks.launches) {
		if (ks.graph_unknown) {
			rp_text_section(f, v, "Kernels");
			fprintf(f, "  %llu graph launches of graphs instantiated before tracing began: their kernels are "
			        "unknown\n%s", (unsigned long long)ks.graph_unknown, NAMES_WINDOW_HINT);
		}
		return;
	}
	rp_text_section(f, v, "Kernels (launches per kernel name; a graph launch adds a launch of each kernel node)");
	fprintf(f, "  %llu kernel launches: %llu by launch calls, %llu as nodes of %llu graph launches; %llu named "
	        "(%.1f %%)\n", (unsigned long long)ks.launches, (unsigned long long)ks.direct,
	        (unsigned long long)ks.graph_nodes, (unsigned long long)(ks.graph_calls - ks.graph_unknown),
	        (unsigned long long)ks.named,
	        100.0 * (double)ks.named / (double)ks.launches);
	if (ks.graph_from_gpu)
		fprintf(f, "  %llu graph launches of graphs instantiated before tracing began counted by the GPU's "
		        "records of their kernels (--gpu, the names window)\n", (unsigned long long)ks.graph_from_gpu);
	if (ks.graph_from_sibling)
		fprintf(f, "  ... %llu of them by the records of another launch of the same graph\n",
		        (unsigned long long)ks.graph_from_sibling);
	if (ks.graph_unknown)
		fprintf(f, "  %llu graph launches of graphs instantiated before tracing began: their kernels are unknown "
		        "and left out\n%s", (unsigned long long)ks.graph_unknown, NAMES_WINDOW_HINT);
	fprintf(f, "   Launches     Direct  Graph nodes  Launch-call time  Grid (most launched) x block  Shapes  Name\n");
	fprintf(f, "   --------     ------  -----------  ----------------  ---------------------------  ------  ----\n");
	uint32_t shown = v->o->all || ks.n <= KERNELS_SHOWN ? ks.n : KERNELS_SHOWN;
	for (uint32_t i = 0; i < shown; i++) {
		const struct rp_kstat *k = &ks.k[i];
		char dur[32], shape[64];
		if (k->shapes)
			snprintf(shape, sizeof(shape), "(%u,%u,%u)x(%u,%u,%u)", k->grid[0], k->grid[1], k->grid[2],
			         k->block[0], k->block[1], k->block[2]);
		else
			snprintf(shape, sizeof(shape), "-");
		fprintf(f, "  %9llu  %9llu  %11llu  %16s  %27s  %6u  %s\n", (unsigned long long)(k->direct + k->graph),
		        (unsigned long long)k->direct, (unsigned long long)k->graph,
		        k->direct ? rp_fmt_dur(dur, sizeof(dur), (double)k->call_ns) : "-", shape, k->shapes,
		        rp_safe(k->name));
	}
	if (shown < ks.n)
		fprintf(f, "  ... %u more kernels (--all lists them)\n", ks.n - shown);
}

void rp_kernels_write_json(FILE *f, const struct rp_kernels *kp)
{
	const struct rp_kernels ks = *kp;
	fprintf(f, "  \"kernels\": {\"launches\": %llu, \"direct\": %llu, \"graph_nodes\": %llu, \"graph_calls\": %llu, "
	        "\"graph_unknown\": %llu, \"graph_from_gpu\": %llu, \"graph_from_sibling\": %llu, \"named\": %llu, "
	        "\"by_name\": [",
	        (unsigned long long)ks.launches, (unsigned long long)ks.direct, (unsigned long long)ks.graph_nodes,
	        (unsigned long long)ks.graph_calls, (unsigned long long)ks.graph_unknown,
	        (unsigned long long)ks.graph_from_gpu, (unsigned long long)ks.graph_from_sibling,
	        (unsigned long long)ks.named);
	for (uint32_t i = 0; i < ks.n; i++) {
		const struct rp_kstat *k = &ks.k[i];
		fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
		rp_json_str(f, k->name, strlen(k->name));
		fprintf(f, ", \"named\": %s, \"launches\": %llu, \"direct\": %llu, \"graph_nodes\": %llu, \"call_ns\": %lld, "
		        "\"shapes\": %u", k->named ? "true" : "false", (unsigned long long)(k->direct + k->graph),
		        (unsigned long long)k->direct, (unsigned long long)k->graph, (long long)k->call_ns, k->shapes);
		if (k->shapes)
			fprintf(f, ", \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u]", k->grid[0], k->grid[1], k->grid[2],
			        k->block[0], k->block[1], k->block[2]);
		fprintf(f, "}");
	}
	fprintf(f, "%s]},\n", ks.n ? "\n  " : "");
}
