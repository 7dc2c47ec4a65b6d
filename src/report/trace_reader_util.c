/* The small helpers every file of the trace reader shares (trace_reader_impl.h): the trace's
 * string arena, growing arrays, counting errors. Below the reader and its block decoders. */
#include "trace_reader_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

struct tr_arena_chunk {
	struct tr_arena_chunk *next;
	size_t len, cap;
	char buf[];
};

/* Control characters are replaced so that names from a hostile file cannot drive the terminal. */
char *tr_arena_strndup(struct tr_trace *t, const void *src, size_t n)
{
	struct tr_arena_chunk *c = t->arena_;
	if (!c || c->cap - c->len < n + 1) {
		size_t cap = n + 1 > 65536 - sizeof(*c) ? n + 1 : 65536 - sizeof(*c);
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->len = 0;
		c->cap = cap;
		c->next = t->arena_;
		t->arena_ = c;
	}
	char *d = c->buf + c->len;
	const unsigned char *s = src;
	for (size_t i = 0; i < n; i++)
		d[i] = (s[i] < 0x20 || s[i] == 0x7f) ? '?' : (char)s[i];
	d[n] = 0;
	c->len += n + 1;
	return d;
}

/* Grow *arr (elements of size elt) so that index `need - 1` fits. Doubling keeps the amortized
 * cost per element constant. */
int tr_grow(void **arr, uint32_t *cap, uint32_t need, size_t elt)
{
	if (need <= *cap)
		return 0;
	uint64_t ncap = *cap ? *cap : 16;
	while (ncap < need)
		ncap *= 2;
	if (ncap > UINT32_MAX)
		ncap = UINT32_MAX;
	void *p = realloc(*arr, ncap * elt);
	if (!p)
		return -1;
	*arr = p;
	*cap = (uint32_t)ncap;
	return 0;
}

void tr_add_error(struct tr_trace *t, const char *fmt, ...)
{
	t->errors++;
	if (t->nerror_msgs >= TR_MAX_ERROR_MSGS)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->error_msgs[t->nerror_msgs++], sizeof(t->error_msgs[0]), fmt, ap);
	va_end(ap);
}

void tr_arena_free(struct tr_trace *t)
{
	for (struct tr_arena_chunk *c = t->arena_, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	t->arena_ = NULL;
}
