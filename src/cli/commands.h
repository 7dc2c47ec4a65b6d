/* The subcommands of the cuhook program, one file each (cmd_<name>.c). */
#ifndef CUHOOK_COMMANDS_H
#define CUHOOK_COMMANDS_H

#include <stdbool.h>

int cmd_run(int argc, char **argv);     /* cuhook run [opts] -- PROG ARGS */
int cmd_attach(int argc, char **argv);  /* cuhook attach [opts] PID */
int cmd_dump(int argc, char **argv);    /* cuhook dump [opts] PID: a flight recorder's dump now */
int cmd_report(int argc, char **argv);  /* cuhook report [opts] trace.bin... */
int cmd_funcs(int argc, char **argv);   /* cuhook funcs [opts] LIB: what would be patched */

/* Where the agent library is: next to the cuhook executable (build tree) or in the install
 * tree's lib directory. Absolute path, never relative to the working directory. Returns 0 and
 * fills buf, or -1 with a message on stderr. */
int cuhook_agent_path(char *buf, unsigned long len);

/* -V or --version, which every command takes (main.c). */
bool cuhook_version_opt(const char *arg);
/* "cuhook VERSION (trace format N; reads formats MIN to N)" on stdout; returns 0, the exit status. */
int cuhook_print_version(void);

#endif
