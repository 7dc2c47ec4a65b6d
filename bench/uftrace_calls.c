/* The program uftrace records for bench/report_scale.sh: N calls of one small function spread over
 * T threads (like gen_trace big's N calls over T threads), compiled with -pg so that uftrace
 * records every call. Usage: uftrace_calls N T */
#include <pthread.h>
#include <stdlib.h>

static volatile long sink;

__attribute__((noinline)) void leaf(long i)
{
	sink += i;
}

static void *worker(void *arg)
{
	long n = (long)arg;
	for (long i = 0; i < n; i++)
		leaf(i);
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000, nt = argc > 2 ? atol(argv[2]) : 4;
	pthread_t th[64];
	if (nt < 1 || nt > 64)
		return 2;
	for (long t = 0; t < nt; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(n / nt)))
			return 1;
	for (long t = 0; t < nt; t++)
		pthread_join(th[t], NULL);
	return 0;
}
