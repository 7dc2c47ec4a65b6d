/* The Python frame table: each distinct frame position (code object, instruction) a capture
 * met gets a PYFRAMES id, with its file, function and line read once, when it is first seen.
 * Interning runs on the traced path of any thread at once: one mapping made at setup, slots
 * claimed with a compare-and-swap, no lock, no allocation. Two threads that meet a new
 * position at the same moment may give it two ids (one skips the slot the other is filling):
 * harmless, both entries say the same. The writer alone takes entries out, in id order. */
#include "py_runtime.h"
#include "py_stack.h"

#include <string.h>
#include <sys/mman.h>

#include "py_lines.h"
#include "trace_format.h"

#define PYF_SLOTS 8192u       /* positions a process can have: then captures end BAD */
#define PYF_PROBES 32u
#define PYF_FILE_MAX 448u     /* bytes kept of a file name, of a function name */
#define PYF_FUNC_MAX 192u
#define PYF_LINETABLE_MAX (1u << 20)

_Static_assert(sizeof(struct cuhook_pyframe_entry) + PYF_FILE_MAX + PYF_FUNC_MAX + 8 <=
               PY_FRAME_ENTRY_MAX, "an entry fits PY_FRAME_ENTRY_MAX");

enum { SLOT_EMPTY, SLOT_FILLING, SLOT_READY };

struct pyf_slot {
	uint32_t state;
	uint32_t id;
	uintptr_t code, file_obj, name_obj; /* the key, with lasti and first_line: a code object
	                                       freed and another made at its address has other
	                                       names or another first line, almost always */
	int32_t lasti, first_line, line;
	uint16_t file_len, func_len;
	char text[PYF_FILE_MAX + PYF_FUNC_MAX];
};

struct pyf_table {
	uint32_t next_id;
	uint32_t cursor;             /* writer: every id below it is written */
	uint32_t by_id[PYF_SLOTS];   /* slot index + 1 once the slot is ready (release) */
	uint8_t written[PYF_SLOTS];  /* writer only */
	struct pyf_slot slots[PYF_SLOTS];
};

static struct pyf_table *T;

bool py_frames_setup(void)
{
	if (__atomic_load_n(&T, __ATOMIC_ACQUIRE))
		return true;
	/* untouched pages cost nothing: the table's memory is what the positions use */
	void *m = mmap(NULL, sizeof(struct pyf_table), PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return false;
	struct pyf_table *none = NULL;
	if (!__atomic_compare_exchange_n(&T, &none, m, false, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
		munmap(m, sizeof(struct pyf_table));
	return true;
}

static unsigned put_utf8(char *out, unsigned n, unsigned cap, uint32_t cp)
{
	if (cp < 0x80 && n + 1 <= cap) {
		out[n] = (char)cp;
		return 1;
	}
	if (cp < 0x800 && n + 2 <= cap) {
		out[n] = (char)(0xc0 | cp >> 6);
		out[n + 1] = (char)(0x80 | (cp & 63));
		return 2;
	}
	if (cp >= 0x800 && cp < 0x10000 && n + 3 <= cap) {
		out[n] = (char)(0xe0 | cp >> 12);
		out[n + 1] = (char)(0x80 | ((cp >> 6) & 63));
		out[n + 2] = (char)(0x80 | (cp & 63));
		return 3;
	}
	if (cp >= 0x10000 && cp < 0x110000 && n + 4 <= cap) {
		out[n] = (char)(0xf0 | cp >> 18);
		out[n + 1] = (char)(0x80 | ((cp >> 12) & 63));
		out[n + 2] = (char)(0x80 | ((cp >> 6) & 63));
		out[n + 3] = (char)(0x80 | (cp & 63));
		return 4;
	}
	return 0; /* no room (the text is cut at a character), or not a code point */
}

/* A str object's text as UTF-8, at most cap bytes: compact strings of every kind (what code
 * objects' names are); a placeholder for anything else. */
static unsigned read_str(uintptr_t obj, char *out, unsigned cap)
{
	static const char unreadable[] = "<unreadable>";
	const struct py_layout *L = py_rt.L;
	if (!py_ptr_ok(obj, L->str_compact_size, 8) || py_read_ptr(obj + PY_OB_TYPE) != py_rt.str_type)
		goto placeholder;
	uint32_t state = *(const uint32_t *)(obj + PY_STR_STATE);
	intptr_t length = *(const intptr_t *)(obj + PY_STR_LENGTH);
	unsigned kind = PY_STR_KIND(state);
	if (!PY_STR_COMPACT(state) || length < 0 || (kind != 1 && kind != 2 && kind != 4) ||
	    (PY_STR_ASCII(state) && kind != 1))
		goto placeholder;
	uintptr_t data = obj + (PY_STR_ASCII(state) ? L->str_ascii_size : L->str_compact_size);
	if (!py_ptr_ok(data, (uintptr_t)length * kind, kind))
		goto placeholder;
	unsigned n = 0;
	for (intptr_t i = 0; i < length; i++) {
		uint32_t cp = kind == 1 ? ((const uint8_t *)data)[i]
		            : kind == 2 ? ((const uint16_t *)data)[i] : ((const uint32_t *)data)[i];
		unsigned k = put_utf8(out, n, cap, cp);
		if (!k)
			break;
		n += k;
	}
	return n;
placeholder:
	memcpy(out, unreadable, sizeof unreadable - 1);
	return sizeof unreadable - 1;
}

static int32_t read_line(uintptr_t code, int first_line, int lasti)
{
	const struct py_layout *L = py_rt.L;
	uintptr_t t = py_read_ptr(code + L->co_linetable);
	if (!py_ptr_ok(t, L->bytes_data, 8) || py_read_ptr(t + PY_OB_TYPE) != py_rt.bytes_type)
		return -1;
	intptr_t len = *(const intptr_t *)(t + PY_OB_SIZE);
	if (len < 0 || len > (intptr_t)PYF_LINETABLE_MAX || !py_ptr_ok(t + L->bytes_data, (uintptr_t)len, 1))
		return -1;
	const uint8_t *data = (const uint8_t *)(t + L->bytes_data);
	if (L->walk == PY_WALK_FRAME_OBJECTS) /* 3.10: f_lasti counts code units, the table bytes */
		return py_line_310(data, (size_t)len, first_line, lasti < 0 ? -1 : lasti * 2);
	return py_line_311(data, (size_t)len, first_line, lasti);
}

static void fill(struct pyf_slot *s, uintptr_t code, int lasti, uintptr_t file, uintptr_t name,
                 int first_line)
{
	s->code = code;
	s->lasti = lasti;
	s->file_obj = file;
	s->name_obj = name;
	s->first_line = first_line;
	s->line = read_line(code, first_line, lasti);
	s->file_len = (uint16_t)read_str(file, s->text, PYF_FILE_MAX);
	s->func_len = (uint16_t)read_str(name, s->text + s->file_len, PYF_FUNC_MAX);
	s->id = __atomic_fetch_add(&T->next_id, 1, __ATOMIC_RELAXED);
}

int64_t py_frames_intern(uintptr_t code, int lasti)
{
	const struct py_layout *L = py_rt.L;
	struct pyf_table *t = T;
	if (!t || !py_ptr_ok(code, L->co_code, 8) || py_read_ptr(code + PY_OB_TYPE) != py_rt.code_type)
		return -1;
	uintptr_t file = py_read_ptr(code + L->co_filename);
	uintptr_t name = py_read_ptr(code + L->co_name);
	int first_line = *(const int32_t *)(code + L->co_firstlineno);
	uint64_t h = (code ^ ((uint64_t)(uint32_t)lasti << 32)) * 0x9e3779b97f4a7c15ull;
	for (unsigned p = 0; p < PYF_PROBES; p++) {
		uint32_t i = (uint32_t)((h >> 40) + p) & (PYF_SLOTS - 1);
		struct pyf_slot *s = &t->slots[i];
		uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		if (st == SLOT_EMPTY) {
			if (__atomic_compare_exchange_n(&s->state, &st, SLOT_FILLING, false,
			                                __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
				fill(s, code, lasti, file, name, first_line);
				__atomic_store_n(&s->state, SLOT_READY, __ATOMIC_RELEASE);
				__atomic_store_n(&t->by_id[s->id], i + 1, __ATOMIC_RELEASE);
				return s->id;
			}
		}
		if (st == SLOT_READY && s->code == code && s->lasti == lasti && s->file_obj == file &&
		    s->name_obj == name && s->first_line == first_line)
			return s->id;
	}
	return -1;
}

size_t py_frames_take(uint8_t *buf, size_t cap, uint32_t *count)
{
	struct pyf_table *t = __atomic_load_n(&T, __ATOMIC_ACQUIRE);
	*count = 0;
	if (!t)
		return 0;
	uint32_t n = __atomic_load_n(&t->next_id, __ATOMIC_ACQUIRE);
	size_t used = 0;
	for (uint32_t id = t->cursor; id < n; id++) {
		uint32_t si = t->written[id] ? 0 : __atomic_load_n(&t->by_id[id], __ATOMIC_ACQUIRE);
		if (!si) /* written already, or still being filled: a later call takes it */
			continue;
		const struct pyf_slot *s = &t->slots[si - 1];
		size_t text = (size_t)s->file_len + s->func_len;
		size_t size = (sizeof(struct cuhook_pyframe_entry) + text + 7) & ~(size_t)7;
		if (used + size > cap)
			break;
		struct cuhook_pyframe_entry e = {
			.id = id, .size = (uint32_t)size, .line = s->line, .first_line = s->first_line,
			.file_len = s->file_len, .func_len = s->func_len,
		};
		memcpy(buf + used, &e, sizeof e);
		memcpy(buf + used + sizeof e, s->text, text);
		memset(buf + used + sizeof e + text, 0, size - sizeof e - text);
		used += size;
		t->written[id] = 1;
		(*count)++;
	}
	while (t->cursor < n && t->written[t->cursor])
		t->cursor++;
	return used;
}

void py_frames_rewind(void)
{
	struct pyf_table *t = __atomic_load_n(&T, __ATOMIC_ACQUIRE);
	if (!t)
		return;
	memset(t->written, 0, sizeof t->written);
	t->cursor = 0;
}
