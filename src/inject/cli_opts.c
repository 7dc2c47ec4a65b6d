/* The options `cuhook run` and `cuhook attach` share, and the agent option string built from
 * them. The agent gets its configuration as the argument of cuhook_agent_start(), never through
 * the environment: an attached process's environment is fixed, and a spawned one's is the
 * user's. */
#include "inject.h"

#include "../cli/commands.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	if (*i + 1 >= argc) {
		fprintf(stderr, "cuhook: %s needs a value\n", name);
		return NULL;
	}
	return argv[++*i];
}

int cuhook_inject_cli_opt(struct cuhook_inject_cli *c, int argc, char **argv, int *i)
{
	const char *a = argv[*i];
	const char *v;
	/* --name=value is accepted as well as --name value */
	const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
	char name[64];
	if (eq && (size_t)(eq - a) < sizeof(name)) {
		memcpy(name, a, (size_t)(eq - a));
		name[eq - a] = 0;
		a = name;
	}
#define VALUE() (eq ? eq + 1 : opt_value(argc, argv, i, a))
	if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
		if (!(c->output = VALUE()))
			return -1;
	} else if (!strcmp(a, "--ioctl")) {
		c->ioctl = 1;
	} else if (!strcmp(a, "--funcs")) {
		if (!(c->funcs = VALUE()))
			return -1;
	} else if (!strcmp(a, "--count")) {
		if (!(c->count = VALUE()))
			return -1;
	} else if (!strcmp(a, "--record-all")) {
		c->count = ""; /* an empty list: nothing counted, every call recorded */
	} else if (!strcmp(a, "--agent")) {
		if (!(c->agent = VALUE()))
			return -1;
	} else if (!strcmp(a, "--opt")) {
		if (!(v = VALUE()))
			return -1;
		if (!strchr(v, '=') || c->nextra >= (int)(sizeof(c->extra) / sizeof(c->extra[0]))) {
			fprintf(stderr, "cuhook: --opt wants KEY=VALUE (at most 32)\n");
			return -1;
		}
		c->extra[c->nextra++] = v;
	} else if (!strcmp(a, "--call-timeout")) {
		if (!(v = VALUE()))
			return -1;
		char *end;
		c->call_timeout = strtod(v, &end);
		if (*end || c->call_timeout <= 0) {
			fprintf(stderr, "cuhook: --call-timeout wants seconds > 0\n");
			return -1;
		}
	} else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
		c->verbose = 1;
	} else {
		return 0;
	}
#undef VALUE
	return 1;
}

/* Append "key=value;" refusing the separator inside a value: the agent splits on ';'. */
static int append(char *buf, size_t len, size_t *pos, const char *key, const char *value)
{
	if (strchr(value, ';')) {
		fprintf(stderr, "cuhook: '%s' contains ';', which cannot be passed to the agent\n", value);
		return -1;
	}
	int n = snprintf(buf + *pos, len - *pos, "%s%s%s%s", *pos ? ";" : "", key ? key : "",
	                 key ? "=" : "", value);
	if (n < 0 || (size_t)n >= len - *pos) {
		fprintf(stderr, "cuhook: agent options too long\n");
		return -1;
	}
	*pos += (size_t)n;
	return 0;
}

int cuhook_inject_cli_options(const struct cuhook_inject_cli *c, const char *default_output,
                              char *buf, size_t len)
{
	size_t pos = 0;
	buf[0] = 0;
	const char *out = c->output ? c->output : default_output;
	if (out) {
		char abs[PATH_MAX + 1];
		if (out[0] == '/') {
			snprintf(abs, sizeof(abs), "%s", out);
		} else {
			char cwd[PATH_MAX];
			if (!getcwd(cwd, sizeof(cwd))) {
				perror("cuhook: getcwd");
				return -1;
			}
			snprintf(abs, sizeof(abs), "%s/%s", cwd, out);
		}
		if (append(buf, len, &pos, "output", abs) < 0)
			return -1;
	}
	if (c->ioctl && append(buf, len, &pos, "ioctl", "1") < 0)
		return -1;
	if (c->funcs && append(buf, len, &pos, "funcs", c->funcs) < 0)
		return -1;
	if (c->count && append(buf, len, &pos, "count", c->count) < 0)
		return -1;
	for (int i = 0; i < c->nextra; i++)
		if (append(buf, len, &pos, NULL, c->extra[i]) < 0)
			return -1;
	return 0;
}

int cuhook_inject_cli_setup(const struct cuhook_inject_cli *c, struct cuhook_inject_opts *o,
                            char *agent_buf, size_t agent_len)
{
	if (c->agent) {
		char real[PATH_MAX];
		if (!realpath(c->agent, real) || strlen(real) >= agent_len) {
			fprintf(stderr, "cuhook: agent library %s not found\n", c->agent);
			return -1;
		}
		strcpy(agent_buf, real);
	} else if (cuhook_agent_path(agent_buf, agent_len) < 0) {
		return -1;
	}
	o->agent_path = agent_buf;
	o->call_timeout_ms = c->call_timeout > 0 ? (int)(c->call_timeout * 1000) : 0;
	o->verbose = c->verbose;
	return 0;
}

void cuhook_inject_print_times(const char *what, const struct cuhook_inject_times *t)
{
	char load[64];
	if (t->beside || (!t->agent_reused && !t->load_ns))
		load[0] = 0; /* not in the stopped time (told after), or none (a detach) */
	else
		snprintf(load, sizeof(load), "%s %.2f, ", t->agent_reused ? "agent reused" : "dlopen",
		         t->load_ns / 1e6);
	fprintf(stderr,
	        "cuhook: %s: %d thread%s stopped for %.2f ms (stop %.2f, %scall %.2f, fixup %.2f "
	        "[%d moved], detach %.2f)",
	        what, t->nthreads, t->nthreads == 1 ? "" : "s", t->stopped_ns / 1e6, t->seize_ns / 1e6,
	        load, t->call_ns / 1e6, t->fixup_ns / 1e6, t->moved, t->detach_ns / 1e6);
	if (t->beside && t->agent_reused)
		fprintf(stderr, "; before, while they ran: agent reused, prepare %.2f", t->prepare_ns / 1e6);
	else if (t->beside)
		fprintf(stderr, "; before, while they ran: dlopen %.2f, prepare %.2f", t->load_ns / 1e6,
		        t->prepare_ns / 1e6);
	fputc('\n', stderr);
}
