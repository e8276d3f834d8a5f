/* Unit tests for lib/bench: medians, summaries, and the JSON round trip a
 * C suite goes through (record, save, load). */
#include "spx.h"

#include <math.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "bench/bench.h"
#include "t.h"

static void median_cases(void)
{
	static const struct {
		double v[6];
		size_t n;
		double want;
	} cases[] = {
		{ { 3 }, 1, 3 },
		{ { 2, 1 }, 2, 1.5 },
		{ { 5, 1, 3 }, 3, 3 },
		{ { 4, 1, 3, 2 }, 4, 2.5 },
		{ { -1, -5, 10, 0, 2 }, 5, 0 },
	};

	for (size_t i = 0; i < SPX_ARRAY_SIZE(cases); i++) {
		double v[6];

		memcpy(v, cases[i].v, sizeof(v));
		T_OK(spx_bench_median(v, cases[i].n) == cases[i].want,
		     "median case %zu", i);
	}
	T_OK(isnan(spx_bench_median(NULL, 0)), "the median of nothing is NaN");
}

/* A scratch directory only under a base no one else can change. */
static void scratch_cases(const char *tmp)
{
	char *base = spx_xprintf("%s/base", tmp), *d;
	struct stat st;

	d = spx_bench_scratch(base, "s3", 0711);
	T_OK(d != NULL, "made under a new base: %s",
	     d ? d : spx_errmsg());
	T_OK(d && !strncmp(d, base, strlen(base)) &&
		     !strncmp(d + strlen(base), "/s3.", 4) &&
		     strlen(d) == strlen(base) + 10,
	     "base/NAME.XXXXXX");
	T_OK(d && stat(d, &st) == 0 && S_ISDIR(st.st_mode) &&
		     (st.st_mode & 07777) == 0711,
	     "a directory, with the mode asked");
	T_OK(d && stat(base, &st) == 0 && !(st.st_mode & 022),
	     "the base made writable by its owner alone");
	free(d);
	d = spx_bench_scratch(base, "s3", 0700);
	T_OK(d != NULL, "a second one beside it");
	free(d);
	chmod(base, 0777);
	d = spx_bench_scratch(base, "s3", 0700);
	T_OK(!d, "refused under a base anyone can write");
	T_INT(spx_errstatus(), SPX_USAGE, "a usage error");
	T_OK(strstr(spx_errmsg(), "another user") != NULL, "saying why: %s",
	     spx_errmsg());
	chmod(base, 01777);
	d = spx_bench_scratch(base, "s3", 0700);
	T_OK(d != NULL, "made under a sticky one, as /tmp");
	free(d);
	chmod(base, 0755);
	if (geteuid() == 0) {
		if (chown(base, 65534, 65534) < 0)
			abort();
		d = spx_bench_scratch(base, "s3", 0700);
		T_OK(!d, "refused under another user's base");
		free(d);
		if (chown(base, 0, 0) < 0)
			abort();
	}
	free(base);
}

int main(void)
{
	char dir[] = "/tmp/spx-test-bench.XXXXXX";
	struct spx_bench_runs rs;
	struct spx_bench_stat *st;
	size_t ns;
	char *path = NULL;

	median_cases();
	T_OK(spx_bench_tag_valid("host-baremetal"), "a plain tag");
	T_OK(!spx_bench_tag_valid(""), "an empty tag");
	T_OK(!spx_bench_tag_valid("a/b"), "a tag with a slash");
	T_OK(!spx_bench_tag_valid(".."), "a dot tag");
	T_OK(!spx_bench_tag_valid("x y"), "a tag with a space");

	if (!mkdtemp(dir))
		return 1;
	for (int r = 1; r <= 3; r++) {
		struct spx_bench_run run;

		spx_bench_run_init(&run, "s3", "t", r);
		/* Distinct times keep the file names apart. */
		free(run.time);
		run.time = spx_xprintf("2026-11-30T10:00:0%dZ", r);
		spx_bench_add(&run, "put.mibs", "s3", "PUT 256 MiB",
			      100.0 * r, "MiB/s", true, 1);
		spx_bench_add(&run, "put.p99", "s3", "PUT p99", 10.0 / r, "ms",
			      false, r == 3 ? 2 : 1);
		T_INT(spx_bench_save(&run, dir, &path), 0, "save run %d", r);
		T_OK(path && strstr(path, "-s3-run"), "the file is named by suite and run");
		free(path);
		path = NULL;
		spx_bench_run_release(&run);
	}
	T_INT(spx_bench_load_tag(dir, "t", &rs), 0, "load the tag");
	T_INT(rs.n, 3, "three runs");
	T_INT(rs.v[0].run, 1, "oldest first");
	T_STR(rs.v[2].suite, "s3", "the suite survives the round trip");
	ns = spx_bench_summarise(&rs, &st);
	T_INT(ns, 2, "two figures");
	T_STR(st[0].f->id, "put.mibs", "first-seen order");
	T_OK(st[0].median == 200 && st[0].min == 100 && st[0].max == 300,
	     "median and range");
	T_OK(fabs(st[0].spread - 1.0) < 1e-12, "spread is (max-min)/median");
	T_INT(st[0].threads, 1, "the thread count");
	T_INT(st[1].threads, -1, "disagreeing thread counts read as -1");
	T_OK(!st[1].f->higher_better, "lower is better survives");
	spx_bench_stats_free(st, ns);
	spx_bench_runs_release(&rs);
	T_INT(spx_bench_load_tag(dir, "none", &rs), -1, "a missing tag");
	T_INT(spx_errstatus(), SPX_NO, "is a negative answer");
	scratch_cases(dir);
	{
		char *argv[] = { "rm", "-rf", dir, NULL };
		pid_t pid = fork();

		if (pid == 0) {
			execvp("rm", argv);
			_exit(1);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
	return t_done();
}
