#include "trigger_spec.h"

#include "glob_filter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int trigger_error_parse(const char *text, struct trigger_error *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	if (!text || !*text)
		return 0;
	t->on = true;
	if (!strcmp(text, "any") || !strcmp(text, "1"))
		return t->any = true, 0;
	const char *p = text;
	for (;;) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);
		if (end == p || v == 0 || v > 0xffffffffu || (*end && *end != ',')) {
			snprintf(err, errlen, "trigger error: '%.64s' is not \"any\" nor a list of nonzero CUresult codes", text);
			return -1;
		}
		if (t->ncodes == TRIGGER_CODES_MAX) {
			snprintf(err, errlen, "trigger error: at most %d codes", TRIGGER_CODES_MAX);
			return -1;
		}
		t->codes[t->ncodes++] = (uint32_t)v;
		if (!*end)
			return 0;
		p = end + 1;
	}
}

int trigger_slow_parse(const char *text, struct trigger_slow *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	if (!text || !*text)
		return 0;
	const char *colon = strrchr(text, ':');
	char *end;
	unsigned long ms = colon ? strtoul(colon + 1, &end, 10) : 0;
	if (!colon || colon == text || !colon[1] || *end || ms < 1 || ms > 3600000) {
		snprintf(err, errlen, "trigger slow: '%.64s' is not GLOBS:MS (MS from 1 to 3600000)", text);
		return -1;
	}
	size_t n = (size_t)(colon - text);
	if (n >= sizeof(t->globs)) {
		snprintf(err, errlen, "trigger slow: the globs are longer than %zu bytes", sizeof(t->globs) - 1);
		return -1;
	}
	memcpy(t->globs, text, n);
	t->globs[n] = 0;
	char gerr[128];
	if (glob_filter_check(t->globs, gerr, sizeof(gerr)) != 0) {
		snprintf(err, errlen, "trigger slow: %s", gerr);
		return -1;
	}
	t->on = true;
	t->ms = (uint32_t)ms;
	return 0;
}
