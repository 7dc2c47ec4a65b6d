/* The stand-in libcupti.so.13's simulated GPU clock, for tests that check its records' times
 * (README.md describes the stand-in). Times are on the client's clock: its timestamp callback
 * (cuptiActivityRegisterTimestampCallback), else CLOCK_REALTIME in ns, as CUPTI's.
 *
 * Each piece of work a submitting call reports starts FAKECUPTI_LAUNCH_NS after the moment it
 * was reported (read on the calling thread, after the call's API start), or when the previous
 * work of its stream ends if that is later, and lasts the duration below: work of one stream
 * never overlaps and runs in submission order; different streams may overlap. */
#ifndef FAKECUPTI_H
#define FAKECUPTI_H

#define FAKECUPTI_LAUNCH_NS 2000ull
/* a kernel: 1 us plus 10 ns per block */
#define FAKECUPTI_KERNEL_NS(blocks) (1000ull + 10ull * (blocks))
/* a copy: 500 ns plus 10 bytes per ns (10 GB/s) */
#define FAKECUPTI_MEMCPY_NS(bytes) (500ull + (bytes) / 10ull)
/* a memset: 300 ns plus 100 bytes per ns (100 GB/s) */
#define FAKECUPTI_MEMSET_NS(bytes) (300ull + (bytes) / 100ull)

#endif
