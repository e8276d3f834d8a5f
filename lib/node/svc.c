#include "spx.h"

#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>

#include "file.h"
#include "proc.h"
#include "node/svc.h"

static const struct spx_svc services[] = {
	{ "gw", "spx-gw", "serve" },
};

size_t spx_svc_list(const struct spx_svc **out)
{
	*out = services;
	return SPX_ARRAY_SIZE(services);
}

char *spx_find_prog(const char *prog)
{
	char *self = spx_self_dir(), *cand;
	const char *path = getenv("PATH");

	if (self) {
		cand = spx_xprintf("%s/%s", self, prog);
		free(self);
		if (access(cand, X_OK) == 0)
			return cand;
		free(cand);
	}
	while (path && *path) {
		const char *c = strchr(path, ':');
		size_t l = c ? (size_t)(c - path) : strlen(path);

		if (l) {
			cand = spx_xprintf("%.*s/%s", (int)l, path, prog);
			if (access(cand, X_OK) == 0)
				return cand;
			free(cand);
		}
		path = c ? c + 1 : NULL;
	}
	return NULL;
}

static char *pidfile(const char *rundir, const char *name)
{
	return spx_xprintf("%s/%s.pid", rundir, name);
}

pid_t spx_svc_pid(const char *rundir, const char *name)
{
	char *pf = pidfile(rundir, name);
	char buf[32] = { 0 };
	long pid = 0;
	int fd = open(pf, O_RDONLY | O_CLOEXEC);

	free(pf);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	/* Free lock: nobody holds it, the service is not running. */
	if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
		close(fd);
		return 0;
	}
	if (errno != EWOULDBLOCK) {
		close(fd);
		return -1;
	}
	/* The holder writes its pid right after locking; allow a moment. */
	for (int tries = 0; tries < 50; tries++) {
		ssize_t r = pread(fd, buf, sizeof(buf) - 1, 0);

		if (r > 0 && buf[r - 1] == '\n') {
			pid = strtol(buf, NULL, 10);
			break;
		}
		usleep(10000);
	}
	close(fd);
	return pid > 0 ? (pid_t)pid : -1;
}

int spx_svc_claim(const char *pf)
{
	char line[32];
	int fd = open(pf, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	int n;

	if (fd < 0)
		return spx_error_errno(SPX_FAIL, "cannot open '%s'", pf);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		if (errno == EWOULDBLOCK)
			return spx_error(SPX_NO, "already running ('%s' is locked)",
					 pf);
		return spx_error_errno(SPX_FAIL, "cannot lock '%s'", pf);
	}
	n = snprintf(line, sizeof(line), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, line, (size_t)n, 0) != n) {
		close(fd);
		return spx_error_errno(SPX_FAIL, "cannot write '%s'", pf);
	}
	return fd;
}

static void log_tail(const char *logfile, struct spx_buf *out)
{
	struct spx_buf b = SPX_BUF_INIT;
	const char *p;
	int lines = 0;

	if (spx_buf_read_file(&b, logfile, 64u << 20) < 0) {
		spx_buf_release(&b);
		return;
	}
	p = b.p + b.len;
	while (p > b.p && lines < 6)
		if (*--p == '\n' && p + 1 < b.p + b.len)
			lines++;
	spx_buf_adds(out, p == b.p ? p : p + 1);
	spx_buf_release(&b);
}

/* Start one service; returns its pid after it reported ready. */
static pid_t start_one(const char *root, const struct spx_svc *s,
		       bool foreground)
{
	char *prog = spx_find_prog(s->prog);
	char *logdir = spx_path_join(root, "log");
	char *logfile = spx_xprintf("%s/%s.log", logdir, s->name);
	char *rundir = spx_path_join(root, "run");
	char *pf = pidfile(rundir, s->name);
	struct spx_buf tail = SPX_BUF_INIT;
	int pfd[2] = { -1, -1 };
	pid_t pid = -1;
	char c;

	if (!prog) {
		spx_error(SPX_FAIL, "cannot find '%s' next to spx or on PATH",
			  s->prog);
		goto out;
	}
	if (spx_mkdirs(logdir, 0700) < 0 || spx_mkdirs(rundir, 0700) < 0)
		goto out;
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		spx_error_errno(SPX_FAIL, "pipe");
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		spx_error_errno(SPX_FAIL, "fork");
		goto out;
	}
	if (pid == 0) {
		int fd;

		/* The readiness pipe becomes fd 3 in the child. */
		if (dup2(pfd[1], 3) < 0)
			_exit(SPX_FAIL);
		if (!foreground) {
			setsid();
			fd = open("/dev/null", O_RDONLY);
			if (fd >= 0)
				dup2(fd, 0);
			fd = open(logfile, O_WRONLY | O_CREAT | O_APPEND, 0600);
			if (fd >= 0) {
				dup2(fd, 1);
				dup2(fd, 2);
			}
		}
		/* The services log at the level spx itself runs at. */
		{
			static const char *const lv[] = { "error", "warn",
							  "info", "debug" };

			setenv("SPX_LOG_LEVEL", lv[spx_log_get()], 1);
		}
		execl(prog, s->prog, s->verb, "--root", root, "--notify-fd",
		      "3", "--pidfile", pf, (char *)NULL);
		_exit(SPX_FAIL);
	}
	close(pfd[1]);
	pfd[1] = -1;
	/* Wait for the newline; EOF means the service died first. */
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		int r = poll(&p, 1, 60000);
		ssize_t n;

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			kill(pid, SIGTERM);
			spx_error(SPX_FAIL, "%s did not become ready in 60 s",
				  s->prog);
			pid = -1;
			break;
		}
		n = read(pfd[0], &c, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 1 && c == '\n')
			break;
		if (n == 1)
			continue;
		waitpid(pid, NULL, 0);
		if (!foreground)
			log_tail(logfile, &tail);
		spx_error(SPX_FAIL, "%s failed to start%s%s", s->prog,
			  tail.len ? "; the end of its log:\n" : "",
			  tail.len ? tail.p : "");
		pid = -1;
		break;
	}
out:
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (pfd[1] >= 0)
		close(pfd[1]);
	spx_buf_release(&tail);
	free(prog);
	free(logdir);
	free(logfile);
	free(rundir);
	free(pf);
	return pid;
}

int spx_svc_up(const char *root, bool foreground, pid_t *pids, size_t *npids)
{
	char *rundir = spx_path_join(root, "run");
	size_t n = 0;
	int rc = 0;

	for (size_t i = 0; i < SPX_ARRAY_SIZE(services); i++) {
		pid_t p = spx_svc_pid(rundir, services[i].name);

		if (p > 0) {
			spx_info("%s is already running (pid %ld)",
				 services[i].name, (long)p);
			continue;
		}
		p = start_one(root, &services[i], foreground);
		if (p < 0) {
			rc = -1;
			break;
		}
		spx_info("started %s (pid %ld)", services[i].name, (long)p);
		if (pids)
			pids[n++] = p;
	}
	if (npids)
		*npids = n;
	free(rundir);
	return rc;
}

int spx_svc_down(const char *root, int timeout_ms)
{
	char *rundir = spx_path_join(root, "run");
	int rc = 0;

	/* Stop in reverse start order. */
	for (size_t i = SPX_ARRAY_SIZE(services); i-- > 0;) {
		pid_t p = spx_svc_pid(rundir, services[i].name);
		int waited = 0;

		if (p <= 0)
			continue;
		if (kill(p, SIGTERM) < 0 && errno != ESRCH) {
			rc = spx_error_errno(SPX_FAIL, "cannot stop %s (pid %ld)",
					     services[i].name, (long)p);
			continue;
		}
		while (spx_svc_pid(rundir, services[i].name) > 0 &&
		       waited < timeout_ms) {
			usleep(20000);
			waited += 20;
		}
		if (spx_svc_pid(rundir, services[i].name) > 0) {
			spx_log(SPX_LOG_WARN,
				"%s (pid %ld) ignored SIGTERM; killing it",
				services[i].name, (long)p);
			kill(p, SIGKILL);
			for (waited = 0; waited < 5000 &&
					 spx_svc_pid(rundir, services[i].name) > 0;
			     waited += 20)
				usleep(20000);
		}
		spx_info("stopped %s (pid %ld)", services[i].name, (long)p);
	}
	free(rundir);
	return rc;
}
