#include "spx.h"

#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "cmd.h"
#include "file.h"
#include "proc.h"
#include "conf/conf.h"
#include "node/node.h"
#include "node/svc.h"

/* Every service a node may run, in start order; the net service runs
 * where the instances are on a bridge (vm.network). */
static const struct spx_svc services[] = {
	{ "gw", "spx-gw", "serve" },
	{ "vol", "spx-vol", "serve" },
	{ "net", "spx-net", "serve" },
	{ "agent", "spx", "agent" },
};
static const struct spx_svc services_user[] = {
	{ "gw", "spx-gw", "serve" },
	{ "vol", "spx-vol", "serve" },
	{ "agent", "spx", "agent" },
};

size_t spx_svc_list(bool bridge, const struct spx_svc **out)
{
	*out = bridge ? services : services_user;
	return bridge ? SPX_ARRAY_SIZE(services) : SPX_ARRAY_SIZE(services_user);
}

size_t spx_svc_list_at(const char *root, const struct spx_svc **out)
{
	struct spx_node_loc loc;
	struct spx_conf c;
	bool bridge = false;

	spx_node_locate(root, &loc);
	if (spx_conf_load(loc.conf, loc.root, &c) == 0) {
		bridge = !strcmp(spx_conf_self(&c)->vm.network, "bridge");
		spx_conf_release(&c);
	} else {
		spx_error_clear();
	}
	spx_node_loc_release(&loc);
	return spx_svc_list(bridge, out);
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

int spx_svc_begin(const struct spx_args *a, const char *who, bool chld,
		  sigset_t *set, long long *notify)
{
	const char *log = spx_arg(a, "log");

	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGUSR1);
	if (chld)
		sigaddset(set, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, set, NULL);
	if (spx_arg_int(a, "notify-fd", 3, 1024, -1, notify) < 0) {
		spx_warn("%s: %s", who, spx_errmsg());
		return SPX_USAGE;
	}
	if (log) {
		if (spx_svc_log_open(log) < 0) {
			spx_warn("%s: %s", who, spx_errmsg());
			return SPX_FAIL;
		}
		spx_log_timestamps(true);
	}
	return 0;
}

int spx_svc_log_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);

	if (fd < 0)
		return spx_error_errno(SPX_FAIL, "cannot open '%s'", path);
	if (dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) {
		close(fd);
		return spx_error_errno(SPX_FAIL, "cannot log to '%s'", path);
	}
	close(fd);
	return 0;
}

static void relay_flush(struct spx_svc_relay *r, enum spx_log_level l,
			bool eof)
{
	char *start = r->buf, *nl;

	while ((nl = memchr(start, '\n', r->n - (size_t)(start - r->buf)))) {
		spx_log(l, "%.*s", (int)(nl - start), start);
		start = nl + 1;
	}
	r->n -= (size_t)(start - r->buf);
	memmove(r->buf, start, r->n);
	if (r->n && (eof || r->n == sizeof(r->buf))) {
		spx_log(l, "%.*s", (int)r->n, r->buf);
		r->n = 0;
	}
}

int spx_svc_relay_read(struct spx_svc_relay *r, int fd,
		       enum spx_log_level l)
{
	ssize_t n = read(fd, r->buf + r->n, sizeof(r->buf) - r->n);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return -1;
	if (n > 0)
		r->n += (size_t)n;
	relay_flush(r, l, n <= 0);
	return n > 0;
}

void spx_svc_relay_end(struct spx_svc_relay *r, enum spx_log_level l)
{
	relay_flush(r, l, true);
}

int spx_svc_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len;
	socklen_t salen;
	int fd;

	if (!path || !*path)
		return 0;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path))
		return spx_error(SPX_FAIL, "bad NOTIFY_SOCKET '%s'", path);
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0'; /* an abstract socket */
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return spx_error_errno(SPX_FAIL, "socket");
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL,
		   (struct sockaddr *)&sa, salen) < 0) {
		close(fd);
		return spx_error_errno(SPX_FAIL, "cannot notify '%s'", path);
	}
	close(fd);
	return 0;
}

int spx_svc_ready(int notify_fd)
{
	int rc = 0;

	if (notify_fd >= 0) {
		if (write(notify_fd, "\n", 1) != 1)
			rc = spx_error_errno(SPX_FAIL,
					     "cannot notify readiness");
		close(notify_fd);
	}
	if (spx_svc_notify("READY=1") < 0)
		rc = -1;
	return rc;
}

bool spx_svc_systemd_unit(pid_t pid, char *unit, size_t size)
{
	struct spx_buf b = SPX_BUF_INIT;
	char path[64];
	const char *line, *slash, *end;
	bool ok = false;

	snprintf(path, sizeof(path), "/proc/%ld/cgroup", (long)pid);
	if (spx_buf_read_file(&b, path, 1 << 16) < 0) {
		spx_error_clear();
		spx_buf_release(&b);
		return false;
	}
	/* cgroup v2: "0::/system.slice/spx-gw.service" */
	line = strstr(b.p, "0::/");
	if (line) {
		end = line + strcspn(line, "\n");
		slash = end;
		while (slash > line && slash[-1] != '/')
			slash--;
		if (end - slash > 12 && !strncmp(slash, "spx-", 4) &&
		    !strncmp(end - 8, ".service", 8) &&
		    (size_t)(end - slash) < size) {
			memcpy(unit, slash, (size_t)(end - slash));
			unit[end - slash] = '\0';
			ok = true;
		}
	}
	spx_buf_release(&b);
	return ok;
}

static char *state_path(const char *rundir, const char *name)
{
	return spx_xprintf("%s/%s.state", rundir, name);
}

static void copy_str(json_t *o, const char *k, char *dst, size_t size)
{
	const char *v = json_string_value(json_object_get(o, k));

	snprintf(dst, size, "%s", v ? v : "");
}

void spx_svc_state_read(const char *rundir, const char *name,
			struct spx_svc_state *st)
{
	char *p = state_path(rundir, name);
	struct spx_buf b = SPX_BUF_INIT;
	json_t *o = NULL;

	memset(st, 0, sizeof(*st));
	if (spx_buf_read_file(&b, p, 1 << 16) == 0)
		o = json_loadb(b.p, b.len, 0, NULL);
	spx_error_clear();
	if (json_is_object(o)) {
		json_int_t pid = json_integer_value(json_object_get(o, "pid"));
		json_int_t r = json_integer_value(json_object_get(o, "restarts"));

		st->pid = pid > 0 && pid <= INT32_MAX ? (pid_t)pid : 0;
		st->restarts = r > 0 && r <= UINT32_MAX ? (unsigned)r : 0;
		copy_str(o, "state", st->state, sizeof(st->state));
		copy_str(o, "last_exit", st->last_exit, sizeof(st->last_exit));
		copy_str(o, "last_exit_at", st->last_exit_at,
			 sizeof(st->last_exit_at));
	}
	json_decref(o);
	spx_buf_release(&b);
	free(p);
}

int spx_svc_state_write(const char *rundir, const char *name,
			const struct spx_svc_state *st)
{
	char *p = state_path(rundir, name), *text;
	json_t *o = json_pack("{s:s, s:I, s:s, s:I, s:s, s:s}", "service", name,
			      "pid", (json_int_t)st->pid, "state", st->state,
			      "restarts", (json_int_t)st->restarts, "last_exit",
			      st->last_exit, "last_exit_at", st->last_exit_at);
	int rc = -1;

	text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	if (!text)
		spx_error(SPX_FAIL, "cannot render '%s'", p);
	else
		rc = spx_write_file(p, text, strlen(text), 0644, false);
	free(text);
	json_decref(o);
	free(p);
	return rc;
}

int spx_svc_down(const char *root, int timeout_ms)
{
	char *rundir = spx_path_join(root, "run");
	int rc = 0, found = 0;

	/* Stop in reverse start order. */
	for (size_t i = SPX_ARRAY_SIZE(services); i-- > 0;) {
		pid_t p = spx_svc_pid(rundir, services[i].name);
		int waited = 0;

		if (p <= 0)
			continue;
		found++;
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
		{
			struct spx_svc_state st;

			spx_svc_state_read(rundir, services[i].name, &st);
			st.pid = 0;
			snprintf(st.state, sizeof(st.state), "stopped");
			if (spx_svc_state_write(rundir, services[i].name, &st) <
			    0)
				spx_error_clear();
		}
	}
	free(rundir);
	return rc < 0 ? rc : found;
}
