#include "arity.h"

#include <stdlib.h>
#include <string.h>

static int cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct cuhook_arity *)elem)->func);
}

int cuhook_arity_find(const char *name)
{
	const struct cuhook_arity *a = bsearch(name, cuhook_arities, cuhook_arity_count, sizeof(*a), cmp);
	return a ? a->nparams : -1;
}

unsigned cuhook_stack_slots(const char *name, unsigned max)
{
	int n = cuhook_arity_find(name);
	if (n < 0)
		return max;
	/* Float parameters travel in xmm registers, so counting every parameter as an integer one
	 * can only ask for more slots than used, never fewer. */
	unsigned s = n > 6 ? (unsigned)n - 6 : 0;
	return s < max ? s : max;
}

unsigned cuhook_reg_args(const char *name)
{
	int n = cuhook_arity_find(name);
	return n < 0 || n > 6 ? 6u : (unsigned)n;
}
