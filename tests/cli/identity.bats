#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Identity across inputs (issue 19, item 4): two inputs never share a
# process or a GPU unless that is sure (same host, pid and start; same
# UUID or host).  Expected figures are computed in Python from the
# profiler's JSON, never from tracekit's output.

load helpers

setup() {
	D=$BATS_TEST_TMPDIR
	command -v jq >/dev/null || skip "no jq"
	T=$TK_SHARED/testdata
	[ -d "$T" ] || skip "real test data not found: $T (see ../shared/testdata/SOURCES.md)"
	A100=$T/hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz
	V100=$T/param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json
	PARAM=$T/param/dlrm_kineto
}

# gpus FILE...: per input, per GPU the JSON's GPU ops run on: "name ops",
# sorted (the device's name from deviceProperties)
gpus() {
	python3 - "$@" <<'PY'
import gzip, json, sys, collections
rows = []
for path in sys.argv[1:]:
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        d = json.load(f)
    names = {p.get("id"): p.get("name") for p in d.get("deviceProperties", [])}
    ops = collections.Counter()
    for e in d["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            ops[e["args"]["device"]] += 1
    rows += [f"{names.get(dev, '?')} {n}" for dev, n in ops.items()]
print("\n".join(sorted(rows)))
PY
}

# processes FILE...: how many processes the JSON files hold: numeric pids
# with CPU-side events (the PyTorch profiler's "Spans", "Traces" and ""
# pids and its GPU lanes are none)
processes() {
	python3 - "$@" <<'PY'
import gzip, json, sys
n = 0
for path in sys.argv[1:]:
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        d = json.load(f)
    gpu = {e["pid"] for e in d["traceEvents"]
           if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
    n += len({e["pid"] for e in d["traceEvents"]
              if isinstance(e.get("pid"), int) and e["pid"] not in gpu
              and e.get("ph") != "M"})
print(n)
PY
}

@test "an A100 and a V100 run merged: two GPUs, each with its own run's work" {
	trace-import -o "$D/a.tkt" "$A100"
	trace-import -o "$D/v.tkt" "$V100"
	trace-merge -a start -l base -l try1 -o "$D/m.tkt" "$D/a.tkt" "$D/v.tkt"
	run -0 trace-stats --json "$D/m.tkt"
	assert_eq "$(jq -r '.gpus[] | "\(.name) \(.ops)"' <<< "$output" | sort)" "$(gpus "$A100" "$V100")"
	[ "$(jq '.gpus | length' <<< "$output")" -eq 2 ]
	# read directly too, without the merge
	run -0 trace-stats --json "$A100" "$V100"
	assert_eq "$(jq -r '.gpus[] | "\(.name) \(.ops)"' <<< "$output" | sort)" "$(gpus "$A100" "$V100")"
	# and a lane each in Chrome JSON, with each run's GPU ops
	trace-to-chrome "$D/m.tkt" > "$D/m.json"
	assert_eq "$(python3 - "$D/m.json" <<'PY'
import json, sys, collections
d = json.load(open(sys.argv[1]))
lanes = {e["pid"]: e["args"]["name"] for e in d["traceEvents"]
         if e.get("ph") == "M" and e.get("name") == "process_name"}
ops = collections.Counter(lanes[e["pid"]].split(": ", 1)[1] for e in d["traceEvents"]
                          if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
print("\n".join(sorted(f"{k} {v}" for k, v in ops.items())))
PY
)" "$(gpus "$A100" "$V100")"
}

@test "the same trace merged twice under two labels: both labels' processes" {
	trace-import -o "$D/r.tkt" "$A100"
	trace-merge -l a -l b -o "$D/m.tkt" "$D/r.tkt" "$D/r.tkt"
	run -0 trace-stats -r processes --json "$D/m.tkt"
	n=$(processes "$A100")
	[ "$n" -ge 1 ]
	assert_eq "$(jq '[.processes[] | select(.label == "a")] | length' <<< "$output")" "$n"
	assert_eq "$(jq '[.processes[] | select(.label == "b")] | length' <<< "$output")" "$n"
	run -0 trace-stats --json "$D/m.tkt"
	assert_eq "$(jq -r '.gpus[] | "\(.name) \(.ops)"' <<< "$output" | sort)" \
		"$(gpus "$A100" "$A100")"
	trace-to-chrome "$D/m.tkt" | jq -r '.traceEvents[] | select(.ph == "M" and .name == "process_name") | .args.name' |
		grep -c '^GPU 0:' > "$D/lanes"
	assert_eq "$(cat "$D/lanes")" 2
}

@test "the 8 PARAM ranks: a process and a GPU each, no placeholder processes, every label shown" {
	[ -d "$PARAM" ] || skip "real test data not found: $PARAM"
	under_valgrind && skip "8 ranks: slow under valgrind"
	for f in "$PARAM"/*.json; do
		trace-import -o "$D/$(basename "$f" .json).tkt" "$f"
	done
	trace-merge -L -o "$D/m.tkt" "$D"/*.pt.trace.tkt
	run -0 trace-stats --json "$D/m.tkt"
	assert_eq "$(jq '.processes | length' <<< "$output")" "$(processes "$PARAM"/*.json)"
	assert_eq "$(jq -r '.gpus[] | "\(.name) \(.ops)"' <<< "$output" | sort)" "$(gpus "$PARAM"/*.json)"
	assert_eq "$(jq '[.processes[] | select(.name == "Spans" or .name == "Traces")] | length' <<< "$output")" 0
	run -0 trace-stats "$D/m.tkt"
	for f in "$PARAM"/*.json; do
		l=$(basename "$f" .json)
		grep -q "^  \(labels    \|          \)$l\$" <<< "$output" || { echo "label $l not shown"; false; }
	done
	grep -q "^  processes $(processes "$PARAM"/*.json) " <<< "$output"
}

@test "the labels line says how many labels it leaves out" {
	trace-import -o "$D/r.tkt" "$T/hta/critical_path/cuda_event_sync/event_sync_trace.json.gz"
	args=() files=()
	for i in $(seq 1 20); do args+=(-l "L$i"); files+=("$D/r.tkt"); done
	trace-merge "${args[@]}" -o "$D/m.tkt" "${files[@]}"
	run -0 trace-stats "$D/m.tkt"
	[ "$(sed -n '/^  labels/,/^  [a-z]/p' <<< "$output" | grep -c '^  \(labels    \|          \)L[0-9]*$')" -eq 16 ]
	grep -q '^            (4 more)$' <<< "$output"
}

# external_ids FILE: "cat name id" for every API call, sync and GPU op
# of a Chrome JSON (plain or gzip) that has an External id, sorted
external_ids() {
	python3 - "$1" <<'PY'
import gzip, json, sys
path = sys.argv[1]
with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
    d = json.load(f)
cats = ("cuda_runtime", "cuda_driver", "cuda_sync", "kernel", "gpu_memcpy", "gpu_memset")
rows = [f"{e['cat']} {e['name']} {e['args']['External id']}" for e in d["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") in cats and "External id" in e.get("args", {})]
print("\n".join(sorted(rows)))
PY
}

@test "External id comes back in Chrome JSON: the profiler's own, or the correlation id it equalled" {
	# an older profiler (External id = correlation id on API calls and
	# GPU work, which trace-import does not store) and a newer one
	# (External id = the operator's id, kept as imported)
	for f in "$T/hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz" \
	         "$T/hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"; do
		want=$(external_ids "$f")
		[ "$(wc -l <<< "$want")" -gt 5 ]
		trace-import -o "$D/x.tkt" "$f"
		trace-to-chrome -o "$D/x.json" "$D/x.tkt"
		assert_eq "$(external_ids "$D/x.json")" "$want"
	done
}

# scopes FILE: each instant of a Chrome JSON file, "name scope", sorted
# (no "s" is thread scope)
scopes() {
	python3 - "$1" <<'PY'
import gzip, json, sys
path = sys.argv[1]
with (gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open)(path, "rt") as f:
    d = json.load(f)
print("\n".join(sorted(f"{e['name']} {e.get('s', 't')}" for e in d["traceEvents"]
                       if e.get("ph") in ("i", "I"))))
PY
}

@test "global instants stay global through trace-import and trace-to-chrome; others keep their scope" {
	F=$T/hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz
	[ -e "$F" ] || skip "real test data not found: $F"
	# Kineto's own marks are global: "Iteration Start", "Record Window End"
	want=$(scopes "$F")
	grep -q ' g$' <<< "$want"
	trace-to-chrome -o "$D/c.json" "$F"
	assert_eq "$(scopes "$D/c.json")" "$want"
	# the scope is given back, not left as an argument too
	[ "$(jq '[.traceEvents[] | select(.args["chrome.s"])] | length' "$D/c.json")" = 0 ]
	# every scope at once, on a thread that has work
	cat > "$D/mix.json" <<'JSON'
{"traceEvents":[
{"ph":"X","name":"work","cat":"c","pid":1,"tid":2,"ts":10,"dur":100},
{"ph":"i","name":"global","cat":"c","s":"g","pid":1,"tid":2,"ts":20},
{"ph":"i","name":"process","cat":"c","s":"p","pid":1,"tid":2,"ts":30},
{"ph":"i","name":"thread","cat":"c","s":"t","pid":1,"tid":2,"ts":40},
{"ph":"I","name":"unscoped","cat":"c","pid":1,"tid":2,"ts":50}
]}
JSON
	trace-import -o "$D/mix.tkt" "$D/mix.json"
	trace-to-chrome -o "$D/mix-c.json" "$D/mix.tkt"
	assert_eq "$(scopes "$D/mix-c.json")" "$(scopes "$D/mix.json")"
	# and again from the written JSON: the same
	trace-to-chrome -o "$D/mix-cc.json" "$D/mix-c.json"
	assert_eq "$(scopes "$D/mix-cc.json")" "$(scopes "$D/mix.json")"
}
