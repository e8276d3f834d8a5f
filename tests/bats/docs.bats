#!/usr/bin/env bats
# The generated documents match the code, and every page has its sections.

load helpers

@test "man/spinifex.toml.5 matches the configuration schema" {
	"$SPX_TOP/scripts/gen-man-conf.sh" "$SPX_BUILD/bin" "$BATS_TEST_TMPDIR/spinifex.toml.5"
	diff -u "$SPX_TOP/man/spinifex.toml.5" "$BATS_TEST_TMPDIR/spinifex.toml.5"
}

@test "completions/ match the verb tables" {
	"$SPX_TOP/scripts/gen-completions.sh" "$SPX_BUILD/bin" "$BATS_TEST_TMPDIR/c"
	for f in "$BATS_TEST_TMPDIR"/c/*; do
		diff -u "$SPX_TOP/completions/$(basename "$f")" "$f"
	done
}

@test "bash completion completes verbs and options" {
	source "$SPX_TOP/completions/spx.bash"
	COMP_WORDS=(spx adm); COMP_CWORD=1; _spx
	[[ " ${COMPREPLY[*]} " == *" admin "* ]]
	COMP_WORDS=(spx admin in); COMP_CWORD=2; _spx
	[ "${COMPREPLY[*]}" = init ]
	COMP_WORDS=(spx admin init --ro); COMP_CWORD=3; _spx
	[ "${COMPREPLY[*]}" = --root ]
	source "$SPX_TOP/completions/spx-gw.bash"
	COMP_WORDS=(spx-gw se); COMP_CWORD=1; _spx_gw
	[ "${COMPREPLY[*]}" = serve ]
}

@test "every tool has a man page with the conventional sections" {
	for t in "$SPX_TOP"/bin/*; do
		n=$(basename "$t")
		page=$(ls "$SPX_TOP"/man/"$n".[0-9])
		for s in NAME SYNOPSIS DESCRIPTION "EXIT STATUS" EXAMPLES "SEE ALSO"; do
			grep -q "^\.Sh $s$" "$page" || { echo "$page lacks $s"; false; }
		done
	done
	for s in NAME DESCRIPTION EXAMPLES "SEE ALSO"; do
		grep -q "^\.Sh $s$" "$SPX_TOP/man/spinifex.toml.5"
	done
}

@test "the man pages render without warnings" {
	command -v groff >/dev/null || skip "groff is not installed"
	for p in "$SPX_TOP"/man/*.[0-9]; do
		run bash -c "groff -mandoc -Tutf8 -ww -z '$p' 2>&1"
		[ -z "$output" ] || { echo "$p: $output"; false; }
	done
}

@test "--help of every verb comes from the table" {
	run spx admin init --help
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "usage: spx admin init [--root DIR] [--nodes N]"* ]]
	[[ "$output" == *"--ec2-port PORT"*"the EC2/STS API port"* ]]
	run spx-gw serve --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--notify-fd FD"* ]]
}

# The README's block of SUITE's figures is bench/results/SUITE.md, word
# for word.
readme_results() {
	local b="<!-- spx-bench $1 results: bench/results/$1.md, written by scripts/bench-readme.sh -->"
	local e="<!-- end of spx-bench $1 results -->"
	[ -f "$SPX_TOP/bench/results/$1.md" ]
	[ "$(grep -cxF "$b" "$SPX_TOP/README.md")" -eq 1 ]
	[ "$(grep -cxF "$e" "$SPX_TOP/README.md")" -eq 1 ]
	awk -v b="$b" -v e="$e" '$0 == e { on = 0 } on { print } $0 == b { on = 1 }' \
		"$SPX_TOP/README.md" >"$BATS_TEST_TMPDIR/$1.md"
	diff -u "$SPX_TOP/bench/results/$1.md" "$BATS_TEST_TMPDIR/$1.md"
	# and the file is what spx-bench writes, not a table typed in
	grep -q "^spx-bench $1, tag [A-Za-z0-9._-]*: [0-9]* runs\\?, " "$SPX_TOP/bench/results/$1.md"
}

@test "the README's S3 figures are the committed results file, word for word" {
	readme_results s3
	grep -q '^| figure | spx | limit (same runs) | ratio | verdict |$' "$SPX_TOP/bench/results/s3.md"
}

@test "the README's block figures are the committed results file, word for word" {
	readme_results block
	local f="$SPX_TOP/bench/results/block.md"
	grep -q '^| test | host | plain nbdkit | spx volume | nbdkit/host | volume/host | volume/nbdkit | verdict |$' "$f"
	grep -q '^| figure | measured | limit (same runs) | ratio | verdict |$' "$f"
	grep -q '^| incremental snapshot: uploaded | ' "$f"
	grep -q '^| restore --eager: rate | .* | object store GET, 4 threads: ' "$f"
	# a real run, full size
	! grep -q '^- --quick: ' "$f"
	grep -q '^Snapshots, in each run on the same node: a thin volume of 10 GiB, 2 GiB of random bytes' "$f"
}

@test "the README's instance figures are the committed results file, word for word" {
	readme_results vm
	local f="$SPX_TOP/bench/results/vm.md"
	grep -q '^| boot, from the request (API polled every 50 ms) | instance, median \[min-max\] | limit: spx-vm start, no API | limit, median \[min-max\] | instance/limit |$' "$f"
	grep -q '^| to an SSH login with the key | ' "$f"
	grep -q '^| DescribeInstances, 1000 records | ' "$f"
	! grep -q '^- --quick: ' "$f"
}

@test "bench-readme.sh refuses a file that is not a summary, and a --quick run" {
	printf 'hello\n' >"$BATS_TEST_TMPDIR/x.md"
	run "$SPX_TOP/scripts/bench-readme.sh" "$BATS_TEST_TMPDIR/x.md"
	[ "$status" -eq 100 ]
	[ "$output" = "bench-readme.sh: '$BATS_TEST_TMPDIR/x.md' is not an spx-bench s3, block or vm summary" ]
	# the first line of one suite, the table of the other
	{ echo 'spx-bench block, tag t: 1 run, 2026-12-01T00:00:00Z to 2026-12-01T00:00:00Z.'
	  echo '| figure | spx | limit (same runs) | ratio | verdict |'; } >"$BATS_TEST_TMPDIR/x.md"
	run "$SPX_TOP/scripts/bench-readme.sh" "$BATS_TEST_TMPDIR/x.md"
	[ "$status" -eq 100 ]
	[[ "$output" == *"is not an spx-bench s3, block or vm summary" ]]
	{ echo 'spx-bench block, tag t: 1 run, 2026-12-01T00:00:00Z to 2026-12-01T00:00:00Z.'
	  echo '- --quick: tiny jobs and volumes, to test the suite; these are not figures to read'
	  echo '| test | host | plain nbdkit | spx volume | nbdkit/host | volume/host | volume/nbdkit | verdict |'; } >"$BATS_TEST_TMPDIR/x.md"
	cp "$SPX_TOP/README.md" "$BATS_TEST_TMPDIR/README.before"
	run "$SPX_TOP/scripts/bench-readme.sh" "$BATS_TEST_TMPDIR/x.md"
	[ "$status" -eq 100 ]
	[ "$output" = "bench-readme.sh: '$BATS_TEST_TMPDIR/x.md' is a --quick run, not figures to read" ]
	cmp "$SPX_TOP/README.md" "$BATS_TEST_TMPDIR/README.before"
}
