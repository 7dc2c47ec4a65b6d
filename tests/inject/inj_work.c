/* libinj_work.so: the "library" the injection test target calls in a loop. Pure functions, so
 * the target's checksum depends only on its arguments, never on timing or on being traced. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

uint64_t inj_work(uint64_t x)
{
	/* splitmix64, plus a malloc/free pair: the test target's threads then hold and release the
	 * malloc locks all the time, as real programs do while we stop and remote-call them */
	char *p = malloc(32 + (x & 255));
	if (p) {
		memset(p, (int)(x & 0xff), 32);
		x += (uint64_t)p[7];
		free(p);
	}
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}
