/* The call-by-call exports in bounded memory (cuhook report --stream with --format jsonl, csv,
 * chrome or perfetto; docs/report.md "Streaming report"). export_stream.c reads each file with
 * the streaming reader (trace_stream.h) and hands every selected call, as it finishes, to the
 * format's part (struct rp_sx, filled by rp_sx_jsonl & co. in the format's own file), which
 * writes it at once: the output holds the rows or events of a whole read, in another order (calls
 * in the order they finish, files one after another). What needs every call at once (GPU
 * records, call stacks, memory in use) is left out and said on stderr. */
#ifndef CUHOOK_EXPORT_STREAM_H
#define CUHOOK_EXPORT_STREAM_H

#include "report.h"
#include "trace_stream.h"

struct rp_sx {
	FILE *f;
	int merged;                /* several files on one time axis (not --separate) */
	const char *left_out;      /* at finish: what the trace had that streaming left out ("GPU
	                              records, call stacks"), for a format that can say it; NULL */
	void *state;               /* the format's */
	int opened;                /* f (or open's output) is open */
	/* set before file_end: the file's calls (all, selected or not) per thread index, and in all */
	const uint64_t *thread_calls;
	uint32_t nthread_calls;
	uint64_t file_calls;
	/* optional: opens an output of the format's own instead of f (sqlite); 0, or -1 having said
	 * why on stderr */
	int (*open)(struct rp_sx *x, const struct rp_opts *o);
	/* the file's metadata is read: v is its view (no call yet); k its place among the files */
	int (*file_begin)(struct rp_sx *x, const struct rp_view *v, unsigned k);
	/* a selected call, finished (trace_stream.h: valid during the call only) */
	int (*call)(struct rp_sx *x, const struct rp_view *v, unsigned k, const struct tr_call *c,
	            const struct tr_stream_info *info);
	/* the file is read: v its view again, now with the counted calls (COUNTS entries) */
	int (*file_end)(struct rp_sx *x, const struct rp_view *v, unsigned k);
	/* after the last file; v0 the first file's view (NULL when no file could be read) */
	int (*finish)(struct rp_sx *x, const struct rp_view *v0);
	void (*free)(struct rp_sx *x);
};

/* Streams the files into x (set up by one of the functions below, merged set, f NULL): the
 * output opened by open_out once the first file's metadata is read, warn called for each file
 * read (its damage; *damaged set when it has any). Returns the exit status (RP_EXIT_OK or
 * RP_EXIT_ERROR), having said why on stderr. x->free is the caller's to call, and f to close. */
int rp_sx_run(const struct rp_opts *o, char **files, int nfiles, FILE *(*open_out)(const struct rp_opts *o),
              void (*warn)(const struct tr_trace *t), struct rp_sx *x, int *damaged);

/* Set up x (f and merged set) for one format: 0, or -1 when out of memory. */
int rp_sx_jsonl(struct rp_sx *x);
int rp_sx_csv(struct rp_sx *x);
int rp_sx_chrome(struct rp_sx *x);
int rp_sx_perfetto(struct rp_sx *x);
int rp_sx_sqlite(struct rp_sx *x, const char *hint);

/* For a format with nothing to do there: file_begin or file_end, finish (f's error state), free. */
int rp_sx_file_nothing(struct rp_sx *x, const struct rp_view *v, unsigned k);
int rp_sx_finish_file(struct rp_sx *x, const struct rp_view *v0);
void rp_sx_free_nothing(struct rp_sx *x);

/* The open calls of each thread whose begin event is written (chrome, perfetto): a call arrives
 * when it finishes, after its children, so the slices of a thread are written as a whole read
 * writes them (begins in start order, nested) by writing the begins of a call's selected open
 * ancestors when its first child arrives. rp_sx_slices_call hands fn, for call c: the begins of
 * those ancestors (early set: the call is open, its DATA records not readable, so the event
 * carries nothing from them), then c's own events: begin and end (a timed call), or an instant
 * (a call without an EXIT), or only its end when its begin was written early (early set; a call
 * whose EXIT was lost ends at its thread's last event written). */
struct rp_sx_thread;
struct rp_sx_slices {
	struct rp_sx_thread *th;   /* per thread index */
	uint32_t nth;
};
typedef void (*rp_sx_slice_fn)(void *ctx, const struct tr_call *c, enum rp_slice_event what, int64_t ns, int early);
int rp_sx_slices_call(struct rp_sx_slices *s, const struct rp_view *v, const struct tr_call *c,
                      const struct tr_stream_info *info, rp_sx_slice_fn fn, void *ctx);
void rp_sx_slices_free(struct rp_sx_slices *s);

#endif
