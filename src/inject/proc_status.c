/* Fields of /proc/PID/status and /proc/PID/comm, read as text: the checks before an attach
 * (checks.c) and the reasons a seize was refused (seize_refusal.c) both name what they read. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

char *proc_status_field(pid_t pid, const char *key, char *buf, size_t len)
{
	char dir[32];
	snprintf(dir, sizeof(dir), "%d", pid);
	return proc_status_field_at(dir, key, buf, len);
}

char *proc_status_field_at(const char *dir, const char *key, char *buf, size_t len)
{
	char p[96], line[512];
	snprintf(p, sizeof(p), "/proc/%s/status", dir);
	FILE *f = fopen(p, "re");
	if (!f)
		return NULL;
	size_t kl = strlen(key);
	char *res = NULL;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
			char *v = line + kl + 1;
			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = 0;
			snprintf(buf, len, "%s", v);
			res = buf;
			break;
		}
	}
	fclose(f);
	return res;
}

void proc_comm(pid_t pid, char *buf, size_t len)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/comm", pid);
	FILE *f = fopen(p, "re");
	buf[0] = 0;
	if (f) {
		if (fgets(buf, (int)len, f))
			buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
	if (!buf[0])
		snprintf(buf, len, "?");
}
