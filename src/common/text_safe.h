/* Text that came from somewhere else (a traced process: its thread and program names, a
 * dlerror() message, a path; or a trace file) made safe to print on a terminal: a terminal acts
 * on the escape and control characters in what it is given (ESC ] 0 ; sets its title, other
 * sequences move the cursor, rewrite lines, or on some terminals answer back as typed input). */
#ifndef CUHOOK_TEXT_SAFE_H
#define CUHOOK_TEXT_SAFE_H

#include <stdbool.h>
#include <stddef.h>

/* The longest text_safe() makes of one input byte ("\x1b"), and of one character (a C1 or
 * direction control, "\u202e"). */
#define TEXT_SAFE_GROWTH 6

/* Copy n bytes of src to dst (cap bytes, NUL-terminated) with every byte that a terminal could
 * act on shown instead as an escape: control characters and DEL as \n, \t, \r or \xNN, the
 * backslash as \\ (so that an escape in the output always means one was made), C1 controls and
 * the Unicode direction overrides as \uNNNN, and bytes that are not valid UTF-8 as \xNN. Valid
 * UTF-8 text passes unchanged. The output is cut before an escape that would not fit whole.
 * Returns the length written. */
size_t text_safe_n(char *dst, size_t cap, const char *src, size_t n);

/* The same for a NUL-terminated string (NULL: ""); returns dst. */
const char *text_safe(char *dst, size_t cap, const char *src);

/* Whether text_safe_n would change anything in these n bytes. */
bool text_is_safe(const char *s, size_t n);

/* Length of the valid UTF-8 sequence at s (n bytes left, n > 0), 0 if it is not one: overlong
 * forms, surrogates and values beyond U+10FFFF are not valid. */
size_t text_utf8_len(const unsigned char *s, size_t n);

#endif
