/* A tiny test harness: CHECK records a failure and goes on; RUN prints a line per case; the
 * program exits 1 if anything failed. */
#ifndef CUHOOK_UNIT_H
#define CUHOOK_UNIT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int unit_failed_cases, unit_cases;
static bool unit_case_ok;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			printf("    %s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);          \
			printf(__VA_ARGS__);                                                       \
			printf("\n");                                                              \
			unit_case_ok = false;                                                      \
		}                                                                                  \
	} while (0)

/* Equal byte strings, printed both ways when they differ. */
#define CHECK_BYTES(got, want, n)                                                                  \
	do {                                                                                       \
		if (memcmp((got), (want), (n)) != 0) {                                             \
			printf("    %s:%d: bytes differ\n      got: ", __FILE__, __LINE__);            \
			for (size_t i_ = 0; i_ < (size_t)(n); i_++)                                 \
				printf(" %02x", ((const uint8_t *)(got))[i_]);                       \
			printf("\n     want: ");                                                     \
			for (size_t i_ = 0; i_ < (size_t)(n); i_++)                                 \
				printf(" %02x", ((const uint8_t *)(want))[i_]);                      \
			printf("\n");                                                              \
			unit_case_ok = false;                                                      \
		}                                                                                  \
	} while (0)

#define RUN(fn)                                                                                    \
	do {                                                                                       \
		unit_case_ok = true;                                                               \
		unit_cases++;                                                                      \
		fn();                                                                              \
		printf("%s %s\n", unit_case_ok ? "ok  " : "FAIL", #fn);                            \
		if (!unit_case_ok)                                                                 \
			unit_failed_cases++;                                                       \
	} while (0)

#define UNIT_EXIT()                                                                                \
	do {                                                                                       \
		printf("%d cases, %d failed\n", unit_cases, unit_failed_cases);                    \
		return unit_failed_cases ? 1 : 0;                                                  \
	} while (0)

#endif
