#include "glob_filter.h"

#include <fnmatch.h>
#include <stdbool.h>
#include <string.h>

int glob_filter_match(const char *filter, const char *name)
{
	bool any_include = false, included = false;
	const char *p = filter ? filter : "";
	while (*p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		char pat[256];
		if (n > 0 && n < sizeof(pat)) {
			memcpy(pat, p, n);
			pat[n] = 0;
			char *q = pat;
			while (*q == ' ')
				q++;
			bool exclude = (*q == '-' || *q == '!');
			if (exclude)
				q++;
			if (*q) {
				if (!exclude)
					any_include = true;
				if (fnmatch(q, name, 0) == 0) {
					if (exclude)
						return 0;
					included = true;
				}
			}
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return any_include ? included : 1;
}
