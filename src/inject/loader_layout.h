/* The data page of the agent's loading thread (loader.S, loader_thread.c): what the injector
 * writes there before the thread starts, and what the thread leaves there for the injector,
 * which reads it through /proc/PID/mem while every thread of the process runs. Offsets only: the
 * assembly includes this file too. */
#ifndef CUHOOK_INJECT_LOADER_LAYOUT_H
#define CUHOOK_INJECT_LOADER_LAYOUT_H

/* written by the injector */
#define LD_PTHREAD_SELF 0x00   /* libc's pthread_self */
#define LD_PTHREAD_DETACH 0x08 /* libc's pthread_detach */
#define LD_DLOPEN 0x10         /* dlopen (or __libc_dlopen_mode); 0: the agent is loaded already */
#define LD_DLERROR 0x18        /* 0: none (the message stays empty) */
#define LD_DLSYM 0x20          /* to find the three below after the dlopen */
#define LD_MODE 0x28
/* the agent's API: written by the injector for an agent loaded already, else found by dlsym */
#define LD_PREPARE 0x30        /* cuhook_agent_prepare; 0: an agent without it */
#define LD_LAST_ERROR 0x38     /* cuhook_agent_last_error */
#define LD_THREADS 0x40        /* cuhook_agent_threads: the thread lists itself there */
/* written by the thread */
#define LD_TID 0x48            /* its thread id (int32), first thing */
#define LD_STATE 0x4c          /* int32: LD_RUNNING, then LD_LOADED, then LD_DONE or LD_FAILED */
#define LD_HANDLE 0x50         /* dlopen's result */
#define LD_PREPARE_RC 0x58     /* prepare's result, sign-extended */
#define LD_SLOT 0x60           /* its slot in cuhook_agent_threads, 0 if none */
#define LD_PTHREAD 0x68        /* pthread_create's first argument */
/* CLOCK_MONOTONIC (struct timespec) when it began, when dlopen returned, when it was done:
 * the injector, polling, would see them late */
#define LD_T_START 0x70
#define LD_T_LOADED 0x80
#define LD_T_DONE 0x90
/* strings */
#define LD_SYM_PREPARE 0xa0    /* "cuhook_agent_prepare" */
#define LD_SYM_LAST_ERROR 0xc0 /* "cuhook_agent_last_error" */
#define LD_SYM_THREADS 0xe0    /* "cuhook_agent_threads" */
#define LD_MSG 0x100           /* dlerror()'s or the agent's message, copied (the thread's own
                                  dlerror buffer goes with it) */
#define LD_MSG_MAX 1024
#define LD_PATH 0x500          /* the agent's path */
#define LD_PATH_MAX 4096
#define LD_OPTIONS 0x1500      /* the options for cuhook_agent_prepare, to the end of the page(s) */

#define LD_RUNNING 0
#define LD_LOADED 1            /* dlopen returned the agent */
#define LD_DONE 2              /* prepared (or nothing to prepare): LD_PREPARE_RC says how */
#define LD_FAILED 3            /* dlopen failed: LD_MSG says why */

/* The agent's list of its threads (struct cuhook_agent_threads): generation, then the slots. */
#define LD_AT_GENERATION 4
#define LD_AT_TID 8
#define LD_AT_SLOTS 8

/* Where the thread's code goes in the call gate's page (remote_call.c): after the gate and the
 * entry stub, in the page the agent's constructor knows (it does not start by itself while it is
 * mapped) and which stays mapped while the thread may run in it. */
#define LD_CODE_OFF 1024

#endif
