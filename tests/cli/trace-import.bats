#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-import: Chrome Trace Event JSON (PyTorch profiler, catapult,
# trace-to-chrome) to .tkt.  Figures are checked against ones computed
# independently with Python from the JSON itself.

load helpers

setup() {
	D=$BATS_TEST_TMPDIR
}

# import FILE [options]: import into $D/out.tkt, status in $status
import() {
	local f=$1
	shift
	run --separate-stderr trace-import "$@" -o "$D/out.tkt" "$f"
}

# Per (kind, name): count and total duration in ns, from the import.
tkt_sums() {
	trace-dump --json "$1" | python3 -c '
import json, sys, collections
n = collections.Counter(); d = collections.Counter()
kinds = set(sys.argv[1].split(","))
for line in sys.stdin:
    e = json.loads(line)
    if e["kind"] in kinds:
        n[(e["kind"], e["name"])] += 1
        d[(e["kind"], e["name"])] += e["dur"]
for k in sorted(n):
    print(k[0], n[k], d[k], k[1])
' "$2"
}

# The same from the JSON: Kineto categories of X events; dur in us as
# decimal text, so the sums are exact in ns.
json_sums() {
	python3 - "$1" <<'PY'
import collections, decimal, gzip, json, sys
f = sys.argv[1]
d = json.load(gzip.open(f) if f.endswith(".gz") else open(f),
              parse_float=decimal.Decimal)
kinds = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset",
         "cuda_runtime": "api", "cuda_driver": "api"}
n = collections.Counter(); t = collections.Counter()
for e in d["traceEvents"]:
    if e.get("ph") == "X" and e.get("cat") in kinds:
        k = (kinds[e["cat"]], e["name"])
        n[k] += 1
        t[k] += int((decimal.Decimal(e.get("dur", 0)) * 1000).to_integral_value(
            rounding=decimal.ROUND_HALF_UP))
for k in sorted(n):
    print(k[0], n[k], t[k], k[1])
PY
}

# JSON Lines from trace-dump, each object re-written with sorted keys and
# the fields named in $1 (comma-separated) removed; jq 1.6 would round
# integers beyond 2^53, and times in ns are such integers.
canon() {
	python3 -c '
import json, sys
drop = set(filter(None, sys.argv[1].split(",")))
keep = set(filter(None, sys.argv[2].split(","))) if len(sys.argv) > 2 else None
for line in sys.stdin:
    e = json.loads(line)
    if keep and e["kind"] not in keep:
        continue
    if e["kind"] == "process":
        # rusage goes through the JSON in microseconds
        e["utime"] //= 1000
        e["stime"] //= 1000
    for k in drop:
        e.pop(k, None)
    print(json.dumps(e, sort_keys=True))
' "$@" | sort
}

# ---- options and manners -------------------------------------------------------

@test "--help, --version and usage errors" {
	run -0 trace-import --help
	assert_eq "${lines[0]}" "Usage: trace-import [OPTIONS] [FILE]"
	run -0 trace-import --version
	[[ "$output" == "trace-import (tracekit) "* ]]
	run -2 --separate-stderr trace-import --bogus
	assert_eq "${stderr_lines[0]}" "trace-import: unknown option '--bogus'"
	run -2 --separate-stderr trace-import -o "$D/x.tkt" a.json b.json
	assert_eq "${stderr_lines[0]}" "trace-import: one input file at a time (trace-merge joins traces)"
	run -2 --separate-stderr trace-import --memory 10 -o "$D/x.tkt" a.json
	assert_eq "${stderr_lines[0]}" "trace-import: invalid --memory '10' (at least 64k; bytes, or with k, M, G)"
}

@test "every long option of --help is in the man page" {
	for o in $(trace-import --help | grep -o -- '--[a-z-]*' | sort -u); do
		grep -q -- "Fl Fl ${o#--}" "$TK_SRC/man/trace-import.1" ||
			{ echo "missing in the man page: $o" >&2; return 1; }
	done
}

@test "stdin, -, plain and gzip are told apart by content, not by name" {
	printf '[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":2}]' > "$D/a.json"
	gzip -c "$D/a.json" > "$D/a.gz.json"     # gzip named .json
	cp "$D/a.json" "$D/plain.json.gz"        # plain named .gz
	want=$(trace-import < "$D/a.json" | trace-dump)
	assert_eq "$(trace-import - < "$D/a.json" | trace-dump)" "$want"
	assert_eq "$(trace-import "$D/a.gz.json" | trace-dump)" "$want"
	assert_eq "$(trace-import "$D/plain.json.gz" | trace-dump)" "$want"
	assert_eq "$(gzip -c "$D/a.json" | trace-import | trace-dump)" "$want"
	[[ "$want" == *"range "*"pid 1/tid 1"*" a" ]]
	# several gzip members, as cat a.gz b.gz makes them
	printf '[{"ph":"i","ts":1,"name":"x"},' | gzip > "$D/two.gz"
	printf '{"ph":"i","ts":2,"name":"y"}]' | gzip >> "$D/two.gz"
	assert_eq "$(trace-import "$D/two.gz" | trace-dump --json | jq -r .name | paste -sd,)" "x,y"
}

@test "what is not JSON is refused with what it is" {
	synth -n 100 -o "$D/t.tkt"
	run -1 --separate-stderr trace-import -o "$D/x.tkt" "$D/t.tkt"
	assert_eq "$stderr" "trace-import: $D/t.tkt: already a tracekit trace"
	printf '[{"ph":"i","ts":1}]' | xz > "$D/a.xz" 2>/dev/null || skip "no xz"
	run -1 --separate-stderr trace-import -o "$D/x.tkt" "$D/a.xz"
	assert_eq "$stderr" "trace-import: $D/a.xz: xz-compressed: decompress it first (xz -dc FILE | trace-import -)"
	run -1 --separate-stderr trace-import -o "$D/x.tkt" "$D/missing.json"
	assert_eq "$stderr" "trace-import: $D/missing.json: No such file or directory"
	[ ! -e "$D/x.tkt" ]    # no output for an input that cannot be opened
}

@test "output errors: exit 2; a closed pipe: quiet" {
	printf '[{"ph":"X","name":"a","ts":1,"dur":2}]' > "$D/a.json"
	run -2 --separate-stderr trace-import -o "$D/no/such/dir/x.tkt" "$D/a.json"
	assert_eq "$stderr" "trace-import: $D/no/such/dir/x.tkt: No such file or directory"
	under_valgrind && skip "100000 events are slow under valgrind"
	# names that do not compress: the output is several chunks, and the
	# pipe closes while the sorted runs are being merged into it
	python3 -c '
import json, os
print(json.dumps([{"ph": "X", "name": os.urandom(12).hex(), "ts": i, "dur": 1}
                  for i in range(100000)]))' > "$D/big.json"
	run -0 --separate-stderr bash -c "trace-import -m 1M '$D/big.json' | head -c 100 | wc -c"
	assert_eq "$stderr" ""
	assert_eq "$output" 100
}

@test "output errors are reported (ENOSPC)" {
	require_dev_full
	printf '[{"ph":"X","name":"a","ts":1,"dur":2}]' > "$D/a.json"
	run -2 --separate-stderr bash -c "trace-import '$D/a.json' > /dev/full"
	[[ "$stderr" == "trace-import: (stdout): "*"No space left on device"* ]]
}

# ---- the PyTorch profiler --------------------------------------------------------

@test "Kineto: kernels, copies, memsets and API calls: counts and ns durations per name" {
	for f in hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz \
	         hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz \
	         hta/triton_example/triton_example.json.gz \
	         param/dlrm_kineto/worker3_step_12.1694128201557.pt.trace.json; do
		shared_data "$f" J
		import "$J"
		assert_eq "$status" 0
		diff <(tkt_sums "$D/out.tkt" kernel,memcpy,memset,api) <(json_sums "$J")
	done
}

@test "Kineto: a large trace (nccl, fractional us) matches to the nanosecond" {
	under_valgrind && skip "10 MB of JSON is slow under valgrind"
	shared_data hta/nccl_parser_config/nccl_data.json.gz J
	import "$J"
	assert_eq "$status" 0
	diff <(tkt_sums "$D/out.tkt" kernel,memcpy,memset,api) <(json_sums "$J")
	# HTA's published numbers: 21 NCCL kernels, 15 AllReduce and 6 Broadcast
	run -0 bash -c "trace-dump --json -k kernel '$D/out.tkt' | jq -r 'select(.name | contains(\"ncclKernel\")) | .name' | sort | uniq -c | awk '{print \$1, \$2}'"
	assert_eq "$output" "$(printf '15 ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*,\n6 ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*,')"
	# the longest keeps its collective's args
	run -0 bash -c "trace-dump --json -k kernel '$D/out.tkt' | jq -c 'select(.name | contains(\"ncclKernel\"))' | jq -s -c 'max_by(.dur) | .args | [.\"Collective name\", .\"In msg nelems\", .\"Out msg nelems\", .\"Process Group Name\", .\"Process Group Description\", .\"Process Group Ranks\"]'"
	assert_eq "$output" '["allreduce",2049000,2049000,"0","default_pg","[0, 1]"]'
}

@test "Kineto: the ns-resolution trace keeps every nanosecond of its epoch times" {
	under_valgrind && skip "15 MB of JSON is slow under valgrind"
	shared_data hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz J
	import "$J"
	assert_eq "$status" 0
	# begin times of GPU work and API calls, from the JSON's digits
	python3 - "$J" > "$D/want" <<'PY'
import decimal, gzip, json, sys
d = json.load(gzip.open(sys.argv[1]), parse_float=decimal.Decimal)
base = int(d.get("baseTimeNanoseconds", 0))
for e in d["traceEvents"]:
    if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "cuda_runtime"):
        print(base + int(decimal.Decimal(e["ts"]) * 1000))
PY
	trace-dump --json -k kernel,memcpy,api "$D/out.tkt" |
		python3 -c 'import json, sys; [print(json.loads(l)["ts"]) for l in sys.stdin]' > "$D/got"
	diff <(sort "$D/want") <(sort "$D/got")
	# and a double would have lost them: most are not whole microseconds
	[ "$(awk '$1 % 1000' "$D/got" | wc -l)" -gt 20000 ]
}

@test "Kineto: ranks, device properties and metadata" {
	shared_data hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz J
	import "$J"
	run -0 trace-dump --info --json "$D/out.tkt"
	assert_eq "$(jq -r '.metadata["distributedInfo.rank"]' <<< "$output")" 0
	assert_eq "$(jq -r '.metadata.schemaVersion' <<< "$output")" 1
	assert_eq "$(jq -r '.metadata.importer' <<< "$output")" "trace-import $(trace-import --version | awk '{print $3}')"
	assert_eq "$(jq -r '.metadata.start' <<< "$output")" "2023-09-27T17:25:42.481129000Z"
	assert_eq "$(jq -r '[.devices[] | .name] | unique | .[]' <<< "$output")" "NVIDIA A100-PG509-200"
	assert_eq "$(jq -r '.devices | length' <<< "$output")" 8
	assert_eq "$(jq -r '.devices[0] | [.index, .sm_count, .memory] | @tsv' <<< "$output")" "$(printf '0\t108\t42297524224')"
	# properties tracekit has no field for stay as metadata, once when
	# every device has the same
	assert_eq "$(jq -r '.metadata.deviceProperties | fromjson | .warpSize' <<< "$output")" 32
	assert_eq "$(jq -r '.metadata | keys[] | select(startswith("deviceProperties."))' <<< "$output")" ""
	shared_data hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz J
	import "$J"
	run -0 trace-dump --info --json "$D/out.tkt"
	assert_eq "$(jq -r '.metadata | [."distributedInfo.rank", ."distributedInfo.world_size", ."distributedInfo.backend"] | @tsv' <<< "$output")" "$(printf '34\t300\tgloo')"
	# a big value is bounded: process groups of up to 300 ranks
	n=$(python3 -c 'import gzip, json, sys; print(len(json.load(gzip.open(sys.argv[1]))["distributedInfo"]["pg_config"]))' "$J")
	assert_eq "$(jq -r '.metadata."distributedInfo.pg_config"' <<< "$output")" "(array of $n items, not kept)"
}

@test "Kineto: streams, threads and processes get their names" {
	shared_data hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz J
	import "$J"
	python3 - "$J" > "$D/want" <<'PY'
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
s = {(e["args"]["device"], e["args"]["stream"]) for e in d["traceEvents"]
     if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
for dev, st in sorted(s):
    print("GPU %d stream %d" % (dev, st))
PY
	trace-dump --json -k kernel,memcpy,memset "$D/out.tkt" | jq -r '"GPU \(.device) stream \(.stream)"' | sort -u > "$D/got"
	diff "$D/want" "$D/got"
	# CPU work: pid, tid and the thread's name from the metadata events
	trace-dump --json -k api "$D/out.tkt" | jq -r '"\(.pid) \(.tid) \(.thread)"' | sort -u > "$D/got"
	python3 - "$J" > "$D/want" <<'PY'
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in d["traceEvents"]
         if e.get("ph") == "M" and e.get("name") == "thread_name"}
s = {(e["pid"], e["tid"]) for e in d["traceEvents"] if e.get("cat") == "cuda_runtime"}
for p, t in sorted(s):
    print(p, t, names[(p, t)])
PY
	diff "$D/want" "$D/got"
}

@test "Kineto: syncs, memory events and their totals as counters" {
	under_valgrind && skip "54 MB of JSON is slow under valgrind"
	shared_data hta/df_index_resolver/df_index_resolver.json.gz J
	import "$J" -v
	assert_eq "$status" 0
	python3 - "$J" > "$D/want" <<'PY'
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
m = [e for e in d["traceEvents"] if e.get("name") == "[memory]"]
print(len(m), sum(1 for e in m if e["args"]["Bytes"] < 0),
      sum(abs(e["args"]["Bytes"]) for e in m))
# totals, one series per device (or the CPU): a sample only where the
# value changes, in time order
for key in ("Total Allocated", "Total Reserved"):
    for dev in sorted({(e["args"]["Device Type"], e["args"]["Device Id"]) for e in m}):
        last, n = None, 0
        for e in sorted(m, key=lambda e: e["ts"]):
            if (e["args"]["Device Type"], e["args"]["Device Id"]) != dev:
                continue
            v = e["args"][key]
            if v != last:
                n += 1
            last = v
        print(key, "GPU %d" % dev[1] if dev[0] == 1 else "CPU", n, last)
PY
	trace-dump --json -k memory "$D/out.tkt" | jq -s -r '"\(length) \(map(select(.op == "free")) | length) \(map(.bytes) | add)"' > "$D/got"
	trace-dump --json -k counter "$D/out.tkt" | jq -s -r 'group_by(.name) | .[] | group_by(.device) | .[] |
		"\(.[0].name) \(if .[0].device then "GPU \(.[0].device)" else "CPU" end) \(length) \(last.value)"' >> "$D/got"
	diff "$D/want" "$D/got"
	[[ "$stderr" == *"  i  cpu_instant_event            28010 -> memory 28010"* ]]
	[[ "$stderr" == *"counter samples besides the first of an event: 56020"* ]]
	# the big file went through sorted runs in temporary files
	[[ "$stderr" =~ sorted\ runs\ in\ temporary\ files:\ [0-9]+ ]]
}

@test "Kineto: correlation flows are counted, not stored; other flows are" {
	shared_data hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz J
	import "$J" -v
	assert_eq "$status" 0
	[[ "$stderr" == *"  f  ac2g                          1758 -> not stored: correlation ids link the ends 1758"* ]]
	[[ "$stderr" == *"  s  ac2g                           104 -> not stored: correlation ids link the ends 104"* ]]
	assert_eq "$(trace-dump -k flow "$D/out.tkt" | wc -l)" 0
	shared_data ncompass/flops_example/test_trace.pt.trace.json J
	import "$J" -v
	want=$(jq '[.traceEvents[] | select(.cat == "fwdbwd")] | length' "$J")
	assert_eq "$(trace-dump -k flow "$D/out.tkt" | wc -l)" "$want"
	[[ "$stderr" == *"  X  python_function"*"-> range "* ]]
	[[ "$stderr" == *"  X  gpu_user_annotation"*"-> range "* ]]
}

@test "Kineto: HTA's trace_filter window holds 93 complete events" {
	shared_data hta/trace_filter/sampled_rank-0.json.gz J
	import "$J"
	# X events with ts >= 1682725898237042 us and ts + dur <= 1682725898240570 us
	run -0 bash -c "trace-dump --json '$D/out.tkt' | python3 -c '
import json, sys
print(sum(1 for l in sys.stdin for e in [json.loads(l)]
          if e[\"kind\"] not in (\"mark\", \"counter\") and e[\"ts\"] >= 1682725898237042000
          and e[\"ts\"] + e[\"dur\"] <= 1682725898240570000))'"
	assert_eq "$output" 93
}

# ---- generic Chrome traces (catapult) --------------------------------------------

@test "catapult: B/E pairs become ranges; unclosed ones end at the trace end" {
	shared_data catapult/big_trace.json J
	import "$J"
	assert_eq "$status" 0
	assert_eq "$(trace-dump -k range "$D/out.tkt" | wc -l)" 933
	shared_data catapult/main_thread_has_unclosed_slices.json J
	import "$J" -v
	assert_eq "$status" 0
	assert_eq "$(trace-dump -k range "$D/out.tkt" | wc -l)" 1684
	run -0 bash -c "trace-dump --json -k range '$D/out.tkt' | jq -s '[.[] | select(.args[\"chrome.unclosed\"])] | length'"
	assert_eq "$output" 4
	[[ "$stderr" == *"B without E: ended at the end of the trace (args chrome.unclosed): 4"* ]]
	# B/E durations against a stack-based pairing in Python
	shared_data catapult/big_trace.json BIG
	python3 - "$BIG" > "$D/want" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))
stacks, out = {}, []
for e in ev:
    k = (e.get("pid"), e.get("tid"))
    if e["ph"] == "B":
        stacks.setdefault(k, []).append(e)
    elif e["ph"] == "E" and stacks.get(k):
        b = stacks[k].pop()
        out.append((b["ts"] * 1000, (e["ts"] - b["ts"]) * 1000, b["name"]))
for t in sorted(out):
    print(*t)
PY
	trace-import "$BIG" | trace-dump --json -k range | jq -r '"\(.ts) \(.dur) \(.name)"' | sort -n > "$D/got"
	diff <(sort -n "$D/want") "$D/got"
}

@test "catapult: async, flows, counters and instants" {
	shared_data catapult/nestable_async.json J
	import "$J"
	want=$(jq '[.traceEvents[] | select(.ph == "b")] | length' "$J")
	assert_eq "$(trace-dump -k async_range "$D/out.tkt" | wc -l)" "$want"
	shared_data catapult/async_begin_end.json J
	import "$J" -v
	want=$(jq '[.[] | select(.ph == "S")] | length' "$J")
	[ "$(trace-dump -k async_range "$D/out.tkt" | wc -l)" -ge $((want - 1)) ]
	shared_data catapult/flow_simple.json J
	import "$J"
	run -0 bash -c "trace-dump --json -k flow '$D/out.tkt' | jq -r '.phase' | sort | uniq -c | awk '{print \$1\"x\"\$2}' | paste -sd' '"
	assert_eq "$output" "2x0 1x1 2x2"
	shared_data catapult/instance_counters.json J
	import "$J"
	run -0 bash -c "trace-dump --json -k counter '$D/out.tkt' | jq -r '.value' | paste -sd' '"
	assert_eq "$output" "2 10 10 5 8 4 10 0"
	run -0 bash -c "trace-dump --info '$D/out.tkt' | grep -c 'counter counter\['"
	assert_eq "$output" 2
	shared_data catapult/instant_events.json J
	import "$J"
	assert_eq "$(trace-dump -k mark "$D/out.tkt" | wc -l)" 5
	run -0 bash -c "trace-dump --json -k mark '$D/out.tkt' | jq -r '.args[\"chrome.s\"] // (if .tid then \"t\" else \"p\" end)' | sort | uniq -c | awk '{print \$1\$2}' | paste -sd' '"
	want=$(jq -r '[.traceEvents[] | .s // "t"] | group_by(.) | map("\(length)\(.[0])") | join(" ")' "$J")
	assert_eq "$output" "$want"
}

@test "catapult: bare arrays, gzip, metadata names, events without pid or tid" {
	shared_data catapult/simple_trace_gz.gz J
	import "$J"
	assert_eq "$status" 0
	run -0 trace-dump --info "$D/out.tkt"
	[[ "$output" == *"(threadA)"* && "$output" == *"(threadB)"* ]]
	shared_data catapult/simple_trace.json J
	import "$J" -v
	assert_eq "$status" 0
	# "I" (old instant) with "s":"p" and no tid goes on the process
	run -0 bash -c "trace-dump --json -k mark '$D/out.tkt' | jq -r 'select(.name == \"ProcessWideEvent1\") | .tid // \"process\"'"
	assert_eq "$output" "process"
	shared_data catapult/nanoseconds.json J
	import "$J"
	# ts are microseconds whatever displayTimeUnit says, to the ns
	assert_eq "$(trace-dump --json "$D/out.tkt" | jq -r '"\(.name) \(.ts) \(.dur)"' | head -6 | paste -sd,)" \
		"us1 0 1100,us2 1100 200,us3 1300 300,us4 1700 400,ns1 3000 11,ns2 3011 2"
}

@test "every real trace imports without a warning" {
	under_valgrind && skip "tens of MB of JSON are slow under valgrind"
	[ -d "$TK_SHARED/testdata" ] || skip "real test data not found: $TK_SHARED/testdata"
	# the big ones have tests of their own
	find "$TK_SHARED/testdata" \( -name '*.json' -o -name '*.gz' \) -size -1500k | sort > "$D/list"
	[ "$(wc -l < "$D/list")" -gt 30 ]
	while read -r f; do
		run --separate-stderr trace-import -o "$D/x.tkt" "$f"
		[ "$status" -eq 0 ] || { echo "$f: exit $status: $stderr" >&2; return 1; }
		assert_eq "$stderr" ""
		trace-dump --info "$D/x.tkt" > /dev/null
	done < "$D/list"
}

# ---- time order, memory, temporary files ---------------------------------------

@test "unsorted input comes out in time order, the same with any memory" {
	# 20000 events in random order, on 40 threads, some B/E and counters
	python3 - > "$D/shuffled.json" <<'PY'
import json, random
random.seed(7)
ev = []
for i in range(20000):
    t = random.randrange(10**9) / 1000.0
    ev.append({"ph": "X", "name": "op%d" % (i % 97), "cat": "c", "pid": 1,
               "tid": i % 40, "ts": t, "dur": random.randrange(100), "args": {"i": i}})
for i in range(500):
    ev.append({"ph": "C", "name": "ctr", "pid": 1, "ts": random.randrange(10**6),
               "args": {"v": i}})
# every kind the sorted runs carry: async ranges ending on another
# thread (their ends last in the file: b and e pair in file order),
# marks, flows, kernels
ends = []
for i in range(300):
    t = random.randrange(10**6)
    ev.append({"ph": "b", "name": "io", "cat": "a", "id": i, "pid": 1, "tid": i % 40, "ts": t})
    ends.append({"ph": "e", "name": "io", "cat": "a", "id": i, "pid": 1, "tid": (i + 1) % 40,
                 "ts": t + random.randrange(1, 100)})
for i in range(200):
    t = random.randrange(10**6)
    ev.append({"ph": "i", "name": "mark", "pid": 1, "tid": i % 40, "ts": t})
    ev.append({"ph": "s", "name": "fl", "cat": "f", "id": i, "pid": 1, "tid": i % 40, "ts": t})
    ev.append({"ph": "f", "name": "fl", "cat": "f", "id": i, "pid": 1, "tid": (i + 3) % 40,
               "ts": t + 5, "bp": "e"})
    ev.append({"ph": "X", "name": "k%d" % (i % 7), "cat": "kernel", "pid": 0, "tid": 7,
               "ts": t, "dur": 3, "args": {"device": 0, "stream": 7}})
random.shuffle(ev)
random.shuffle(ends)
print(json.dumps({"traceEvents": ev + ends}))
PY
	J=$D/shuffled.json
	import "$J"
	trace-dump --csv "$D/out.tkt" | awk -F, 'NR > 1 && $2 < prev { bad = 1 } NR > 1 { prev = $2 } END { exit bad }'
	# each X, C sample, b/e pair, mark, flow end and kernel is one event
	assert_eq "$(trace-dump "$D/out.tkt" | wc -l)" $((20000 + 500 + 300 + 200 * 4))
	assert_eq "$(trace-dump -k async_range "$D/out.tkt" | grep -c ' end_track=')" 300
	mv "$D/out.tkt" "$D/big.tkt"
	# 64k of memory: many sorted runs, merged a level up when they are many
	import "$J" -v --memory 64k
	[[ "$stderr" =~ sorted\ runs\ in\ temporary\ files:\ ([0-9]+) ]]
	[ "${BASH_REMATCH[1]}" -gt 48 ]
	cmp <(trace-dump --json "$D/big.tkt") <(trace-dump --json "$D/out.tkt")
	# one thread or two: the same bytes
	TK_IMPORT_THREADS=0 trace-import -o "$D/one.tkt" "$J"
	cmp "$D/big.tkt" "$D/one.tkt"
}

@test "temporary files go to --tmpdir, and none is left behind" {
	shared_data hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz J
	mkdir "$D/tmp"
	import "$J" --memory 64k --tmpdir "$D/tmp"
	assert_eq "$status" 0
	assert_eq "$(ls -A "$D/tmp")" ""
	run -2 --separate-stderr trace-import --memory 64k --tmpdir "$D/nodir" -o "$D/x.tkt" "$J"
	[[ "$stderr" == "trace-import: $J: cannot create a temporary file in $D/nodir: No such file or directory" ]]
}

# ---- messy and malformed input -----------------------------------------------------

@test "malformed JSON: one line with the byte offset, exit 1, what came before is kept" {
	printf '{"traceEvents":[{"ph":"X","ts":1,"dur":2,"pid":1,"tid":1,"name":"a"} {"ph":"X"}]}' > "$D/m.json"
	import "$D/m.json"
	assert_eq "$status" 1
	assert_eq "$stderr" "trace-import: $D/m.json: expected ',' or ']' at byte 69"
	assert_eq "$(trace-dump --json "$D/out.tkt" | jq -r .name)" "a"
	assert_eq "$(trace-dump --info --json "$D/out.tkt" | jq -r '.metadata["import.error"]')" "expected ',' or ']' at byte 69"
	printf '{"traceEvents":[{"ph":"X","ts":1,"dur":1,"name":"a"},{"ph":"X","ts":2' > "$D/t.json"
	import "$D/t.json"
	assert_eq "$status" 1
	assert_eq "$stderr" "trace-import: $D/t.json: unexpected end of input in the event that begins at byte 53"
	assert_eq "$(trace-dump "$D/out.tkt" | wc -l)" 1
	printf '{"traceEvents":[]} x' > "$D/x.json"
	import "$D/x.json"
	assert_eq "$stderr" "trace-import: $D/x.json: unexpected data after the end of the JSON at byte 19"
	while IFS='|' read -r bad msg; do
		printf '%s' "$bad" > "$D/b.json"
		import "$D/b.json"
		assert_eq "$status" 1
		assert_eq "$stderr" "trace-import: $D/b.json: $msg"
		trace-dump "$D/out.tkt" > /dev/null   # still a valid, empty trace
	done <<'EOF'
|the input is empty
null|not JSON: expected '{' or '[' at byte 0
hello|not JSON: expected '{' or '[' at byte 0
{"a":1}|no traceEvents array: not a Chrome trace
{"traceEvents":{}}|'traceEvents' is not an array at byte 15
{"traceEvents":[{"ph":"i","ts":1},]}|expected an event at byte 34
EOF
}

@test "a bad event is skipped with its byte offset; the others are kept" {
	printf '[{"ph":"X","ts":1,,"dur":2},{"ph":"X","ts":"1"},{"ph":"X","ts":1,"pid":{}},{"ph":"X","ts":1,"name":5},{"ph":"X","ts":1,"args":[1]},{"ts":3},{"ph":"X"},5,{"ph":"X","ts":5,"dur":1,"name":"ok"}]' > "$D/e.json"
	import "$D/e.json"
	assert_eq "$status" 1
	assert_eq "$stderr" "trace-import: $D/e.json: event at byte 1: invalid JSON at byte 18: string or '}' expected near ','
trace-import: $D/e.json: event at byte 28: 'ts' is not a number
trace-import: $D/e.json: event at byte 48: 'pid' is not a number or a string
trace-import: $D/e.json: event at byte 75: 'name' is not a string
trace-import: $D/e.json: event at byte 102: 'args' is not an object
trace-import: $D/e.json: event at byte 131: no 'ph'
trace-import: $D/e.json: event at byte 140: no 'ts'
trace-import: $D/e.json: event at byte 151: not an object"
	assert_eq "$(trace-dump --json "$D/out.tkt" | jq -r .name)" "ok"
	# past ten, the rest are counted
	python3 -c 'print("[" + ",".join(["{\"ph\":\"X\"}"] * 25) + "]")' > "$D/many.json"
	import "$D/many.json"
	assert_eq "${#stderr_lines[@]}" 11
	assert_eq "${stderr_lines[10]}" "trace-import: $D/many.json: 15 more events could not be read"
}

@test "huge numbers, uint64 ids and invalid UTF-8 are kept, not lost" {
	printf '[{"ph":"X","ts":1e30,"dur":1},{"ph":"X","ts":2,"dur":1,"name":"big","args":{"Comms Id":18446744073709551615,"r":1e400,"x":0.1}},{"ph":"X","ts":3,"dur":1,"name":"bad \xff utf8","args":{"k\xe9":"v"}},{"ph":"X","cat":"kernel","ts":4,"dur":1,"name":"k","args":{"correlation":18446744073709551615,"device":0,"stream":7}}]' > "$D/h.json"
	import "$D/h.json" -v
	assert_eq "$status" 1
	assert_eq "${stderr_lines[0]}" "trace-import: $D/h.json: event at byte 1: 'ts' does not fit in 64-bit nanoseconds"
	[[ "$stderr" == *"numbers beyond 64 bits (kept in args as text): 3"* ]]
	[[ "$stderr" == *"events with invalid UTF-8 (bad bytes became U+FFFD): 1"* ]]
	run -0 trace-dump --json "$D/out.tkt"
	assert_eq "$(jq -c 'select(.name == "big") | .args' <<< "$output")" '{"Comms Id":"18446744073709551615","r":"1e400","x":0.1}'
	assert_eq "$(jq -r 'select(.kind == "range" and (.name | startswith("bad"))) | .name' <<< "$output")" "bad $(printf '\xef\xbf\xbd') utf8"
	[[ "$(trace-dump -k kernel "$D/out.tkt")" == *" corr=18446744073709551615" ]]
}

@test "string, missing and null pids and tids; E without B; negative durations" {
	printf '[{"ph":"X","ts":1,"dur":1,"tid":null,"name":"a"},{"ph":"i","ts":2,"name":"b"},{"ph":"X","ts":3,"dur":1,"pid":"Spans","tid":"x","name":"c"},{"ph":"X","ts":3,"dur":1,"pid":"7","tid":"8","name":"d"},{"ph":"E","ts":4,"pid":1,"tid":1},{"ph":"X","ts":5,"dur":-3,"name":"e"}]' > "$D/i.json"
	import "$D/i.json" -v
	assert_eq "$status" 0
	run -0 trace-dump --json "$D/out.tkt"
	assert_eq "$(jq -r '"\(.name) \(.pid) \(.tid)"' <<< "$output" | paste -sd,)" \
		"a 0 0,b 0 0,c 4294967297 4294967298,d 7 8,e 0 0"
	run -0 trace-dump --info "$D/out.tkt"
	[[ "$output" == *"argv: Spans"* && "$output" == *"(x)"* ]]
	import "$D/i.json" -v
	[[ "$stderr" == *"  E  (none)                           1 -> dropped: end without a begin 1"* ]]
	[[ "$stderr" == *"negative 'dur' set to 0: 1"* ]]
}

@test "the older Kineto dialect: capitalised categories, string tids" {
	printf '{"traceEvents":[{"ph":"X","cat":"Operator","name":"aten::add","pid":25738,"tid":"25738","ts":1,"dur":2,"args":{"external id":4}},{"ph":"X","cat":"Runtime","name":"cudaLaunchKernel","pid":25738,"tid":"25738","ts":2,"dur":1,"args":{"correlation":5}},{"ph":"X","cat":"Kernel","name":"add_kernel","pid":0,"tid":"stream 7","ts":3,"dur":1,"args":{"device":0,"stream":7,"correlation":5}},{"ph":"s","cat":"async","name":"launch","id":5,"pid":25738,"tid":"25738","ts":2},{"ph":"f","cat":"async","name":"launch","id":5,"pid":0,"tid":"stream 7","ts":3,"bp":"e"},{"ph":"X","cat":"Memcpy","name":"Memcpy DtoH (Device -> Pinned)","pid":0,"tid":"stream 7","ts":5,"dur":1,"args":{"bytes":16}}]}' > "$D/k.json"
	import "$D/k.json"
	assert_eq "$status" 0
	run -0 trace-dump "$D/out.tkt"
	assert_eq "${#lines[@]}" 4
	[[ "${lines[0]}" == *"range "*"pid 25738/tid 25738"*"aten::add domain=Operator"* ]]
	[[ "${lines[1]}" == *"api "*"cudaLaunchKernel runtime corr=5"* ]]
	[[ "${lines[2]}" == *"kernel "*"GPU 0 stream 7"*"add_kernel"*"corr=5"* ]]
	[[ "${lines[3]}" == *"memcpy "*"GPU 0 stream 7"*"DtoH Device->Pinned bytes=16"* ]]
}

# ---- trace-to-chrome and back ----------------------------------------------------------

@test "round trip: trace-to-chrome | trace-import gives back the same events" {
	command -v trace-to-chrome >/dev/null ||
		skip "trace-to-chrome is not built yet (the round trip starts running when it is)"
	S=$(synth_trace rt.tkt --runs 2 -n 5000)
	trace-to-chrome "$S" | trace-import > "$D/back.tkt"
	# the same events; rusage comes back in microseconds (the JSON's unit)
	diff <(trace-dump --json "$S" | canon "") <(trace-dump --json "$D/back.tkt" | canon "")
	# devices and metadata too
	diff <(trace-dump --info --json "$S" | jq -c '.devices') \
	     <(trace-dump --info --json "$D/back.tkt" | jq -c '.devices')
	assert_eq "$(trace-dump --info --json "$D/back.tkt" | jq -r '.metadata.command')" \
	          "$(trace-dump --info --json "$S" | jq -r '.metadata.command')"
}

@test "round trip of an imported Kineto trace keeps its GPU work" {
	command -v trace-to-chrome >/dev/null ||
		skip "trace-to-chrome is not built yet (the round trip starts running when it is)"
	shared_data hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz J
	import "$J"
	trace-to-chrome "$D/out.tkt" | trace-import > "$D/back.tkt"
	# pids and tids of Kineto's made-up lanes are made up again
	k=kernel,memcpy,memset,api,sync
	diff <(trace-dump --json "$D/out.tkt" | canon pid,tid,thread $k) \
	     <(trace-dump --json "$D/back.tkt" | canon pid,tid,thread $k)
}

@test "progress: on a terminal's stderr once the import takes TK_PROGRESS_AFTER, erased at the end; nothing otherwise" {
	command -v script > /dev/null || skip "script(1) is not installed"
	shared_data ncompass/flops_example/test_trace.pt.trace.json F
	size=$(stat -c %s "$F")
	# script(1) gives the command a terminal for stderr
	TK_PROGRESS_AFTER=0 script -qec "trace-import -o '$D/tty.tkt' '$F'" /dev/null < /dev/null > "$D/tty.out"
	python3 - "$D/tty.out" "$F" "$size" <<'PY'
import re, sys
out = open(sys.argv[1], "rb").read().decode()
lines = re.findall(r"\r(trace-import: [^\r\x1b]*)\x1b\[K", out)
assert lines, repr(out[:200])
pcts = [int(re.search(r": +([0-9]+)% \(", l).group(1)) for l in lines]
assert all(l.startswith("trace-import: %s: " % sys.argv[2]) for l in lines)
assert pcts == sorted(pcts) and 0 <= pcts[0] and pcts[-1] <= 100
assert ("of %.1f MiB" % (int(sys.argv[3]) / 2**20)) in lines[0]
# the last thing written erases the line
assert out.endswith("\r\x1b[K"), repr(out[-20:])
PY
	# not a terminal: nothing on stderr, the same trace
	run -0 --separate-stderr env TK_PROGRESS_AFTER=0 trace-import -o "$D/pipe.tkt" "$F"
	assert_eq "$stderr" ""
	cmp "$D/tty.tkt" "$D/pipe.tkt"
	# a terminal, but quicker than the default second: nothing (not
	# timed under valgrind or the sanitizers, which are slower)
	if under_valgrind || under_sanitizers; then return 0; fi
	script -qec "trace-import -o '$D/quick.tkt' '$F'" /dev/null < /dev/null > "$D/quick.out"
	assert_eq "$(wc -c < "$D/quick.out")" 0
}
