/* Placeholder until this command is written (see the open issues). */
#include "commands.h"
#include <stdio.h>
int cmd_attach(int argc, char **argv)
{
	(void)argc; (void)argv;
	fprintf(stderr, "cuhook attach: not built yet\n");
	return 2;
}
