/* The streaming reader's call slots (trace_stream.h). In streaming mode calls[] is a pool of
 * slots rather than the list of every call: an ENTRY takes a slot (tr_stream_new_call), the
 * reader fills it as usual, and once the call is finished (trace_reader.c: matched EXIT,
 * entry-only call, lost EXIT) tr_stream_done hands it to the sink and frees the slot. Only the
 * calls open at one time hold a slot, so the pool stays as small as the deepest stacks of all
 * threads together.
 *
 * A slot keeps a copy of its ENTRY's arguments and of its DATA records (values and string): the
 * bytes of the file are released as they are decoded (tr_input_release), and a call can stay open
 * across many blocks. The records' copies live in the slot's own buffers, reused by the next call
 * that takes the slot, so that their memory too follows the calls open at one time. */
#include "trace_stream.h"

#include "trace_reader_impl.h"

#include <stdlib.h>
#include <string.h>

/* registers and stack slots an ENTRY carries at most */
#define SLOT_ARGS (6 + CUHOOK_MAX_STACK_ARGS)

/* A slot's DATA records. While the call is open, a record's `values` holds the offset of its
 * values in words[] (words[] may move as it grows); tr_stream_done turns offsets into pointers. */
struct slot_data {
	struct tr_data *recs;
	uint32_t n, cap;
	uint64_t *words;          /* each record's values, then its string, padded to 8 bytes */
	uint32_t nwords, wcap;
};

struct tr_stream_state {
	struct tr_stream_sink sink;
	uint32_t *free_slots;     /* slots finished calls left */
	uint32_t nfree, free_cap;
	uint32_t nslots, cap;     /* slots [0, nslots) were handed out at least once */
	uint64_t *ordinal;        /* per slot: the call's index in a whole read */
	int64_t *child_ns;        /* per slot: its finished children's durations */
	uint64_t *args;           /* per slot: SLOT_ARGS values */
	struct slot_data *data;   /* per slot: its DATA records */
	uint64_t next_ordinal;
	int failed;               /* the sink returned -1, or out of memory */
	struct tr_stream_skipped skipped;
};

int tr_stream_init(struct tr_trace *t, const struct tr_stream_sink *sink)
{
	struct tr_stream_state *s = calloc(1, sizeof(*s));
	if (!s)
		return -1;
	s->sink = *sink;
	t->stream_ = s;
	return 0;
}

/* Room for one more slot: calls[], ordinal[] and args[] grow together; the open calls' argument
 * pointers follow args[] when it moves. */
static int grow(struct tr_trace *t, struct tr_stream_state *s)
{
	uint32_t ncap = s->cap ? s->cap * 2 : 256;
	if (ncap <= s->cap)
		return -1;
	struct tr_call *calls = realloc(t->calls, (size_t)ncap * sizeof(*calls));
	if (!calls)
		return -1;
	t->calls = calls;
	uint64_t *ord = realloc(s->ordinal, (size_t)ncap * sizeof(*ord));
	if (!ord)
		return -1;
	s->ordinal = ord;
	int64_t *child = realloc(s->child_ns, (size_t)ncap * sizeof(*child));
	if (!child)
		return -1;
	s->child_ns = child;
	uint64_t *args = realloc(s->args, (size_t)ncap * SLOT_ARGS * sizeof(*args));
	if (!args)
		return -1;
	s->args = args;
	struct slot_data *data = realloc(s->data, (size_t)ncap * sizeof(*data));
	if (!data)
		return -1;
	memset(data + s->cap, 0, (size_t)(ncap - s->cap) * sizeof(*data));
	s->data = data;
	for (uint32_t i = 0; i < s->nslots; i++)
		t->calls[i].args_ = s->args + (size_t)i * SLOT_ARGS;
	s->cap = ncap;
	t->calls_cap_ = ncap;
	return 0;
}

uint32_t tr_stream_new_call(struct tr_trace *t)
{
	struct tr_stream_state *s = t->stream_;
	uint32_t ci;
	if (s->nfree)
		ci = s->free_slots[--s->nfree];
	else {
		if (s->nslots == s->cap && grow(t, s))
			return TR_NONE;
		ci = s->nslots++;
	}
	s->ordinal[ci] = s->next_ordinal++;
	s->child_ns[ci] = 0;
	s->data[ci].n = s->data[ci].nwords = 0;
	return ci;
}

void tr_stream_opened(struct tr_trace *t, uint32_t ci)
{
	struct tr_stream_state *s = t->stream_;
	struct tr_call *c = &t->calls[ci];
	uint64_t *dst = s->args + (size_t)ci * SLOT_ARGS;
	unsigned n = (unsigned)c->nregs_ + c->nstack_;
	if (n > SLOT_ARGS)
		n = SLOT_ARGS; /* the decoders allow no more; kept in bounds all the same */
	if (n)
		memcpy(dst, c->args_, n * sizeof(*dst));
	c->args_ = dst;
}

int tr_stream_data(struct tr_trace *t, uint32_t ci, uint32_t func, int at_exit, unsigned nvalues,
                   const uint64_t *values, unsigned str_len)
{
	struct slot_data *sd = &t->stream_->data[ci];
	uint32_t words = nvalues + (str_len + 7) / 8;
	if (sd->n == sd->cap && tr_grow((void **)&sd->recs, &sd->cap, sd->n + 1, sizeof(*sd->recs)))
		return -1;
	/* never NULL, also for records of no value: their pointers are words + offset */
	if ((sd->nwords + words > sd->wcap || !sd->words) &&
	    tr_grow((void **)&sd->words, &sd->wcap, sd->nwords + words + 1, sizeof(*sd->words)))
		return -1;
	uint64_t *dst = sd->words + sd->nwords;
	if (nvalues)
		memcpy(dst, values, nvalues * sizeof(*dst));
	if (str_len) {
		dst[words - 1] = 0; /* the padding after the string */
		memcpy(dst + nvalues, values + nvalues, str_len);
	}
	struct tr_data *td = &sd->recs[sd->n++];
	td->call = ci;
	td->decoder = t->funcs[func].decoder;
	td->at_exit = at_exit ? 1 : 0;
	td->nvalues = (uint8_t)nvalues;
	td->values = (const uint64_t *)(uintptr_t)sd->nwords; /* an offset until the call is handed over */
	td->str = NULL;
	td->str_len = (uint16_t)str_len;
	sd->nwords += words;
	t->calls[ci].ndata++;
	return 0;
}

void tr_stream_done(struct tr_trace *t, uint32_t ci)
{
	struct tr_stream_state *s = t->stream_;
	if (s->failed)
		return;
	s->skipped.calls++;
	/* its DATA records, in the slot's buffers, are t->data during the callback (the queries of
	 * trace_data.h read them there) */
	struct slot_data *sd = &s->data[ci];
	for (uint32_t k = 0; k < sd->n; k++) {
		struct tr_data *d = &sd->recs[k];
		d->values = sd->words + (uintptr_t)d->values;
		d->str = (const char *)(d->values + d->nvalues);
	}
	struct tr_call c = t->calls[ci];
	c.ndata = (uint8_t)sd->n;
	c.data_first = sd->n ? 0 : TR_NONE;
	t->data = sd->recs;
	t->ndata = sd->n;
	const struct tr_stream_info info = {s->ordinal[ci], s->child_ns[ci],
	                                    c.parent != TR_NONE ? s->ordinal[c.parent] : UINT64_MAX};
	if (c.parent != TR_NONE && tr_call_timed(&c)) {
		int64_t sum;
		if (__builtin_add_overflow(s->child_ns[c.parent], tr_call_dur(&c), &sum))
			sum = INT64_MAX; /* only a hostile file: durations are below 2^48 */
		s->child_ns[c.parent] = sum;
	}
	int rc = s->sink.call(s->sink.ctx, t, &c, &info);
	t->data = NULL;
	t->ndata = 0;
	sd->n = sd->nwords = 0;
	if (rc) {
		s->failed = 1;
		return;
	}
	if (s->nfree == s->free_cap &&
	    tr_grow((void **)&s->free_slots, &s->free_cap, s->nfree + 1, sizeof(*s->free_slots))) {
		s->failed = 1;
		return;
	}
	s->free_slots[s->nfree++] = ci;
}

int tr_stream_begin(struct tr_trace *t)
{
	struct tr_stream_state *s = t->stream_;
	int rc = s->sink.begin ? s->sink.begin(s->sink.ctx, t) : 0;
	if (rc < 0)
		s->failed = 1;
	return rc;
}

int tr_stream_failed(const struct tr_trace *t)
{
	return t->stream_ && t->stream_->failed;
}

struct tr_stream_skipped *tr_stream_skips(struct tr_trace *t)
{
	return &t->stream_->skipped;
}

void tr_stream_finish(struct tr_trace *t)
{
	struct tr_stream_state *s = t->stream_;
	/* no call is left for anything to read: the pool goes, the counts stay */
	free(t->calls);
	t->calls = NULL;
	t->calls_cap_ = 0;
	free(s->free_slots);
	free(s->ordinal);
	free(s->child_ns);
	free(s->args);
	for (uint32_t i = 0; s->data && i < s->cap; i++) {
		free(s->data[i].recs);
		free(s->data[i].words);
	}
	free(s->data);
	s->data = NULL;
	s->free_slots = NULL;
	s->ordinal = s->args = NULL;
	s->child_ns = NULL;
	s->nfree = s->free_cap = s->nslots = s->cap = 0;
}

void tr_stream_free(struct tr_trace *t)
{
	if (!t->stream_)
		return;
	tr_stream_finish(t);
	free(t->stream_);
	t->stream_ = NULL;
}

const struct tr_call *tr_stream_open_call(const struct tr_trace *t, uint32_t ci)
{
	return &t->calls[ci];
}

uint64_t tr_stream_open_ordinal(const struct tr_trace *t, uint32_t ci)
{
	return t->stream_->ordinal[ci];
}

void tr_stream_get_skipped(const struct tr_trace *t, struct tr_stream_skipped *out)
{
	if (t->stream_)
		*out = t->stream_->skipped;
	else
		memset(out, 0, sizeof(*out));
}
