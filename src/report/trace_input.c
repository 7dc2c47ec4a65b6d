/* The bytes of a trace for the reader: see trace_input.h for why they are read and not mapped,
 * and how far. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mremap; the meson build defines it, tests/fuzz/build.sh does not */
#endif
#include "trace_input.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Under AddressSanitizer the bytes of a buffer not read yet are poisoned, so that the fuzzers and
 * the sanitizer build catch a reader that uses bytes before it asked for them. */
#if defined(__SANITIZE_ADDRESS__)
#define TR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TR_ASAN 1
#endif
#endif
#ifdef TR_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* A sequential input reads this far ahead of what the reader asked for: few syscalls, and what
 * garbage after a valid prefix can cost before the reader refuses it. */
#define READ_AHEAD (4u << 20)
/* A seekable input's window in pass 1 starts at a page (a block header, the EVENTS payload after
 * it skipped) and doubles up to WIN_MAX while it serves several blocks (small blocks). Pass 1
 * never asks for CHUNK bytes but for a metadata block that big (tests/report, shrink_reading,
 * tells the passes apart so). */
#define WIN_MIN 4096u
#define WIN_MAX (256u << 10)
/* Pass 2 reads in chunks of this; a prefix of fewer than READER_THREAD_MIN bytes is read without
 * a thread, as the decoder asks for it. */
#define CHUNK (1u << 20)
#define READER_THREAD_MIN (8u << 20)
/* Streaming (tr_input_release): how far the reader thread reads ahead of the decoder. */
#define AHEAD (16u << 20)

/* ---- the buffer ---------------------------------------------------------------------------- */

/* Anonymous memory, reserved without being committed: only the pages written count. 2 MB pages
 * make the first touch of a 1 GB copy hundreds of page faults instead of 250000. */
static void *buf_map(size_t cap)
{
	void *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (cap >= (2u << 20))
		madvise(p, cap, MADV_HUGEPAGE);
	POISON(p, cap);
	return p;
}

void tr_input_free_buf(uint8_t *buf, size_t cap)
{
	if (!buf)
		return;
	UNPOISON(buf, cap); /* the shadow outlives the mapping */
	munmap(buf, cap);
}

static size_t page_round(uint64_t n)
{
	return (size_t)((n + 4095) & ~(uint64_t)4095);
}

/* Room for `want` bytes in a sequential input's buffer: doubling, moved by mremap (no copy),
 * never beyond the limit. */
static int buf_grow(struct tr_input *in, uint64_t want)
{
	uint64_t cap = (uint64_t)in->cap * 2 > want ? (uint64_t)in->cap * 2 : want;
	if (cap > in->limit)
		cap = in->limit;
	if (cap > (uint64_t)SIZE_MAX / 2)
		return -1;
	size_t ncap = page_round(cap);
	if (!in->cap) {
		in->buf = buf_map(ncap);
		if (!in->buf)
			return -1;
		in->cap = ncap;
		return 0;
	}
	UNPOISON(in->buf, in->cap);
	void *p = mremap(in->buf, in->cap, ncap, MREMAP_MAYMOVE);
	if (p == MAP_FAILED) {
		POISON(in->buf + in->size, in->cap - in->size);
		return -1;
	}
	if (ncap >= (2u << 20))
		madvise(p, ncap, MADV_HUGEPAGE);
	in->buf = p;
	in->cap = ncap;
	POISON(in->buf + in->size, in->cap - in->size);
	return 0;
}

/* pread() until n bytes or the end of the file; the bytes stay poisoned where none came. Returns
 * the bytes read, or -1 with *err when a read failed before any. */
static ssize_t read_full(int fd, uint8_t *dst, size_t n, uint64_t at, int *err)
{
	size_t got = 0;
	*err = 0;
	UNPOISON(dst, n);
	while (got < n) {
		ssize_t r = pread(fd, dst + got, n - got, (off_t)(at + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			*err = errno;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	POISON(dst + got, n - got);
	return !got && *err ? -1 : (ssize_t)got;
}

/* The input ended before it should have: a read failed (err), or a regular file shrank. */
static void ended_early(struct tr_input *in, int err)
{
	if (err) {
		in->read_errno = err;
		return;
	}
	struct stat st;
	in->shrank = 1;
	in->size_now = fstat(in->fd, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* ---- sources ------------------------------------------------------------------------------- */

void tr_input_fd(struct tr_input *in, int fd, uint64_t limit, int seekable)
{
	memset(in, 0, sizeof(*in));
	in->fd = fd;
	in->limit = limit;
	in->seekable = seekable;
	in->avail = limit;
	in->win_want = WIN_MIN;
}

void tr_input_mem(struct tr_input *in, const void *buf, size_t len)
{
	memset(in, 0, sizeof(*in));
	in->fd = -1;
	in->mem = buf;
	in->limit = len;
	in->avail = len;
}

/* Sequential: make [0, end) present if the input has it, reading up to `ahead` bytes more. */
static void seq_fill(struct tr_input *in, uint64_t end, uint64_t ahead)
{
	if (in->size >= end || in->eof || in->oom)
		return;
	uint64_t want = end + ahead < in->limit ? end + ahead : in->limit;
	if (want > in->cap && buf_grow(in, want)) {
		in->oom = 1;
		return;
	}
	while (in->size < end && in->size < want) {
		size_t n = (size_t)(want - in->size);
		ssize_t got;
		int err = 0;
		if (in->fd < 0) {
			UNPOISON(in->buf + in->size, n);
			memcpy(in->buf + in->size, in->mem + in->size, n);
			got = (ssize_t)n;
		} else {
			/* One read, not read_full(): a pipe gives what it has, the loop asks again only
			 * while the reader's `end` is not there. */
			UNPOISON(in->buf + in->size, n);
			do
				got = read(in->fd, in->buf + in->size, n);
			while (got < 0 && errno == EINTR);
			err = errno;
			POISON(in->buf + in->size + (got > 0 ? (size_t)got : 0), n - (got > 0 ? (size_t)got : 0));
		}
		if (got <= 0) {
			in->eof = 1;
			if (got < 0)
				ended_early(in, err ? err : EIO);
			return;
		}
		in->size += (uint64_t)got;
	}
	if (in->size == in->limit)
		in->eof = 1;
}

/* ---- pass 1 -------------------------------------------------------------------------------- */

const uint8_t *tr_input_peek(struct tr_input *in, uint64_t off, size_t len, int ahead)
{
	if (!in->seekable) {
		seq_fill(in, off + len, ahead ? READ_AHEAD : 0);
		return in->size >= off + len ? in->buf + off : NULL;
	}
	if (off >= in->win_off && off + len <= in->win_off + in->win_len) {
		in->win_hits++;
		return in->win + (off - in->win_off);
	}
	if (in->oom || off + len > in->avail)
		return NULL;
	/* A window that served several blocks grows, one that served a single block (a big EVENTS
	 * payload followed) shrinks back: reading the payloads here would read the file twice. */
	if (in->win_hits >= 2 && in->win_want < WIN_MAX)
		in->win_want *= 2;
	else if (in->win_hits < 2)
		in->win_want = WIN_MIN;
	uint64_t n = ahead && in->win_want > len ? in->win_want : len;
	if (n > in->avail - off)
		n = in->avail - off;
	if (n > in->win_cap) {
		uint8_t *w = realloc(in->win, (size_t)n);
		if (!w) {
			in->oom = 1;
			return NULL;
		}
		in->win = w;
		in->win_cap = (size_t)n;
	}
	int err;
	ssize_t got = read_full(in->fd, in->win, (size_t)n, off, &err);
	in->win_off = off;
	in->win_len = got > 0 ? (size_t)got : 0;
	in->win_hits = 1;
	if ((uint64_t)in->win_len < n) {
		in->avail = off + in->win_len;
		ended_early(in, err);
	}
	return in->win_len >= len ? in->win : NULL;
}

int tr_input_reaches(struct tr_input *in, uint64_t end)
{
	if (!in->seekable) {
		seq_fill(in, end, READ_AHEAD);
		return in->size >= end;
	}
	return end <= in->avail;
}

uint64_t tr_input_avail(const struct tr_input *in)
{
	return in->seekable ? in->avail : in->size;
}

/* ---- pass 2: the reader -------------------------------------------------------------------- */

struct tr_reader {
	int fd;
	uint8_t *buf;
	uint64_t to;
	int threaded;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* under mu while threaded */
	uint64_t done;        /* [from, done) is in buf */
	int finished;         /* nothing more will come */
	int stop;             /* the decoder needs no more */
	int short_end;        /* a read came short: the file ended (or failed) before `to` */
	uint64_t released;    /* streaming: read no further than AHEAD past this; 0 unlimited */
	int end_errno;        /* and how, for ended_early() */
};

/* Read [done, max(done + CHUNK, want_end)) (not past `to`) and record the outcome. Called by the
 * thread with the bytes published under mu, or by the decoder itself without a thread. */
static void reader_step(struct tr_reader *rd, uint64_t want_end)
{
	uint64_t at = rd->done;
	uint64_t n = want_end > at + CHUNK ? want_end - at : CHUNK;
	if (n > rd->to - at)
		n = rd->to - at;
	int err;
	ssize_t got = read_full(rd->fd, rd->buf + at, (size_t)n, at, &err);
	if (rd->threaded)
		pthread_mutex_lock(&rd->mu);
	if (got > 0)
		rd->done = at + (uint64_t)got;
	if (got < (ssize_t)n) {
		rd->short_end = 1;
		rd->end_errno = err;
	}
	if (rd->short_end || rd->done >= rd->to)
		rd->finished = 1;
	if (rd->threaded) {
		pthread_cond_broadcast(&rd->cv);
		pthread_mutex_unlock(&rd->mu);
	}
}

static void *reader_main(void *arg)
{
	struct tr_reader *rd = arg;
	for (;;) {
		pthread_mutex_lock(&rd->mu);
		while (rd->released && rd->done >= rd->released + AHEAD && !rd->finished && !rd->stop)
			pthread_cond_wait(&rd->cv, &rd->mu);
		int more = !rd->finished && !rd->stop;
		pthread_mutex_unlock(&rd->mu);
		if (!more)
			return NULL;
		reader_step(rd, 0);
	}
}

int tr_input_load(struct tr_input *in, uint64_t from, uint64_t to)
{
	in->from = from;
	if (!in->seekable)
		return 0;
	struct tr_reader *rd = calloc(1, sizeof(*rd));
	if (!rd)
		return -1;
	rd->fd = in->fd;
	rd->to = to;
	rd->done = from;
	in->rd = rd;
	if (to <= from) {
		rd->finished = 1;
		return 0;
	}
	in->cap = page_round(to);
	in->buf = buf_map(in->cap);
	if (!in->buf) {
		in->cap = 0;
		return -1;
	}
	rd->buf = in->buf;
	/* The copy runs beside the decoding (another core), so that reading the file costs little
	 * more time than mapping it did. Without a thread, the decoder reads as it goes. */
	if (to - from >= READER_THREAD_MIN && !pthread_mutex_init(&rd->mu, NULL)) {
		if (!pthread_cond_init(&rd->cv, NULL)) {
			if (!pthread_create(&rd->th, NULL, reader_main, rd)) {
				rd->threaded = 1;
				return 0;
			}
			pthread_cond_destroy(&rd->cv);
		}
		pthread_mutex_destroy(&rd->mu);
	}
	return 0;
}

uint64_t tr_input_wait(struct tr_input *in, uint64_t end)
{
	if (!in->seekable)
		return in->size;
	struct tr_reader *rd = in->rd;
	if (!rd)
		return in->from;
	if (end > rd->to)
		end = rd->to;
	uint64_t done;
	if (rd->threaded) {
		pthread_mutex_lock(&rd->mu);
		while (rd->done < end && !rd->finished)
			pthread_cond_wait(&rd->cv, &rd->mu);
		done = rd->done;
		pthread_mutex_unlock(&rd->mu);
		return done;
	}
	while (rd->done < end && !rd->finished)
		reader_step(rd, end);
	return rd->done;
}

void tr_input_release(struct tr_input *in, uint64_t upto)
{
	struct tr_reader *rd = in->rd;
	if (!in->buf)
		return;
	/* whole pages only: the one holding `upto` is still being read */
	uint64_t from = in->released > in->from ? in->released : in->from;
	uint64_t lo = (from + 4095) & ~(uint64_t)4095, hi = upto & ~(uint64_t)4095;
	if (hi > lo) {
		madvise(in->buf + lo, (size_t)(hi - lo), MADV_DONTNEED);
		in->released = hi;
	}
	if (rd && rd->threaded) {
		pthread_mutex_lock(&rd->mu);
		rd->released = upto;
		pthread_cond_broadcast(&rd->cv);
		pthread_mutex_unlock(&rd->mu);
	}
}

void tr_input_stop(struct tr_input *in)
{
	struct tr_reader *rd = in->rd;
	if (!rd)
		return;
	if (rd->threaded) {
		pthread_mutex_lock(&rd->mu);
		rd->stop = 1;
		pthread_mutex_unlock(&rd->mu);
		pthread_join(rd->th, NULL);
		pthread_cond_destroy(&rd->cv);
		pthread_mutex_destroy(&rd->mu);
	}
	in->size = rd->done;
	if (rd->short_end)
		ended_early(in, rd->end_errno);
	free(rd);
	in->rd = NULL;
}

void tr_input_take(struct tr_input *in, uint8_t **buf, size_t *cap)
{
	*buf = in->buf;
	*cap = in->cap;
	in->buf = NULL;
	in->cap = 0;
}

void tr_input_close(struct tr_input *in)
{
	tr_input_stop(in);
	free(in->win);
	in->win = NULL;
	tr_input_free_buf(in->buf, in->cap);
	in->buf = NULL;
	in->cap = 0;
}
