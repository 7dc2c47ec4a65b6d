/* Names of cuGetExportTable's tables (export_names.h). The table names and the few slot names
 * below are those the ZLUDA project's CUDA tracer and its dark API list use for the same UUIDs
 * (github.com/vosen/ZLUDA; the names written here, not taken from its code). The stand-in driver's tables
 * (tests/fakecuda) borrow the first UUID. */
#include "export_names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const cudart_interface_slots[] = {
    "1", "get_module_from_cubin", "6", "get_module_from_cubin_ext1", "8", "get_module_from_cubin_ext2", NULL,
};

const struct export_table_name export_table_names[] = {
    {{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9},
     "CUDART_INTERFACE", cudart_interface_slots},
    {{0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66},
     "TOOLS_RUNTIME_CALLBACK_HOOKS", NULL},
    {{0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc},
     "TOOLS_TLS", NULL},
    {{0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93},
     "CONTEXT_LOCAL_STORAGE_INTERFACE_V0301", NULL},
    {{0x0c, 0xa5, 0x0b, 0x8c, 0x10, 0x04, 0x92, 0x9a, 0x89, 0xa7, 0xd0, 0xdf, 0x10, 0xe7, 0x72, 0x86},
     "CTX_CREATE_BYPASS", NULL},
    {{0x19, 0x5b, 0xcb, 0xf4, 0xd6, 0x7d, 0x02, 0x4a, 0xac, 0xc5, 0x1d, 0x29, 0xce, 0xa6, 0x31, 0xae},
     "HEAP_ACCESS", NULL},
    {{0xb1, 0x05, 0x41, 0xe1, 0xf7, 0xc7, 0xc7, 0x4a, 0x9f, 0x64, 0xf2, 0x23, 0xbe, 0x99, 0xf1, 0xe2},
     "DEVICE_EXTENDED_RT", NULL},
};
const size_t export_table_names_count = sizeof(export_table_names) / sizeof(export_table_names[0]);

void export_uuid_format(const uint8_t u[16], char *out)
{
	static const char hex[] = "0123456789abcdef";
	char *p = out;
	for (unsigned i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[u[i] >> 4];
		*p++ = hex[u[i] & 15];
	}
	*p = 0;
}

void export_func_name(const uint8_t uuid[16], unsigned slot, char *out, size_t len)
{
	char u[EXPORT_UUID_LEN + 1];
	export_uuid_format(uuid, u);
	snprintf(out, len, EXPORT_NAME_PREFIX "%s[%u]", u, slot);
}

bool export_func_parse(const char *name, char *uuid_text, unsigned *slot)
{
	size_t pl = strlen(EXPORT_NAME_PREFIX);
	if (!name || strncmp(name, EXPORT_NAME_PREFIX, pl) != 0)
		return false;
	const char *u = name + pl;
	for (unsigned i = 0; i < EXPORT_UUID_LEN; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? u[i] != '-' : !((u[i] >= '0' && u[i] <= '9') || (u[i] >= 'a' && u[i] <= 'f')))
			return false;
	}
	if (u[EXPORT_UUID_LEN] != '[' || u[EXPORT_UUID_LEN + 1] < '0' || u[EXPORT_UUID_LEN + 1] > '9')
		return false;
	char *end;
	unsigned long s = strtoul(u + EXPORT_UUID_LEN + 1, &end, 10);
	if (end[0] != ']' || end[1] || s > 65535)
		return false;
	memcpy(uuid_text, u, EXPORT_UUID_LEN);
	uuid_text[EXPORT_UUID_LEN] = 0;
	*slot = (unsigned)s;
	return true;
}

static const struct export_table_name *find(const char *uuid_text)
{
	char u[EXPORT_UUID_LEN + 1];
	for (size_t i = 0; i < export_table_names_count; i++) {
		export_uuid_format(export_table_names[i].uuid, u);
		if (!strcmp(u, uuid_text))
			return &export_table_names[i];
	}
	return NULL;
}

const char *export_table_readable(const char *uuid_text)
{
	const struct export_table_name *t = find(uuid_text);
	return t ? t->name : NULL;
}

const char *export_slot_readable(const char *uuid_text, unsigned slot)
{
	const struct export_table_name *t = find(uuid_text);
	if (!t || !t->slots)
		return NULL;
	for (const char *const *s = t->slots; s[0] && s[1]; s += 2)
		if ((unsigned)atoi(s[0]) == slot)
			return s[1];
	return NULL;
}
