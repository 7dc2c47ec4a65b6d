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

/* A command's own option with a value, given as "NAME VALUE" or "NAME=VALUE": 1 when argv[*i]
 * is NAME (*value set; *i moved past a separate value), -1 when its value is missing (said as
 * cuhook_cli_error does), 0 when argv[*i] is another argument. */
int cuhook_cli_opt_value(int argc, char **argv, int *i, const char *name, const char **value);

#endif
