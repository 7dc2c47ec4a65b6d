/* cuhook: trace the CUDA driver API calls of a process. This file only dispatches to the
 * subcommands (cmd_*.c). */
#include "commands.h"

#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#ifndef CUHOOK_VERSION
#define CUHOOK_VERSION "dev"
#endif

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *help;
} commands[] = {
	{"run", cmd_run, "run [-o FILE] [options] -- PROG ARGS...   start a program traced"},
	{"attach", cmd_attach, "attach [-o FILE] [--duration SEC] PID   trace a running process, then leave it"},
	{"dump", cmd_dump, "dump [--timeout SEC] PID                 have a --flight-recorder process write its rings now"},
	{"report", cmd_report, "report [options] trace.bin...           where the time went"},
	{"funcs", cmd_funcs, "funcs [--all] [--funcs GLOBS] LIB        which functions of LIB would be patched, and why not"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: cuhook COMMAND [ARGS]\n\ncommands:\n");
	for (unsigned i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  cuhook %s\n", commands[i].help);
	fprintf(f, "\n'cuhook COMMAND --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
	/* The agent's constructor knows its injector by this name (src/agent/agent.c,
	 * traced_by_cuhook), whatever this file is called. */
	prctl(PR_SET_NAME, "cuhook");
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("cuhook %s\n", CUHOOK_VERSION);
		return 0;
	}
	for (unsigned i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "cuhook: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return 2;
}
