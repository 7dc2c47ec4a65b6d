/* NVIDIA ioctls in a trace (agent option ioctl=1): what a request code and the argument bytes the
 * agent copied (src/format/decoders.h, the "ioctl" decoder) say. The report's "Driver boundary
 * (ioctls)" section built from them is ioctls.h.
 *
 * The tables are this project's own, written from the facts in NVIDIA's open-gpu-kernel-modules
 * headers: nv-ioctl-numbers.h, nv-ioctl-numa.h and nv-ioctl.h (the frontend requests: magic 'F',
 * numbers from 200, and their structs), nv_escape.h and nvos.h (the resource manager's escapes,
 * 0x27..0x5E, and their NVOSxx parameter structs), uvm_ioctl.h and uvm_linux_ioctl.h (nvidia-uvm's
 * raw request numbers), nvstatuscodes.h (NV_STATUS), g_allclasses.h and the ctrl headers (class and
 * control-command numbers; only the common ones are named). A code or a field the tables do not
 * know is shown raw, never dropped. */
#ifndef CUHOOK_REPORT_NVIOCTL_H
#define CUHOOK_REPORT_NVIOCTL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "trace_reader.h"

enum rp_ioc_family {
	RP_IOC_UNKNOWN = 0, /* not a request the tables know: shown as its number */
	RP_IOC_FRONTEND,    /* 'F', 200 + n: card info, version check, XFER_CMD... */
	RP_IOC_RM,          /* 'F', a resource manager escape (RM_ALLOC, RM_CONTROL...) */
	RP_IOC_UVM,         /* nvidia-uvm: a raw number (UVM_INITIALIZE 0x30000001, 1..2047) */
};

/* One ioctl call, decoded. */
struct rp_ioctl {
	uint32_t request;       /* the request argument's low 32 bits (the kernel's cmd) */
	uint8_t family;         /* enum rp_ioc_family */
	uint8_t dir;            /* _IOC_DIR (0 for raw numbers) */
	uint16_t size;          /* _IOC_SIZE, or XFER_CMD's size for the command it carries */
	uint32_t nr;            /* 'F' requests: _IOC_NR; UVM: the number */
	const char *name;       /* "RM_CONTROL", "XFER_CMD", "UVM_REGISTER_GPU"; NULL: unknown */
	/* The resource manager escape that did the work: nr itself, or what an XFER_CMD carried
	 * (then xfer is 1). 0 when the request is no RM escape. */
	uint32_t esc;
	const char *esc_name;   /* NULL for an unknown escape */
	uint8_t xfer;
	uint8_t timed;          /* the call has an EXIT */
	uint8_t failed;         /* the ioctl returned non-zero (-1) */
	uint8_t has_data;       /* argument bytes were recorded (a successful call) */
	int err;                /* errno of a failed call, 0 if not recorded */
	/* fields of the argument struct, each with a flag */
	uint8_t has_status, has_class, has_cmd, has_new;
	uint32_t status;        /* NV_STATUS the driver wrote (RM escapes, UVM, some frontend) */
	uint32_t hclass;        /* allocations: the class allocated */
	uint32_t cmd;           /* RM_CONTROL: the control command */
	uint32_t hnew;          /* allocations, dups: the handle of the new object */
	uint32_t hclient, hobject; /* RM: client and object (or parent) handles, when known */
	char extra[128];        /* frontend requests: their fields in words ("ctl_fd 4") */
};

/* Decode call c (a call of libc's ioctl, with its DATA record if any). */
void rp_ioctl_decode(const struct tr_trace *t, const struct tr_call *c, struct rp_ioctl *io);
/* "RM_ALLOC class 0x80 NV01_DEVICE_0 client 0xc1d00001 parent 0xc1d00001 -> 0xcaf00002 NV_OK" */
size_t rp_ioctl_describe(const struct rp_ioctl *io, char *buf, size_t len);
/* Short label for grouping: the name ("RM_CONTROL"), "XFER_CMD>RM_ALLOC" for a carried escape,
 * or "'F' 0x99" / "0x12345678" when unknown. */
const char *rp_ioctl_label(const struct rp_ioctl *io, char *buf, size_t len);
/* 1 if the call failed: ioctl returned non-zero, or the status it wrote is not NV_OK */
int rp_ioctl_failed(const struct rp_ioctl *io);

/* Names from the tables; NULL when not known. */
const char *rp_nv_status_name(uint32_t status);
const char *rp_nv_class_name(uint32_t hclass);
const char *rp_nv_ctrl_name(uint32_t cmd);
const char *rp_errno_name(int err);

#endif
