/* What the relocator needs to know about one x86-64 instruction, beyond its length: is it a
 * direct branch (and where to), does it end control flow, does it address memory relative to
 * RIP. Capstone decodes the instruction; the control-flow kind is read from the raw opcode bytes,
 * which is exact and does not depend on Capstone's instruction-id tables. */
#ifndef CUHOOK_X86_INSN_H
#define CUHOOK_X86_INSN_H

#include <capstone.h>
#include <stdbool.h>
#include <stdint.h>

enum x86_flow {
	FLOW_NONE = 0,   /* falls through to the next instruction */
	FLOW_JMP,        /* jmp rel8/rel32 */
	FLOW_JCC,        /* jcc rel8/rel32: `cc` is the condition (0..15) */
	FLOW_CALL,       /* call rel32 */
	FLOW_LOOP,       /* loop/loope/loopne/jrcxz/jecxz: rel8 only, cannot be widened */
	FLOW_XBEGIN,     /* xbegin rel: transactional, refused */
	FLOW_RET,        /* ret, ret imm16 */
	FLOW_STOP,       /* indirect jmp, ud2, hlt, int3: control does not fall through */
};

struct decoded_insn {
	uint64_t addr;
	uint8_t len;
	uint8_t flow;          /* enum x86_flow */
	uint8_t cc;            /* condition of a FLOW_JCC */
	uint8_t rip_disp_off;  /* offset of a RIP-relative disp32 inside the instruction, 0 if none */
	bool rip_unknown;      /* addresses memory through RIP but the displacement was not found */
	uint64_t target;       /* absolute target of a direct branch */
	const uint8_t *bytes;  /* the original bytes */
	char text[64];          /* "mnemonic operands", for messages */
};

/* Decode one instruction at `code` (which lives at `addr`), at most `avail` bytes.
 * Returns false if it cannot be decoded. `insn_buf` is a cs_insn from cs_malloc(). */
bool x86_decode(csh cs, cs_insn *insn_buf, const uint8_t *code, size_t avail, uint64_t addr,
                struct decoded_insn *out);

/* A Capstone handle for x86-64 with details on. Returns 0 on success. */
int x86_open(csh *cs);

#endif
