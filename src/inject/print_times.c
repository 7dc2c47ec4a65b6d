/* The injector's timings as one line on stderr (cuhook run -v, cuhook attach -v, and each program
 * a followed tree execs). */
#include "inject.h"

#include <stdio.h>
#include <sys/types.h>

void cuhook_inject_print_times(const char *what, const struct cuhook_inject_times *t)
{
	char load[64];
	if (t->beside || (!t->agent_reused && !t->load_ns))
		load[0] = 0; /* not in the stopped time (told after), or none (a detach) */
	else
		snprintf(load, sizeof(load), "%s %.2f, ", t->agent_reused ? "agent reused" : "dlopen",
		         t->load_ns / 1e6);
	fprintf(stderr,
	        "cuhook: %s: %d thread%s stopped for %.2f ms (stop %.2f, %scall %.2f, fixup %.2f "
	        "[%d moved], detach %.2f)",
	        what, t->nthreads, t->nthreads == 1 ? "" : "s", t->stopped_ns / 1e6, t->seize_ns / 1e6,
	        load, t->call_ns / 1e6, t->fixup_ns / 1e6, t->moved, t->detach_ns / 1e6);
	if (t->beside && t->agent_reused)
		fprintf(stderr, "; before, while they ran: agent reused, prepare %.2f", t->prepare_ns / 1e6);
	else if (t->beside && t->load_ns)
		fprintf(stderr, "; before, while they ran: dlopen %.2f, prepare %.2f", t->load_ns / 1e6,
		        t->prepare_ns / 1e6);
	else if (t->beside) /* a detach's (gpu=1: cuhook_agent_prepare_stop) */
		fprintf(stderr, "; before, while they ran: prepare %.2f", t->prepare_ns / 1e6);
	fputc('\n', stderr);
	if (t->have_stop_steps) {
		/* the agent's own figures of its stop (the "call" above, less the remote call's trip) */
		const uint64_t *n = t->stop_step_ns;
		fprintf(stderr, "cuhook: %s: the agent's stop: GPU %.2f, capture %.2f, jumps out %.2f, trace closed %.2f, "
		        "watch %.2f, names %.2f ms\n", what, n[0] / 1e6, n[1] / 1e6, n[2] / 1e6, n[3] / 1e6, n[4] / 1e6,
		        n[5] / 1e6);
	}
	if (t->have_gpu_stop_steps) {
		/* No thread is held then, but a CUDA call made meanwhile may wait on CUPTI, on its
		 * finalize above all (CUPTI leaving the driver). On an H200 a GPT-2 loop's iteration at
		 * the detach was longer than its median by the longest hold plus the finalize (2.0-2.6
		 * ms, once 4.4 and once 6.7), within 2 ms, in 9 of 12 detaches; by the hold alone in 3 of
		 * 18 (docs/validation.md). */
		const uint64_t *n = t->gpu_stop_step_ns;
		fprintf(stderr, "cuhook: %s: the agent's GPU stop, beside the running program: flush %.2f, disable %.2f, "
		        "flush again %.2f, finalize %.2f ms (no thread held, but a CUDA call made meanwhile may wait on "
		        "CUPTI, on its finalize above all: the longest hold and the finalize together %.2f ms)\n",
		        what, n[0] / 1e6, n[1] / 1e6, n[2] / 1e6, n[3] / 1e6,
		        (t->held_max_ns + n[CUHOOK_INJECT_GPU_STOP_STEPS - 1]) / 1e6);
	}
	if (t->nheld) {
		/* What the program felt: each thread's longest hold and its sum over every stop. */
		static char list[1 << 16];
		cuhook_inject_held_text(list, sizeof(list));
		fprintf(stderr, "cuhook: %s: %d thread%s held, longest %.2f ms (thread %d), most in all %.2f ms; "
		        "per thread (ms, longest/total): %s\n", what, t->nheld, t->nheld == 1 ? "" : "s",
		        t->held_max_ns / 1e6, t->held_max_tid, t->held_total_max_ns / 1e6, list);
	}
}
