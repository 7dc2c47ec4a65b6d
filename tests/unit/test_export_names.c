/* The names of the functions behind cuGetExportTable (src/format/export_names.h): the UUID's
 * text, the name's round trip through the report's parser, names that are not such names, and
 * the readable names of the known tables. */
#include "export_names.h"
#include "unit.h"

static const uint8_t cudart[16] = {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
                                   0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9};

static void uuid_text(void)
{
	char u[EXPORT_UUID_LEN + 1];
	export_uuid_format(cudart, u);
	CHECK(!strcmp(u, "6bd5fb6c-5bf4-e74a-8987-d93912fd9df9"), "%s", u);
	CHECK(strlen(u) == EXPORT_UUID_LEN, "%zu", strlen(u));
}

static void name_round_trip(void)
{
	char name[EXPORT_NAME_MAX], u[EXPORT_UUID_LEN + 1];
	unsigned slot = 0;
	export_func_name(cudart, 65535, name, sizeof(name));
	CHECK(!strcmp(name, "export:6bd5fb6c-5bf4-e74a-8987-d93912fd9df9[65535]"), "%s", name);
	CHECK(export_func_parse(name, u, &slot) && slot == 65535 && !strcmp(u, "6bd5fb6c-5bf4-e74a-8987-d93912fd9df9"),
	      "%s -> %s [%u]", name, u, slot);
	export_func_name(cudart, 0, name, sizeof(name));
	CHECK(export_func_parse(name, u, &slot) && slot == 0, "%s", name);
}

static void not_export_names(void)
{
	static const char *const bad[] = {
	    "cuInit", "export:", "export:6bd5fb6c-5bf4-e74a-8987-d93912fd9df9", "export:6bd5fb6c-5bf4-e74a-8987-d93912fd9df9[]",
	    "export:6bd5fb6c-5bf4-e74a-8987-d93912fd9df9[1", "export:6bd5fb6c-5bf4-e74a-8987-d93912fd9df9[1]x",
	    "export:6bd5fb6c-5bf4-e74a-8987-d93912fd9df9[-1]", "export:6bd5fb6c-5bf4-e74a-8987-d93912fd9df9[65536]",
	    "export:6BD5FB6C-5bf4-e74a-8987-d93912fd9df9[1]", "export:6bd5fb6c5bf4-e74a-8987-d93912fd9df9[1]",
	    "export:6bd5fb6c-5bf4-e74a-8987-d93912fd9df[1]", NULL};
	char u[EXPORT_UUID_LEN + 1];
	unsigned slot;
	for (const char *const *b = bad; *b; b++)
		CHECK(!export_func_parse(*b, u, &slot), "%s taken for an export-table name", *b);
	CHECK(!export_func_parse(NULL, u, &slot), "NULL");
}

static void readable_names(void)
{
	CHECK(export_table_readable("6bd5fb6c-5bf4-e74a-8987-d93912fd9df9") &&
	      !strcmp(export_table_readable("6bd5fb6c-5bf4-e74a-8987-d93912fd9df9"), "CUDART_INTERFACE"), "cudart");
	CHECK(!export_table_readable("00000000-0000-0000-0000-000000000000"), "unknown table named");
	const char *s = export_slot_readable("6bd5fb6c-5bf4-e74a-8987-d93912fd9df9", 1);
	CHECK(s && !strcmp(s, "get_module_from_cubin"), "%s", s ? s : "(null)");
	CHECK(!export_slot_readable("6bd5fb6c-5bf4-e74a-8987-d93912fd9df9", 2), "slot 2 named");
	CHECK(!export_slot_readable("a094798c-2e74-2e74-93f2-0800200c0a66", 1), "a table without slot names");
	/* every known UUID is distinct */
	for (size_t i = 0; i < export_table_names_count; i++)
		for (size_t j = i + 1; j < export_table_names_count; j++)
			CHECK(memcmp(export_table_names[i].uuid, export_table_names[j].uuid, 16) != 0, "%zu == %zu", i, j);
}

int main(void)
{
	RUN(uuid_text);
	RUN(name_round_trip);
	RUN(not_export_names);
	RUN(readable_names);
	UNIT_EXIT();
}
