/* Formatting helpers shared by the text report and the exporters. */
#include "report.h"
#include "text_safe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rp_text_section(FILE *f, const struct rp_view *v, const char *title)
{
	fprintf(f, "\n%s%s%s\n", v->o->color ? "\033[1m" : "", title, v->o->color ? "\033[0m" : "");
}

const char *rp_fmt_dur(char *buf, size_t len, double ns)
{
	double a = ns < 0 ? -ns : ns;
	if (a < 1e3)
		snprintf(buf, len, "%.0f ns", ns);
	else if (a < 1e6)
		snprintf(buf, len, "%.3f us", ns / 1e3);
	else if (a < 1e9)
		snprintf(buf, len, "%.3f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.3f s", ns / 1e9);
	return buf;
}

const char *rp_fmt_bytes(char *buf, size_t len, double bytes)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	unsigned u = 0;
	while (bytes >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		bytes /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%.0f B", bytes);
	else
		snprintf(buf, len, "%.2f %s", bytes, units[u]);
	return buf;
}

void rp_json_str(FILE *f, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	putc('"', f);
	for (size_t i = 0; i < n;) {
		unsigned c = u[i];
		if (c == '"' || c == '\\') {
			putc('\\', f);
			putc((int)c, f);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
			i++;
		} else if (c < 0x80) {
			putc((int)c, f);
			i++;
		} else {
			size_t l = text_utf8_len(u + i, n - i);
			if (l) {
				fwrite(u + i, 1, l, f);
				i += l;
			} else {
				fprintf(f, "\\u%04x", c); /* not UTF-8: keep the byte as a code point */
				i++;
			}
		}
	}
	putc('"', f);
}

int rp_parse_time(const char *s, int64_t *ns)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || !isfinite(v) || v < 0)
		return -1;
	double mul = 1e9; /* plain numbers are seconds */
	if (!strcmp(end, "") || !strcmp(end, "s"))
		mul = 1e9;
	else if (!strcmp(end, "ms"))
		mul = 1e6;
	else if (!strcmp(end, "us"))
		mul = 1e3;
	else if (!strcmp(end, "ns"))
		mul = 1;
	else
		return -1;
	double r = v * mul;
	if (r > 9e18)
		return -1;
	*ns = (int64_t)(r + 0.5);
	return 0;
}

const char *rp_safe(const char *s)
{
	/* A few calls may feed one printf: each gets its own buffer, reused round robin. */
	static struct {
		char *p;
		size_t cap;
	} ring[8];
	static unsigned next;
	if (!s)
		return "";
	size_t n = strlen(s);
	if (text_is_safe(s, n))
		return s;
	size_t need = n * TEXT_SAFE_GROWTH + 1;
	unsigned k = next++ % (sizeof(ring) / sizeof(ring[0]));
	if (need > ring[k].cap) {
		char *p = realloc(ring[k].p, need);
		if (!p)
			return "(unprintable)";
		ring[k].p = p;
		ring[k].cap = need;
	}
	text_safe_n(ring[k].p, ring[k].cap, s, n);
	return ring[k].p;
}

uint64_t rp_str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}
