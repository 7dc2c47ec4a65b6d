/* The prefix of the commands' messages (cli_msg.h). */
#include "cli_msg.h"

#include "text_safe.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *cuhook_cli_prog = "cuhook";

void cuhook_cli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", cuhook_cli_prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void cuhook_cli_getopt_error(int c, char **argv)
{
	const char *arg = argv[optind - 1];
	char shown[64 * TEXT_SAFE_GROWTH + 1];
	text_safe_n(shown, sizeof(shown), arg, strnlen(arg, 64));
	if (c == ':')
		cuhook_cli_error("%s needs a value", shown);
	else if (optopt > 32 && optopt < 127 && strncmp(arg, "--", 2) != 0)
		cuhook_cli_error("unknown option '-%c'", optopt); /* one of a bundle (-ax): that letter */
	else
		cuhook_cli_error("unknown option '%s'", shown);
}

int cuhook_cli_opt_value(int argc, char **argv, int *i, const char *name, const char **value)
{
	const char *a = argv[*i];
	size_t n = strlen(name);
	if (strncmp(a, name, n) != 0 || (a[n] && a[n] != '='))
		return 0;
	if (a[n] == '=') {
		*value = a + n + 1;
		return 1;
	}
	if (*i + 1 >= argc) {
		cuhook_cli_error("%s needs a value", name);
		return -1;
	}
	*value = argv[++*i];
	return 1;
}
