/* spx agent: the node agent, a service of spx up.
 *
 * The gateway records what the cloud should have (a volume "creating",
 * "deleting", a modification) and answers at once; the agent makes it so
 * by running the same tools an operator would (spx-vol create|rm|resize),
 * one child process each, and logs every command line it runs. It looks
 * at the records when the gateway rings (node/agent.h), when a step ends,
 * and every second while steps run or wait to be tried again (every ten
 * when idle); work recorded while it was down, or cut short by a crash,
 * is picked up when it starts: each step is idempotent, and its
 * end is recorded only after the tool succeeded. */
#include "spx.h"

#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>

#include "cli.h"
#include "conf/conf.h"
#include "ec2/snapshot.h"
#include "ec2/volume.h"
#include "file.h"
#include "node/agent.h"
#include "node/node.h"
#include "node/svc.h"
#include "proc.h"
#include "state/state.h"
#include "vol/vol.h"

/* Look at the records at least this often while steps run or wait to be
 * tried again, and this often when idle: the gateway rings for new work,
 * so the idle look only catches a ring that was lost. */
#define PASS_MS 1000
#define IDLE_PASS_MS 10000
/* Steps running at once. Every step starts when the records ask for it,
 * so that a create or a delete never waits behind snapshot uploads and a
 * snapshot takes its moment at once; spx-vol snapshot itself uploads at
 * most SPX_SNAP_UPLOADS at a time (lib/vol/snap.h). This bounds only a
 * burst of requests: the others start as these end. */
#define MAX_JOBS 64
/* A failed snapshot, copy or restore is tried again after 1 s, 2 s, 4 s
 * ... at most a minute apart, and given up after this many tries. */
#define MAX_TRIES 10
#define RETRY_MAX_MS 60000
/* Progress goes into the record at most this often. */
#define PROGRESS_MS 1000

/* A step running as a child process. */
struct job {
	struct spx_ebs_work w;
	pid_t pid;
	int err;		/* its stderr; -1 once closed */
	struct spx_buf line;	/* a line not yet ended */
	char *last;		/* the last thing it said that was not progress */
	char *cmd;		/* its command line */
	int pct;		/* progress recorded */
	int64_t pct_at;
	bool cancelled;		/* asked to stop: its snapshot was deleted */
};

/* A step that failed and waits to be tried again. */
struct retry {
	char id[32];
	enum spx_ebs_step step;
	int tries;
	int64_t at;		/* not before (ms, monotonic) */
};

struct agent {
	const char *root;	/* --root for the tools */
	const struct spx_conf *conf;
	struct spx_state *st;
	char *spxvol;		/* the spx-vol program */
	struct job jobs[MAX_JOBS];
	size_t njobs;
	struct retry *retry;
	size_t nretry;
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "a b c" for the log (caller frees). */
static char *cmdline(char *const argv[])
{
	struct spx_buf b = SPX_BUF_INIT;

	for (size_t i = 0; argv[i]; i++) {
		if (i)
			spx_buf_adds(&b, " ");
		spx_buf_adds(&b, argv[i]);
	}
	return spx_buf_detach(&b, NULL);
}

/* Does the store hold volume id with at least bytes? (A create or resize
 * that ran before a crash counts as done.) */
static bool vol_has(const struct agent *ag, const char *id, uint64_t bytes)
{
	char *dir = spx_path_join(ag->conf->paths.data, "vol");
	struct spx_vol_store *vs;
	struct spx_vol_info v;
	bool ok = false;

	if (spx_vol_store_open(dir, 0, &vs) == 0) {
		ok = spx_vol_info(vs, id, &v) == 0 && v.size >= bytes;
		spx_vol_store_close(vs);
	}
	spx_error_clear();
	free(dir);
	return ok;
}

static struct retry *retry_find(struct agent *ag, const struct spx_ebs_work *w)
{
	for (size_t i = 0; i < ag->nretry; i++)
		if (!strcmp(ag->retry[i].id, w->id) &&
		    ag->retry[i].step == w->step)
			return &ag->retry[i];
	return NULL;
}

static void retry_forget(struct agent *ag, const struct spx_ebs_work *w)
{
	struct retry *r = retry_find(ag, w);

	if (r)
		*r = ag->retry[--ag->nretry];
}

/* Count a failed try of w; true when it may be tried again. */
static bool retry_later(struct agent *ag, const struct spx_ebs_work *w)
{
	struct retry *r = retry_find(ag, w);
	int64_t wait;

	if (!r) {
		ag->retry = spx_realloc(ag->retry,
					(ag->nretry + 1) * sizeof(*ag->retry));
		r = &ag->retry[ag->nretry++];
		memset(r, 0, sizeof(*r));
		snprintf(r->id, sizeof(r->id), "%s", w->id);
		r->step = w->step;
	}
	r->tries++;
	wait = (int64_t)1000 << (r->tries - 1 < 6 ? r->tries - 1 : 6);
	r->at = mono_ms() + (wait < RETRY_MAX_MS ? wait : RETRY_MAX_MS);
	return r->tries < MAX_TRIES;
}

static bool running(const struct agent *ag, const char *id)
{
	for (size_t i = 0; i < ag->njobs; i++)
		if (!strcmp(ag->jobs[i].w.id, id))
			return true;
	return false;
}

/* Is a snapshot of the volume w snapshots being taken? One at a time
 * (spx-vol refuses a second): the next starts when it ends. */
static bool volume_busy(const struct agent *ag, const struct spx_ebs_work *w)
{
	if (w->step != SPX_EBS_SNAP_TAKE)
		return false;
	for (size_t i = 0; i < ag->njobs; i++)
		if (ag->jobs[i].w.step == SPX_EBS_SNAP_TAKE &&
		    !strcmp(ag->jobs[i].w.src, w->src))
			return true;
	return false;
}

/* The command line of step w (NULL-ended, strings the caller frees with
 * argv_free). */
static char **step_argv(const struct agent *ag, const struct spx_ebs_work *w)
{
	char size[32], **v = spx_calloc(12, sizeof(char *));
	size_t n = 0;

	snprintf(size, sizeof(size), "%llu", (unsigned long long)w->bytes);
	v[n++] = spx_strdup(ag->spxvol);
	switch (w->step) {
	case SPX_EBS_CREATE:
		v[n++] = spx_strdup(*w->src ? "restore" : "create");
		break;
	case SPX_EBS_DELETE:
		v[n++] = spx_strdup("rm");
		break;
	case SPX_EBS_RESIZE:
		v[n++] = spx_strdup("resize");
		break;
	case SPX_EBS_SNAP_TAKE:
		v[n++] = spx_strdup("snapshot");
		break;
	case SPX_EBS_SNAP_COPY:
		v[n++] = spx_strdup("snapshot-copy");
		break;
	case SPX_EBS_SNAP_DELETE:
		v[n++] = spx_strdup("snapshot-rm");
		break;
	}
	v[n++] = spx_strdup("--root");
	v[n++] = spx_strdup(ag->root);
	switch (w->step) {
	case SPX_EBS_CREATE:
		v[n++] = spx_strdup("--size");
		v[n++] = spx_strdup(size);
		v[n++] = spx_strdup("--id");
		v[n++] = spx_strdup(w->id);
		if (*w->src) {
			v[n++] = spx_strdup("--progress");
			v[n++] = spx_strdup(w->src);
		}
		break;
	case SPX_EBS_RESIZE:
		v[n++] = spx_strdup(w->id);
		v[n++] = spx_strdup(size);
		break;
	case SPX_EBS_SNAP_TAKE:
	case SPX_EBS_SNAP_COPY:
		/* A copy writes one manifest: no progress to tell. */
		if (w->step == SPX_EBS_SNAP_TAKE)
			v[n++] = spx_strdup("--progress");
		v[n++] = spx_strdup("--id");
		v[n++] = spx_strdup(w->id);
		v[n++] = spx_strdup(w->src);
		break;
	default:
		v[n++] = spx_strdup(w->id);
		break;
	}
	return v;
}

static void argv_free(char **v)
{
	for (size_t i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}

static void start(struct agent *ag, const struct spx_ebs_work *w)
{
	char **argv = step_argv(ag, w);
	struct job *j = &ag->jobs[ag->njobs];

	memset(j, 0, sizeof(*j));
	j->w = *w;
	j->cmd = cmdline(argv);
	j->pct = -1;
	spx_log(SPX_LOG_INFO, "run: %s", j->cmd);
	j->pid = spx_spawn_piped(argv, &j->err);
	argv_free(argv);
	if (j->pid < 0) {
		spx_log(SPX_LOG_WARN, "'%s': %s", j->cmd, spx_errmsg());
		free(j->cmd);
		return; /* the next pass tries again */
	}
	ag->njobs++;
}

/* One line the step said: progress ("...: N%") goes into the record,
 * anything else into the log, the last of it into the step's error. */
static void said(struct agent *ag, struct job *j, const char *l)
{
	const char *colon = strrchr(l, ':');
	size_t n = strlen(l);
	char *end;
	long pct;

	if (colon && n > 1 && l[n - 1] == '%' && colon[1] == ' ') {
		errno = 0;
		pct = strtol(colon + 2, &end, 10);
		if (!errno && *end == '%' && end == l + n - 1 && pct >= 0 &&
		    pct <= 100) {
			int64_t now = mono_ms();

			if ((j->w.step == SPX_EBS_SNAP_TAKE ||
			     j->w.step == SPX_EBS_SNAP_COPY) &&
			    pct != j->pct &&
			    (now - j->pct_at >= PROGRESS_MS || pct >= 99)) {
				if (spx_ebs_snap_progress(ag->st, &j->w,
							  (int)pct) < 0)
					spx_log(SPX_LOG_WARN, "%s: %s", j->w.id,
						spx_errmsg());
				j->pct = (int)pct;
				j->pct_at = now;
			}
			return;
		}
	}
	if (!*l)
		return;
	spx_log(SPX_LOG_WARN, "%s: %s", j->w.id, l);
	free(j->last);
	j->last = spx_strdup(l);
}

static void read_err(struct agent *ag, struct job *j)
{
	char buf[4096];
	ssize_t n;

	while ((n = read(j->err, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == '\n' || buf[i] == '\r') {
				spx_buf_addc(&j->line, '\0');
				said(ag, j, j->line.p);
				j->line.len = 0;
			} else if (j->line.len < 4096) {
				spx_buf_addc(&j->line, buf[i]);
			}
		}
	}
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		if (j->line.len) {
			spx_buf_addc(&j->line, '\0');
			said(ag, j, j->line.p);
			j->line.len = 0;
		}
		close(j->err);
		j->err = -1;
	}
}

/* Is the step done, although the tool said otherwise? (It ran before a
 * crash, or another run finished it.) */
static bool done_anyway(const struct agent *ag, const struct spx_ebs_work *w,
			int rc)
{
	switch (w->step) {
	case SPX_EBS_CREATE: /* 1: it exists */
		return rc == 1 && vol_has(ag, w->id, w->bytes);
	case SPX_EBS_DELETE: /* 1: gone already */
	case SPX_EBS_SNAP_DELETE:
		return rc == 1;
	case SPX_EBS_RESIZE:
		return vol_has(ag, w->id, w->bytes);
	default:
		return false;
	}
}

/* The step of j ended with wait status ws: record it. */
static void finish(struct agent *ag, struct job *j, int ws)
{
	const struct spx_ebs_work *w = &j->w;
	int rc = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
	bool ok = rc == 0 || done_anyway(ag, w, rc), final = true, snap;
	char *why = NULL;
	int r;

	snap = w->step == SPX_EBS_SNAP_TAKE || w->step == SPX_EBS_SNAP_COPY ||
	       w->step == SPX_EBS_SNAP_DELETE;
	if (!ok) {
		why = rc < 0 ? spx_xprintf("'%s' was killed by signal %d%s%s",
					   j->cmd, WTERMSIG(ws),
					   j->last ? ": " : "",
					   j->last ? j->last : "")
			     : spx_xprintf("'%s' exited with status %d%s%s",
					   j->cmd, rc, j->last ? ": " : "",
					   j->last ? j->last : "");
		spx_log(SPX_LOG_WARN, "%s", why);
		/* Deleting is tried until it works; a snapshot, a copy and
		 * a restore again and again, unless they cannot work (a
		 * usage error, the volume gone) or keep failing. */
		if (w->step == SPX_EBS_DELETE || w->step == SPX_EBS_SNAP_DELETE)
			final = false;
		else if (w->step != SPX_EBS_RESIZE && rc != SPX_USAGE &&
			 !(w->step == SPX_EBS_SNAP_TAKE &&
			   !vol_has(ag, w->src, 0)) &&
			 !(w->step == SPX_EBS_CREATE && !*w->src))
			final = !retry_later(ag, w);
		if (!final && w->step != SPX_EBS_DELETE &&
		    w->step != SPX_EBS_SNAP_DELETE)
			spx_log(SPX_LOG_INFO, "%s: to be tried again", w->id);
		if (w->step == SPX_EBS_DELETE || w->step == SPX_EBS_SNAP_DELETE)
			retry_later(ag, w);
	} else {
		retry_forget(ag, w);
	}
	if (j->cancelled) {
		spx_log(SPX_LOG_INFO, "%s: stopped, the snapshot is deleted",
			w->id);
		r = 0;
	} else if (snap) {
		r = spx_ebs_snap_done(ag->st, w, ok, final, why);
	} else if (ok || final) {
		r = spx_ebs_done(ag->st, w, ok, why, time(NULL));
	} else {
		r = 0;
	}
	if (r < 0)
		spx_log(SPX_LOG_WARN, "%s: cannot record the result: %s", w->id,
			spx_errmsg());
	else if (ok)
		spx_log(SPX_LOG_INFO, "%s: done", w->id);
	free(why);
}

/* Collect the steps that ended; how many did. */
static size_t reap(struct agent *ag)
{
	size_t ended = 0;

	for (size_t i = 0; i < ag->njobs;) {
		struct job *j = &ag->jobs[i];
		int ws;

		if (j->err >= 0)
			read_err(ag, j);
		if (j->err >= 0 || waitpid(j->pid, &ws, WNOHANG) != j->pid) {
			i++;
			continue;
		}
		finish(ag, j, ws);
		free(j->cmd);
		free(j->last);
		spx_buf_release(&j->line);
		ag->jobs[i] = ag->jobs[--ag->njobs];
		ended++;
	}
	return ended;
}

/* When to look at the records next, after a look at now. */
static int64_t next_pass(const struct agent *ag, int64_t now)
{
	int64_t at = now + (ag->njobs || ag->nretry ? PASS_MS : IDLE_PASS_MS);

	/* A retry due already is started, or waits on another step: the
	 * next look after PASS_MS sees to it. */
	for (size_t i = 0; i < ag->nretry; i++)
		if (ag->retry[i].at > now && ag->retry[i].at < at)
			at = ag->retry[i].at;
	return at;
}

/* Must w wait for other work on the records? A volume is not removed
 * while a snapshot of it is pending, nor a snapshot while a volume is
 * being restored from it or a copy made of it. */
static bool waits(const struct spx_ebs_work *w, const struct spx_ebs_work *all,
		  size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct spx_ebs_work *o = &all[i];

		if (w->step == SPX_EBS_DELETE && o->step == SPX_EBS_SNAP_TAKE &&
		    !strcmp(o->src, w->id))
			return true;
		if (w->step == SPX_EBS_SNAP_DELETE &&
		    (o->step == SPX_EBS_CREATE || o->step == SPX_EBS_SNAP_COPY) &&
		    !strcmp(o->src, w->id))
			return true;
	}
	return false;
}

/* One look at the records: start every step they ask for that is not
 * running, waiting to be tried again or waiting on another. */
/* The work the records ask of this node: volumes, then snapshots. */
static int list_work(struct agent *ag, struct spx_ebs_work **w, size_t *n)
{
	if (spx_ebs_pending(ag->st, ag->conf->node, w, n) < 0 ||
	    spx_ebs_snap_pending(ag->st, ag->conf->node, w, n) < 0) {
		spx_log(SPX_LOG_WARN, "cannot read the volume records: %s",
			spx_errmsg());
		free(*w);
		*w = NULL;
		return -1;
	}
	return 0;
}

static void pass(struct agent *ag)
{
	struct spx_ebs_work *w = NULL, *later = NULL;
	size_t n = 0, nlater = 0;
	int64_t now = mono_ms();
	bool removal = false;

	if (list_work(ag, &w, &n) < 0)
		return;
	/* A removal waits on the steps recorded before it (waits()). One
	 * listing is not a moment: a volume made from a snapshot could be
	 * recorded after the volumes were listed and before the snapshots
	 * were, with the snapshot's deletion seen and the restore not. So
	 * with a removal in view the records are listed again; what was
	 * recorded before it is in the second listing. */
	for (size_t i = 0; i < n; i++)
		removal |= w[i].step == SPX_EBS_DELETE ||
			   w[i].step == SPX_EBS_SNAP_DELETE;
	if (removal && list_work(ag, &later, &nlater) < 0) {
		free(w);
		return;
	}
	/* Retries of steps the records no longer ask for (a snapshot
	 * deleted while it failed) are forgotten. */
	for (size_t k = 0; k < ag->nretry;) {
		bool asked = false;

		for (size_t i = 0; i < n && !asked; i++)
			asked = w[i].step == ag->retry[k].step &&
				!strcmp(w[i].id, ag->retry[k].id);
		if (asked)
			k++;
		else
			ag->retry[k] = ag->retry[--ag->nretry];
	}
	for (size_t i = 0; i < n; i++) {
		struct retry *r = retry_find(ag, &w[i]);

		if (w[i].step == SPX_EBS_SNAP_DELETE)
			for (size_t k = 0; k < ag->njobs; k++) {
				struct job *j = &ag->jobs[k];

				/* Deleted while being taken: stop it. */
				if (!strcmp(j->w.id, w[i].id) &&
				    j->w.step != SPX_EBS_SNAP_DELETE &&
				    !j->cancelled) {
					j->cancelled = true;
					kill(j->pid, SIGTERM);
				}
			}
		if (ag->njobs == MAX_JOBS || running(ag, w[i].id) ||
		    volume_busy(ag, &w[i]) ||
		    (r && r->at > now) || waits(&w[i], w, n) ||
		    waits(&w[i], later, nlater))
			continue;
		start(ag, &w[i]);
	}
	free(w);
	free(later);
}

/* Stop every step (the agent is stopping): their records stay where they
 * are, and the next agent runs them again. */
static void stop_jobs(struct agent *ag)
{
	int64_t until = mono_ms() + 10000;

	for (size_t i = 0; i < ag->njobs; i++)
		kill(ag->jobs[i].pid, SIGTERM);
	while (ag->njobs) {
		struct job *j = &ag->jobs[ag->njobs - 1];
		int ws;

		if (mono_ms() > until)
			kill(j->pid, SIGKILL);
		if (waitpid(j->pid, &ws, mono_ms() > until ? 0 : WNOHANG) ==
		    j->pid) {
			if (j->err >= 0)
				close(j->err);
			free(j->cmd);
			free(j->last);
			spx_buf_release(&j->line);
			ag->njobs--;
		} else {
			poll(NULL, 0, 20);
		}
	}
}

int cmd_agent(const struct spx_args *a)
{
	const char *logfile = spx_arg(a, "log");
	struct spx_node_loc loc;
	struct spx_conf conf;
	struct agent ag = { 0 };
	long long notify;
	int64_t due = 0;
	int rc, pidfd = -1, bell = -1, sfd = -1;
	bool stop = false;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (spx_arg_int(a, "notify-fd", 3, 1024, -1, &notify) < 0) {
		spx_warn("agent: %s", spx_errmsg());
		return SPX_USAGE;
	}
	if (logfile) {
		if (spx_svc_log_open(logfile) < 0) {
			spx_warn("agent: %s", spx_errmsg());
			return SPX_FAIL;
		}
		spx_log_timestamps(true);
	}
	/* The agent's log is the list of what the cloud did. */
	if (spx_log_get() < SPX_LOG_INFO)
		spx_log_set(SPX_LOG_INFO);
	if ((rc = spx_cli_load(a, &loc, &conf)))
		return rc;
	rc = SPX_FAIL;
	if (spx_arg(a, "pidfile") &&
	    (pidfd = spx_svc_claim(spx_arg(a, "pidfile"))) < 0) {
		spx_warn("agent: %s", spx_errmsg());
		rc = spx_errstatus();
		goto out;
	}
	ag.root = loc.root;
	ag.conf = &conf;
	ag.spxvol = spx_find_prog("spx-vol");
	if (!ag.spxvol) {
		spx_warn("agent: cannot find spx-vol next to spx or on PATH");
		goto out;
	}
	if (spx_state_open(conf.paths.state, SPX_STATE_CREATE, &ag.st) < 0 ||
	    spx_mkdirs(conf.paths.run, 0700) < 0 ||
	    (bell = spx_agent_bell(conf.paths.run)) < 0) {
		spx_warn("agent: %s", spx_errmsg());
		goto out;
	}
	sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0) {
		spx_warn_errno("agent: signalfd");
		goto out;
	}
	spx_log(SPX_LOG_INFO, "%s: agent started", conf.node);
	if (spx_svc_ready((int)notify) < 0)
		spx_warn("agent: %s", spx_errmsg());
	/* A look at the records when rung, when a step ended (another may
	 * have waited on it) and when next_pass says; not on each line a
	 * step prints. */
	for (bool look = true; !stop;) {
		struct pollfd p[2 + MAX_JOBS] = { { sfd, POLLIN, 0 },
						  { bell, POLLIN, 0 } };
		struct signalfd_siginfo si;
		nfds_t np = 2;
		int64_t now = mono_ms();
		int timeout;

		if (reap(&ag) || now >= due)
			look = true;
		if (look) {
			/* Drain first: a ring during the pass brings another. */
			spx_agent_bell_drain(bell);
			pass(&ag);
			due = next_pass(&ag, now);
			look = false;
		}
		for (size_t i = 0; i < ag.njobs; i++)
			if (ag.jobs[i].err >= 0)
				p[np++] = (struct pollfd){ ag.jobs[i].err,
							   POLLIN, 0 };
		/* A step whose output ended is waited for in the next
		 * round; look again soon. */
		timeout = due - now > INT_MAX ? INT_MAX : (int)(due - now);
		if (np - 2 < ag.njobs && timeout > 50)
			timeout = 50;
		if (poll(p, np, timeout < 0 ? 0 : timeout) < 0 &&
		    errno != EINTR) {
			spx_warn_errno("agent: poll");
			break;
		}
		if (p[1].revents)
			look = true;
		while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGHUP) {
				if (logfile && spx_svc_log_open(logfile) < 0)
					spx_warn("agent: %s", spx_errmsg());
			} else if (si.ssi_signo == SIGUSR1) {
				spx_log(SPX_LOG_WARN,
					"the supervisor that started this "
					"service is gone; working on "
					"unsupervised until 'spx up' adopts it");
			} else {
				spx_log(SPX_LOG_INFO, "stopping on signal %u",
					si.ssi_signo);
				spx_svc_notify("STOPPING=1");
				stop = true;
			}
		}
	}
	rc = 0;
out:
	stop_jobs(&ag);
	free(ag.retry);
	if (sfd >= 0)
		close(sfd);
	if (bell >= 0)
		close(bell);
	if (pidfd >= 0)
		close(pidfd);
	free(ag.spxvol);
	spx_state_close(ag.st);
	spx_conf_release(&conf);
	spx_node_loc_release(&loc);
	return rc;
}
