/* A stand-in for the cuhook executable that knows only 'report': the report tests use it when
 * the build has no cuhook executable (cuhook_exe) to run. */
#include "commands.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "report")) {
		fprintf(stderr, "usage: %s report [options] trace.bin...\n", argv[0]);
		return 2;
	}
	return cmd_report(argc - 1, argv + 1);
}
