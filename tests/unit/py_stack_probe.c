/* A test library for py_stack_test.py: the agent's Python frame reader (src/agent/py_*.c)
 * linked on its own, called through ctypes from a known Python call chain. It returns what a
 * capture saw as text, one frame a line, with the PYFRAMES entries py_frames_take wrote for
 * them (decoded back), so the test checks both the walk and the entries the writer gets. */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "py_lines.h"
#include "py_stack.h"
#include "trace_format.h"

#define MAX_IDS 8192

struct known {
	bool set;
	int line, first_line;
	char file[512], func[256];
};
static struct known known[MAX_IDS];
static char notes[4096];
static size_t notes_len;
static unsigned took_last; /* entries the last probe's py_frames_take calls returned */

/* The agent's writer takes the setup's NOTE; here it is kept for probe_notes. */
void writer_note(int level, const char *text, bool wait)
{
	(void)wait;
	int n = snprintf(notes + notes_len, sizeof notes - notes_len, "%d %s\n", level, text);
	if (n > 0 && notes_len + (size_t)n < sizeof notes)
		notes_len += (size_t)n;
}

const char *probe_notes(void)
{
	return notes;
}

static void take_all(void)
{
	static uint8_t buf[4096];
	uint32_t count;
	size_t got;
	took_last = 0;
	while ((got = py_frames_take(buf, sizeof buf, &count)) > 0) {
		took_last += count;
		for (size_t off = 0; off < got;) {
			struct cuhook_pyframe_entry e;
			memcpy(&e, buf + off, sizeof e);
			if (e.id < MAX_IDS) {
				struct known *k = &known[e.id];
				k->set = true;
				k->line = e.line;
				k->first_line = e.first_line;
				snprintf(k->file, sizeof k->file, "%.*s", (int)e.file_len, (const char *)(buf + off + sizeof e));
				snprintf(k->func, sizeof k->func, "%.*s", (int)e.func_len,
				         (const char *)(buf + off + sizeof e + e.file_len));
			}
			off += e.size;
		}
	}
}

/* "end N took T" then per frame "id<TAB>file<TAB>func<TAB>line<TAB>first<TAB>E or -". */
static int format(char *out, size_t cap, const uint32_t *ids, unsigned n, uint8_t end)
{
	take_all();
	size_t len = 0;
	len += (size_t)snprintf(out + len, cap - len, "end %u took %u\n", end, took_last);
	for (unsigned i = 0; i < n && len < cap; i++) {
		uint32_t id = ids[i] & CUHOOK_PYFRAME_ID_MASK;
		const struct known *k = id < MAX_IDS ? &known[id] : NULL;
		len += (size_t)snprintf(out + len, cap - len, "%u\t%s\t%s\t%d\t%d\t%s\n", id,
		                        k && k->set ? k->file : "?", k && k->set ? k->func : "?",
		                        k ? k->line : -2, k ? k->first_line : -2,
		                        (ids[i] & CUHOOK_PYFRAME_ENTRY) ? "E" : "-");
	}
	return len < cap ? 0 : -1;
}

int probe_stack(char *out, size_t cap, unsigned max)
{
	uint32_t ids[256];
	uint8_t end = 255;
	py_stack_setup();
	unsigned n = py_stack_capture(ids, max < 256 ? max : 256, &end);
	return format(out, cap, ids, n, end);
}

struct native_ctx {
	uint32_t ids[64];
	unsigned n;
	uint8_t end;
};

static void *native_thread(void *arg)
{
	struct native_ctx *c = arg;
	c->n = py_stack_capture(c->ids, 64, &c->end);
	return NULL;
}

/* The same from a thread Python never saw. */
int probe_stack_native_thread(char *out, size_t cap)
{
	struct native_ctx c = {.end = 255};
	pthread_t t;
	py_stack_setup();
	if (pthread_create(&t, NULL, native_thread, &c) != 0)
		return -1;
	pthread_join(t, NULL);
	return format(out, cap, c.ids, c.n, c.end);
}

/* py_frames_rewind: the next probe takes every entry again. */
void probe_rewind(void)
{
	py_frames_rewind();
}

int probe_line_310(const uint8_t *t, size_t len, int first, int offset)
{
	return py_line_310(t, len, first, offset);
}

int probe_line_311(const uint8_t *t, size_t len, int first, int unit)
{
	return py_line_311(t, len, first, unit);
}
