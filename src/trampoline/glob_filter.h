/* Which function names a user asked for. */
#ifndef CUHOOK_GLOB_FILTER_H
#define CUHOOK_GLOB_FILTER_H

#define GLOB_PATTERN_MAX 255 /* characters of one pattern */

/* Glob filter: comma-separated fnmatch(3) patterns; a pattern starting with '-' or '!'
 * excludes. Blanks around a pattern are ignored. A name passes if it matches some include and
 * no exclude. An empty include list means "everything". A pattern longer than
 * GLOB_PATTERN_MAX matches nothing (glob_filter_check refuses such a filter). */
int glob_filter_match(const char *filter, const char *name);

/* 0, or -1 when a pattern of the filter is longer than GLOB_PATTERN_MAX. */
int glob_filter_check(const char *filter);

#endif
