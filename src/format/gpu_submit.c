#include "gpu_submit.h"

#include <string.h>

static bool has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/* The same four families under the API's prefix ("cu" or "cuda"). */
static bool submits(const char *name, const char *api)
{
	static const char *const family[] = {"Launch", "Memcpy", "Memset", "GraphLaunch"};
	size_t n = strlen(api);
	if (!name || strncmp(name, api, n))
		return false;
	for (unsigned i = 0; i < sizeof(family) / sizeof(family[0]); i++)
		if (has_prefix(name + n, family[i]))
			return true;
	return false;
}

bool cuhook_driver_submits(const char *name)
{
	return submits(name, "cu");
}

bool cuhook_runtime_submits(const char *name)
{
	return submits(name, "cuda");
}
