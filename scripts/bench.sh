#!/usr/bin/env bash
# make bench: run every benchmark suite available on this machine and print
# each figure beside the limit measured in the same run.
#   scripts/bench.sh BUILD_DIR
# BENCH_RUNS (default 3) runs per suite, BENCH_TAG (default bench-HOSTNAME;
# the suites after host add their name: bench-HOSTNAME-s3, ...), BENCHDIR
# (default a directory under /var/tmp, for the disk jobs and every suite's
# scratch space) and SPX_BENCH_RESULTS (default ./bench-results) change
# what it does.
set -euo pipefail
O=${1:?usage: bench.sh BUILD_DIR}
export PATH="$(cd "$O/bin" && pwd):$PATH"
runs=${BENCH_RUNS:-3}
tag=${BENCH_TAG:-bench-$(hostname -s)}
dir=${BENCHDIR:-/var/tmp/spx-bench}
mkdir -p "$dir"
export BENCHDIR=$dir
export SPX_BENCH_RESULTS=${SPX_BENCH_RESULTS:-$PWD/bench-results}

# host: the machine itself is the limit every later suite is measured
# against, so its report is the reference.
echo "== spx-bench host ($runs runs, tag $tag, disk under $dir)"
spx-bench host --tag "$tag" --runs "$runs" --dir "$dir"
# Later suites plug in here, each printing its figures beside the limit it
# measures in the same run (see bench/README.md), under a tag of its own:
# each writes its report as TAG/summary.md.
#   spx-bench s3, spx-bench block, spx-bench vm, spx-bench net
tags=$tag
for suite in s3 block vm net; do
	if spx-bench --list-verbs | grep -qx "$suite"; then
		echo "== spx-bench $suite ($runs runs, tag $tag-$suite)"
		spx-bench "$suite" --tag "$tag-$suite" --runs "$runs"
		tags="$tags $tag-$suite"
	fi
done
echo "== results in $SPX_BENCH_RESULTS: $tags; compare with: spx-bench compare $tag OTHER_TAG"
