// The program whose code the synthetic stacks of test_stacks.py point into (tests/report): built
// with -g -O0 and a build id, so that every frame's function, file and line are known exactly.
// Each function below calls record() from one line; record() keeps its return address minus one
// (an address inside that call instruction, as the agent records a caller's frame) and the line.
// Run, it prints what a trace needs: its executable mapping (from /proc/self/maps), its build id,
// its load bias (addresses minus it are the ELF's, for addr2line) and each site's address,
// function and line, one JSON object.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <link.h>
#include <unistd.h>

enum { SITE_FORWARD, SITE_EVAL, SITE_INNER, SITE_OUTER, SITE_MAIN, SITE_COUNT };
static uintptr_t pcs[SITE_COUNT];
static int lines[SITE_COUNT];

extern "C" __attribute__((noinline)) void record(int site, int line)
{
	pcs[site] = (uintptr_t)__builtin_return_address(0) - 1;
	lines[site] = line;
}

namespace chain {
struct Model {
	__attribute__((noinline)) void forward(int n);
};
// A C++ method: its symbol is mangled (_ZN5chain5Model7forwardEi), the report demangles it.
__attribute__((noinline)) void Model::forward(int n) { record(SITE_FORWARD + 0 * n, __LINE__); }
} // namespace chain

// Stands in for CPython's evaluation loop: the report merges Python frames at its frames.
extern "C" __attribute__((noinline)) void _PyEval_EvalFrameDefault(void) { record(SITE_EVAL, __LINE__); }

extern "C" __attribute__((noinline)) void chain_inner(void) { record(SITE_INNER, __LINE__); }

// static: only in .symtab, not .dynsym; a C++ name with internal linkage is mangled too
// (_ZL11chain_outerv), so it demangles as chain_outer()
static __attribute__((noinline)) void chain_outer(void) { record(SITE_OUTER, __LINE__); }

static uintptr_t load_bias;

static int build_id(struct dl_phdr_info *info, size_t, void *out)
{
	char *hex = (char *)out;
	if (hex[0] || (info->dlpi_name && info->dlpi_name[0]))
		return 0; // the main program is the first, with an empty name
	load_bias = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const char *name = p + sizeof(*nh);
			const unsigned char *desc = (const unsigned char *)name + ((nh->n_namesz + 3) & ~3u);
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
				for (unsigned k = 0; k < nh->n_descsz && k < 20; k++)
					sprintf(hex + 2 * k, "%02x", desc[k]);
				return 1;
			}
			p = (const char *)desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 0;
}

int main(void)
{
	chain::Model m;
	m.forward(1);
	_PyEval_EvalFrameDefault();
	chain_inner();
	chain_outer();
	record(SITE_MAIN, __LINE__);
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return 1;
	exe[n] = 0;
	char hex[41] = "";
	dl_iterate_phdr(build_id, hex);
	// the executable mapping that holds the code
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[8192];
	unsigned long start = 0, end = 0, off = 0, inode = 0;
	while (maps && fgets(line, sizeof(line), maps)) {
		char perms[8], path[4096] = "";
		unsigned long s, e, o, ino;
		if (sscanf(line, "%lx-%lx %7s %lx %*s %lu %4095s", &s, &e, perms, &o, &ino, path) >= 5 && perms[2] == 'x' &&
		    !strcmp(path, exe) && s <= pcs[SITE_MAIN] && pcs[SITE_MAIN] < e) {
			start = s, end = e, off = o, inode = ino;
		}
	}
	if (maps)
		fclose(maps);
	if (!start)
		return 1;
	static const char *const names[SITE_COUNT] = {"chain::Model::forward(int)", "_PyEval_EvalFrameDefault",
	                                              "chain_inner", "chain_outer()", "main"};
	printf("{\"exe\": \"%s\", \"build_id\": \"%s\", \"start\": %lu, \"end\": %lu, \"offset\": %lu, \"inode\": %lu, "
	       "\"bias\": %lu, \"sites\": [", exe, hex, start, end, off, inode, (unsigned long)load_bias);
	for (int i = 0; i < SITE_COUNT; i++)
		printf("%s{\"pc\": %lu, \"func\": \"%s\", \"line\": %d}", i ? ", " : "", (unsigned long)pcs[i], names[i],
		       lines[i]);
	printf("]}\n");
	return 0;
}
