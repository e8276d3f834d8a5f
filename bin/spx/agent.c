/* spx agent: the node agent, a service of spx up.
 *
 * The gateway records what the cloud should have (a volume "creating",
 * "deleting", a modification, an instance "pending" or "shutting-down")
 * and answers at once; the agent makes it so by running the same tools
 * an operator would (spx-vol create|rm|resize|..., spx-vm start|stop),
 * one child process each, and logs every command line it runs. While
 * instances run it looks every second whether their QEMU is still there
 * (spx_vm_pid), and records a guest that died as stopped. It looks
 * at the records when the gateway rings (node/agent.h), when a step ends,
 * and every second while steps run or wait to be tried again (every ten
 * when idle); work recorded while it was down, or cut short by a crash,
 * is picked up when it starts: each step is idempotent, and its
 * end is recorded only after the tool succeeded. */
#include "spx.h"

#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>

#include "cli.h"
#include "conf/conf.h"
#include "ec2/instance.h"
#include "ec2/snapshot.h"
#include "ec2/volume.h"
#include "file.h"
#include "net/net.h"
#include "node/agent.h"
#include "node/node.h"
#include "node/svc.h"
#include "proc.h"
#include "state/state.h"
#include "vm/vm.h"
#include "vol/vol.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

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

/* A guest stops within this many seconds of its ACPI power button, or
 * spx-vm stop quits, then kills, its QEMU. */
#define VM_STOP_TIMEOUT "30"
/* The watch asks each running guest's QEMU its state every pass, and
 * waits this long for the answer. */
#define WATCH_QMP_MS 500
/* A guest has this long to let a detached disk go, each try; a Force
 * detachment gives it less. The detachment stays "detaching", tried
 * again, until the guest lets go or stops. */
#define VM_DETACH_TIMEOUT "30"
/* The records of a CreateSnapshots set are awaited this long (seconds
 * from its StartTime) before the ones seen are taken without the rest. */
#define SET_WAIT_S 30
/* A launch that fails is tried again (1 s, 2 s, ... apart) this many
 * times in all, then the instance is terminated with the reason. */
#define LAUNCH_TRIES 4
/* Instance steps share the retry list with the volume steps, numbered
 * from here. */
#define INST_STEP(s) (100 + (int)(s))

/* A step running as a child process. */
struct job {
	struct spx_ebs_work w;	/* w.id: the volume, snapshot or instance */
	bool inst;		/* an instance step: iw says which */
	struct spx_inst_work iw;
	pid_t pid;
	int err;		/* its stderr; -1 once closed */
	struct spx_buf line;	/* a line not yet ended */
	char *last;		/* the last thing it said that was not progress */
	char *cmd;		/* its command line */
	int pct;		/* progress recorded */
	int64_t pct_at;
	bool cancelled;		/* asked to stop: its snapshot was deleted */
	bool life;		/* the lifecycle pass (spx-obj lifecycle) */
	/* A set of snapshots (CreateSnapshots) taken by one spx-vol run:
	 * the members besides w */
	struct spx_ebs_work *set;
	size_t nset;
};

/* A step that failed and waits to be tried again. */
struct retry {
	char id[32];
	int step;		/* enum spx_ebs_step, or INST_STEP() */
	int tries;
	int64_t at;		/* not before (ms, monotonic) */
};

struct agent {
	const char *root;	/* --root for the tools */
	const struct spx_conf *conf;
	struct spx_state *st;
	char *spxvol;		/* the spx-vol program */
	char *spxvm;		/* the spx-vm program */
	char *spxobj;		/* the spx-obj program */
	bool life_running;	/* a lifecycle pass runs */
	int64_t life_due;	/* the next one starts then (ms, monotonic) */
	bool life_more;		/* the last one stopped at its budget: the
				 * next goes on with those buckets only */
	bool guests;		/* instances run: watch them every pass */
	struct job jobs[MAX_JOBS];
	size_t njobs;
	struct retry *retry;
	size_t nretry;
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

static struct retry *retry_get(struct agent *ag, const char *id, int step)
{
	for (size_t i = 0; i < ag->nretry; i++)
		if (!strcmp(ag->retry[i].id, id) && ag->retry[i].step == step)
			return &ag->retry[i];
	return NULL;
}

static struct retry *retry_find(struct agent *ag, const struct spx_ebs_work *w)
{
	return retry_get(ag, w->id, (int)w->step);
}

static void retry_drop(struct agent *ag, const char *id, int step)
{
	struct retry *r = retry_get(ag, id, step);

	if (r)
		*r = ag->retry[--ag->nretry];
}

static void retry_forget(struct agent *ag, const struct spx_ebs_work *w)
{
	retry_drop(ag, w->id, (int)w->step);
}

/* Count a failed try of step of id; true when it may be tried again
 * (fewer than max tries so far). */
static bool retry_count(struct agent *ag, const char *id, int step, int max)
{
	struct retry *r = retry_get(ag, id, step);
	int64_t wait;

	if (!r) {
		ag->retry = spx_realloc(ag->retry,
					(ag->nretry + 1) * sizeof(*ag->retry));
		r = &ag->retry[ag->nretry++];
		memset(r, 0, sizeof(*r));
		snprintf(r->id, sizeof(r->id), "%s", id);
		r->step = step;
	}
	r->tries++;
	wait = (int64_t)1000 << (r->tries - 1 < 6 ? r->tries - 1 : 6);
	r->at = spx_mono_ms() + (wait < RETRY_MAX_MS ? wait : RETRY_MAX_MS);
	return r->tries < max;
}

/* Count a failed try of w; true when it may be tried again. */
static bool retry_later(struct agent *ag, const struct spx_ebs_work *w)
{
	return retry_count(ag, w->id, (int)w->step, MAX_TRIES);
}

static bool running(const struct agent *ag, const char *id)
{
	for (size_t i = 0; i < ag->njobs; i++) {
		if (!strcmp(ag->jobs[i].w.id, id))
			return true;
		for (size_t k = 0; k < ag->jobs[i].nset; k++)
			if (!strcmp(ag->jobs[i].set[k].id, id))
				return true;
	}
	return false;
}

/* Is a snapshot of volume vol being taken (alone or in a set)? */
static bool snapping(const struct agent *ag, const char *vol)
{
	for (size_t i = 0; i < ag->njobs; i++) {
		const struct job *j = &ag->jobs[i];

		if (j->w.step != SPX_EBS_SNAP_TAKE)
			continue;
		if (!strcmp(j->w.src, vol))
			return true;
		for (size_t k = 0; k < j->nset; k++)
			if (!strcmp(j->set[k].src, vol))
				return true;
	}
	return false;
}

/* Is a snapshot of the volume w snapshots being taken? One at a time
 * (spx-vol refuses a second): the next starts when it ends. */
static bool volume_busy(const struct agent *ag, const struct spx_ebs_work *w,
			const struct spx_ebs_work *set, size_t nset)
{
	if (w->step != SPX_EBS_SNAP_TAKE)
		return false;
	if (snapping(ag, w->src))
		return true;
	for (size_t k = 0; k < nset; k++)
		if (snapping(ag, set[k].src))
			return true;
	return false;
}

/* The other members of w's set among the n steps all (w is all[i]): the
 * snapshots CreateSnapshots recorded with it, still pending. *out (free
 * it) holds them; their count, or -1 while the gateway may still be
 * writing the set's records (fewer seen than it has, for a little
 * while: a set is taken whole). */
static ssize_t set_of(const struct spx_ebs_work *all, size_t n, size_t i,
		      struct spx_ebs_work **out)
{
	const struct spx_ebs_work *w = &all[i];
	size_t m = 0, seen = 1;

	*out = NULL;
	if (w->step != SPX_EBS_SNAP_TAKE || !*w->set)
		return 0;
	for (size_t k = 0; k < n; k++) {
		if (k == i || strcmp(all[k].set, w->set) ||
		    strcmp(all[k].account, w->account))
			continue;
		seen++;	/* deleting ones too */
		if (all[k].step == SPX_EBS_SNAP_TAKE) {
			*out = spx_realloc(*out, (m + 1) * sizeof(**out));
			(*out)[m++] = all[k];
		}
	}
	/* After a while, what there is: the gateway died midway, or the
	 * agent did while recording the end of a set (the stored ones are
	 * found stored). */
	if (seen < w->set_size && time(NULL) - w->set_time < SET_WAIT_S) {
		free(*out);
		*out = NULL;
		return -1;
	}
	return (ssize_t)m;
}

/* The command line of step w (NULL-ended, strings the caller frees with
 * argv_free). */
static char **step_argv(const struct agent *ag, const struct spx_ebs_work *w,
			const struct spx_ebs_work *set, size_t nset)
{
	char size[32], **v = spx_calloc(12 + nset, sizeof(char *));
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
	case SPX_EBS_ATTACH: /* spx-vm's: attach_step(), grow_step() */
	case SPX_EBS_DETACH:
	case SPX_EBS_GROW:
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
		if (nset) {
			/* A set: one spx-vol run takes every volume at one
			 * moment; the ids in the volumes' order. */
			struct spx_buf ids = SPX_BUF_INIT;

			spx_buf_adds(&ids, w->id);
			for (size_t k = 0; k < nset; k++) {
				spx_buf_addc(&ids, ',');
				spx_buf_adds(&ids, set[k].id);
			}
			spx_buf_addc(&ids, '\0');
			v[n++] = spx_strdup(ids.p);
			spx_buf_release(&ids);
		} else {
			v[n++] = spx_strdup(w->id);
		}
		v[n++] = spx_strdup(w->src);
		for (size_t k = 0; k < nset; k++)
			v[n++] = spx_strdup(set[k].src);
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

/* Run argv as the job of w (and iw, for an instance step). */
static void spawn_job(struct agent *ag, char **argv,
		      const struct spx_ebs_work *w,
		      const struct spx_inst_work *iw)
{
	struct job *j = &ag->jobs[ag->njobs];

	memset(j, 0, sizeof(*j));
	j->w = *w;
	if (iw) {
		j->inst = true;
		j->iw = *iw;
	}
	j->cmd = cmdline(argv);
	j->pct = -1;
	spx_log(SPX_LOG_INFO, "run: %s", j->cmd);
	j->pid = spx_spawn_piped(argv, &j->err);
	if (j->pid < 0) {
		spx_log(SPX_LOG_WARN, "'%s': %s", j->cmd, spx_errmsg());
		free(j->cmd);
		return; /* the next pass tries again */
	}
	ag->njobs++;
}

/* Start step w (with the other members of its set, which the job then
 * owns). */
static void start(struct agent *ag, const struct spx_ebs_work *w,
		  struct spx_ebs_work *set, size_t nset)
{
	char **argv = step_argv(ag, w, set, nset);
	size_t before = ag->njobs;

	spawn_job(ag, argv, w, NULL);
	argv_free(argv);
	if (ag->njobs > before) {
		ag->jobs[before].set = set;
		ag->jobs[before].nset = nset;
	} else {
		free(set);
	}
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
			int64_t now = spx_mono_ms();

			if ((j->w.step == SPX_EBS_SNAP_TAKE ||
			     j->w.step == SPX_EBS_SNAP_COPY) &&
			    pct != j->pct &&
			    (now - j->pct_at >= PROGRESS_MS || pct >= 99)) {
				for (size_t k = 0; k <= j->nset; k++) {
					const struct spx_ebs_work *m =
						k ? &j->set[k - 1] : &j->w;

					if (spx_ebs_snap_progress(ag->st, m,
								  (int)pct) < 0)
						spx_log(SPX_LOG_WARN, "%s: %s",
							m->id, spx_errmsg());
				}
				j->pct = (int)pct;
				j->pct_at = now;
			}
			return;
		}
	}
	if (!*l)
		return;
	if (j->life && strncmp(l, "spx-obj: ", 9)) {
		spx_log(SPX_LOG_INFO, "lifecycle: %s", l); /* its report */
		return;
	}
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

/* ---- instances ----------------------------------------------------- */

/* RUN/vm/ID, the guest's directory (spx-vm's). */
static char *guest_dir(const struct agent *ag, const char *id)
{
	char *vms = spx_path_join(ag->conf->paths.run, "vm");
	char *dir = spx_path_join(vms, id);

	free(vms);
	return dir;
}

/* A TCP port on 127.0.0.1 nobody listens on now, from the kernel (0 when
 * none can be had). QEMU binds it moments later; a port taken
 * meanwhile fails that start, which is tried again with another. */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = 0;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* A guest's QEMU that is gone ended on its own for one of two reasons:
 * the guest powered itself off, which its QEMU (-no-shutdown) told the
 * agent and the agent marked in the guest's directory (POWERED_OFF: the
 * guest cannot write there), before it had the QEMU quit; or anything
 * else (a crash, a kill), which is the cloud's fault. Never from what
 * the guest wrote on its console: a guest could print a power-off's
 * words and then crash. */
#define POWERED_OFF "powered-off"

static char *powered_off_path(const struct agent *ag, const char *id)
{
	char *dir = guest_dir(ag, id);
	char *p = spx_path_join(dir, POWERED_OFF);

	free(dir);
	return p;
}

static const char *death_code(const struct agent *ag, const char *id)
{
	char *p = powered_off_path(ag, id);
	bool off = access(p, F_OK) == 0;

	free(p);
	return off ? "Client.InstanceInitiatedShutdown"
		   : "Server.InternalError";
}

static void powered_off_forget(const struct agent *ag, const char *id)
{
	char *p = powered_off_path(ag, id);

	if (unlink(p) < 0 && errno != ENOENT)
		spx_log(SPX_LOG_WARN, "%s: cannot remove '%s': %s", id, p,
			strerror(errno));
	free(p);
}

static void inst_log_rc(const struct spx_inst_work *w, int rc, const char *what)
{
	if (rc < 0)
		spx_log(SPX_LOG_WARN, "%s: cannot record %s: %s", w->id, what,
			spx_errmsg());
	else
		spx_log(SPX_LOG_INFO, "%s: %s", w->id, what);
}

/* The metadata of w's guest from its record, rec, with the data volumes
 * attached now (a new reference, or NULL with an error). */
/* The metadata of w's guest, encoded from its record with the data
 * volumes attached now (caller frees), or NULL with an error. */
static char *inst_md(const struct agent *ag, const struct spx_inst_work *w)
{
	json_t *rec = NULL, *md = NULL, *devs = NULL;
	char *text = NULL;

	if (spx_inst_get(ag->st, w->account, w->id, &rec) < 0 ||
	    !(md = spx_inst_metadata(rec, ag->conf->aws.region)) ||
	    !(devs = spx_ebs_data_devices(ag->st, w->account, w->id)))
		goto out;
	spx_inst_metadata_ebs(md, devs);
	text = json_dumps(md, JSON_COMPACT | JSON_SORT_KEYS);
	if (!text)
		spx_error(SPX_FAIL, "cannot encode the metadata");
out:
	json_decref(devs);
	json_decref(md);
	json_decref(rec);
	return text;
}

/* The metadata file of w's guest, written from its record: its path
 * (caller frees), or NULL (logged). */
static char *write_metadata(const struct agent *ag,
			    const struct spx_inst_work *w)
{
	char *dir = spx_path_join(ag->conf->paths.run, "instances");
	char *name = spx_xprintf("%s.json", w->id);
	char *path = spx_path_join(dir, name), *text = NULL;
	int rc = -1;

	if (spx_mkdirs(dir, 0700) == 0 && (text = inst_md(ag, w)))
		rc = spx_write_file(path, text, strlen(text), 0600, false);
	if (rc < 0) {
		spx_log(SPX_LOG_WARN, "%s: cannot write '%s': %s", w->id, path,
			spx_errmsg());
		free(path);
		path = NULL;
	}
	free(text);
	free(name);
	free(dir);
	return path;
}

/* The options of a running guest changed (ModifyInstanceMetadataOptions):
 * its metadata.json, which `spx-vm imds` reads afresh for each guest
 * connection, replaced at once (a new file renamed over it, so a
 * connection reads the old or the new one, never a part), owned as
 * before: the guest's QEMU user reads it (runas.h). Its token key
 * stays: tokens given out remain good. */
static void inst_metadata(struct agent *ag, struct spx_inst_work *w)
{
	char *dir = guest_dir(ag, w->id);
	char *path = spx_path_join(dir, "metadata.json");
	char *text = inst_md(ag, w);
	struct stat st;
	int rc = -1;

	if (text && stat(path, &st) == 0)
		rc = spx_write_file_owned(path, text, strlen(text),
					  st.st_mode & 0600, false, st.st_uid,
					  st.st_gid);
	else if (text)
		rc = spx_write_file(path, text, strlen(text), 0600, false);
	if (rc < 0)
		spx_log(SPX_LOG_WARN, "%s: cannot write '%s': %s", w->id, path,
			spx_errmsg());
	else
		inst_log_rc(w, spx_inst_metadata_applied(ag->st, w),
			    "metadata options applied");
	free(text);
	free(path);
	free(dir);
}

/* A terminated guest's metadata file goes (the guest's directory, with
 * its console, stays). */
static void forget_metadata(const struct agent *ag,
			    const struct spx_inst_work *w)
{
	char *name = spx_xprintf("instances/%s.json", w->id);
	char *path = spx_path_join(ag->conf->paths.run, name);

	if (unlink(path) < 0 && errno != ENOENT)
		spx_log(SPX_LOG_WARN, "%s: cannot remove '%s': %s", w->id, path,
			strerror(errno));
	free(path);
	free(name);
}

/* RUN/net/hosts/ID: the line by which the net service's dnsmasq gives
 * a guest on the bridge its address (spx-net serve). */
static char *host_path(const struct agent *ag, const char *id)
{
	char *name = spx_xprintf("net/hosts/%s", id);
	char *path = spx_path_join(ag->conf->paths.run, name);

	free(name);
	return path;
}

/* w's guest's host line, "MAC,ADDRESS", readable by dnsmasq (nobody). */
static int write_host(const struct agent *ag, const struct spx_inst_work *w,
		      const char *mac)
{
	char *path = host_path(ag, w->id);
	char *dir = spx_path_join(ag->conf->paths.run, "net/hosts");
	char *line = spx_xprintf("%s,%s\n", mac, w->ip);
	int rc = spx_mkdirs(dir, 0755) < 0
			 ? -1
			 : spx_write_file(path, line, strlen(line), 0644, false);

	if (rc < 0)
		spx_log(SPX_LOG_WARN, "%s: cannot write '%s': %s", w->id, path,
			spx_errmsg());
	free(line);
	free(dir);
	free(path);
	return rc;
}

/* A terminated guest on the bridge gives its tap and address up: the
 * tap removed (spx-net rm's work, done here) and its host line, so
 * that the address can be another's. */
static void unplug(const struct agent *ag, const struct spx_inst_work *w)
{
	char tap[SPX_INST_TAP_SIZE], *path;

	if (!w->bridge)
		return;
	spx_inst_tap(w->id, tap);
	if (spx_net_remove(tap) == 0)
		spx_log(SPX_LOG_INFO, "%s: tap %s removed", w->id, tap);
	else if (spx_errstatus() != SPX_NO)
		spx_log(SPX_LOG_WARN, "%s: cannot remove tap %s: %s", w->id,
			tap, spx_errmsg());
	spx_error_clear();
	path = host_path(ag, w->id);
	if (unlink(path) < 0 && errno != ENOENT)
		spx_log(SPX_LOG_WARN, "%s: cannot remove '%s': %s", w->id, path,
			strerror(errno));
	free(path);
}

/* spx-vm start for w: on the user network a port chosen and recorded
 * first (a new one when the last start failed, since a port taken
 * meanwhile is the usual cause); on the bridge its host line; then the
 * metadata, then the command. */
static void inst_launch(struct agent *ag, struct spx_inst_work *w)
{
	struct spx_ebs_work ew = { 0 };
	struct spx_buf dl = SPX_BUF_INIT;
	char mem[32], cpus[16], port[16], mac[SPX_INST_MAC_SIZE], *md;
	char tap[SPX_INST_TAP_SIZE];
	json_t *disks, *v;
	int p = w->port;
	size_t i;

	/* The MAC its metadata names (spx_inst_metadata). */
	spx_inst_mac(w->id, mac);
	spx_inst_tap(w->id, tap);
	if (w->bridge) {
		if (write_host(ag, w, mac) < 0)
			return;
	} else if (!p || retry_get(ag, w->id, INST_STEP(SPX_INST_LAUNCH))) {
		p = free_port();
		if (!p || spx_inst_set_port(ag->st, w, p) < 0) {
			spx_log(SPX_LOG_WARN, "%s: no SSH port: %s", w->id,
				p ? spx_errmsg() : "none free");
			return;
		}
		w->port = p;
	}
	/* Its data volumes (AttachVolume's) are plugged as it starts. */
	disks = spx_ebs_data_volumes(ag->st, w->account, w->id);
	if (!disks) {
		spx_log(SPX_LOG_WARN, "%s: cannot list its volumes: %s", w->id,
			spx_errmsg());
		return;
	}
	md = write_metadata(ag, w);
	if (!md) {
		json_decref(disks);
		return;
	}
	json_array_foreach(disks, i, v) {
		if (i)
			spx_buf_addc(&dl, ',');
		spx_buf_adds(&dl, json_string_value(v));
	}
	spx_buf_addc(&dl, '\0');
	snprintf(mem, sizeof(mem), "%lldM", (long long)w->mem_mib);
	snprintf(cpus, sizeof(cpus), "%d", w->cpus);
	snprintf(port, sizeof(port), "%d", p);
	char *argv[32] = { ag->spxvm, "start", "--root", (char *)ag->root,
			   w->id, "--volume", w->vol, "--memory", mem,
			   "--cpus", cpus };
	size_t na = 11;

	if (w->bridge) {
		/* Its tap, made on the bridge by spx-vm (spx-net tap's
		 * work) unless it is there. */
		argv[na++] = "--tap";
		argv[na++] = tap;
		argv[na++] = "--bridge";
		argv[na++] = spx_conf_self(ag->conf)->vm.bridge;
		/* With --mac below: nothing but its own MAC and address
		 * leaves its tap. */
		argv[na++] = "--address";
		argv[na++] = w->ip;
	} else {
		argv[na++] = "--ssh-port";
		argv[na++] = port;
	}
	argv[na++] = "--metadata";
	argv[na++] = md;
	argv[na++] = "--mac";
	argv[na++] = mac;
	argv[na++] = "--boot-mode";
	argv[na++] = w->uefi ? "uefi" : "bios";
	if (json_array_size(disks)) {
		argv[na++] = "--disks";
		argv[na++] = dl.p;
	}

	snprintf(ew.account, sizeof(ew.account), "%s", w->account);
	snprintf(ew.id, sizeof(ew.id), "%s", w->id);
	powered_off_forget(ag, w->id); /* of its last life */
	spawn_job(ag, argv, &ew, w);
	spx_buf_release(&dl);
	json_decref(disks);
	free(md);
}

/* What the agent asks spx-vm to do to a running guest. */
enum vm_cmd {
	VM_STOP,	/* press the power button, quit at the deadline */
	VM_STOP_FORCE,	/* quit QEMU at once (no power button) */
	VM_REBOOT,
};

/* Run spx-vm stop or reboot for w's guest. */
static void vm_job(struct agent *ag, struct spx_inst_work *w,
		   enum vm_cmd c)
{
	struct spx_ebs_work ew = { 0 };
	char *argv[9] = { ag->spxvm, c == VM_REBOOT ? "reboot" : "stop",
			  "--root", (char *)ag->root };
	int n = 4;

	if (c != VM_REBOOT) {
		argv[n++] = "--timeout";
		argv[n++] = VM_STOP_TIMEOUT;
		if (c == VM_STOP_FORCE)
			argv[n++] = "--force";
	}
	argv[n++] = w->id;
	argv[n] = NULL;
	snprintf(ew.account, sizeof(ew.account), "%s", w->account);
	snprintf(ew.id, sizeof(ew.id), "%s", w->id);
	spawn_job(ag, argv, &ew, w);
}

/* What the QEMU of a running guest says of it (spx_vm_status). One
 * that does not answer at once (busy with another QMP client, or hung)
 * is asked again on the next pass. */
enum guest_end {
	GUEST_RUNS,	/* running, paused (an I/O error waits: io-error) */
	GUEST_OFF,	/* "shutdown": the guest powered itself off, and
			 * QEMU (-no-shutdown) waits to be told to quit */
	GUEST_FAULT,	/* "internal-error", "guest-panicked": QEMU stopped
			 * the guest for good */
};

static enum guest_end guest_end(const char *dir)
{
	char st[SPX_VM_STATUS_SIZE];
	enum guest_end e = GUEST_RUNS;

	if (spx_vm_status(dir, WATCH_QMP_MS, st) == 0) {
		if (!strcmp(st, "shutdown"))
			e = GUEST_OFF;
		else if (!strcmp(st, "internal-error") ||
			 !strcmp(st, "guest-panicked"))
			e = GUEST_FAULT;
	}
	spx_error_clear();
	return e;
}

/* The guest of w ended while its QEMU runs: one that powered itself off
 * is marked so (death_code), then its QEMU is told to quit with the
 * command an operator would use. The watch records it stopped once its
 * QEMU is gone. */
static void inst_ended(struct agent *ag, struct spx_inst_work *w,
		       enum guest_end e)
{
	if (e == GUEST_OFF) {
		char *p = powered_off_path(ag, w->id);
		int rc = spx_write_file(p, "", 0, 0600, false);

		if (rc < 0)
			spx_log(SPX_LOG_WARN, "%s: cannot make '%s': %s",
				w->id, p, spx_errmsg());
		free(p);
		if (rc < 0)
			return; /* tried again on the next pass */
		spx_log(SPX_LOG_INFO, "%s: the guest powered itself off",
			w->id);
	} else {
		spx_log(SPX_LOG_WARN, "%s: QEMU stopped the guest (a fault)",
			w->id);
	}
	/* no power button for a dead guest */
	vm_job(ag, w, e == GUEST_OFF ? VM_STOP : VM_STOP_FORCE);
}

/* A data volume's attachment (volume.h): plugged into, or unplugged
 * from, a running guest with spx-vm; recorded at once when no guest
 * runs. Nothing is done while a step of the instance runs (a start
 * plugs what is attached when it begins; a detachment recorded while
 * it starts is carried out once it has). */
static void attach_step(struct agent *ag, const struct spx_ebs_work *w)
{
	char *dir = guest_dir(ag, w->inst);
	bool up = spx_vm_pid(dir) > 0, now_done = false;
	struct spx_ebs_work d = *w;

	free(dir);
	if (running(ag, w->inst))
		return;
	if (w->step == SPX_EBS_ATTACH) {
		switch (w->inst_code) {
		case SPX_INST_RUNNING:
			if (!up)
				return; /* the watch sees to the instance */
			break;
		case SPX_INST_STOPPED:
		case SPX_INST_STOPPING:
			now_done = true; /* plugged when it starts */
			break;
		case SPX_INST_PENDING:
			return; /* its launch plugs it */
		default: /* gone or going: released */
			d.step = SPX_EBS_DETACH;
			now_done = true;
			break;
		}
	} else if (!up) {
		now_done = true;
	}
	if (now_done) {
		int r = spx_ebs_done(ag->st, &d, true, NULL, time(NULL));

		if (r < 0)
			spx_log(SPX_LOG_WARN, "%s: cannot record the %s: %s",
				w->id,
				d.step == SPX_EBS_ATTACH ? "attachment"
							 : "detachment",
				spx_errmsg());
		else
			spx_log(SPX_LOG_INFO, "%s: %s %s (no guest runs)",
				w->id,
				d.step == SPX_EBS_ATTACH ? "attached to"
							 : "detached from",
				w->inst);
		spx_error_clear();
		return;
	}
	char *argv[] = { ag->spxvm,
			 w->step == SPX_EBS_ATTACH ? "attach" : "detach",
			 "--root", (char *)ag->root,
			 w->step == SPX_EBS_ATTACH ? (char *)w->inst
						   : "--timeout",
			 w->step == SPX_EBS_ATTACH ? (char *)w->id
						   : VM_DETACH_TIMEOUT,
			 w->step == SPX_EBS_ATTACH ? NULL : (char *)w->inst,
			 (char *)w->id, NULL };

	spawn_job(ag, argv, w, NULL);
}

/* A volume grown while attached: its guest's disk grows too, when the
 * guest runs (one that starts later opens it at its new size). */
static void grow_step(struct agent *ag, const struct spx_ebs_work *w)
{
	char *dir = *w->inst ? guest_dir(ag, w->inst) : NULL;
	bool up = dir && spx_vm_pid(dir) > 0;

	free(dir);
	if (running(ag, w->inst))
		return;
	if (!up) {
		if (spx_ebs_done(ag->st, w, true, NULL, time(NULL)) < 0)
			spx_log(SPX_LOG_WARN, "%s: cannot record the "
				"modification: %s", w->id, spx_errmsg());
		else
			spx_log(SPX_LOG_INFO, "%s: done (no guest runs)",
				w->id);
		spx_error_clear();
		return;
	}
	char *argv[] = { ag->spxvm,	      "resize", "--root",
			 (char *)ag->root, (char *)w->inst, (char *)w->id,
			 NULL };

	spawn_job(ag, argv, w, NULL);
}

/* One look at the instance records: start what they ask for. */
static void inst_pass(struct agent *ag)
{
	struct spx_inst_work *w = NULL;
	int64_t now = spx_mono_ms();
	size_t n = 0;

	ag->guests = false;
	if (spx_inst_pending(ag->st, ag->conf->node, time(NULL), &w, &n) < 0) {
		spx_log(SPX_LOG_WARN, "cannot read the instance records: %s",
			spx_errmsg());
		return;
	}
	/* Launch retries of instances no longer pending are forgotten. */
	for (size_t k = 0; k < ag->nretry;) {
		bool asked = ag->retry[k].step < INST_STEP(0);

		for (size_t i = 0; i < n && !asked; i++)
			asked = INST_STEP(w[i].step) == ag->retry[k].step &&
				!strcmp(w[i].id, ag->retry[k].id);
		if (asked)
			k++;
		else
			ag->retry[k] = ag->retry[--ag->nretry];
	}
	for (size_t i = 0; i < n; i++) {
		struct retry *r = retry_get(ag, w[i].id, INST_STEP(w[i].step));
		char *dir;

		if (running(ag, w[i].id) || (r && r->at > now))
			continue;
		switch (w[i].step) {
		case SPX_INST_LAUNCH:
			dir = guest_dir(ag, w[i].id);
			if (spx_vm_pid(dir) > 0) {
				/* Started before a crash, not recorded. */
				inst_log_rc(&w[i],
					    spx_inst_launched(ag->st, &w[i],
							      time(NULL)),
					    "running (its guest was up)");
			} else if (ag->njobs < MAX_JOBS) {
				inst_launch(ag, &w[i]);
			}
			free(dir);
			ag->guests = true;
			break;
		case SPX_INST_FAIL:
			spx_log(SPX_LOG_WARN, "%s: %s", w[i].id, w[i].why);
			inst_log_rc(&w[i],
				    spx_inst_launch_failed(ag->st, &w[i],
							   w[i].why, time(NULL)),
				    "terminated: the launch failed");
			break;
		case SPX_INST_WATCH:
		case SPX_INST_REBOOT:
		case SPX_INST_METADATA:
			ag->guests = true;
			dir = guest_dir(ag, w[i].id);
			if (spx_vm_pid(dir) && w[i].step == SPX_INST_REBOOT) {
				if (ag->njobs < MAX_JOBS)
					vm_job(ag, &w[i], VM_REBOOT);
			} else if (spx_vm_pid(dir) &&
				   w[i].step == SPX_INST_METADATA) {
				inst_metadata(ag, &w[i]);
			} else if (!spx_vm_pid(dir)) {
				const char *code = death_code(ag, w[i].id);
				int rc;

				spx_log(SPX_LOG_WARN,
					"%s: its QEMU is gone (%s)", w[i].id,
					code);
				rc = spx_inst_died(ag->st, &w[i], code,
						   time(NULL));
				inst_log_rc(&w[i], rc, "stopped");
				if (rc == 0)
					powered_off_forget(ag, w[i].id);
			} else if (w[i].step == SPX_INST_WATCH &&
				   ag->njobs < MAX_JOBS) {
				enum guest_end e = guest_end(dir);

				if (e != GUEST_RUNS)
					inst_ended(ag, &w[i], e);
			}
			free(dir);
			break;
		case SPX_INST_SHUTDOWN:
		case SPX_INST_STOP:
			ag->guests = true;
			if (ag->njobs < MAX_JOBS)
				vm_job(ag, &w[i],
				       w[i].step == SPX_INST_STOP && w[i].force
					       ? VM_STOP_FORCE
					       : VM_STOP);
			break;
		case SPX_INST_REPORT:
			spx_log(SPX_LOG_WARN, "%s: %s", w[i].id, w[i].why);
			inst_log_rc(&w[i],
				    spx_inst_note(ag->st, &w[i], w[i].why),
				    "root volume failure recorded");
			break;
		case SPX_INST_EXPIRE:
			inst_log_rc(&w[i], spx_inst_expire(ag->st, &w[i]),
				    "record removed (terminated an hour ago)");
			break;
		}
	}
	spx_error_clear();
	free(w);
}

/* An instance step's child ended with wait status ws. */
static void inst_finish(struct agent *ag, struct job *j, int ws)
{
	struct spx_inst_work *w = &j->iw;
	int rc = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
	char *dir = guest_dir(ag, w->id), *why;
	bool up = spx_vm_pid(dir) > 0;

	free(dir);
	if (w->step == SPX_INST_REBOOT) {
		/* Done, or not: either way not asked again (a guest that is
		 * gone is the watch's business). */
		if (rc != 0) {
			why = spx_xprintf("'%s' exited with status %d%s%s",
					  j->cmd, rc, j->last ? ": " : "",
					  j->last ? j->last : "");
			spx_log(SPX_LOG_WARN, "%s", why);
			if (spx_inst_note(ag->st, w, why) < 0)
				spx_log(SPX_LOG_WARN, "%s: %s", w->id,
					spx_errmsg());
			free(why);
		}
		inst_log_rc(w, spx_inst_rebooted(ag->st, w),
			    rc == 0 ? "rebooted" : "reboot given up");
		return;
	}
	if (w->step == SPX_INST_WATCH) {
		/* The quit of a guest that powered off: the watch records it
		 * once its QEMU is gone, and has it quit again till then. */
		if (rc != 0)
			spx_log(SPX_LOG_WARN, "%s: '%s' exited with status %d%s%s",
				w->id, j->cmd, rc, j->last ? ": " : "",
				j->last ? j->last : "");
		return;
	}
	if (w->step == SPX_INST_LAUNCH && (rc == 0 || up)) {
		retry_drop(ag, w->id, INST_STEP(w->step));
		inst_log_rc(w, spx_inst_launched(ag->st, w, time(NULL)),
			    "running");
		return;
	}
	if (w->step != SPX_INST_LAUNCH && (rc == 0 || !up)) {
		retry_drop(ag, w->id, INST_STEP(w->step));
		if (w->step == SPX_INST_SHUTDOWN) {
			forget_metadata(ag, w);
			unplug(ag, w);
		}
		inst_log_rc(w, spx_inst_halted(ag->st, w, time(NULL)),
			    w->step == SPX_INST_STOP ? "stopped" : "terminated");
		return;
	}
	why = rc < 0 ? spx_xprintf("'%s' was killed by signal %d%s%s", j->cmd,
				   WTERMSIG(ws), j->last ? ": " : "",
				   j->last ? j->last : "")
		     : spx_xprintf("'%s' exited with status %d%s%s", j->cmd,
				   rc, j->last ? ": " : "",
				   j->last ? j->last : "");
	spx_log(SPX_LOG_WARN, "%s", why);
	if (w->step == SPX_INST_LAUNCH &&
	    !retry_count(ag, w->id, INST_STEP(w->step), LAUNCH_TRIES)) {
		retry_drop(ag, w->id, INST_STEP(w->step));
		unplug(ag, w);
		inst_log_rc(w, spx_inst_launch_failed(ag->st, w, why, time(NULL)),
			    "terminated: the launch failed");
	} else {
		/* A stop is tried until it works (spx-vm kills in the end). */
		if (w->step != SPX_INST_LAUNCH)
			retry_count(ag, w->id, INST_STEP(w->step), INT_MAX);
		if (spx_inst_note(ag->st, w, why) < 0)
			spx_log(SPX_LOG_WARN, "%s: %s", w->id, spx_errmsg());
		spx_log(SPX_LOG_INFO, "%s: to be tried again", w->id);
	}
	free(why);
}

/* The step of j ended with wait status ws: record it. */
/* Are the volumes of snapshot step j (every one of a set) still there?
 * A snapshot of a volume gone can never be taken. */
static bool set_has(const struct agent *ag, const struct job *j)
{
	if (!vol_has(ag, j->w.src, 0))
		return false;
	for (size_t k = 0; k < j->nset; k++)
		if (!vol_has(ag, j->set[k].src, 0))
			return false;
	return true;
}

/* The buckets' lifecycle rules are applied by spx-obj lifecycle, every
 * obj.lifecycle_interval seconds; a pass that stopped at its budget (exit
 * 1) goes on a second later, where it stopped, with the buckets that
 * stopped only (--unfinished). What it did, it prints into this log. */
static void life_start(struct agent *ag, int64_t now)
{
	const struct spx_conf_node *self = spx_conf_self(ag->conf);
	char *argv[] = { ag->spxobj, "lifecycle", "--stderr", "--root",
			 (char *)ag->root,
			 ag->life_more ? "--unfinished" : NULL, NULL };
	struct spx_ebs_work none = { 0 };
	size_t n = ag->njobs;

	if (ag->life_running || now < ag->life_due || n == MAX_JOBS)
		return;
	snprintf(none.id, sizeof(none.id), "lifecycle");
	spawn_job(ag, argv, &none, NULL);
	if (ag->njobs == n) {
		ag->life_due = now + self->obj.lifecycle_interval * 1000LL;
		return;
	}
	ag->jobs[n].life = true;
	ag->life_running = true;
}

static void life_finish(struct agent *ag, struct job *j, int rc)
{
	const struct spx_conf_node *self = spx_conf_self(ag->conf);
	int64_t now = spx_mono_ms();

	ag->life_running = false;
	ag->life_more = rc == SPX_NO;
	if (rc == SPX_NO) {
		ag->life_due = now + PASS_MS;
		return;
	}
	if (rc)
		spx_log(SPX_LOG_WARN, "'%s' failed (exit %d)%s%s", j->cmd, rc,
			j->last ? ": " : "", j->last ? j->last : "");
	ag->life_due = now + self->obj.lifecycle_interval * 1000LL;
}

static void finish(struct agent *ag, struct job *j, int ws)
{
	const struct spx_ebs_work *w = &j->w;
	int rc = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
	bool ok, final = true, snap;
	char *why = NULL;
	int r;

	if (j->inst) {
		inst_finish(ag, j, ws);
		return;
	}
	if (j->life) {
		life_finish(ag, j, rc);
		return;
	}
	ok = rc == 0 || done_anyway(ag, w, rc);

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
		if (w->step == SPX_EBS_DELETE ||
		    w->step == SPX_EBS_SNAP_DELETE ||
		    w->step == SPX_EBS_ATTACH || w->step == SPX_EBS_DETACH)
			final = false;
		else if (w->step != SPX_EBS_RESIZE &&
			 w->step != SPX_EBS_GROW && rc != SPX_USAGE &&
			 !(w->step == SPX_EBS_SNAP_TAKE &&
			   !set_has(ag, j)) &&
			 !(w->step == SPX_EBS_CREATE && !*w->src))
			final = !retry_later(ag, w);
		if (!final && w->step != SPX_EBS_DELETE &&
		    w->step != SPX_EBS_SNAP_DELETE)
			spx_log(SPX_LOG_INFO, "%s: to be tried again", w->id);
		if (w->step == SPX_EBS_DELETE || w->step == SPX_EBS_SNAP_DELETE)
			retry_later(ag, w);
		if (w->step == SPX_EBS_ATTACH || w->step == SPX_EBS_DETACH)
			retry_count(ag, w->id, (int)w->step, INT_MAX);
	} else {
		retry_forget(ag, w);
	}
	/* A set is tried again as one: every member waits as w does, so
	 * that none starts the set again before its time. */
	for (size_t k = 0; k < j->nset; k++) {
		if (ok)
			retry_forget(ag, &j->set[k]);
		else if (!final)
			retry_later(ag, &j->set[k]);
	}
	if (j->cancelled) {
		spx_log(SPX_LOG_INFO, "%s: stopped, the snapshot is deleted",
			w->id);
		r = 0;
	} else if (snap) {
		r = spx_ebs_snap_done(ag->st, w, ok, final, why);
		/* A set ends as one: every member as the run did. */
		for (size_t k = 0; k < j->nset && r == 0; k++)
			r = spx_ebs_snap_done(ag->st, &j->set[k], ok, final, why);
	} else if (ok || final || w->step == SPX_EBS_DELETE ||
		   w->step == SPX_EBS_ATTACH || w->step == SPX_EBS_DETACH) {
		/* A deletion that failed stays "deleting", its reason in
		 * SpxError (an instance whose root volume it is reports it:
		 * instance.h). */
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
		free(j->set);
		spx_buf_release(&j->line);
		ag->jobs[i] = ag->jobs[--ag->njobs];
		ended++;
	}
	return ended;
}

/* When to look at the records next, after a look at now. */
static int64_t next_pass(const struct agent *ag, int64_t now)
{
	int64_t at = now + (ag->njobs || ag->nretry || ag->guests
				    ? PASS_MS
				    : IDLE_PASS_MS);

	/* A retry due already is started, or waits on another step: the
	 * next look after PASS_MS sees to it. */
	for (size_t i = 0; i < ag->nretry; i++)
		if (ag->retry[i].at > now && ag->retry[i].at < at)
			at = ag->retry[i].at;
	if (!ag->life_running && ag->life_due < at)
		at = ag->life_due > now ? ag->life_due : now;
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
	struct spx_ebs_work *w = NULL, *later = NULL, *set;
	size_t n = 0, nlater = 0;
	ssize_t nset;
	int64_t now = spx_mono_ms();
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
		bool asked = ag->retry[k].step >= INST_STEP(0); /* inst_pass */

		for (size_t i = 0; i < n && !asked; i++)
			asked = (int)w[i].step == ag->retry[k].step &&
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

				bool member = !strcmp(j->w.id, w[i].id);

				for (size_t m = 0; m < j->nset; m++)
					member |= !strcmp(j->set[m].id, w[i].id);
				/* Deleted while being taken: stop it (a set
				 * is taken again without it). */
				if (member &&
				    j->w.step != SPX_EBS_SNAP_DELETE &&
				    !j->cancelled) {
					j->cancelled = true;
					kill(j->pid, SIGTERM);
				}
			}
		if (ag->njobs == MAX_JOBS || running(ag, w[i].id) ||
		    (r && r->at > now) || waits(&w[i], w, n) ||
		    waits(&w[i], later, nlater))
			continue;
		if ((nset = set_of(w, n, i, &set)) < 0)
			continue;
		if (volume_busy(ag, &w[i], set, (size_t)nset)) {
			free(set);
			continue;
		}
		if (w[i].step == SPX_EBS_ATTACH || w[i].step == SPX_EBS_DETACH)
			attach_step(ag, &w[i]);
		else if (w[i].step == SPX_EBS_GROW)
			grow_step(ag, &w[i]);
		else
			start(ag, &w[i], set, (size_t)nset);
	}
	free(w);
	free(later);
}

/* Stop every step (the agent is stopping): their records stay where they
 * are, and the next agent runs them again. */
static void stop_jobs(struct agent *ag)
{
	int64_t until = spx_mono_ms() + 10000;

	for (size_t i = 0; i < ag->njobs; i++)
		kill(ag->jobs[i].pid, SIGTERM);
	while (ag->njobs) {
		struct job *j = &ag->jobs[ag->njobs - 1];
		int ws;

		if (spx_mono_ms() > until)
			kill(j->pid, SIGKILL);
		if (waitpid(j->pid, &ws, spx_mono_ms() > until ? 0 : WNOHANG) ==
		    j->pid) {
			if (j->err >= 0)
				close(j->err);
			free(j->cmd);
			free(j->last);
			free(j->set);
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

	if ((rc = spx_svc_begin(a, "agent", false, &set, &notify)))
		return rc;
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
	ag.spxvm = spx_find_prog("spx-vm");
	ag.spxobj = spx_find_prog("spx-obj");
	if (!ag.spxvol || !ag.spxvm || !ag.spxobj) {
		spx_warn("agent: cannot find %s next to spx or on PATH",
			 !ag.spxvol ? "spx-vol"
			 : !ag.spxvm ? "spx-vm"
				     : "spx-obj");
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
		int64_t now = spx_mono_ms();
		int timeout;

		if (reap(&ag) || now >= due)
			look = true;
		if (look) {
			/* Drain first: a ring during the pass brings another. */
			spx_agent_bell_drain(bell);
			pass(&ag);
			inst_pass(&ag);
			life_start(&ag, now);
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
	free(ag.spxvm);
	free(ag.spxobj);
	spx_state_close(ag.st);
	spx_conf_release(&conf);
	spx_node_loc_release(&loc);
	return rc;
}
