/* How cuhook creates every file it writes (the agent's traces, `cuhook report -o`): a new file,
 * created exclusively with mode 0600, never through a symbolic link, never truncating what is
 * there. A trace holds the command line and addresses, and the tool runs as root in directories
 * other users can write (/tmp): a planted link or file must not make it write anywhere else.
 *
 * "Replace" (cuhook --force, the agent's force=1) removes an existing regular file or symbolic
 * link first (the link itself, never its target) and then creates the file exclusively all the
 * same: should anyone put a new entry there in between, creation fails instead of writing
 * through it. Anything else at the path (a directory, a device, a FIFO, a socket) is never
 * removed. */
#ifndef CUHOOK_OUT_FILE_H
#define CUHOOK_OUT_FILE_H

#include <stdbool.h>
#include <stddef.h>

/* Creates `path` for writing (O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600); with
 * `replace`, as said above. Returns the fd, or -errno with a message in err naming the file as
 * `what` ("trace file"): "cannot create WHAT 'PATH': REASON", or, when something is there that
 * may not be replaced, "WHAT 'PATH' exists; HINT" (HINT says how to replace it or what to do
 * instead). */
int cuhook_out_create(const char *path, bool replace, const char *what, const char *hint, char *err,
                      size_t errlen);

/* Would cuhook_out_create() refuse because of what is at `path` now, or because the directory
 * it goes in does not exist (or is not one)? 0 no, or -errno with the message it would give. For a check before any work is done; the creation itself decides. */
int cuhook_out_check(const char *path, bool replace, const char *what, const char *hint, char *err,
                     size_t errlen);

#endif
