/* The agent's translation of the hook engine's status codes into the trace file's
 * (src/agent/patch_status_map.h): every engine code has a trace code of its own, and only a
 * patched function is recorded as patched. */
#include "unit.h"

#include "patch_status_map.h"

static void every_code_maps_once(void)
{
	bool seen[CUHOOK_STATUS_COUNT] = {false};
	for (int s = 0; s < PATCH_STATUS_COUNT; s++) {
		uint16_t t = patch_status_trace(s);
		CHECK(t < CUHOOK_STATUS_COUNT, "engine status %d maps to %u, past the trace's codes", s, t);
		if (t >= CUHOOK_STATUS_COUNT)
			continue;
		CHECK(!seen[t], "engine status %d maps to trace code %u, as another engine status does", s, t);
		seen[t] = true;
		CHECK((s == PATCH_OK) == (t == CUHOOK_PATCHED), "engine status %d maps to %u", s, t);
	}
}

static void the_names_are_the_trace_names(void)
{
	CHECK(!strcmp(patch_status_name(PATCH_OK), "patched"), "%s", patch_status_name(PATCH_OK));
	CHECK(!strcmp(patch_status_name(PATCH_FILTERED), "excluded by filter"), "%s", patch_status_name(PATCH_FILTERED));
	CHECK(!strcmp(patch_status_name(PATCH_ALIAS), "alias of an already hooked address"), "%s",
	      patch_status_name(PATCH_ALIAS));
}

int main(void)
{
	RUN(every_code_maps_once);
	RUN(the_names_are_the_trace_names);
	UNIT_EXIT();
}
