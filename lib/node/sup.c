/* sup.c: the supervisor (see sup.h). One thread, one poll loop over a
 * signalfd (SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR2), the readiness
 * pipes of the services that are starting and the pidfds of adopted
 * ones, with the next restart as its timeout. */
#include "spx.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "file.h"
#include "node/sup.h"
#include "node/svc.h"
#include "proc.h"

#define BACKOFF_FIRST_MS 100u
#define BACKOFF_MAX_MS 30000u
#define STABLE_MS 10000	       /* ready this long: the next death is a first */
#define START_TIMEOUT_MS 60000 /* to become ready while `spx up` waits */
#define STOP_TIMEOUT_MS 10000  /* SIGTERM, then SIGKILL */

struct run {
	const struct spx_svc *s;
	bool ours;	 /* false: systemd runs it, not us */
	pid_t pid;	 /* 0: not running */
	bool adopted;	 /* not our child: watched through pidfd */
	int pidfd;
	int nfd;	 /* readiness pipe while starting, else -1 */
	bool ready;
	int64_t ready_ms;
	unsigned streak; /* deaths in a row, for the backoff */
	bool pending;	 /* a restart is due at due_ms */
	int64_t due_ms;
	bool dead;	 /* ended during start-up or stop: not restarted */
	struct spx_svc_state st;
	char *logfile, *pidfile;
};

struct sup {
	const struct spx_sup_opts *o;
	char *rundir, *logdir, *suplog;
	int sfd;
	pid_t self;
	enum spx_log_level child_level;
	struct run runs[SPX_SVC_MAX];
	size_t n;
	bool starting; /* `spx up` waits: a death is a failure to start */
	bool stopping;
};

static void wall_iso(char *buf, size_t size)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

unsigned spx_sup_backoff_ms(unsigned n)
{
	unsigned ms = BACKOFF_FIRST_MS;

	while (n-- > 1 && ms < BACKOFF_MAX_MS)
		ms *= 2;
	return ms < BACKOFF_MAX_MS ? ms : BACKOFF_MAX_MS;
}

void spx_sup_describe(int ws, char *buf, size_t size)
{
	if (WIFEXITED(ws)) {
		snprintf(buf, size, "exited with status %d", WEXITSTATUS(ws));
	} else if (WIFSIGNALED(ws)) {
		const char *abbr = sigabbrev_np(WTERMSIG(ws));

		if (abbr)
			snprintf(buf, size, "killed by SIG%s%s", abbr,
				 WCOREDUMP(ws) ? " (core dumped)" : "");
		else
			snprintf(buf, size, "killed by signal %d%s",
				 WTERMSIG(ws),
				 WCOREDUMP(ws) ? " (core dumped)" : "");
	} else {
		snprintf(buf, size, "ended (wait status %#x)", (unsigned)ws);
	}
}

int spx_sup_claim(const char *root)
{
	char *rundir = spx_path_join(root, "run");
	char *pf = spx_xprintf("%s/supervise.pid", rundir);
	int fd = -1;

	if (spx_mkdirs(rundir, 0700) == 0)
		fd = spx_svc_claim(pf);
	if (fd < 0 && spx_errstatus() == SPX_NO)
		spx_error(SPX_NO, "a supervisor runs already (pid %ld)",
			  (long)spx_svc_pid(rundir, "supervise"));
	free(pf);
	free(rundir);
	return fd;
}

pid_t spx_sup_pid(const char *root)
{
	char *rundir = spx_path_join(root, "run");
	pid_t p = spx_svc_pid(rundir, "supervise");

	free(rundir);
	return p > 0 ? p : 0;
}

/* ---- logging ------------------------------------------------------- */

/* A line about a service: in the supervisor's log, and (detached) also
 * at the end of the service's own log, where whoever reads why it went
 * quiet looks first. */
__attribute__((format(printf, 4, 5))) static void
say(struct sup *sup, struct run *r, enum spx_log_level lv, const char *fmt,
    ...)
{
	char msg[1024], line[1200], stamp[40];
	va_list ap;
	int fd, n;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	spx_log(lv, "%s", msg);
	if (sup->o->foreground || !r || lv > SPX_LOG_WARN)
		return;
	spx_log_stamp(stamp, sizeof(stamp));
	n = snprintf(line, sizeof(line), "%sspx up: %s\n", stamp, msg);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = (int)sizeof(line) - 1;
	fd = open(r->logfile, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) < 0)
		spx_error_clear();
	close(fd);
}

static void save(struct sup *sup, struct run *r)
{
	r->st.pid = r->pid;
	if (spx_svc_state_write(sup->rundir, r->s->name, &r->st) < 0)
		spx_log(SPX_LOG_WARN, "%s", spx_errmsg());
}

static void set_state(struct run *r, const char *st)
{
	snprintf(r->st.state, sizeof(r->st.state), "%s", st);
}

static void log_tail(const char *logfile, struct spx_buf *out)
{
	struct spx_buf b = SPX_BUF_INIT;
	const char *p;
	int lines = 0;

	if (spx_buf_read_file(&b, logfile, 64u << 20) < 0) {
		spx_error_clear();
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

/* ---- starting ------------------------------------------------------ */

static _Noreturn void exec_child(struct sup *sup, struct run *r, int wfd,
				 pid_t parent)
{
	static const char *const lv[] = { "error", "warn", "info", "debug" };
	char *prog = spx_find_prog(r->s->prog);
	sigset_t none;
	int fd;

	/* Dispositions and the mask survive exec: give the service the
	 * defaults, whatever the supervisor blocked or ignored. */
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Tell the service when its supervisor dies; if it died already,
	 * there is nobody to serve for. */
	if (prctl(PR_SET_PDEATHSIG, SIGUSR1) < 0 || getppid() != parent)
		_exit(SPX_FAIL);
	/* Its own process group: a Ctrl-C at the supervisor's terminal is
	 * for the supervisor, which stops the services in order. */
	setpgid(0, 0);
	/* The readiness pipe is fd 3 (it may be already: then only keep it
	 * open across exec). */
	if (wfd == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(wfd, 3) < 0)
		_exit(SPX_FAIL);
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0)
		dup2(fd, 0);
	if (!sup->o->foreground) {
		fd = open(r->logfile, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
	}
	setenv("SPX_LOG_LEVEL", lv[sup->child_level], 1);
	if (!prog) {
		spx_warn("cannot find '%s' next to spx or on PATH", r->s->prog);
		_exit(SPX_FAIL);
	}
	if (sup->o->foreground)
		execl(prog, r->s->prog, r->s->verb, "--root", sup->o->root,
		      "--notify-fd", "3", "--pidfile", r->pidfile,
		      (char *)NULL);
	else
		execl(prog, r->s->prog, r->s->verb, "--root", sup->o->root,
		      "--notify-fd", "3", "--pidfile", r->pidfile, "--log",
		      r->logfile, (char *)NULL);
	spx_warn_errno("cannot run '%s'", prog);
	_exit(SPX_FAIL);
}

static int start_child(struct sup *sup, struct run *r)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return spx_error_errno(SPX_FAIL, "pipe");
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return spx_error_errno(SPX_FAIL, "fork");
	}
	if (pid == 0)
		exec_child(sup, r, p[1], sup->self);
	close(p[1]);
	r->pid = pid;
	r->adopted = false;
	r->nfd = p[0];
	r->ready = false;
	r->pending = false;
	set_state(r, "starting");
	save(sup, r);
	return 0;
}

/* Watch a service some earlier supervisor started. */
static int adopt(struct sup *sup, struct run *r, pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	if (fd < 0)
		return spx_error_errno(SPX_FAIL, "cannot watch %s (pid %ld)",
				       r->s->name, (long)pid);
	/* The lock still held by the same pid: the pidfd is that process. */
	if (spx_svc_pid(sup->rundir, r->s->name) != pid) {
		close(fd);
		return spx_error(SPX_FAIL, "%s (pid %ld) ended while being "
				 "adopted", r->s->name, (long)pid);
	}
	r->pid = pid;
	r->adopted = true;
	r->pidfd = fd;
	r->ready = true;
	r->ready_ms = spx_mono_ms();
	set_state(r, "running");
	save(sup, r);
	return 0;
}

/* A service ended: record why, and plan its restart. */
static void died(struct sup *sup, struct run *r, const char *cause)
{
	int64_t now = spx_mono_ms();
	unsigned delay;
	pid_t pid = r->pid;

	if (r->nfd >= 0)
		close(r->nfd);
	if (r->adopted)
		close(r->pidfd);
	r->nfd = r->pidfd = -1;
	r->adopted = false;
	r->pid = 0;
	snprintf(r->st.last_exit, sizeof(r->st.last_exit), "%s", cause);
	wall_iso(r->st.last_exit_at, sizeof(r->st.last_exit_at));
	if (r->ready && now - r->ready_ms >= STABLE_MS)
		r->streak = 0;
	r->ready = false;
	if (sup->stopping || sup->starting) {
		r->dead = true;
		set_state(r, "stopped");
		save(sup, r);
		say(sup, r, sup->starting ? SPX_LOG_WARN : SPX_LOG_INFO,
		    "%s (pid %ld) %s%s", r->s->name, (long)pid, cause,
		    sup->starting ? " while starting" : "");
		return;
	}
	delay = spx_sup_backoff_ms(++r->streak);
	r->pending = true;
	r->due_ms = now + delay;
	set_state(r, "backoff");
	save(sup, r);
	say(sup, r, SPX_LOG_WARN, "%s (pid %ld) %s; restarting in %u.%u s",
	    r->s->name, (long)pid, cause, delay / 1000, delay % 1000 / 100);
}

static struct run *run_of(struct sup *sup, pid_t pid)
{
	for (size_t i = 0; i < sup->n; i++)
		if (sup->runs[i].pid == pid && !sup->runs[i].adopted)
			return &sup->runs[i];
	return NULL;
}

static void reap(struct sup *sup)
{
	char cause[128];
	int ws;
	pid_t p;

	while ((p = waitpid(-1, &ws, WNOHANG)) > 0) {
		struct run *r = run_of(sup, p);

		if (!r)
			continue;
		spx_sup_describe(ws, cause, sizeof(cause));
		died(sup, r, cause);
	}
}

/* The service wrote to its readiness pipe, or closed it. */
static void notified(struct sup *sup, struct run *r)
{
	char buf[64];
	ssize_t n = read(r->nfd, buf, sizeof(buf));

	if (n < 0 && errno == EINTR)
		return;
	if (n > 0 && !memchr(buf, '\n', (size_t)n))
		return;
	close(r->nfd);
	r->nfd = -1;
	if (n <= 0)
		return; /* its death follows through SIGCHLD */
	r->ready = true;
	r->ready_ms = spx_mono_ms();
	set_state(r, "running");
	save(sup, r);
	if (r->st.restarts)
		say(sup, r, SPX_LOG_WARN, "%s (pid %ld) is ready again "
		    "(restart %u)", r->s->name, (long)r->pid, r->st.restarts);
	else
		spx_info("%s (pid %ld) is ready", r->s->name, (long)r->pid);
}

static void reopen_log(struct sup *sup)
{
	int fd;

	if (sup->o->foreground)
		return;
	fd = open(sup->suplog, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
		  0600);
	if (fd < 0)
		return;
	dup2(fd, 1);
	dup2(fd, 2);
	close(fd);
}

/* Read the pending signals; returns false when told to stop. */
static bool signals(struct sup *sup)
{
	struct signalfd_siginfo si;

	while (read(sup->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			reap(sup);
			break;
		case SIGUSR2:
			/* `spx up`: the operator wants the node up now, so
			 * a restart waiting out its backoff is made at once
			 * (the streak stays: another death backs off more). */
			for (size_t i = 0; i < sup->n; i++) {
				struct run *r = &sup->runs[i];

				if (r->pending && !sup->stopping) {
					r->due_ms = spx_mono_ms();
					say(sup, r, SPX_LOG_INFO,
					    "%s: restarting now (spx up)",
					    r->s->name);
				}
			}
			break;
		case SIGHUP:
			reopen_log(sup);
			for (size_t i = 0; i < sup->n; i++)
				if (sup->runs[i].pid > 0 && sup->runs[i].ours)
					kill(sup->runs[i].pid, SIGHUP);
			break;
		default:
			if (!sup->stopping)
				spx_info("stopping on SIG%s",
					 sigabbrev_np((int)si.ssi_signo));
			sup->stopping = true;
			break;
		}
	}
	/* A child may have ended between the last signal and now. */
	reap(sup);
	return !sup->stopping;
}

/* ---- stopping ------------------------------------------------------ */

/* Wait for r's process to end, up to ms; true if it did. */
static bool gone(struct run *r, int ms)
{
	int64_t end = spx_mono_ms() + ms;
	int ws;

	for (;;) {
		if (r->adopted) {
			struct pollfd p = { .fd = r->pidfd, .events = POLLIN };
			int left = (int)(end - spx_mono_ms());

			if (poll(&p, 1, left > 0 ? left : 0) > 0)
				return true;
		} else {
			pid_t w = waitpid(r->pid, &ws, WNOHANG);

			if (w == r->pid || (w < 0 && errno == ECHILD))
				return true;
		}
		if (spx_mono_ms() >= end)
			return false;
		if (!r->adopted)
			poll(NULL, 0, 20);
	}
}

static void stop_all(struct sup *sup)
{
	sup->stopping = true;
	for (size_t i = sup->n; i-- > 0;) {
		struct run *r = &sup->runs[i];
		pid_t pid = r->pid;

		r->pending = false;
		if (!r->ours)
			continue;
		if (pid > 0) {
			kill(pid, SIGTERM);
			if (!gone(r, STOP_TIMEOUT_MS)) {
				say(sup, r, SPX_LOG_WARN,
				    "%s (pid %ld) ignored SIGTERM; killing it",
				    r->s->name, (long)pid);
				kill(pid, SIGKILL);
				gone(r, 5000);
			}
			spx_info("stopped %s (pid %ld)", r->s->name, (long)pid);
		}
		if (r->nfd >= 0)
			close(r->nfd);
		if (r->adopted)
			close(r->pidfd);
		r->nfd = r->pidfd = -1;
		r->adopted = false;
		r->pid = 0;
		if (r->st.state[0]) {
			set_state(r, "stopped");
			save(sup, r);
		}
	}
}

/* ---- the start-up ---------------------------------------------------- */

/* Wait until r is ready; on failure the error is recorded. */
static int wait_ready(struct sup *sup, struct run *r)
{
	int64_t end = spx_mono_ms() + START_TIMEOUT_MS;
	struct spx_buf tail = SPX_BUF_INIT;

	r->dead = false;
	while (!r->ready && !r->dead) {
		struct pollfd p[2] = { { .fd = sup->sfd, .events = POLLIN },
				       { .fd = r->nfd, .events = POLLIN } };
		int left = (int)(end - spx_mono_ms());

		if (left <= 0) {
			kill(r->pid, SIGKILL);
			gone(r, 5000);
			r->pid = 0;
			set_state(r, "stopped");
			save(sup, r);
			return spx_error(SPX_FAIL,
					 "%s did not become ready in %d s",
					 r->s->prog, START_TIMEOUT_MS / 1000);
		}
		/* After EOF on the pipe, wait for the death that follows. */
		if (poll(p, r->nfd >= 0 ? 2 : 1, left) < 0 && errno != EINTR)
			return spx_error_errno(SPX_FAIL, "poll");
		if (r->nfd >= 0 && p[1].revents)
			notified(sup, r);
		if (p[0].revents && !signals(sup))
			return spx_error(SPX_FAIL, "stopped while starting %s",
					 r->s->prog);
	}
	if (r->ready)
		return 0;
	/* It ended before it was ready: it is not restarted. */
	if (!sup->o->foreground)
		log_tail(r->logfile, &tail);
	spx_error(SPX_FAIL, "%s failed to start%s%s", r->s->prog,
		  tail.len ? "; the end of its log:\n" : "",
		  tail.len ? tail.p : "");
	spx_buf_release(&tail);
	return -1;
}

__attribute__((format(printf, 2, 3))) static void
progress(struct sup *sup, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	spx_log(SPX_LOG_INFO, "%s", msg);
	sup->o->report(sup->o->arg, SPX_SUP_INFO, 0, msg);
}

/* Start (or adopt) one service and wait for it. */
static int bring_up(struct sup *sup, struct run *r)
{
	char unit[128];
	pid_t pid = spx_svc_pid(sup->rundir, r->s->name);
	struct spx_svc_state old;

	if (pid > 0 && spx_svc_systemd_unit(pid, unit, sizeof(unit))) {
		r->ours = false;
		progress(sup, "%s (pid %ld) is run by systemd (%s), not "
			 "supervised here", r->s->name, (long)pid, unit);
		return 0;
	}
	spx_svc_state_read(sup->rundir, r->s->name, &old);
	if (pid > 0) {
		/* The last supervisor was killed; its counts go on. */
		r->st = old;
		if (adopt(sup, r, pid) < 0)
			return -1;
		progress(sup, "adopted %s (pid %ld)", r->s->name, (long)pid);
		return 0;
	}
	memset(&r->st, 0, sizeof(r->st));
	if (old.state[0] && strcmp(old.state, "stopped")) {
		/* It was not stopped by `spx down` and nobody restarted it:
		 * it ended while no supervisor ran (or the host went down). */
		r->st.restarts = old.restarts + 1;
		snprintf(r->st.last_exit, sizeof(r->st.last_exit),
			 "ended while no supervisor ran (cause unknown)");
		wall_iso(r->st.last_exit_at, sizeof(r->st.last_exit_at));
		say(sup, r, SPX_LOG_WARN, "%s (pid %ld) %s", r->s->name,
		    (long)old.pid, r->st.last_exit);
	}
	if (start_child(sup, r) < 0 || wait_ready(sup, r) < 0)
		return -1;
	progress(sup, "started %s (pid %ld)", r->s->name, (long)r->pid);
	return 0;
}

/* ---- the loop ------------------------------------------------------ */

static void loop(struct sup *sup)
{
	struct pollfd p[1 + 2 * SPX_SVC_MAX];
	struct run *who[1 + 2 * SPX_SVC_MAX];

	while (!sup->stopping) {
		int64_t now = spx_mono_ms(), next = -1;
		size_t np = 1;
		int timeout;

		for (size_t i = 0; i < sup->n; i++) {
			struct run *r = &sup->runs[i];

			if (r->pending && r->due_ms <= now) {
				r->st.restarts++;
				if (start_child(sup, r) < 0) {
					say(sup, r, SPX_LOG_WARN,
					    "cannot restart %s: %s", r->s->name,
					    spx_errmsg());
					r->st.restarts--;
					r->pending = true;
					r->due_ms = now + BACKOFF_MAX_MS;
				}
			}
			if (r->pending && (next < 0 || r->due_ms < next))
				next = r->due_ms;
		}
		p[0] = (struct pollfd){ .fd = sup->sfd, .events = POLLIN };
		for (size_t i = 0; i < sup->n; i++) {
			struct run *r = &sup->runs[i];

			if (r->nfd >= 0) {
				p[np] = (struct pollfd){ .fd = r->nfd,
							 .events = POLLIN };
				who[np++] = r;
			}
			if (r->adopted) {
				p[np] = (struct pollfd){ .fd = r->pidfd,
							 .events = POLLIN };
				who[np++] = r;
			}
		}
		timeout = next < 0 ? -1 : (int)(next > now ? next - now : 0);
		if (poll(p, np, timeout) < 0) {
			if (errno == EINTR)
				continue;
			spx_log(SPX_LOG_ERROR, "poll: %s", strerror(errno));
			break;
		}
		for (size_t i = 1; i < np; i++) {
			struct run *r = who[i];

			if (!p[i].revents)
				continue;
			if (r->adopted && p[i].fd == r->pidfd)
				/* Not our child: its status is not ours. */
				died(sup, r, "ended (adopted: cause unknown)");
			else if (p[i].fd == r->nfd)
				notified(sup, r);
		}
		if (p[0].revents)
			signals(sup);
	}
}

int spx_sup_run(const struct spx_sup_opts *o)
{
	struct sup sup = { .o = o, .sfd = -1, .self = getpid() };
	const struct spx_svc *svcs;
	sigset_t set;
	int rc = SPX_OK;

	sup.n = spx_svc_list_at(o->root, &svcs);
	sup.rundir = spx_path_join(o->root, "run");
	sup.logdir = spx_path_join(o->root, "log");
	sup.suplog = spx_xprintf("%s/supervise.log", sup.logdir);
	sup.child_level = o->service_level >= 0
				  ? (enum spx_log_level)o->service_level
				  : spx_log_get();
	for (size_t i = 0; i < sup.n; i++) {
		struct run *r = &sup.runs[i];

		r->s = &svcs[i];
		r->ours = true;
		r->nfd = r->pidfd = -1;
		r->logfile = spx_xprintf("%s/%s.log", sup.logdir, r->s->name);
		r->pidfile = spx_xprintf("%s/%s.pid", sup.rundir, r->s->name);
	}
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (spx_mkdirs(sup.logdir, 0700) < 0 ||
	    spx_mkdirs(sup.rundir, 0700) < 0) {
		o->report(o->arg, SPX_SUP_FAIL, spx_errstatus(), spx_errmsg());
		rc = spx_errstatus();
		goto out;
	}
	sup.sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sup.sfd < 0) {
		spx_error_errno(SPX_FAIL, "signalfd");
		o->report(o->arg, SPX_SUP_FAIL, SPX_FAIL, spx_errmsg());
		rc = SPX_FAIL;
		goto out;
	}
	sup.starting = true;
	for (size_t i = 0; i < sup.n; i++) {
		if (bring_up(&sup, &sup.runs[i]) < 0) {
			rc = spx_errstatus();
			spx_log(SPX_LOG_WARN, "%s", spx_errmsg());
			o->report(o->arg, SPX_SUP_FAIL, rc, spx_errmsg());
			stop_all(&sup);
			goto out;
		}
	}
	sup.starting = false;
	o->report(o->arg, SPX_SUP_READY, 0, NULL);
	for (size_t i = 0; i < sup.n; i++)
		if (sup.runs[i].ours) {
			spx_info("supervising");
			loop(&sup);
			break;
		}
	stop_all(&sup);
	spx_info("stopped");
out:
	if (sup.sfd >= 0)
		close(sup.sfd);
	for (size_t i = 0; i < sup.n; i++) {
		free(sup.runs[i].logfile);
		free(sup.runs[i].pidfile);
	}
	free(sup.rundir);
	free(sup.logdir);
	free(sup.suplog);
	return rc;
}

int spx_sup_wait_ready(const char *root, int timeout_ms)
{
	char *rundir = spx_path_join(root, "run");
	const struct spx_svc *svcs;
	size_t n = spx_svc_list_at(root, &svcs);
	int64_t end = spx_mono_ms() + timeout_ms;
	pid_t sup = spx_sup_pid(root);
	int rc = 0;

	/* Backoffs end now (see the SIGUSR2 case of signals()). */
	if (sup > 0)
		kill(sup, SIGUSR2);
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct spx_svc_state st;
		char unit[128];
		pid_t p;

		for (;;) {
			p = spx_svc_pid(rundir, svcs[i].name);
			spx_svc_state_read(rundir, svcs[i].name, &st);
			if (p > 0 && ((st.pid == p && !strcmp(st.state, "running")) ||
				      spx_svc_systemd_unit(p, unit, sizeof(unit))))
				break;
			if (spx_sup_pid(root) <= 0) {
				rc = spx_error(SPX_FAIL, "the supervisor is gone "
					       "while %s is not ready",
					       svcs[i].name);
				break;
			}
			if (spx_mono_ms() >= end) {
				rc = spx_error(SPX_FAIL, "%s is not ready after %d s "
					       "(%s%s%s)", svcs[i].name,
					       timeout_ms / 1000,
					       st.state[0] ? st.state : "not started",
					       st.last_exit[0] ? "; last exit: " : "",
					       st.last_exit);
				break;
			}
			poll(NULL, 0, 20);
		}
	}
	free(rundir);
	return rc;
}

int spx_sup_down(const char *root, int timeout_ms)
{
	pid_t p = spx_sup_pid(root);
	int64_t end;
	int n;

	if (p > 0) {
		/* Once its lock is free the supervisor is gone, and with it
		 * anything that could restart a service. */
		if (kill(p, SIGTERM) < 0 && errno != ESRCH)
			return spx_error_errno(SPX_FAIL,
					       "cannot stop the supervisor "
					       "(pid %ld)", (long)p);
		end = spx_mono_ms() + timeout_ms + STOP_TIMEOUT_MS;
		while (spx_sup_pid(root) > 0 && spx_mono_ms() < end)
			poll(NULL, 0, 20);
		if (spx_sup_pid(root) > 0) {
			spx_log(SPX_LOG_WARN, "the supervisor (pid %ld) did not "
				"stop; killing it", (long)p);
			kill(p, SIGKILL);
			for (end = spx_mono_ms() + 5000;
			     spx_sup_pid(root) > 0 && spx_mono_ms() < end;)
				poll(NULL, 0, 20);
		} else {
			spx_info("stopped the supervisor (pid %ld)", (long)p);
		}
	}
	/* Services it did not stop: adopted ones left over, or ones that
	 * ran with no supervisor at all. */
	n = spx_svc_down(root, timeout_ms);
	return n < 0 ? n : n + (p > 0);
}

/* ---- detached: spx up ---------------------------------------------- */

/* The report protocol on the pipe from the detached supervisor to the
 * `spx up` that waits: "I text\n" for progress, then "R\n" (ready) or
 * "F status\n" and the message up to EOF. */
static void pipe_report(void *arg, enum spx_sup_event ev, int status,
			const char *msg)
{
	int *fd = arg;
	struct spx_buf b = SPX_BUF_INIT;

	if (*fd < 0)
		return;
	switch (ev) {
	case SPX_SUP_INFO:
		spx_buf_addf(&b, "I %.*s\n", (int)strcspn(msg, "\n"), msg);
		break;
	case SPX_SUP_READY:
		spx_buf_adds(&b, "R\n");
		break;
	case SPX_SUP_FAIL:
		spx_buf_addf(&b, "F %d\n%s", status, msg ? msg : "");
		break;
	}
	if (write(*fd, b.p, b.len) < 0)
		spx_error_clear(); /* `spx up` was interrupted: go on */
	spx_buf_release(&b);
	if (ev != SPX_SUP_INFO) {
		/* `spx up` returns at EOF. */
		close(*fd);
		*fd = -1;
	}
}

static _Noreturn void detached(const char *root, int wfd)
{
	char *suplog = spx_xprintf("%s/log/supervise.log", root);
	struct spx_sup_opts o = { .root = root, .report = pipe_report,
				  .service_level = -1 };
	int fd, lock, rc;

	/* The report pipe becomes fd 3 and everything inherited above it
	 * is closed: a test harness or a terminal must not wait for us. */
	if (dup2(wfd, 3) < 0)
		_exit(SPX_FAIL);
	wfd = 3;
	fcntl(wfd, F_SETFD, FD_CLOEXEC);
	close_range(4, ~0U, 0);
	o.arg = &wfd;
	setsid();
	if (chdir("/") < 0)
		_exit(SPX_FAIL);
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0 && fd != 0) {
		dup2(fd, 0);
		close(fd);
	}
	fd = open(suplog, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	free(suplog);
	spx_log_timestamps(true);
	lock = spx_sup_claim(root);
	if (lock < 0) {
		pipe_report(&wfd, SPX_SUP_FAIL, spx_errstatus(), spx_errmsg());
		_exit(spx_errstatus());
	}
	/* The supervisor's own log says what happened, at info or more;
	 * the services log at the level spx was asked for. */
	o.service_level = (int)spx_log_get();
	if (spx_log_get() < SPX_LOG_INFO)
		spx_log_set(SPX_LOG_INFO);
	spx_info("supervisor (pid %ld) starting", (long)getpid());
	rc = spx_sup_run(&o);
	close(lock);
	_exit(rc);
}

int spx_sup_spawn(const char *root, spx_sup_report_fn *report, void *arg)
{
	char *logdir = spx_path_join(root, "log");
	struct spx_buf b = SPX_BUF_INIT;
	char buf[4096];
	int p[2], status = -1;
	pid_t pid;
	ssize_t n;

	if (spx_mkdirs(logdir, 0700) < 0) {
		free(logdir);
		return -1;
	}
	free(logdir);
	if (pipe2(p, O_CLOEXEC) < 0)
		return spx_error_errno(SPX_FAIL, "pipe");
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return spx_error_errno(SPX_FAIL, "fork");
	}
	if (pid == 0) {
		close(p[0]);
		detached(root, p[1]);
	}
	close(p[1]);
	for (;;) {
		char *nl;

		n = read(p[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0)
			spx_buf_add(&b, buf, (size_t)n);
		/* Progress lines as they come; the rest waits for EOF. */
		while (b.len > 2 && b.p[0] == 'I' && (nl = memchr(b.p, '\n', b.len))) {
			*nl = '\0';
			report(arg, SPX_SUP_INFO, 0, b.p + 2);
			memmove(b.p, nl + 1, b.len - (size_t)(nl + 1 - b.p));
			spx_buf_setlen(&b, b.len - (size_t)(nl + 1 - b.p));
		}
		if (n <= 0)
			break;
	}
	close(p[0]);
	if (b.len >= 2 && b.p[0] == 'R') {
		report(arg, SPX_SUP_READY, 0, NULL);
		status = 0;
	} else if (b.len >= 2 && b.p[0] == 'F') {
		char *msg = memchr(b.p, '\n', b.len);
		long st = strtol(b.p + 2, NULL, 10);

		status = st > 0 && st < 256 ? (int)st : SPX_FAIL;
		report(arg, SPX_SUP_FAIL, status, msg ? msg + 1 : "");
		/* It exits right after saying so. */
		waitpid(pid, NULL, 0);
	} else {
		status = SPX_FAIL;
		report(arg, SPX_SUP_FAIL, status,
		       "the supervisor ended while starting; see its log, "
		       "log/supervise.log");
		waitpid(pid, NULL, WNOHANG);
	}
	spx_buf_release(&b);
	return status;
}
