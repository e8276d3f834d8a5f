/* bench.h: benchmark results: record, save, load, summarise, compare.
 *
 * Every suite (host, and later s3, block, vm, net) produces runs in one
 * JSON shape, "spx-bench/1":
 *
 *   {"schema": "spx-bench/1", "suite": "host", "tag": "guest", "run": 1,
 *    "runs": 3, "time": "2026-11-30T20:15:00Z", "host": "node1",
 *    "quick": false, "system": {...},
 *    "figures": [{"id": "cpu.single.events", "section": "cpu",
 *                 "label": "sysbench cpu, 1 thread", "value": 1456.5,
 *                 "unit": "events/s", "better": "higher", "threads": 1},
 *                ...]}
 *
 * one file per run under RESULTS/TAG/. A suite written in C records with
 * spx_bench_run_new/_add/_save; one written as a script (the host suite,
 * scripts/spx-bench.sh, which must run inside guests with nothing but bash,
 * sysbench and fio) writes the same JSON itself. Everything downstream —
 * medians over runs, ranges, compare, plot — reads only the JSON, so a new
 * suite gets it all by writing figures.
 */
#ifndef SPX_BENCH_H
#define SPX_BENCH_H

#include "spx.h"

#define SPX_BENCH_SCHEMA "spx-bench/1"

struct spx_bench_figure {
	char *id;	/* "disk.randread.read.iops": stable, dotted */
	char *section;	/* "cpu", "memory", "disk", ... */
	char *label;	/* for people: "randread 4k read" */
	char *unit;	/* "IOPS", "MiB/s", "ms", "events/s" */
	double value;
	bool higher_better;
	int threads;	/* threads or jobs the figure was measured with */
};

struct spx_bench_run {
	char *suite, *tag, *time, *host, *file;
	int run;
	bool quick;
	struct spx_bench_figure *fig;
	size_t nfig;
};

struct spx_bench_runs {
	struct spx_bench_run *v;
	size_t n;
};

/* Recording (C suites). */
void spx_bench_run_init(struct spx_bench_run *r, const char *suite,
			const char *tag, int run);
void spx_bench_add(struct spx_bench_run *r, const char *id,
		   const char *section, const char *label, double value,
		   const char *unit, bool higher_better, int threads);
/* Write r as RESULTS/TAG/<time>-run<N>.json (crash-safe); the path is
 * returned in *path if not NULL (caller frees). */
int spx_bench_save(const struct spx_bench_run *r, const char *results,
		   char **path);
void spx_bench_run_release(struct spx_bench_run *r);

/* Run a suite nruns times into rs (rs->v allocated here; release with
 * spx_bench_runs_release): one(ctx, run) fills each run, which is saved
 * under results at once, its path printed. Stops at the first failure
 * (-1, the error recorded); the runs made so far stay in rs. */
int spx_bench_repeat(const char *suite, const char *tag, uint64_t nruns,
		     bool quick, const char *results,
		     int (*one)(void *ctx, struct spx_bench_run *r), void *ctx,
		     struct spx_bench_runs *rs);

/* Tags are [A-Za-z0-9._-]{1,64}. */
bool spx_bench_tag_valid(const char *tag);
/* A run's scratch directory, made new: base/NAME.XXXXXX (mkdtemp), with
 * mode. base is made as needed, and must be the caller's or root's and
 * either writable by no one else or sticky (as /tmp): where another user
 * can write, they could have made base first and swapped what is made in
 * it for links (SPX_USAGE, saying so). Free the answer; NULL on an
 * error. */
char *spx_bench_scratch(const char *base, const char *name, mode_t mode);
/* Parse one run file (at most 4 MiB). */
int spx_bench_load_file(const char *path, struct spx_bench_run *out);
/* Every run of a tag, oldest first. SPX_NO when the tag has none. */
int spx_bench_load_tag(const char *results, const char *tag,
		       struct spx_bench_runs *out);
void spx_bench_runs_release(struct spx_bench_runs *rs);

/* A figure summarised over runs. */
struct spx_bench_stat {
	const struct spx_bench_figure *f; /* the first run's, for labels */
	double median, min, max;
	double spread;	/* (max - min) / median, 0 for one run */
	size_t n;	/* runs that have it */
	int threads;	/* -1 if the runs disagree */
	double *values;	/* each run's value, in run order */
};

/* Summaries of every figure id found in runs, in first-seen order. */
size_t spx_bench_summarise(const struct spx_bench_runs *rs,
			   struct spx_bench_stat **out);
void spx_bench_stats_free(struct spx_bench_stat *s, size_t n);
double spx_bench_median(double *v, size_t n); /* sorts v */
/* The summary of figure id, or NULL. */
const struct spx_bench_stat *spx_bench_stat_find(const struct spx_bench_stat *s,
						 size_t n, const char *id);

/* Ratios for reports. The value of figure id in one run, or NaN. */
double spx_bench_run_value(const struct spx_bench_run *r, const char *id);
/* id over lim taken in each run that has both (a ratio is never made of
 * two different runs), then their median, lowest and highest. Returns
 * how many runs gave one (0: *med, *lo, *hi untouched). */
size_t spx_bench_run_ratios(const struct spx_bench_runs *rs, const char *id,
			    const char *lim, double *med, double *lo,
			    double *hi);
/* "- host: NAME, N CPUs (MODEL), M GiB of memory, Linux RELEASE\n": where
 * a run happened, for a summary. */
void spx_bench_machine(struct spx_buf *md);

/* compare: print one row per figure of A and B; json for machines. */
int spx_bench_compare(const char *tag_a, const struct spx_bench_runs *a,
		      const char *tag_b, const struct spx_bench_runs *b,
		      FILE *out, bool json);

/* plot: PNG charts for the tags into outdir with gnuplot. */
int spx_bench_plot(const char *const *tags, const struct spx_bench_runs *rs,
		   size_t ntags, const char *outdir);

#endif
