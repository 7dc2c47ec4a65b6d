/* Which function names a user asked for. */
#ifndef CUHOOK_GLOB_FILTER_H
#define CUHOOK_GLOB_FILTER_H

/* Glob filter: comma-separated fnmatch(3) patterns; a pattern starting with '-' or '!'
 * excludes. A name passes if it matches some include and no exclude. An empty include list
 * means "everything". */
int glob_filter_match(const char *filter, const char *name);

#endif
