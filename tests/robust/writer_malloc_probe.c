/* writer_malloc_probe: preloaded into a traced test program (robust-writer-malloc), counts the
 * malloc, calloc and realloc calls made by the agent's writer thread ("cuhook-writer"). The writer
 * must make none: `cuhook attach` stops every other thread of the process under ptrace and then
 * waits for the writer's last round, and a stopped thread may hold the malloc arena lock the
 * writer would need (docs/how-it-works.md, 3.7). At exit it writes "writer N total M" to the
 * file named by WRITER_MALLOC_PROBE_OUT (M: every thread's calls, to show the probe was in).
 * Test-only code: glibc's __libc_* entry points do the allocating. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);

static unsigned long writer_calls, total_calls;

static void note_call(void)
{
	char name[16] = "";
	__atomic_add_fetch(&total_calls, 1, __ATOMIC_RELAXED);
	/* asked every time: the thread is named by its creator after it has started */
	if (prctl(PR_GET_NAME, name) == 0 && strcmp(name, "cuhook-writer") == 0)
		__atomic_add_fetch(&writer_calls, 1, __ATOMIC_RELAXED);
}

void *malloc(size_t n)
{
	note_call();
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	note_call();
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	note_call();
	return __libc_realloc(p, n);
}

__attribute__((destructor)) static void report(void)
{
	const char *path = getenv("WRITER_MALLOC_PROBE_OUT");
	if (!path)
		return;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return;
	char line[96];
	int len = snprintf(line, sizeof(line), "writer %lu total %lu\n", writer_calls, total_calls);
	if (write(fd, line, (size_t)len) < 0) {
	}
	close(fd);
}
