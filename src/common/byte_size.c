#include "byte_size.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

int cuhook_parse_size(const char *s, uint64_t *bytes)
{
	uint64_t v = 0;
	const char *p = s;
	if (!isdigit((unsigned char)*p))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	static const char units[] = "KMGT";
	unsigned shift = 0;
	if ((*p == 'B' || *p == 'b') && !p[1])
		p++; /* bytes, said */
	if (*p) {
		const char *u = strchr(units, toupper((unsigned char)*p));
		if (!u)
			return -1;
		shift = 10 * (unsigned)(u - units + 1);
		p++;
		if (*p && strcasecmp(p, "B") != 0 && strcasecmp(p, "iB") != 0)
			return -1;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return -1;
	*bytes = v << shift;
	return 0;
}
