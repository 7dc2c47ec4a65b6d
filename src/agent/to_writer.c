#include "to_writer.h"

#include <linux/futex.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static uint32_t wake;          /* futex word: WAKE_* bits, what the writer was woken for */
static pthread_mutex_t notes_lock = PTHREAD_MUTEX_INITIALIZER;
static char notes[NOTES_CAP];  /* level byte + text + NUL, back to back */
static size_t notes_len;
static unsigned notes_lost;    /* did not fit: said in a note of their own */

static void wake_for(uint32_t why)
{
	if (__atomic_fetch_or(&wake, why, __ATOMIC_ACQ_REL) == 0)
		syscall(SYS_futex, &wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void writer_wake(void)
{
	wake_for(WAKE_DRAIN);
}

void writer_wake_populate(void)
{
	wake_for(WAKE_POPULATE);
}

uint32_t to_writer_take_wakes(void)
{
	return __atomic_exchange_n(&wake, 0, __ATOMIC_ACQ_REL);
}

void to_writer_wait(const struct timespec *t)
{
	syscall(SYS_futex, &wake, FUTEX_WAIT_PRIVATE, 0, t, NULL, 0);
}

void writer_note(int level, const char *text, bool wait)
{
	size_t n = strlen(text);
	if (!wait) {
		if (pthread_mutex_trylock(&notes_lock) != 0)
			return;
	} else {
		pthread_mutex_lock(&notes_lock);
	}
	if (notes_len + n + 2 <= NOTES_CAP) {
		notes[notes_len] = (char)level;
		memcpy(notes + notes_len + 1, text, n + 1);
		notes_len += n + 2;
	} else {
		notes_lost++;
	}
	pthread_mutex_unlock(&notes_lock);
}

size_t to_writer_take_notes(char *out, unsigned *lost)
{
	pthread_mutex_lock(&notes_lock);
	size_t len = notes_len;
	*lost = notes_lost;
	memcpy(out, notes, len);
	notes_len = 0;
	notes_lost = 0;
	pthread_mutex_unlock(&notes_lock);
	return len;
}

void to_writer_drop_notes(void)
{
	if (pthread_mutex_trylock(&notes_lock) == 0) {
		notes_len = 0;
		notes_lost = 0;
		pthread_mutex_unlock(&notes_lock);
	}
}

void to_writer_after_fork(void)
{
	pthread_mutex_init(&notes_lock, NULL);
	notes_len = 0;
	notes_lost = 0;
}
