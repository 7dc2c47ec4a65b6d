/* The process's place in a multi-process job, said once in the trace: the rank, world size and
 * local rank its launcher put in its environment (torchrun and torch.distributed: RANK,
 * WORLD_SIZE, LOCAL_RANK; Open MPI: OMPI_COMM_WORLD_*; MPICH and Intel MPI: PMI_RANK, PMI_SIZE,
 * MPI_LOCALRANKID; Slurm: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID). The report labels the
 * processes of a merged report by it (docs/trace-format.md, "job" notes).
 *
 * Read from /proc/self/environ, the environment the process was started with, not through
 * environ: after an attach a program thread may be inside setenv, and a launcher sets these at
 * exec anyway. Only decimal numbers are taken: the note never carries text from the environment
 * (it may be a setuid program's, chosen by whoever started it). */
#include "job_env.h"

#include "agent_log.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One launcher's three variables; world and local may be missing. */
static const char *const sets[][3] = {
	{"RANK", "WORLD_SIZE", "LOCAL_RANK"},
	{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
	{"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
	{"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};
#define NSETS (sizeof(sets) / sizeof(sets[0]))
#define ENTRY_MAX 64 /* longer entries are not one of ours */

struct found {
	long v[NSETS][3]; /* -1: not set or not a number */
};

static long number(const char *s)
{
	long v = 0;
	if (!*s || strlen(s) > 9)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

static void take(struct found *f, const char *entry)
{
	const char *eq = strchr(entry, '=');
	if (!eq)
		return;
	size_t n = (size_t)(eq - entry);
	for (unsigned s = 0; s < NSETS; s++)
		for (unsigned k = 0; k < 3; k++)
			if (strlen(sets[s][k]) == n && !memcmp(entry, sets[s][k], n))
				f->v[s][k] = number(eq + 1);
}

/* Entries are NUL-separated; one cut by a read is completed from the next (or dropped when too
 * long to be ours). */
static void scan(int fd, struct found *f)
{
	char buf[4096], entry[ENTRY_MAX + 1];
	size_t elen = 0;
	bool skip = false;
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == '\0') {
				entry[elen] = '\0';
				if (!skip)
					take(f, entry);
				elen = 0;
				skip = false;
			} else if (elen < ENTRY_MAX) {
				entry[elen++] = buf[i];
			} else {
				skip = true;
			}
		}
}

void job_env_note(void)
{
	struct found f;
	memset(&f, 0xff, sizeof(f));
	int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	scan(fd, &f);
	close(fd);
	for (unsigned s = 0; s < NSETS; s++) {
		if (f.v[s][0] < 0)
			continue;
		char world[32] = "", local[32] = "";
		if (f.v[s][1] >= 0)
			snprintf(world, sizeof(world), " world=%ld", f.v[s][1]);
		if (f.v[s][2] >= 0)
			snprintf(local, sizeof(local), " local_rank=%ld", f.v[s][2]);
		agent_log(1, "job: rank=%ld%s%s (from %s)", f.v[s][0], world, local, sets[s][0]);
		return;
	}
}
