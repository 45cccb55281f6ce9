#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-report (issue 25): the page of every real trace and of a
# synthetic one is well-formed (Python's html.parser, xml.etree on each
# SVG), fetches nothing, stays under 2 MB, and every figure in its data-*
# attributes equals trace-stats --json of the same trace
# (report_check.py); headless Chromium renders it (not blank, no console
# errors).  Then usage, bad input and the output file.

load helpers

CHECK="$BATS_TEST_DIRNAME/report_check.py"

# import SOURCE: the imported trace's path on stdout
import() {
	local out="$BATS_TEST_TMPDIR/$(basename "$1").tkt"
	trace-import -o "$out" "$1" || return 1
	printf '%s\n' "$out"
}

# check_report TRACE: its page against trace-stats --json
check_report() {
	local d=$BATS_TEST_TMPDIR
	trace-stats --json --steps --distributed -r all "$1" > "$d/stats.json" || return 1
	trace-report -o "$d/page.html" "$1" || return 1
	python3 "$CHECK" page "$d/page.html" "$d/stats.json" ||
		{ echo "$1: the page differs from trace-stats --json" >&2; return 1; }
}

@test "every trace of the test data: the page is well-formed and holds trace-stats --json's figures" {
	[ -d "$TK_SHARED/testdata" ] || skip "real test data not found: $TK_SHARED/testdata"
	n=0
	while IFS= read -r f; do
		t=$(import "$f")
		check_report "$t"
		n=$((n + 1))
		if under_valgrind || under_sanitizers; then
			[ "$n" -lt 4 ] || break
		fi
	done < <(find "$TK_SHARED/testdata" -type f \( -name '*.json' -o -name '*.json.gz' -o -name '*_gz.gz' \) |
	         xargs ls -S -r)
	echo "# $n traces" >&3
	if under_valgrind || under_sanitizers; then
		[ "$n" -eq 4 ]
	else
		[ "$n" -ge 30 ]
	fi
}

@test "a synthetic trace: steps, GPU, memory and every table in the page equal the JSON" {
	T=$(synth_trace s.tkt --steps 12 --layers 3)
	check_report "$T"
	d=$BATS_TEST_TMPDIR
	# each section is there, with its figures
	for k in data-busy-ns data-step= 'data-table="kernels"' 'data-table="ranges"' \
	         'data-hist="kernels"' data-allocated-peak-bytes; do
		grep -q -- "$k" "$d/page.html" || { echo "no $k" >&2; false; }
	done
	[ "$(grep -o 'data-step=' "$d/page.html" | wc -l)" -eq 12 ]
}

@test "the ranks of a job read together: a strip and a row per rank's GPU, figures of the whole" {
	[ -d "$TK_SHARED/testdata/param/dlrm_kineto" ] || skip "real test data not found: $TK_SHARED/testdata/param/dlrm_kineto"
	d=$BATS_TEST_TMPDIR
	ranks=()
	for f in "$TK_SHARED"/testdata/param/dlrm_kineto/worker*.json; do
		ranks+=("$(import "$f")")
		if under_valgrind || under_sanitizers; then
			[ "${#ranks[@]}" -lt 2 ] || break
		fi
	done
	[ "${#ranks[@]}" -ge 2 ]
	trace-stats --json --steps --distributed -r all "${ranks[@]}" > "$d/stats.json"
	trace-report -o "$d/page.html" "${ranks[@]}"
	python3 "$CHECK" page "$d/page.html" "$d/stats.json"
	# each rank has its own GPU: one strip each
	[ "$(grep -o 'data-strip=' "$d/page.html" | wc -l)" -eq "${#ranks[@]}" ]
	[ "$(jq '.gpus | length' "$d/stats.json")" -eq "${#ranks[@]}" ]
}

@test "the DLRM ranks merged with labels: the straggler of trace-stats --distributed in red, with its ratio" {
	[ -d "$TK_SHARED/testdata/param/dlrm_kineto" ] || skip "real test data not found: $TK_SHARED/testdata/param/dlrm_kineto"
	d=$BATS_TEST_TMPDIR
	n=8
	if under_valgrind || under_sanitizers; then n=2; fi
	t=() l=() dev=()
	i=0
	for f in $(ls "$TK_SHARED"/testdata/param/dlrm_kineto/worker*_step_12.*.pt.trace.json | head -n "$n"); do
		t+=("$(import "$f")")
		l+=(-l "worker$i")
		# the GPU of each rank, from its own trace
		dev+=("$(trace-stats --json -r gpu "${t[$i]}" | jq '.gpus[0].device')")
		i=$((i + 1))
	done
	trace-merge "${l[@]}" -o "$d/job.tkt" "${t[@]}"
	trace-stats --json --steps --distributed -r all "$d/job.tkt" > "$d/stats.json"
	trace-report -o "$d/page.html" "$d/job.tkt"
	python3 "$CHECK" page "$d/page.html" "$d/stats.json"
	# the rank the distributed view names (compute first, else per step)
	who=$(jq -r '[.findings[] | select(.type == "straggler")] | sort_by(.message | test("computes") | not) |
	             .[0] | "\(.name) \(.value)"' "$d/stats.json")
	if [ "$n" -eq 8 ]; then
		# 8 ranks: one lags by 1.2 times the others' median or more
		[[ "$who" == worker* ]]
		awk -v r="${who#* }" 'BEGIN { exit !(r >= 1.2) }'
	fi
	if [ "$who" = "null null" ]; then
		run -1 grep -q 'class="lag"' "$d/page.html"
		return 0
	fi
	k=${who%% *}
	k=${k#worker}
	# its strip, its row and the note: that rank's GPU, nothing else
	assert_eq "$(grep -o '<g class="lag" data-strip="[0-9-]*"' "$d/page.html" | grep -o '"[0-9-]*"' | tr -d '"')" "${dev[$k]}"
	assert_eq "$(grep -o '<tr class="lag" data-gpu="[0-9-]*"' "$d/page.html" | grep -o '"[0-9-]*"' | tr -d '"')" "${dev[$k]}"
	assert_eq "$(grep -o 'data-straggler-gpu="[0-9-]*"' "$d/page.html" | grep -o '"[0-9-]*"' | tr -d '"')" "${dev[$k]}"
	grep -q "data-straggler=\"worker$k\"" "$d/page.html"
	# the ratio is shown, and equals the JSON's
	grep -q "<b>Straggler: in red, $(printf '%.2f' "${who#* }")x.</b>" "$d/page.html"
	# the checker sees another rank named, or another ratio
	for cut in 's/data-straggler="worker[0-9]*"/data-straggler="workerX"/' \
	           's/data-ratio="\([0-9]\)/data-ratio="9\1/'; do
		sed "$cut" "$d/page.html" > "$d/bad.html"
		run -1 cmp -s "$d/page.html" "$d/bad.html"
		run python3 "$CHECK" page "$d/bad.html" "$d/stats.json"
		[ "$status" -eq 1 ] || { echo "$cut not caught" >&2; false; }
	done
}

@test "the checker can fail: a figure one off, a tag unclosed, a script, a remote image" {
	T=$(synth_trace s.tkt --steps 4 --layers 2)
	d=$BATS_TEST_TMPDIR
	check_report "$T"
	busy=$(grep -o 'data-busy-ns="[0-9]*"' "$d/page.html" | head -1 | tr -dc 0-9)
	for cut in "s/data-busy-ns=\"$busy\"/data-busy-ns=\"$((busy + 1))\"/" \
	           's/data-p95-ns="\([0-9]*\)"/data-p95-ns="1\1"/' \
	           's/data-cpu="\([0-9]*\)"/data-cpu="1\1"/' \
	           's|</table>||' 's|</svg>|<rect></svg>|' \
	           's|<body>|<body><script>1</script>|' \
	           's|<body>|<body><img src="http://example.com/x.png">|' \
	           '0,/<tr data-table="kernels"/s//<tr data-table="kernelz"/' \
	           's/data-n="\([0-9]*\)"/data-n="9\1"/' \
	           's/data-bins-ns="\([0-9]*\)"/data-bins-ns="1\1"/' \
	           's/data-user-ns="\([0-9]*\)"/data-user-ns="1\1"/' \
	           '0,/<li class="[a-z]*" data-finding="[a-z_]*"/s//<li class="note" data-finding="hotspot"/' \
	           's/data-value="\([0-9]\)/data-value="9\1/' \
	           's/\(data-finding=.*<\/b>\) /\1 x/' \
	           '0,/<li .*data-finding=.*<\/li>/s///' \
	           's/data-span-ns="\([0-9]*\)"/data-span-ns="1\1"/' \
	           's/data-table-ns="\([0-9]*\)"/data-table-ns="1\1"/' \
	           's/data-idle-ns="\([0-9]*\)"/data-idle-ns="1\1"/' \
	           's/data-instances-ns="\([0-9]*\)"/data-instances-ns="1\1"/'; do
		sed "$cut" "$d/page.html" > "$d/bad.html"
		run -1 cmp -s "$d/page.html" "$d/bad.html"
		run python3 "$CHECK" page "$d/bad.html" "$d/stats.json"
		[ "$status" -eq 1 ] || { echo "$cut not caught" >&2; false; }
	done
}

# shoot PAGE PNG: a screenshot by headless Chromium; its log in PNG.log
shoot() {
	timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
		--user-data-dir="$BATS_TEST_TMPDIR/chromium" --enable-logging=stderr --v=0 \
		--window-size=1280,2000 --screenshot="$2" "file://$1" > "$2.log" 2>&1
}

@test "the page renders in headless Chromium: not blank, no console errors" {
	CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
	[ -n "$CHROMIUM" ] || skip "Chromium not found (Debian package chromium)"
	if under_valgrind || under_sanitizers; then skip "the plain build renders the pages"; fi
	d=$BATS_TEST_TMPDIR
	T=$(synth_trace s.tkt --steps 8 --layers 3)
	pages=("$T")
	[ -d "$TK_SHARED/testdata" ] &&
		pages+=("$(import "$TK_SHARED/testdata/hta/trace_diff/control/control.json.gz")")
	for t in "${pages[@]}"; do
		trace-report -o "$d/page.html" "$t"
		shoot "$d/page.html" "$d/shot.png"
		python3 "$CHECK" png "$d/shot.png"
		run -1 grep -E 'CONSOLE|Uncaught|Refused to' "$d/shot.png.log"
	done
	# the check sees a blank page
	printf '<!DOCTYPE html><html><body></body></html>\n' > "$d/blank.html"
	shoot "$d/blank.html" "$d/blank.png"
	run python3 "$CHECK" png "$d/blank.png"
	[ "$status" -eq 1 ]
}

@test "stdin, -o - and a page that stays small on a long trace" {
	T=$(synth_trace s.tkt --steps 600 --layers 2)
	d=$BATS_TEST_TMPDIR
	trace-report < "$T" > "$d/a.html"
	trace-report -o - "$T" > "$d/b.html"
	# the same page but for the input's name
	diff <(grep -v -e "$T" -e stdin "$d/a.html") <(grep -v -e "$T" -e stdin "$d/b.html")
	[ "$(grep -c -e "$T" "$d/b.html")" -eq 2 ]
	trace-stats --json --steps -r all "$T" > "$d/stats.json"
	python3 "$CHECK" page "$d/a.html" "$d/stats.json"
	[ "$(stat -c %s "$d/a.html")" -lt 2000000 ]
	# the bars of the first 400 steps, the totals of all 600
	[ "$(grep -o 'data-step=' "$d/a.html" | wc -l)" -eq 400 ]
	grep -q 'data-steps="600"' "$d/a.html"
}

@test "bad input: one line, exit 1; usage errors exit 2; no half-written page" {
	d=$BATS_TEST_TMPDIR
	run trace-report -o "$d/x.html" "$d/missing.tkt"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "${lines[0]}" == "trace-report: $d/missing.tkt: "* ]]
	[ ! -e "$d/x.html" ]
	printf 'not a trace at all' > "$d/junk"
	run trace-report -o "$d/x.html" "$d/junk"
	[ "$status" -eq 1 ]
	[[ "${lines[0]}" == "trace-report: $d/junk: "* ]]
	[ ! -e "$d/x.html" ]
	run trace-report --top 0 "$d/junk"
	[ "$status" -eq 2 ]
	run trace-report --bogus
	[ "$status" -eq 2 ]
	T=$(synth_trace s.tkt --steps 2 --layers 1)
	run trace-report -o "$d/no/such/dir/x.html" "$T"
	[ "$status" -eq 2 ]
	[[ "$output" == "trace-report: $d/no/such/dir/x.html: "* ]]
	run -0 trace-report --help
	[[ "$output" == *"Usage: trace-report"* ]]
	run -0 trace-report --version
	[[ "$output" == "trace-report (tracekit) "* ]]
	# a closed pipe is not an error to report
	run bash -c "trace-report '$T' | head -c 10 >/dev/null; echo \${PIPESTATUS[0]}"
	[[ "$output" == 0 || "$output" == 141 ]]
}

@test "--top, --hist and --output: rows and histograms per table" {
	T=$(synth_trace s.tkt --steps 4 --layers 3)
	d=$BATS_TEST_TMPDIR
	nk=$(trace-stats --json -r kernels "$T" | jq '.kernels | length')
	[ "$nk" -gt 3 ]
	trace-report --top 3 --hist 2 --output "$d/p.html" "$T"
	[ "$(grep -o 'data-table="kernels"' "$d/p.html" | wc -l)" -eq 3 ]
	[ "$(grep -o 'data-hist="kernels"' "$d/p.html" | wc -l)" -eq 2 ]
	trace-report -n 1000 --hist 0 -o "$d/q.html" "$T"
	[ "$(grep -o 'data-table="kernels"' "$d/q.html" | wc -l)" -eq "$nk" ]
	run -1 grep -q 'data-hist=' "$d/q.html"
}

@test "each bad option value: its own message, exit 2, no page" {
	d=$BATS_TEST_TMPDIR
	T=$(synth_trace s.tkt --steps 2 --layers 1)
	while IFS='|' read -r opt want; do
		run -2 trace-report $opt -o "$d/p.html" "$T"
		assert_eq "${lines[0]}" "trace-report: $want"
		[ ! -e "$d/p.html" ]
	done <<-'EOF2'
	--output=|invalid --output ''
	--top abc|invalid --top 'abc' (1 to 1000)
	--top 1001|invalid --top '1001' (1 to 1000)
	-n 0|invalid --top '0' (1 to 1000)
	--hist x|invalid --hist 'x' (0 to 100)
	--hist 101|invalid --hist '101' (0 to 100)
	EOF2
}

@test "a trace cut short: the page of what was read, its one warning, exit 1" {
	d=$BATS_TEST_TMPDIR
	T=$(synth_trace s.tkt --steps 40 --layers 2 --chunk-bytes 4096)
	size=$(stat -c %s "$T")
	head -c $((size * 2 / 3)) "$T" > "$d/cut.tkt"
	run --separate-stderr trace-report -o "$d/p.html" "$d/cut.tkt"
	[ "$status" -eq 1 ]
	assert_eq "${#stderr_lines[@]}" 1
	[[ "$stderr" == "trace-report: $d/cut.tkt: "* ]]
	# the page holds what trace-stats reads of the same bytes
	trace-stats --json --steps --distributed -r all "$d/cut.tkt" > "$d/stats.json" || [ $? -eq 1 ]
	[ "$(jq .run.events "$d/stats.json")" -gt 0 ]
	python3 "$CHECK" page "$d/p.html" "$d/stats.json"
}

@test "events lost by the recorder and 33 inputs: the header says so" {
	d=$BATS_TEST_TMPDIR
	cat > "$d/desc" <<-'EOF2'
	{"def":"process","ref":"p","pid":100,"host":"h","argv":["python3"],"start":1000}
	{"def":"thread","ref":"t","process":"p","tid":101,"name":"main"}
	{"def":"device","ref":"d","index":0,"name":"NVIDIA H100","sm_count":132}
	{"def":"stream","ref":"s","process":"p","device":"d","stream":7,"context":1}
	{"kind":"api","track":"t","ts":1500,"dur":100,"name":"cudaLaunchKernel"}
	{"kind":"kernel","track":"s","ts":2000,"dur":500,"name":"k1"}
	{"kind":"dropped","track":"t","ts":3000,"count":12,"reason":"buffer full"}
	EOF2
	mktrace < "$d/desc" > "$d/lost.tkt"
	trace-report -o "$d/p.html" "$d/lost.tkt"
	grep -q '<dd>12 events lost by the recorder</dd>' "$d/p.html"
	trace-stats --json --steps --distributed -r all "$d/lost.tkt" > "$d/stats.json"
	python3 "$CHECK" page "$d/p.html" "$d/stats.json"
	# 33 inputs: 32 named, then how many more; the events of all
	files=()
	for i in $(seq 1 33); do
		cp "$d/lost.tkt" "$d/in$i.tkt"
		files+=("$d/in$i.tkt")
	done
	trace-report -o "$d/q.html" "${files[@]}"
	[ "$(grep -c "<dd>$d/in[0-9]*.tkt</dd>" "$d/q.html")" -eq 32 ]
	grep -q '<dd>and 1 more</dd>' "$d/q.html"
	grep -q "<dd>$d/in32.tkt</dd>" "$d/q.html"
	run -1 grep -q "<dd>$d/in33.tkt</dd>" "$d/q.html"
	grep -q '<dd>396 events lost by the recorder</dd>' "$d/q.html"
	# (report_check.py keys GPU rows by index, and these 33 are all GPU 0)
	grep -q "data-events=\"$((33 * $(trace-dump "$d/lost.tkt" | wc -l)))\"" "$d/q.html"
	[ "$(grep -c '<tr data-gpu="0"' "$d/q.html")" -eq 33 ]
}
