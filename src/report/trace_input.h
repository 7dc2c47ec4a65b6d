/* The bytes of a trace for the reader (trace_reader.c): read into memory of the reader's own, and
 * only as far as the reader has found them to be a trace.
 *
 * Why read, not map: a mapping of a file another process can truncate or rewrite is not the
 * reader's own. A file truncated while mapped turns every access past its new end into SIGBUS:
 * during decoding, and also after tr_open() returns, since calls keep pointers into the bytes
 * (arguments, DATA values and strings) that the report reads while it writes its output;
 * truncation discards even the private copy-on-write pages of a mapping. A file rewritten while
 * mapped can change a size between its check and its use. A SIGBUS guard (siglongjmp) would have
 * to wrap every access in the report, and could jump out of stdio calls holding their locks.
 * Bytes read into private memory cannot change or vanish: a file that shrinks while it is read
 * reads short, the reader reports it truncated where its bytes ended, and nothing after tr_open()
 * depends on the file.
 *
 * Bounded: the reader asks for the bytes it checks, in order, and the input reads at most a
 * window beyond them, so garbage after a valid prefix, a sparse file's zeros or an endless stream
 * cost a window at most (the header is read alone, and checked, before anything else).
 *
 * Two kinds of input:
 *  - sequential (a pipe, a file that does not know its size, bytes in memory): pass 1 reads
 *    everything it walks into the buffer (tr_input_peek, tr_input_reaches), pass 2 decodes it;
 *  - seekable (a regular file, up to the size it had when opened): pass 1 reads only block
 *    headers and metadata through a small window, without the EVENTS payloads; pass 2 has the
 *    validated prefix read into the buffer by a reader thread (tr_input_load) while it decodes
 *    (tr_input_wait), so that the copy costs little more time than decoding. Pass 2 checks each
 *    block header again: the file may have changed since pass 1. */
#ifndef CUHOOK_TRACE_INPUT_H
#define CUHOOK_TRACE_INPUT_H

#include <stddef.h>
#include <stdint.h>

struct tr_reader;

struct tr_input {
	/* The bytes, at their file offsets: sequential inputs hold [0, size), seekable ones, after
	 * tr_input_load(), [from, tr_input_wait()). Anonymous memory; the trace takes it over
	 * (tr_input_take). */
	uint8_t *buf;
	size_t cap;
	uint64_t size;
	/* the source */
	int fd;               /* -1: memory */
	const uint8_t *mem;
	uint64_t limit;       /* bytes to read at most: a regular file's size when opened (what is
	                         appended later is not read), the memory's, or UINT64_MAX */
	int seekable;
	uint64_t avail;       /* seekable: what the file holds as far as known (limit, less once a
	                         read came short) */
	int eof;              /* sequential: nothing more will come */
	/* why the input ended before its limit */
	int shrank;           /* a regular file was shorter than when opened: it shrank while read */
	uint64_t size_now;    /* its size then (fstat) */
	int read_errno;       /* a read failed; what came before it is all there is */
	int oom;              /* out of memory: the reader gives up */
	/* seekable, pass 1: a window of the file */
	uint8_t *win;
	uint64_t win_off;
	size_t win_len, win_cap, win_want;
	unsigned win_hits;
	/* seekable, pass 2 */
	struct tr_reader *rd;
	uint64_t from;
	uint64_t released;    /* streaming: the pages before this were given back */
};

/* A file descriptor, read up to `limit` bytes; seekable: a regular file whose size is known. */
void tr_input_fd(struct tr_input *in, int fd, uint64_t limit, int seekable);
void tr_input_mem(struct tr_input *in, const void *buf, size_t len);

/* Pass 1: bytes [off, off + len) to check, or NULL when the input ends first (or in->oom). A
 * pointer stays valid until the next call. `ahead`: read a window beyond them (0 for the file
 * header, read alone). */
const uint8_t *tr_input_peek(struct tr_input *in, uint64_t off, size_t len, int ahead);
/* Pass 1: whether the input extends to `end` (a sequential input reads up to there). */
int tr_input_reaches(struct tr_input *in, uint64_t end);
/* Pass 1: the input's size as far as known (after a NULL peek: where it ended). */
uint64_t tr_input_avail(const struct tr_input *in);

/* Pass 2: make [from, to) come into in->buf (already there for a sequential input). Returns 0
 * or -1 when out of memory. */
int tr_input_load(struct tr_input *in, uint64_t from, uint64_t to);
/* Pass 2: wait until [from, end) is in in->buf; returns the end of what is there, < end when the
 * input ended first (in->shrank, in->read_errno). */
uint64_t tr_input_wait(struct tr_input *in, uint64_t end);

/* Pass 2, streaming (trace_stream.h): the bytes before `upto` are decoded and not needed any
 * more. Their pages are given back, and the reader thread reads at most a window ahead of
 * `upto` from then on, so that a file of any size costs a window of memory. */
void tr_input_release(struct tr_input *in, uint64_t upto);

/* Stops the reader thread; the bytes read stay (in->size: where they end). Then the trace takes
 * the buffer (tr_input_take; tr_input_free_buf() frees it) and tr_input_close() frees the rest
 * (not the fd). */
void tr_input_stop(struct tr_input *in);
void tr_input_take(struct tr_input *in, uint8_t **buf, size_t *cap);
void tr_input_close(struct tr_input *in);

/* For tr_close(): the buffer with its sanitizer state cleared. */
void tr_input_free_buf(uint8_t *buf, size_t cap);

#endif
