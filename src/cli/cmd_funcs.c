/* cuhook funcs LIB: which exported functions of a library file the engine would patch, and why
 * it would refuse the others, without running anything. Reads the file with libelf and runs the
 * same relocation planner the agent runs in memory. */
#include "cli_msg.h"
#include "commands.h"

#include "elf_file.h"
#include "glob_filter.h"
#include "patch_status_map.h"
#include "relocate.h"
#include "text_safe.h"
#include "trace_format.h"
#include "x86_insn.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: cuhook funcs [--funcs GLOBS] [--all] LIB\n"
	           "  Plan the patching of every exported function of LIB (a shared library file)\n"
	           "  and print what would be patched and why the rest would be refused.\n"
	           "  --funcs GLOBS  comma-separated globs, '-' excludes (default: every function);\n"
	           "                 --functions: the same\n"
	           "  --all          list every function with its patch length or refusal\n"
	           "  -h, --help\n"
	           "  -V, --version\n\n"
	           "Exit status: 0 planned; 1 LIB cannot be read, or is not an x86-64 ELF file; 2 usage.\n");
}

int cmd_funcs(int argc, char **argv)
{
	const char *filter = "";
	int all = 0;
	static const struct option opts[] = {
	    {"funcs", required_argument, 0, 'f'}, {"functions", required_argument, 0, 'f'}, /* an alias */
	    {"all", no_argument, 0, 'a'},         {"help", no_argument, 0, 'h'},
	    {"version", no_argument, 0, 'V'},     {0}};
	int c;
	optind = 1;
	opterr = 0; /* its messages are ours (cli_msg.h): one prefix for every command */
	while ((c = getopt_long(argc, argv, ":f:ahV", opts, NULL)) != -1) {
		switch (c) {
		case 'f': {
			char why[2048];
			if (glob_filter_check(optarg, why, sizeof(why)) < 0) {
				fprintf(stderr, "cuhook funcs: --funcs: %s\n", why);
				return 2;
			}
			filter = optarg;
			break;
		}
		case 'a': all = 1; break;
		case 'h': usage(stdout); return 0;
		case 'V': return cuhook_print_version();
		default: cuhook_cli_getopt_error(c, argv); usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		cuhook_cli_error(optind == argc ? "no library file given" : "one library file at most");
		usage(stderr);
		return 2;
	}
	const char *path = argv[optind];
	struct elf_file ef;
	int err = elf_file_open(&ef, path);
	if (err == ELF_FILE_ERR_OPEN) {
		fprintf(stderr, "cuhook funcs: cannot open %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (err == ELF_FILE_ERR_READ) {
		fprintf(stderr, "cuhook funcs: cannot read %s\n", path);
		return 1;
	}
	if (err != ELF_FILE_OK) {
		fprintf(stderr, "cuhook funcs: %s is not an x86-64 ELF file\n", path);
		return 1;
	}
	struct elf_func *fns;
	size_t na, nf = 0;
	if (elf_file_funcs(&ef, &fns, &na) != 0) {
		fprintf(stderr, "cuhook funcs: out of memory\n");
		elf_file_close(&ef);
		return 1;
	}
	/* Keep the functions the filter passes, in address order (aliases next to each other). */
	for (size_t i = 0; i < na; i++) {
		if (glob_filter_match(filter, fns[i].name))
			fns[nf++] = fns[i];
		else
			free(fns[i].name);
	}

	csh cs;
	x86_open(&cs);
	/* The names are the file's: shown escaped where a terminal would act on them. */
	char name[GLOB_PATTERN_MAX * TEXT_SAFE_GROWTH + 1], prev[sizeof(name)];
	unsigned counts[CUHOOK_STATUS_COUNT] = {0};
	for (size_t i = 0; i < nf; i++) {
		struct reloc_plan p;
		if (i > 0 && fns[i].addr == fns[i - 1].addr) {
			p.status = PATCH_ALIAS;
			snprintf(p.detail, sizeof(p.detail), "same address as %s", text_safe(prev, sizeof(prev), fns[i - 1].name));
		} else {
			const uint8_t *code = elf_file_bytes(&ef, fns[i].addr, fns[i].size);
			if (!code) {
				p.status = PATCH_TOO_SMALL;
				snprintf(p.detail, sizeof(p.detail), "bytes not in the file");
			} else {
				/* Stubs go within 2 GB of the library: plan for a copy 64 KiB after it. */
				reloc_plan(cs, code, fns[i].addr, fns[i].size, fns[i].addr + 0x10000, &p);
			}
		}
		unsigned st = patch_status_trace(p.status); /* counted and named as a trace would */
		counts[st]++;
		text_safe(name, sizeof(name), fns[i].name);
		if (all)
			printf("%-48s %-8s %s%s%s\n", name,
			       st == CUHOOK_PATCHED ? "patch" : "refuse",
			       st == CUHOOK_PATCHED ? "" : cuhook_patch_status_names[st],
			       st == CUHOOK_PATCHED ? "" : ": ", st == CUHOOK_PATCHED ? "" : p.detail);
		else if (st != CUHOOK_PATCHED && st != CUHOOK_REFUSED_ALIAS)
			printf("refused %-40s %s: %s\n", name, cuhook_patch_status_names[st], p.detail);
	}
	cs_close(&cs);
	printf("%s: %zu exported functions: %u patchable", path, nf, counts[CUHOOK_PATCHED]);
	for (int s = 1; s < CUHOOK_STATUS_COUNT; s++)
		if (counts[s])
			printf(", %u %s", counts[s], cuhook_patch_status_names[s]);
	printf("\n");
	elf_file_funcs_free(fns, nf);
	elf_file_close(&ef);
	return 0;
}
