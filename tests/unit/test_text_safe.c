/* Unit tests of the sanitizer of foreign text (src/common/text_safe.c): what a terminal would act
 * on is shown escaped, everything else passes unchanged. */
#include "unit.h"

#include "text_safe.h"

#include <stdio.h>
#include <string.h>

#define SAFE(in, want)                                                                             \
	do {                                                                                       \
		char out_[256];                                                                    \
		text_safe_n(out_, sizeof(out_), (in), sizeof(in) - 1);                             \
		CHECK(!strcmp(out_, (want)), "got '%s', want '%s'", out_, (want));                 \
		CHECK(text_is_safe((in), sizeof(in) - 1) == !strcmp((in), (want)), "text_is_safe of '%s'", want); \
	} while (0)

static void passes_unchanged(void)
{
	SAFE("", "");
	SAFE("python3 infer.py --model=/opt/m.onnx", "python3 infer.py --model=/opt/m.onnx");
	SAFE("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80");
}

static void controls_escaped(void)
{
	SAFE("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07");
	SAFE("a\x1b[2Jb", "a\\x1b[2Jb");
	SAFE("tab\there\nnl\rcr", "tab\\there\\nnl\\rcr");
	SAFE("del\x7f", "del\\x7f");
	SAFE("back\\slash", "back\\\\slash");
	SAFE("\x01\x1f", "\\x01\\x1f");
	/* C1 controls as UTF-8 (U+009B is CSI), direction overrides */
	SAFE("a\xc2\x9b" "31m", "a\\u009b31m");
	SAFE("x\xe2\x80\xae" "evil", "x\\u202eevil");
	SAFE("x\xe2\x81\xa6y", "x\\u2066y");
}

static void invalid_utf8(void)
{
	SAFE("\xff", "\\xff");
	SAFE("\x9b" "1m", "\\x9b1m");                 /* a raw 8-bit CSI */
	SAFE("\xc3", "\\xc3");                         /* cut sequence */
	SAFE("\xc0\xaf", "\\xc0\\xaf");                 /* overlong '/' */
	SAFE("\xed\xa0\x80", "\\xed\\xa0\\x80");         /* a surrogate */
	SAFE("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); /* beyond U+10FFFF */
}

/* The output is cut before an escape that does not fit, never inside one, and always ends. */
static void truncation(void)
{
	char out[8];
	size_t n = text_safe_n(out, 6, "ab\x1b[2J", 6);
	CHECK(n == 2 && !strcmp(out, "ab"), "'%s' (%zu)", out, n);
	n = text_safe_n(out, sizeof(out), "ab\x1b[2J", 6);
	CHECK(n == 7 && !strcmp(out, "ab\\x1b["), "'%s' (%zu)", out, n);
	n = text_safe_n(out, sizeof(out), "abcdefghij", 10);
	CHECK(n == 7 && !strcmp(out, "abcdefg"), "'%s' (%zu)", out, n);
	n = text_safe_n(out, sizeof(out), "abcde\xc3\xa9z", 8);
	CHECK(n == 7 && !strcmp(out, "abcde\xc3\xa9"), "a whole character: '%s' (%zu)", out, n);
	n = text_safe_n(out, sizeof(out), "abcdef\xc3\xa9", 8);
	CHECK(n == 6 && !strcmp(out, "abcdef"), "not half a character: '%s' (%zu)", out, n);
	char big[64];
	CHECK(!strcmp(text_safe(big, sizeof(big), NULL), ""), "NULL");
	CHECK(!strcmp(text_safe(big, sizeof(big), "a\nb"), "a\\nb"), "%s", big);
	/* the worst case fits in TEXT_SAFE_GROWTH bytes per input byte */
	char worst[4] = {0x1b, 0x1b, 0x1b, 0};
	char wout[3 * TEXT_SAFE_GROWTH + 1];
	n = text_safe_n(wout, sizeof(wout), worst, 3);
	CHECK(n == 12, "3 escapes fit: %zu", n);
}

int main(void)
{
	RUN(passes_unchanged);
	RUN(controls_escaped);
	RUN(invalid_utf8);
	RUN(truncation);
	UNIT_EXIT();
}
