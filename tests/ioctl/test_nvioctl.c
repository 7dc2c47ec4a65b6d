/* Unit tests of the report's NVIDIA ioctl decoder (src/report/nvioctl.c) on hand-made calls:
 * the layouts the stand-in does not exercise (NVOS64 RM_ALLOC, both sizes of NVOS46 and NVOS47,
 * XFER_CMD carrying an allocation, UVM statuses), unknown codes, failures, short data, and the
 * name tables. */
#include "unit.h"

#include "decoders.h"
#include "nvioctl.h"
#include "trace_reader.h"

#define IOWR(type, nr, size) ((3u << 30) | ((unsigned)(size) << 16) | ((unsigned)(type) << 8) | (unsigned)(nr))

static struct tr_trace T;
static struct tr_call C;
static struct tr_data D;
static union { /* an ENTRY with its six registers */
	struct cuhook_rec_entry e;
	uint64_t words[3 + 6];
} EB;
#define E (EB.e)
static uint64_t vals[2];
static uint8_t bytes[256];

/* A call of ioctl(fd, req, argp) that returned ret, with n argument bytes (and ni carried by an
 * XFER_CMD) recorded, or errno err. */
static void mk(uint32_t req, const void *arg, unsigned n, const void *inner, unsigned ni, uint64_t ret, int err)
{
	memset(&T, 0, sizeof(T));
	memset(&C, 0, sizeof(C));
	memset(&D, 0, sizeof(D));
	memset(&EB, 0, sizeof(EB));
	E.regs[0] = 5;
	E.regs[1] = req;
	E.regs[2] = 0x7ffc0000;
	C.args_ = E.regs;
	C.nregs_ = 6;
	C.ret = ret;
	C.ndata = 1;
	C.data_first = 0;
	C.parent = TR_NONE;
	T.data = &D;
	T.ndata = 1;
	D.decoder = (uint16_t)cuhook_decoder_find("ioctl");
	D.at_exit = 1;
	D.nvalues = 2;
	vals[0] = n;
	vals[1] = (uint64_t)err;
	D.values = vals;
	if (n)
		memcpy(bytes, arg, n);
	if (ni)
		memcpy(bytes + n, inner, ni);
	D.str = (const char *)bytes;
	D.str_len = (uint16_t)(n + ni);
}

static void put32(uint8_t *b, unsigned off, uint32_t v)
{
	memcpy(b + off, &v, 4);
}

static struct rp_ioctl io;
static char text[512];

static void decode(void)
{
	rp_ioctl_decode(&T, &C, &io);
	rp_ioctl_describe(&io, text, sizeof(text));
}

static void rm_alloc_sizes(void)
{
	uint8_t s[48] = {0};
	put32(s, 0, 0xc1d00001);
	put32(s, 4, 0xc1d00001);
	put32(s, 8, 0xcaf00002);
	put32(s, 12, 0x80);
	put32(s, 28, 0x11111111); /* NVOS21's status place: must not be read for NVOS64 */
	put32(s, 40, 0x22);       /* NVOS64's status */
	mk(IOWR('F', 0x2b, 48), s, 48, NULL, 0, 0, 0);
	decode();
	CHECK(io.family == RP_IOC_RM && io.name && !strcmp(io.name, "RM_ALLOC"), "name %s", io.name ? io.name : "-");
	CHECK(io.has_class && io.hclass == 0x80, "class 0x%x", io.hclass);
	CHECK(io.has_status && io.status == 0x22, "NVOS64 status 0x%x", io.status);
	CHECK(rp_ioctl_failed(&io), "a non-OK status is a failure");
	CHECK(strstr(text, "NV01_DEVICE_0") && strstr(text, "-> 0xcaf00002") && strstr(text, "NV_ERR_INVALID_CLASS"),
	      "%s", text);

	put32(s, 28, 0); /* NVOS21: 32 bytes, status at 28 */
	mk(IOWR('F', 0x2b, 32), s, 32, NULL, 0, 0, 0);
	decode();
	CHECK(io.has_status && io.status == 0, "NVOS21 status 0x%x", io.status);
	CHECK(!rp_ioctl_failed(&io), "NV_OK");
	CHECK(strstr(text, "NV_OK") != NULL, "%s", text);
}

static void dma_sizes(void)
{
	uint8_t s[64] = {0};
	put32(s, 48, 0x1f); /* old NVOS46 (56 bytes): status at 48 */
	put32(s, 56, 0x33); /* NVOS46 with flags2/kindOverride (64 bytes): status at 56 */
	mk(IOWR('F', 0x57, 64), s, 64, NULL, 0, 0, 0);
	decode();
	CHECK(io.name && !strcmp(io.name, "RM_MAP_MEMORY_DMA") && io.has_status && io.status == 0x33,
	      "64-byte NVOS46: status 0x%x", io.status);
	mk(IOWR('F', 0x57, 56), s, 56, NULL, 0, 0, 0);
	decode();
	CHECK(io.has_status && io.status == 0x1f, "56-byte NVOS46: status 0x%x", io.status);
	memset(s, 0, sizeof(s));
	put32(s, 32, 0x1f);
	put32(s, 40, 0x56);
	mk(IOWR('F', 0x58, 48), s, 48, NULL, 0, 0, 0);
	decode();
	CHECK(io.has_status && io.status == 0x56, "48-byte NVOS47: status 0x%x", io.status);
	mk(IOWR('F', 0x58, 40), s, 40, NULL, 0, 0, 0);
	decode();
	CHECK(io.has_status && io.status == 0x1f, "40-byte NVOS47: status 0x%x", io.status);
}

static void xfer(void)
{
	uint8_t x[16] = {0}, in[48] = {0};
	put32(x, 0, 0x2b);
	put32(x, 4, 48);
	put32(x, 8, 0x12345678);
	put32(in, 12, 0xc86f);
	put32(in, 8, 0xcaf00009);
	put32(in, 40, 0);
	mk(IOWR('F', 211, 16), x, 16, in, 48, 0, 0);
	decode();
	char l[64];
	CHECK(io.family == RP_IOC_FRONTEND && io.xfer && io.esc == 0x2b, "xfer %u esc 0x%x", io.xfer, io.esc);
	CHECK(!strcmp(rp_ioctl_label(&io, l, sizeof(l)), "XFER_CMD>RM_ALLOC"), "label %s", l);
	CHECK(io.has_class && io.hclass == 0xc86f && io.has_status && io.status == 0, "class 0x%x status 0x%x",
	      io.hclass, io.status);
	CHECK(strstr(text, "HOPPER_CHANNEL_GPFIFO_A") != NULL, "%s", text);
}

static void uvm(void)
{
	uint8_t s[64] = {0};
	put32(s, 36, 0x5e);
	mk(37, s, 64, NULL, 0, 0, 0);
	decode();
	CHECK(io.family == RP_IOC_UVM && io.name && !strcmp(io.name, "UVM_REGISTER_GPU"), "name %s",
	      io.name ? io.name : "-");
	CHECK(io.has_status && io.status == 0x5e && strstr(text, "NV_ERR_PID_NOT_FOUND"), "%s", text);
	memset(s, 0, sizeof(s));
	put32(s, 8, 0);
	mk(0x30000001, s, 64, NULL, 0, 0, 0);
	decode();
	CHECK(io.name && !strcmp(io.name, "UVM_INITIALIZE") && io.has_status && io.status == 0, "%s", text);
	mk(48, s, 64, NULL, 0, 0, 0); /* a number of nvidia-uvm's range the table does not name */
	decode();
	char l[64];
	CHECK(io.family == RP_IOC_UVM && !io.name && !strcmp(rp_ioctl_label(&io, l, sizeof(l)), "UVM 48"), "label %s", l);
	CHECK(!io.has_status, "no status for an unknown UVM request");
}

static void unknown(void)
{
	char l[64];
	mk(IOWR('F', 0x99, 8), NULL, 0, NULL, 0, (uint64_t)-1, 25);
	decode();
	CHECK(!io.name && io.failed && io.err == 25, "name %s failed %u err %d", io.name ? io.name : "-", io.failed,
	      io.err);
	CHECK(!strcmp(rp_ioctl_label(&io, l, sizeof(l)), "'F' 0x99"), "label %s", l);
	CHECK(strstr(text, "request 0xc0084699") && strstr(text, "ENOTTY (25)"), "%s", text);
	mk(0x12345, NULL, 0, NULL, 0, (uint64_t)-1, 22);
	decode();
	CHECK(io.family == RP_IOC_UNKNOWN && !strcmp(rp_ioctl_label(&io, l, sizeof(l)), "0x00012345"), "label %s", l);
	CHECK(strstr(text, "EINVAL (22)") != NULL, "%s", text);
	uint8_t s[16] = {0};
	mk(IOWR('m', 0, 16), s, 16, NULL, 0, 0, 0); /* another driver's type byte: raw */
	decode();
	CHECK(io.family == RP_IOC_UNKNOWN && !strcmp(rp_ioctl_label(&io, l, sizeof(l)), "0xc0106d00"), "label %s", l);
	mk(IOWR('F', 250, 4), s, 4, NULL, 0, 0, 0); /* a frontend number the table lacks */
	decode();
	CHECK(io.family == RP_IOC_FRONTEND && !strcmp(rp_ioctl_label(&io, l, sizeof(l)), "'F' 0xfa"), "label %s", l);
}

static void short_data(void)
{
	uint8_t s[32] = {0};
	put32(s, 8, 0x20800110);
	put32(s, 28, 0x56);
	mk(IOWR('F', 0x2a, 32), s, 16, NULL, 0, 0, 0); /* only 16 bytes recorded */
	decode();
	CHECK(io.has_cmd && io.cmd == 0x20800110 && !io.has_status, "cmd 0x%x has_status %u", io.cmd, io.has_status);
	mk(IOWR('F', 0x2a, 24), s, 32, NULL, 0, 0, 0); /* a struct too small to hold the status */
	decode();
	CHECK(!io.has_status, "status outside the request's struct is not read");
	mk(IOWR('F', 0x2a, 32), s, 32, NULL, 0, 0, 0);
	decode();
	CHECK(io.has_status && io.status == 0x56 && rp_ioctl_failed(&io), "status 0x%x", io.status);
	CHECK(strstr(text, "NV2080_CTRL_CMD_GPU_GET_NAME_STRING") && strstr(text, "NV_ERR_NOT_SUPPORTED"), "%s", text);
	mk(IOWR('F', 0x2a, 32), NULL, 0, NULL, 0, 0, 0); /* no bytes at all (an old or damaged trace) */
	decode();
	CHECK(io.name && !io.has_data && !io.has_cmd && !io.has_status, "nothing decoded without bytes");
}

static void names(void)
{
	CHECK(!strcmp(rp_nv_status_name(0), "NV_OK"), "0");
	CHECK(!strcmp(rp_nv_status_name(0x1f), "NV_ERR_INVALID_ARGUMENT"), "0x1f");
	CHECK(!strcmp(rp_nv_status_name(0x51), "NV_ERR_NO_MEMORY"), "0x51");
	CHECK(!strcmp(rp_nv_status_name(0x8a), "NV_ERR_MC_FLA_OFFSET_TABLE_FULL"), "0x8a");
	CHECK(!strcmp(rp_nv_status_name(0xffff), "NV_ERR_GENERIC"), "0xffff");
	CHECK(!strcmp(rp_nv_status_name(0x10006), "NV_WARN_NOTHING_TO_DO"), "0x10006");
	CHECK(rp_nv_status_name(0x8b) == NULL && rp_nv_status_name(0x9999) == NULL, "unknown statuses");
	CHECK(!strcmp(rp_nv_class_name(0x41), "NV01_ROOT_CLIENT") && !strcmp(rp_nv_class_name(0x2080), "NV20_SUBDEVICE_0"),
	      "classes");
	CHECK(rp_nv_class_name(0xdead) == NULL, "unknown class");
	CHECK(!strcmp(rp_nv_ctrl_name(0x20801201), "NV2080_CTRL_CMD_GR_GET_INFO"), "control");
	CHECK(!strcmp(rp_errno_name(25), "ENOTTY") && rp_errno_name(0) == NULL, "errno");
}

int main(void)
{
	RUN(rm_alloc_sizes);
	RUN(dma_sizes);
	RUN(xfer);
	RUN(uvm);
	RUN(unknown);
	RUN(short_data);
	RUN(names);
	UNIT_EXIT();
}
