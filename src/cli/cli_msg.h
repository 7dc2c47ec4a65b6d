/* How cuhook's commands start their messages: "cuhook run: ...", "cuhook report: ...". main()
 * sets the name before a command runs, so that a message printed by a file shared between
 * commands (inject_opts.c, agent_path.c) names the command the user typed, as the command's own
 * messages do. */
#ifndef CUHOOK_CLI_MSG_H
#define CUHOOK_CLI_MSG_H

/* "cuhook CMD" while a command runs; "cuhook" before (and in programs without main.c: tests). */
extern const char *cuhook_cli_prog;

/* "<cuhook_cli_prog>: <message>\n" on stderr. */
void cuhook_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* What getopt_long returned for a bad option ('?': unknown; ':': its value missing, the option
 * string led by ':'), told as cuhook_cli_error does, instead of getopt's own words and prefix
 * (opterr = 0). argv: the command's. */
void cuhook_cli_getopt_error(int c, char **argv);

#endif
