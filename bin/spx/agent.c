/* spx agent: the node agent, a service of spx up.
 *
 * The gateway records what the cloud should have (a volume "creating",
 * "deleting", a modification) and answers at once; the agent makes it so
 * by running the same tools an operator would (spx-vol create|rm|resize),
 * one child process each, and logs every command line it runs. It looks
 * at the records when the gateway rings (node/agent.h) and once a second
 * in any case, so work recorded while it was down, or cut short by a
 * crash, is picked up when it starts: each step is idempotent, and its
 * end is recorded only after the tool succeeded. */
#include "spx.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>

#include "cli.h"
#include "conf/conf.h"
#include "ec2/volume.h"
#include "file.h"
#include "node/agent.h"
#include "node/node.h"
#include "node/svc.h"
#include "proc.h"
#include "state/state.h"
#include "vol/vol.h"

/* Look at the records at least this often. */
#define PASS_MS 1000

struct agent {
	const char *root;	/* --root for the tools */
	const struct spx_conf *conf;
	struct spx_state *st;
	char *spxvol;		/* the spx-vol program */
};

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

/* Run argv, logged; its exit status, or -1 when it could not run or died
 * by a signal (the reason in *why). */
static int run(char *const argv[], char **why)
{
	char *line = cmdline(argv);
	int rc;

	spx_log(SPX_LOG_INFO, "run: %s", line);
	rc = spx_run(argv, true);
	if (rc != 0) {
		*why = rc < 0 ? spx_xprintf("'%s': %s", line, spx_errmsg())
			      : spx_xprintf("'%s' exited with status %d", line,
					    rc);
		spx_log(SPX_LOG_WARN, "%s", *why);
	}
	free(line);
	return rc;
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

static void step(struct agent *ag, const struct spx_ebs_work *w)
{
	char size[32], *why = NULL;
	bool ok;
	int rc;

	snprintf(size, sizeof(size), "%llu", (unsigned long long)w->bytes);
	switch (w->step) {
	case SPX_EBS_CREATE: {
		char *argv[] = { ag->spxvol, "create", "--root", (char *)ag->root,
				 "--size", size, "--id", (char *)w->id, NULL };

		rc = run(argv, &why);
		/* 1: it exists, from a run a crash cut short. */
		ok = rc == 0 || (rc == 1 && vol_has(ag, w->id, w->bytes));
		break;
	}
	case SPX_EBS_DELETE: {
		char *argv[] = { ag->spxvol, "rm", "--root", (char *)ag->root,
				 (char *)w->id, NULL };

		rc = run(argv, &why);
		ok = rc == 0 || rc == 1; /* 1: gone already */
		break;
	}
	case SPX_EBS_RESIZE: {
		char *argv[] = { ag->spxvol, "resize", "--root", (char *)ag->root,
				 (char *)w->id, size, NULL };

		rc = run(argv, &why);
		ok = rc == 0 || vol_has(ag, w->id, w->bytes);
		break;
	}
	default:
		return;
	}
	if (spx_ebs_done(ag->st, w, ok, why, time(NULL)) < 0)
		spx_log(SPX_LOG_WARN, "%s: cannot record the result: %s", w->id,
			spx_errmsg());
	else if (ok)
		spx_log(SPX_LOG_INFO, "%s: done", w->id);
	free(why);
}

/* One look at the records, and every step they ask for. */
static void pass(struct agent *ag)
{
	struct spx_ebs_work *w;
	size_t n;

	if (spx_ebs_pending(ag->st, ag->conf->node, &w, &n) < 0) {
		spx_log(SPX_LOG_WARN, "cannot read the volume records: %s",
			spx_errmsg());
		return;
	}
	for (size_t i = 0; i < n; i++)
		step(ag, &w[i]);
	free(w);
}

int cmd_agent(const struct spx_args *a)
{
	const char *logfile = spx_arg(a, "log");
	struct spx_node_loc loc;
	struct spx_conf conf;
	struct agent ag = { 0 };
	long long notify;
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
	while (!stop) {
		struct pollfd p[2] = { { sfd, POLLIN, 0 }, { bell, POLLIN, 0 } };
		struct signalfd_siginfo si;

		/* Drain first: a ring during the pass brings another. */
		spx_agent_bell_drain(bell);
		pass(&ag);
		if (poll(p, 2, PASS_MS) < 0 && errno != EINTR) {
			spx_warn_errno("agent: poll");
			break;
		}
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
