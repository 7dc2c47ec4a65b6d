/* Running a few instructions under the Unicorn emulator for the relocation checker: one
 * engine, reused; each run starts from a given register state in a fresh memory image whose
 * pages are created on first touch, and stops when control leaves a given code range. */
#ifndef CUHOOK_CHECK_EMU_H
#define CUHOOK_CHECK_EMU_H

#include "elf_file.h"

#include <stdbool.h>
#include <stdint.h>

#define EMU_MAX_ACCESS 64
#define EMU_MAX_VALUES 32
#define EMU_NGPR 16
#define EMU_NXMM 16

/* What memory holds. Identical for the two runs that are compared, so that any difference in
 * what they do comes from the code they run.
 *
 * Data pages (made on first touch): pseudo-random words (a mix of zeros, small numbers,
 * `values` and random numbers, a function of `seed` and the page's address), overlaid by the
 * file bytes of the library's executable segments.
 *
 * Code pages (those of the overwritten bytes and of the copy): hlt (f4) everywhere but the
 * original's overwritten bytes at `func` and the copy at `copy_addr`. Unicorn translates ahead
 * of what runs; this way it only ever translates the instructions under test, and control that
 * goes elsewhere in those pages stops at the first instruction (where the run ends anyway)
 * instead of translating whatever follows: some valid x86 (far jumps through memory...) aborts
 * Unicorn 2.0.1's code generator. */
struct emu_image {
	const struct elf_file *elf;
	uint64_t seed;
	uint64_t func;
	const uint8_t *orig;     /* the overwritten bytes */
	unsigned orig_len;
	uint64_t copy_addr;
	const uint8_t *copy;
	unsigned copy_len;
	const uint64_t *values;  /* "interesting" numbers (the prologue's immediates) */
	unsigned nvalues;
};

/* Registers at the start of a run. gpr[] in the order rax rcx rdx rbx rsp rbp rsi rdi r8..r15
 * (the encoding order). */
struct emu_state {
	uint64_t gpr[EMU_NGPR];
	uint64_t rflags;
	uint64_t fs_base, gs_base;
	uint64_t xmm[EMU_NXMM][2];
};

struct emu_access {
	uint64_t addr;
	uint64_t value;   /* writes only */
	uint32_t size;
};

enum emu_end {
	EMU_EXIT = 0,  /* control reached `addr`, outside the code range */
	EMU_FAULT,     /* the instruction at `addr` (inside the range) could not run: `err` */
	EMU_LIMIT,     /* still inside the range after the instruction limit */
};

struct emu_result {
	int end;                /* enum emu_end */
	int err;                /* uc_err of a fault */
	uint64_t addr;
	unsigned ninsns;
	uint64_t gpr[EMU_NGPR];
	uint64_t rflags;
	uint64_t xmm[EMU_NXMM][2];
	uint64_t mxcsr;
	uint16_t fpsw, fpcw, fptag; /* x87 status, control, tag words */
	uint64_t st[8][2];          /* x87 registers: mantissa, exponent */
	struct emu_access writes[EMU_MAX_ACCESS];
	unsigned nwrites;
	struct emu_access reads[EMU_MAX_ACCESS];
	unsigned nreads;
	bool overflow;          /* more than EMU_MAX_ACCESS reads or writes */
};

struct emu;

struct emu *emu_new(void);
void emu_free(struct emu *em);

/* Map the pages of premap[0..1) and premap[2..3) as code (the original's and the copy's
 * instructions: both runs map both, so that both see the same pages), load `st` (and a reset
 * CPU otherwise: nothing carries over from the previous run), start at `start` and run until
 * control reaches an address outside [lo, hi) — or, when `reentry_exits`, comes back to
 * `start` after the first instruction — or faults, or `max_insns` instructions ran. Data pages
 * are made on first touch, readable and writable but not executable: a branch into one, or to
 * an address with no page, is control leaving. Returns 0, or -1 if the code pages could not
 * be mapped. */
int emu_run(struct emu *em, const struct emu_image *img, const struct emu_state *st,
            uint64_t start, uint64_t lo, uint64_t hi, bool reentry_exits, unsigned max_insns,
            const uint64_t premap[4], struct emu_result *r);

/* Fill `st` with a register state derived from `seed` (see emu.c for the mix). */
void emu_random_state(struct emu_state *st, uint64_t seed, const uint64_t *values, unsigned nvalues);

const char *emu_strerror(int err);
const char *emu_gpr_name(unsigned i);

#endif
