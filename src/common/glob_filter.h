/* Which function names a user asked for. */
#ifndef CUHOOK_GLOB_FILTER_H
#define CUHOOK_GLOB_FILTER_H

#include <stddef.h>

#define GLOB_PATTERN_MAX 255 /* characters of one pattern */

/* Glob filter: comma-separated fnmatch(3) patterns; a pattern starting with '-' or '!'
 * excludes. Blanks around a pattern are ignored. A name passes if it matches some include and
 * no exclude. An empty include list means "everything". A pattern longer than
 * GLOB_PATTERN_MAX matches nothing (glob_filter_check refuses such a filter). */
int glob_filter_match(const char *filter, const char *name);
/* The same for a thing known by several names (a thread: its tid and its name): it passes if
 * some include matches one of its names and no exclude matches any of them. */
int glob_filter_match_any(const char *filter, const char *const *names, size_t nnames);

/* 0, or -1 with the reason in why when a pattern of the filter is longer than GLOB_PATTERN_MAX
 * or is not a well-formed fnmatch(3) pattern (a '[' without its ']', a lone trailing '\', an
 * unknown [:class:]): such a pattern would match nothing, or not what was meant, silently. */
int glob_filter_check(const char *filter, char *why, size_t whylen);
/* The same for one pattern of n bytes. */
int glob_pattern_check(const char *pattern, size_t n, char *why, size_t whylen);

#endif
