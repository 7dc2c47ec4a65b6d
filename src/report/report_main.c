/* rp_main: read every trace, apply the options, analyse once (result.h), write the chosen format.
 * A file that cannot be read as a trace at all is reported on stderr and skipped (exit status 1);
 * a truncated or damaged one is reported on what could be read, with a warning on stderr. */
#include "result.h"

#include "out_file.h"
#include "export_stream.h"

#include <unistd.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void warn_damage(const struct tr_trace *t)
{
	/* A missing END block alone is the normal result of a killed program: worth one line. */
	if (t->truncated)
		fprintf(stderr, "cuhook report: warning: %s: truncated: %s\n", rp_safe(t->path),
		        rp_safe(t->truncated_reason));
	if (t->errors)
		fprintf(stderr, "cuhook report: warning: %s: %llu error%s while reading (first: %s)\n", rp_safe(t->path),
		        (unsigned long long)t->errors, t->errors == 1 ? "" : "s",
		        t->nerror_msgs ? rp_safe(t->error_msgs[0]) : "?");
}

/* Progress on a terminal for traces big enough to take a moment (the reader calls this every
 * 64 MiB of events); the line is erased when a file is done. */
static void show_progress(const char *path, uint64_t done, uint64_t total)
{
	if (done >= total)
		fprintf(stderr, "\r\033[K");
	else
		fprintf(stderr, "\rcuhook report: reading %s: %3.0f%%", path, total ? 100.0 * (double)done / (double)total : 0);
	fflush(stderr);
}

#define OUTPUT_HINT "pass --force to replace it, or choose another name with -o"

/* -o FILE, created as every file cuhook writes is (out_file.h); stdout for none or "-". */
static FILE *open_output(const struct rp_opts *o)
{
	if (!o->output || !strcmp(o->output, "-"))
		return stdout;
	char err[4608];
	int fd = cuhook_out_create(o->output, o->force, "output file", OUTPUT_HINT, err, sizeof(err));
	FILE *f = fd >= 0 ? fdopen(fd, o->format == RP_FMT_PERFETTO ? "wb" : "w") : NULL;
	if (!f) {
		if (fd >= 0) {
			snprintf(err, sizeof(err), "%s: %s", o->output, strerror(errno));
			close(fd);
		}
		fprintf(stderr, "cuhook report: %s\n", err);
	}
	return f;
}

/* The text or json report or the folded stacks in bounded memory (text_stream.c): each file read
 * once and let go before the next one. Text, json: a report per file (--separate or one file;
 * cmd_report refuses the rest; json's in a "traces" array for several, as a whole read's).
 * Folded: the stacks of every file added up, written at the end. */
static int stream_main(const struct rp_opts *o, char **files, int nfiles)
{
	char err[4608];
	int status = RP_EXIT_OK, damaged = 0, written = 0, rc = 0;
	const int folded = o->format == RP_FMT_FOLDED, json = o->format == RP_FMT_JSON;
	struct rp_folded stacks = {0};
	FILE *out = NULL;
	if (o->output && strcmp(o->output, "-") &&
	    cuhook_out_check(o->output, o->force, "output file", OUTPUT_HINT, err, sizeof(err))) {
		fprintf(stderr, "cuhook report: %s\n", err);
		return RP_EXIT_ERROR;
	}
	for (int i = 0; i < nfiles && !rc; i++) {
		struct rp_stream_report *r;
		struct tr_trace *t = rp_stream_read(o, files[i], folded ? &stacks : NULL, nfiles > 1, &r, err, sizeof(err));
		if (!t) {
			fprintf(stderr, "cuhook report: %s\n", err);
			status = RP_EXIT_ERROR;
			continue;
		}
		warn_damage(t);
		damaged |= t->truncated || t->errors;
		if (json)
			fprintf(stderr, "cuhook report: note: %s: streamed, the json report leaves out what needs every call at "
			        "once (its \"left_out\" list; --no-stream gives them)\n", rp_safe(t->path));
		if (folded && rp_stream_skipped(r)->stack_recs)
			fprintf(stderr, "cuhook report: warning: %s: call stacks are not read when streaming: its folded stacks "
			        "hold the traced calls only (--no-stream reads them)\n", rp_safe(t->path));
		if (!out && !(out = open_output(o)))
			status = RP_EXIT_ERROR;
		if (out && json) {
			fprintf(out, written++ ? ",\n" : nfiles > 1 ? "{\"traces\": [\n" : "");
			rc = rp_stream_write_json(out, r) || fflush(out);
		} else if (out && !folded) {
			if (written++)
				fprintf(out, "\n\n");
			rc = rp_stream_write_text(out, r) || fflush(out);
		}
		rp_stream_free(r);
		tr_close(t);
		if (!out)
			break;
	}
	if (json && out && written && !rc)
		fprintf(out, nfiles > 1 ? "\n]}\n" : "\n");
	if (folded) {
		if (out)
			rc = rp_folded_finish(out, &stacks, rc) || fflush(out);
		else
			rp_folded_finish(stdout, &stacks, -1); /* frees them */
	}
	if (rc) {
		fprintf(stderr, "cuhook report: writing %s failed: %s\n", o->output ? o->output : "stdout",
		        errno ? strerror(errno) : "out of memory");
		status = RP_EXIT_ERROR;
	}
	if (out && out != stdout && fclose(out)) {
		fprintf(stderr, "cuhook report: %s: %s\n", o->output, strerror(errno));
		status = RP_EXIT_ERROR;
	}
	if (status == RP_EXIT_OK && damaged && o->strict)
		status = RP_EXIT_TRUNCATED;
	return status;
}

/* jsonl, csv, chrome, perfetto, sqlite in bounded memory (export_stream.h). */
static int stream_export(const struct rp_opts *o, char **files, int nfiles)
{
	char err[4608];
	if (o->output && strcmp(o->output, "-") &&
	    cuhook_out_check(o->output, o->force, "output file", OUTPUT_HINT, err, sizeof(err))) {
		fprintf(stderr, "cuhook report: %s\n", err);
		return RP_EXIT_ERROR;
	}
	struct rp_sx x = {.merged = nfiles > 1 && !o->separate};
	int rc = o->format == RP_FMT_JSONL ? rp_sx_jsonl(&x)
	         : o->format == RP_FMT_CSV ? rp_sx_csv(&x)
	         : o->format == RP_FMT_CHROME ? rp_sx_chrome(&x)
	         : o->format == RP_FMT_SQLITE ? rp_sx_sqlite(&x, OUTPUT_HINT)
	                                      : rp_sx_perfetto(&x);
	int damaged = 0, status = RP_EXIT_ERROR;
	if (rc)
		fprintf(stderr, "cuhook report: out of memory\n");
	else
		status = rp_sx_run(o, files, nfiles, open_output, warn_damage, &x, &damaged);
	if (x.free)
		x.free(&x);
	if (x.f && fflush(x.f)) {
		fprintf(stderr, "cuhook report: writing %s failed: %s\n", o->output ? o->output : "stdout", strerror(errno));
		status = RP_EXIT_ERROR;
	}
	if (x.f && x.f != stdout && fclose(x.f)) {
		fprintf(stderr, "cuhook report: %s: %s\n", o->output, strerror(errno));
		status = RP_EXIT_ERROR;
	}
	if (status == RP_EXIT_OK && damaged && o->strict)
		status = RP_EXIT_TRUNCATED;
	return status;
}

int rp_main(const struct rp_opts *o, char **files, int nfiles)
{
	if (isatty(2))
		tr_progress = show_progress;
	if (rp_should_stream(o, files, nfiles)) {
		if (o->format == RP_FMT_TEXT || o->format == RP_FMT_FOLDED || o->format == RP_FMT_JSON)
			return stream_main(o, files, nfiles);
		return stream_export(o, files, nfiles);
	}
	struct tr_trace **traces = calloc((size_t)nfiles + 1, sizeof(*traces));
	struct rp_view *views = calloc((size_t)nfiles + 1, sizeof(*views));
	int status = RP_EXIT_OK, nviews = 0, damaged = 0;
	struct rp_result res = {0};
	char err[4608];
	FILE *out = NULL;
	if (!traces || !views) {
		fprintf(stderr, "cuhook report: out of memory\n");
		status = RP_EXIT_ERROR;
		goto done;
	}
	/* an output that will be refused is said before reading traces that may be large */
	if (o->output && strcmp(o->output, "-") &&
	    cuhook_out_check(o->output, o->force, "output file", OUTPUT_HINT, err, sizeof(err))) {
		fprintf(stderr, "cuhook report: %s\n", err);
		status = RP_EXIT_ERROR;
		goto done;
	}
	int ntraces = 0;
	for (int i = 0; i < nfiles; i++) {
		struct tr_trace *t = tr_open(files[i], err, sizeof(err));
		if (!t) {
			fprintf(stderr, "cuhook report: %s\n", err);
			status = RP_EXIT_ERROR;
			continue;
		}
		traces[ntraces++] = t;
	}
	/* Several files: one time axis (report.h, rp_align); --separate: each on its own. */
	int64_t *shift = calloc((size_t)ntraces + 1, sizeof(*shift));
	if (!shift) {
		fprintf(stderr, "cuhook report: out of memory\n");
		status = RP_EXIT_ERROR;
		goto done;
	}
	int realtime = 0;
	if (ntraces > 1 && !o->separate)
		realtime = rp_align(traces, (unsigned)ntraces, o, shift);
	for (int i = 0; i < ntraces; i++) {
		struct tr_trace *t = traces[i];
		traces[i] = NULL;
		if (rp_view_init_at(&views[nviews], t, o, shift[i], err, sizeof(err))) {
			fprintf(stderr, "cuhook report: %s\n", err);
			tr_close(t);
			status = RP_EXIT_ERROR;
			continue;
		}
		views[nviews].axis_realtime = realtime;
		traces[nviews] = t;
		warn_damage(t);
		if (t->truncated || t->errors)
			damaged = 1;
		nviews++;
	}
	free(shift);
	if (!nviews)
		goto done;
	/* the summaries are what the text report and the JSON export show */
	if (rp_result_build(views, (unsigned)nviews, o->format == RP_FMT_TEXT || o->format == RP_FMT_JSON, &res)) {
		fprintf(stderr, "cuhook report: out of memory\n");
		status = RP_EXIT_ERROR;
		goto done;
	}
	if (o->format == RP_FMT_SQLITE) {
		/* a database, not a stream: the exporter creates and fills the file itself */
		if (rp_write_sqlite(o, OUTPUT_HINT, views, (unsigned)nviews))
			status = RP_EXIT_ERROR;
		else if (damaged && o->strict)
			status = RP_EXIT_TRUNCATED;
		goto done;
	}
	out = open_output(o);
	if (!out) {
		status = RP_EXIT_ERROR;
		goto done;
	}
	int rc = 0;
	switch (o->format) {
	case RP_FMT_TEXT:
		if (nviews > 1 && !o->separate) {
			rc = rp_write_text_merged(out, views, &res, realtime);
			break;
		}
		for (int i = 0; i < nviews && !rc; i++) {
			if (i)
				fprintf(out, "\n\n");
			rc = rp_write_text(out, &views[i], &res.per[i]);
		}
		break;
	case RP_FMT_JSON:
		rc = rp_write_json(out, views, &res);
		break;
	case RP_FMT_CSV:
		rc = rp_write_csv(out, views, (unsigned)nviews);
		break;
	case RP_FMT_JSONL:
		rc = rp_write_jsonl(out, views, (unsigned)nviews);
		break;
	case RP_FMT_CHROME:
		rc = rp_write_chrome(out, views, (unsigned)nviews);
		break;
	case RP_FMT_PERFETTO:
		rc = rp_write_perfetto(out, views, (unsigned)nviews);
		break;
	case RP_FMT_FOLDED:
		rc = rp_write_folded(out, views, (unsigned)nviews);
		break;
	case RP_FMT_SQLITE: /* written above */
		break;
	}
	if (fflush(out) || rc) {
		fprintf(stderr, "cuhook report: writing %s failed: %s\n", o->output ? o->output : "stdout",
		        errno ? strerror(errno) : "out of memory");
		status = RP_EXIT_ERROR;
	}
	if (out != stdout && fclose(out)) {
		fprintf(stderr, "cuhook report: %s: %s\n", o->output, strerror(errno));
		status = RP_EXIT_ERROR;
	}
	if (status == RP_EXIT_OK && damaged && o->strict)
		status = RP_EXIT_TRUNCATED;
done:
	rp_result_free(views, (unsigned)nviews, &res);
	for (int i = 0; i < nviews; i++)
		rp_view_free(&views[i]);
	for (int i = 0; i < nfiles; i++)
		if (traces[i])
			tr_close(traces[i]);
	free(views);
	free(traces);
	return status;
}
