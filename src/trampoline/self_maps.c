#include "self_maps.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int self_maps_each(bool (*fn)(uintptr_t start, uintptr_t end, const char *rest, void *ctx), void *ctx)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[8192], line[512];
	size_t ll = 0;
	ssize_t n;
	bool done = false;
	while (!done && (n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n && !done; i++) {
			if (buf[i] != '\n') {
				if (ll < sizeof(line) - 1)
					line[ll++] = buf[i];
				continue;
			}
			line[ll] = 0;
			ll = 0;
			char *e;
			uintptr_t a = strtoul(line, &e, 16);
			if (*e != '-')
				continue;
			uintptr_t b = strtoul(e + 1, &e, 16);
			while (*e == ' ')
				e++;
			done = fn(a, b, e, ctx);
		}
	close(fd);
	return 0;
}
