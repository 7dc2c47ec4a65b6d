#!/bin/bash
# Builds the libFuzzer harnesses with clang (meson's compiler is gcc, which has no libFuzzer):
#   tests/fuzz/build.sh OUTDIR      -> OUTDIR/fuzz_trace, OUTDIR/fuzz_elf
# Exit 77 when clang or its libFuzzer runtime is missing (the meson test is then skipped).
# CLANG overrides the compiler; FUZZ_CFLAGS adds flags. See docs/fuzzing.md.
set -eu
out=${1:?usage: build.sh OUTDIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
cc=${CLANG:-clang}
mkdir -p "$out"
san="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all"
# libFuzzer's runtime ships apart from clang on some distributions (libclang-rt-dev, compiler-rt)
if ! command -v "$cc" >/dev/null 2>&1; then
	echo "build.sh: $cc not found: fuzzers not built" >&2
	exit 77
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' >"$probe/p.c"
if ! "$cc" $san "$probe/p.c" -o "$probe/p" 2>"$probe/err"; then
	echo "build.sh: $cc cannot link with -fsanitize=fuzzer (no libFuzzer runtime):" >&2
	cat "$probe/err" >&2
	exit 77
fi
cflags="-g -O1 -std=gnu11 -fno-omit-frame-pointer $san ${FUZZ_CFLAGS:-}"
# the trace reader and the report: every source of src/report (its one C++ file, the kernel name
# demangler, compiled apart), the decoder table of src/format, how the report creates its -o
# file and the export tables' known names, the text sanitizer and the glob matcher (--functions,
# --thread) of src/common; libdw and
# libelf symbolize call stacks; sqlite3 writes --format sqlite
"$cc" -x c++ -std=c++17 -g -O1 -fno-omit-frame-pointer $san ${FUZZ_CFLAGS:-} -c "$root/src/report/demangle.cc" \
	-o "$out/demangle.o"
"$cc" $cflags -D_GNU_SOURCE -I"$root/src/report" -I"$root/src/format" -I"$root/src/common" \
	"$root/tests/fuzz/fuzz_trace.c" "$root"/src/report/*.c "$out/demangle.o" "$root/src/format/decoders.c" \
	"$root/src/format/out_file.c" "$root/src/format/export_names.c" "$root/src/format/gpu_submit.c" "$root/src/common/text_safe.c" "$root/src/common/glob_filter.c" \
	$(pkg-config --libs libdw libelf sqlite3) -lm -lstdc++ -pthread -o "$out/fuzz_trace.tmp"
mv "$out/fuzz_trace.tmp" "$out/fuzz_trace"
# the ELF reader of cuhook funcs and the relocation planner it feeds
"$cc" $cflags -I"$root/src/trampoline" -I"$root/src/format" -I"$root/src/asm" \
	$(pkg-config --cflags capstone libelf) \
	"$root/tests/fuzz/fuzz_elf.c" "$root/src/trampoline/elf_file.c" "$root/src/trampoline/relocate.c" \
	"$root/src/trampoline/x86_insn.c" \
	$(pkg-config --libs capstone libelf) -o "$out/fuzz_elf.tmp"
mv "$out/fuzz_elf.tmp" "$out/fuzz_elf"
echo "built $out/fuzz_trace $out/fuzz_elf"
