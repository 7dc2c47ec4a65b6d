/* The engine's answer for one function: patched, or why not. The engine's own codes; whoever
 * records them elsewhere (the agent's trace) translates them in one place of its own. */
#ifndef CUHOOK_PATCH_STATUS_H
#define CUHOOK_PATCH_STATUS_H

enum patch_status {
	PATCH_OK = 0,
	PATCH_TOO_SMALL,          /* the jump does not fit inside the symbol */
	PATCH_UNDECODABLE,        /* Capstone could not decode an instruction */
	PATCH_BRANCH_INTO_PATCH,  /* some branch of the function targets the overwritten bytes */
	PATCH_UNRELOCATABLE,      /* an overwritten instruction cannot be moved (loop, jrcxz, xbegin...) */
	PATCH_RET_IN_PATCH,       /* a ret/jmp ends control flow inside the overwritten bytes before
	                             the function's end */
	PATCH_OUT_OF_RANGE,       /* no stub memory within +-2 GB, or a displacement overflows */
	PATCH_NOT_ATOMIC,         /* other threads run and the jump cannot be stored atomically */
	PATCH_PROTECT,            /* mprotect refused to make the code writable */
	PATCH_ALIAS,              /* another name for an address already planned */
	PATCH_FILTERED,           /* excluded by the request's filter */
	PATCH_NO_MEMORY,          /* the site table or stub memory is exhausted */
	PATCH_STATUS_COUNT
};

#endif
