/* Unit tests of the option string cuhook run and attach build for the agent (src/cli/inject_opts.c):
 * the output made absolute, the agent's keys only, no ';' smuggled in a value; the flight
 * recorder's options. */
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

/* Parse argv (NULL-terminated) as run/attach would: 0, or -1 at the first refused option. */
static int parse(struct cuhook_inject_cli *c, const char *const *args)
{
	char *argv[16];
	int argc = 0;
	while (args[argc])
		argv[argc] = (char *)args[argc], argc++;
	for (int i = 0; i < argc; i++)
		if (cuhook_inject_cli_opt(c, argc, argv, &i) != 1)
			return -1;
	return 0;
}

/* --flight-recorder[=SIZE] and --trigger: flight=BYTES, trigger_error=, trigger_slow=, after the
 * output; the triggers' texts as the agent's parser takes them, one of each kind. */
static void flight(void)
{
	static const struct {
		const char *args[8];
		const char *want; /* NULL: refused */
	} cases[] = {
		{{"--flight-recorder"}, "flight=8388608"},
		{{"--flight-recorder=1M", "--trigger", "error"}, "flight=1048576;trigger_error=any"},
		{{"--trigger=error=700,719", "--flight-recorder=64K", "--trigger", "slow=cuLaunch*:5"},
		 "flight=65536;trigger_error=700,719;trigger_slow=cuLaunch*:5"},
		{{"--flight-recorder=63K"}, NULL},
		{{"--flight-recorder", "--trigger", "error", "--trigger", "error"}, NULL},
		{{"--flight-recorder", "--trigger", "slow=a:1", "--trigger", "slow=b:2"}, NULL},
		{{"--flight-recorder", "--trigger", "error=600x"}, NULL},
		{{"--flight-recorder", "--trigger", "slow=cu*:3600001"}, NULL},
		{{"--flight-recorder", "--trigger"}, NULL},
		{{"--flight-recorder", "--opt", "trigger_error=none"}, NULL},
	};
	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct cuhook_inject_cli c = {0};
		char buf[512], want[600];
		int r = parse(&c, cases[k].args);
		if (!cases[k].want) {
			CHECK(r < 0, "case %u refused", k);
			continue;
		}
		CHECK(r == 0 && cuhook_inject_cli_options(&c, "/t.bin", buf, sizeof(buf)) == 0, "case %u", k);
		snprintf(want, sizeof(want), "output=/t.bin;%s", cases[k].want);
		CHECK(strcmp(buf, want) == 0, "case %u: %s", k, buf);
	}
	/* a trigger without the flight recorder: refused when the string is built */
	struct cuhook_inject_cli c = {0};
	char buf[512];
	CHECK(parse(&c, (const char *[]){"--trigger", "error", NULL}) == 0, "--trigger parsed");
	CHECK(cuhook_inject_cli_options(&c, "/t.bin", buf, sizeof(buf)) < 0, "--trigger without --flight-recorder");
}

/* --names-window SEC: names_window=MS, only when given (the agent's default otherwise); 0 is a
 * value (never), past 600 s refused. */
static void names_window(void)
{
	static const struct {
		const char *args[4];
		const char *want; /* NULL: refused */
	} cases[] = {
		{{"--gpu"}, "output=/t.bin;gpu=1"},
		{{"--names-window", "0"}, "output=/t.bin;names_window=0"},
		{{"--names-window=2.5"}, "output=/t.bin;names_window=2500"},
		{{"--names-window", "0.001"}, "output=/t.bin;names_window=1"},
		{{"--names-window", "601"}, NULL},
		{{"--names-window", "-1"}, NULL},
		{{"--names-window"}, NULL},
	};
	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct cuhook_inject_cli c = {0};
		char buf[512];
		int r = parse(&c, cases[k].args);
		if (!cases[k].want) {
			CHECK(r < 0, "case %u refused", k);
			continue;
		}
		CHECK(r == 0 && cuhook_inject_cli_options(&c, "/t.bin", buf, sizeof(buf)) == 0, "case %u", k);
		CHECK(strcmp(buf, cases[k].want) == 0, "case %u: %s", k, buf);
	}
}

int main(void)
{
	RUN(options);
	RUN(flight);
	RUN(names_window);
	UNIT_EXIT();
}
