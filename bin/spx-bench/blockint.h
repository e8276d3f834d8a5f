/* blockint.h: the pieces of `spx-bench block`.
 *
 * block.c runs the suite: the reference fio jobs on the host file
 * system, plain nbdkit and an spx volume, the data check, the report.
 * blocksnap.c measures the snapshots of a volume in the same run: an
 * incremental snapshot against the bytes changed, and an eager restore
 * against the object store's GET rate. */
#ifndef SPX_BENCH_BLOCKINT_H
#define SPX_BENCH_BLOCKINT_H

#include "spx.h"

#include "bench/bench.h"
#include "bench/fio.h"
#include "buf.h"

enum { T_HOST, T_NBDKIT, T_VOL, NTARGETS };

struct blk {
	char *base;	     /* --dir, absolute */
	char *dir;	     /* the scratch directory, DIR/block.PID */
	char *logs;	     /* fio's reports and the servers' output */
	uint64_t size;	     /* bytes per fio job */
	uint64_t check;	     /* bytes per fio job in the data check */
	unsigned runtime_ms, ramp_ms;
	bool quick, direct;
	char fstype[32], device[256];
	char fio_version[64];
	const char *nbdkit;  /* $SPX_NBDKIT, else nbdkit */
	char *spx, *spxvol;  /* spx-vol: $SPX_VOL, else from PATH */
	/* host */
	char *hostdir;
	/* plain nbdkit */
	char *plain_file, *plain_sock, *plain_pidf;
	pid_t plain;
	/* the private node and its volume */
	char *node, *vol_id, *vol_file, *vol_sock;
	pid_t serve;
	char *uri[NTARGETS];
	struct spx_bench_run *run;
	char pattern[40];    /* the data check's: "0x" + 16 hex digits */
	/* the snapshots' volume (blocksnap.c) */
	uint64_t snap_size;  /* provisioned */
	uint64_t snap_changed; /* bytes changed between the two snapshots */
};

/* ---- block.c ---- */

/* Run argv to the end, stdin from /dev/null, stdout appended to out and
 * stderr to err (NULL: out too): its exit status, or -1 with an error
 * recorded when it could not run or a signal killed it. */
int blk_run_to(char *const argv[], const char *out, const char *err);
/* The line of a log that says what went wrong (caller frees; NULL: no
 * such line). */
char *blk_why(const char *path);

/* An argv being built: each string is owned by it. */
struct blk_argv {
	char **v;
	size_t n;
};
void blk_arg(struct blk_argv *a, char *s); /* takes s */
void blk_argv_free(struct blk_argv *a);

/* Run fio with a's options (and --name=name), its report and messages
 * under b->logs. On success the report is in *r. A failed run is an
 * error naming what it ran on and what fio said; check: a failed verify
 * is the data check's failure. */
int blk_fio_run(struct blk *b, const char *what, const char *name,
		struct blk_argv *a, struct spx_fio_result *r, bool check);

/* "16 MiB", "1 GiB" (whole MiB), into out. */
const char *blk_mib_str(uint64_t v, char *out, size_t n);
/* v with thousands separators and d decimals, into out. */
const char *blk_commas(double v, int d, char *out, size_t n);
/* id over lim in each run, their median [lowest-highest], into out as a
 * share ("52% [48-55%]") or, when !share, a multiple ("1.25x [...]").
 * The median, or NAN when no run has both. */
double blk_ratio(const struct spx_bench_runs *rs, const char *id,
		 const char *lim, bool share, char *out, size_t n);

/* Targets met, missed, and not resolved by their limit. */
struct blk_tally {
	int met, unmet, unresolved;
};
/* Judge med (a figure over its limit) against target into v ("met (what)",
 * "NOT MET (what)", "limit not resolved (what)", joined by "; ") and t.
 * A figure better than its limit, above 1 (below when lower_better), is
 * "limit not resolved": the limit did not measure what binds. */
void blk_judge(struct spx_buf *v, struct blk_tally *t, double med,
	       bool lower_better, double target, const char *what);

/* ---- blocksnap.c ---- */

/* The snapshots' sizes for b->quick into b; the disk space they need at
 * most, beside the fio targets'. */
uint64_t blk_snap_plan(struct blk *b);
/* One run's snapshot figures, into b->run: a volume of b->snap_size on
 * the private node, written through spx-vol serve, snapshotted, changed,
 * snapshotted again, restored eagerly and compared, then removed with
 * its snapshots. A snapshot or restore that fails, or a restored volume
 * whose bytes are not the snapshot's, fails the run. */
int blk_snap_run(struct blk *b);
/* The snapshot part of the report, from the runs' medians s[n]: lines
 * on stdout, a table into md, the verdicts into t. */
void blk_snap_report(const struct blk *b, const struct spx_bench_runs *rs,
		     const struct spx_bench_stat *s, size_t n,
		     struct blk_tally *t, struct spx_buf *md);

#endif
