#include "glob_filter.h"

#include <fnmatch.h>
#include <stdbool.h>
#include <string.h>

/* The next comma-separated pattern of *p without its blanks and its exclude marker ('-' or
 * '!', *exclude set): its start and length (0 for an empty one); *p moves past it and its
 * comma. */
static const char *next_pattern(const char **p, size_t *len, bool *exclude)
{
	const char *s = *p, *end = strchr(s, ',');
	size_t n = end ? (size_t)(end - s) : strlen(s);
	*p = s + n + (end ? 1 : 0);
	while (n && (*s == ' ' || *s == '\t')) {
		s++;
		n--;
	}
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	*exclude = n && (*s == '-' || *s == '!');
	if (*exclude) {
		s++;
		n--;
	}
	*len = n;
	return s;
}

int glob_filter_match(const char *filter, const char *name)
{
	bool any_include = false, included = false;
	const char *p = filter ? filter : "";
	while (*p) {
		size_t n;
		bool exclude;
		const char *s = next_pattern(&p, &n, &exclude);
		if (!n)
			continue;
		if (!exclude)
			any_include = true;
		if (n > GLOB_PATTERN_MAX)
			continue; /* matches nothing */
		char pat[GLOB_PATTERN_MAX + 1];
		memcpy(pat, s, n);
		pat[n] = 0;
		if (fnmatch(pat, name, 0) == 0) {
			if (exclude)
				return 0;
			included = true;
		}
	}
	return any_include ? included : 1;
}

int glob_filter_check(const char *filter)
{
	const char *p = filter ? filter : "";
	while (*p) {
		size_t n;
		bool exclude;
		next_pattern(&p, &n, &exclude);
		if (n > GLOB_PATTERN_MAX)
			return -1;
	}
	return 0;
}
