/* The process's rank in a multi-process job, from its launcher's environment variables, as an
 * info NOTE "job: rank=R[ world=W][ local_rank=L] (from VAR)" (job_env.c). */
#ifndef CUHOOK_AGENT_JOB_ENV_H
#define CUHOOK_AGENT_JOB_ENV_H

void job_env_note(void);

#endif
