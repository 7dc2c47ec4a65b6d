/* cuhook: trace the CUDA driver API calls of a process. This file only dispatches to the
 * subcommands (cmd_*.c), and answers help and --version. */
#include "cli_msg.h"
#include "commands.h"
#include "trace_format.h"

#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#ifndef CUHOOK_VERSION
#define CUHOOK_VERSION "dev"
#endif

static int cmd_help(int argc, char **argv);

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *help;
} commands[] = {
	{"run", cmd_run, "run [-o FILE] [options] -- PROG ARGS...   start a program traced"},
	{"attach", cmd_attach, "attach [-o FILE] [--duration SEC] PID   trace a running process, then leave it"},
	{"dump", cmd_dump, "dump [--timeout SEC] PID                 have a --flight-recorder process write its rings now"},
	{"report", cmd_report, "report [options] [trace.bin...]         where the time went"},
	{"funcs", cmd_funcs, "funcs [--all] [--funcs GLOBS] LIB        which functions of LIB would be patched, and why not"},
	{"help", cmd_help, "help [COMMAND]                           this list, or COMMAND's options (as COMMAND --help)"},
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: cuhook COMMAND [ARGS]\n       cuhook -V | --version\n\ncommands:\n");
	for (unsigned i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  cuhook %s\n", commands[i].help);
	fprintf(f, "\n'cuhook COMMAND --help' or 'cuhook help COMMAND' describes a command's options;\n"
	           "'-V' or '--version' after any command prints the version.\n\n"
	           "Exit status: a command's own (its --help says); cuhook alone, or an unknown command: 2.\n");
}

bool cuhook_version_opt(const char *arg)
{
	return !strcmp(arg, "-V") || !strcmp(arg, "--version");
}

int cuhook_print_version(void)
{
	printf("cuhook %s (trace format %u; reads formats %u to %u)\n", CUHOOK_VERSION, CUHOOK_TRACE_VERSION,
	       CUHOOK_TRACE_VERSION_MIN, CUHOOK_TRACE_VERSION);
	return 0;
}

static int find_command(const char *name)
{
	for (unsigned i = 0; i < NCOMMANDS; i++)
		if (!strcmp(name, commands[i].name))
			return (int)i;
	return -1;
}

/* cuhook help [COMMAND]: COMMAND's usage is its --help, printed by the command itself. */
static int cmd_help(int argc, char **argv)
{
	if (argc > 1 && cuhook_version_opt(argv[1]))
		return cuhook_print_version();
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    (!strcmp(argv[1], "help") && argc == 2)) {
		usage(stdout);
		return 0;
	}
	if (argc > 2) {
		cuhook_cli_error("one command at most (cuhook help COMMAND)");
		return 2;
	}
	int k = find_command(argv[1]);
	if (k < 0) {
		cuhook_cli_error("no command '%s' (commands: run, attach, dump, report, funcs, help)", argv[1]);
		return 2;
	}
	char prog[32];
	snprintf(prog, sizeof(prog), "cuhook %s", commands[k].name);
	cuhook_cli_prog = prog;
	char *args[] = {(char *)commands[k].name, "--help", NULL};
	return commands[k].fn(2, args);
}

int main(int argc, char **argv)
{
	/* The agent's constructor knows its injector by this name (src/agent/agent.c,
	 * traced_by_cuhook), whatever this file is called. */
	prctl(PR_SET_NAME, "cuhook");
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return cmd_help(1, argv + 1);
	if (cuhook_version_opt(argv[1]))
		return cuhook_print_version();
	int k = find_command(argv[1]);
	if (k < 0) {
		cuhook_cli_error("unknown command '%s'\n", argv[1]);
		usage(stderr);
		return 2;
	}
	/* every message of the command, from its file or a shared one, starts "cuhook CMD: " */
	char prog[32];
	snprintf(prog, sizeof(prog), "cuhook %s", commands[k].name);
	cuhook_cli_prog = prog;
	return commands[k].fn(argc - 1, argv + 1);
}
