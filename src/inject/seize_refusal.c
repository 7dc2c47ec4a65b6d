/* Why the kernel would not let us trace a process, in words that say what to change.
 *
 * PTRACE_SEIZE says only EPERM. The kernel refuses, in the order it checks (kernel/ptrace.c,
 * __ptrace_may_access, then the security modules):
 *   - a thread that already has a tracer (one tracer per thread);
 *   - uids (real, effective, saved) or gids that differ from ours, without CAP_SYS_PTRACE;
 *   - a process that is not dumpable (a set-user-ID or file-capability program, changed
 *     credentials, PR_SET_DUMPABLE 0), without CAP_SYS_PTRACE;
 *   - commoncap: a process holding capabilities we do not, or in another user namespace,
 *     without CAP_SYS_PTRACE over it;
 *   - Yama's ptrace_scope;
 *   - another security module (AppArmor, SELinux, Landlock...), or a seccomp filter on us.
 * Which of these holds is read from /proc and /sys; nothing is tried on the process. */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CAP_SYS_PTRACE_BIT 19

int check_no_other_tracer(pid_t pid)
{
	/* Every thread: a second cuhook attach may hold only some of them (the one making its remote
	 * calls), and the main thread may be free again. */
	char p[64], v[32];
	snprintf(p, sizeof(p), "/proc/%d/task", pid);
	DIR *d = opendir(p);
	struct dirent *e;
	pid_t tracer = 0;
	while (d && !tracer && (e = readdir(d))) {
		int tid = atoi(e->d_name);
		snprintf(p, sizeof(p), "%d/task/%d", pid, tid);
		if (tid > 0 && proc_status_field_at(p, "TracerPid", v, sizeof(v)) && atoi(v) != getpid())
			tracer = (pid_t)atoi(v);
	}
	if (d)
		closedir(d);
	else if (proc_status_field(pid, "TracerPid", v, sizeof(v)) && atoi(v) != getpid())
		tracer = (pid_t)atoi(v);
	if (tracer <= 0)
		return 0;
	char comm[64];
	proc_comm(tracer, comm, sizeof(comm));
	inj_error("process %d is already traced by process %d (%s): a debugger or tracer (gdb, strace, "
	          "another cuhook) holds it, and a process can have only one. Detach it first.",
	          pid, tracer, comm);
	return -1;
}

/* What /proc/PID/status says of a process's credentials. */
struct creds {
	bool ok;
	unsigned long uid[3], gid[3]; /* real, effective, saved */
	unsigned long long prm, eff, bnd;
	int no_new_privs, seccomp;
};

static void read_creds(pid_t pid, struct creds *c)
{
	char v[128];
	memset(c, 0, sizeof(*c));
	if (!proc_status_field(pid, "Uid", v, sizeof(v)) ||
	    sscanf(v, "%lu %lu %lu", &c->uid[0], &c->uid[1], &c->uid[2]) != 3 ||
	    !proc_status_field(pid, "Gid", v, sizeof(v)) ||
	    sscanf(v, "%lu %lu %lu", &c->gid[0], &c->gid[1], &c->gid[2]) != 3)
		return;
	if (proc_status_field(pid, "CapPrm", v, sizeof(v)))
		c->prm = strtoull(v, NULL, 16);
	if (proc_status_field(pid, "CapEff", v, sizeof(v)))
		c->eff = strtoull(v, NULL, 16);
	if (proc_status_field(pid, "CapBnd", v, sizeof(v)))
		c->bnd = strtoull(v, NULL, 16);
	if (proc_status_field(pid, "NoNewPrivs", v, sizeof(v)))
		c->no_new_privs = atoi(v);
	if (proc_status_field(pid, "Seccomp", v, sizeof(v)))
		c->seccomp = atoi(v);
	c->ok = true;
}

/* The names of the capabilities in mask, "cap_sys_ptrace, cap_sys_admin" (the first few). */
static void cap_names(unsigned long long mask, char *buf, size_t len)
{
	static const char *const names[] = {
		"chown", "dac_override", "dac_read_search", "fowner", "fsetid", "kill", "setgid", "setuid",
		"setpcap", "linux_immutable", "net_bind_service", "net_broadcast", "net_admin", "net_raw",
		"ipc_lock", "ipc_owner", "sys_module", "sys_rawio", "sys_chroot", "sys_ptrace", "sys_pacct",
		"sys_admin", "sys_boot", "sys_nice", "sys_resource", "sys_time", "sys_tty_config", "mknod",
		"lease", "audit_write", "audit_control", "setfcap", "mac_override", "mac_admin", "syslog",
		"wake_alarm", "block_suspend", "audit_read", "perfmon", "bpf", "checkpoint_restore"};
	size_t pos = 0;
	int shown = 0;
	buf[0] = 0;
	/* the one that would let us trace it first */
	for (int pass = 0; pass < 2; pass++)
		for (int b = 0; b < 64; b++) {
			if (!(mask & (1ull << b)) || (pass == 0) != (b == CAP_SYS_PTRACE_BIT))
				continue;
			if (shown == 4) {
				snprintf(buf + pos, len - pos, ", ...");
				return;
			}
			int n = b < (int)(sizeof(names) / sizeof(names[0]))
			            ? snprintf(buf + pos, len - pos, "%scap_%s", shown ? ", " : "", names[b])
			            : snprintf(buf + pos, len - pos, "%scapability %d", shown ? ", " : "", b);
			if (n < 0 || (size_t)n >= len - pos)
				return;
			pos += (size_t)n;
			shown++;
		}
}

/* Is pid a descendant of ours? (Yama scope 1 lets a process trace its descendants.) */
static bool is_descendant(pid_t pid)
{
	char v[32];
	for (int depth = 0; pid > 1 && depth < 4096; depth++) {
		if (!proc_status_field(pid, "PPid", v, sizeof(v)))
			return false;
		pid = (pid_t)atoi(v);
		if (pid == getpid())
			return true;
	}
	return false;
}

static int yama_scope(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int scope = -1;
	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = -1;
		fclose(f);
	}
	return scope;
}

/* The files in its /proc/PID belong to root instead of its user when it is not dumpable (the
 * directory itself keeps its owner): the only sign of it from outside (for a process of root's,
 * there is none). */
static bool not_dumpable(pid_t pid, const struct creds *it)
{
	char p[64];
	struct stat st;
	snprintf(p, sizeof(p), "/proc/%d/status", pid);
	return it->uid[1] != 0 && stat(p, &st) == 0 && st.st_uid != (uid_t)it->uid[1];
}

static bool other_user_ns(pid_t pid)
{
	char p[64], mine[64], its[64];
	snprintf(p, sizeof(p), "/proc/%d/ns/user", pid);
	ssize_t a = readlink("/proc/self/ns/user", mine, sizeof(mine) - 1), b = readlink(p, its, sizeof(its) - 1);
	return a > 0 && b > 0 && (a != b || memcmp(mine, its, (size_t)a) != 0);
}

/* The security modules that may refuse a ptrace on their own (not capability, not yama). */
static bool active_lsms(char *buf, size_t len)
{
	char all[256] = "";
	FILE *f = fopen("/sys/kernel/security/lsm", "re");
	if (f) {
		if (!fgets(all, sizeof(all), f))
			all[0] = 0;
		fclose(f);
	}
	static const char *const refusing[] = {"apparmor", "selinux", "smack", "tomoyo", "landlock"};
	size_t pos = 0;
	buf[0] = 0;
	for (unsigned i = 0; i < sizeof(refusing) / sizeof(refusing[0]); i++)
		if (strstr(all, refusing[i]) && pos < len)
			pos += (size_t)snprintf(buf + pos, len - pos, "%s%s", pos ? ", " : "", refusing[i]);
	return pos > 0;
}

struct reasons {
	char text[1536];
	size_t pos;
};

static void add(struct reasons *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct reasons *r, const char *fmt, ...)
{
	if (r->pos + 1 >= sizeof(r->text))
		return;
	if (r->pos)
		r->pos += (size_t)snprintf(r->text + r->pos, sizeof(r->text) - r->pos, "; ");
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(r->text + r->pos, sizeof(r->text) - r->pos, fmt, ap);
	va_end(ap);
	if (n > 0)
		r->pos = r->pos + (size_t)n < sizeof(r->text) ? r->pos + (size_t)n : sizeof(r->text) - 1;
}

/* Why we have no CAP_SYS_PTRACE, and how to get it. */
static void add_cap_advice(struct reasons *r, const struct creds *me)
{
	if (!(me->bnd & (1ull << CAP_SYS_PTRACE_BIT)))
		add(r, "CAP_SYS_PTRACE is not in cuhook's capability bounding set, so nothing can give it to "
		       "it here (a container started without it: docker run --cap-add SYS_PTRACE)");
	else if (me->no_new_privs)
		add(r, "cuhook runs with no_new_privs (NoNewPrivs: 1), which makes file capabilities "
		       "(setcap) ineffective: run it as root, or from a session without no_new_privs");
	else
		add(r, "give cuhook CAP_SYS_PTRACE: run it as root, or setcap cap_sys_ptrace+ep on a copy "
		       "of cuhook");
}

void explain_seize_error(pid_t pid, int err)
{
	if (err == ESRCH) {
		inj_error("no such process: %d", pid);
		return;
	}
	if (err != EPERM) {
		inj_error("cannot attach to process %d: %s", pid, strerror(err));
		return;
	}
	if (check_no_other_tracer(pid) < 0)
		return;
	struct creds me, it;
	read_creds(getpid(), &me);
	read_creds(pid, &it);
	bool cap = me.eff & (1ull << CAP_SYS_PTRACE_BIT);
	/* ptrace compares our real ids with all three of the target's */
	bool same_ids = it.ok && it.uid[0] == me.uid[0] && it.uid[1] == me.uid[0] && it.uid[2] == me.uid[0] &&
	                it.gid[0] == me.gid[0] && it.gid[1] == me.gid[0] && it.gid[2] == me.gid[0];
	struct reasons r = {.pos = 0};
	if (!same_ids && !cap) {
		char uid[32] = "?";
		if (it.ok)
			snprintf(uid, sizeof(uid), "%lu", it.uid[1]);
		add(&r, "run cuhook as the process's user, or as root");
		add_cap_advice(&r, &me);
		if (yama_scope() > 0)
			add(&r, "and /proc/sys/kernel/yama/ptrace_scope is %d (1: a process may trace only its "
			        "descendants, 2: only with CAP_SYS_PTRACE)", yama_scope());
		inj_error("permission denied attaching to process %d (owned by uid %s, you are uid %lu): %s", pid,
		          uid, me.uid[0], r.text);
		return;
	}

	int scope = yama_scope();
	if (scope >= 3)
		add(&r, "/proc/sys/kernel/yama/ptrace_scope is %d: no process may be traced until the next boot",
		    scope);
	else if (scope == 2 && !cap)
		add(&r, "/proc/sys/kernel/yama/ptrace_scope is 2: only a process with CAP_SYS_PTRACE may trace");
	else if (scope == 1 && !cap && !is_descendant(pid))
		add(&r, "/proc/sys/kernel/yama/ptrace_scope is 1: a process may trace only its own "
		        "descendants (start the program with cuhook run, or set the scope to 0)");
	if (!cap) {
		char names[256];
		if (not_dumpable(pid, &it))
			add(&r, "it is not dumpable (it runs a set-user-ID or file-capability program, changed its "
			        "credentials, or called prctl(PR_SET_DUMPABLE, 0)): only CAP_SYS_PTRACE may trace it");
		if (it.prm & ~me.prm) {
			cap_names(it.prm & ~me.prm, names, sizeof(names));
			add(&r, "it holds capabilities cuhook does not (%s): only CAP_SYS_PTRACE may trace a "
			        "process with more capabilities", names);
		}
		if (other_user_ns(pid))
			add(&r, "it is in another user namespace (a container?): tracing it needs CAP_SYS_PTRACE "
			        "there");
	}
	if (me.seccomp == 2)
		add(&r, "cuhook itself runs under a seccomp filter, which may refuse ptrace (a container's "
		        "default profile)");
	char lsms[128];
	if (!r.pos && active_lsms(lsms, sizeof(lsms)))
		add(&r, "a security module may refuse it (active: %s; see the kernel log for a denial)", lsms);
	if (!r.pos)
		add(&r, "nothing that would refuse it is in place now: most likely another tracer held one of "
		        "its threads at that moment (a second cuhook attach, gdb, strace) and has let it go "
		        "since; try again");
	else if (!cap)
		add_cap_advice(&r, &me);

	char ns[128], who[160];
	bool ns_init = proc_status_field(pid, "NSpid", ns, sizeof(ns)) && strrchr(ns, '\t') &&
	               atoi(strrchr(ns, '\t') + 1) == 1;
	snprintf(who, sizeof(who), "%suid %lu%s, cuhook %s CAP_SYS_PTRACE",
	         ns_init || pid == 1 ? "the init of its pid namespace, " : "", it.uid[1], same_ids ? " like cuhook" : "",
	         cap ? "has" : "lacks");
	inj_error("permission denied attaching to process %d (%s): %s", pid, who, r.text);
}
