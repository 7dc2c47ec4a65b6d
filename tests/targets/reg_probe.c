/* Does a traced call leave the registers as the calling convention promises? Calls the stand-in's
 * cuFakeRegProbe N times through reg_probe_call.S, which loads a known value into every general
 * register but rsp and r11 and into xmm0-7; the probe writes what it found at its entry, and
 * reg_probe_call what the call left. Checked on every call:
 *   at entry: every argument register, rax (al: varargs), r10 (static chain), the callee-saved
 *             registers, xmm0-7 and the stack pointer are the caller's;
 *   at return: rax, rdx, xmm0 and xmm1 are the function's, the callee-saved registers and the
 *             stack pointer the caller's.
 * r11 and the status flags have no role at either boundary (the stubs and count thunks may change
 * them). Prints "probe ok N" and exits 0, or lists the first mismatches and exits 1.
 *
 *   reg_probe [--agent libcuhook.so] LIBCUDA N   (the agent is configured by CUHOOK_* variables) */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void reg_probe_call(void (*fn)(void), uint64_t out[16]);
extern const unsigned char probe_vec[8 * 16];

static const char *const in_names[16] = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp",
                                         "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"};

static int bad;

static void expect(long call, const char *what, uint64_t got, uint64_t want)
{
	if (got == want)
		return;
	if (bad++ < 10)
		fprintf(stderr, "call %ld: %s is %#" PRIx64 ", expected %#" PRIx64 "\n", call, what, got, want);
}

int main(int argc, char **argv)
{
	const char *agent = NULL;
	int a = 1;
	if (argc > 2 && !strcmp(argv[1], "--agent")) {
		agent = argv[2];
		a = 3;
	}
	if (argc != a + 2) {
		fprintf(stderr, "usage: reg_probe [--agent libcuhook.so] LIBCUDA N\n");
		return 2;
	}
	if (agent && !dlopen(agent, RTLD_NOW | RTLD_LOCAL)) {
		fprintf(stderr, "reg_probe: %s\n", dlerror());
		return 2;
	}
	void *lib = dlopen(argv[a], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "reg_probe: %s\n", dlerror());
		return 2;
	}
	void (*fn)(void) = (void (*)(void))dlsym(lib, "cuFakeRegProbe");
	uint64_t *in = dlsym(lib, "fake_probe_in");
	if (!fn || !in) {
		fprintf(stderr, "reg_probe: cuFakeRegProbe or fake_probe_in missing from %s\n", argv[a]);
		return 2;
	}
	long n = atol(argv[a + 1]);
	for (long c = 0; c < n; c++) {
		uint64_t out[16];
		memset(in, 0, 16 * 8 + 8 * 16);
		reg_probe_call(fn, out);
		for (int r = 0; r < 16; r++) {
			char what[32];
			snprintf(what, sizeof(what), "%s at entry", in_names[r]);
			if (r == 7)
				expect(c, what, in[7], out[12]);
			else if (r != 11)
				expect(c, what, in[r], 0xc0de000000000000ull | (uint64_t)r << 8 | (uint64_t)r);
		}
		if (memcmp(in + 16, probe_vec, sizeof(probe_vec)) != 0 && bad++ < 10)
			fprintf(stderr, "call %ld: xmm0-7 at entry differ from the caller's\n", c);
		expect(c, "rax at return", out[0], 0x1122334455667788ull);
		expect(c, "rdx at return", out[1], 0x99aabbccddeeff01ull);
		expect(c, "xmm0 at return (low)", out[2], 0x99aabbccddeeff01ull);
		expect(c, "xmm0 at return (high)", out[3], 0);
		expect(c, "xmm1 at return (low)", out[4], 0x1122334455667788ull);
		expect(c, "xmm1 at return (high)", out[5], 0);
		static const int callee[6] = {1, 6, 12, 13, 14, 15}; /* rbx rbp r12-r15 */
		for (int k = 0; k < 6; k++) {
			char what[32];
			snprintf(what, sizeof(what), "%s at return", in_names[callee[k]]);
			expect(c, what, out[6 + k], 0xc0de000000000000ull | (uint64_t)callee[k] << 8 | (uint64_t)callee[k]);
		}
		expect(c, "rsp at return", out[13], out[12]);
	}
	if (bad) {
		fprintf(stderr, "reg_probe: %d mismatches\n", bad);
		return 1;
	}
	printf("probe ok %ld\n", n);
	return 0;
}
