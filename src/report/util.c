/* Formatting helpers shared by the text report and the exporters. */
#include "report.h"

#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t need;
	unsigned min;
	if (c < 0x80)
		return 1;
	else if ((c & 0xe0) == 0xc0)
		need = 2, min = 0x80;
	else if ((c & 0xf0) == 0xe0)
		need = 3, min = 0x800;
	else if ((c & 0xf8) == 0xf0)
		need = 4, min = 0x10000;
	else
		return 0;
	if (need > n)
		return 0;
	unsigned cp = c & (0x7f >> need);
	for (size_t i = 1; i < need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return need;
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
			size_t l = utf8_len(u + i, n - i);
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
	if (end == s || v < 0)
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

int rp_glob_list_match(const char *globs, const char *name)
{
	const char *p = globs;
	char one[256];
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		if (n && n < sizeof(one)) {
			memcpy(one, p, n);
			one[n] = 0;
			if (fnmatch(one, name, 0) == 0)
				return 1;
		}
		if (!comma)
			break;
		p = comma + 1;
	}
	return 0;
}

size_t rp_put(char *buf, size_t len, size_t pos, const char *fmt, ...)
{
	if (pos + 1 >= len)
		return pos;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf + pos, len - pos, fmt, ap);
	va_end(ap);
	if (n < 0)
		return pos;
	return pos + (size_t)n < len ? pos + (size_t)n : len - 1;
}
