#include "x86_insn.h"

#include <stdio.h>
#include <string.h>

int x86_open(csh *cs)
{
	if (cs_open(CS_ARCH_X86, CS_MODE_64, cs) != CS_ERR_OK)
		return -1;
	cs_option(*cs, CS_OPT_DETAIL, CS_OPT_ON);
	return 0;
}

static bool is_legacy_prefix(uint8_t b)
{
	switch (b) {
	case 0x66: case 0x67: case 0xf0: case 0xf2: case 0xf3:
	case 0x2e: case 0x36: case 0x3e: case 0x26: case 0x64: case 0x65:
		return true;
	}
	return false;
}

static int64_t read_rel(const uint8_t *p, unsigned size)
{
	if (size == 1)
		return (int8_t)p[0];
	if (size == 2) {
		int16_t h;
		memcpy(&h, p, 2);
		return h;
	}
	int32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* Classify control flow from the opcode bytes. Direct branches in 64-bit mode have their
 * relative displacement as the last 1 or 4 bytes of the instruction. */
static void classify_flow(struct decoded_insn *in)
{
	const uint8_t *p = in->bytes, *end = in->bytes + in->len;
	while (p < end && is_legacy_prefix(*p))
		p++;
	if (p < end && (*p & 0xf0) == 0x40) /* REX */
		p++;
	if (p >= end)
		return;
	uint64_t next = in->addr + in->len;
	uint8_t op = p[0];
	/* The displacement of a near jmp/jcc/call is what follows the opcode: 4 bytes, or 2 when
	 * an 0x66 prefix makes Capstone (and AMD CPUs) read rel16 where Intel CPUs read rel32.
	 * Compilers never emit that; such an instruction cannot be moved: rip_unknown. */
	unsigned rel = (unsigned)(end - p) - (op == 0x0f ? 2 : 1);
	if ((op == 0xe8 || op == 0xe9 || (op == 0x0f && p + 1 < end && p[1] >= 0x80 && p[1] <= 0x8f)) && rel != 4) {
		in->rip_unknown = true;
		if (rel != 2)
			rel = 4;
	}
	if (op == 0xeb || op == 0xe9) {
		in->flow = FLOW_JMP;
		in->target = next + read_rel(end - (op == 0xeb ? 1 : rel), op == 0xeb ? 1 : rel);
	} else if (op >= 0x70 && op <= 0x7f) {
		in->flow = FLOW_JCC;
		in->cc = op & 0x0f;
		in->target = next + read_rel(end - 1, 1);
	} else if (op == 0x0f && p + 1 < end && p[1] >= 0x80 && p[1] <= 0x8f) {
		in->flow = FLOW_JCC;
		in->cc = p[1] & 0x0f;
		in->target = next + read_rel(end - rel, rel);
	} else if (op == 0xe8) {
		in->flow = FLOW_CALL;
		in->target = next + read_rel(end - rel, rel);
	} else if (op >= 0xe0 && op <= 0xe3) {
		in->flow = FLOW_LOOP;
		in->target = next + read_rel(end - 1, 1);
	} else if (op == 0xc7 && p + 1 < end && p[1] == 0xf8) {
		in->flow = FLOW_XBEGIN;
		in->target = next + read_rel(end - 4, 4);
	} else if (op == 0xc3 || op == 0xc2 || op == 0xcb || op == 0xca) {
		in->flow = FLOW_RET;
	} else if (op == 0xf4 || op == 0xcc || (op == 0x0f && p + 1 < end && p[1] == 0x0b)) {
		in->flow = FLOW_STOP; /* hlt, int3, ud2 */
	} else if (op == 0xff && p + 1 < end) {
		unsigned reg = (p[1] >> 3) & 7;
		if (reg == 4 || reg == 5) /* jmp r/m, jmp far */
			in->flow = FLOW_STOP;
	}
}

bool x86_decode(csh cs, cs_insn *insn_buf, const uint8_t *code, size_t avail, uint64_t addr,
                struct decoded_insn *out)
{
	const uint8_t *c = code;
	size_t size = avail;
	uint64_t a = addr;
	memset(out, 0, sizeof(*out));
	if (!cs_disasm_iter(cs, &c, &size, &a, insn_buf))
		return false;
	out->addr = addr;
	out->len = (uint8_t)insn_buf->size;
	out->bytes = code;
	snprintf(out->text, sizeof(out->text), "%.15s %.46s", insn_buf->mnemonic, insn_buf->op_str);
	classify_flow(out);
	/* RIP-relative addressing: ModRM mod=00 rm=101 means [rip+disp32] in 64-bit mode. Read it
	 * from the ModRM byte itself rather than trusting operand lists, which miss some forms.
	 * The displacement is always 32 bits there; Capstone 4 reports disp_size 2 when the
	 * instruction has an operand-size prefix (0x66, or VEX/EVEX pp=66: movdqa, pxor, xorpd...),
	 * so only its offset is used. */
	const cs_x86 *x = &insn_buf->detail->x86;
	if (x->encoding.modrm_offset != 0) {
		uint8_t modrm = code[x->encoding.modrm_offset];
		if ((modrm & 0xc7) == 0x05 && x->encoding.disp_offset != 0 &&
		    x->encoding.disp_offset + 4u <= out->len)
			out->rip_disp_off = x->encoding.disp_offset;
	}
	/* Belt and braces: an operand whose base is RIP must have been found above. */
	for (unsigned i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_MEM && x->operands[i].mem.base == X86_REG_RIP &&
		    out->rip_disp_off == 0)
			out->rip_unknown = true;
	return true;
}
