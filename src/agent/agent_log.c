#include "agent_log.h"

#include "agent_state.h"
#include "to_writer.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static bool quiet;
static int verbose;
/* The writer's failure this session (agent_trace_failed): its errno, and what it said. */
static int trace_failed;
static char trace_failure[256];

void agent_log_configure(bool q, int v)
{
	quiet = q;
	verbose = v;
}

void agent_log(int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* level 0: stderr with CUHOOK_VERBOSE only; 1: also an info NOTE in the trace;
	 * 2: a warning NOTE, and stderr always. */
	if (level >= 1 && (agent_active || agent_prepared)) /* a preparation's notes go into its trace */
		writer_note(level - 1, msg, !agent_threads_stopped);
	if (!quiet && (verbose >= 1 || level >= 2)) {
		char line[560];
		int n = snprintf(line, sizeof(line), "cuhook: %s\n", msg);
		if (write(2, line, (size_t)(n < (int)sizeof(line) ? n : (int)sizeof(line) - 1)) < 0) {
		}
	}
}

void agent_trace_failed(int err)
{
	int n = snprintf(trace_failure, sizeof(trace_failure),
	                 "writing the trace failed (%s); tracing stopped, the program goes on", strerror(err));
	__atomic_store_n(&trace_failed, err, __ATOMIC_RELEASE);
	if (quiet || n <= 0)
		return;
	char line[sizeof(trace_failure) + 16];
	n = snprintf(line, sizeof(line), "cuhook: %s\n", trace_failure);
	if (write(2, line, (size_t)(n < (int)sizeof(line) ? n : (int)sizeof(line) - 1)) < 0) {
		/* nothing more we can do */
	}
}

const char *agent_trace_failure(void)
{
	return __atomic_load_n(&trace_failed, __ATOMIC_ACQUIRE) ? trace_failure : NULL;
}

void agent_trace_failure_clear(void)
{
	__atomic_store_n(&trace_failed, 0, __ATOMIC_RELEASE);
}
