/* --format csv: one row per selected call, in start order across threads (and files, one after
 * the other):
 *   tid,func,start_ns,end_ns,dur_ns,depth,ret,arg0..arg5,stack0..stack5,decoded,
 *   category,thread,kernel,start_realtime_ns,call_device
 * Times are nanoseconds from the start of the trace. Several files (not --separate): a first
 * column pid, the rows of all files in start order on their common time axis (rp_align). Arguments and the return value are raw
 * 64-bit register values in lowercase 0x hex. end_ns, dur_ns and ret are empty for a call
 * without an EXIT (never a number standing for "none": a column of integers stays one);
 * stackN is empty beyond the slots the ENTRY carried. decoded is the DATA records,
 * "label=value;label=value", quoted when it holds a comma or a quote. category is the function's
 * (as json's), thread the thread's name, kernel the kernel a launch launched (as the trace names
 * it, empty when it does not), start_realtime_ns the call's start in CLOCK_REALTIME ns since the
 * epoch (empty for a trace without a realtime clock pair): absolute time, to line the rows up with
 * other tools' traces of the same run; call_device the device the call worked on (devices.c;
 * empty when unknown or none).
 *
 * A trace with GPU blocks (taken with --gpu) also gets a row per selected GPU work record, among
 * the calls in start order, and so a column `record` before tid ("call", "kernel", "memcpy",
 * "memset") and the GPU columns after decoded (GPU_COLUMNS below), before the five above. A GPU
 * row's tid and func are those of the call that submitted it (empty when unlinked), its times the
 * GPU's, call_start_ns that call's entry time; its category is empty, its thread the submitting
 * call's, its kernel the kernel's demangled name. */
#include "export_stream.h"

#include <stdlib.h>
#include <string.h>

static void csv_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, f);
		return;
	}
	putc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			putc('"', f);
		putc(*s, f);
	}
	putc('"', f);
}

/* n bytes of s as one field (a kernel name from the trace need not be NUL-terminated) */
static void csv_field_n(FILE *f, const char *s, size_t n)
{
	char buf[1024];
	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;
	memcpy(buf, s, n);
	buf[n] = 0;
	csv_field(f, buf);
}

/* The last columns of every row: category, thread, kernel, start_realtime_ns, call_device. */
static void tail_columns(FILE *f, const struct rp_view *v, const char *category, const struct tr_call *c,
                         const char *kernel, size_t klen, int64_t start_ns)
{
	int64_t rt;
	putc(',', f);
	csv_field(f, category);
	putc(',', f);
	if (c)
		csv_field(f, v->t->threads[c->thread].name);
	putc(',', f);
	if (kernel)
		csv_field_n(f, kernel, klen);
	putc(',', f);
	if (rp_realtime(v, start_ns, &rt))
		fprintf(f, "%lld", (long long)rt);
	putc(',', f);
	int dev;
	if (c && v->devices && rp_call_device(v, (uint32_t)(c - v->t->calls), &dev))
		fprintf(f, "%d", dev);
}

#define GPU_COLUMNS ",name,device,context,stream,correlation,session,grid,block,shared_static,shared_dynamic," \
	"registers,copy_kind,bytes,value,graph_id,graph_node_id,api_start_ns,latency_ns,link,call_start_ns"
/* the GPU columns of a call row: empty */
#define GPU_EMPTY ",,,,,,,,,,,,,,,,,,,,"

static void csv_row(FILE *f, const struct rp_view *v, const struct tr_call *c, int with_pid, int gpu, char *dec,
                    size_t declen)
{
	const struct tr_trace *t = v->t;
	if (with_pid)
		fprintf(f, "%u,", t->pid);
	if (gpu)
		fputs("call,", f);
	fprintf(f, "%u,", t->threads[c->thread].tid);
	csv_field(f, tr_func_name(t, c->func));
	fprintf(f, ",%lld,", (long long)rp_rel(v, c->start_ns));
	if (tr_call_timed(c))
		fprintf(f, "%lld,%lld,%u,0x%llx", (long long)rp_rel(v, c->end_ns), (long long)tr_call_dur(c), c->depth,
		        (unsigned long long)c->ret);
	else
		fprintf(f, ",,%u,", c->depth);
	for (unsigned a = 0; a < 6; a++) { /* empty: a register the function does not take */
		if (tr_call_has_reg(c, a))
			fprintf(f, ",0x%llx", (unsigned long long)tr_call_arg(c, a));
		else
			putc(',', f);
	}
	unsigned ns = tr_call_nargs(c) > 6 ? tr_call_nargs(c) - 6 : 0;
	for (unsigned a = 0; a < CUHOOK_MAX_STACK_ARGS; a++) {
		if (a < ns)
			fprintf(f, ",0x%llx", (unsigned long long)tr_call_arg(c, 6 + a));
		else
			putc(',', f);
	}
	putc(',', f);
	tr_call_format_data(t, c, dec, declen);
	csv_field(f, dec);
	if (gpu)
		fputs(GPU_EMPTY, f);
	const char *kernel = NULL;
	uint16_t klen = 0;
	if (!rp_call_kernel(v, c, &kernel, &klen))
		kernel = NULL;
	tail_columns(f, v, rp_call_category(v, c->func), c, kernel, klen, c->start_ns);
	putc('\n', f);
}

/* A GPU work record: the call columns that apply (tid and func of its call, its GPU times), the
 * rest empty, then the GPU columns. */
static void gpu_row(FILE *f, const struct rp_view *v, uint32_t wi, int with_pid)
{
	const struct tr_trace *t = v->t;
	const struct tr_gpu_work *w = &t->gpu_work[wi];
	const struct tr_call *c = w->call != TR_NONE ? &t->calls[w->call] : NULL;
	if (with_pid)
		fprintf(f, "%u,", t->pid);
	fprintf(f, "%s,", rp_gpu_kind_names[w->kind]);
	if (c) {
		fprintf(f, "%u,", t->threads[c->thread].tid);
		csv_field(f, tr_func_name(t, c->func));
	} else {
		putc(',', f);
	}
	fprintf(f, ",%lld,%lld,%lld,,,,,,,,,,,,,,,", (long long)rp_rel(v, w->start_ns), (long long)rp_rel(v, w->end_ns),
	        (long long)(w->end_ns - w->start_ns));
	putc(',', f);
	csv_field(f, rp_gpu_work_label(v, w));
	fprintf(f, ",%u,%u,%u,%u,%u,", w->device, w->context, w->stream, w->correlation, w->session + 1);
	if (w->kind == TR_GPU_KERNEL)
		fprintf(f, "%dx%dx%d,%dx%dx%d,%u,%u,%u,,,", w->grid[0], w->grid[1], w->grid[2], w->block[0], w->block[1],
		        w->block[2], w->shared_static, w->shared_dynamic, w->registers);
	else if (w->kind == TR_GPU_MEMCPY)
		fprintf(f, ",,,,,%s,%llu,", rp_gpu_op_name(w->copy_kind <= CUHOOK_COPY_PTOP ? w->copy_kind : 0) + 7,
		        (unsigned long long)w->bytes);
	else
		fprintf(f, ",,,,,,%llu,%u", (unsigned long long)w->bytes, w->value);
	fprintf(f, ",%u,%llu,", w->graph_id, (unsigned long long)w->graph_node_id);
	if (w->api != TR_NONE) {
		const struct tr_gpu_api *a = &t->gpu_api[w->api];
		fprintf(f, "%lld,%lld", (long long)rp_rel(v, a->start_ns), (long long)(w->start_ns - a->start_ns));
	} else {
		putc(',', f);
	}
	fprintf(f, ",%s,", rp_gpu_link_keys[w->link]);
	if (c)
		fprintf(f, "%lld", (long long)rp_rel(v, c->start_ns));
	const char *kernel = w->kind == TR_GPU_KERNEL ? rp_gpu_work_label(v, w) : NULL;
	tail_columns(f, v, "", c, kernel, kernel ? strlen(kernel) : 0, w->start_ns);
	putc('\n', f);
}

#define CSV_HEADER "tid,func,start_ns,end_ns,dur_ns,depth,ret,arg0,arg1,arg2,arg3,arg4,arg5," \
	"stack0,stack1,stack2,stack3,stack4,stack5,decoded"
#define CSV_TAIL ",category,thread,kernel,start_realtime_ns,call_device"

/* Rows of several sorted sources (each view's calls, and its GPU work when gpu is set), merged in
 * start order on the common axis: ties go to the earlier source (file order, calls first). */
static int merge_rows(FILE *f, struct rp_view *views, unsigned n, int with_pid, int gpu)
{
	char dec[1024];
	uint32_t *pos = calloc(2 * (size_t)n, sizeof(*pos));
	if (!pos)
		return -1;
	for (;;) {
		unsigned best = 2 * n;
		int64_t bt = 0;
		for (unsigned src = 0; src < 2 * n; src++) {
			const struct rp_view *v = &views[src / 2];
			int is_gpu = src % 2;
			uint32_t count = !is_gpu ? v->nxsel : gpu && v->gpu ? v->gpu->nsel : 0;
			if (pos[src] >= count)
				continue;
			int64_t at = is_gpu ? v->t->gpu_work[v->gpu->sel[pos[src]]].start_ns : v->t->calls[v->xsel[pos[src]]].start_ns;
			at = rp_rel(v, at);
			if (best == 2 * n || at < bt) {
				best = src;
				bt = at;
			}
		}
		if (best == 2 * n)
			break;
		const struct rp_view *v = &views[best / 2];
		if (best % 2)
			gpu_row(f, v, v->gpu->sel[pos[best]++], with_pid);
		else
			csv_row(f, v, &v->t->calls[v->xsel[pos[best]++]], with_pid, gpu, dec, sizeof(dec));
	}
	free(pos);
	return 0;
}

static void csv_header(FILE *f, int merged, int gpu)
{
	fprintf(f, "%s%s" CSV_HEADER "%s" CSV_TAIL "\n", merged ? "pid," : "", gpu ? "record," : "", gpu ? GPU_COLUMNS : "");
}

/* k-way merge of the views' selections (each in start order) on the common axis: ties go to
 * the earlier file. */
int rp_write_csv(FILE *f, struct rp_view *views, unsigned n)
{
	int merged = rp_merged(views, n), gpu = 0;
	for (unsigned k = 0; k < n; k++)
		gpu |= views[k].gpu != NULL;
	csv_header(f, merged, gpu);
	if (merged)
		return merge_rows(f, views, n, 1, gpu) || ferror(f) ? -1 : 0;
	for (unsigned k = 0; k < n; k++)
		if (merge_rows(f, &views[k], 1, 0, gpu))
			return -1;
	return ferror(f) ? -1 : 0;
}

/* Streamed (export_stream.h): a row per call as it finishes, the files one after the other; no
 * GPU rows (GPU records are not read when streaming), so no record column nor GPU columns. */
static int csv_sx_begin(struct rp_sx *x, const struct rp_view *v, unsigned k)
{
	if (!k)
		csv_header(x->f, x->merged, 0);
	return 0;
}

static int csv_sx_call(struct rp_sx *x, const struct rp_view *v, unsigned k, const struct tr_call *c,
                       const struct tr_stream_info *info)
{
	char dec[1024];
	csv_row(x->f, v, c, x->merged, 0, dec, sizeof(dec));
	return 0;
}

int rp_sx_csv(struct rp_sx *x)
{
	x->file_begin = csv_sx_begin;
	x->call = csv_sx_call;
	x->file_end = rp_sx_file_nothing;
	x->finish = rp_sx_finish_file;
	x->free = rp_sx_free_nothing;
	return 0;
}
