/* One call in words, from its raw arguments and the DATA records, for the slowest-calls list and
 * the exporters' "args". Only what the name tells us how to read (categories.h) is interpreted;
 * everything else falls back to the decoded DATA values. */
#include "report.h"
#include "decoders.h"
#include "nvioctl.h"

#include <stdarg.h>
#include <string.h>


/* A string from the trace (not NUL-terminated), control characters shown as '?'. */
static size_t put_str(char *buf, size_t len, size_t pos, const char *s, uint16_t n)
{
	for (uint16_t i = 0; i < n && pos + 1 < len; i++) {
		unsigned char c = (unsigned char)s[i];
		buf[pos++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	if (len)
		buf[pos < len ? pos : len - 1] = 0;
	return pos;
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
	uint64_t r;
	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

uint64_t rp_call_bytes(const struct rp_view *v, const struct tr_call *c, int *known)
{
	const struct rp_finfo *fi = &v->fi[c->func];
	*known = 0;
	if (fi->kind == RP_KIND_XFER && fi->x.bytes_arg >= 0) {
		uint64_t b = mul_sat(tr_call_arg(c, (unsigned)fi->x.bytes_arg), fi->x.elt_size);
		if (fi->x.height_arg >= 0)
			b = mul_sat(b, tr_call_arg(c, (unsigned)fi->x.height_arg));
		*known = (unsigned)fi->x.bytes_arg < tr_call_nargs(c);
		return *known ? b : 0;
	}
	if (fi->kind == RP_KIND_ALLOC && fi->alloc_arg >= 0) {
		uint64_t b = tr_call_arg(c, (unsigned)fi->alloc_arg);
		if (fi->alloc_arg2 >= 0)
			b = mul_sat(b, tr_call_arg(c, (unsigned)fi->alloc_arg2));
		*known = 1;
		return b;
	}
	return 0;
}

/* Kernel launches: "NAME grid (x,y,z) block (x,y,z) smem N stream 0x..". cuLaunchKernel passes
 * f, gx, gy, gz, bx, by in registers and bz, sharedMemBytes, hStream, kernelParams, extra in
 * stack slots 0..4; the dimensions are 32-bit, so the registers' upper halves are ignored. */
static size_t describe_launch(const struct rp_view *v, const struct tr_call *c, const struct rp_finfo *fi,
                              char *buf, size_t len, size_t pos)
{
	uint64_t f = tr_call_arg(c, (unsigned)fi->l.func_arg);
	const char *name;
	uint16_t n;
	if (rp_kernel_name(v, f, &name, &n))
		pos = put_str(buf, len, pos, name, n);
	else
		pos = rp_put(buf, len, pos, "function 0x%llx", (unsigned long long)f);
	const char *cfg;
	uint16_t cn;
	if (!fi->l.direct_layout && tr_call_data_str(v->t, c, "config", &cfg, &cn) &&
	    cn >= CUHOOK_LAUNCH_CONFIG_BYTES) {
		/* cuLaunchKernelEx: the CUlaunchConfig bytes its DATA record holds (decoders.h) */
		uint32_t d[7];
		uint64_t stream;
		memcpy(d, cfg, sizeof(d));
		memcpy(&stream, cfg + 32, sizeof(stream));
		pos = rp_put(buf, len, pos, " grid (%u,%u,%u) block (%u,%u,%u) smem %u stream 0x%llx", d[0], d[1],
		             d[2], d[3], d[4], d[5], d[6], (unsigned long long)stream);
	}
	if (fi->l.direct_layout) {
		pos = rp_put(buf, len, pos, " grid (%u,%u,%u)", (unsigned)tr_call_arg(c, 1),
		          (unsigned)tr_call_arg(c, 2), (unsigned)tr_call_arg(c, 3));
		if (tr_call_nargs(c) >= 9)
			pos = rp_put(buf, len, pos, " block (%u,%u,%u) smem %u stream 0x%llx",
			          (unsigned)tr_call_arg(c, 4), (unsigned)tr_call_arg(c, 5),
			          (unsigned)tr_call_arg(c, 6), (unsigned)tr_call_arg(c, 7),
			          (unsigned long long)tr_call_arg(c, 8));
		else
			pos = rp_put(buf, len, pos, " block (%u,%u,?)", (unsigned)tr_call_arg(c, 4),
			          (unsigned)tr_call_arg(c, 5));
	}
	return pos;
}

static size_t describe_xfer(const struct rp_view *v, const struct tr_call *c, const struct rp_finfo *fi,
                            char *buf, size_t len, size_t pos)
{
	char b[32];
	int known;
	uint64_t bytes = rp_call_bytes(v, c, &known);
	pos = rp_put(buf, len, pos, "%s", rp_dir_names[fi->x.dir]);
	if (known) {
		pos = rp_put(buf, len, pos, " %s", rp_fmt_bytes(b, sizeof(b), (double)bytes));
		if (!fi->x.async && tr_call_timed(c) && tr_call_dur(c) > 0 && bytes)
			pos = rp_put(buf, len, pos, " %.2f GB/s", (double)bytes / (double)tr_call_dur(c));
	}
	if (fi->x.async)
		pos = rp_put(buf, len, pos, " async");
	if (fi->x.stream_arg >= 0)
		pos = rp_put(buf, len, pos, " stream 0x%llx", (unsigned long long)tr_call_arg(c, (unsigned)fi->x.stream_arg));
	return pos;
}

size_t rp_describe_call(const struct rp_view *v, const struct tr_call *c, char *buf, size_t len)
{
	const struct tr_trace *t = v->t;
	const struct rp_finfo *fi = &v->fi[c->func];
	size_t pos = 0;
	char b[32];
	if (!len)
		return 0;
	buf[0] = 0;
	if (fi->ioctl) { /* an NVIDIA ioctl: the request, its struct's fields, the status */
		struct rp_ioctl io;
		rp_ioctl_decode(t, c, &io);
		pos = rp_ioctl_describe(&io, buf, len);
		if (c->flags & TR_CALL_NO_EXIT)
			pos = rp_put(buf, len, pos, " (entry only)");
		else if (c->flags & TR_CALL_UNFINISHED)
			pos = rp_put(buf, len, pos, " (no exit)");
		return pos;
	}
	switch (fi->kind) {
	case RP_KIND_LAUNCH:
		pos = describe_launch(v, c, fi, buf, len, pos);
		break;
	case RP_KIND_XFER:
		pos = describe_xfer(v, c, fi, buf, len, pos);
		break;
	case RP_KIND_ALLOC: {
		int known;
		uint64_t bytes = rp_call_bytes(v, c, &known);
		uint64_t p;
		pos = rp_put(buf, len, pos, "%s", rp_fmt_bytes(b, sizeof(b), (double)bytes));
		if (tr_call_data_value(t, c, "dptr", &p) || tr_call_data_value(t, c, "hostptr", &p) ||
		    tr_call_data_value(t, c, "handle", &p))
			pos = rp_put(buf, len, pos, " -> 0x%llx", (unsigned long long)p);
		break;
	}
	case RP_KIND_RELEASE:
		pos = rp_put(buf, len, pos, "0x%llx", (unsigned long long)tr_call_arg(c, 0));
		break;
	default: {
		/* names and handles the decoder table read: "name=vecAdd function=0x.." */
		char d[512];
		tr_call_format_data(t, c, d, sizeof(d));
		for (char *s = d; *s; s++)
			if (*s == ';')
				*s = ' ';
		pos = rp_put(buf, len, pos, "%s", d);
		/* synchronizing on a stream or an event: which one */
		if (fi->cat == RP_CAT_SYNC && strstr(tr_func_name(t, c->func), "Stream"))
			pos = rp_put(buf, len, pos, "%sstream 0x%llx", pos ? " " : "", (unsigned long long)tr_call_arg(c, 0));
		else if (fi->cat == RP_CAT_SYNC && strstr(tr_func_name(t, c->func), "Event"))
			pos = rp_put(buf, len, pos, "%sevent 0x%llx", pos ? " " : "", (unsigned long long)tr_call_arg(c, 0));
		break;
	}
	}
	if (rp_call_failed(v, c))
		pos = rp_put(buf, len, pos, "%s-> error %u", pos ? " " : "", (unsigned)c->ret);
	else if (tr_call_timed(c) && v->fi[c->func].ret_unknown && c->ret)
		pos = rp_put(buf, len, pos, "%s-> %#llx", pos ? " " : "", (unsigned long long)c->ret);
	else if (c->flags & TR_CALL_NO_EXIT)
		pos = rp_put(buf, len, pos, "%s(entry only)", pos ? " " : "");
	else if (c->flags & TR_CALL_UNFINISHED)
		pos = rp_put(buf, len, pos, "%s(no exit)", pos ? " " : "");
	return pos;
}
