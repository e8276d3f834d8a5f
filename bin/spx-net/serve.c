/* spx-net serve: the net service of a node whose instances are on a
 * bridge (vm.network "bridge"), started and restarted by spx up.
 *
 * It makes the bridge (vm.bridge, with vm.address and the metadata
 * address 169.254.169.254/32, which the host must own for a guest's
 * connection to it to be the host's), then runs two programs and stays
 * their parent:
 *   dnsmasq, DHCP only (no DNS), on the bridge alone, answering only the
 *     MACs the agent wrote into RUN/net/hosts (one file per instance:
 *     "MAC,ADDRESS"), which dnsmasq reads as they appear; as user nobody;
 *   spx-vm imds-server, the guests' instance metadata, each guest known
 *     by the tap its connection comes in from.
 * A file the agent removes (an instance terminated) is a host dnsmasq
 * keeps answering, and an address it thinks leased, until it starts
 * again: so it is restarted then. Its leases are kept in memory only
 * and it is authoritative, so a guest renewing after a restart is
 * answered from its file.
 *
 * What either program writes comes through a pipe into the service's
 * log, a line at a time with the log's timestamps, so that it follows
 * the log when logrotate moves it (SIGHUP reopens the service's own).
 *
 * If either program ends of itself, the service stops the other and
 * exits with status 1, and its supervisor starts it again. Guests and
 * their taps stay whatever the service does: so does the bridge. */
#include "spx.h"

#include <signal.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <poll.h>

#include "cmd.h"
#include "conf/conf.h"
#include "file.h"
#include "net/net.h"
#include "netcli.h"
#include "node/node.h"
#include "node/sup.h"
#include "node/svc.h"
#include "proc.h"
#include "vm/runas.h"

/* A program that does not end within this of SIGTERM is killed. */
#define STOP_MS 5000

struct kid {
	const char *name;
	char **argv;
	pid_t pid;
	int out; /* its stdout and stderr, read here (-1: none) */
	struct spx_svc_relay relay;
};

/* Log what k wrote. At its end (or with end, all there is now) the pipe
 * is closed. */
static void kid_read(struct kid *k, bool end)
{
	int rc;

	while (k->out >= 0 &&
	       (rc = spx_svc_relay_read(&k->relay, k->out, SPX_LOG_INFO)) != 0)
		if (rc < 0) {
			if (!end)
				return;
			spx_svc_relay_end(&k->relay, SPX_LOG_INFO);
			break;
		}
	if (k->out >= 0)
		close(k->out);
	k->out = -1;
}

/* Start k with /dev/null for stdin, its stdout and stderr into a pipe
 * to this process, and SIGTERM when this process dies: a killed service
 * leaves no dnsmasq holding the DHCP port for its successor. */
static int start_kid(struct kid *k)
{
	sigset_t none;
	pid_t parent = getpid();
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return spx_error_errno(SPX_FAIL, "cannot make a pipe");
	k->pid = fork();
	if (k->pid < 0) {
		close(p[0]);
		close(p[1]);
		return spx_error_errno(SPX_FAIL, "cannot fork");
	}
	if (k->pid == 0) {
		int fd = open("/dev/null", O_RDONLY);

		for (int sig = 1; sig < NSIG; sig++)
			if (sig != SIGKILL && sig != SIGSTOP)
				signal(sig, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 ||
		    getppid() != parent || fd < 0 || dup2(fd, 0) < 0 ||
		    dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0)
			_exit(SPX_FAIL);
		execv(k->argv[0], k->argv);
		spx_warn_errno("serve: cannot run '%s'", k->argv[0]);
		_exit(SPX_FAIL);
	}
	close(p[1]);
	k->out = p[0];
	k->relay.n = 0;
	if (fcntl(k->out, F_SETFL, O_NONBLOCK) < 0)
		spx_warn_errno("serve: cannot read %s's output", k->name);
	spx_log(SPX_LOG_INFO, "%s started (pid %ld)", k->name, (long)k->pid);
	return 0;
}

/* Stop k: SIGTERM, then SIGKILL after STOP_MS; then log what it said
 * last. */
static void stop_kid(struct kid *k)
{
	int64_t end = spx_mono_ms() + STOP_MS;

	if (k->pid <= 0) {
		kid_read(k, true);
		return;
	}
	kill(k->pid, SIGTERM);
	while (waitpid(k->pid, NULL, WNOHANG) == 0) {
		if (spx_mono_ms() > end) {
			spx_log(SPX_LOG_WARN, "%s (pid %ld) ignored SIGTERM; "
				"killing it", k->name, (long)k->pid);
			kill(k->pid, SIGKILL);
			waitpid(k->pid, NULL, 0);
			break;
		}
		usleep(20000);
	}
	k->pid = 0;
	kid_read(k, true);
}

/* dnsmasq's command line for the bridge of self, whose network is gw. */
static char **dnsmasq_argv(const struct spx_conf_node *self,
			   const struct spx_net_cidr *gw, const char *hosts,
			   const char *pidfile)
{
	uint32_t mask = ~0u << (32 - gw->prefix);
	char **v = spx_calloc(20, sizeof(*v));
	size_t n = 0;

	v[n++] = spx_strdup("/usr/sbin/dnsmasq");
	v[n++] = spx_strdup("--keep-in-foreground");
	v[n++] = spx_strdup("--conf-file=/dev/null");
	v[n++] = spx_strdup("--port=0");
	v[n++] = spx_xprintf("--interface=%s", self->vm.bridge);
	v[n++] = spx_strdup("--bind-interfaces");
	v[n++] = spx_xprintf("--dhcp-range=%u.%u.%u.%u,static,%u.%u.%u.%u,1h",
			     (gw->addr & mask) >> 24,
			     (gw->addr & mask) >> 16 & 255,
			     (gw->addr & mask) >> 8 & 255, gw->addr & mask & 255,
			     mask >> 24, mask >> 16 & 255, mask >> 8 & 255,
			     mask & 255);
	v[n++] = spx_xprintf("--dhcp-hostsdir=%s", hosts);
	v[n++] = spx_strdup("--dhcp-authoritative");
	v[n++] = spx_strdup("--leasefile-ro");
	v[n++] = spx_xprintf("--pid-file=%s", pidfile);
	v[n++] = spx_strdup("--user=nobody");
	v[n++] = spx_strdup("--group=nogroup");
	v[n++] = spx_strdup("--log-facility=-");
	v[n] = NULL;
	return v;
}

static void argv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* A dnsmasq of this node's that outlived its service: dnsmasq drops to
 * nobody, and a change of credentials clears the parent-death signal,
 * so a service killed outright leaves it answering. It is known by the
 * pid file it wrote (as root, before it dropped) and by its command
 * line naming this node's hosts directory, and is killed. */
static void kill_stale(const char *pidfile, const char *hosts)
{
	struct spx_buf b = SPX_BUF_INIT;
	char buf[32] = "", *arg = spx_xprintf("--dhcp-hostsdir=%s", hosts);
	size_t len = 0;
	long pid = 0;

	if (spx_read_small(pidfile, buf, sizeof(buf) - 1, &len) > 0) {
		buf[len] = 0;
		pid = strtol(buf, NULL, 10);
	}
	spx_error_clear();
	if (pid > 1) {
		char *proc = spx_xprintf("/proc/%ld/cmdline", pid);

		if (spx_buf_read_file(&b, proc, 1 << 16) == 0 &&
		    memmem(b.p, b.len, arg, strlen(arg) + 1)) {
			spx_log(SPX_LOG_WARN, "a dnsmasq of this node's (pid "
				"%ld) outlived its service: killing it", pid);
			kill((pid_t)pid, SIGKILL);
			for (int i = 0; i < 250 && kill((pid_t)pid, 0) == 0; i++)
				usleep(20000);
		}
		spx_error_clear();
		free(proc);
	}
	spx_buf_release(&b);
	free(arg);
}

/* Did an inotify read hold a removal? */
static bool removed(int ino)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool any = false;
	ssize_t len;

	while ((len = read(ino, buf, sizeof(buf))) > 0)
		for (char *p = buf; p < buf + len;) {
			const struct inotify_event *e = (const void *)p;

			any |= (e->mask & (IN_DELETE | IN_MOVED_FROM)) &&
			       e->len && e->name[0] != '.';
			p += sizeof(*e) + e->len;
		}
	return any;
}

/* The directory dnsmasq, as nobody, reads the hosts from: RUN searchable,
 * RUN/net and RUN/net/hosts readable. */
static char *hosts_dir(const struct spx_conf *conf)
{
	char *net = spx_path_join(conf->paths.run, "net");
	char *hosts = spx_path_join(net, "hosts");

	if (spx_mkdirs(hosts, 0755) < 0 ||
	    spx_vm_user_searchable(conf->paths.run) < 0 ||
	    ((chmod(net, 0755) < 0 || chmod(hosts, 0755) < 0) &&
	     spx_error_errno(SPX_FAIL, "cannot make '%s' readable", hosts))) {
		free(net);
		free(hosts);
		return NULL;
	}
	free(net);
	return hosts;
}

static int serve(const struct spx_args *a, const struct spx_conf *conf,
		 long long notify, int sfd)
{
	const struct spx_conf_node *self = spx_conf_self(conf);
	struct spx_net_cidr addrs[2];
	struct kid kids[2] = { { .name = "dnsmasq", .out = -1 },
			       { .name = "spx-vm imds-server", .out = -1 } };
	char *hosts = NULL, *vm = NULL, *pidfile = NULL;
	int rc = SPX_FAIL, ino = -1;
	bool stop = false;

	if (strcmp(self->vm.network, "bridge")) {
		spx_warn("serve: this node's instances are on QEMU's user "
			 "network (vm.network is '%s'): no bridge to serve",
			 self->vm.network);
		return SPX_USAGE;
	}
	if (spx_net_cidr_parse(self->vm.address, strlen(self->vm.address),
			       &addrs[0]) < 0 ||
	    spx_net_cidr_parse("169.254.169.254/32", 18, &addrs[1]) < 0 ||
	    spx_net_bridge(self->vm.bridge, addrs, 2) < 0 ||
	    !(hosts = hosts_dir(conf))) {
		spx_warn("serve: %s", spx_errmsg());
		rc = spx_errstatus();
		goto out;
	}
	ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (ino < 0 || inotify_add_watch(ino, hosts, IN_DELETE | IN_MOVED_FROM) < 0) {
		spx_warn_errno("serve: cannot watch '%s'", hosts);
		goto out;
	}
	vm = spx_find_prog("spx-vm");
	if (!vm) {
		spx_warn("serve: cannot find spx-vm next to spx-net or on PATH");
		goto out;
	}
	pidfile = spx_path_join(conf->paths.run, "net/dnsmasq.pid");
	kill_stale(pidfile, hosts);
	kids[0].argv = dnsmasq_argv(self, &addrs[0], hosts, pidfile);
	kids[1].argv = spx_calloc(5, sizeof(char *));
	kids[1].argv[0] = spx_strdup(vm);
	kids[1].argv[1] = spx_strdup("imds-server");
	kids[1].argv[2] = spx_strdup("--root");
	kids[1].argv[3] = spx_strdup(conf->root);
	if (start_kid(&kids[0]) < 0 || start_kid(&kids[1]) < 0) {
		spx_warn("serve: %s", spx_errmsg());
		goto out;
	}
	spx_log(SPX_LOG_INFO, "serving bridge %s (%s) to the instances",
		self->vm.bridge, self->vm.address);
	if (spx_svc_ready((int)notify) < 0)
		spx_warn("serve: %s", spx_errmsg());
	while (!stop) {
		struct pollfd p[4] = { { sfd, POLLIN, 0 },
				       { ino, POLLIN, 0 },
				       { kids[0].out, POLLIN, 0 },
				       { kids[1].out, POLLIN, 0 } };
		struct signalfd_siginfo si;
		int ws;
		pid_t pid;

		if (poll(p, 4, -1) < 0 && errno != EINTR) {
			spx_warn_errno("serve: poll");
			break;
		}
		for (size_t i = 0; i < 2; i++)
			if (p[2 + i].revents)
				kid_read(&kids[i], false);
		if (p[1].revents && removed(ino)) {
			spx_log(SPX_LOG_INFO, "a host went from '%s': "
				"restarting dnsmasq to forget it", hosts);
			stop_kid(&kids[0]);
			if (start_kid(&kids[0]) < 0) {
				spx_warn("serve: %s", spx_errmsg());
				break;
			}
		}
		while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGHUP) {
				if (spx_arg(a, "log") &&
				    spx_svc_log_open(spx_arg(a, "log")) < 0)
					spx_warn("serve: %s", spx_errmsg());
			} else if (si.ssi_signo == SIGUSR1) {
				spx_log(SPX_LOG_WARN,
					"the supervisor that started this "
					"service is gone; serving on "
					"unsupervised until 'spx up' adopts it");
			} else if (si.ssi_signo != SIGCHLD) {
				spx_log(SPX_LOG_INFO, "stopping on signal %u",
					si.ssi_signo);
				spx_svc_notify("STOPPING=1");
				rc = SPX_OK;
				stop = true;
			}
		}
		while (!stop && (pid = waitpid(-1, &ws, WNOHANG)) > 0)
			for (size_t i = 0; i < 2; i++)
				if (kids[i].pid == pid) {
					char why[96];

					spx_sup_describe(ws, why, sizeof(why));
					kid_read(&kids[i], true);
					spx_warn("serve: %s %s; stopping", kids[i].name,
						 why);
					kids[i].pid = 0;
					stop = true;
				}
	}
out:
	stop_kid(&kids[1]);
	stop_kid(&kids[0]);
	argv_free(kids[0].argv);
	argv_free(kids[1].argv);
	if (ino >= 0)
		close(ino);
	free(pidfile);
	free(vm);
	free(hosts);
	return rc;
}

int cmd_serve(const struct spx_args *a)
{
	struct spx_node_loc loc;
	struct spx_conf conf;
	long long notify;
	int rc, pidfd = -1, sfd;
	sigset_t set;

	if ((rc = spx_svc_begin(a, "serve", true, &set, &notify)))
		return rc;
	if (spx_log_get() < SPX_LOG_INFO)
		spx_log_set(SPX_LOG_INFO);
	spx_node_locate(spx_arg(a, "root"), &loc);
	if (spx_conf_load(loc.conf, loc.root, &conf) < 0) {
		spx_warn("serve: %s", spx_errmsg());
		spx_node_loc_release(&loc);
		return spx_errstatus();
	}
	sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0) {
		spx_warn_errno("serve: signalfd");
		rc = SPX_FAIL;
	} else if (spx_arg(a, "pidfile") &&
		   (pidfd = spx_svc_claim(spx_arg(a, "pidfile"))) < 0) {
		spx_warn("serve: %s", spx_errmsg());
		rc = spx_errstatus();
	} else {
		rc = serve(a, &conf, notify, sfd);
	}
	if (pidfd >= 0)
		close(pidfd);
	if (sfd >= 0)
		close(sfd);
	spx_conf_release(&conf);
	spx_node_loc_release(&loc);
	return rc;
}
