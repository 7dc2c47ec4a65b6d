/* Finding the process's CPython (py_stack_setup): its _PyRuntime in the executable or a loaded
 * libpython, the version, the layout for it, and the type objects the frame walk compares
 * against. Off the traced path: it walks the loaded objects with dl_iterate_phdr. */
#include "py_runtime.h"
#include "py_stack.h"

#include <limits.h>
#include <stdarg.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols.h"
#include "to_writer.h"

struct py_found {
	uintptr_t runtime, version, code_type, str_type, bytes_type, frame_type;
	char name[PATH_MAX]; /* the object's path (the executable's from /proc/self/exe) */
};

static uintptr_t find(struct dl_phdr_info *info, const char *sym)
{
	uintptr_t addr;
	size_t size;
	if (symbols_find(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, sym, &addr, &size) < 0)
		return 0;
	return addr;
}

static int find_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	struct py_found *f = ctx;
	uintptr_t rt = find(info, "_PyRuntime");
	if (!rt)
		return 0;
	/* The first object that defines _PyRuntime is the one in use: the executable comes first,
	 * then libraries in load order, as the loader binds symbols. */
	f->runtime = rt;
	f->version = find(info, "Py_Version");
	f->code_type = find(info, "PyCode_Type");
	f->str_type = find(info, "PyUnicode_Type");
	f->bytes_type = find(info, "PyBytes_Type");
	f->frame_type = find(info, "PyFrame_Type");
	const char *name = info->dlpi_name;
	if (!name || !name[0]) {
		ssize_t n = readlink("/proc/self/exe", f->name, sizeof f->name - 1);
		f->name[n > 0 ? n : 0] = 0;
	} else {
		snprintf(f->name, sizeof f->name, "%s", name);
	}
	return 1;
}

/* 3.minor from the file name (libpython3.10.so.1.0, python3.10): before 3.11 there is no
 * Py_Version to read. 0 where the name does not say. */
static unsigned minor_from_name(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	const char *p = strstr(base, "python3.");
	if (!p)
		return 0;
	char *end;
	unsigned long m = strtoul(p + 8, &end, 10);
	return end != p + 8 && m < 100 ? (unsigned)m : 0;
}

/* The one warning NOTE of a CPython whose frames are not read. Not waiting for the notes'
 * lock: setup may run while the agent's start has the other threads stopped. */
__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...)
{
	char msg[PATH_MAX + 200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	writer_note(1, msg, false);
}

int py_runtime_check(unsigned *key)
{
	const struct py_layout *L = py_rt.L;
	const uint32_t *tss = (const uint32_t *)(py_rt.runtime + L->rt_tss_key);
	if (tss[0] != 1) /* Py_tss_t._is_initialized */
		return 1;
	uintptr_t main = py_read_ptr(py_rt.runtime + L->rt_main_interp);
	/* Py_Finalize frees thread states and their frames, perhaps under a thread that is in a
	 * call with the GIL released: from its start on, frames are not read */
	if (!main || py_read_ptr(py_rt.runtime + L->rt_finalizing))
		return 1;
	if (tss[1] >= PTHREAD_KEYS_MAX || !py_ptr_ok(main, L->interp_runtime + 8u, 8) ||
	    py_read_ptr(main + L->interp_runtime) != py_rt.runtime)
		return -1;
	*key = tss[1];
	return 0;
}

/* 3.13: the runtime's own debug offsets agree with the row (a 3.13.x that moved a field the
 * walk reads fails here, instead of being read wrongly). */
static bool debug_offsets_agree(uintptr_t rt, const struct py_layout *L)
{
	const struct py_debug_offsets_313 *d = &py_debug_offsets_313;
	if (memcmp((const void *)rt, PY_DBG_COOKIE, 8) != 0)
		return false;
	const struct { uint16_t at, want; } pairs[] = {
		{d->ts_interp, L->ts_interp}, {d->ts_current_frame, L->ts_frame},
		{d->ts_thread_id, L->ts_thread_id}, {d->fr_previous, L->fr_previous},
		{d->fr_executable, L->fr_code}, {d->fr_instr_ptr, L->fr_instr},
		{d->fr_owner, L->fr_owner}, {d->co_filename, L->co_filename},
		{d->co_qualname, L->co_name}, {d->co_linetable, L->co_linetable},
		{d->co_firstlineno, L->co_firstlineno}, {d->co_code_adaptive, L->co_code},
	};
	for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
		if (*(const uint64_t *)(rt + pairs[i].at) != pairs[i].want)
			return false;
	return true;
}

static void find_python(void)
{
	static struct py_found f; /* PATH_MAX: not on the stack of whoever calls setup */
	memset(&f, 0, sizeof f);
	dl_iterate_phdr(find_cb, &f);
	if (!f.runtime)
		return;

	unsigned minor = 0;
	if (f.version) {
		/* PY_VERSION_HEX: 0x030c04f0 is 3.12.4 final */
		unsigned long v = *(const unsigned long *)f.version;
		minor = (v >> 24) == 3 ? (unsigned)((v >> 16) & 0xff) : 0;
	} else {
		minor = minor_from_name(f.name);
		if (minor >= 11) /* Py_Version exists from 3.11 on: a name that says otherwise is not
		                    to be believed */
			minor = 0;
	}
	const struct py_layout *L = minor ? py_layout_for(minor) : NULL;
	if (!minor) {
		note("Python frames: CPython in %s, but its version could not be told (no Py_Version, "
		     "no version in the name): no Python frames", f.name);
	} else if (!L) {
		note("Python frames: CPython in %s is 3.%u, a version whose layout cuhook does not know "
		     "(it knows 3.10 to 3.13): no Python frames", f.name, minor);
	} else if (!f.code_type || !f.str_type || !f.bytes_type ||
	           (L->walk == PY_WALK_FRAME_OBJECTS && !f.frame_type)) {
		note("Python frames: CPython in %s (3.%u) exports no PyCode_Type, PyUnicode_Type, "
		     "PyBytes_Type or PyFrame_Type: no Python frames", f.name, minor);
		L = NULL;
	} else if (minor == 13 && !debug_offsets_agree(f.runtime, L)) {
		note("Python frames: CPython in %s (3.13) has other offsets in its _Py_DebugOffsets "
		     "than the layout cuhook knows for 3.13: no Python frames", f.name);
		L = NULL;
	} else if (!py_frames_setup()) {
		note("Python frames: no memory for the frame table (CPython in %s, 3.%u): no Python "
		     "frames", f.name, minor);
		L = NULL;
	}
	py_rt.runtime = f.runtime;
	py_rt.code_type = f.code_type;
	py_rt.str_type = f.str_type;
	py_rt.bytes_type = f.bytes_type;
	py_rt.frame_type = f.frame_type;
	py_rt.minor = minor;
	py_rt.L = L;
	unsigned key;
	if (L && py_runtime_check(&key) < 0) {
		note("Python frames: CPython in %s (3.%u) does not have the layout cuhook knows for "
		     "it (its main interpreter does not point back at _PyRuntime): no Python frames",
		     f.name, minor);
		py_rt.L = L = NULL;
	}
	__atomic_store_n(&py_rt.state, L ? PY_READY : PY_UNSUPPORTED, __ATOMIC_RELEASE);
}

void py_stack_setup(void)
{
	if (__atomic_load_n(&py_rt.state, __ATOMIC_ACQUIRE) != PY_NONE)
		return;
	/* the agent's start and the loader watch may both call: one looks, the other returns */
	static uint32_t running;
	if (__atomic_exchange_n(&running, 1, __ATOMIC_ACQUIRE))
		return;
	find_python();
	__atomic_store_n(&running, 0, __ATOMIC_RELEASE);
}
