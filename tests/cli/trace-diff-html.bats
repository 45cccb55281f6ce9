#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-diff --html FILE (issue 25): the comparison as a page in
# trace-report's style, its figures against trace-diff --json of the
# same comparison (report_check.py diff), rendered by headless Chromium.

load helpers

CHECK="$BATS_TEST_DIRNAME/report_check.py"

@test "--html: run-wide rows, verdicts, waterfalls and histograms equal trace-diff --json" {
	A=$(synth_trace a.tkt --steps 10 --layers 3)
	B=$(synth_trace b.tkt --steps 10 --layers 3 --seed 3 --slow flash_fwd=1.5)
	d=$BATS_TEST_TMPDIR
	run trace-diff --html "$d/p.html" "$A" "$B"
	# the text goes on as before
	[[ "$output" == *"Summary"* ]]
	trace-diff --json "$A" "$B" > "$d/diff.json" || [ "$?" -eq 1 ]  # 1: slower
	python3 "$CHECK" diff "$d/p.html" "$d/diff.json"
	# the slower kernel is there, with its two distributions
	grep -q 'data-verdict="slower"' "$d/p.html"
	grep -q 'data-before-count=' "$d/p.html"
	# the checker can fail
	for cut in 's/data-delta-ns="\([0-9]*\)"/data-delta-ns="1\1"/' \
	           's/data-before-ns="\([0-9]*\)"/data-before-ns="1\1"/' \
	           's/data-after-count="\([0-9]*\)"/data-after-count="1\1"/' \
	           '0,/data-metric="wall" data-before="/s//data-metric="wall" data-before="9/' \
	           's|</table>||'; do
		sed "$cut" "$d/p.html" > "$d/bad.html"
		run -1 cmp -s "$d/p.html" "$d/bad.html"
		run python3 "$CHECK" diff "$d/bad.html" "$d/diff.json"
		[ "$status" -eq 1 ] || { echo "$cut not caught" >&2; false; }
	done
}

@test "--html with a real pair of traces, and in headless Chromium" {
	shared_data hta/trace_diff/control/control.json.gz C
	shared_data hta/trace_diff/test/test.json.gz T
	d=$BATS_TEST_TMPDIR
	trace-import -o "$d/c.tkt" "$C"
	trace-import -o "$d/t.tkt" "$T"
	trace-diff -q --html "$d/p.html" "$d/c.tkt" "$d/t.tkt" || [ "$?" -eq 1 ]
	trace-diff --json "$d/c.tkt" "$d/t.tkt" > "$d/diff.json" || [ "$?" -eq 1 ]
	python3 "$CHECK" diff "$d/p.html" "$d/diff.json"
	CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
	[ -n "$CHROMIUM" ] || skip "Chromium not found (Debian package chromium)"
	if under_valgrind || under_sanitizers; then skip "the plain build renders the pages"; fi
	timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
		--user-data-dir="$d/chromium" --enable-logging=stderr --v=0 \
		--window-size=1280,2000 --screenshot="$d/shot.png" "file://$d/p.html" > "$d/log" 2>&1
	python3 "$CHECK" png "$d/shot.png"
	run -1 grep -E 'CONSOLE|Uncaught|Refused to' "$d/log"
}

@test "--html to a file that cannot be written: exit 2, one line" {
	A=$(synth_trace a.tkt --steps 2 --layers 1)
	d=$BATS_TEST_TMPDIR
	run trace-diff -q --html "$d/no/such/p.html" "$A" "$A"
	[ "$status" -eq 2 ]
	[[ "$output" == "trace-diff: $d/no/such/p.html: "* ]]
	run -0 trace-diff --help
	[[ "$output" == *"--html FILE"* ]]
}
