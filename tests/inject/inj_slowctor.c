/* libinj_slowctor.so: a library whose constructor never returns. The thread that dlopens it
 * keeps the dynamic loader's lock forever, which is what a remote dlopen meets when it stops a
 * process in the middle of another thread's dlopen: the injector must time out and back out. */
#include <unistd.h>

extern volatile int inj_ctor_running __attribute__((weak));

__attribute__((constructor)) static void stuck(void)
{
	if (&inj_ctor_running)
		inj_ctor_running = 1;
	for (;;)
		pause();
}
