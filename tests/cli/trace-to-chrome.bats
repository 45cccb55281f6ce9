#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-to-chrome: Chrome Trace Event JSON.  Expected figures come from
# trace-dump --json (jq, python) and from the format's rules in chrome.jq,
# never from trace-to-chrome itself.

load helpers

CHECKS="$BATS_TEST_DIRNAME"

setup() {
	T=$(synth_trace run.tkt --steps 3 --layers 2)
	J=$BATS_TEST_TMPDIR/run.json
}

# Structural checks of a Chrome JSON file: prints what is wrong, if anything.
structure() {
	jq -c -L "$CHECKS" 'include "chrome";
		{bad_fields: (bad_fields | length), nesting: nesting_errors,
		 b_e: b_e_mixed, unpaired_flows: unpaired_flows,
		 unbound_flows: (unbound_flows | length), unpaired_async: unpaired_async}' "$1"
}
STRUCTURE_OK='{"bad_fields":0,"nesting":[],"b_e":0,"unpaired_flows":[],"unbound_flows":0,"unpaired_async":[]}'

# mktrace from a here-document
fixture() {
	mktrace > "$BATS_TEST_TMPDIR/$1"
	printf '%s\n' "$BATS_TEST_TMPDIR/$1"
}

@test "valid JSON, quiet, and every event has the fields its phase needs" {
	run -0 --separate-stderr trace-to-chrome -o "$J" "$T"
	assert_eq "$output$stderr" ""
	jq -e '.traceEvents | length > 0' "$J" > /dev/null
	assert_eq "$(structure "$J")" "$STRUCTURE_OK"
}

@test "counts per phase and names match trace-dump" {
	trace-to-chrome "$T" > "$J"
	expect=$(trace-dump --json "$T" | jq -s -c '{
		X: map(select(.kind | IN("range","api","kernel","memcpy","memset","sync","overhead","process","run"))) | length,
		i: map(select(.kind | IN("mark","memory","dropped"))) | length,
		C: map(select(.kind == "counter")) | length,
		b: map(select(.kind == "async_range")) | length}')
	got=$(jq -c '.traceEvents | {
		X: map(select(.ph == "X")) | length, i: map(select(.ph == "i")) | length,
		C: map(select(.ph == "C")) | length, b: map(select(.ph == "b")) | length}' "$J")
	assert_eq "$got" "$expect"
	for kc in kernel:kernel memcpy:gpu_memcpy memset:gpu_memset api:cuda_runtime range:nvtx; do
		want=$(trace-dump --json -k "${kc%%:*}" "$T" | jq -r .name | sort | md5sum)
		have=$(jq -r --arg c "${kc#*:}" '.traceEvents[] | select(.ph == "X" and .cat == $c) | .name' "$J" | sort | md5sum)
		assert_eq "$have" "$want"
	done
	# otherData counts what it read
	assert_eq "$(jq .otherData.tracekit.events_read "$J")" "$(trace-dump "$T" | wc -l)"
}

@test "timestamps: microseconds since the stated start, nanoseconds exact" {
	trace-to-chrome "$T" > "$J"
	run -0 python3 - "$J" <(trace-dump --json -k kernel,memcpy,memset "$T") <<'PY'
import json, sys
from decimal import Decimal
d = json.load(open(sys.argv[1]), parse_float=Decimal)
base = int(d["otherData"]["tracekit"]["trace_start_ns"])
assert d["baseTimeNanoseconds"] == base
gpu = {}
for e in d["traceEvents"]:
    if e["ph"] == "X" and e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset"):
        ts = Decimal(e["ts"]) * 1000
        assert ts == ts.to_integral_value(), e["ts"]   # at most 3 decimals
        gpu[e["args"]["correlation"]] = (int(ts) + base, Decimal(e["dur"]))
n = 0
for line in open(sys.argv[2]):
    r = json.loads(line)
    ts, dur = gpu[r["correlation"]]
    assert ts == r["ts"], (ts, r["ts"])
    assert round(dur * 1000) == r["dur"], (dur, r["dur"])
    n += 1
assert n == len(gpu) > 0
print(n)
PY
	[ "$output" -gt 50 ]
	# the earliest event of a sorted trace is the start: ts 0
	assert_eq "$(jq '[.traceEvents[] | select(.ts != null) | .ts] | min' "$J")" 0
	[[ "$(jq -r .otherData.tracekit.trace_start_utc "$J")" == 2023-11-14T22:13:20.* ]]
}

@test "layout: a lane per process and per GPU, a track per thread and stream" {
	trace-to-chrome "$T" > "$J"
	run -0 jq -r '.traceEvents[] | select(.ph == "M" and .name == "process_name") | .args.name' "$J"
	assert_eq "$(printf '%s\n' "${lines[@]}" | sort | paste -sd,)" "GPU 0: NVIDIA H100 80GB HBM3,python3"
	run -0 jq -r '.traceEvents[] | select(.ph == "M" and .name == "thread_name") | .args.name' "$J"
	for t in python3 pt_data_worker "stream 7 (compute)" "stream 13 (copy)" "stream 21 (nccl)"; do
		printf '%s\n' "${lines[@]}" | grep -qxF "$t"
	done
	# CPU processes sort before GPUs
	run -0 jq -c '[.traceEvents[] | select(.name == "process_sort_index")] as $s
		| [.traceEvents[] | select(.name == "process_name")
		   | {n: .args.name, s: (.pid as $p | $s[] | select(.pid == $p) | .args.sort_index)}]
		| sort_by(.s) | map(.n)' "$J"
	assert_eq "$output" '["python3","GPU 0: NVIDIA H100 80GB HBM3"]'
	# kernels sit on their stream's track of the GPU lane, with their attributes
	run -0 jq -c '[.traceEvents[] | select(.ph == "X" and .cat == "kernel")][0].args
		| [.grid, .block, ."registers per thread", ."shared memory", .device, .stream]' "$J"
	assert_eq "$output" '[[264,1,1],[256,1,1],238,73728,0,7]'
	run -0 jq -c '[.traceEvents[] | select(.ph == "X" and .cat == "gpu_memcpy")][0].args
		| [.bytes, ."copy kind", (."memory bandwidth (GB/s)" > 1)]' "$J"
	assert_eq "$output" '[8388608,"HtoD",true]'
	# run metadata and devices in the top-level object
	assert_eq "$(jq -r '.otherData.command' "$J")" "python3 train.py --model gpt-small --batch-size 32"
	assert_eq "$(jq -r '.deviceProperties[0] | "\(.name) \(.numSms)"' "$J")" "NVIDIA H100 80GB HBM3 132"
}

@test "flows: one arrow from each launching call to its GPU work" {
	trace-to-chrome "$T" > "$J"
	# GPU work whose correlation id belongs to an API call, from trace-dump
	want=$(trace-dump --json -k api,kernel,memcpy,memset "$T" | jq -s '
		(map(select(.kind == "api") | .correlation) | unique) as $calls
		| map(select(.kind != "api" and (.correlation as $c | $calls | index($c))))
		| length')
	[ "$want" -gt 50 ]
	assert_eq "$(jq '[.traceEvents[] | select(.ph == "s")] | length' "$J")" "$want"
	assert_eq "$(jq '[.traceEvents[] | select(.ph == "f" and .bp == "e")] | length' "$J")" "$want"
	# each arrow joins the call and the work of one correlation id
	run -0 jq -c '
		[.traceEvents[] | select(.ph == "X" and .args.correlation != null)
		 | {k: "\(.pid)/\(.tid)/\(.ts)", c: .args.correlation, cat}] as $x
		| [.traceEvents[] | select(.ph == "s" or .ph == "f")
		   | . as $f | {id, ph, c: ([$x[] | select(.k == "\($f.pid)/\($f.tid)/\($f.ts)")
		                             | select((.cat == "cuda_runtime") == ($f.ph == "s"))
		                             | .c] | first)}]
		| group_by(.id) | map(select(length != 2 or .[0].c == null or .[0].c != .[1].c))
		| length' "$J"
	assert_eq "$output" 0
	assert_eq "$(structure "$J")" "$STRUCTURE_OK"
	assert_eq "$(jq .otherData.tracekit.flows "$J")" "$want"
}

@test "--no-flows and --no-counters leave them out" {
	trace-to-chrome --no-flows --no-counters "$T" > "$J"
	assert_eq "$(jq '[.traceEvents[] | select(.ph | IN("s","t","f","C"))] | length' "$J")" 0
	assert_eq "$(jq '[.traceEvents[] | select(.ph == "X")] | length' "$J")" \
	          "$(trace-to-chrome "$T" | jq '[.traceEvents[] | select(.ph == "X")] | length')"
	trace-to-chrome "$T" > "$J"
	assert_eq "$(jq -c '[.traceEvents[] | select(.ph == "C") | .name] | unique' "$J")" \
	          '["cpu","device memory","rss"]'
}

@test "--from and --to keep the events that overlap the window" {
	trace-to-chrome --from 151ms --to 153ms "$T" > "$J"
	# independently: relative to the earliest event, overlapping [151ms, 153ms]
	want=$(trace-dump --json "$T" | jq -s '(map(.ts) | min) as $b
		| map(select(.ts + .dur - $b >= 151000000 and .ts - $b <= 153000000)) | length')
	have=$(jq '[.traceEvents[] | select(.ph | IN("X","i","C","b"))] | length' "$J")
	[ "$want" -gt 10 ]
	assert_eq "$have" "$want"
	assert_eq "$(structure "$J")" "$STRUCTURE_OK"
	run -2 --separate-stderr trace-to-chrome --from 2s --to 1s "$T"
	assert_eq "$stderr" "$(printf '%s\n' "trace-to-chrome: --to must not be before --from" \
	                                      "Try 'trace-to-chrome --help' for more information.")"
	run -2 --separate-stderr trace-to-chrome --from soon "$T"
	assert_eq "${stderr_lines[0]}" "trace-to-chrome: invalid --from 'soon' (a duration such as 1.5s or 200ms)"
}

@test "--name keeps matching events, counters and notices" {
	trace-to-chrome --name '^(cudaLaunchKernel|layer\.[0-9]+)$' "$T" > "$J"
	want=$(trace-dump --json "$T" | jq -s '[.[] | select(.name | test("^(cudaLaunchKernel|layer\\.[0-9]+)$"))] | length')
	assert_eq "$(jq '[.traceEvents[] | select(.ph == "X")] | length' "$J")" "$want"
	assert_eq "$(jq '[.traceEvents[] | select(.ph == "X") | .name] | unique | length' "$J")" 3
	[ "$(jq '[.traceEvents[] | select(.ph == "C")] | length' "$J")" -gt 0 ]
	run -2 --separate-stderr trace-to-chrome --name '(' "$T"
	[[ "${stderr_lines[0]}" == "trace-to-chrome: invalid --name '(': "* ]]
}

@test "overlapping GPU work goes to an extra track; nothing is lost" {
	F=$(fixture ov.tkt <<'EOF'
{"def":"process","ref":"p","pid":100,"host":"h","argv":["/usr/bin/python3"],"start":1000}
{"def":"thread","ref":"t","process":"p","tid":100,"name":"main"}
{"def":"device","ref":"d","index":0,"name":"NVIDIA H100 80GB HBM3","sm_count":132}
{"def":"stream","ref":"s","process":"p","device":"d","stream":7,"context":1}
{"kind":"range","track":"t","ts":1500,"dur":2000,"name":"outer"}
{"kind":"range","track":"t","ts":3400,"dur":300,"name":"crosses outer's end"}
{"kind":"kernel","track":"s","ts":3000,"dur":1000,"name":"k1"}
{"kind":"kernel","track":"s","ts":3500,"dur":1000,"name":"k2 (programmatic dependent launch)"}
{"kind":"kernel","track":"s","ts":3600,"dur":1000,"name":"k3"}
{"kind":"kernel","track":"s","ts":4700,"dur":100,"name":"k4"}
EOF
)
	trace-to-chrome "$F" > "$J"
	assert_eq "$(structure "$J")" "$STRUCTURE_OK"
	assert_eq "$(jq '[.traceEvents[] | select(.ph == "X")] | length' "$J")" 6
	# k1 and k4 stay on stream 7, k2 and k3 each need an extra track
	run -0 jq -r '(.traceEvents | map(select(.name == "thread_name")) | map({key: "\(.pid)/\(.tid)", value: .args.name}) | from_entries) as $n
		| .traceEvents[] | select(.ph == "X") | "\(.name)\t\($n["\(.pid)/\(.tid)"])"' "$J"
	printf '%s\n' "${lines[@]}" | grep -qxF "$(printf 'k1\tstream 7')"
	printf '%s\n' "${lines[@]}" | grep -qxF "$(printf 'k4\tstream 7')"
	printf '%s\n' "${lines[@]}" | grep -qxF "$(printf 'k2 (programmatic dependent launch)\tstream 7 (overlap 1)')"
	printf '%s\n' "${lines[@]}" | grep -qxF "$(printf 'k3\tstream 7 (overlap 2)')"
	printf '%s\n' "${lines[@]}" | grep -qxF "$(printf "crosses outer's end\tmain (overlap 1)")"
	assert_eq "$(jq .otherData.tracekit.slices_moved_to_overlap_tracks "$J")" 3
	# the checker fails on the same events put on one track
	jq '.traceEvents |= map(if .ph == "X" and .cat == "kernel" then .tid = 7 else . end)' "$J" > "$BATS_TEST_TMPDIR/naive.json"
	[ "$(structure "$BATS_TEST_TMPDIR/naive.json" | jq '.nesting | length')" -eq 2 ]
}

@test "unsorted input (spans written when they end) nests like sorted input" {
	S=$BATS_TEST_TMPDIR
	python3 "$CHECKS/chrome-nested.py" --spans 1500 --order begin --watermarks | mktrace > "$S/sorted.tkt"
	python3 "$CHECKS/chrome-nested.py" --spans 1500 --order end --watermarks | mktrace > "$S/ended.tkt"
	trace-to-chrome "$S/sorted.tkt" > "$S/a.json"
	trace-to-chrome "$S/ended.tkt" > "$S/b.json"
	assert_eq "$(structure "$S/b.json")" "$STRUCTURE_OK"
	# the same slices on the same tracks, the same arrows
	x() { jq -c '[.traceEvents[] | select(.ph == "X") | [.pid, .tid, .ts, .dur, .name]] | sort' "$1" | md5sum; }
	assert_eq "$(x "$S/b.json")" "$(x "$S/a.json")"
	assert_eq "$(jq .otherData.tracekit.slices_moved_to_overlap_tracks "$S/b.json")" 0
	assert_eq "$(jq .otherData.tracekit.flows "$S/b.json")" \
	          "$(trace-dump --json -k kernel "$S/ended.tkt" | wc -l)"
	# watermarks bound the memory: far less held than the whole trace
	[ "$(jq .otherData.tracekit.slices_released_early "$S/b.json")" -eq 0 ]
}

@test "without watermarks and little memory, late slices still nest" {
	S=$BATS_TEST_TMPDIR
	python3 "$CHECKS/chrome-nested.py" --spans 1500 --order end | mktrace > "$S/ended.tkt"
	trace-to-chrome --buffer 0 "$S/ended.tkt" > "$J"
	assert_eq "$(structure "$J")" "$STRUCTURE_OK"
	assert_eq "$(jq '[.traceEvents[] | select(.ph == "X" or .ph == "b")] | length' "$J")" \
	          "$(trace-dump "$S/ended.tkt" | wc -l)"
	[ "$(jq .otherData.tracekit.slices_released_early "$J")" -gt 100 ]
	[ "$(jq .otherData.tracekit.slices_moved_to_overlap_tracks "$J")" -gt 0 ]
	run -2 --separate-stderr trace-to-chrome --buffer lots "$S/ended.tkt"
	assert_eq "${stderr_lines[0]}" "trace-to-chrome: invalid --buffer 'lots' (bytes, or with k, M, G)"
}

@test "async ranges, marks, dropped notices and imported flows" {
	F=$(fixture misc.tkt <<'EOF'
{"def":"process","ref":"p","pid":300,"host":"h","argv":["app"],"label":"rank0"}
{"def":"thread","ref":"t","process":"p","tid":300,"name":"main"}
{"def":"thread","ref":"u","process":"p","tid":301,"name":"io"}
{"kind":"range","track":"t","ts":100,"dur":900,"name":"work","args":{"External id":42,"Sequence number":7}}
{"kind":"range","track":"u","ts":150,"dur":300,"name":"read"}
{"kind":"async_range","track":"t","ts":120,"dur":5000,"name":"request","id":9,"end_track":"u"}
{"kind":"async_range","track":"t","ts":130,"dur":100,"name":"request","id":10}
{"kind":"mark","track":"t","ts":500,"name":"checkpoint","payload":1.5}
{"kind":"dropped","track":"p","ts":700,"count":12,"reason":"buffer full"}
{"kind":"flow","track":"t","ts":200,"id":5,"phase":0,"category":"fwdbwd","name":"fwdbwd"}
{"kind":"flow","track":"u","ts":200,"id":5,"phase":2,"category":"fwdbwd","name":"fwdbwd"}
EOF
)
	trace-to-chrome "$F" > "$J"
	assert_eq "$(structure "$J")" "$STRUCTURE_OK"
	run -0 jq -c '[.traceEvents[] | select(.ph == "b" or .ph == "e") | [.ph, .name, .tid, .ts]]' "$J"
	assert_eq "$output" '[["b","request",300,0.02],["e","request",301,5.02],["b","request",300,0.03],["e","request",300,0.13]]'
	assert_eq "$(jq -c '[.traceEvents[] | select(.ph == "i") | [.name, .s, .args.payload // .args.count]]' "$J")" \
	          '[["checkpoint","t",1.5],["dropped events","g",12]]'
	assert_eq "$(jq .otherData.tracekit.dropped_by_recorder "$J")" 12
	# imported args come along
	assert_eq "$(jq -c '.traceEvents[] | select(.name == "work") | .args' "$J")" '{"External id":42,"Sequence number":7}'
	assert_eq "$(jq -c '[.traceEvents[] | select(.cat == "fwdbwd") | [.ph, .tid, .bp]]' "$J")" '[["s",300,null],["f",301,"e"]]'
	assert_eq "$(jq -r '.traceEvents[] | select(.name == "process_labels") | .args.labels' "$J")" "rank0, h"
}

@test "names that are not UTF-8 still give valid JSON" {
	F=$(fixture utf.tkt <<'EOF'
{"def":"process","ref":"p","pid":1,"host":"h","argv":["x"]}
{"def":"thread","ref":"t","process":"p","tid":1,"name":"main"}
{"kind":"range","track":"t","ts":10,"dur":5,"name_hex":"6b65726e656cff80223c2f3e0a"}
{"kind":"range","track":"t","ts":20,"dur":5,"name":"caf\u00e9 \"quoted\" \\ back\tslash"}
EOF
)
	trace-to-chrome "$F" > "$J"
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$J"
	assert_eq "$(jq -r '.traceEvents[] | select(.ph == "X") | .name' "$J" | head -1)" \
	          "$(printf 'kernel\xef\xbf\xbd\xef\xbf\xbd"</>')"
	assert_eq "$(jq -r '[.traceEvents[] | select(.ph == "X")][1].name' "$J")" \
	          "$(printf 'café "quoted" \\ back\tslash')"
}

@test "impossible times are counted, not written" {
	F=$(fixture times.tkt <<'EOF'
{"def":"process","ref":"p","pid":1,"host":"h","argv":["x"]}
{"def":"thread","ref":"t","process":"p","tid":1,"name":"main"}
{"kind":"range","track":"t","ts":1000,"dur":5,"name":"fine"}
{"kind":"range","track":"t","ts":9223372036854775000,"dur":50,"name":"past the end of time"}
EOF
)
	run -0 trace-to-chrome "$F"
	assert_eq "$(jq -c '[[.traceEvents[] | select(.ph == "X") | .name], .otherData.tracekit.events_with_impossible_times_skipped]' <<< "$output")" \
	          '[["fine"],1]'
}

@test "an empty trace gives valid JSON" {
	F=$(fixture empty.tkt < /dev/null)
	run -0 trace-to-chrome "$F"
	assert_eq "$(jq -c '[.traceEvents, .otherData.tracekit.events_read, .otherData.tracekit.trace_start_ns]' <<< "$output")" '[[],0,null]'
}

@test "stdin, -o FILE and -z gzip give the same JSON" {
	trace-to-chrome "$T" > "$J"
	# the same events; otherData names the input
	ev() { jq -c .traceEvents | md5sum; }
	assert_eq "$(trace-to-chrome < "$T" | ev)" "$(ev < "$J")"
	assert_eq "$(cat "$T" | trace-to-chrome - | ev)" "$(ev < "$J")"
	assert_eq "$(trace-to-chrome < "$T" | jq -c .otherData.tracekit.inputs)" '["(stdin)"]'
	run -0 --separate-stderr trace-to-chrome -z -o "$BATS_TEST_TMPDIR/run.json.gz" "$T"
	assert_eq "$output$stderr" ""
	gzip -t "$BATS_TEST_TMPDIR/run.json.gz"
	assert_eq "$(gzip -dc "$BATS_TEST_TMPDIR/run.json.gz" | md5sum)" "$(md5sum < "$J")"
	assert_eq "$(trace-to-chrome -z "$T" | gzip -dc | md5sum)" "$(md5sum < "$J")"
	[ "$(stat -c %s "$BATS_TEST_TMPDIR/run.json.gz")" -lt "$(( $(stat -c %s "$J") / 5 ))" ]
}

@test "several inputs and concatenated traces become one timeline" {
	U=$(synth_trace other.tkt --steps 2 --layers 1 --pid 5151)
	trace-to-chrome "$T" "$U" > "$J"
	assert_eq "$(structure "$J")" "$STRUCTURE_OK"
	assert_eq "$(jq -r '[.traceEvents[] | select(.name == "process_name") | .args.name] | sort | join(",")' "$J")" \
	          "GPU 0: NVIDIA H100 80GB HBM3,python3,python3"
	assert_eq "$(jq '[.traceEvents[] | select(.ph == "X")] | length' "$J")" \
	          "$(( $(trace-to-chrome "$T" | jq '[.traceEvents[] | select(.ph == "X")] | length') + $(trace-to-chrome "$U" | jq '[.traceEvents[] | select(.ph == "X")] | length') ))"
	# both processes on one GPU: the second process's streams say whose they are
	jq -r '.traceEvents[] | select(.name == "thread_name") | .args.name' "$J" | grep -qx 'stream 7 (compute) pid 5151'
	cat "$T" "$U" > "$BATS_TEST_TMPDIR/cat.tkt"
	trace-to-chrome "$BATS_TEST_TMPDIR/cat.tkt" > "$BATS_TEST_TMPDIR/cat.json"
	assert_eq "$(structure "$BATS_TEST_TMPDIR/cat.json")" "$STRUCTURE_OK"
	assert_eq "$(jq .otherData.tracekit.flows "$BATS_TEST_TMPDIR/cat.json")" "$(jq .otherData.tracekit.flows "$J")"
}

@test "bad input: one line naming the file, exit 1, still valid JSON" {
	d=$BATS_TEST_TMPDIR
	: > "$d/empty.tkt"
	run -1 --separate-stderr trace-to-chrome "$d/empty.tkt"
	assert_eq "$stderr" "trace-to-chrome: $d/empty.tkt: empty input (not a trace)"
	jq -e '.traceEvents == [] and (.otherData.tracekit.errors | length) == 1' <<< "$output" > /dev/null
	run -1 --separate-stderr trace-to-chrome "$d/missing.tkt"
	assert_eq "$stderr" "trace-to-chrome: $d/missing.tkt: No such file or directory"
	S=$(synth_trace big.tkt -n 20000 --chunk-bytes 32768)
	size=$(stat -c %s "$S")
	head -c $((size / 2)) "$S" > "$d/half.tkt"
	run -1 --separate-stderr trace-to-chrome -o "$d/half.json" "$d/half.tkt"
	[[ "$stderr" =~ ^trace-to-chrome:\ .*/half.tkt:\ truncated\ chunk\ at\ byte\ [0-9]+$ ]]
	assert_eq "$(structure "$d/half.json")" "$STRUCTURE_OK"
	[ "$(jq '.traceEvents | length' "$d/half.json")" -gt 1000 ]
	[[ "$(jq -r '.otherData.tracekit.errors[0]' "$d/half.json")" == *"truncated chunk at byte"* ]]
}

@test "--help, --version and usage errors" {
	run -0 trace-to-chrome --help
	assert_eq "${lines[0]}" "Usage: trace-to-chrome [OPTIONS] [FILE...]"
	run -0 trace-to-chrome --version
	[[ "$output" == "trace-to-chrome (tracekit) "* ]]
	run -2 --separate-stderr trace-to-chrome --bogus
	assert_eq "${stderr_lines[0]}" "trace-to-chrome: unknown option '--bogus'"
	run -2 --separate-stderr trace-to-chrome -o
	assert_eq "${stderr_lines[0]}" "trace-to-chrome: option '-o' needs a value"
	run -2 --separate-stderr trace-to-chrome -o /nonexistent/dir/x.json "$T"
	assert_eq "$stderr" "trace-to-chrome: /nonexistent/dir/x.json: No such file or directory"
}

@test "every long option in --help is in the man page" {
	for o in $(trace-to-chrome --help | grep -o -- '--[a-z-]*' | sort -u); do
		grep -q -- "Fl Fl ${o#--}" "$TK_SRC/man/trace-to-chrome.1" \
			|| { echo "missing from the man page: $o"; return 1; }
	done
}

@test "a closed pipe ends the output quietly; a full disk is an error" {
	n=200000
	under_valgrind && n=20000
	S=$(synth_trace p.tkt -n $n)
	run -0 --separate-stderr bash -c "trace-to-chrome '$S' | head -c 100"
	assert_eq "$stderr" ""
	if [ -w /dev/full ]; then
		run -2 --separate-stderr trace-to-chrome -o /dev/full "$T"
		assert_eq "$stderr" "trace-to-chrome: /dev/full: write error: No space left on device"
	fi
}

@test "dur: ts + dur as JavaScript adds them is the exact end (checked without npm)" {
	# chrome_js_dur.py: the rule in doubles, as DevTools computes it
	python3 "$CHECKS/chrome-nested.py" --spans 400 --order end | mktrace > "$BATS_TEST_TMPDIR/n.tkt"
	for args in "$T" "--buffer 0 $BATS_TEST_TMPDIR/n.tkt"; do
		trace-to-chrome -o "$J" $args
		run -0 python3 "$CHECKS/chrome_js_dur.py" "$J"
		# some slices need the longer dur, or the check proves nothing
		[[ "${lines[0]}" =~ ^[0-9]+\ slices,\ [1-9][0-9]*\ with\ a\ longer\ dur$ ]]
		# the same slices with exact decimals break the rule
		python3 "$CHECKS/chrome_js_dur.py" --naive "$J" "$BATS_TEST_TMPDIR/naive.json"
		run -1 python3 "$CHECKS/chrome_js_dur.py" "$BATS_TEST_TMPDIR/naive.json"
		[[ "$output" == *" slices break the rule" ]]
	done
}

@test "Chrome DevTools' trace engine reads every slice, on the tracks we named" {
	mods=${TK_NODE_MODULES:-$CHECKS/chrome-parser/node_modules}
	command -v node > /dev/null || skip "node not installed"
	[ -d "$mods/@paulirish/trace_engine" ] ||
		skip "DevTools trace engine not installed: npm ci --prefix tests/cli/chrome-parser"
	check() {
		TK_NODE_MODULES=$mods node "$CHECKS/chrome-parser/devtools-check.mjs" "$1"
	}
	python3 "$CHECKS/chrome-nested.py" --spans 1500 --order end | mktrace > "$BATS_TEST_TMPDIR/n.tkt"
	for args in "$T" "--buffer 0 $BATS_TEST_TMPDIR/n.tkt"; do
		trace-to-chrome -z -o "$J.gz" $args
		gzip -dc "$J.gz" > "$J"
		run -0 check "$J.gz"
		devtools=$output
		# per track: what we wrote, what DevTools read, what fitted its tree
		want=$(jq -c '[(.traceEvents | map(select(.name == "thread_name")) | map({key: "\(.pid)/\(.tid)", value: .args.name}) | from_entries) as $n
			| .traceEvents | map(select(.ph == "X")) | group_by([.pid, .tid])[]
			| {pid: .[0].pid, tid: .[0].tid, name: $n["\(.[0].pid)/\(.[0].tid)"], entries: length, in_tree: length}]
			| sort_by(.pid, .tid)' "$J")
		have=$(jq -c '[.threads[] | select(.entries > 0) | {pid, tid, name, entries, in_tree}] | sort_by(.pid, .tid)' <<< "$devtools")
		assert_eq "$have" "$want"
		assert_eq "$(jq -c '.processes | to_entries | map(.value) | sort' <<< "$devtools")" \
		          "$(jq -c '[.traceEvents[] | select(.name == "process_name") | .args.name] | sort' "$J")"
	done
	# DevTools drops overlapping slices: the check sees the loss in a
	# naive layout with every kernel on one track
	jq '.traceEvents |= map(if .ph == "X" and .cat == "kernel" then .tid = 7 else . end)' "$J" > "$BATS_TEST_TMPDIR/naive.json"
	run -0 check "$BATS_TEST_TMPDIR/naive.json"
	[ "$(jq '[.threads[] | .entries - .in_tree] | add' <<< "$output")" -gt 0 ]
}

@test "a real PyTorch profiler trace, imported, converts and nests" {
	command -v trace-import > /dev/null || skip "trace-import not built yet (issue 7)"
	shared_data hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz src
	trace-import -o "$BATS_TEST_TMPDIR/real.tkt" "$src"
	trace-to-chrome "$BATS_TEST_TMPDIR/real.tkt" > "$J"
	assert_eq "$(structure "$J")" "$STRUCTURE_OK"
	# the source's kernels are all there (counted from the source JSON)
	want=$(gzip -dc "$src" | jq '[.traceEvents[] | select(.ph == "X" and .cat == "kernel")] | length')
	assert_eq "$(jq '[.traceEvents[] | select(.ph == "X" and .cat == "kernel")] | length' "$J")" "$want"
}
