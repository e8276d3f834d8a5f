/* spx-bench block: the block volume path beside its two limits, all
 * measured in the same run with the reference fio jobs.
 *
 *   jobs     randrw 70/30 4k, randread 4k, seqread 1M, seqwrite 1M, each
 *            with 4 jobs at iodepth 32 and direct=1, a --size region per
 *            job, --runtime after --ramp (scripts/spx-bench.sh runs the
 *            same jobs on a host or in a guest).
 *   targets  host    four files on the file system under --dir, which
 *                    also holds the private node's volumes: fio's libaio
 *                    engine with O_DIRECT, the limit of the disk (buffered
 *                    when that file system has no O_DIRECT, and the report
 *                    says so);
 *            nbdkit  plain `nbdkit file` over a unix socket, through
 *                    fio's nbd engine: the limit of NBD on this machine;
 *            vol     an spx volume served by `spx-vol serve` on a private
 *                    node, through the same engine (export = volume id).
 *            Each job runs on the three targets one after the other, so
 *            that the three figures of a ratio are seconds apart, and
 *            each starts with the target's files flushed and out of the
 *            page cache.
 *   data     after the jobs of a run, each target writes a region with a
 *            pattern made of a random value of the run and each block's
 *            offset, reads it back in the same fio job, and, after its
 *            NBD server was restarted, once more: a server that drops
 *            writes, keeps them only in memory, or returns another
 *            block's data fails the run.
 *
 * Every figure is recorded (ids block.TARGET.JOB.DIR.{iops,mibs,p99}) and
 * the report sets the volume against both limits, as the median of the
 * runs' own ratios, with the targets of issue 9. */
#include "spx.h"

#include <math.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#include "bench/bench.h"
#include "bench/fio.h"
#include "block.h"
#include "blockint.h"
#include "conf/conf.h"
#include "file.h"
#include "node/node.h"
#include "node/svc.h"
#include "size.h"
#include "vol/vol.h"

#define NJOBS 4
#define IODEPTH 32
/* The data check's region per job, at most. */
#define CHECK_MAX (64u << 20)
/* How long a server may take to listen, and to stop. */
#define READY_MS 30000
#define STOP_MS 10000

static const struct {
	const char *id;	   /* in figure ids */
	const char *name;  /* for people */
	const char *short_name;
} tdef[NTARGETS] = {
	{ "host", "host file system", "host" },
	{ "nbdkit", "plain nbdkit file", "nbdkit" },
	{ "vol", "spx volume", "volume" },
};

/* The reference jobs. */
static const struct job {
	const char *id, *label, *rw, *bs, *extra;
	bool rd, wr;
} jobs[] = {
	{ "randrw", "randrw 70/30 4k", "randrw", "4k", "--rwmixread=70", true,
	  true },
	{ "randread", "randread 4k", "randread", "4k", NULL, true, false },
	{ "seqread", "seqread 1M", "read", "1M", NULL, true, false },
	{ "seqwrite", "seqwrite 1M", "write", "1M", NULL, false, true },
};
#define NJOBDEFS (SPX_ARRAY_SIZE(jobs))

/* ---- child processes ---- */

/* Start argv with stdin from /dev/null and stdout and stderr appended to
 * out and err (err NULL: out too). keep, if not -1, becomes the child's
 * fd 3. The child gets SIGTERM when spx-bench dies, so that no server or
 * fio outlives a killed benchmark. Returns its pid, or -1. */
static pid_t start(char *const argv[], const char *out, const char *err,
		   int keep)
{
	pid_t parent = getpid(), pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		spx_error_errno(SPX_FAIL, "cannot fork");
		return -1;
	}
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
		int o = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
			     0600);
		int e = err ? open(err,
				   O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
				   0600)
			    : o;
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 ||
		    getppid() != parent)
			_exit(SPX_FAIL);
		if (in < 0 || o < 0 || e < 0 || dup2(in, 0) < 0 ||
		    dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(SPX_FAIL);
		if (keep == 3 ? fcntl(3, F_SETFD, 0) < 0
			      : keep >= 0 && dup2(keep, 3) < 0)
			_exit(SPX_FAIL);
		execvp(argv[0], argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

/* Wait for pid: its exit status, or -1 when a signal killed it. */
static int finish(pid_t pid, const char *what)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return spx_error_errno(SPX_FAIL, "%s: waitpid", what);
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return spx_error(SPX_FAIL, "%s was killed by signal %d", what,
			 WTERMSIG(st));
}

static void sleep_ms(int ms)
{
	poll(NULL, 0, ms);
}

/* SIGTERM, then SIGKILL after STOP_MS; reaps it. */
static void stop(pid_t *pid)
{
	int st;

	if (*pid <= 0)
		return;
	kill(*pid, SIGTERM);
	for (int waited = 0; waitpid(*pid, &st, WNOHANG) == 0; waited += 10) {
		if (waited >= STOP_MS) {
			kill(*pid, SIGKILL);
			waitpid(*pid, &st, 0);
			break;
		}
		sleep_ms(10);
	}
	*pid = 0;
}

/* Run argv to the end with its output in out (and err): its status. */
int blk_run_to(char *const argv[], const char *out, const char *err)
{
	pid_t pid = start(argv, out, err, -1);

	return pid < 0 ? -1 : finish(pid, argv[0]);
}

/* The line of a log that says what went wrong: the first naming an
 * error, else the last that is not empty (caller frees; NULL: none). */
char *blk_why(const char *path)
{
	struct spx_buf b = SPX_BUF_INIT;
	char *first = NULL, *last = NULL, *line, *save = NULL;
	static const char *const words[] = { "verify:", "error", "Error",
					     "failed", "bad",	"cannot",
					     "wanted" };

	if (spx_buf_read_file(&b, path, 1 << 20) < 0) {
		spx_error_clear();
		spx_buf_release(&b);
		return NULL;
	}
	for (line = strtok_r(b.p, "\n", &save); line && !first;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!*line || strstr(line, "connected to NBD server"))
			continue;
		last = line;
		for (size_t i = 0; i < SPX_ARRAY_SIZE(words) && !first; i++)
			if (strstr(line, words[i]))
				first = line;
	}
	first = first ? spx_strdup(first) : last ? spx_strdup(last) : NULL;
	spx_buf_release(&b);
	return first;
}

/* ---- fio ---- */

void blk_arg(struct blk_argv *a, char *s) /* takes s */
{
	a->v = spx_realloc(a->v, (a->n + 2) * sizeof(char *));
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

void blk_argv_free(struct blk_argv *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	memset(a, 0, sizeof(*a));
}

/* The options every fio run on target t has: where, how, how many. */
static void target_args(const struct blk *b, int t, struct blk_argv *a,
			uint64_t size)
{
	blk_arg(a, spx_strdup("fio"));
	if (t == T_HOST) {
		blk_arg(a, spx_strdup("--ioengine=libaio"));
		blk_arg(a, spx_xprintf("--directory=%s", b->hostdir));
		/* Every job of every run on its own file, as the host suite
		 * lays them out. */
		blk_arg(a, spx_strdup("--filename_format=spx-bench.$jobnum"));
		blk_arg(a, spx_xprintf("--direct=%d", b->direct));
	} else {
		/* One export; each job on its own --size region of it. The
		 * NBD server decides how it reaches the disk: direct=1 is
		 * kept so the job reads as the reference's. */
		blk_arg(a, spx_strdup("--ioengine=nbd"));
		blk_arg(a, spx_xprintf("--uri=%s", b->uri[t]));
		blk_arg(a, spx_xprintf("--offset_increment=%llu",
				       (unsigned long long)b->size));
		blk_arg(a, spx_strdup("--direct=1"));
	}
	blk_arg(a, spx_xprintf("--numjobs=%d", NJOBS));
	blk_arg(a, spx_xprintf("--iodepth=%d", IODEPTH));
	blk_arg(a, spx_xprintf("--size=%llu", (unsigned long long)size));
	blk_arg(a, spx_strdup("--group_reporting"));
	blk_arg(a, spx_strdup("--eta=never"));
	blk_arg(a, spx_strdup("--output-format=json"));
}

int blk_fio_run(struct blk *b, const char *what, const char *name,
		struct blk_argv *a, struct spx_fio_result *r, bool check)
{
	char *out = spx_xprintf("%s/%s.json", b->logs, name);
	char *err = spx_xprintf("%s/%s.err", b->logs, name);
	struct spx_buf rep = SPX_BUF_INIT;
	int st, rc = -1;

	blk_arg(a, spx_xprintf("--name=%s", name));
	st = blk_run_to(a->v, out, err);
	if (st < 0)
		goto out;
	if (spx_buf_read_file(&rep, out, SPX_FIO_MAX_BYTES) < 0 ||
	    spx_fio_parse(rep.p, rep.len, r) < 0) {
		/* fio that fails early writes no report: its words say why. */
		char *parse = spx_strdup(spx_errmsg()), *w = blk_why(err);

		spx_error(SPX_FAIL, "%s: fio %s failed (exit %d): %s",
			  what, name, st, w ? w : parse);
		free(parse);
		free(w);
		goto out;
	}
	if (st != 0 || r->error) {
		char *w = blk_why(err);

		if (!w)
			w = blk_why(out);
		/* fio reports a failed verify as EILSEQ. */
		if (check && r->error == EILSEQ)
			spx_error(SPX_FAIL, "%s: the data read back is not "
					    "what was written (%s): %s",
				  what, name,
				  w ? w : strerror(r->error));
		else
			spx_error(SPX_FAIL, "%s: fio %s failed (exit %d): %s",
				  what, name, st,
				  w ? w : strerror(r->error));
		free(w);
		goto out;
	}
	rc = 0;
out:
	spx_buf_release(&rep);
	free(out);
	free(err);
	return rc;
}

/* ---- the targets' files ---- */

/* The files under target t: flushed to the disk and dropped from the page
 * cache, so that a job starts from the disk and not from what an earlier
 * job left in memory, and no write-back of one job runs into the next. */
static int settle(const struct blk *b, int t)
{
	char *files[NJOBS] = { NULL };
	size_t n = 0;
	int rc = 0;

	if (t == T_HOST)
		for (int i = 0; i < NJOBS; i++)
			files[n++] = spx_xprintf("%s/spx-bench.%d", b->hostdir,
						 i);
	else
		files[n++] = spx_strdup(t == T_NBDKIT ? b->plain_file
						      : b->vol_file);
	for (size_t i = 0; i < n && rc == 0; i++) {
		int fd = open(files[i], O_RDONLY | O_CLOEXEC), e = 0;

		if (fd < 0 || fdatasync(fd) < 0 ||
		    (e = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))) {
			if (e)
				errno = e;
			rc = spx_error_errno(SPX_FAIL, "cannot flush '%s'",
					     files[i]);
		}
		if (fd >= 0)
			close(fd);
	}
	for (size_t i = 0; i < n; i++)
		free(files[i]);
	return rc;
}

/* ---- the servers ---- */

/* Plain nbdkit serving the file: ready once it wrote its pidfile, which
 * nbdkit does after it listens. */
static int plain_start(struct blk *b)
{
	char *log = spx_xprintf("%s/nbdkit.log", b->logs);
	char *argv[] = { (char *)b->nbdkit, "-f",	     "-U",
			 b->plain_sock,	    "-P",	     b->plain_pidf,
			 "--exit-with-parent", "file",	     b->plain_file,
			 NULL };
	int rc = -1, st;

	unlink(b->plain_pidf);
	unlink(b->plain_sock);
	b->plain = start(argv, log, NULL, -1);
	for (int waited = 0; b->plain > 0; waited += 10) {
		if (access(b->plain_pidf, F_OK) == 0) {
			rc = 0;
			break;
		}
		if (waitpid(b->plain, &st, WNOHANG) == b->plain ||
		    waited >= READY_MS) {
			char *w = blk_why(log);

			if (waited >= READY_MS)
				stop(&b->plain);
			b->plain = 0;
			spx_error(SPX_FAIL, "plain nbdkit did not start: %s",
				  w ? w : "no message");
			free(w);
			break;
		}
		sleep_ms(10);
	}
	free(log);
	return rc;
}

static void plain_stop(struct blk *b)
{
	stop(&b->plain);
	if (b->plain_sock)
		unlink(b->plain_sock);
	if (b->plain_pidf)
		unlink(b->plain_pidf);
}

/* spx-vol serve on the private node: ready when it says so on its
 * --notify-fd, as it tells spx up. */
static int serve_start(struct blk *b)
{
	char *log = spx_xprintf("%s/serve.log", b->logs);
	char *argv[] = { b->spxvol,	"serve", "--root",	b->node,
			 "--socket",	b->vol_sock, "--notify-fd", "3",
			 NULL };
	struct pollfd p = { .events = POLLIN };
	int fds[2], rc = -1;
	char c = 0;

	if (pipe2(fds, O_CLOEXEC) < 0) {
		free(log);
		return spx_error_errno(SPX_FAIL, "cannot make a pipe");
	}
	b->serve = start(argv, log, NULL, fds[1]);
	close(fds[1]);
	p.fd = fds[0];
	if (b->serve > 0 && poll(&p, 1, READY_MS) == 1 &&
	    read(fds[0], &c, 1) == 1 && c == '\n')
		rc = 0;
	close(fds[0]);
	if (rc < 0 && b->serve > 0) {
		char *w;

		stop(&b->serve);
		w = blk_why(log);
		spx_error(SPX_FAIL, "spx-vol serve did not start: %s",
			  w ? w : "no message");
		free(w);
	}
	free(log);
	return rc;
}

/* The private node, and a volume of NJOBS regions on it. */
static int node_make(struct blk *b)
{
	char *log = spx_xprintf("%s/node.log", b->logs);
	char *out = spx_xprintf("%s/create.out", b->logs);
	char *size = spx_xprintf("%llu", (unsigned long long)b->size * NJOBS);
	char *init[] = { b->spx, "admin", "init", "--root", b->node, "--http",
			 NULL };
	char *create[] = { b->spxvol, "create", "--root", b->node, "--size",
			   size,      NULL };
	struct spx_buf id = SPX_BUF_INIT;
	struct spx_node_loc loc = { 0 };
	struct spx_conf conf;
	struct spx_vol_store *vs = NULL;
	bool conf_open = false;
	char *store = NULL, *w;
	int st, rc = -1;

	if ((st = blk_run_to(init, log, NULL)) != 0 ||
	    (st = blk_run_to(create, out, log)) != 0) {
		w = blk_why(log);
		spx_error(SPX_FAIL, "cannot make the private node under '%s': "
				    "%s",
			  b->node, w ? w : spx_errmsg());
		free(w);
		goto out;
	}
	if (spx_buf_read_file(&id, out, 256) < 0)
		goto out;
	while (id.len && (id.p[id.len - 1] == '\n'))
		id.p[--id.len] = '\0';
	if (!spx_vol_id_valid(id.p)) {
		spx_error(SPX_FAIL, "spx-vol create printed '%s', not a "
				    "volume id",
			  id.p);
		goto out;
	}
	b->vol_id = spx_strdup(id.p);
	/* The volume's file, for flushing it between jobs: where lib/vol
	 * keeps it on this node. */
	spx_node_locate(b->node, &loc);
	if (spx_conf_load(loc.conf, loc.root, &conf) < 0)
		goto out;
	conf_open = true;
	store = spx_path_join(conf.paths.data, "vol");
	if (spx_vol_store_open(store, 0, &vs) < 0)
		goto out;
	b->vol_file = spx_vol_data_path(vs, b->vol_id);
	rc = 0;
out:
	spx_vol_store_close(vs);
	if (conf_open)
		spx_conf_release(&conf);
	spx_node_loc_release(&loc);
	spx_buf_release(&id);
	free(store);
	free(size);
	free(log);
	free(out);
	return rc;
}

/* Stop target t's server and start it again (the data check). */
static int restart(struct blk *b, int t)
{
	if (t == T_NBDKIT) {
		plain_stop(b);
		return plain_start(b);
	}
	if (t == T_VOL) {
		stop(&b->serve);
		return serve_start(b);
	}
	return 0;
}

/* ---- the jobs ---- */

static void add(struct blk *b, int t, const struct job *j, const char *dir,
		const char *what, double v, const char *unit, bool higher)
{
	char id[96], label[128];

	snprintf(id, sizeof(id), "block.%s.%s.%s.%s", tdef[t].id, j->id, dir,
		 what);
	snprintf(label, sizeof(label), "%s, %s %s%s", tdef[t].name, j->label,
		 dir, strcmp(what, "p99") ? "" : ", p99");
	spx_bench_add(b->run, id, t == T_VOL ? "block" : "limit", label, v,
		      unit, higher, NJOBS);
}

/* A whole number of MiB for people: "16 MiB", "1 GiB". */
const char *blk_mib_str(uint64_t v, char *out, size_t n)
{
	if (v >= (1u << 30) && v % (1u << 30) == 0)
		snprintf(out, n, "%llu GiB", (unsigned long long)(v >> 30));
	else
		snprintf(out, n, "%llu MiB", (unsigned long long)(v >> 20));
	return out;
}

/* v with thousands separators and d decimals. */
const char *blk_commas(double v, int d, char *out, size_t n)
{
	char raw[64], *dot;
	size_t len, o = 0, ilen;

	snprintf(raw, sizeof(raw), "%.*f", d, v);
	dot = strchr(raw, '.');
	ilen = dot ? (size_t)(dot - raw) : strlen(raw);
	len = strlen(raw);
	for (size_t i = 0; i < len && o + 1 < n; i++) {
		if (i && i < ilen && (ilen - i) % 3 == 0 && raw[i - 1] != '-')
			out[o++] = ',';
		if (o + 1 < n)
			out[o++] = raw[i];
	}
	out[o] = '\0';
	return out;
}

/* One line as the reference's disk report has it. */
static void disk_row(struct spx_buf *o, const char *label, const char *dir,
		     double iops, double mibs, double p99)
{
	char i[32], m[32];

	spx_buf_addf(o, "  %-19s%-5s%11s IOPS %6s MiB/s   p99 %7.2f ms\n",
		     label, dir, blk_commas(iops, 0, i, sizeof(i)),
		     blk_commas(mibs, 0, m, sizeof(m)), p99);
}

static int measure(struct blk *b, int t, const struct job *j)
{
	struct blk_argv a = { 0 };
	struct spx_fio_result r;
	char name[64];
	int rc;

	if (settle(b, t) < 0)
		return -1;
	target_args(b, t, &a, b->size);
	blk_arg(&a, spx_strdup("--time_based"));
	blk_arg(&a, spx_xprintf("--runtime=%ums", b->runtime_ms));
	blk_arg(&a, spx_xprintf("--ramp_time=%ums", b->ramp_ms));
	blk_arg(&a, spx_xprintf("--rw=%s", j->rw));
	blk_arg(&a, spx_xprintf("--bs=%s", j->bs));
	if (j->extra)
		blk_arg(&a, spx_strdup(j->extra));
	snprintf(name, sizeof(name), "%s-%s-run%d", tdef[t].id, j->id,
		 b->run->run);
	rc = blk_fio_run(b, tdef[t].name, name, &a, &r, false);
	blk_argv_free(&a);
	if (rc < 0)
		return -1;
	for (int k = 0; k < 2; k++) {
		const struct spx_fio_dir *d = k ? &r.write : &r.read;
		const char *dir = k ? "write" : "read";
		char ci[32], cm[32];

		if (!(k ? j->wr : j->rd))
			continue;
		if (!d->present)
			return spx_error(SPX_FAIL, "%s: fio %s did no %s",
					 tdef[t].name, name, dir);
		add(b, t, j, dir, "iops", d->iops, "IOPS", true);
		add(b, t, j, dir, "mibs", d->mibs, "MiB/s", true);
		add(b, t, j, dir, "p99", d->p99_ms, "ms", false);
		printf("  %-7s %-16s%-5s%11s IOPS %6s MiB/s   p99 %7.2f ms\n",
		       tdef[t].short_name, j->label, dir,
		       blk_commas(d->iops, 0, ci, sizeof(ci)),
		       blk_commas(d->mibs, 0, cm, sizeof(cm)), d->p99_ms);
	}
	fflush(stdout);
	return 0;
}

/* Write every region of target t once, so that reads find data on the
 * disk rather than holes, and the host's files exist. */
static int layout(struct blk *b, int t)
{
	struct blk_argv a = { 0 };
	struct spx_fio_result r;
	char name[32];
	int rc;

	target_args(b, t, &a, b->size);
	blk_arg(&a, spx_strdup("--rw=write"));
	blk_arg(&a, spx_strdup("--bs=1M"));
	blk_arg(&a, spx_strdup("--end_fsync=1"));
	snprintf(name, sizeof(name), "layout-%s", tdef[t].id);
	rc = blk_fio_run(b, tdef[t].name, name, &a, &r, false);
	blk_argv_free(&a);
	return rc;
}

/* The data check of target t (see the top of this file). */
static int check(struct blk *b, int t)
{
	struct spx_fio_result r;
	int rc = 0;

	for (int pass = 0; pass < 2 && rc == 0; pass++) {
		struct blk_argv a = { 0 };
		char name[32];

		target_args(b, t, &a, b->check);
		blk_arg(&a, spx_strdup("--rw=write"));
		blk_arg(&a, spx_strdup("--bs=1M"));
		blk_arg(&a, spx_strdup("--verify=pattern"));
		blk_arg(&a, spx_xprintf("--verify_pattern=%s%%o", b->pattern));
		blk_arg(&a, spx_strdup("--verify_fatal=1"));
		/* fio would leave its verify state in the working directory;
		 * the check reads back by pattern and needs none. */
		blk_arg(&a, spx_strdup("--verify_state_save=0"));
		blk_arg(&a, spx_strdup(pass ? "--verify_only=1"
					    : "--do_verify=1"));
		snprintf(name, sizeof(name), "%s-%s-run%d",
			 pass ? "reread" : "check", tdef[t].id, b->run->run);
		rc = blk_fio_run(b, tdef[t].name, name, &a, &r, true);
		blk_argv_free(&a);
		/* The second read comes from the disk, through a server
		 * that did not see the writes. */
		if (rc == 0 && !pass && (settle(b, t) < 0 || restart(b, t) < 0))
			rc = -1;
	}
	return rc;
}

/* ---- the report ---- */

/* The rows that set the volume against its limits: one figure of one
 * job, and the targets of issue 9 for it. */
static const struct row {
	int job;
	const char *dir, *what; /* "read"/"write"; "iops", "mibs", "p99" */
	double host_min;	/* volume >= this share of the host's */
	double nbd_min;		/* volume >= this share of plain nbdkit's */
	double host_max;	/* volume <= this multiple of the host's */
} rows[] = {
	{ 0, "read", "iops", 0.5, 0.9, 0 }, { 0, "read", "p99", 0, 0, 0 },
	{ 0, "write", "iops", 0.5, 0.9, 0 }, { 0, "write", "p99", 0, 0, 0 },
	{ 1, "read", "iops", 0.5, 0.9, 0 }, { 1, "read", "p99", 0, 0, 0 },
	{ 2, "read", "mibs", 0.8, 0, 0 },   { 2, "read", "p99", 0, 0, 0 },
	{ 3, "write", "mibs", 0.8, 0, 0 },  { 3, "write", "p99", 0, 0, 3.0 },
};

static const char *unit_of(const char *what)
{
	return !strcmp(what, "iops")   ? "IOPS"
	       : !strcmp(what, "mibs") ? "MiB/s"
				       : "p99";
}

/* A figure for people: "66,169 IOPS", "1,818 MiB/s", "10.42 ms"; bare:
 * without the unit. */
static const char *show(double v, const char *what, bool bare, char *out,
			size_t n)
{
	char c[48];

	if (!strcmp(what, "p99"))
		snprintf(out, n, "%.2f%s", v, bare ? "" : " ms");
	else
		snprintf(out, n, "%s%s",
			 blk_commas(v, v < 100 ? 1 : 0, c, sizeof(c)),
			 bare		       ? ""
			 : !strcmp(what, "iops") ? " IOPS"
						 : " MiB/s");
	return out;
}

/* The median, and each run's value when there are several. */
static void cell(struct spx_buf *o, const struct spx_bench_stat *s,
		 const char *what)
{
	char v[48];

	if (!s) {
		spx_buf_adds(o, "-");
		return;
	}
	spx_buf_adds(o, show(s->median, what, false, v, sizeof(v)));
	if (s->n < 2)
		return;
	spx_buf_adds(o, " (");
	for (size_t i = 0; i < s->n; i++)
		spx_buf_addf(o, "%s%s", i ? " / " : "",
			     show(s->values[i], what, true, v, sizeof(v)));
	spx_buf_adds(o, ")");
}

/* id over lim in each run, their median [lowest-highest], into out as a
 * share ("52% [48-55%]") or, for latencies, a multiple ("1.25x"). The
 * median, or NAN when no run has both. */
double blk_ratio(const struct spx_bench_runs *rs, const char *id,
		 const char *lim, bool share, char *out, size_t n)
{
	double med = NAN, lo = 0, hi = 0;
	size_t k = spx_bench_run_ratios(rs, id, lim, &med, &lo, &hi);

	if (!k)
		snprintf(out, n, "-");
	else if (share && k > 1)
		snprintf(out, n, "%.0f%% [%.0f-%.0f%%]", 100 * med, 100 * lo,
			 100 * hi);
	else if (share)
		snprintf(out, n, "%.0f%%", 100 * med);
	else if (k > 1)
		snprintf(out, n, "%.2fx [%.2f-%.2fx]", med, lo, hi);
	else
		snprintf(out, n, "%.2fx", med);
	return k ? med : NAN;
}

/* One target: med is the volume over its limit; a figure better than
 * its limit (above it, or below for a latency) is "limit not resolved":
 * the limit did not measure what binds, so nothing is met or missed. */
void blk_judge(struct spx_buf *v, struct blk_tally *t, double med,
	       bool lower_better, double target, const char *what)
{
	int r; /* 1 met, 0 not met, -1 not resolved */

	if (isnan(med))
		return;
	if (lower_better)
		r = med < 1 ? -1 : med <= target;
	else
		r = med > 1 ? -1 : med >= target;
	spx_buf_addf(v, "%s%s (%s)", v->len ? "; " : "",
		     r > 0 ? "met" : r == 0 ? "NOT MET" : "limit not resolved",
		     what);
	t->met += r > 0;
	t->unmet += r == 0;
	t->unresolved += r < 0;
}

/* The medians of each target in the reference's layout. */
static void blocks(const struct blk *b, const struct spx_bench_stat *s,
		   size_t n, struct spx_buf *o)
{
	for (int t = 0; t < NTARGETS; t++) {
		if (t == T_HOST)
			spx_buf_addf(o, "%s: %s %s (libaio, direct=%d)\n",
				     tdef[t].name, b->fstype, b->device,
				     b->direct);
		else if (t == T_NBDKIT)
			spx_buf_addf(o, "%s (nbd engine, unix socket)\n",
				     tdef[t].name);
		else
			spx_buf_addf(o, "%s (spx-vol serve, nbd engine, unix "
					"socket)\n",
				     tdef[t].name);
		for (size_t j = 0; j < NJOBDEFS; j++)
			for (int k = 0; k < 2; k++) {
				const char *dir = k ? "write" : "read";
				const struct spx_bench_stat *f[3];
				static const char *const w[3] = { "iops",
								  "mibs",
								  "p99" };
				char id[96];

				for (int x = 0; x < 3; x++) {
					snprintf(id, sizeof(id),
						 "block.%s.%s.%s.%s",
						 tdef[t].id, jobs[j].id, dir,
						 w[x]);
					f[x] = spx_bench_stat_find(s, n, id);
				}
				if (!f[0] || !f[1] || !f[2])
					continue;
				disk_row(o, jobs[j].label, dir, f[0]->median,
					 f[1]->median, f[2]->median);
			}
	}
}

static void report(const struct blk *b, const struct spx_bench_runs *rs,
		   const char *tag, const char *results)
{
	struct spx_bench_stat *s = NULL;
	size_t n = spx_bench_summarise(rs, &s);
	struct spx_buf md = SPX_BUF_INIT, blk = SPX_BUF_INIT;
	struct blk_tally tl = { 0 };
	char sz[32], chk[32], *path;
	bool mem = !strcmp(b->fstype, "tmpfs") || !strcmp(b->fstype, "ramfs");

	blk_mib_str(b->size, sz, sizeof(sz));
	blk_mib_str(b->check, chk, sizeof(chk));
	printf("\n== spx-bench block: medians of %zu run%s (tag %s); each "
	       "ratio is the median of the runs' own ratios\n",
	       rs->n, rs->n == 1 ? "" : "s", tag);
	spx_buf_addf(&md, "spx-bench block, tag %s: %zu run%s", tag, rs->n,
		     rs->n == 1 ? "" : "s");
	if (rs->n)
		spx_buf_addf(&md, ", %s to %s", rs->v[0].time,
			     rs->v[rs->n - 1].time);
	spx_buf_adds(&md, ".\n\n");
	spx_bench_machine(&md);
	if (b->quick)
		spx_buf_adds(&md, "- --quick: tiny jobs and volumes, to test "
				  "the suite; these are not figures to "
				  "read\n");
	spx_buf_addf(&md, "- file system: %s on %s under %s, which also holds "
			  "the node's volumes and object store\n",
		     b->fstype, b->device, b->base);
	if (!b->direct)
		spx_buf_addf(&md, "- O_DIRECT is not available on %s: the host "
				  "jobs ran buffered (direct=0), through the "
				  "page cache, so the host figures are not "
				  "the disk's\n",
			     b->fstype);
	if (mem)
		spx_buf_addf(&md, "- %s is memory, not a disk: every figure "
				  "here is memory's\n",
			     b->fstype);
	spx_buf_addf(&md,
		     "- %s, the reference jobs: randrw 70/30 4k, randread 4k, "
		     "seqread 1M, seqwrite 1M; %d jobs at iodepth %d, %s "
		     "each, %g s after a %g s ramp; host: libaio on %d "
		     "files, direct=%d; plain nbdkit and the spx volume: "
		     "fio's nbd engine over a unix socket, each job on its "
		     "own region of one export. Each job ran on the three "
		     "targets one after the other, each time starting with "
		     "the target's files flushed and out of the page cache\n",
		     b->fio_version, NJOBS, IODEPTH, sz, b->runtime_ms / 1e3,
		     b->ramp_ms / 1e3, NJOBS, b->direct);
	spx_buf_adds(&md,
		     "- plain nbdkit runs with its default threads (16 a "
		     "connection) and acknowledges a write once the host's "
		     "page cache holds it; spx-vol serve runs the node's "
		     "default server, spx-nbd (one io_uring event loop a "
		     "connection), whose aligned reads and writes go around "
		     "the page cache (O_DIRECT) as the host jobs do; both "
		     "make writes durable on FLUSH or FUA. Where the volume "
		     "does better than the host, the host is not the limit "
		     "that binds: \"limit not resolved\"; plain nbdkit is "
		     "another server, not a limit: a volume faster than it "
		     "meets the target over it\n"
		     "- figures are medians over the runs (each run's value "
		     "in brackets); a ratio is the median of the runs' own "
		     "ratios [lowest-highest], each figure over its limit "
		     "measured in the same run; a latency's is a multiple\n\n");
	blocks(b, s, n, &blk);
	fputs(blk.p, stdout);
	spx_buf_addf(&md, "```text\n%s```\n\n", blk.p);
	spx_buf_adds(&md, "| test | host | plain nbdkit | spx volume | "
			  "nbdkit/host | volume/host | volume/nbdkit | "
			  "verdict |\n|---|---|---|---|---|---|---|---|\n");
	printf("--- the volume against its limits ---\n");
	for (size_t i = 0; i < SPX_ARRAY_SIZE(rows); i++) {
		const struct row *r = &rows[i];
		bool lat = !strcmp(r->what, "p99");
		struct spx_buf c[NTARGETS] = { SPX_BUF_INIT, SPX_BUF_INIT,
					       SPX_BUF_INIT };
		struct spx_buf v = SPX_BUF_INIT;
		char id[NTARGETS][96], rh[64], rv[64], rn[64], what[48];
		double vh, vn;

		for (int t = 0; t < NTARGETS; t++) {
			snprintf(id[t], sizeof(id[t]), "block.%s.%s.%s.%s",
				 tdef[t].id, jobs[r->job].id, r->dir, r->what);
			cell(&c[t], spx_bench_stat_find(s, n, id[t]), r->what);
		}
		blk_ratio(rs, id[T_NBDKIT], id[T_HOST], !lat, rn, sizeof(rn));
		vh = blk_ratio(rs, id[T_VOL], id[T_HOST], !lat, rh, sizeof(rh));
		vn = blk_ratio(rs, id[T_VOL], id[T_NBDKIT], !lat, rv,
			       sizeof(rv));
		if (r->host_min > 0) {
			snprintf(what, sizeof(what), ">= %.0f%% of host",
				 100 * r->host_min);
			blk_judge(&v, &tl, vh, false, r->host_min, what);
		}
		if (r->nbd_min > 0) {
			/* Plain nbdkit is another server, not a bound: a
			 * volume faster than it is faster, and meets this. */
			snprintf(what, sizeof(what), ">= %.0f%% of nbdkit",
				 100 * r->nbd_min);
			blk_judge(&v, &tl, vn > 1 ? 1 : vn, false, r->nbd_min,
				  what);
		}
		if (r->host_max > 0) {
			snprintf(what, sizeof(what), "<= %.0fx host",
				 r->host_max);
			blk_judge(&v, &tl, vh, true, r->host_max, what);
		}
		printf("  %s %s, %s: host %s | nbdkit %s | volume %s\n"
		       "      nbdkit/host %s | volume/host %s | volume/nbdkit "
		       "%s%s%s\n",
		       jobs[r->job].label, r->dir, unit_of(r->what), c[0].p,
		       c[1].p, c[2].p, rn, rh, rv, v.len ? " | " : "", v.p);
		spx_buf_addf(&md, "| %s %s, %s | %s | %s | %s | %s | %s | %s | "
				  "%s |\n",
			     jobs[r->job].label, r->dir, unit_of(r->what),
			     c[0].p, c[1].p, c[2].p, rn, rh, rv, v.p);
		for (int t = 0; t < NTARGETS; t++)
			spx_buf_release(&c[t]);
		spx_buf_release(&v);
	}
	blk_snap_report(b, rs, s, n, &tl, &md);
	printf("== data: every target read back what it wrote (%d x %s per "
	       "run, a pattern of the run and each block's offset), in the "
	       "same fio job and again after its server restarted\n",
	       NJOBS, chk);
	printf("== targets met: %d of %d%s\n", tl.met, tl.met + tl.unmet,
	       tl.unresolved ? "; some limits not resolved on this machine"
			     : "");
	spx_buf_addf(&md,
		     "\nTargets met: %d of %d%s. Data: in every run each "
		     "target wrote %d x %s with a pattern of the run and each "
		     "block's offset and read it back, in the same fio job "
		     "and again after its NBD server was restarted and its "
		     "files had left the page cache: every block matched.\n",
		     tl.met, tl.met + tl.unmet,
		     tl.unresolved ? "; a figure better than its limit, or "
				     "a target beyond what the disk allows "
				     "(the restore's, where the disk writes "
				     "at under half the GET rate), is "
				     "\"limit not resolved\", neither met nor "
				     "missed"
				   : "",
		     NJOBS, chk);
	path = spx_xprintf("%s/%s/summary.md", results, tag);
	if (spx_write_file(path, md.p, md.len, 0644, false) < 0)
		spx_warn("block: %s", spx_errmsg());
	else
		printf("== summary: %s\n", path);
	free(path);
	spx_buf_release(&md);
	spx_buf_release(&blk);
	spx_bench_stats_free(s, n);
}

/* ---- set-up ---- */

/* The file system under dir: type and device from the mount table (the
 * longest mount point that holds dir). */
static void fs_of(const char *dir, struct blk *b)
{
	FILE *f = fopen("/proc/self/mounts", "r");
	char line[1024];
	size_t best = 0;

	snprintf(b->fstype, sizeof(b->fstype), "unknown");
	snprintf(b->device, sizeof(b->device), "unknown");
	while (f && fgets(line, sizeof(line), f)) {
		char dev[256], mnt[512], type[32], m[512];
		size_t o = 0, l;

		if (sscanf(line, "%255s %511s %31s", dev, mnt, type) != 3)
			continue;
		/* The kernel writes blanks and the like as \ooo. */
		for (size_t i = 0; mnt[i] && o + 1 < sizeof(m); i++) {
			if (mnt[i] == '\\' && mnt[i + 1] >= '0' &&
			    mnt[i + 1] <= '3' && mnt[i + 2] >= '0' &&
			    mnt[i + 2] <= '7' && mnt[i + 3] >= '0' &&
			    mnt[i + 3] <= '7') {
				m[o++] = (char)((mnt[i + 1] - '0') * 64 +
						(mnt[i + 2] - '0') * 8 +
						(mnt[i + 3] - '0'));
				i += 3;
			} else {
				m[o++] = mnt[i];
			}
		}
		m[o] = '\0';
		l = strlen(m);
		if (!strcmp(m, "/"))
			l = 0;
		if ((l == 0 || (!strncmp(dir, m, l) &&
				(dir[l] == '/' || dir[l] == '\0'))) &&
		    l + 1 > best) {
			best = l + 1;
			snprintf(b->fstype, sizeof(b->fstype), "%s", type);
			snprintf(b->device, sizeof(b->device), "%s", dev);
		}
	}
	if (f)
		fclose(f);
}

/* Does the file system under dir take O_DIRECT? An aligned write says. */
static bool direct_ok(const char *dir)
{
	char *p = spx_xprintf("%s/.odirect", dir);
	void *buf = NULL;
	int fd = open(p, O_CREAT | O_TRUNC | O_WRONLY | O_DIRECT | O_CLOEXEC,
		      0600);
	bool ok = false;

	if (fd >= 0 && posix_memalign(&buf, 4096, 4096) == 0) {
		memset(buf, 0, 4096);
		ok = pwrite(fd, buf, 4096, 0) == 4096;
	}
	if (fd >= 0)
		close(fd);
	unlink(p);
	free(buf);
	free(p);
	return ok;
}

/* fio's version ("fio-3.33"), and whether it has the nbd engine. */
static int fio_probe(struct blk *b)
{
	char *out = spx_xprintf("%s/fio-version", b->logs);
	char *ver[] = { "fio", "--version", NULL };
	char *eng[] = { "fio", "--enghelp=nbd", NULL };
	struct spx_buf v = SPX_BUF_INIT;
	int rc = 0;

	if (blk_run_to(ver, out, NULL) != 0 ||
	    spx_buf_read_file(&v, out, 4096) < 0) {
		rc = spx_error(SPX_FAIL, "fio --version failed");
	} else {
		v.p[strcspn(v.p, "\n")] = '\0';
		snprintf(b->fio_version, sizeof(b->fio_version), "%s", v.p);
		if (blk_run_to(eng, out, NULL) != 0)
			rc = spx_error(SPX_FAIL, "%s has no nbd engine (fio "
						 "3.19 or later, built with "
						 "libnbd)",
				       b->fio_version);
	}
	spx_buf_release(&v);
	free(out);
	return rc;
}

/* A program on PATH (or beside spx-bench), named when missing. */
static char *need(const char *prog, const char *pkg)
{
	char *p = spx_find_prog(prog);

	if (!p)
		spx_error(SPX_FAIL, "%s is not installed (%s)", prog, pkg);
	return p;
}

static int setup(struct blk *b, const char *base)
{
	struct statvfs sv;
	char *fio = NULL, *nbdkit = NULL, *plain = NULL;
	uint64_t need_bytes = b->size * NJOBS * NTARGETS + blk_snap_plan(b) +
			      (256u << 20);
	const char *e = getenv("SPX_NBDKIT"), *ev = getenv("SPX_VOL");
	int fd, rc = -1;

	b->nbdkit = e && *e ? e : "nbdkit";
	if (!(fio = need("fio", "apt-get install fio")) ||
	    (!strchr(b->nbdkit, '/') &&
	     !(nbdkit = need(b->nbdkit, "apt-get install nbdkit"))) ||
	    !(b->spx = need("spx", "build spx: make")) ||
	    !(b->spxvol = ev && *ev ? spx_strdup(ev)
				    : need("spx-vol", "build spx: make")))
		goto out;
	b->base = spx_path_abs(base);
	b->dir = spx_bench_scratch(b->base, "block", 0700);
	if (!b->dir)
		goto out;
	b->logs = spx_xprintf("%s/logs", b->dir);
	b->hostdir = spx_xprintf("%s/host", b->dir);
	plain = spx_xprintf("%s/nbdkit", b->dir);
	b->plain_file = spx_xprintf("%s/disk", plain);
	b->plain_sock = spx_xprintf("%s/nbd.sock", plain);
	b->plain_pidf = spx_xprintf("%s/nbdkit.pid", plain);
	b->node = spx_xprintf("%s/node", b->dir);
	b->vol_sock = spx_xprintf("%s/vol.sock", b->dir);
	if (strlen(b->plain_sock) >= 100 || strlen(b->vol_sock) >= 100) {
		spx_error(SPX_USAGE, "'%s' is too long a path for a unix "
				     "socket: give a shorter --dir",
			  b->vol_sock);
		goto out;
	}
	if (spx_mkdirs(b->logs, 0700) < 0 || spx_mkdirs(b->hostdir, 0700) < 0 ||
	    spx_mkdirs(plain, 0700) < 0)
		goto out;
	if (statvfs(b->dir, &sv) < 0) {
		spx_error_errno(SPX_FAIL, "cannot statvfs '%s'", b->dir);
		goto out;
	}
	/* ramfs has no size: it says 0 blocks, and 0 free. */
	if (sv.f_blocks && (uint64_t)sv.f_bavail * sv.f_frsize < need_bytes) {
		char h[SPX_SIZE_STR], f[SPX_SIZE_STR];

		spx_size_str(need_bytes, h, sizeof(h));
		spx_size_str((uint64_t)sv.f_bavail * sv.f_frsize, f,
			     sizeof(f));
		spx_error(SPX_FAIL, "not enough space under '%s': the three "
				    "targets and the snapshots need %s, %s "
				    "is free",
			  base, h, f);
		goto out;
	}
	fs_of(b->dir, b);
	b->direct = direct_ok(b->hostdir);
	if (fio_probe(b) < 0)
		goto out;
	fd = open(b->plain_file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)(b->size * NJOBS)) < 0) {
		spx_error_errno(SPX_FAIL, "cannot make '%s'", b->plain_file);
		if (fd >= 0)
			close(fd);
		goto out;
	}
	close(fd);
	if (node_make(b) < 0 || serve_start(b) < 0 || plain_start(b) < 0)
		goto out;
	b->uri[T_NBDKIT] = spx_xprintf("nbd+unix:///?socket=%s", b->plain_sock);
	b->uri[T_VOL] = spx_xprintf("nbd+unix:///%s?socket=%s", b->vol_id,
				    b->vol_sock);
	rc = 0;
out:
	free(fio);
	free(nbdkit);
	free(plain);
	return rc;
}

static void teardown(struct blk *b, bool keep)
{
	plain_stop(b);
	stop(&b->serve);
	if (b->dir && !keep)
		spx_rmtree(b->dir);
	else if (b->dir)
		printf("== kept %s (fio's reports and the servers' logs in "
		       "logs/)\n",
		       b->dir);
	free(b->base);
	free(b->dir);
	free(b->logs);
	free(b->hostdir);
	free(b->plain_file);
	free(b->plain_sock);
	free(b->plain_pidf);
	free(b->node);
	free(b->vol_id);
	free(b->vol_file);
	free(b->vol_sock);
	free(b->spx);
	free(b->spxvol);
	for (int t = 0; t < NTARGETS; t++)
		free(b->uri[t]);
}

/* A time option in whole seconds, as milliseconds. */
static int seconds(const struct spx_args *a, const char *name, uint64_t min,
		   uint64_t max, unsigned *ms)
{
	const char *v = spx_arg(a, name);
	char opt[32];
	uint64_t s;

	if (!v)
		return 0;
	snprintf(opt, sizeof(opt), "--%s", name);
	if (spx_parse_uint(opt, v, min, max, &s) < 0)
		return -1;
	*ms = (unsigned)s * 1000;
	return 0;
}

static int one_run(struct blk *b)
{
	uint64_t seed;

	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		return spx_error_errno(SPX_FAIL, "getrandom");
	snprintf(b->pattern, sizeof(b->pattern), "0x%016llx",
		 (unsigned long long)seed);
	for (size_t j = 0; j < NJOBDEFS; j++)
		for (int t = 0; t < NTARGETS; t++)
			if (measure(b, t, &jobs[j]) < 0)
				return -1;
	for (int t = 0; t < NTARGETS; t++)
		if (check(b, t) < 0)
			return -1;
	printf("  data: every target read back what it wrote\n");
	fflush(stdout);
	return blk_snap_run(b);
}

/* One run of the suite into r (spx_bench_repeat's step). */
static int run_one(void *ctx, struct spx_bench_run *r)
{
	struct blk *b = ctx;

	b->run = r;
	return one_run(b);
}

int cmd_block(const struct spx_args *a, const char *results)
{
	struct blk b = { .size = 1u << 30, .runtime_ms = 10000,
			 .ramp_ms = 2000 };
	const char *tag = spx_arg(a, "tag"), *env = getenv("BENCHDIR");
	const char *base = spx_arg(a, "dir") ? spx_arg(a, "dir")
			   : env && *env    ? env
					    : "/var/tmp/spx-bench";
	struct spx_bench_runs runs = { 0 };
	char host[64] = "", *deftag = NULL, sz[32];
	uint64_t nruns = 3;
	int rc = SPX_FAIL;

	b.quick = spx_flag(a, "quick");
	if (b.quick) {
		b.size = 16u << 20;
		b.runtime_ms = 250;
		b.ramp_ms = 0;
	}
	if (spx_arg(a, "runs") &&
	    spx_parse_uint("--runs", spx_arg(a, "runs"), 1, 100, &nruns) < 0)
		goto usage;
	if (spx_arg(a, "size")) {
		if (spx_parse_size(spx_arg(a, "size"), &b.size) < 0)
			goto usage;
		if (b.size < (4u << 20) || b.size % (1u << 20) ||
		    b.size > ((uint64_t)1 << 40)) {
			spx_error(SPX_USAGE, "--size: '%s' is not whole MiB "
					     "from 4M to 1T",
				  spx_arg(a, "size"));
			goto usage;
		}
	}
	if (seconds(a, "runtime", 1, 3600, &b.runtime_ms) < 0 ||
	    seconds(a, "ramp", 0, 600, &b.ramp_ms) < 0)
		goto usage;
	b.check = b.size < CHECK_MAX ? b.size : CHECK_MAX;
	if (!tag) {
		gethostname(host, sizeof(host) - 1);
		deftag = spx_xprintf("block-%.*s", (int)strcspn(host, "."),
				     host);
		tag = deftag;
	}
	if (!spx_bench_tag_valid(tag)) {
		spx_error(SPX_USAGE, "--tag: '%s' is not [A-Za-z0-9._-]{1,64}",
			  tag);
		goto usage;
	}
	if (setup(&b, base) < 0)
		goto fail;
	blk_mib_str(b.size, sz, sizeof(sz));
	printf("== spx-bench block: %d jobs x %s, iodepth %d, %g s after "
	       "%g s ramp, under %s (%s on %s)\n",
	       NJOBS, sz, IODEPTH, b.runtime_ms / 1e3, b.ramp_ms / 1e3, b.dir,
	       b.fstype, b.device);
	if (!b.direct)
		printf("== O_DIRECT is not available on %s: the host jobs run "
		       "buffered (direct=0), through the page cache, so the "
		       "host figures are not the disk's\n",
		       b.fstype);
	printf("== targets: host files (libaio, direct=%d); plain nbdkit "
	       "file at %s; spx volume %s at %s (fio's nbd engine)\n",
	       b.direct, b.plain_sock, b.vol_id, b.vol_sock);
	for (int t = 0; t < NTARGETS; t++) {
		printf("  laying out %d x %s on the %s\n", NJOBS, sz,
		       tdef[t].name);
		fflush(stdout);
		if (layout(&b, t) < 0)
			goto fail;
	}
	if (spx_bench_repeat("block", tag, nruns, b.quick, results, run_one,
			     &b, &runs) < 0)
		goto fail;
	report(&b, &runs, tag, results);
	rc = 0;
	goto out;
usage:
	rc = SPX_USAGE;
fail:
	spx_warn("block: %s", spx_errmsg());
	if (rc != SPX_USAGE)
		rc = spx_errstatus();
out:
	teardown(&b, spx_flag(a, "keep"));
	spx_bench_runs_release(&runs);
	free(deftag);
	return rc;
}
