#include "out_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* O_EXCL: a new file or nothing (and, with O_CREAT, a symbolic link at the path is not
 * followed: EEXIST); O_NOFOLLOW says the same for systems that would. */
#define OUT_FLAGS (O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC)
#define OUT_MODE 0600

/* What is at the path (st, from lstat) may stay there only: 0 if it may be removed (a regular
 * file or a link, and replace asked), else -errno with the message. */
static int judge_existing(const char *path, const struct stat *st, bool replace, const char *what,
                          const char *hint, char *err, size_t errlen)
{
	if (S_ISDIR(st->st_mode)) {
		snprintf(err, errlen, "cannot create %s '%s': %s", what, path, strerror(EISDIR));
		return -EISDIR;
	}
	if (!replace) {
		snprintf(err, errlen, "%s '%s' exists; %s", what, path, hint);
		return -EEXIST;
	}
	if (!S_ISREG(st->st_mode) && !S_ISLNK(st->st_mode)) {
		snprintf(err, errlen, "%s '%s' exists and is neither a regular file nor a symbolic link: "
		         "it is never replaced", what, path);
		return -EEXIST;
	}
	return 0;
}

int cuhook_out_check(const char *path, bool replace, const char *what, const char *hint, char *err,
                     size_t errlen)
{
	struct stat st;
	if (lstat(path, &st) == 0)
		return judge_existing(path, &st, replace, what, hint, err, errlen);
	if (errno != ENOENT && errno != ENOTDIR)
		return 0; /* nothing we can see: creating will tell */
	/* Nothing there: the directory it goes in must be one (a missing directory is the usual
	 * typo in -o, told now rather than by the process that was to write it). Whether it may be
	 * written is the writer's to find: the agent in another process may run as another user. */
	char dir[4096];
	const char *slash = strrchr(path, '/');
	size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
	if (n >= sizeof(dir))
		return 0;
	memcpy(dir, slash ? path : ".", n);
	dir[n] = 0;
	int e = stat(dir, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
	if (!e || (e != ENOENT && e != ENOTDIR))
		return 0;
	snprintf(err, errlen, "cannot create %s '%s': %s", what, path, strerror(e));
	return -e;
}

int cuhook_out_create(const char *path, bool replace, const char *what, const char *hint, char *err,
                      size_t errlen)
{
	int fd = open(path, OUT_FLAGS, OUT_MODE);
	if (fd >= 0)
		return fd;
	int e = errno;
	if (e == EEXIST) {
		struct stat st;
		if (lstat(path, &st) == 0) {
			int rc = judge_existing(path, &st, replace, what, hint, err, errlen);
			if (rc)
				return rc;
			/* the name goes, not what a link points to */
			if (unlink(path) != 0 && errno != ENOENT) {
				e = errno;
				snprintf(err, errlen, "cannot replace %s '%s': %s", what, path, strerror(e));
				return -e;
			}
		}
		fd = open(path, OUT_FLAGS, OUT_MODE);
		if (fd >= 0)
			return fd;
		e = errno;
		if (e == EEXIST) {
			snprintf(err, errlen, "%s '%s' was created again by someone else while being replaced; "
			         "not written", what, path);
			return -e;
		}
	}
	snprintf(err, errlen, "cannot create %s '%s': %s", what, path, strerror(e));
	return -e;
}
