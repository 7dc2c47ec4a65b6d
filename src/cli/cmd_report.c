/* cuhook report [options] trace.bin...: where the time went. This file only turns the command
 * line into struct rp_opts; the report itself is src/report (docs/report.md). */
#include "cli_msg.h"
#include "commands.h"
#include "glob_filter.h"
#include "report.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Read when no file is named: what `cuhook run` writes by default. */
#define DEFAULT_TRACE "trace.bin"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: cuhook report [options] [trace.bin...]\n"
	        "Without a file: ./" DEFAULT_TRACE ", cuhook run's default output.\n"
	        "\n"
	        "  -f, --format FMT      text (default), json, csv, jsonl, chrome, perfetto, folded,\n"
	        "                        sqlite (a database: needs -o FILE); perfetto is binary:\n"
	        "                        refused on a terminal unless -o is given\n"
	        "  -o, --output FILE     write there instead of stdout: a new file (mode 0600); one that\n"
	        "                        exists is refused unless --force\n"
	        "      --force           replace the -o file if it exists (never written through a link)\n"
	        "      --top N           slowest calls listed (default 10)\n"
	        "      --sort KEY        summary order: total (default), calls, avg, med, min, max, name\n"
	        "      --funcs GLOBS     only calls of these functions (comma-separated, * ? [...];\n"
	        "                        -GLOB or !GLOB excludes: cu*,-cuMem*); --functions: the same\n"
	        "      --thread LIST     only these threads (tids or names, comma-separated, globs;\n"
	        "                        -X or !X excludes a thread by tid or name)\n"
	        "      --time-range A:B  only calls starting in [A, B) from the trace start; times\n"
	        "                        in s (default), ms, us or ns: 1.5:3, 200ms:, :500ms\n"
	        "      --width N         timeline width in columns (default 100)\n"
	        "      --all             list every function that was not traced\n"
	        "      --color, --no-color  force ANSI colors on or off (default: on for a terminal\n"
	        "                        unless NO_COLOR is set)\n"
	        "      --strict          exit with status 3 if a trace is truncated or damaged\n"
	        "      --separate        several files: one report after the other, each on its own\n"
	        "                        time axis (default: one report over all processes)\n"
	        "      --align CLOCK     several files: line them up by realtime (default: each\n"
	        "                        trace's realtime - monotonic offset) or monotonic (one machine)\n"
	        "      --stream          every format in bounded memory (text, json, folded, jsonl, csv,\n"
	        "                        chrome, perfetto, sqlite): the trace is read once, no call kept;\n"
	        "                        sections that need every call are left out, and named; exports\n"
	        "                        in finish order (default for a file of 512 MiB or more)\n"
	        "      --no-stream       keep every call in memory (about 200 bytes each): every section\n"
	        "  -h, --help\n"
	        "  -V, --version\n"
	        "\n"
	        "Exit status: 0 reported; 1 a file could not be read as a trace (missing, empty, not a\n"
	        "trace, unsupported version) or the output could not be written (it exists: --force);\n"
	        "2 usage error (no file given and no ./" DEFAULT_TRACE ", a binary format to a terminal);\n"
	        "3 with --strict, a trace was truncated or damaged (it is still reported).\n");
}

static int parse_format(const char *s, enum rp_format *f)
{
	static const struct {
		const char *name;
		enum rp_format f;
	} fmts[] = {
		{"text", RP_FMT_TEXT}, {"json", RP_FMT_JSON}, {"csv", RP_FMT_CSV}, {"jsonl", RP_FMT_JSONL},
		{"chrome", RP_FMT_CHROME}, {"perfetto", RP_FMT_PERFETTO}, {"folded", RP_FMT_FOLDED},
		{"sqlite", RP_FMT_SQLITE},
	};
	for (unsigned i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++)
		if (!strcmp(s, fmts[i].name)) {
			*f = fmts[i].f;
			return 0;
		}
	return -1;
}

static int parse_sort(const char *s, enum rp_sort *k)
{
	static const char *const keys[] = {"total", "calls", "avg", "med", "min", "max", "name"};
	for (unsigned i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(s, keys[i])) {
			*k = (enum rp_sort)i;
			return 0;
		}
	return -1;
}

/* "A:B", either side may be empty */
static int parse_range(const char *s, struct rp_opts *o)
{
	const char *colon = strchr(s, ':');
	if (!colon)
		return -1;
	char a[64];
	size_t n = (size_t)(colon - s);
	if (n >= sizeof(a))
		return -1;
	memcpy(a, s, n);
	a[n] = 0;
	o->range_start_ns = 0;
	o->range_end_ns = INT64_MAX;
	if (n && rp_parse_time(a, &o->range_start_ns))
		return -1;
	if (colon[1] && rp_parse_time(colon + 1, &o->range_end_ns))
		return -1;
	if (o->range_end_ns <= o->range_start_ns)
		return -1;
	o->has_range = 1;
	return 0;
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (!*s || *end || v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* A list of globs (--funcs, --thread): refused when a pattern would silently match nothing
 * or not what was meant (a '[' without its ']'...). */
static int check_globs(const char *opt, const char *list)
{
	char why[2048];
	if (glob_filter_check(list, why, sizeof(why)) == 0)
		return 0;
	fprintf(stderr, "cuhook report: %s: %s\n", opt, why);
	return -1;
}

int cmd_report(int argc, char **argv)
{
	enum { O_TOP = 256, O_SORT, O_FUNCS, O_THREAD, O_RANGE, O_WIDTH, O_ALL, O_COLOR, O_NOCOLOR, O_STRICT, O_SEPARATE, O_ALIGN, O_FORCE, O_FUNCTIONS, O_STREAM, O_NOSTREAM };
	static const struct option longopts[] = {
		{"format", required_argument, 0, 'f'},
		{"output", required_argument, 0, 'o'},
		{"top", required_argument, 0, O_TOP},
		{"sort", required_argument, 0, O_SORT},
		{"funcs", required_argument, 0, O_FUNCS},
		{"functions", required_argument, 0, O_FUNCTIONS}, /* an alias: run, attach, funcs say --funcs */
		{"thread", required_argument, 0, O_THREAD},
		{"threads", required_argument, 0, O_THREAD},
		{"time-range", required_argument, 0, O_RANGE},
		{"width", required_argument, 0, O_WIDTH},
		{"all", no_argument, 0, O_ALL},
		{"color", no_argument, 0, O_COLOR},
		{"no-color", no_argument, 0, O_NOCOLOR},
		{"strict", no_argument, 0, O_STRICT},
		{"separate", no_argument, 0, O_SEPARATE},
		{"align", required_argument, 0, O_ALIGN},
		{"force", no_argument, 0, O_FORCE},
		{"stream", no_argument, 0, O_STREAM},
		{"no-stream", no_argument, 0, O_NOSTREAM},
		{"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, 'V'},
		{0, 0, 0, 0},
	};
	struct rp_opts o;
	memset(&o, 0, sizeof(o));
	o.top = 10;
	o.width = 100;
	int color = -1;
	optind = 1;
	opterr = 0; /* its messages are ours (cli_msg.h): one prefix for every command */
	for (;;) {
		int c = getopt_long(argc, argv, ":f:o:hV", longopts, NULL);
		if (c == -1)
			break;
		switch (c) {
		case 'f':
			if (parse_format(optarg, &o.format)) {
				fprintf(stderr, "cuhook report: unknown format '%s'\n", optarg);
				return RP_EXIT_USAGE;
			}
			break;
		case 'o':
			o.output = optarg;
			break;
		case O_TOP:
			if (parse_uint(optarg, 0, 1000000, &o.top)) {
				fprintf(stderr, "cuhook report: --top wants a number, not '%s'\n", optarg);
				return RP_EXIT_USAGE;
			}
			break;
		case O_SORT:
			if (parse_sort(optarg, &o.sort)) {
				fprintf(stderr, "cuhook report: unknown sort key '%s'\n", optarg);
				return RP_EXIT_USAGE;
			}
			break;
		case O_FUNCS:
		case O_FUNCTIONS:
			if (check_globs(c == O_FUNCS ? "--funcs" : "--functions", optarg))
				return RP_EXIT_USAGE;
			o.functions = optarg;
			break;
		case O_THREAD:
			if (check_globs("--thread", optarg))
				return RP_EXIT_USAGE;
			o.threads = optarg;
			break;
		case O_RANGE:
			if (parse_range(optarg, &o)) {
				fprintf(stderr, "cuhook report: bad --time-range '%s' (want START:END, e.g. 1.5:3 or 200ms:)\n", optarg);
				return RP_EXIT_USAGE;
			}
			break;
		case O_WIDTH:
			if (parse_uint(optarg, 20, 1000, &o.width)) {
				fprintf(stderr, "cuhook report: --width wants 20..1000, not '%s'\n", optarg);
				return RP_EXIT_USAGE;
			}
			break;
		case O_ALL:
			o.all = 1;
			break;
		case O_COLOR:
			color = 1;
			break;
		case O_NOCOLOR:
			color = 0;
			break;
		case O_STRICT:
			o.strict = 1;
			break;
		case O_SEPARATE:
			o.separate = 1;
			break;
		case O_FORCE:
			o.force = 1;
			break;
		case O_STREAM:
			o.stream = RP_STREAM_ON;
			break;
		case O_NOSTREAM:
			o.stream = RP_STREAM_OFF;
			break;
		case O_ALIGN:
			if (!strcmp(optarg, "realtime"))
				o.align_monotonic = 0;
			else if (!strcmp(optarg, "monotonic"))
				o.align_monotonic = 1;
			else {
				fprintf(stderr, "cuhook report: --align wants realtime or monotonic, not '%s'\n", optarg);
				return RP_EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return RP_EXIT_OK;
		case 'V':
			return cuhook_print_version();
		default:
			cuhook_cli_getopt_error(c, argv);
			usage(stderr);
			return RP_EXIT_USAGE;
		}
	}
	char *default_trace[] = {DEFAULT_TRACE, NULL};
	char **files = argv + optind;
	int nfiles = argc - optind;
	if (nfiles == 0) {
		struct stat st;
		if (lstat(DEFAULT_TRACE, &st) < 0) {
			fprintf(stderr, "cuhook report: no trace file given, and no ./" DEFAULT_TRACE " (cuhook run's "
			                "default output) here\n\n");
			usage(stderr);
			return RP_EXIT_USAGE;
		}
		files = default_trace, nfiles = 1;
	}
	/* a binary format would put raw bytes on a terminal; "-o -" asks for stdout knowingly */
	if (o.format == RP_FMT_PERFETTO && !o.output && isatty(STDOUT_FILENO)) {
		fprintf(stderr, "cuhook report: --format perfetto is binary: not written to a terminal; give -o FILE "
		                "(or redirect stdout)\n");
		return RP_EXIT_USAGE;
	}
	if (o.format == RP_FMT_SQLITE && (!o.output || !strcmp(o.output, "-"))) {
		/* a database is a file SQLite seeks in, not a stream */
		fprintf(stderr, "cuhook report: --format sqlite writes a database file: give -o FILE.sqlite\n");
		return RP_EXIT_USAGE;
	}
	if (o.stream == RP_STREAM_ON && (o.format == RP_FMT_TEXT || o.format == RP_FMT_JSON) && nfiles > 1 &&
	    !o.separate) {
		fprintf(stderr, "cuhook report: --stream reports one file at a time: add --separate, or leave out "
		                "--stream for one report over all processes\n");
		return RP_EXIT_USAGE;
	}
	if (color < 0) {
		const char *nc = getenv("NO_COLOR");
		color = (!nc || !*nc) && !o.output && isatty(STDOUT_FILENO);
	}
	o.color = color;
	return rp_main(&o, files, nfiles);
}
