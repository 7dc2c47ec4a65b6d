/* The inbox of notes from outside the process (inbox.h). */
#include "inbox.h"

#include "cuhook_agent.h"
#include "to_writer.h"

#include <stdint.h>

CUHOOK_API volatile struct cuhook_agent_inbox cuhook_agent_inbox = {.magic = CUHOOK_AGENT_INBOX_MAGIC};

static uint32_t seen; /* the writer's: seq of the last note taken */

void inbox_session_begins(void)
{
	seen = __atomic_load_n(&cuhook_agent_inbox.seq, __ATOMIC_ACQUIRE);
	__atomic_store_n(&cuhook_agent_inbox.taken, seen, __ATOMIC_RELEASE);
}

void inbox_take(void)
{
	uint32_t s = __atomic_load_n(&cuhook_agent_inbox.seq, __ATOMIC_ACQUIRE);
	if (s == seen)
		return;
	static char text[CUHOOK_AGENT_INBOX_TEXT];
	for (unsigned i = 0; i < sizeof(text); i++)
		text[i] = cuhook_agent_inbox.text[i];
	text[sizeof(text) - 1] = 0; /* whatever the tool wrote */
	if (text[0])
		writer_note(0, text, true);
	seen = s;
	__atomic_store_n(&cuhook_agent_inbox.taken, s, __ATOMIC_RELEASE);
}
