#include "glob_filter.h"

#include "text_safe.h"

#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
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

int glob_filter_match_any(const char *filter, const char *const *names, size_t nnames)
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
		for (size_t i = 0; i < nnames; i++) {
			if (fnmatch(pat, names[i], 0) != 0)
				continue;
			if (exclude)
				return 0;
			included = true;
		}
	}
	return any_include ? included : 1;
}

int glob_filter_match(const char *filter, const char *name)
{
	return glob_filter_match_any(filter, &name, 1);
}

static bool is_class_name(const char *s, size_t n)
{
	static const char *const classes[] = {"alnum", "alpha", "blank", "cntrl", "digit", "graph",
	                                       "lower", "print", "punct", "space", "upper", "xdigit"};
	for (unsigned i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (strlen(classes[i]) == n && memcmp(classes[i], s, n) == 0)
			return true;
	return false;
}

/* Where fnmatch(3) would take a pattern otherwise than its writer meant, the reason: glibc reads
 * an unterminated bracket or a lone trailing backslash as matching nothing (or the '[' itself),
 * and an unknown [:class:] as matching nothing, without saying so. NULL when it is well formed. */
static const char *pattern_error(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\\') {
			if (++i == n)
				return "ends with a lone '\\'";
			continue;
		}
		if (p[i] != '[')
			continue;
		size_t j = i + 1;
		if (j < n && (p[j] == '!' || p[j] == '^'))
			j++;
		if (j < n && p[j] == ']')
			j++; /* a ']' first is a member of the set, not its end */
		for (;;) {
			if (j >= n)
				return "has a '[' without its ']'";
			if (p[j] == ']')
				break;
			if (p[j] == '\\') {
				j += 2;
				continue;
			}
			if (p[j] == '[' && j + 1 < n && (p[j + 1] == ':' || p[j + 1] == '.' || p[j + 1] == '=')) {
				/* [:class:], [.sym.], [=equiv=]: their own ']' does not end the set */
				char d = p[j + 1];
				size_t k = j + 2;
				while (k + 1 < n && !(p[k] == d && p[k + 1] == ']'))
					k++;
				if (k + 1 < n) {
					if (d == ':' && !is_class_name(p + j + 2, k - (j + 2)))
						return "names an unknown [:class:]";
					j = k + 2;
					continue;
				}
				/* without its closing pair, the '[' is an ordinary member */
			}
			j++;
		}
		i = j;
	}
	return NULL;
}

int glob_pattern_check(const char *pattern, size_t n, char *why, size_t whylen)
{
	if (n > GLOB_PATTERN_MAX) {
		snprintf(why, whylen, "a pattern is longer than %d characters", GLOB_PATTERN_MAX);
		return -1;
	}
	const char *e = pattern_error(pattern, n);
	if (e) {
		char shown[GLOB_PATTERN_MAX * TEXT_SAFE_GROWTH + 1];
		text_safe_n(shown, sizeof(shown), pattern, n);
		snprintf(why, whylen, "pattern '%s' %s", shown, e);
		return -1;
	}
	return 0;
}

int glob_filter_check(const char *filter, char *why, size_t whylen)
{
	const char *p = filter ? filter : "";
	while (*p) {
		size_t n;
		bool exclude;
		const char *s = next_pattern(&p, &n, &exclude);
		if (glob_pattern_check(s, n, why, whylen) < 0)
			return -1;
	}
	return 0;
}
