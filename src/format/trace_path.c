#include "trace_path.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

void cuhook_trace_path(const char *output, int pid, bool follow, char *buf, size_t len)
{
	if (!len)
		return;
	size_t o = 0;
	bool has_pid = false;
	for (const char *p = output; *p && o + 1 < len; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			o += (size_t)snprintf(buf + o, len - o, "%d", pid);
			p++;
			has_pid = true;
		} else {
			buf[o++] = *p;
		}
	}
	buf[o < len ? o : len - 1] = 0;
	if (!follow || has_pid)
		return;
	char *base = strrchr(buf, '/');
	base = base ? base + 1 : buf;
	char *dot = strrchr(base, '.');
	if (!dot || dot == base)
		dot = buf + strlen(buf);
	char ext[PATH_MAX];
	snprintf(ext, sizeof(ext), "%s", dot);
	snprintf(dot, len - (size_t)(dot - buf), ".%d%s", pid, ext);
}
