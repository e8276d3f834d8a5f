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

@test "the README's S3 figures are the committed results file, word for word" {
	local b='<!-- spx-bench s3 results: bench/results/s3.md, written by scripts/bench-readme.sh -->'
	local e='<!-- end of spx-bench s3 results -->'
	[ -f "$SPX_TOP/bench/results/s3.md" ]
	awk -v b="$b" -v e="$e" '$0 == e { on = 0 } on { print } $0 == b { on = 1 }' \
		"$SPX_TOP/README.md" >"$BATS_TEST_TMPDIR/block"
	diff -u "$SPX_TOP/bench/results/s3.md" "$BATS_TEST_TMPDIR/block"
	# and the file is what spx-bench s3 writes, not a table typed in
	grep -q '^spx-bench s3, tag [A-Za-z0-9._-]*: [0-9]* runs\?, ' "$SPX_TOP/bench/results/s3.md"
	grep -q '^| figure | spx | limit (same runs) | ratio | verdict |$' "$SPX_TOP/bench/results/s3.md"
}

@test "bench-readme.sh refuses a file that is not a summary" {
	printf 'hello\n' >"$BATS_TEST_TMPDIR/x.md"
	run "$SPX_TOP/scripts/bench-readme.sh" "$BATS_TEST_TMPDIR/x.md"
	[ "$status" -eq 100 ]
	[[ "$output" == *"is not an spx-bench s3 summary"* ]]
}
