/* spx-bench: what the platform costs against bare metal.
 *
 * `host` runs the host suite (CPU, memory, disk) by chainloading
 * scripts/spx-bench.sh, the same script operators run inside guests, so
 * host and guest results come from one implementation. compare and plot
 * read the JSON every suite writes (lib/bench/bench.h). */
#include "spx.h"

#include "bench/bench.h"
#include "block.h"
#include "cmd.h"
#include "proc.h"
#include "s3bench.h"
#include "vmbench.h"

static const char *results_dir(const struct spx_args *a)
{
	const char *r = spx_arg(a, "results");
	const char *e = getenv("SPX_BENCH_RESULTS");

	return r ? r : e && *e ? e : "bench-results";
}

static char *find_script(void)
{
	static const char *const rel[] = { "../share/spx/spx-bench.sh",
					   "../../scripts/spx-bench.sh" };

	return spx_find_beside("SPX_BENCH_SCRIPT", rel, SPX_ARRAY_SIZE(rel));
}

static int cmd_host(const struct spx_args *a)
{
	static const char *const pass[] = { "tag", "runs", "dir", "results",
					    "require-mount", "quick" };
	char **argv = spx_calloc(2 * SPX_ARRAY_SIZE(pass) + 4, sizeof(char *));
	char *script = find_script();
	size_t n = 0;

	if (!script) {
		spx_warn("host: cannot find spx-bench.sh (set SPX_BENCH_SCRIPT)");
		free(argv);
		return SPX_FAIL;
	}
	argv[n++] = "bash";
	argv[n++] = script;
	for (size_t i = 0; i < SPX_ARRAY_SIZE(pass); i++) {
		const char *v = spx_arg(a, pass[i]);

		if (!v)
			continue;
		argv[n++] = spx_xprintf("--%s", pass[i]);
		if (*v)
			argv[n++] = (char *)v;
	}
	if (!spx_arg(a, "results"))
		setenv("SPX_BENCH_RESULTS", results_dir(a), 0);
	/* Chainload: the script's exit status is ours. */
	fflush(stdout);
	execvp("bash", argv);
	spx_warn_errno("host: cannot run bash");
	return SPX_FAIL;
}

static int cmd_s3_verb(const struct spx_args *a)
{
	return cmd_s3(a, results_dir(a));
}

static int cmd_block_verb(const struct spx_args *a)
{
	return cmd_block(a, results_dir(a));
}

static int cmd_vm_verb(const struct spx_args *a)
{
	return cmd_vm(a, results_dir(a));
}

static int load(const struct spx_args *a, const char *tag,
		struct spx_bench_runs *rs)
{
	if (spx_bench_load_tag(results_dir(a), tag, rs) < 0) {
		spx_warn("%s: %s", a->verb->name, spx_errmsg());
		return spx_errstatus();
	}
	return 0;
}

static int cmd_compare(const struct spx_args *a)
{
	struct spx_bench_runs ra, rb;
	int rc;

	rc = load(a, a->argv[0], &ra);
	if (rc)
		return rc;
	rc = load(a, a->argv[1], &rb);
	if (rc) {
		spx_bench_runs_release(&ra);
		return rc;
	}
	if (spx_bench_compare(a->argv[0], &ra, a->argv[1], &rb, stdout,
			      spx_flag(a, "json")) < 0) {
		spx_warn("compare: %s", spx_errmsg());
		rc = SPX_FAIL;
	}
	spx_bench_runs_release(&ra);
	spx_bench_runs_release(&rb);
	return rc;
}

static int cmd_plot(const struct spx_args *a)
{
	struct spx_bench_runs *rs = spx_calloc((size_t)a->argc, sizeof(*rs));
	const char *out = spx_arg(a, "out");
	int rc = 0, i;

	if (!out) {
		spx_warn("plot: --out DIR is required");
		free(rs);
		return SPX_USAGE;
	}
	for (i = 0; i < a->argc && !rc; i++)
		rc = load(a, a->argv[i], &rs[i]);
	if (!rc && spx_bench_plot((const char *const *)a->argv, rs,
				  (size_t)a->argc, out) < 0) {
		spx_warn("plot: %s", spx_errmsg());
		rc = spx_errstatus();
	}
	if (!rc)
		printf("%s/cpu-single.png\n%s/random-iops.png\n"
		       "%s/sequential-mibs.png\n%s/variance.png\n",
		       out, out, out, out);
	for (int k = 0; k < a->argc; k++)
		spx_bench_runs_release(&rs[k]);
	free(rs);
	return rc;
}

#define RESULTS_OPT                                                        \
	{ "results", 'R', "DIR",                                           \
	  "the results directory (default $SPX_BENCH_RESULTS, else "       \
	  "./bench-results)" }

static const struct spx_opt host_opts[] = {
	{ "tag", 't', "TAG", "label the runs (default host-HOSTNAME)" },
	{ "runs", 'n', "N", "repeat the suite N times (default 1)" },
	{ "dir", 'd', "DIR", "benchmark the file system under DIR (default $BENCHDIR, else .)" },
	RESULTS_OPT,
	{ "require-mount", 0, NULL, "refuse unless DIR is a mount point" },
	{ "quick", 'q', NULL, "shorten every job (for tests)" },
	{ 0 },
};
static const struct spx_opt s3_opts[] = {
	{ "tag", 't', "TAG", "label the runs (default s3-HOSTNAME)" },
	{ "runs", 'n', "N", "repeat the suite N times (default 1)" },
	{ "dir", 'd', "DIR", "scratch space: nodes, raw-write files, nginx "
			     "(default $BENCHDIR, else /var/tmp/spx-bench)" },
	RESULTS_OPT,
	{ "sizes", 's', "MIB,...", "single-stream object sizes in MiB "
				   "(default 256,1024)" },
	{ "seconds", 0, "S", "length of each 4 KiB phase (default 5)" },
	{ "listing", 0, "N,...", "also the listing suite: the bucket filled "
				 "to N keys each in turn (e.g. "
				 "10000,100000,1000000)" },
	{ "list-cap", 0, "S", "stop a whole listing after S seconds "
			      "(default 60)" },
	{ "root", 'r', "DIR", "bench the running node at DIR instead "
			      "(single stream only)" },
	{ "endpoint", 'e', "URL", "bench this S3 endpoint instead (single "
				  "stream only; key from AWS_ACCESS_KEY_ID "
				  "and AWS_SECRET_ACCESS_KEY)" },
	{ "bucket", 'b', "NAME", "the bucket (default spx-bench)" },
	{ "quick", 'q', NULL, "small objects, short phases (for tests)" },
	{ "keep", 'k', NULL, "keep the scratch directory" },
	{ 0 },
};
static const struct spx_opt block_opts[] = {
	{ "tag", 't', "TAG", "label the runs (default block-HOSTNAME)" },
	{ "runs", 'n', "N", "repeat the jobs N times (default 3)" },
	{ "dir", 'd', "DIR", "the file system to measure: the host's files, "
			     "plain nbdkit's and the private node "
			     "(default $BENCHDIR, else /var/tmp/spx-bench)" },
	RESULTS_OPT,
	{ "size", 's', "SIZE", "bytes per fio job, whole MiB (default 1G; "
			       "each target holds 4 of them)" },
	{ "runtime", 0, "S", "seconds each job is timed (default 10)" },
	{ "ramp", 0, "S", "seconds each job runs before that (default 2)" },
	{ "quick", 'q', NULL, "16 MiB per job, a quarter second each, a "
			      "256 MiB snapshot volume (for tests)" },
	{ "keep", 'k', NULL, "keep the scratch directory (fio's reports, "
			     "the servers' logs)" },
	{ 0 },
};
static const struct spx_opt vm_opts[] = {
	{ "tag", 't', "TAG", "label the runs (default vm-HOSTNAME)" },
	{ "runs", 'n', "N", "boot N instances, one a run (default 5)" },
	{ "dir", 'd', "DIR", "scratch space: the image and a private node "
			     "(default $BENCHDIR, else /var/tmp/spx-bench)" },
	RESULTS_OPT,
	{ "image", 'i', "FILE", "boot this image (default: build the test "
				"image with mkimage.sh)" },
	{ "records", 0, "N,M", "DescribeInstances with N, then M instance "
			       "records (default 100,1000)" },
	{ "clients", 'c', "N", "concurrent API clients (default 4)" },
	{ "seconds", 0, "S", "length of each latency phase (default 5)" },
	{ "timeout", 0, "S", "give up on a boot or a termination after S "
			     "seconds (default 300)" },
	{ "quick", 'q', NULL, "one-second latency phases, 16 MiB busybox "
			      "jobs (for tests)" },
	{ "keep", 'k', NULL, "keep the scratch directory (the node, its "
			     "logs)" },
	{ 0 },
};
static const struct spx_opt compare_opts[] = {
	RESULTS_OPT,
	{ "json", 'j', NULL, "print JSON instead of a table" },
	{ 0 },
};
static const struct spx_opt plot_opts[] = {
	RESULTS_OPT,
	{ "out", 'o', "DIR", "write the PNG charts (and their data) here" },
	{ 0 },
};

static const struct spx_verb verbs[] = {
	{ "host", cmd_host, host_opts, "",
	  "CPU, memory and disk of this machine (scripts/spx-bench.sh)", 0, 0 },
	{ "s3", cmd_s3_verb, s3_opts, "",
	  "S3 PUT/GET, ranged GET, 4 KiB ops, erasure coding, beside the "
	  "limits", 0, 0 },
	{ "block", cmd_block_verb, block_opts, "",
	  "the volume path (NBD) beside the host's disk and plain nbdkit, "
	  "fio's reference jobs; snapshots beside the object store",
	  0, 0 },
	{ "vm", cmd_vm_verb, vm_opts, "",
	  "instances: RunInstances to running, console and SSH; the "
	  "guest's CPU and disk beside the host's; DescribeInstances "
	  "latency with 100 and 1000 records",
	  0, 0 },
	{ "compare", cmd_compare, compare_opts, "TAG_A TAG_B",
	  "medians, ranges and ratios of two tags", 2, 2 },
	{ "plot", cmd_plot, plot_opts, "TAG...",
	  "PNG charts of one or more tags (gnuplot)", 1, 16 },
	{ 0 },
};

int main(int argc, char **argv)
{
	static const struct spx_tool tool = {
		"spx-bench",
		"spx-bench: what the platform costs against bare metal.\n"
		"Runs are saved as JSON under the results directory, one "
		"directory per tag.",
		verbs, NULL
	};

	return spx_cmd_main(&tool, argc, argv);
}
