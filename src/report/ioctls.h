/* The report's "Driver boundary (ioctls)" section: the NVIDIA ioctls of a view's selected calls
 * (decoded by nvioctl.h) per request, control command and class, and per API function the
 * ioctls its calls made. Its numbers are analysed once (result.c); the writers only format. */
#ifndef CUHOOK_REPORT_IOCTLS_H
#define CUHOOK_REPORT_IOCTLS_H

#include <stdint.h>
#include <stdio.h>

#include "nvioctl.h"

struct rp_view;

/* Per API function: the ioctls its calls made directly (the ioctl's caller is a call of it). */
struct rp_ioc_fn {
	uint32_t func;          /* function id of the API function, TR_NONE: no traced caller */
	uint64_t calls;         /* its selected calls */
	uint64_t calls_with;    /* of which made at least one ioctl */
	uint64_t ioctls;
	int64_t total;          /* its calls' summed duration */
	int64_t in_ioctl;       /* time inside the ioctls they made */
	int64_t self;           /* duration minus every traced call inside (API or ioctl): the
	                           driver's own code in user space */
};

struct rp_ioc_row {
	char label[48];         /* request label, "0x20800110", "0x80" */
	const char *name;       /* decoded name of the command or class, NULL if unknown */
	uint64_t count, failed;
	int64_t total;
};

#define RP_IOC_MAX_ROWS 64
struct rp_ioc_summary {
	uint64_t ioctls, failed, outside, with_data;
	int64_t total, outside_time;
	int64_t api_time;       /* outermost API calls' time, for the share in the driver */
	struct rp_ioc_fn *fn;   /* sorted by in_ioctl, largest first; the caller frees */
	uint32_t nfn;
	struct rp_ioc_row req[RP_IOC_MAX_ROWS], ctrl[RP_IOC_MAX_ROWS], cls[RP_IOC_MAX_ROWS];
	uint32_t nreq, nctrl, ncls;
	uint64_t req_other, ctrl_other, cls_other; /* calls beyond the table sizes */
	uint64_t nfail_shown;
	uint32_t fail[8];       /* indices in calls[] of the first failed ones */
};

/* Build the section's numbers from the view's selected calls. 0, or -1 when out of memory.
 * s->ioctls == 0: the trace has no ioctl (the section is not printed). */
int rp_ioctl_summary(const struct rp_view *v, struct rp_ioc_summary *s);
void rp_ioctl_summary_free(struct rp_ioc_summary *s);
void rp_ioctl_write_text(FILE *f, const struct rp_view *v, const struct rp_ioc_summary *s);
/* The "ioctls" member of the json export (without a leading comma). */
void rp_ioctl_write_json(FILE *f, const struct rp_view *v, const struct rp_ioc_summary *s);

#endif
