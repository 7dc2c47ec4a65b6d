/* What a trace file is called: the agent names the file it writes with this rule, and the
 * injector (cuhook run --follow) finds a process's file with the same one. */
#ifndef CUHOOK_TRACE_PATH_H
#define CUHOOK_TRACE_PATH_H

#include <stdbool.h>
#include <stddef.h>

/* The trace file of process `pid` for the agent option output=`output`: every "%p" becomes the
 * pid; with `follow` (one file per process) and no "%p", ".PID" goes before the extension of
 * the file name (trace.bin -> trace.1234.bin; no extension: trace -> trace.1234; a leading dot
 * is a hidden file's, not an extension). Always NUL-terminated, cut to fit len. */
void cuhook_trace_path(const char *output, int pid, bool follow, char *buf, size_t len);

#endif
