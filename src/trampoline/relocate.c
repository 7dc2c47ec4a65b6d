#include "relocate.h"

#include "x86_insn.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int refuse(struct reloc_plan *p, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->detail, sizeof(p->detail), fmt, ap);
	va_end(ap);
	p->status = status;
	return status;
}

static bool fits_i32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

int reloc_encode_jmp32(uint8_t out[5], uint64_t from, uint64_t to)
{
	int64_t rel = (int64_t)(to - (from + 5));
	if (!fits_i32(rel))
		return -1;
	int32_t r = (int32_t)rel;
	out[0] = 0xe9;
	memcpy(out + 1, &r, 4);
	return 0;
}

/* jmp qword ptr [rip+0]; .quad target — 14 bytes, reaches anywhere. */
static unsigned emit_jmp_abs(uint8_t *o, uint64_t target)
{
	static const uint8_t ind[6] = {0xff, 0x25, 0, 0, 0, 0};
	memcpy(o, ind, 6);
	memcpy(o + 6, &target, 8);
	return 14;
}

/* A jump to `target` from the copy at `at`: rel32 when it reaches, else absolute. */
static unsigned emit_jmp(uint8_t *o, uint64_t at, uint64_t target)
{
	if (reloc_encode_jmp32(o, at, target) == 0)
		return 5;
	return emit_jmp_abs(o, target);
}

static unsigned emit_jcc(uint8_t *o, uint64_t at, unsigned cc, uint64_t target)
{
	int64_t rel = (int64_t)(target - (at + 6));
	if (fits_i32(rel)) {
		int32_t r = (int32_t)rel;
		o[0] = 0x0f;
		o[1] = (uint8_t)(0x80 | cc);
		memcpy(o + 2, &r, 4);
		return 6;
	}
	/* The inverted condition skips over an absolute jump. */
	o[0] = (uint8_t)(0x70 | (cc ^ 1));
	o[1] = 14;
	return 2 + emit_jmp_abs(o + 2, target);
}

static unsigned emit_call(uint8_t *o, uint64_t at, uint64_t target)
{
	int64_t rel = (int64_t)(target - (at + 5));
	if (fits_i32(rel)) {
		int32_t r = (int32_t)rel;
		o[0] = 0xe8;
		memcpy(o + 1, &r, 4);
		return 5;
	}
	/* call [rip+2]; jmp +8; .quad target: the callee returns to the jmp, which skips the
	 * literal. */
	static const uint8_t seq[8] = {0xff, 0x15, 0x02, 0, 0, 0, 0xeb, 0x08};
	memcpy(o, seq, 8);
	memcpy(o + 8, &target, 8);
	return 16;
}

/* Direct branches anywhere in the function that land inside the bytes we overwrite would
 * execute the middle of our jump, or (a jump to byte 0) enter the hook with a stack that is
 * not an entry stack. The scan is linear over the symbol's bytes: compilers do
 * not put data inside x86-64 functions, and an undecodable byte refuses the function rather
 * than guessing. Indirect branches (jump tables) into the first bytes cannot be ruled out this
 * way; compilers do not emit them for a function's entry block. */
static int scan_body(csh cs, cs_insn *ci, const uint8_t *code, uint64_t func_addr, size_t size,
                     unsigned patch_len, struct reloc_plan *p)
{
	size_t off = 0;
	while (off < size) {
		struct decoded_insn in;
		if (!x86_decode(cs, ci, code + off, size - off, func_addr + off, &in)) {
			/* Padding at the very end (a symbol size that includes alignment) is harmless
			 * if it is all int3/zero bytes; anything else is refused. */
			size_t k = off;
			while (k < size && (code[k] == 0xcc || code[k] == 0x00))
				k++;
			if (k == size)
				return 0;
			return refuse(p, PATCH_UNDECODABLE, "undecodable byte 0x%02x at +%zu",
			              code[off], off);
		}
		if (in.flow == FLOW_JMP || in.flow == FLOW_JCC || in.flow == FLOW_CALL ||
		    in.flow == FLOW_LOOP || in.flow == FLOW_XBEGIN) {
			/* A call to byte 0 is a real (recursive) call and goes through the hook like any
			 * other. A jump to byte 0 is a loop: the stack is not the function's entry stack
			 * there, so the hook would take a saved register for the return address. */
			uint64_t lo = in.flow == FLOW_CALL ? func_addr + 1 : func_addr;
			if (in.target >= lo && in.target < func_addr + patch_len)
				return refuse(p, PATCH_BRANCH_INTO_PATCH,
				              "'%s' at +%zu jumps to +%u", in.text, off,
				              (unsigned)(in.target - func_addr));
		}
		off += in.len;
	}
	return 0;
}

int reloc_plan(csh cs, const uint8_t *code, uint64_t func_addr, size_t func_size,
               uint64_t copy_addr, struct reloc_plan *p)
{
	memset(p, 0, sizeof(*p));
	if (func_size < RELOC_JMP_LEN)
		return refuse(p, PATCH_TOO_SMALL, "%zu bytes", func_size);

	cs_insn *ci = cs_malloc(cs);
	if (!ci)
		return refuse(p, PATCH_NO_MEMORY, "capstone");

	/* 1. Decode whole instructions until the jump fits. */
	struct decoded_insn insns[RELOC_MAX_INSNS];
	unsigned n = 0, len = 0;
	bool ends_flow = false;
	while (len < RELOC_JMP_LEN) {
		if (n == RELOC_MAX_INSNS || len >= func_size) {
			refuse(p, PATCH_TOO_SMALL, "%u bytes of instructions", len);
			goto out;
		}
		struct decoded_insn *in = &insns[n];
		if (!x86_decode(cs, ci, code + len, func_size - len, func_addr + len, in)) {
			refuse(p, PATCH_UNDECODABLE, "undecodable byte 0x%02x at +%u", code[len], len);
			goto out;
		}
		p->orig_off[n] = (uint8_t)len;
		len += in->len;
		n++;
		if (in->flow == FLOW_RET || in->flow == FLOW_JMP || in->flow == FLOW_STOP) {
			ends_flow = true;
			break;
		}
	}
	if (len < RELOC_JMP_LEN) {
		/* Control flow ended before 5 bytes: the jump would spill past this instruction. */
		refuse(p, len == func_size ? PATCH_TOO_SMALL : PATCH_RET_IN_PATCH,
		       "'%s' ends control flow at +%u", insns[n - 1].text, len);
		goto out;
	}
	if (ends_flow && len != func_size) {
		/* A ret/jmp inside the overwritten bytes that is not the function's own end: bytes after
		 * it may be reached from elsewhere (a shared tail, a jump table); not provably safe. */
		refuse(p, PATCH_RET_IN_PATCH, "'%s' at +%u before the function's end",
		       insns[n - 1].text, p->orig_off[n - 1]);
		goto out;
	}
	p->patch_len = len;
	p->n_insns = n;
	p->orig_off[n] = (uint8_t)len;

	/* 2. Nothing may branch into bytes 1..len-1. */
	if (scan_body(cs, ci, code, func_addr, func_size, len, p) != 0)
		goto out;

	/* 3. Re-encode each instruction for its new address. */
	unsigned o = 0;
	for (unsigned i = 0; i < n; i++) {
		const struct decoded_insn *in = &insns[i];
		uint64_t at = copy_addr + o;
		uint8_t *dst = p->code + o;
		p->new_off[i] = (uint8_t)o;
		if (o + 16 > RELOC_MAX_CODE - 14) {
			refuse(p, PATCH_UNRELOCATABLE, "relocated code too long");
			goto out;
		}
		if (in->rip_unknown) {
			refuse(p, PATCH_UNRELOCATABLE, "'%s' at +%u: RIP operand not located",
			       in->text, p->orig_off[i]);
			goto out;
		}
		switch (in->flow) {
		case FLOW_LOOP:
		case FLOW_XBEGIN:
			refuse(p, PATCH_UNRELOCATABLE, "'%s' at +%u", in->text, p->orig_off[i]);
			goto out;
		case FLOW_JMP:
			if (in->target > func_addr && in->target < func_addr + len) {
				refuse(p, PATCH_BRANCH_INTO_PATCH, "'%s' at +%u", in->text, p->orig_off[i]);
				goto out;
			}
			o += emit_jmp(dst, at, in->target);
			break;
		case FLOW_JCC:
			if (in->target > func_addr && in->target < func_addr + len) {
				refuse(p, PATCH_BRANCH_INTO_PATCH, "'%s' at +%u", in->text, p->orig_off[i]);
				goto out;
			}
			o += emit_jcc(dst, at, in->cc, in->target);
			break;
		case FLOW_CALL:
			o += emit_call(dst, at, in->target);
			break;
		default:
			memcpy(dst, in->bytes, in->len);
			if (in->rip_disp_off) {
				int32_t disp;
				memcpy(&disp, in->bytes + in->rip_disp_off, 4);
				uint64_t target = in->addr + in->len + (int64_t)disp;
				int64_t nd = (int64_t)(target - (at + in->len));
				if (!fits_i32(nd)) {
					refuse(p, PATCH_OUT_OF_RANGE, "'%s' at +%u: RIP target too far",
					       in->text, p->orig_off[i]);
					goto out;
				}
				int32_t d = (int32_t)nd;
				memcpy(dst + in->rip_disp_off, &d, 4);
			}
			o += in->len;
			break;
		}
	}
	p->new_off[n] = (uint8_t)o;
	/* 4. Back to the first byte we did not overwrite, unless the copy already ended (a tail jmp
	 *    or the function's final ret). */
	if (!ends_flow)
		o += emit_jmp(p->code + o, copy_addr + o, func_addr + len);
	p->code_len = o;
	p->status = PATCH_OK;
out:
	cs_free(ci, 1);
	return p->status;
}
