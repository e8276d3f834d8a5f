/* spx-vol serve: the NBD server of the volumes, spx-nbd (the default)
 * or nbdkit with the spx-vol plugin (ebs.server, --server), as a node
 * service.
 *
 * The server does the serving; this process makes it a service spx up
 * can supervise like spx-gw: it holds the pidfile lock, clears a socket
 * a killed server left behind (but never takes over a live one), says
 * it is ready only once the socket accepts connections, relays the
 * server's messages into the service's log with timestamps (so SIGHUP's
 * log reopen covers them), and on SIGTERM kills the server and waits
 * for it. The server dies with this process (PR_SET_PDEATHSIG): it
 * never outlives it to hold the socket unsupervised.
 *
 * Why killed, never stopped: on SIGTERM (and so with its own
 * --exit-with-parent, which sends SIGTERM) nbdkit answers every request
 * it reads from then on with NBD_ESHUTDOWN, and QEMU hands that to the
 * guest as a failed write: ext4 remounts its root read-only. A server
 * that is killed answers nothing; QEMU sees the connection end, and
 * sends its requests in flight again once it has reconnected
 * (lib/vm/vm.c: reconnect-delay). Nothing acknowledged is lost: what a
 * client flushed is on disk, what it wrote without a flush is in the
 * page cache, which outlives the process, and the change map marks a
 * chunk before it is written (lib/vol/track.h). */
#include "spx.h"

#include <libnbd.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "file.h"
#include "node/sup.h"
#include "node/svc.h"
#include "proc.h"
#include "vol/grant.h"
#include "volcli.h"

/* How long nbdkit may take to listen. */
#define READY_TIMEOUT_MS 30000
/* How often the socket is tried while nbdkit starts. */
#define PROBE_MS 20

const char *volcli_nbdkit(void)
{
	const char *e = getenv("SPX_NBDKIT");

	return e && *e ? e : "nbdkit";
}

/* Is an NBD server answering on the unix socket path? 0 when one is
 * (after a clean handshake that it ends with NBD_OPT_ABORT, so nbdkit
 * logs nothing), else -1 with errno (ECONNREFUSED: a socket nobody
 * serves). */
int volcli_probe(const char *path)
{
	struct nbd_handle *nbd = nbd_create();
	int rc = -1, e = ENOMEM;

	if (nbd && nbd_set_opt_mode(nbd, true) == 0) {
		if (nbd_connect_unix(nbd, path) == 0) {
			nbd_opt_abort(nbd);
			rc = 0;
		}
		e = nbd_get_errno();
	}
	nbd_close(nbd);
	errno = rc ? (e ? e : EIO) : 0;
	return rc;
}

/* The socket must be free: a live server there is refused, the socket
 * file a killed one left is removed. */
static int clear_socket(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0
				       : spx_error_errno(SPX_FAIL, "cannot use '%s'",
							 path);
	if (!S_ISSOCK(st.st_mode))
		return spx_error(SPX_FAIL, "'%s' exists and is not a socket",
				 path);
	if (volcli_probe(path) == 0)
		return spx_error(SPX_NO, "'%s' is being served already", path);
	if (errno != ECONNREFUSED)
		return spx_error_errno(SPX_FAIL, "cannot use '%s'", path);
	if (unlink(path) < 0 && errno != ENOENT)
		return spx_error_errno(SPX_FAIL, "cannot remove '%s'", path);
	return 0;
}

static pid_t start_nbdkit(char *const argv[], int out)
{
	sigset_t none;
	pid_t parent = getpid(), pid = fork();
	int null;

	if (pid)
		return pid;
	/* Killed when this process ends, however it ends; if it has
	 * already, the parent is no longer ours. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(SPX_FAIL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	null = open("/dev/null", O_RDONLY);
	if (null < 0 || dup2(null, STDIN_FILENO) < 0 ||
	    dup2(out, STDOUT_FILENO) < 0 || dup2(out, STDERR_FILENO) < 0)
		_exit(SPX_FAIL);
	spx_preload_sanitizers();
	execvp(argv[0], argv);
	dprintf(STDERR_FILENO, "cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(SPX_FAIL);
}

struct serve {
	const char *name; /* the server's, for messages */
	const char *sock;
	const char *logfile;
	long long notify;
	pid_t pid;
	int sfd, out;
	struct spx_svc_relay relay;
};

/* Read what nbdkit wrote and log its lines; at EOF close the pipe.
 * nbdkit without -v prints only errors: they are warnings of the
 * service. */
static void relay_read(struct serve *s)
{
	if (!spx_svc_relay_read(&s->relay, s->out, SPX_LOG_WARN)) {
		close(s->out);
		s->out = -1;
	}
}

/* Run until nbdkit is gone; the exit status of spx-vol serve. */
static int serve_loop(struct serve *s)
{
	int64_t start = spx_mono_ms();
	bool ready = false, stopping = false;
	int status;

	for (;;) {
		struct pollfd p[2] = { { s->sfd, POLLIN, 0 },
				       { s->out, POLLIN, 0 } };
		int timeout = ready ? -1 : PROBE_MS;

		if (stopping)
			timeout = PROBE_MS * 5;
		if (poll(p, s->out >= 0 ? 2 : 1, timeout) < 0 && errno != EINTR) {
			spx_warn_errno("serve: poll");
			kill(s->pid, SIGKILL);
		}
		if (s->out >= 0 && p[1].revents)
			relay_read(s);
		if (p[0].revents) {
			struct signalfd_siginfo si;

			while (read(s->sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGHUP) {
					if (s->logfile &&
					    spx_svc_log_open(s->logfile) < 0)
						spx_warn("serve: %s", spx_errmsg());
				} else if (si.ssi_signo == SIGUSR1) {
					spx_log(SPX_LOG_WARN,
						"the supervisor that started this "
						"service is gone; serving on "
						"unsupervised until 'spx up' "
						"adopts it");
				} else if (si.ssi_signo != SIGCHLD && !stopping) {
					spx_log(SPX_LOG_INFO,
						"stopping on signal %u",
						si.ssi_signo);
					spx_svc_notify("STOPPING=1");
					kill(s->pid, SIGKILL);
					stopping = true;
				}
			}
		}
		if (waitpid(s->pid, &status, WNOHANG) == s->pid)
			break;
		if (!ready && !stopping) {
			if (volcli_probe(s->sock) == 0) {
				ready = true;
				/* As root, guests' QEMUs (each a user of its
				 * own) connect too: the plugin opens them
				 * only the volumes granted to them
				 * (lib/vol/grant.h), and bounds how many
				 * connections users other than root and
				 * this one hold (spxvol.c: preconnect). Else
				 * only this user's processes may connect. */
				if (chmod(s->sock, geteuid() ? 0600 : 0666) < 0)
					spx_warn_errno("serve: chmod '%s'", s->sock);
				spx_log(SPX_LOG_INFO, "serving volumes on %s",
					s->sock);
				if (spx_svc_ready((int)s->notify) < 0)
					spx_warn("serve: %s", spx_errmsg());
			} else if (spx_mono_ms() - start > READY_TIMEOUT_MS) {
				spx_warn("serve: %s did not listen on '%s' "
					 "within %d s; stopping it",
					 s->name, s->sock, READY_TIMEOUT_MS / 1000);
				kill(s->pid, SIGKILL);
				stopping = true;
			}
		}
	}
	/* Whatever nbdkit said last says why it stopped. */
	while (s->out >= 0)
		relay_read(s);
	/* nbdkit leaves its socket behind: it was ours, so it goes. */
	if (ready && unlink(s->sock) < 0 && errno != ENOENT)
		spx_warn_errno("serve: cannot remove '%s'", s->sock);
	if (stopping && ready)
		return 0;
	{
		char why[96];

		spx_sup_describe(status, why, sizeof(why));
		spx_warn("serve: %s %s", s->name, why);
	}
	return SPX_FAIL;
}

int cmd_serve(const struct spx_args *a)
{
	struct serve s = { .logfile = spx_arg(a, "log"), .sfd = -1, .out = -1 };
	struct volcli c;
	long long threads;
	char *sock = NULL, *plugin = NULL, *dir = NULL, *tstr = NULL;
	const char *server;
	int rc, pidfd = -1, pipefd[2] = { -1, -1 };
	sigset_t set;

	if (spx_arg_int(a, "threads", 1, 1024, 0, &threads) < 0) {
		spx_warn("serve: %s", spx_errmsg());
		return SPX_USAGE;
	}
	if ((rc = spx_svc_begin(a, "serve", true, &set, &s.notify)))
		return rc;
	if ((rc = volcli_open(a, &c)))
		return rc;
	if (!threads)
		threads = c.threads;
	if (spx_arg(a, "pidfile") &&
	    (pidfd = spx_svc_claim(spx_arg(a, "pidfile"))) < 0) {
		rc = volcli_fail(a);
		goto out;
	}
	/* Volumes removed when the node went down free their blocks now. */
	if (spx_vol_store_sweep(c.vs) < 0)
		spx_warn("serve: %s", spx_errmsg());
	server = spx_arg(a, "server") ? spx_arg(a, "server") : c.server;
	if (strcmp(server, "spx") && strcmp(server, "nbdkit")) {
		spx_warn("serve: the NBD server must be spx or nbdkit, not '%s'",
			 server);
		rc = SPX_USAGE;
		goto out;
	}
	s.name = !strcmp(server, "spx") ? "spx-nbd" : "nbdkit";
	sock = volcli_socket(a, &c);
	s.sock = sock;
	plugin = !strcmp(server, "spx") ? spx_vol_server_path()
					: spx_vol_plugin_path();
	umask(077);
	if (!plugin || (!spx_arg(a, "socket") && spx_mkdirs(c.run, 0700) < 0) ||
	    clear_socket(sock) < 0) {
		rc = volcli_fail(a);
		goto out;
	}
	dir = spx_xprintf("dir=%s", spx_vol_store_dir(c.vs));
	tstr = spx_xprintf("%lld", threads);
	s.sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (s.sfd < 0 || pipe2(pipefd, O_CLOEXEC) < 0) {
		spx_warn_errno("serve: cannot set up");
		rc = SPX_FAIL;
		goto out;
	}
	{
		char *conf = spx_xprintf("conf=%s", c.conf);
		char *root = spx_xprintf("root=%s", c.root);
		char *gdir = spx_vol_grants_dir(sock);
		char *grants = spx_xprintf("grants=%s", gdir);
		char *nbdkit[] = { (char *)volcli_nbdkit(), "-f", "-U", sock,
				   "--threads", tstr,
				   plugin, dir, conf, root, grants, NULL };
		char *spx[] = { plugin, "-U", sock, dir, conf, root, grants,
				NULL };
		char **argv = !strcmp(server, "spx") ? spx : nbdkit;

		fflush(NULL);
		s.pid = start_nbdkit(argv, pipefd[1]);
		free(conf);
		free(root);
		free(gdir);
		free(grants);
	}
	close(pipefd[1]);
	s.out = pipefd[0];
	if (s.pid < 0) {
		spx_warn_errno("serve: fork");
		rc = SPX_FAIL;
		goto out;
	}
	rc = serve_loop(&s);
out:
	if (s.out >= 0)
		close(s.out);
	if (s.sfd >= 0)
		close(s.sfd);
	if (pidfd >= 0)
		close(pidfd);
	free(sock);
	free(plugin);
	free(dir);
	free(tstr);
	volcli_close(&c);
	return rc;
}
