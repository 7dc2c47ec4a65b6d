/* Unit tests of the relocation planner (src/trampoline/relocate.c, x86_insn.c): hand-assembled
 * functions, the patch length and status the planner must choose, and the exact bytes of the
 * relocated copy. The function lives at FUNC; its copy 64 KiB after it (COPY) as the agent
 * places it, or 4 GiB after it (FAR), out of rel32 reach. */
#include "unit.h"

#include "patch_status_map.h"
#include "relocate.h"
#include "x86_insn.h"

#define FUNC 0x00007f1200001000ull
#define COPY (FUNC + 0x10000)
#define FAR (FUNC + 0x100000000ull)

static csh cs;

static int plan(const uint8_t *code, size_t size, uint64_t copy, struct reloc_plan *p)
{
	return reloc_plan(cs, code, FUNC, size, copy, p);
}

static void put32(uint8_t *o, int64_t v)
{
	int32_t x = (int32_t)v;
	memcpy(o, &x, 4);
}

/* e9 rel32 at `at`, to `to` */
static unsigned jmp32(uint8_t *o, uint64_t at, uint64_t to)
{
	o[0] = 0xe9;
	put32(o + 1, (int64_t)(to - (at + 5)));
	return 5;
}

/* jmp qword ptr [rip+0]; .quad to */
static unsigned jmpabs(uint8_t *o, uint64_t to)
{
	static const uint8_t ind[6] = {0xff, 0x25, 0, 0, 0, 0};
	memcpy(o, ind, 6);
	memcpy(o + 6, &to, 8);
	return 14;
}

static const char *status_name(int s)
{
	return s >= 0 && s < PATCH_STATUS_COUNT ? patch_status_name(s) : "?";
}

#define CHECK_STATUS(p, want)                                                                      \
	CHECK((p).status == (want), "status %d (%s: %s), want %d (%s)", (p).status,              \
	      status_name((p).status), (p).detail, (want), status_name(want))

/* ---- what gets patched, and the copy ---------------------------------------------------- */

/* The libcuda 580 entry: 672 of its 682 exports start like this. */
static void libcuda_580_prologue(void)
{
	static const uint8_t f[] = {
	    0x55,                                                       /*  0: push rbp */
	    0x48, 0x89, 0xe5,                                           /*  1: mov rbp, rsp */
	    0x41, 0x54,                                                 /*  4: push r12 */
	    0x48, 0x83, 0xec, 0x08,                                     /*  6: sub rsp, 8 */
	    0x81, 0x3d, 0x34, 0x12, 0x00, 0x00, 0x78, 0x56, 0x34, 0x12, /* 10: cmp dword ptr [rip+0x1234], 0x12345678 */
	    0x0f, 0x84, 0x20, 0x00, 0x00, 0x00,                         /* 20: je +0x20 (-> 58) */
	    0xff, 0x15, 0x00, 0x10, 0x00, 0x00,                         /* 26: call qword ptr [rip+0x1000] */
	    0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, /* 32: nop x26 */
	    0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
	    0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
	    0x48, 0x83, 0xc4, 0x08,                                     /* 58: add rsp, 8 */
	    0x41, 0x5c,                                                 /* 62: pop r12 */
	    0x5d,                                                       /* 64: pop rbp */
	    0xc3,                                                       /* 65: ret */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_OK);
	CHECK(p.patch_len == 6, "patch_len %u", p.patch_len);
	CHECK(p.n_insns == 3, "n_insns %u", p.n_insns);
	static const uint8_t orig_off[] = {0, 1, 4, 6};
	CHECK_BYTES(p.orig_off, orig_off, 4);
	CHECK_BYTES(p.new_off, orig_off, 4); /* copied verbatim: same offsets */
	uint8_t want[11];
	memcpy(want, f, 6);                  /* push rbp; mov rbp, rsp; push r12 */
	jmp32(want + 6, COPY + 6, FUNC + 6); /* back to sub rsp, 8 */
	CHECK(p.code_len == 11, "code_len %u", p.code_len);
	CHECK_BYTES(p.code, want, 11);
}

/* A 6-byte function: the mov is moved, the ret stays where it is. */
static void mov_eax_imm_ret(void)
{
	static const uint8_t f[] = {
	    0xb8, 0x22, 0x00, 0x00, 0x00, /* 0: mov eax, 0x22 */
	    0xc3,                         /* 5: ret */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_OK);
	CHECK(p.patch_len == 5, "patch_len %u", p.patch_len);
	static const uint8_t want[] = {
	    0xb8, 0x22, 0x00, 0x00, 0x00, /* mov eax, 0x22 */
	    0xe9, 0xfb, 0xff, 0xfe, 0xff, /* jmp FUNC+5: 5 - (0x10000 + 5 + 5) = -0x10005 */
	};
	CHECK(p.code_len == sizeof(want), "code_len %u", p.code_len);
	CHECK_BYTES(p.code, want, sizeof(want));
}

/* mov eax, [rip+0x100]: the displacement is recomputed for the copy's address. */
static void rip_relative_mov(void)
{
	static const uint8_t f[] = {
	    0x8b, 0x05, 0x00, 0x01, 0x00, 0x00, /* 0: mov eax, [rip+0x100] (FUNC+0x106) */
	    0x83, 0xc0, 0x01,                   /* 6: add eax, 1 */
	    0xc3,                               /* 9: ret */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_OK);
	CHECK(p.patch_len == 6, "patch_len %u", p.patch_len);
	static const uint8_t want[] = {
	    0x8b, 0x05, 0x00, 0x01, 0xff, 0xff, /* mov eax, [rip-0xff00]: (FUNC+0x106) - (COPY+6) */
	    0xe9, 0xfb, 0xff, 0xfe, 0xff,       /* jmp FUNC+6: 6 - (0x10000 + 6 + 5) = -0x10005 */
	};
	CHECK(p.code_len == sizeof(want), "code_len %u", p.code_len);
	CHECK_BYTES(p.code, want, sizeof(want));
}

static void rip_relative_lea(void)
{
	static const uint8_t f[] = {
	    0x48, 0x8d, 0x05, 0x00, 0x00, 0x20, 0x00, /* 0: lea rax, [rip+0x200000] */
	    0xc3,                                     /* 7: ret */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_OK);
	CHECK(p.patch_len == 7, "patch_len %u", p.patch_len);
	static const uint8_t want[] = {
	    0x48, 0x8d, 0x05, 0x00, 0x00, 0x1f, 0x00, /* lea rax, [rip+0x1f0000]: 0x200000 - 0x10000 */
	    0xe9, 0xfb, 0xff, 0xfe, 0xff,             /* jmp FUNC+7 */
	};
	CHECK(p.code_len == sizeof(want), "code_len %u", p.code_len);
	CHECK_BYTES(p.code, want, sizeof(want));
}

/* An immediate after the displacement stays; only disp32 changes. */
static void rip_relative_with_imm(void)
{
	static const uint8_t f[] = {
	    0x81, 0x3d, 0x34, 0x12, 0x00, 0x00, 0x78, 0x56, 0x34, 0x12, /* 0: cmp dword ptr [rip+0x1234], 0x12345678 */
	    0xc3,                                                       /* 10: ret */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_OK);
	static const uint8_t want[] = {
	    0x81, 0x3d, 0x34, 0x12, 0xff, 0xff, 0x78, 0x56, 0x34, 0x12, /* [rip+0x1234-0x10000] */
	    0xe9, 0xfb, 0xff, 0xfe, 0xff,                               /* jmp FUNC+10 */
	};
	CHECK(p.code_len == sizeof(want), "code_len %u", p.code_len);
	CHECK_BYTES(p.code, want, sizeof(want));
}

/* cmp edi, 1; je rel8: the je is widened to 0f 84 rel32 with the same target. */
static void jcc_rel8_widened(void)
{
	static const uint8_t f[] = {
	    0x83, 0xff, 0x01,             /*  0: cmp edi, 1 */
	    0x74, 0x10,                   /*  3: je +0x10 (-> 21) */
	    0x31, 0xc0,                   /*  5: xor eax, eax */
	    0xc3,                         /*  7: ret */
	    0x90, 0x90, 0x90, 0x90, 0x90, /*  8: nop x13 */
	    0x90, 0x90, 0x90, 0x90, 0x90,
	    0x90, 0x90, 0x90,
	    0xb8, 0x01, 0x00, 0x00, 0x00, /* 21: mov eax, 1 */
	    0xc3,                         /* 26: ret */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_OK);
	CHECK(p.patch_len == 5, "patch_len %u", p.patch_len);
	static const uint8_t want[] = {
	    0x83, 0xff, 0x01,                   /* cmp edi, 1 */
	    0x0f, 0x84, 0x0c, 0x00, 0xff, 0xff, /* je FUNC+21: 21 - (0x10000 + 9) = -0xfff4 */
	    0xe9, 0xf7, 0xff, 0xfe, 0xff,       /* jmp FUNC+5: 5 - (0x10000 + 14) = -0x10009 */
	};
	static const uint8_t new_off[] = {0, 3, 9};
	CHECK_BYTES(p.new_off, new_off, 3);
	CHECK(p.code_len == sizeof(want), "code_len %u", p.code_len);
	CHECK_BYTES(p.code, want, sizeof(want));
}

/* A jcc that already has rel32 keeps its target. */
static void jcc_rel32_retargeted(void)
{
	static const uint8_t f[] = {
	    0x85, 0xff,                         /* 0: test edi, edi */
	    0x0f, 0x85, 0x00, 0x02, 0x00, 0x00, /* 2: jne +0x200 (-> 0x208, past the end: a tail) */
	    0xc3,                               /* 8: ret */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_OK);
	CHECK(p.patch_len == 8, "patch_len %u", p.patch_len);
	uint8_t want[13] = {0x85, 0xff, 0x0f, 0x85};
	put32(want + 4, (int64_t)((FUNC + 0x208) - (COPY + 8)));
	jmp32(want + 8, COPY + 8, FUNC + 8);
	CHECK(p.code_len == sizeof(want), "code_len %u", p.code_len);
	CHECK_BYTES(p.code, want, sizeof(want));
}

/* jmp rel8 first: control leaves after 2 bytes, the jump would overwrite what follows. */
static void jmp_rel8_at_start(void)
{
	static const uint8_t f[] = {
	    0xeb, 0x03,       /* 0: jmp +3 (-> 5) */
	    0x90, 0x90, 0x90, /* 2: nop x3 */
	    0x31, 0xc0,       /* 5: xor eax, eax */
	    0xc3,             /* 7: ret */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_RET_IN_PATCH);
}

/* A tail jmp rel8 that ends a 5-byte function: widened to e9 rel32, no jump back. */
static void tail_jmp_rel8_widened(void)
{
	static const uint8_t f[] = {
	    0x31, 0xc0, /* 0: xor eax, eax */
	    0x90,       /* 2: nop */
	    0xeb, 0x10, /* 3: jmp +0x10 (-> 21, another function) */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_OK);
	CHECK(p.patch_len == 5, "patch_len %u", p.patch_len);
	uint8_t want[8] = {0x31, 0xc0, 0x90};
	jmp32(want + 3, COPY + 3, FUNC + 21);
	CHECK(p.code_len == sizeof(want), "code_len %u", p.code_len);
	CHECK_BYTES(p.code, want, sizeof(want));
	CHECK(p.new_off[p.n_insns] == p.code_len, "no jump back expected");
}

/* call rel32 first: re-aimed at the same callee, which returns into the copy. */
static void call_rel32_at_start(void)
{
	static const uint8_t f[] = {
	    0xe8, 0x00, 0x01, 0x00, 0x00, /* 0: call +0x100 (-> FUNC+0x105) */
	    0x48, 0x83, 0xc4, 0x08,       /* 5: add rsp, 8 */
	    0xc3,                         /* 9: ret */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_OK);
	CHECK(p.patch_len == 5, "patch_len %u", p.patch_len);
	static const uint8_t want[] = {
	    0xe8, 0x00, 0x01, 0xff, 0xff, /* call FUNC+0x105: 0x105 - (0x10000 + 5) = -0xff00 */
	    0xe9, 0xfb, 0xff, 0xfe, 0xff, /* jmp FUNC+5 */
	};
	CHECK(p.code_len == sizeof(want), "code_len %u", p.code_len);
	CHECK_BYTES(p.code, want, sizeof(want));
}

static void endbr64_first(void)
{
	static const uint8_t f[] = {
	    0xf3, 0x0f, 0x1e, 0xfa, /* 0: endbr64 */
	    0x55,                   /* 4: push rbp */
	    0x48, 0x89, 0xe5,       /* 5: mov rbp, rsp */
	    0x5d,                   /* 8: pop rbp */
	    0xc3,                   /* 9: ret */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_OK);
	CHECK(p.patch_len == 5, "patch_len %u", p.patch_len);
	uint8_t want[10];
	memcpy(want, f, 5);
	jmp32(want + 5, COPY + 5, FUNC + 5);
	CHECK(p.code_len == sizeof(want), "code_len %u", p.code_len);
	CHECK_BYTES(p.code, want, sizeof(want));
}

/* VEX: vmovdqu ymm0, [rip+0x1000]. */
static void vex_rip_relative(void)
{
	static const uint8_t f[] = {
	    0xc5, 0xfe, 0x6f, 0x05, 0x00, 0x10, 0x00, 0x00, /* 0: vmovdqu ymm0, [rip+0x1000] */
	    0xc3,                                           /* 8: ret */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_OK);
	CHECK(p.patch_len == 8, "patch_len %u", p.patch_len);
	static const uint8_t want[] = {
	    0xc5, 0xfe, 0x6f, 0x05, 0x00, 0x10, 0xff, 0xff, /* [rip+0x1000-0x10000] */
	    0xe9, 0xfb, 0xff, 0xfe, 0xff,                   /* jmp FUNC+8 */
	};
	CHECK(p.code_len == sizeof(want), "code_len %u", p.code_len);
	CHECK_BYTES(p.code, want, sizeof(want));
}

/* An operand-size prefix (0x66, or VEX.pp=66): Capstone 4 misreports the displacement's size
 * as 2 there; it is disp32 all the same and must be rewritten. (Before the fix in x86_insn.c
 * these were refused as "RIP operand not located": 23 exports of libm.) */
static void opsize_prefix_rip_relative(void)
{
	static const uint8_t sse[] = {
	    0x66, 0x0f, 0x6f, 0x05, 0x00, 0x10, 0x00, 0x00, /* 0: movdqa xmm0, [rip+0x1000] */
	    0xc3,                                           /* 8: ret */
	};
	static const uint8_t vex[] = {
	    0xc5, 0xf9, 0x6f, 0x05, 0x00, 0x10, 0x00, 0x00, /* 0: vmovdqa xmm0, [rip+0x1000] */
	    0xc3,                                           /* 8: ret */
	};
	static const uint8_t word[] = {
	    0x66, 0x81, 0x3d, 0x00, 0x10, 0x00, 0x00, 0x34, 0x12, /* 0: cmp word ptr [rip+0x1000], 0x1234 */
	    0xc3,                                                 /* 9: ret */
	};
	const uint8_t *fs[3] = {sse, vex, word};
	const unsigned lens[3] = {sizeof(sse), sizeof(vex), sizeof(word)};
	const unsigned disp_at[3] = {4, 4, 3};
	for (int k = 0; k < 3; k++) {
		struct reloc_plan p;
		plan(fs[k], lens[k], COPY, &p);
		CHECK_STATUS(p, PATCH_OK);
		unsigned n = lens[k] - 1;
		CHECK(p.patch_len == n, "case %d: patch_len %u", k, p.patch_len);
		uint8_t want[16];
		memcpy(want, fs[k], n);
		static const uint8_t d[4] = {0x00, 0x10, 0xff, 0xff}; /* 0x1000 - 0x10000 */
		memcpy(want + disp_at[k], d, 4);
		jmp32(want + n, COPY + n, FUNC + n);
		CHECK(p.code_len == n + 5, "case %d: code_len %u", k, p.code_len);
		CHECK_BYTES(p.code, want, n + 5);
	}
}

/* int3 padding inside the symbol's size after the last instruction is accepted. */
static void int3_padding_at_end(void)
{
	static const uint8_t f[] = {
	    0xb8, 0x01, 0x00, 0x00, 0x00, /* 0: mov eax, 1 */
	    0xc3,                         /* 5: ret */
	    0xcc, 0xcc, 0xcc, 0xcc, 0xcc, /* 6: int3 x10 */
	    0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_OK);
	CHECK(p.patch_len == 5, "patch_len %u", p.patch_len);
	/* a last byte that does not decode on its own (a lone 00) is padding too */
	static const uint8_t g[] = {0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3, 0x00};
	plan(g, sizeof(g), COPY, &p);
	CHECK_STATUS(p, PATCH_OK);
}

/* A 5-byte tail jump followed by int3 padding: refused today, although the patch would only
 * overwrite the jump itself (relocate.c: a ret/jmp inside the overwritten bytes that is not
 * the symbol's last instruction). Pinned so that a change of that policy is deliberate. */
static void tail_jmp_then_padding(void)
{
	static const uint8_t f[] = {
	    0xe9, 0x00, 0x01, 0x00, 0x00, /* 0: jmp +0x100 */
	    0xcc, 0xcc, 0xcc,             /* 5: int3 x3 */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_RET_IN_PATCH);
	/* the same jump as the whole symbol is patched, the copy is the re-aimed jump alone */
	plan(f, 5, COPY, &p);
	CHECK_STATUS(p, PATCH_OK);
	uint8_t want[5];
	jmp32(want, COPY, FUNC + 0x105);
	CHECK(p.code_len == 5, "code_len %u", p.code_len);
	CHECK_BYTES(p.code, want, 5);
}

/* ---- refusals ---------------------------------------------------------------------------- */

/* A loop whose back edge lands inside the overwritten bytes (+4): refused. */
static void loop_into_patch(void)
{
	static const uint8_t f[] = {
	    0x55,             /*  0: push rbp */
	    0x48, 0x89, 0xe5, /*  1: mov rbp, rsp */
	    0x31, 0xc0,       /*  4: xor eax, eax   <- loop head, inside the 6 overwritten bytes */
	    0xff, 0xc0,       /*  6: inc eax */
	    0x83, 0xf8, 0x0a, /*  8: cmp eax, 10 */
	    0x75, 0xf7,       /* 11: jne -9 (-> 4) */
	    0x5d,             /* 13: pop rbp */
	    0xc3,             /* 14: ret */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_BRANCH_INTO_PATCH);
	CHECK(strstr(p.detail, "+4") != NULL, "detail '%s'", p.detail);
	/* the same with the back edge to +1 (the middle of the jump we would write) */
	uint8_t g[sizeof(f)];
	memcpy(g, f, sizeof(f));
	g[12] = 0xf4; /* jne -12 (-> 1) */
	plan(g, sizeof(g), COPY, &p);
	CHECK_STATUS(p, PATCH_BRANCH_INTO_PATCH);
}

/* A jcc in the overwritten bytes aimed inside them. */
static void jcc_in_patch_into_patch(void)
{
	static const uint8_t f[] = {
	    0x85, 0xff, /* 0: test edi, edi */
	    0x74, 0x00, /* 2: je +0 (-> 4) */
	    0x90,       /* 4: nop */
	    0xc3,       /* 5: ret */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_BRANCH_INTO_PATCH);
}

/* Byte 0: a call there is recursion and goes through the hook like any call: allowed. A jump
 * there is a loop: the hook would run on a stack that is not an entry stack: refused (the
 * policy of relocate.c since "Refuse jumps to a function's first byte"). */
static void branch_to_byte0(void)
{
	static const uint8_t rec[] = {
	    0x53,                         /*  0: push rbx */
	    0x89, 0xfb,                   /*  1: mov ebx, edi */
	    0x85, 0xff,                   /*  3: test edi, edi */
	    0x74, 0x0a,                   /*  5: je +10 (-> 17) */
	    0x8d, 0x7f, 0xff,             /*  7: lea edi, [rdi-1] */
	    0xe8, 0xf1, 0xff, 0xff, 0xff, /* 10: call -15 (-> 0: itself) */
	    0x01, 0xd8,                   /* 15: add eax, ebx */
	    0x5b,                         /* 17: pop rbx */
	    0xc3,                         /* 18: ret */
	};
	struct reloc_plan p;
	plan(rec, sizeof(rec), COPY, &p);
	CHECK_STATUS(p, PATCH_OK);
	CHECK(p.patch_len == 5, "patch_len %u", p.patch_len);

	static const uint8_t spin[] = {
	    0xf0, 0xff, 0x0f,       /*  0: lock dec dword ptr [rdi] */
	    0x75, 0x0b,             /*  3: jne +11 (-> 16) */
	    0x31, 0xc0,             /*  5: xor eax, eax */
	    0xc3,                   /*  7: ret */
	    0x90, 0x90, 0x90, 0x90, /*  8: nop x8 */
	    0x90, 0x90, 0x90, 0x90,
	    0xf3, 0x90,             /* 16: pause */
	    0x83, 0x3f, 0x00,       /* 18: cmp dword ptr [rdi], 0 */
	    0x7f, 0xe9,             /* 21: jg -23 (-> 0) */
	    0xeb, 0xf7,             /* 23: jmp -9 (-> 16) */
	};
	plan(spin, sizeof(spin), COPY, &p);
	CHECK_STATUS(p, PATCH_BRANCH_INTO_PATCH);
	CHECK(strstr(p.detail, "+0") != NULL, "detail '%s'", p.detail);
}

static void jrcxz_in_prologue(void)
{
	static const uint8_t f[] = {
	    0x48, 0x89, 0xf8, /*  0: mov rax, rdi */
	    0xe3, 0x05,       /*  3: jrcxz +5 (-> 10) */
	    0x48, 0x01, 0xf0, /*  5: add rax, rsi */
	    0xc3,             /*  8: ret */
	    0x90,             /*  9: nop */
	    0x48, 0x29, 0xf0, /* 10: sub rax, rsi */
	    0xc3,             /* 13: ret */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_UNRELOCATABLE);
}

static void too_small(void)
{
	static const uint8_t f[] = {
	    0x31, 0xc0, /* 0: xor eax, eax */
	    0xc3,       /* 2: ret */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_TOO_SMALL);
	CHECK(p.patch_len == 0, "patch_len %u", p.patch_len);
}

static void ret_in_patch(void)
{
	static const uint8_t f[] = {
	    0x5b,       /* 0: pop rbx */
	    0xc3,       /* 1: ret */
	    0x31, 0xc0, /* 2: xor eax, eax  (more code: another way in, a jump-table target...) */
	    0xc3,       /* 4: ret */
	    0x90, 0x90, /* 5: nop x2 */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_RET_IN_PATCH);
}

static void undecodable_in_body(void)
{
	static const uint8_t f[] = {
	    0xb8, 0x01, 0x00, 0x00, 0x00, /* 0: mov eax, 1 */
	    0xc3,                         /* 5: ret */
	    0x06,                         /* 6: (push es: invalid in 64-bit mode) */
	    0x90,                         /* 7: nop */
	    0xc3,                         /* 8: ret */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_UNDECODABLE);
	CHECK(strstr(p.detail, "+6") != NULL, "detail '%s'", p.detail);
	/* ... and in the first bytes */
	static const uint8_t g[] = {0x55, 0x06, 0x90, 0x90, 0x90, 0xc3};
	plan(g, sizeof(g), COPY, &p);
	CHECK_STATUS(p, PATCH_UNDECODABLE);
}

/* jmp/jcc/call rel with an operand-size prefix: rel16 for Capstone and AMD, rel32 for Intel.
 * Never emitted by compilers; refused rather than guessed (x86_insn.c). */
static void opsize_prefix_branch(void)
{
	static const uint8_t f[] = {
	    0x55,                         /* 0: push rbp */
	    0x66, 0x0f, 0x84, 0x10, 0x20, /* 1: je rel16 (as Capstone reads it) */
	    0x90, 0x90, 0x90, 0x90,       /* 6: nop x4 */
	    0xc3,                         /* 10: ret */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), COPY, &p);
	CHECK_STATUS(p, PATCH_UNRELOCATABLE);
}

/* ---- the copy out of rel32 reach (4 GiB away) -------------------------------------------- */

static void far_rip_relative_refused(void)
{
	static const uint8_t f[] = {
	    0x8b, 0x05, 0x00, 0x01, 0x00, 0x00, /* 0: mov eax, [rip+0x100] */
	    0x83, 0xc0, 0x01,                   /* 6: add eax, 1 */
	    0xc3,                               /* 9: ret */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), FAR, &p);
	CHECK_STATUS(p, PATCH_OUT_OF_RANGE);
}

/* cmp; je rel8 -> jne over an absolute jump; jump back absolute. */
static void far_jcc_absolute(void)
{
	static const uint8_t f[] = {
	    0x83, 0xff, 0x01,             /*  0: cmp edi, 1 */
	    0x74, 0x10,                   /*  3: je +0x10 (-> 21) */
	    0x31, 0xc0,                   /*  5: xor eax, eax */
	    0xc3,                         /*  7: ret */
	    0x90, 0x90, 0x90, 0x90, 0x90, /*  8: nop x13 */
	    0x90, 0x90, 0x90, 0x90, 0x90,
	    0x90, 0x90, 0x90,
	    0xb8, 0x01, 0x00, 0x00, 0x00, /* 21: mov eax, 1 */
	    0xc3,                         /* 26: ret */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), FAR, &p);
	CHECK_STATUS(p, PATCH_OK);
	uint8_t want[33] = {
	    0x83, 0xff, 0x01, /* cmp edi, 1 */
	    0x75, 0x0e,       /* jne +14: over the absolute jump */
	};
	jmpabs(want + 5, FUNC + 21); /* jmp [rip+0]; .quad FUNC+21 */
	jmpabs(want + 19, FUNC + 5); /* jmp [rip+0]; .quad FUNC+5 */
	static const uint8_t new_off[] = {0, 3, 19};
	CHECK_BYTES(p.new_off, new_off, 3);
	CHECK(p.code_len == sizeof(want), "code_len %u", p.code_len);
	CHECK_BYTES(p.code, want, sizeof(want));
}

/* call -> call [rip+2]; jmp +8; .quad target (the callee returns onto the jmp). */
static void far_call_absolute(void)
{
	static const uint8_t f[] = {
	    0xe8, 0x00, 0x01, 0x00, 0x00, /* 0: call +0x100 (-> FUNC+0x105) */
	    0x48, 0x83, 0xc4, 0x08,       /* 5: add rsp, 8 */
	    0xc3,                         /* 9: ret */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), FAR, &p);
	CHECK_STATUS(p, PATCH_OK);
	uint8_t want[30] = {
	    0xff, 0x15, 0x02, 0x00, 0x00, 0x00, /* call qword ptr [rip+2] */
	    0xeb, 0x08,                         /* jmp +8: over the literal */
	};
	uint64_t t = FUNC + 0x105;
	memcpy(want + 8, &t, 8);
	jmpabs(want + 16, FUNC + 5);
	CHECK(p.code_len == sizeof(want), "code_len %u", p.code_len);
	CHECK_BYTES(p.code, want, sizeof(want));
}

static void far_tail_jmp_absolute(void)
{
	static const uint8_t f[] = {
	    0x31, 0xc0, /* 0: xor eax, eax */
	    0x90,       /* 2: nop */
	    0xeb, 0x10, /* 3: jmp +0x10 (-> 21) */
	};
	struct reloc_plan p;
	plan(f, sizeof(f), FAR, &p);
	CHECK_STATUS(p, PATCH_OK);
	uint8_t want[17] = {0x31, 0xc0, 0x90};
	jmpabs(want + 3, FUNC + 21);
	CHECK(p.code_len == sizeof(want), "code_len %u", p.code_len);
	CHECK_BYTES(p.code, want, sizeof(want));
}

/* ---- the jump the patch writes ------------------------------------------------------------ */

static void encode_jmp32(void)
{
	uint8_t o[5];
	CHECK(reloc_encode_jmp32(o, 0x1000, 0x2000) == 0, "in range");
	static const uint8_t want[5] = {0xe9, 0xfb, 0x0f, 0x00, 0x00}; /* 0x2000 - 0x1005 */
	CHECK_BYTES(o, want, 5);
	CHECK(reloc_encode_jmp32(o, 0x1000, 0x1000 + 5 + 0x7fffffffull) == 0, "the farthest forward");
	CHECK(reloc_encode_jmp32(o, 0x1000, 0x1000 + 5 + 0x80000000ull) == -1, "one past it");
	CHECK(reloc_encode_jmp32(o, 0x100000000ull, 0x100000000ull + 5 - 0x80000000ull) == 0, "the farthest back");
	CHECK(reloc_encode_jmp32(o, 0x100000000ull, 0x100000000ull + 4 - 0x80000000ull) == -1, "one past it");
}

int main(void)
{
	if (x86_open(&cs) != 0) {
		printf("capstone: cannot open\n");
		return 1;
	}
	RUN(libcuda_580_prologue);
	RUN(mov_eax_imm_ret);
	RUN(rip_relative_mov);
	RUN(rip_relative_lea);
	RUN(rip_relative_with_imm);
	RUN(jcc_rel8_widened);
	RUN(jcc_rel32_retargeted);
	RUN(jmp_rel8_at_start);
	RUN(tail_jmp_rel8_widened);
	RUN(call_rel32_at_start);
	RUN(endbr64_first);
	RUN(vex_rip_relative);
	RUN(opsize_prefix_rip_relative);
	RUN(int3_padding_at_end);
	RUN(tail_jmp_then_padding);
	RUN(loop_into_patch);
	RUN(jcc_in_patch_into_patch);
	RUN(branch_to_byte0);
	RUN(jrcxz_in_prologue);
	RUN(too_small);
	RUN(ret_in_patch);
	RUN(undecodable_in_body);
	RUN(opsize_prefix_branch);
	RUN(far_rip_relative_refused);
	RUN(far_jcc_absolute);
	RUN(far_call_absolute);
	RUN(far_tail_jmp_absolute);
	RUN(encode_jmp32);
	cs_close(&cs);
	UNIT_EXIT();
}
