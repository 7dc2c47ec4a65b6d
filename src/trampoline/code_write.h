/* Writing into code that other threads may be executing: page protections, stores that a
 * concurrently running thread sees either entirely or not at all, and making every core see
 * the new instructions. */
#ifndef CUHOOK_CODE_WRITE_H
#define CUHOOK_CODE_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CODE_UNLOCK_MAX_RANGES 64

/* The pages of [lo, hi) made writable (and kept executable), with their original protections
 * remembered so code_lock() restores exactly what was there. */
struct code_unlock {
	unsigned n;
	struct {
		uintptr_t start, end;
		int prot;
	} r[CODE_UNLOCK_MAX_RANGES];
};

int code_unlock(struct code_unlock *u, uintptr_t lo, uintptr_t hi);

/* Read the executable mappings' protections now, for code_unlock() to take from memory rather
 * than from /proc/self/maps. Reading that file is slow where there are thousands of mappings (a
 * PyTorch process: 2-3 ms a read), and code_unlock() runs with the program's threads stopped
 * (a start's jumps, a detach's restores): take the snapshot before, while they run. A mapping
 * the snapshot lacks (mapped since) is read from the file as before. A library's text keeps its
 * protection for as long as it is mapped (a fork child's mappings are the same). */
void code_prot_snapshot(void);
void code_lock(const struct code_unlock *u);

/* Store len (<= 8) bytes at dst so that no thread can execute a mix of old and new bytes: one
 * aligned 8-byte store when they fit in an aligned quadword, else a 16-byte cmpxchg16b when they
 * fit in an aligned 16 bytes. With `plain` (no other thread can run this code) a memcpy where
 * neither form covers the bytes (atomic otherwise all the same: the threads are stopped by a
 * tracer that may die). Returns -1 when neither atomic form covers the bytes and not plain. */
int code_write_atomic(uint8_t *dst, const uint8_t *src, unsigned len, bool plain);

/* True when this process has one thread apart from own_tid (a thread of the caller's that never
 * runs the code being written; 0 for none). */
bool code_single_threaded(int own_tid);

/* Serialise instruction fetch on every core running a thread of this process after code was
 * modified (membarrier SYNC_CORE where the kernel has it; x86 keeps caches coherent anyway). */
void code_sync_cores(void);
/* The one-time (slow) registration code_sync_cores() needs; call it before stopping threads. */
void code_sync_cores_prepare(void);

#endif
