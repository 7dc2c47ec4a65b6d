#include "cupti_search.h"

#include <stdio.h>
#include <string.h>

/* The names tried in every directory, best first: the major version cuhook is built for
 * (cupti_abi.h), then whatever the unversioned link points to. */
static const char *const names[] = {"libcupti.so.13", "libcupti.so"};
#define NNAMES (sizeof(names) / sizeof(names[0]))

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

bool cupti_is_libcupti(const char *path)
{
	const char *b = base_name(path);
	return strncmp(b, "libcupti.so", 11) == 0 && (b[11] == 0 || b[11] == '.');
}

static void add(struct cupti_candidates *out, const char *path)
{
	if (out->n == CUPTI_CANDIDATES_MAX || strlen(path) >= PATH_MAX)
		return;
	for (unsigned i = 0; i < out->n; i++)
		if (!strcmp(out->path[i], path))
			return;
	snprintf(out->path[out->n++], PATH_MAX, "%s", path);
}

/* Both names in directory dir (len bytes of it), with sub appended ("" or "/extras/..."). */
static void add_dir(struct cupti_candidates *out, const char *dir, size_t len, const char *sub)
{
	if (!len)
		return;
	while (len > 1 && dir[len - 1] == '/')
		len--;
	for (unsigned i = 0; i < NNAMES; i++) {
		char p[PATH_MAX];
		if ((size_t)snprintf(p, sizeof(p), "%.*s%s/%s", (int)len, dir, sub, names[i]) < sizeof(p))
			add(out, p);
	}
}

/* Rule 3: the wheels' directories next to a loaded object. */
static void near_loaded(struct cupti_candidates *out, const char *path)
{
	/* .../site-packages/nvidia/<package>/lib/<object>: the last "/nvidia/" of the path */
	const char *nv = NULL;
	for (const char *p = strstr(path, "/nvidia/"); p; p = strstr(p + 1, "/nvidia/"))
		nv = p;
	if (nv) {
		size_t len = (size_t)(nv - path) + strlen("/nvidia");
		add_dir(out, path, len, "/cu13/lib");
		add_dir(out, path, len, "/cuda_cupti/lib");
	}
	const char *b = base_name(path);
	if (b != path && strncmp(b, "libcudart.so", 12) == 0) {
		size_t len = (size_t)(b - path);
		add_dir(out, path, len, "");
		add_dir(out, path, len, "/../extras/CUPTI/lib64");
	}
}

static void in_toolkit(struct cupti_candidates *out, const char *root)
{
	if (!root || root[0] != '/')
		return; /* unset, or relative to a working directory nobody chose for this */
	add_dir(out, root, strlen(root), "/extras/CUPTI/lib64");
	add_dir(out, root, strlen(root), "/lib64");
}

void cupti_search(const struct cupti_search_input *in, struct cupti_candidates *out)
{
	out->n = out->nsearched = 0;
	if (in->explicit_path && in->explicit_path[0]) {
		out->kind = CUPTI_EXPLICIT;
		add(out, in->explicit_path);
		out->nsearched = out->n;
		return;
	}
	for (size_t i = 0; i < in->nloaded; i++) {
		if (in->loaded[i] && cupti_is_libcupti(in->loaded[i])) {
			out->kind = CUPTI_LOADED;
			add(out, in->loaded[i]);
			out->nsearched = out->n;
			return;
		}
	}
	out->kind = CUPTI_SEARCHED;
	for (size_t i = 0; i < in->nloaded; i++)
		if (in->loaded[i] && in->loaded[i][0] == '/')
			near_loaded(out, in->loaded[i]);
	in_toolkit(out, in->cuda_home);
	in_toolkit(out, in->cuda_path);
	in_toolkit(out, "/usr/local/cuda");
	out->nsearched = out->n;
	for (unsigned i = 0; i < NNAMES; i++)
		add(out, names[i]);
}
