/* The stack table: every distinct stack the agent captured (stack_capture.h), interned to an id
 * the STACK records refer to, and written as STACKS entries by the writer.
 *
 * Lock-free and allocation-free on the traced path: one anonymous mapping made when stacks are
 * first enabled holds a hash index and an append-only arena of entries. A thread writes its entry
 * and publishes it (release) before it commits the STACK record that names it; the writer, which
 * reads the ring heads before it takes the entries, so finds every entry a drained record names
 * complete. Ids are process-wide and never reused (a second session, a fork child: the same
 * ids); a new file writes every entry again (stack_table_rewind). Two threads that intern the
 * same new stack at the same moment may get two ids for it (both valid, equal entries): the
 * price of no lock. A full table gives CUHOOK_STACK_NONE; the writer notes it once. */
#ifndef CUHOOK_STACK_TABLE_H
#define CUHOOK_STACK_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STACK_TABLE_MAX_IDS 65536u       /* distinct stacks kept */
#define STACK_TABLE_ARENA (32u << 20)    /* bytes of entries (reserved; touched as used) */

/* Map the table (once; later calls do nothing). False when the mapping failed. */
bool stack_table_init(void);

/* The traced path: the id of this stack (interned), or CUHOOK_STACK_NONE when the table is full
 * or was never mapped. pyframes may be NULL when npython is 0. */
uint32_t stack_table_intern(const uint64_t *pcs, unsigned nnative, const uint32_t *pyframes,
                            unsigned npython, uint8_t native_end, uint8_t python_end);

/* The writer: the ids given so far. Every stack below it was walked before this call (a thread
 * walks, then takes an id), so the mappings its addresses lie in were there: read them after. */
uint32_t stack_table_bound(void);
/* The writer: append the STACKS entries below `bound` published and not yet written to this
 * file, as they go in a STACKS block, to buf (cap bytes); returns the bytes and sets *count
 * (0: none left). */
size_t stack_table_take(uint8_t *buf, size_t cap, uint32_t bound, uint32_t *count);
/* Are there entries below `bound` published and not yet written? (The writer writes MAPS
 * first.) */
bool stack_table_pending(uint32_t bound);
/* A new file: every entry is written again. */
void stack_table_rewind(void);
/* The table was found full since the last call (the writer's NOTE, once per full). */
bool stack_table_full_take(void);

#endif
