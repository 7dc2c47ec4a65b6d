/* export_tables_check: on the GPU machine, the tables the real libcuda returns from
 * cuGetExportTable, read as the agent reads them (src/trampoline/export_table.h, func_extent.h),
 * for the relocation checker to run over every function in them.
 *
 *   export_tables_check [--list FILE] [UUID...]
 *
 * Asks for every table of src/format/export_names.c and every UUID given (8-4-4-4-12 text, as
 * the agent's NOTEs and the report print them: the bytes in memory order), after cuInit(0).
 * Prints "library PATH", then one line per slot:
 *   slot export:UUID[i] ADDR fn SIZE        a function of the driver with its extent
 *   slot export:UUID[i] ADDR alias NAME     the same address as an earlier slot
 *   slot export:UUID[i] ADDR refused WHY    a function whose extent is unknown
 *   slot export:UUID[i] ADDR skipped        not in the driver's executable segments (or NULL)
 * and one line per table ("table UUID NAME: ..."). With --list, FILE gets "NAME VADDR SIZE" per
 * function (file addresses, each address once) for cuhook-check-relocation --list.
 *
 * Build (tests/gpu/export_tables_proof.sh does):
 *   gcc -O2 -Isrc/format -Isrc/trampoline -I/usr/local/cuda/include tests/gpu/export_tables_check.c \
 *       src/format/export_names.c src/trampoline/export_table.c src/trampoline/func_extent.c -ldl */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "export_names.h"
#include "export_table.h"
#include "func_extent.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*init_fn)(unsigned);
typedef int (*get_table_fn)(const void **, const void *);

struct obj {
	uintptr_t base;
	const void *phdr;
	unsigned phnum;
};

static int find_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	struct obj *o = ctx;
	if (info->dlpi_addr != o->base)
		return 0;
	o->phdr = info->dlpi_phdr;
	o->phnum = info->dlpi_phnum;
	return 1;
}

static int parse_uuid(const char *s, uint8_t u[16])
{
	unsigned k = 0;
	for (const char *p = s; *p && k < 16;) {
		if (*p == '-') {
			p++;
			continue;
		}
		unsigned v;
		if (sscanf(p, "%2x", &v) != 1)
			return -1;
		u[k++] = (uint8_t)v;
		p += 2;
	}
	return k == 16 ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *list = NULL;
	int i = 1;
	if (i + 1 < argc && !strcmp(argv[i], "--list")) {
		list = argv[i + 1];
		i += 2;
	}
	size_t n = export_table_names_count + (size_t)(argc - i);
	uint8_t(*uuids)[16] = calloc(n ? n : 1, 16);
	size_t nu = 0;
	for (size_t k = 0; k < export_table_names_count; k++)
		memcpy(uuids[nu++], export_table_names[k].uuid, 16);
	for (; i < argc; i++) {
		uint8_t u[16];
		if (parse_uuid(argv[i], u) != 0) {
			fprintf(stderr, "export_tables_check: %s: not a UUID\n", argv[i]);
			return 2;
		}
		size_t k = 0;
		while (k < nu && memcmp(uuids[k], u, 16))
			k++;
		if (k == nu)
			memcpy(uuids[nu++], u, 16);
	}
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	if (!h) {
		fprintf(stderr, "export_tables_check: %s\n", dlerror());
		return 2;
	}
	init_fn cu_init = (init_fn)dlsym(h, "cuInit");
	get_table_fn get = (get_table_fn)dlsym(h, "cuGetExportTable");
	Dl_info di;
	if (!cu_init || !get || !dladdr((void *)get, &di)) {
		fprintf(stderr, "export_tables_check: no cuInit/cuGetExportTable\n");
		return 2;
	}
	int rc = cu_init(0);
	if (rc) {
		fprintf(stderr, "export_tables_check: cuInit: %d\n", rc);
		return 2;
	}
	struct obj o = {(uintptr_t)di.dli_fbase, NULL, 0};
	dl_iterate_phdr(find_cb, &o);
	if (!o.phdr) {
		fprintf(stderr, "export_tables_check: the driver's program headers not found\n");
		return 2;
	}
	printf("library %s\n", di.dli_fname);
	FILE *lf = list ? fopen(list, "w") : NULL;
	if (list && !lf) {
		perror(list);
		return 2;
	}
	uintptr_t *seen = calloc(EXPORT_TABLE_MAX_SLOTS * (nu ? nu : 1), sizeof(*seen));
	char (*seen_name)[EXPORT_NAME_MAX] = calloc(EXPORT_TABLE_MAX_SLOTS * (nu ? nu : 1), EXPORT_NAME_MAX);
	size_t nseen = 0;
	unsigned tables = 0, fns = 0, refused = 0;
	for (size_t k = 0; k < nu; k++) {
		char ut[EXPORT_UUID_LEN + 1];
		export_uuid_format(uuids[k], ut);
		const char *tn = export_table_readable(ut);
		const void *table = NULL;
		rc = get(&table, uuids[k]);
		if (rc) {
			printf("table %s %s: cuGetExportTable returned %d\n", ut, tn ? tn : "-", rc);
			continue;
		}
		unsigned first, end;
		const char *why;
		if (export_table_slots(o.base, o.phdr, o.phnum, table, &first, &end, &why) != 0) {
			printf("table %s %s: not read: %s\n", ut, tn ? tn : "-", why);
			continue;
		}
		tables++;
		unsigned t_fn = 0, t_alias = 0, t_ref = 0, t_skip = 0;
		for (unsigned s = first; s < end; s++) {
			uintptr_t p = (uintptr_t)((const uint64_t *)table)[s];
			char name[EXPORT_NAME_MAX];
			export_func_name(uuids[k], s, name, sizeof(name));
			if (!p || !object_contains(o.base, o.phdr, o.phnum, p, 1, true)) {
				printf("slot %s %#lx skipped\n", name, (unsigned long)p);
				t_skip++;
				continue;
			}
			size_t q = 0;
			while (q < nseen && seen[q] != p)
				q++;
			Dl_info fi;
			const char *exported = dladdr((void *)p, &fi) && fi.dli_saddr == (void *)p ? fi.dli_sname : NULL;
			if (q < nseen || exported) {
				printf("slot %s %#lx alias %s\n", name, (unsigned long)p, q < nseen ? seen_name[q] : exported);
				t_alias++;
				continue;
			}
			seen[nseen] = p;
			memcpy(seen_name[nseen++], name, EXPORT_NAME_MAX);
			size_t size;
			if (func_extent(o.base, o.phdr, o.phnum, p, &size, &why) != 0) {
				printf("slot %s %#lx refused %s\n", name, (unsigned long)p, why);
				t_ref++;
				continue;
			}
			printf("slot %s %#lx fn %zu\n", name, (unsigned long)p, size);
			if (lf)
				fprintf(lf, "%s %#lx %zu\n", name, (unsigned long)(p - o.base), size);
			t_fn++;
		}
		printf("table %s %s: %u slots: %u functions, %u refused (extent), %u aliases, %u skipped\n", ut,
		       tn ? tn : "-", end - first, t_fn, t_ref, t_alias, t_skip);
		fns += t_fn;
		refused += t_ref;
	}
	printf("total: %u tables, %u functions with a known extent, %u refused\n", tables, fns, refused);
	if (lf)
		fclose(lf);
	return 0;
}
