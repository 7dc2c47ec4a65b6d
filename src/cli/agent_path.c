/* Where the agent library is (commands.h): found for cuhook run and attach, never given by the
 * working directory. */
#include "cli_msg.h"
#include "commands.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef CUHOOK_LIBDIR
#define CUHOOK_LIBDIR "/usr/local/lib"
#endif

int cuhook_agent_path(char *buf, unsigned long len)
{
	/* Next to our own executable first (the build tree keeps both in one place), then the
	 * install tree. Never a path relative to the working directory. */
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			const char *cands[] = {"%s/libcuhook.so", "%s/../agent/libcuhook.so",
			                       "%s/../lib/libcuhook.so", "%s/../lib/x86_64-linux-gnu/libcuhook.so"};
			for (unsigned i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
				char p[PATH_MAX + 64];
				snprintf(p, sizeof(p), cands[i], self);
				char real[PATH_MAX];
				if (realpath(p, real) && access(real, R_OK) == 0 && strlen(real) < len) {
					strcpy(buf, real);
					return 0;
				}
			}
		}
	}
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/libcuhook.so", CUHOOK_LIBDIR);
	if (access(p, R_OK) == 0 && strlen(p) < len) {
		strcpy(buf, p);
		return 0;
	}
	cuhook_cli_error("cannot find the agent library libcuhook.so next to the cuhook executable or in %s",
	                 CUHOOK_LIBDIR);
	return -1;
}
