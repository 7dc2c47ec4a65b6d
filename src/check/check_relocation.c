/* cuhook-check-relocation LIB...: does the relocator's copy of a prologue do what the original
 * prologue does? For every exported function of each library file, plan the patch as the agent
 * would (copy 64 KiB after the function), then run the overwritten original instructions and
 * the relocated copy under Unicorn from the same random register and memory states and compare
 * everything observable: general-purpose and XMM registers, status flags, every memory write
 * (address, size, value), every data read address outside the copy, and where control leaves
 * (the original: the first address outside the overwritten bytes; the copy: the jump back or a
 * relocated branch's target). docs/relocation.md describes the method and the results. */
#include "emu.h"

#include "elf_file.h"
#include "glob_filter.h"
#include "patch_status_map.h"
#include "relocate.h"
#include "trace_format.h"
#include "x86_insn.h"

#include <capstone.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unicorn/unicorn.h>
#include <unistd.h>

#define MAX_INSNS 64             /* per run; prologues are at most 8 instructions */
#define FLAGS_MASK UINT64_C(0x8d5)     /* CF PF AF ZF SF OF */
#define MAX_RET_POINTS 8

struct opts {
	unsigned seeds;
	uint64_t copy_offset;
	const char *filter;
	int verbose;
	int mutate;
	int skip_missing;
	unsigned max_details;
	unsigned jobs;
	const char *list;            /* --list FILE: these functions instead of the exported ones */
};

struct counts {
	uint64_t functions, planned, patched;
	uint64_t refused[CUHOOK_STATUS_COUNT];
	uint64_t compared;           /* patched functions run under the emulator */
	uint64_t states;             /* register/memory states compared (functions x seeds) */
	uint64_t end_exit, end_fault, end_limit;  /* how the original runs ended */
	uint64_t fault_insn;         /* ... of the faults: an instruction Unicorn does not know */
	uint64_t mismatch_states, mismatch_funcs;
	uint64_t with_rip, with_branch, widened, with_call, abs_fallback, ends_in_copy;
	uint64_t self_call;          /* ... a call into the function itself */
	uint64_t jcc_funcs, jcc_both;  /* prologues with a jcc; both directions seen */
	uint64_t leak_funcs;         /* equal, but an address of the copy was stored (x87 FIP) */
	uint64_t mutated, mutation_caught;
	uint64_t details_printed;
	uint64_t crashed;            /* functions on which Unicorn aborted: not verified */
};

static void add_counts(struct counts *a, const struct counts *b)
{
	uint64_t *x = (uint64_t *)a;
	const uint64_t *y = (const uint64_t *)b;
	for (size_t i = 0; i < sizeof(*a) / sizeof(uint64_t); i++)
		x[i] += y[i];
}

static void hex(FILE *f, const uint8_t *b, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		fprintf(f, "%s%02x", i ? " " : "", b[i]);
}

static void disasm(FILE *f, csh cs, const uint8_t *code, unsigned len, uint64_t addr, const char *indent)
{
	cs_insn *in;
	size_t n = cs_disasm(cs, code, len, addr, 0, &in);
	unsigned done = 0;
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s%#" PRIx64 ":  ", indent, in[i].address);
		hex(f, in[i].bytes, in[i].size);
		fprintf(f, "%*s  %s %s\n", in[i].size < 11 ? (int)(3 * (11 - in[i].size)) : 0, "", in[i].mnemonic,
		        in[i].op_str);
		done += in[i].size;
	}
	if (n)
		cs_free(in, n);
	if (done < len) {
		fprintf(f, "%s(%u more bytes) ", indent, len - done);
		hex(f, code + done, len - done);
		fprintf(f, "\n");
	}
}

/* Everything needed to compare the two runs of one function. */
struct func_ctx {
	const char *lib, *name;
	uint64_t func, copy;
	const struct reloc_plan *p;
	const uint8_t *orig;
	uint64_t ret_orig[MAX_RET_POINTS], ret_copy[MAX_RET_POINTS];
	unsigned nret;
};

/* An address in the copy, as the corresponding address in the original: an instruction start
 * or a call's return point. Others are returned unchanged. *is_ret says which kind it was. */
static uint64_t to_orig(const struct func_ctx *c, uint64_t a, bool *is_ret)
{
	const struct reloc_plan *p = c->p;
	if (is_ret)
		*is_ret = false;
	if (a < c->copy || a > c->copy + p->code_len)
		return a;
	for (unsigned i = 0; i < c->nret; i++)
		if (a == c->ret_copy[i]) {
			if (is_ret)
				*is_ret = true;
			return c->ret_orig[i];
		}
	for (unsigned i = 0; i <= p->n_insns; i++)
		if (a == c->copy + p->new_off[i])
			return c->func + p->orig_off[i];
	return a;
}

/* A value the copy wrote, as the original would have written it. A call's return address is
 * expected to differ (the callee returns into the copy). Any other address of the copy that
 * shows up in memory is translated too but reported: *leak. The x87 unit does this: fnstenv
 * and fnsave store the address of the last x87 instruction, 32 bits of it in their 32-bit
 * format. */
static uint64_t value_as_orig(const struct func_ctx *c, uint64_t v, uint32_t size, bool *leak)
{
	bool is_ret;
	if (size == 8) {
		uint64_t t = to_orig(c, v, &is_ret);
		if (t != v && !is_ret)
			*leak = true;
		return t;
	}
	if (size == 4 && (c->copy >> 32) == (c->func >> 32)) {
		uint64_t t = to_orig(c, (c->copy & ~0xffffffffull) | v, &is_ret);
		if ((uint32_t)t != (uint32_t)v) {
			*leak = true;
			return (uint32_t)t;
		}
	}
	return v;
}

static bool in_copy(const struct func_ctx *c, uint64_t a)
{
	return a >= c->copy && a < c->copy + c->p->code_len;
}

static const char *end_name(int end)
{
	return end == EMU_EXIT ? "exit" : end == EMU_FAULT ? "fault" : "limit";
}

/* Compare; on a difference, describe it into `why` and return false. */
static bool same(const struct func_ctx *c, const struct emu_result *o, const struct emu_result *n,
                 char *why, size_t wl, bool *leak)
{
	uint64_t naddr = to_orig(c, n->addr, NULL);
	if (o->end != n->end || o->addr != naddr || (o->end == EMU_FAULT && o->err != n->err)) {
		snprintf(why, wl, "original: %s at %#" PRIx64 "%s%s; copy: %s at %#" PRIx64 " (as original %#" PRIx64 ")%s%s",
		         end_name(o->end), o->addr, o->end == EMU_FAULT ? ", " : "",
		         o->end == EMU_FAULT ? emu_strerror(o->err) : "", end_name(n->end), n->addr, naddr,
		         n->end == EMU_FAULT ? ", " : "", n->end == EMU_FAULT ? emu_strerror(n->err) : "");
		return false;
	}
	for (unsigned i = 0; i < EMU_NGPR; i++)
		if (o->gpr[i] != n->gpr[i]) {
			snprintf(why, wl, "%s: original %#" PRIx64 ", copy %#" PRIx64, emu_gpr_name(i), o->gpr[i], n->gpr[i]);
			return false;
		}
	if ((o->rflags ^ n->rflags) & FLAGS_MASK) {
		snprintf(why, wl, "rflags: original %#" PRIx64 ", copy %#" PRIx64, o->rflags & FLAGS_MASK,
		         n->rflags & FLAGS_MASK);
		return false;
	}
	for (unsigned i = 0; i < EMU_NXMM; i++)
		if (o->xmm[i][0] != n->xmm[i][0] || o->xmm[i][1] != n->xmm[i][1]) {
			snprintf(why, wl, "xmm%u differs", i);
			return false;
		}
	if (o->mxcsr != n->mxcsr || o->fpsw != n->fpsw || o->fpcw != n->fpcw || o->fptag != n->fptag ||
	    memcmp(o->st, n->st, sizeof(o->st)) != 0) {
		snprintf(why, wl, "x87/SSE state: original mxcsr %#" PRIx64 " fsw %#x fcw %#x ftw %#x, copy mxcsr %#" PRIx64
		         " fsw %#x fcw %#x ftw %#x%s", o->mxcsr, o->fpsw, o->fpcw, o->fptag, n->mxcsr, n->fpsw, n->fpcw,
		         n->fptag, memcmp(o->st, n->st, sizeof(o->st)) ? ", st(i) differ" : "");
		return false;
	}
	if (o->nwrites != n->nwrites) {
		snprintf(why, wl, "memory writes: original %u, copy %u", o->nwrites, n->nwrites);
		return false;
	}
	for (unsigned i = 0; i < o->nwrites; i++) {
		const struct emu_access *a = &o->writes[i], *b = &n->writes[i];
		uint64_t bv = value_as_orig(c, b->value, b->size, leak);
		if (a->addr != b->addr || a->size != b->size || a->value != bv) {
			snprintf(why, wl,
			         "write %u: original %u bytes %#" PRIx64 " at %#" PRIx64 ", copy %u bytes %#" PRIx64
			         " (as original %#" PRIx64 ") at %#" PRIx64,
			         i, a->size, a->value, a->addr, b->size, b->value, bv, b->addr);
			return false;
		}
	}
	/* Reads: the copy also reads its own literals (absolute jumps); leave those out. */
	unsigned j = 0;
	for (unsigned i = 0; i < o->nreads; i++, j++) {
		while (j < n->nreads && in_copy(c, n->reads[j].addr))
			j++;
		if (j == n->nreads || o->reads[i].addr != n->reads[j].addr || o->reads[i].size != n->reads[j].size) {
			snprintf(why, wl, "read %u: original %u bytes at %#" PRIx64 ", copy %s", i, o->reads[i].size,
			         o->reads[i].addr, j == n->nreads ? "none" : "other");
			if (j < n->nreads)
				snprintf(why + strlen(why), wl - strlen(why), " %u bytes at %#" PRIx64, n->reads[j].size,
				         n->reads[j].addr);
			return false;
		}
	}
	while (j < n->nreads && in_copy(c, n->reads[j].addr))
		j++;
	if (j != n->nreads) {
		snprintf(why, wl, "copy reads %u bytes at %#" PRIx64 " that the original does not", n->reads[j].size,
		         n->reads[j].addr);
		return false;
	}
	if (o->overflow != n->overflow) {
		snprintf(why, wl, "access log overflow differs");
		return false;
	}
	return true;
}

static void print_mismatch(csh cs, const struct func_ctx *c, uint64_t seed, const struct emu_state *st,
                           const struct emu_result *o, const struct emu_result *n, const char *why)
{
	const struct reloc_plan *p = c->p;
	printf("MISMATCH %s: %s at %#" PRIx64 " (seed %" PRIu64 "): %s\n", c->lib, c->name, c->func, seed, why);
	printf("  original (%u bytes overwritten):\n", p->patch_len);
	disasm(stdout, cs, c->orig, p->patch_len, c->func, "    ");
	printf("  copy at %#" PRIx64 " (%u bytes):\n", c->copy, p->code_len);
	disasm(stdout, cs, p->code, p->code_len, c->copy, "    ");
	printf("  start:");
	for (unsigned i = 0; i < EMU_NGPR; i++)
		printf("%s %s=%#" PRIx64, i % 4 ? "" : "\n   ", emu_gpr_name(i), st->gpr[i]);
	printf("\n    rflags=%#" PRIx64 "\n", st->rflags);
	const struct emu_result *rs[2] = {o, n};
	for (int k = 0; k < 2; k++) {
		const struct emu_result *r = rs[k];
		printf("  %s: %s at %#" PRIx64 " after %u instructions%s%s\n", k ? "copy" : "original", end_name(r->end),
		       r->addr, r->ninsns, r->end == EMU_FAULT ? ": " : "", r->end == EMU_FAULT ? emu_strerror(r->err) : "");
		for (unsigned i = 0; i < r->nwrites; i++)
			printf("    write %u bytes %#" PRIx64 " at %#" PRIx64 "\n", r->writes[i].size, r->writes[i].value,
			       r->writes[i].addr);
		for (unsigned i = 0; i < r->nreads; i++)
			printf("    read %u bytes at %#" PRIx64 "\n", r->reads[i].size, r->reads[i].addr);
	}
}

/* Immediates of the original instructions, for register and memory values that make compares
 * come out both ways. */
static unsigned prologue_values(csh cs, const uint8_t *code, unsigned len, uint64_t addr, uint64_t *v)
{
	unsigned nv = 0;
	v[nv++] = 0;
	cs_insn *in;
	size_t n = cs_disasm(cs, code, len, addr, 0, &in);
	for (size_t i = 0; i < n; i++) {
		const cs_x86 *x = &in[i].detail->x86;
		for (unsigned k = 0; k < x->op_count && nv < EMU_MAX_VALUES; k++)
			if (x->operands[k].type == X86_OP_IMM)
				v[nv++] = (uint64_t)x->operands[k].imm;
	}
	if (n)
		cs_free(in, n);
	return nv;
}

/* Return points of the calls in `code`: the address after each call instruction. */
static unsigned call_returns(csh cs, const uint8_t *code, unsigned len, uint64_t addr, uint64_t *out)
{
	unsigned nr = 0;
	cs_insn *in;
	size_t n = cs_disasm(cs, code, len, addr, 0, &in);
	for (size_t i = 0; i < n; i++)
		if (in[i].id == X86_INS_CALL && nr < MAX_RET_POINTS)
			out[nr++] = in[i].address + in[i].size;
	if (n)
		cs_free(in, n);
	return nr;
}

/* --mutate: change the copy so that it must behave differently; the checker has to notice.
 * Returns false if there is nothing to change (a copy that is the verbatim final instruction
 * and no jump back). */
static bool mutate(csh cs, const uint8_t *orig, uint64_t func, struct reloc_plan *p)
{
	cs_insn *ci = cs_malloc(cs);
	bool done = false;
	/* 1. a RIP-relative displacement, 8 bytes further */
	for (unsigned i = 0; i < p->n_insns && !done; i++) {
		struct decoded_insn in;
		if (x86_decode(cs, ci, orig + p->orig_off[i], p->patch_len - p->orig_off[i], func + p->orig_off[i], &in) &&
		    in.flow == FLOW_NONE && in.rip_disp_off) {
			int32_t d;
			memcpy(&d, p->code + p->new_off[i] + in.rip_disp_off, 4);
			d += 8;
			memcpy(p->code + p->new_off[i] + in.rip_disp_off, &d, 4);
			done = true;
		}
	}
	/* 2. a relocated jcc: the opposite condition */
	for (unsigned i = 0; i < p->n_insns && !done; i++) {
		uint8_t *b = p->code + p->new_off[i];
		if (b[0] == 0x0f && (b[1] & 0xf0) == 0x80) {
			b[1] ^= 1;
			done = true;
		} else if ((b[0] & 0xf0) == 0x70) {
			b[0] ^= 1;
			done = true;
		}
	}
	/* 3. a relocated call (the run stops at its target, before any jump back) or tail jmp: one
	 *    byte further */
	for (unsigned i = 0; i < p->n_insns && !done; i++) {
		uint8_t *b = p->code + p->new_off[i];
		unsigned n = p->new_off[i + 1] - p->new_off[i];
		if ((b[0] == 0xe8 || b[0] == 0xe9) && n == 5) {
			int32_t d;
			memcpy(&d, b + 1, 4);
			d += 1;
			memcpy(b + 1, &d, 4);
			done = true;
		} else if (b[0] == 0xff && b[1] == 0x15 && b[2] == 0x02 && b[6] == 0xeb && n == 16) {
			uint64_t t;
			memcpy(&t, b + 8, 8);
			t += 1;
			memcpy(b + 8, &t, 8);
			done = true;
		} else if (b[0] == 0xff && b[1] == 0x25 && n == 14) {
			uint64_t t;
			memcpy(&t, b + 6, 8);
			t += 1;
			memcpy(b + 6, &t, 8);
			done = true;
		}
	}
	/* 4. the jump back, one byte further */
	if (!done && p->new_off[p->n_insns] < p->code_len && p->code[p->new_off[p->n_insns]] == 0xe9) {
		int32_t d;
		memcpy(&d, p->code + p->new_off[p->n_insns] + 1, 4);
		d += 1;
		memcpy(p->code + p->new_off[p->n_insns] + 1, &d, 4);
		done = true;
	} else if (!done && p->code_len - p->new_off[p->n_insns] == 14) {
		uint64_t t; /* the absolute jump back's literal */
		memcpy(&t, p->code + p->new_off[p->n_insns] + 6, 8);
		t += 1;
		memcpy(p->code + p->new_off[p->n_insns] + 6, &t, 8);
		done = true;
	}
	cs_free(ci, 1);
	return done;
}

static void check_function(csh cs, struct emu *em, const struct opts *o, const struct elf_file *ef,
                           const struct elf_func *fn, struct counts *k)
{
	const uint8_t *code = elf_file_bytes(ef, fn->addr, fn->size);
	struct reloc_plan plan;
	uint64_t copy = fn->addr + o->copy_offset;
	if (!code) {
		k->refused[CUHOOK_REFUSED_TOO_SMALL]++;
		if (o->verbose)
			printf("  %-48s refuse: bytes not in the file\n", fn->name);
		return;
	}
	k->planned++;
	reloc_plan(cs, code, fn->addr, fn->size, copy, &plan);
	if (plan.status != PATCH_OK) {
		k->refused[patch_status_trace(plan.status)]++; /* counted and named as a trace would */
		if (o->verbose)
			printf("  %-48s refuse: %s: %s\n", fn->name, patch_status_name(plan.status), plan.detail);
		return;
	}
	k->patched++;

	/* What kind of relocation this is, for the totals. */
	bool has_jcc = false, has_rip = false, has_branch = false, has_call = false, widened = false, absf = false;
	bool self_call = false;
	{
		cs_insn *ci = cs_malloc(cs);
		for (unsigned i = 0; i < plan.n_insns; i++) {
			struct decoded_insn in;
			x86_decode(cs, ci, code + plan.orig_off[i], plan.patch_len - plan.orig_off[i], fn->addr + plan.orig_off[i], &in);
			unsigned nl = plan.new_off[i + 1] - plan.new_off[i];
			if (in.rip_disp_off)
				has_rip = true;
			if (in.flow == FLOW_JCC || in.flow == FLOW_JMP)
				has_branch = true;
			if (in.flow == FLOW_JCC)
				has_jcc = true;
			if (in.flow == FLOW_CALL) {
				has_call = true;
				/* The return address it pushes points into the copy. A callee that reads it
				 * as data (call 1f; 1: pop reg) gets the copy's address, not the original's. */
				if (in.target >= fn->addr && in.target < fn->addr + fn->size) {
					self_call = true;
					if (!o->mutate)
						printf("NOTE %s: %s at %#" PRIx64 ": '%s' at +%u calls into its own function: the"
						       " callee sees a return address in the copy\n",
						       ef->path, fn->name, fn->addr, in.text, plan.orig_off[i]);
				}
			}
			if ((in.flow == FLOW_JCC || in.flow == FLOW_JMP) && in.len == 2 && nl > 2)
				widened = true;
			if ((in.flow == FLOW_JCC || in.flow == FLOW_JMP || in.flow == FLOW_CALL) && nl >= 14)
				absf = true;
		}
		cs_free(ci, 1);
		if (plan.new_off[plan.n_insns] < plan.code_len && plan.code_len - plan.new_off[plan.n_insns] == 14)
			absf = true;
	}
	k->with_rip += has_rip;
	k->with_branch += has_branch;
	k->with_call += has_call;
	k->self_call += self_call;
	k->widened += widened;
	k->abs_fallback += absf;
	k->ends_in_copy += plan.new_off[plan.n_insns] == plan.code_len;
	k->jcc_funcs += has_jcc;

	if (o->mutate) {
		if (!mutate(cs, code, fn->addr, &plan))
			return;
		k->mutated++;
	}

	struct func_ctx c = {.lib = ef->path, .name = fn->name, .func = fn->addr, .copy = copy, .p = &plan, .orig = code};
	unsigned nro = call_returns(cs, code, plan.patch_len, fn->addr, c.ret_orig);
	unsigned nrc = call_returns(cs, plan.code, plan.new_off[plan.n_insns], copy, c.ret_copy);
	c.nret = nro < nrc ? nro : nrc;

	uint64_t values[EMU_MAX_VALUES];
	unsigned nvalues = prologue_values(cs, code, plan.patch_len, fn->addr, values);
	const uint64_t premap[4] = {fn->addr, fn->addr + plan.patch_len, copy, copy + plan.code_len};

	k->compared++;
	bool bad = false, taken = false, fell = false, leaked = false;
	unsigned nfault = 0;
	int fault_err = 0;
	for (unsigned s = 0; s < o->seeds; s++) {
		uint64_t seed = s;
		struct emu_image img = {ef, seed ^ (fn->addr * 0x9e3779b97f4a7c15ull), fn->addr, code, plan.patch_len,
		                        copy, plan.code, plan.code_len, values, nvalues};
		struct emu_state st;
		emu_random_state(&st, seed, values, nvalues);
		static struct emu_result ro, rn;
		if (emu_run(em, &img, &st, fn->addr, fn->addr, fn->addr + plan.patch_len, true, MAX_INSNS, premap, &ro) != 0 ||
		    emu_run(em, &img, &st, copy, copy, copy + plan.code_len, false, MAX_INSNS, premap, &rn) != 0) {
			fprintf(stderr, "%s: %s: cannot map the code pages\n", ef->path, fn->name);
			continue;
		}
		k->states++;
		k->end_exit += ro.end == EMU_EXIT;
		k->end_fault += ro.end == EMU_FAULT;
		k->end_limit += ro.end == EMU_LIMIT;
		k->fault_insn += ro.end == EMU_FAULT && ro.err == UC_ERR_INSN_INVALID;
		if (ro.end == EMU_FAULT) {
			nfault++;
			fault_err = ro.err;
		}
		if (ro.end == EMU_EXIT && ro.addr == fn->addr + plan.patch_len)
			fell = true;
		else if (ro.end == EMU_EXIT)
			taken = true;
		char why[256];
		bool leak = false;
		bool ok = same(&c, &ro, &rn, why, sizeof(why), &leak);
		if (ok && ro.ninsns == 0) {
			/* the first instruction is always in the range: the harness went wrong */
			snprintf(why, sizeof(why), "the original ran no instruction (checker problem)");
			ok = false;
		}
		if (!ok) {
			k->mismatch_states++;
			if (!bad && !o->mutate && k->details_printed < o->max_details) {
				print_mismatch(cs, &c, seed, &st, &ro, &rn, why);
				k->details_printed++;
			} else if (!bad && !o->mutate) {
				printf("MISMATCH %s: %s (seed %" PRIu64 "): %s\n", c.lib, c.name, seed, why);
			}
			bad = true;
		} else if (leak && !leaked && !o->mutate) {
			printf("NOTE %s: %s at %#" PRIx64 ": an address of the copy (not a return address) is stored in memory"
			       " (seed %" PRIu64 "); equal once translated\n", c.lib, c.name, c.func, seed);
			disasm(stdout, cs, code, plan.patch_len, c.func, "    ");
		}
		leaked |= leak;
	}
	k->leak_funcs += leaked;
	k->jcc_both += has_jcc && taken && fell;
	if (bad)
		k->mismatch_funcs++;
	if (o->mutate) {
		if (bad)
			k->mutation_caught++;
		else {
			printf("MUTATION NOT CAUGHT %s: %s\n", ef->path, fn->name);
			disasm(stdout, cs, plan.code, plan.code_len, copy, "    ");
		}
	}
	if (o->verbose)
		printf("  %-48s patch %u -> %u bytes%s%s%s%s\n", fn->name, plan.patch_len, plan.code_len,
		       bad ? "  MISMATCH" : "", has_jcc ? (taken && fell ? "  (jcc: both ways)" : "  (jcc: one way)") : "",
		       nfault ? "  faults: " : "", nfault ? emu_strerror(fault_err) : "");
}

static void print_counts(const char *what, const struct counts *k, const struct opts *o)
{
	printf("%s: %" PRIu64 " functions, %" PRIu64 " patched", what, k->functions, k->patched);
	uint64_t nref = 0;
	for (int s = 1; s < CUHOOK_STATUS_COUNT; s++)
		nref += k->refused[s];
	printf(", %" PRIu64 " refused", nref);
	const char *sep = " (";
	for (int s = 1; s < CUHOOK_STATUS_COUNT; s++)
		if (k->refused[s]) {
			printf("%s%" PRIu64 " %s", sep, k->refused[s], cuhook_patch_status_names[s]);
			sep = ", ";
		}
	printf("%s\n", nref ? ")" : "");
	printf("  compared %" PRIu64 " functions, %" PRIu64 " states (%u seeds): original ran to an exit in %" PRIu64
	       ", faulted in %" PRIu64 " (%" PRIu64 " on an instruction Unicorn lacks), hit the limit in %" PRIu64 "\n",
	       k->compared, k->states, o->seeds, k->end_exit, k->end_fault, k->fault_insn, k->end_limit);
	printf("  relocations: %" PRIu64 " with a RIP-relative operand, %" PRIu64 " with a jmp/jcc (%" PRIu64
	       " rel8 widened; %" PRIu64 " with a jcc, both directions seen in %" PRIu64 "), %" PRIu64 " with a call (%" PRIu64
	       " into the function itself), %" PRIu64 " with an absolute fallback, %" PRIu64
	       " ending in the copy (no jump back)\n",
	       k->with_rip, k->with_branch, k->widened, k->jcc_funcs, k->jcc_both, k->with_call, k->self_call,
	       k->abs_fallback, k->ends_in_copy);
	if (o->mutate)
		printf("  mutated %" PRIu64 " copies: %" PRIu64 " caught, %" PRIu64 " not caught\n", k->mutated,
		       k->mutation_caught, k->mutated - k->mutation_caught);
	else
		printf("  mismatches: %" PRIu64 " functions, %" PRIu64 " states; equal after translating a stored copy"
		       " address: %" PRIu64 " functions\n", k->mismatch_funcs, k->mismatch_states, k->leak_funcs);
	if (k->crashed)
		printf("  EMULATOR CRASHES: %" PRIu64 " functions not verified\n", k->crashed);
}

/* Check functions first, first+jobs, first+2*jobs... of one library, counting into k and
 * telling which one is under way in *cur (shared with the parent: if Unicorn aborts, the
 * parent knows on what). */
static void check_slice(const struct opts *o, const struct elf_file *ef, const struct elf_func *fns, size_t nf,
                        size_t first, unsigned jobs, struct counts *k, volatile size_t *cur)
{
	csh cs;
	if (x86_open(&cs) != 0) {
		fprintf(stderr, "cuhook-check-relocation: capstone\n");
		_exit(3);
	}
	struct emu *em = emu_new();
	if (!em) {
		fprintf(stderr, "cuhook-check-relocation: cannot start Unicorn\n");
		_exit(3);
	}
	for (size_t i = first; i < nf; i += jobs) {
		*cur = i;
		if (i > 0 && fns[i].addr == fns[i - 1].addr) {
			/* as `cuhook funcs` and the agent: another name for an address already planned */
			k->refused[CUHOOK_REFUSED_ALIAS]++;
			continue;
		}
		check_function(cs, em, o, ef, &fns[i], k);
	}
	*cur = SIZE_MAX;
	fflush(stdout);
	emu_free(em);
	cs_close(&cs);
}

/* What a worker process shares with the parent. */
struct slot {
	struct counts k;
	volatile size_t cur;
};

static pid_t spawn(const struct opts *o, const struct elf_file *ef, const struct elf_func *fns, size_t nf,
                   size_t first, struct slot *sl)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (pid == 0) {
		/* Line-buffered: lines of different workers do not interleave, and a worker that
		 * aborts has printed every line it finished. */
		setvbuf(stdout, NULL, _IOLBF, 0);
		check_slice(o, ef, fns, nf, first, o->jobs, &sl->k, &sl->cur);
		_exit(0);
	}
	return pid;
}

/* --list FILE: "NAME VADDR SIZE" per line (VADDR the file's virtual address, as dumped by
 * tests/gpu/export_tables_check.c for the functions behind cuGetExportTable, which have no
 * symbol; '#' starts a comment). 0 with a malloc'd array sorted by address, or -1 (said). */
static int read_list(const char *path, struct elf_func **out, size_t *n)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "cuhook-check-relocation: %s: %s\n", path, strerror(errno));
		return -1;
	}
	struct elf_func *v = NULL;
	size_t cap = 0, k = 0;
	char line[1024];
	unsigned lineno = 0;
	int rc = 0;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		char name[512];
		unsigned long long addr, size;
		if (line[0] == '#' || line[strspn(line, " \t\n")] == 0)
			continue;
		if (sscanf(line, "%511s %lli %lli", name, &addr, &size) != 3 || !addr || !size) {
			fprintf(stderr, "cuhook-check-relocation: %s:%u: expected NAME VADDR SIZE\n", path, lineno);
			rc = -1;
			break;
		}
		if (k == cap) {
			cap = cap ? 2 * cap : 256;
			struct elf_func *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				fprintf(stderr, "cuhook-check-relocation: out of memory\n");
				exit(2);
			}
			v = nv;
		}
		v[k].name = strdup(name);
		v[k].addr = addr;
		v[k].size = size;
		if (!v[k].name) {
			fprintf(stderr, "cuhook-check-relocation: out of memory\n");
			exit(2);
		}
		k++;
	}
	fclose(f);
	if (rc != 0) {
		elf_file_funcs_free(v, k);
		return -1;
	}
	*out = v;
	*n = k;
	return 0;
}

static int check_library(const struct opts *o, const char *path, struct counts *total)
{
	struct elf_file ef;
	int e = elf_file_open(&ef, path);
	if (e != ELF_FILE_OK) {
		fprintf(stderr, "cuhook-check-relocation: %s: %s\n", path,
		        e == ELF_FILE_ERR_OPEN ? strerror(errno) : e == ELF_FILE_ERR_READ ? "cannot read" : "not an x86-64 ELF file");
		return -1;
	}
	struct elf_func *all;
	size_t na;
	if (o->list) {
		if (read_list(o->list, &all, &na) != 0) {
			elf_file_close(&ef);
			return -1;
		}
	} else if (elf_file_funcs(&ef, &all, &na) != 0) {
		fprintf(stderr, "cuhook-check-relocation: out of memory\n");
		exit(2);
	}
	size_t nf = 0;
	for (size_t i = 0; i < na; i++) {
		if (glob_filter_match(o->filter, all[i].name))
			all[nf++] = all[i];
		else
			free(all[i].name);
	}
	if (o->verbose)
		printf("%s:\n", path);

	/* Workers by fork, each on every jobs-th function, counting into shared memory. Unicorn
	 * may abort on an instruction it cannot translate: the function is reported and the
	 * worker started again after it. */
	struct slot *slots = mmap(NULL, o->jobs * sizeof(*slots), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t *pids = calloc(o->jobs, sizeof(*pids));
	if (slots == MAP_FAILED || !pids) {
		fprintf(stderr, "cuhook-check-relocation: out of memory\n");
		exit(2);
	}
	memset(slots, 0, o->jobs * sizeof(*slots));
	unsigned alive = 0;
	for (unsigned w = 0; w < o->jobs; w++) {
		slots[w].cur = w;
		pids[w] = spawn(o, &ef, all, nf, w, &slots[w]);
		alive++;
	}
	uint64_t crashed = 0;
	while (alive) {
		int st;
		pid_t pid = wait(&st);
		if (pid < 0) {
			perror("wait");
			exit(2);
		}
		unsigned w = 0;
		while (w < o->jobs && pids[w] != pid)
			w++;
		if (w == o->jobs)
			continue;
		alive--;
		pids[w] = 0;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			continue;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
			exit(2); /* it could not start Capstone or Unicorn, and said so */
		size_t i = slots[w].cur;
		if (i >= nf) {
			fprintf(stderr, "cuhook-check-relocation: a worker failed (status %#x)\n", st);
			exit(2);
		}
		crashed++;
		printf("EMULATOR CRASH %s: %s at %#" PRIx64 ": the worker died (%s %d); not verified\n", path, all[i].name,
		       all[i].addr, WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		if (i + o->jobs < nf) {
			slots[w].cur = i + o->jobs;
			pids[w] = spawn(o, &ef, all, nf, i + o->jobs, &slots[w]);
			alive++;
		}
	}
	struct counts k;
	memset(&k, 0, sizeof(k));
	for (unsigned w = 0; w < o->jobs; w++)
		add_counts(&k, &slots[w].k);
	k.functions = nf;
	k.crashed = crashed;
	munmap(slots, o->jobs * sizeof(*slots));
	free(pids);
	print_counts(path, &k, o);
	fflush(stdout);
	add_counts(total, &k);
	elf_file_funcs_free(all, nf);
	elf_file_close(&ef);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: cuhook-check-relocation [options] LIB...\n"
	        "  For every exported function of each shared library file, plan the patch as the agent\n"
	        "  would and compare the overwritten original instructions with their relocated copy\n"
	        "  under the Unicorn emulator, from the same random states. Exits 1 on any mismatch.\n"
	        "  --seeds N         states per function (default 16)\n"
	        "  --copy-offset N   where the copy goes, relative to the function (default 0x10000;\n"
	        "                    0x100000000 puts it out of rel32 reach: absolute fallbacks)\n"
	        "  --funcs GLOBS     only these functions (comma-separated globs, '-' excludes)\n"
	        "  --jobs N          worker processes (default 1)\n"
	        "  --details N       print full details of the first N mismatching functions (default 20)\n"
	        "  --mutate          corrupt every copy on purpose; exits 1 unless every corruption is caught\n"
	        "  --skip-missing    ignore library files that do not exist; exit 77 if none does\n"
	        "  --list FILE       check the functions FILE lists (NAME VADDR SIZE per line, file\n"
	        "                    addresses) instead of the exported ones: one LIB only\n"
	        "  --verbose         one line per function\n");
}

int main(int argc, char **argv)
{
	struct opts o = {.seeds = 16, .copy_offset = 0x10000, .filter = "", .max_details = 20, .jobs = 1};
	static const struct option lopts[] = {
	    {"seeds", required_argument, 0, 's'},   {"copy-offset", required_argument, 0, 'c'},
	    {"funcs", required_argument, 0, 'f'},   {"jobs", required_argument, 0, 'j'},
	    {"details", required_argument, 0, 'd'}, {"mutate", no_argument, 0, 'm'},
	    {"skip-missing", no_argument, 0, 'k'},  {"verbose", no_argument, 0, 'v'},
	    {"help", no_argument, 0, 'h'},          {"list", required_argument, 0, 'l'},
	    {0}};
	int ch;
	while ((ch = getopt_long(argc, argv, "s:c:f:j:d:l:mkvh", lopts, NULL)) != -1) {
		switch (ch) {
		case 's': o.seeds = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'c': o.copy_offset = strtoull(optarg, NULL, 0); break;
		case 'f': o.filter = optarg; break;
		case 'j': o.jobs = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'd': o.max_details = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'm': o.mutate = 1; break;
		case 'l': o.list = optarg; break;
		case 'k': o.skip_missing = 1; break;
		case 'v': o.verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind == argc || o.seeds == 0 || o.jobs == 0 || o.jobs > 256 || (o.list && argc - optind != 1)) {
		usage(stderr);
		return 2;
	}
	struct counts total;
	memset(&total, 0, sizeof(total));
	unsigned nlibs = 0, failed = 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = optind; i < argc; i++) {
		struct stat st;
		if (o.skip_missing && stat(argv[i], &st) != 0) {
			printf("%s: not present, skipped\n", argv[i]);
			continue;
		}
		if (check_library(&o, argv[i], &total) != 0)
			failed++;
		else
			nlibs++;
	}
	if (nlibs == 0 && failed == 0)
		return 77;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (nlibs > 1)
		print_counts("total", &total, &o);
	printf("%u libraries in %.1f s\n", nlibs, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	if (failed)
		return 2;
	if (o.mutate)
		return total.mutation_caught == total.mutated && !total.crashed ? 0 : 1;
	return total.mismatch_states || total.crashed ? 1 : 0;
}
