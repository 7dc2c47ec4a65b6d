/* Unit tests of the option string cuhook run and attach build for the agent (src/cli/inject_opts.c):
 * the output made absolute, the agent's keys only, no ';' smuggled in a value. */
#include "unit.h"

#include "inject_opts.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void options(void)
{
	struct cuhook_inject_cli c = {0};
	char buf[512];
	c.output = "rel/t.bin";
	c.funcs = "cuLaunch*,cuMem*";
	c.extra[c.nextra++] = "buffer_kb=2048";
	CHECK(cuhook_inject_cli_options(&c, "trace.bin", buf, sizeof(buf)) == 0, "options");
	char cwd[4096], want[4700];
	snprintf(want, sizeof(want), "output=%s/rel/t.bin;funcs=cuLaunch*,cuMem*;buffer_kb=2048", getcwd(cwd, sizeof(cwd)));
	CHECK(strcmp(buf, want) == 0, "%s", buf);
	c.funcs = "a;b";
	CHECK(cuhook_inject_cli_options(&c, "trace.bin", buf, sizeof(buf)) < 0, "';' refused");
	/* the agent's keys only: what it would refuse inside the process is refused here */
	c.funcs = NULL;
	c.extra[0] = "buffer=1M";
	CHECK(cuhook_inject_cli_options(&c, "trace.bin", buf, sizeof(buf)) < 0, "unknown key refused");
}

int main(void)
{
	RUN(options);
	UNIT_EXIT();
}
