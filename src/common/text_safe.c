#include "text_safe.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

size_t text_utf8_len(const unsigned char *s, size_t n)
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

static unsigned utf8_value(const unsigned char *s, size_t len)
{
	unsigned cp = s[0] & (0x7f >> len);
	for (size_t i = 1; i < len; i++)
		cp = (cp << 6) | (s[i] & 0x3f);
	return cp;
}

/* Characters a terminal acts on although they are valid UTF-8: the C1 controls (U+009B is
 * CSI to a terminal that takes 8-bit controls) and the bidirectional overrides and isolates,
 * which make text display in another order than it reads. */
static bool unicode_control(unsigned cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) ||
	       cp == 0x200e || cp == 0x200f || cp == 0x061c;
}

/* What one input unit at s becomes: its length in the input (*used) and either the escape
 * written into esc (returns its length) or 0 when the bytes pass as they are. */
static size_t escape_at(const unsigned char *s, size_t n, size_t *used, char esc[TEXT_SAFE_GROWTH + 1])
{
	unsigned c = s[0];
	*used = 1;
	if (c == '\\')
		return (size_t)snprintf(esc, TEXT_SAFE_GROWTH + 1, "\\\\");
	if (c == '\n')
		return (size_t)snprintf(esc, TEXT_SAFE_GROWTH + 1, "\\n");
	if (c == '\t')
		return (size_t)snprintf(esc, TEXT_SAFE_GROWTH + 1, "\\t");
	if (c == '\r')
		return (size_t)snprintf(esc, TEXT_SAFE_GROWTH + 1, "\\r");
	if (c < 0x20 || c == 0x7f)
		return (size_t)snprintf(esc, TEXT_SAFE_GROWTH + 1, "\\x%02x", c);
	if (c < 0x80)
		return 0;
	size_t len = text_utf8_len(s, n);
	if (!len)
		return (size_t)snprintf(esc, TEXT_SAFE_GROWTH + 1, "\\x%02x", c);
	*used = len;
	unsigned cp = utf8_value(s, len);
	if (unicode_control(cp))
		return (size_t)snprintf(esc, TEXT_SAFE_GROWTH + 1, "\\u%04x", cp);
	return 0;
}

size_t text_safe_n(char *dst, size_t cap, const char *src, size_t n)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t out = 0;
	if (!cap)
		return 0;
	for (size_t i = 0; i < n;) {
		char esc[TEXT_SAFE_GROWTH + 1];
		size_t used, elen = escape_at(s + i, n - i, &used, esc);
		const char *piece = elen ? esc : (const char *)s + i;
		size_t plen = elen ? elen : used;
		if (out + plen >= cap)
			break;
		memcpy(dst + out, piece, plen);
		out += plen;
		i += used;
	}
	dst[out] = 0;
	return out;
}

const char *text_safe(char *dst, size_t cap, const char *src)
{
	src = src ? src : "";
	text_safe_n(dst, cap, src, strlen(src));
	return dst;
}

bool text_is_safe(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		char esc[TEXT_SAFE_GROWTH + 1];
		size_t used;
		if (escape_at(u + i, n - i, &used, esc))
			return false;
		i += used;
	}
	return true;
}
