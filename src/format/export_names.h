/* The tables of function pointers that cuGetExportTable returns ("export tables", the driver's
 * undocumented interface to the CUDA runtime and the tools libraries): how a function reached
 * through one is named in a trace, and the readable names public projects have given some
 * tables and slots. The agent names the functions it patches from a table (export_tables.c);
 * the report turns the names back into table and slot (text_export_tables.c).
 *
 * A table's function at slot i is named "export:UUID[i]", UUID being the 16 bytes of the
 * CUuuid the caller passed, in the order they are stored, as 8-4-4-4-12 lower-case hex. The
 * name is all an older reader needs: it is a function like any other. */
#ifndef CUHOOK_EXPORT_NAMES_H
#define CUHOOK_EXPORT_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXPORT_UUID_LEN 36           /* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
#define EXPORT_NAME_PREFIX "export:"
#define EXPORT_NAME_MAX 64           /* "export:" + UUID + "[65535]" + NUL fits */

struct export_table_name {
	uint8_t uuid[16];
	const char *name;                /* a readable name for the table */
	const char *const *slots;        /* readable names of some slots (NULL-terminated pairs
	                                    "index", "name"), or NULL */
};

/* The tables public projects have identified (export_names.c says where each name is from). */
extern const struct export_table_name export_table_names[];
extern const size_t export_table_names_count;

/* "xxxxxxxx-...": out must hold EXPORT_UUID_LEN + 1 bytes. */
void export_uuid_format(const uint8_t uuid[16], char *out);

/* "export:UUID[slot]" into out (EXPORT_NAME_MAX bytes). */
void export_func_name(const uint8_t uuid[16], unsigned slot, char *out, size_t len);

/* A function name of the form above: true, with the UUID's text (EXPORT_UUID_LEN + 1 bytes)
 * and the slot; false for any other name. */
bool export_func_parse(const char *name, char *uuid_text, unsigned *slot);

/* The readable name of the table whose UUID text is given, or NULL; and of its slot, or NULL. */
const char *export_table_readable(const char *uuid_text);
const char *export_slot_readable(const char *uuid_text, unsigned slot);

#endif
