/* The status line of cuhook run and cuhook attach (status_line.h). */
#include "status_line.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

bool status_line_wanted(bool quiet)
{
	const char *term = getenv("TERM");
	return !quiet && isatty(STDERR_FILENO) && !(term && !strcmp(term, "dumb"));
}

void status_line_begin(struct status_line *s, const char *prog, pid_t pid, const char *agent_path)
{
	memset(s, 0, sizeof(*s));
	s->prog = prog;
	s->src.fd = -1;
	s->t0_ns = now_ns();
	s->on = cuhook_inject_progress_open(&s->src, pid, agent_path) == 0;
}

/* 1536 -> "1.5 KiB" */
static void size_text(char *buf, size_t len, uint64_t bytes)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	unsigned u = 0;
	while (v >= 1024 && u + 1 < sizeof(unit) / sizeof(unit[0]))
		v /= 1024, u++;
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

void status_line_tick(struct status_line *s)
{
	struct cuhook_progress p;
	if (!s->on || cuhook_inject_progress_read(&s->src, &p) < 0)
		return;
	unsigned sec = (unsigned)((now_ns() - s->t0_ns) / 1000000000u);
	char size[32];
	size_text(size, sizeof(size), p.bytes);
	/* \r and erase to the end of the line: the line is drawn over itself; a calls count is an
	 * ENTRY and its EXIT, or one counted call */
	fprintf(stderr, "\r%s: %u:%02u, %llu calls (%llu counted), %s written, %llu dropped\033[K", s->prog,
	        sec / 60, sec % 60, (unsigned long long)(p.events / 2 + p.counted), (unsigned long long)p.counted,
	        size, (unsigned long long)p.dropped);
	fflush(stderr);
	s->shown = true;
}

void status_line_clear(struct status_line *s)
{
	if (s->shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	s->shown = false;
}

void status_line_end(struct status_line *s)
{
	status_line_clear(s);
	if (s->on)
		cuhook_inject_progress_close(&s->src);
	s->on = false;
}
