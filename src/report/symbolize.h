/* Symbolization of native stack addresses (symbolize.c): ELF symbols through libelf, source
 * lines from DWARF through libdw, C++ names demangled. */
#ifndef CUHOOK_SYMBOLIZE_H
#define CUHOOK_SYMBOLIZE_H

#include <stdint.h>

#include "trace_reader.h"

struct rp_symbolizer;

/* What is known of one address. Strings belong to the symbolizer: valid until rp_sym_free, the
 * file's only until the next look-up. */
struct rp_sym {
	const char *func;          /* the function (demangled where it demangles); NULL: none */
	uint64_t func_off;         /* the address's offset in it */
	const char *file;          /* source file from DWARF; NULL: no line information */
	int line;
	uint64_t file_off;         /* the address's offset in the mapped file: pc - start + offset */
};

struct rp_symbolizer *rp_sym_new(void);
void rp_sym_free(struct rp_symbolizer *s);
/* Symbolize pc, which mapping m holds. Returns 1 when the mapping's file could be read and is
 * of the build the process had (out->func and out->file may still be NULL: no symbol or line
 * holds pc), 0 when it could not (missing, not ELF, another build id: a note says so once). */
int rp_sym_lookup(struct rp_symbolizer *s, const struct tr_map *m, uint64_t pc, struct rp_sym *out);
/* One line per file that could not be used, in the order they were met. */
const char *const *rp_sym_notes(const struct rp_symbolizer *s, uint32_t *n);

#endif
