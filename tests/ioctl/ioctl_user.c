/* ioctl_user: drives the stand-in libcuda's "NVIDIA device file" entry points (fakecuda.h, the
 * ioctl tests block) and makes a few ioctls of its own, for tests/ioctl/check_ioctl_trace.py.
 *
 * usage: ioctl_user [--agent PATH] [--emulate] [--cycle TRACE2] --dir DIR LIBCUDA
 *   --agent PATH  load the agent first (constructor mode; it reads the CUHOOK_* variables)
 *   --emulate     answer the NVIDIA requests the way the kernel driver would: a seccomp filter
 *                 traps every ioctl whose request looks NVIDIA's ('F' type, nvidia-uvm's raw
 *                 numbers), and the SIGSYS handler plays the driver for the files named
 *                 nvidiactl, nvidia0 and nvidia-uvm (anything else: ENOTTY, as for a regular
 *                 file). Without it those requests reach the kernel and fail with ENOTTY.
 *   --dir DIR     where the "device files" are created
 *   --cycle TRACE2  stop the agent (cuhook_agent_stop) before the device files are closed,
 *                 and while it is stopped let a non-device file take nvidiactl's number behind
 *                 libc's back (raw openat and dup3); start it again (cuhook_agent_start, output
 *                 TRACE2): that file's ioctl must not be recorded (the table was cleared at the
 *                 start), the reopened nvidiactl's must. Untraced, the same steps without the
 *                 stop and start.
 *
 * The sequence (the check script knows it call by call): open, 4 allocations (one of a class
 * the "driver" refuses), 7 controls (one refused), one control through XFER_CMD, UVM init and
 * GPU registration, 2 controls nested in another call, 2 unknown requests, one control made by
 * the program outside any driver call, ioctls on files that are not devices, a free, close;
 * then a non-device file taking the closed number behind libc's back (its ioctl is not
 * NVIDIA's); a number classified "not a device" freed by fclose() (glibc's private close) and
 * taken by nvidiactl behind libc's back (the program's own ioctl on it must be recorded); and
 * one freed behind libc's back and taken by nvidiactl through open() (recorded too). Prints "key value" lines; exits 3 if
 * a result is not the one expected in this mode, 2 on a setup failure, 77 when --emulate is
 * asked but seccomp filters are not available. */
#include "fakecuda.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <termios.h>
#include <ucontext.h>
#include <unistd.h>

#define NV_ERR_INVALID_CLASS 0x22
#define NV_ERR_NOT_SUPPORTED 0x56
#define CTRL_GET_NAME_STRING 0x20800110u
#define CTRL_GR_GET_INFO 0x20801201u
#define CTRL_GET_INFO_V2 0x20800102u

/* ---- the "kernel driver" (SIGSYS handler) -------------------------------------------------- */

static unsigned handles; /* new handles handed out */

/* 0 nvidiactl, 1 nvidia0, 2 nvidia-uvm, -1 another file */
static int device_of(int fd)
{
	char link[64], path[4096];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	if (n < 0)
		return -1;
	path[n] = 0;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (!strcmp(base, "nvidiactl"))
		return 0;
	if (!strcmp(base, "nvidia0"))
		return 1;
	if (!strcmp(base, "nvidia-uvm"))
		return 2;
	return -1;
}

static void control(struct fake_nvos54 *p)
{
	if (p->cmd == FAKE_NV_BAD_CMD) {
		p->status = NV_ERR_NOT_SUPPORTED;
		return;
	}
	if (p->cmd == CTRL_GET_NAME_STRING && p->params && p->paramsSize >= 8)
		memcpy((void *)(uintptr_t)p->params, "FakeGPU", 8);
	p->status = 0;
}

static long emulate(int fd, uint32_t req, void *arg)
{
	int dev = device_of(fd);
	if (dev < 0)
		return -ENOTTY;
	if (dev == 0 && req == FAKE_NV_CHECK_VERSION) {
		struct fake_nv_version *v = arg;
		v->reply = strcmp(v->version, FAKE_NV_VERSION) == 0;
		return 0;
	}
	if (dev == 1 && req == FAKE_NV_REGISTER_FD)
		return 0;
	if (dev == 0 && req == FAKE_NV_RM_ALLOC) {
		struct fake_nvos21 *p = arg;
		if (p->hClass == FAKE_NV_BAD_CLASS) {
			p->status = NV_ERR_INVALID_CLASS;
		} else {
			p->hObjectNew = FAKE_NV_HANDLE_BASE + ++handles;
			p->status = 0;
		}
		return 0;
	}
	if (dev == 0 && req == FAKE_NV_RM_CONTROL) {
		control(arg);
		return 0;
	}
	if (dev == 0 && req == FAKE_NV_XFER) {
		struct fake_nv_xfer *x = arg;
		if (x->cmd != 0x2a || x->size != sizeof(struct fake_nvos54))
			return -EINVAL;
		control((struct fake_nvos54 *)(uintptr_t)x->ptr);
		return 0;
	}
	if (dev == 0 && req == FAKE_NV_RM_FREE) {
		((struct fake_nvos00 *)arg)->status = 0;
		return 0;
	}
	if (dev == 2 && req == FAKE_UVM_INITIALIZE) {
		*(uint32_t *)((char *)arg + 8) = 0;
		return 0;
	}
	if (dev == 2 && req == FAKE_UVM_REGISTER_GPU) {
		*(int32_t *)((char *)arg + 20) = -1; /* numaNodeId */
		*(uint32_t *)((char *)arg + 36) = 0; /* rmStatus */
		return 0;
	}
	return -ENOTTY;
}

static void on_sigsys(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	int saved = errno;
	ucontext_t *uc = ucv;
	greg_t *g = uc->uc_mcontext.gregs;
	g[REG_RAX] = emulate((int)g[REG_RDI], (uint32_t)g[REG_RSI], (void *)g[REG_RDX]);
	errno = saved;
}

static int install_driver(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	if (sigaction(SIGSYS, &sa, NULL) != 0)
		return -1;
	/* trap ioctl when the request is 'F'-typed or one of nvidia-uvm's raw numbers */
	struct sock_filter f[] = {
		/* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		/* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 11),
		/* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		/* 3 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 9),
		/* 4 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
		/* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x30000001u, 8, 0),
		/* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x30000002u, 7, 0),
		/* 7 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 2048, 2, 0),
		/* 8 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 4, 0),
		/* 9 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		/* 10 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xff00),
		/* 11 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x4600, 2, 0),
		/* 12 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* 13 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* 14 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
	};
	struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

/* ---- the program ------------------------------------------------------------------------------- */

#define FN(lib, name) ((__typeof__(name) *)sym((lib), #name))

static void *sym(void *lib, const char *name)
{
	void *p = dlsym(lib, name);
	if (!p) {
		fprintf(stderr, "ioctl_user: dlsym %s: %s\n", name, dlerror());
		exit(2);
	}
	return p;
}

static int bad;

static void expect(const char *what, long got, long want)
{
	printf("%s %ld\n", what, got);
	if (got != want) {
		printf("bad %s: %ld, expected %ld\n", what, got, want);
		bad++;
	}
}

int main(int argc, char **argv)
{
	const char *agent = NULL, *dir = NULL, *cycle = NULL;
	int emulated = 0;
	for (int i = 1; i + 1 < argc; i++) {
		if (!strcmp(argv[i], "--agent"))
			agent = argv[++i];
		else if (!strcmp(argv[i], "--dir"))
			dir = argv[++i];
		else if (!strcmp(argv[i], "--emulate"))
			emulated = 1;
		else if (!strcmp(argv[i], "--cycle"))
			cycle = argv[++i];
	}
	if (!dir || argc < 2) {
		fprintf(stderr, "usage: ioctl_user [--agent PATH] [--emulate] --dir DIR LIBCUDA\n");
		return 2;
	}
	void *agent_lib = agent ? dlopen(agent, RTLD_NOW | RTLD_LOCAL) : NULL;
	if (agent && !agent_lib) {
		fprintf(stderr, "ioctl_user: cannot load the agent: %s\n", dlerror());
		return 2;
	}
	void *lib = dlopen(argv[argc - 1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "ioctl_user: %s\n", dlerror());
		return 2;
	}
	__typeof__(cuInit) *init = FN(lib, cuInit);
	__typeof__(cuFakeNvOpen) *nv_open = FN(lib, cuFakeNvOpen);
	__typeof__(cuFakeNvFd) *nv_fd = FN(lib, cuFakeNvFd);
	__typeof__(cuFakeNvAlloc) *nv_alloc = FN(lib, cuFakeNvAlloc);
	__typeof__(cuFakeNvControl) *nv_control = FN(lib, cuFakeNvControl);
	__typeof__(cuFakeNvControlXfer) *nv_xfer = FN(lib, cuFakeNvControlXfer);
	__typeof__(cuFakeNvFree) *nv_free = FN(lib, cuFakeNvFree);
	__typeof__(cuFakeNvUvm) *nv_uvm = FN(lib, cuFakeNvUvm);
	__typeof__(cuFakeNvNested) *nv_nested = FN(lib, cuFakeNvNested);
	__typeof__(cuFakeNvUnknown) *nv_unknown = FN(lib, cuFakeNvUnknown);
	__typeof__(cuFakeNvNotDevice) *nv_notdev = FN(lib, cuFakeNvNotDevice);
	__typeof__(cuFakeNvClose) *nv_close = FN(lib, cuFakeNvClose);

	if (emulated && install_driver() != 0) {
		printf("seccomp unavailable: %s\n", strerror(errno));
		return 77;
	}
	printf("emulated %d\n", emulated);
	const long fail = FAKE_ERROR_ILLEGAL_ADDRESS; /* a failed ioctl */
	expect("init", init(0), 0);
	expect("open", nv_open(dir), emulated ? 0 : fail);
	printf("fd_ctl %d\nfd_dev %d\nfd_uvm %d\n", nv_fd(0), nv_fd(1), nv_fd(2));
	unsigned client = 0, device = 0, sub = 0, none = 0;
	expect("alloc_client", nv_alloc(0, 0, 0x41, &client), emulated ? 0 : fail);
	expect("alloc_device", nv_alloc(client, client, 0x80, &device), emulated ? 0 : fail);
	expect("alloc_subdevice", nv_alloc(client, device, 0x2080, &sub), emulated ? 0 : fail);
	expect("alloc_bad_class", nv_alloc(client, device, FAKE_NV_BAD_CLASS, &none), emulated ? NV_ERR_INVALID_CLASS : fail);
	expect("handle_client", client, emulated ? FAKE_NV_HANDLE_BASE + 1 : 0);
	expect("handle_subdevice", sub, emulated ? FAKE_NV_HANDLE_BASE + 3 : 0);
	char name[128] = {0};
	expect("control_name", nv_control(client, sub, CTRL_GET_NAME_STRING, name, sizeof(name)), emulated ? 0 : fail);
	printf("gpu_name %s\n", name[0] ? name : "-");
	for (int i = 0; i < 5; i++) {
		uint32_t p[8] = {0};
		expect("control_gr", nv_control(client, sub, CTRL_GR_GET_INFO, p, sizeof(p)), emulated ? 0 : fail);
	}
	expect("control_bad", nv_control(client, sub, FAKE_NV_BAD_CMD, NULL, 0), emulated ? NV_ERR_NOT_SUPPORTED : fail);
	uint32_t info[4] = {0};
	expect("control_xfer", nv_xfer(client, sub, CTRL_GET_INFO_V2, info, sizeof(info)), emulated ? 0 : fail);
	expect("uvm", nv_uvm(client), emulated ? 0 : fail);
	expect("nested", nv_nested(client, sub, CTRL_GET_INFO_V2), emulated ? 0 : fail);
	expect("unknown_failed", nv_unknown(), 2);

	/* the program's own ioctl on nvidiactl, outside any driver call */
	struct fake_nvos54 c;
	memset(&c, 0, sizeof(c));
	c.hClient = client;
	c.hObject = sub;
	c.cmd = CTRL_GET_NAME_STRING;
	c.params = (uint64_t)(uintptr_t)name;
	c.paramsSize = sizeof(name);
	expect("direct_control", ioctl(nv_fd(0), FAKE_NV_RM_CONTROL, &c), emulated ? 0 : -1);

	/* not devices: a pipe (the real kernel answers), a file with another name */
	int p[2];
	if (pipe(p) != 0)
		return 2;
	int n = -1;
	expect("pipe_fionread", ioctl(p[0], FIONREAD, &n), 0);
	close(p[0]);
	close(p[1]);
	expect("not_device", nv_notdev(dir), 0);
	expect("free", nv_free(client, device, sub), emulated ? 0 : fail);
	int old_ctl = nv_fd(0);
	char path[4096];
	snprintf(path, sizeof(path), "%s/reuse.dat", dir);
	int (*stop)(unsigned) = NULL;
	int (*start)(const char *, unsigned) = NULL;
	if (cycle && agent_lib) {
		stop = (int (*)(unsigned))dlsym(agent_lib, "cuhook_agent_stop");
		start = (int (*)(const char *, unsigned))dlsym(agent_lib, "cuhook_agent_start");
	}
	if (cycle)
		expect("agent_stop", stop ? stop(0) : 0, 0);
	expect("close", nv_close(), 0);
	/* a file that is not a device takes nvidiactl's old number behind libc's back (raw openat
	 * and dup3: no hook sees it created), so that only close's own forgetting (or, with --cycle,
	 * the table's clearing at the new start) keeps its ioctl from being taken for NVIDIA's */
	int reuse = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (reuse >= 0 && reuse != old_ctl) {
		int tmp = reuse;
		reuse = (int)syscall(SYS_dup3, tmp, old_ctl, O_CLOEXEC);
		syscall(SYS_close, tmp);
	}
	if (cycle) {
		char opts[8192];
		snprintf(opts, sizeof(opts), "output=%s;ioctl=1;ioctl_paths=%s/nvidia*", cycle, dir);
		expect("agent_start", start ? start(opts, 0) : 0, 0);
	}
	printf("reuse_fd %d\nreuse_same_number %d\n", reuse, reuse == old_ctl);
	memset(&c, 0, sizeof(c));
	expect("reuse_control", ioctl(reuse, FAKE_NV_RM_CONTROL, &c), -1);
	close(reuse);

	/* A: a file seen as "not a device" (its TCGETS classified it) closed by fclose, which uses
	 * glibc's own uncancellable close, not the exported one; its number then taken by nvidiactl
	 * behind libc's back (raw openat): only the hook on glibc's private close makes the agent
	 * look at that number again */
	snprintf(path, sizeof(path), "%s/plain.txt", dir);
	FILE *fp = fopen(path, "w");
	if (!fp)
		return 2;
	int plain = fileno(fp);
	struct termios tio;
	expect("plain_tcgets", ioctl(plain, TCGETS, &tio), -1);
	fclose(fp);
	snprintf(path, sizeof(path), "%s/nvidiactl", dir);
	int raw = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CLOEXEC);
	printf("raw_ctl %d\nraw_same_number %d\n", raw, raw == plain);
	struct fake_nv_version ver;
	memset(&ver, 0, sizeof(ver));
	snprintf(ver.version, sizeof(ver.version), "%s", FAKE_NV_VERSION);
	expect("raw_version", ioctl(raw, FAKE_NV_CHECK_VERSION, &ver), emulated ? 0 : -1);
	close(raw);

	/* B: a file seen as "not a device" closed behind libc's back (raw close), its number then
	 * taken by nvidiactl through libc's open: only open's exit makes the agent look again */
	snprintf(path, sizeof(path), "%s/plain2.txt", dir);
	int plain2 = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	expect("plain2_tcgets", ioctl(plain2, TCGETS, &tio), -1);
	syscall(SYS_close, plain2);
	expect("reopen", nv_open(dir), emulated ? 0 : fail);
	printf("plain_fd %d\nreopen_ctl %d\nreopen_same_number %d\n", plain2, nv_fd(0), plain2 == nv_fd(0));
	expect("close_again", nv_close(), 0);
	printf("bad %d\n", bad);
	return bad ? 3 : 0;
}
