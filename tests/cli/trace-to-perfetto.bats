#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-to-perfetto: Perfetto's protobuf trace format.  Every output is
# decoded by protoc with Perfetto's published schema, and perfetto_check.py
# rebuilds the timeline from that text (interning, the incremental clock,
# begin/end stacks, flow ids) and compares it with trace-dump --json of the
# .tkt: never with trace-to-perfetto's own figures.

load helpers

CHECKS="$BATS_TEST_DIRNAME"

setup() {
	PROTO=$TK_SHARED/testdata/perfetto/perfetto_trace.proto
	export PERFETTO_PROTO=$PROTO
	T=$(synth_trace run.tkt --steps 3 --layers 2)
	P=$BATS_TEST_TMPDIR/run.pftrace
}

need_protoc() {
	command -v protoc > /dev/null || skip "protoc not installed (apt-get install protobuf-compiler)"
	[ -e "$PROTO" ] || skip "Perfetto's schema not found: $PROTO"
}

# protoc's text of a Perfetto file
decoded() {
	protoc --decode=perfetto.protos.Trace -I "$(dirname "$PROTO")" perfetto_trace.proto < "$1"
}

# check TKT PERFETTO... [-- checker options]: the checker's verdict
check() {
	local tkt=$1
	shift
	trace-dump --json "$tkt" > "$BATS_TEST_TMPDIR/dump.jsonl"
	python3 "$CHECKS/perfetto_check.py" "${OPTS[@]}" "$BATS_TEST_TMPDIR/dump.jsonl" "$@"
}
OPTS=()

# the rebuilt events as JSON lines
events() {
	python3 "$CHECKS/perfetto_check.py" --events "$@"
}

fixture() {
	mktrace > "$BATS_TEST_TMPDIR/$1"
	printf '%s\n' "$BATS_TEST_TMPDIR/$1"
}

@test "decodes with Perfetto's schema, quiet, and holds every event of the trace" {
	need_protoc
	run -0 --separate-stderr trace-to-perfetto -o "$P" "$T"
	assert_eq "$output$stderr" ""
	run -0 check "$T" "$P"
	[[ "$output" == "ok: 1 files, "* ]]
	# the synthetic loop has kernels, calls, copies, ranges and counters,
	# and every launch has its flow
	[[ "$output" == *" kernel "[1-9]* ]]
	[[ "$output" == *" counter "[1-9]* ]]
	n=$(trace-dump --json -k kernel,memcpy,memset "$T" | jq -s '[.[].correlation] | unique | length')
	[[ "$output" == *", $n flows from calls to GPU work" ]]
}

@test "the checker fails on an end without a begin, a slice left open, a wrong trace" {
	need_protoc
	d=$BATS_TEST_TMPDIR
	cat > "$d/bad.txt" <<'EOF'
packet { trusted_packet_sequence_id: 1 sequence_flags: 1
  track_descriptor { uuid: 1 name: "stream 7" } }
packet { trusted_packet_sequence_id: 1 timestamp: 100
  track_event { type: TYPE_SLICE_BEGIN track_uuid: 1 name: "k1" categories: "kernel" } }
packet { trusted_packet_sequence_id: 1 timestamp: 150
  track_event { type: TYPE_SLICE_BEGIN track_uuid: 1 name: "k2" categories: "kernel" } }
packet { trusted_packet_sequence_id: 1 timestamp: 200
  track_event { type: TYPE_SLICE_END track_uuid: 1 } }
packet { trusted_packet_sequence_id: 1 timestamp: 250
  track_event { type: TYPE_SLICE_END track_uuid: 1 } }
packet { trusted_packet_sequence_id: 1 timestamp: 300
  track_event { type: TYPE_SLICE_END track_uuid: 1 } }
EOF
	protoc --encode=perfetto.protos.Trace -I "$(dirname "$PROTO")" perfetto_trace.proto \
		< "$d/bad.txt" > "$d/bad.pftrace"
	run -1 events "$d/bad.pftrace"
	[[ "$output" == *"with no slice open"* ]]
	head -n 6 "$d/bad.txt" > "$d/open.txt"
	protoc --encode=perfetto.protos.Trace -I "$(dirname "$PROTO")" perfetto_trace.proto \
		< "$d/open.txt" > "$d/open.pftrace"
	run -1 events "$d/open.pftrace"
	[[ "$output" == *"slices left open"* ]]
	# a right file against another trace's events
	trace-to-perfetto -o "$P" "$T"
	S=$(synth_trace other.tkt --steps 2 --layers 1 --seed 5)
	run -1 check "$S" "$P"
	[[ "$output" == *"events"*"the .tkt"* ]]
}

@test "layout: process and thread tracks, a GPU track with a track per stream" {
	need_protoc
	trace-to-perfetto -o "$P" "$T"
	mapfile -t lines < <(events "$P" | jq -r 'select(.kind != "counter") | "\(.kind)\t\(.track_name)"' | sort -u)
	printf '%s\n' "${lines[@]}" | grep -qxF "$(printf 'kernel\tstream 7 (compute)')"
	printf '%s\n' "${lines[@]}" | grep -qxF "$(printf 'memcpy\tstream 13 (copy)')"
	printf '%s\n' "${lines[@]}" | grep -qxF "$(printf 'range\tpt_data_worker')"
	printf '%s\n' "${lines[@]}" | grep -qxF "$(printf 'api\tpython3')"
	printf '%s\n' "${lines[@]}" | grep -qxF "$(printf 'process\tpython3')"
	# descriptors: the GPU is named after the device, streams are its
	# children, threads have their process's pid, the process its argv
	decoded "$P" > "$BATS_TEST_TMPDIR/p.txt"
	python3 - "$CHECKS" "$BATS_TEST_TMPDIR/p.txt" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from perfetto_check import packets, one
tracks = {}
for p in packets(open(sys.argv[2])):
    if "track_descriptor" in p:
        d = p["track_descriptor"][0]
        tracks[one(d, "uuid")] = d
gpu = [u for u, d in tracks.items() if str(one(d, "name", "")).startswith("GPU 0: ")]
assert len(gpu) == 1, tracks
streams = [d for d in tracks.values() if one(d, "parent_uuid") == gpu[0] and "counter" not in d]
assert streams and all(one(d, "name").startswith("stream ") for d in streams), streams
procs = {u: d["process"][0] for u, d in tracks.items() if "process" in d}
assert [one(p, "pid") for p in procs.values()] == [4242], procs
threads = [d for d in tracks.values() if "thread" in d]
assert threads and all(one(d["thread"][0], "pid") == 4242 and one(d, "parent_uuid") in procs
                       for d in threads), threads
PY
}

@test "names interned once per file, timestamps incremental, state cleared once" {
	need_protoc
	trace-to-perfetto -o "$P" "$T"
	decoded "$P" > "$BATS_TEST_TMPDIR/p.txt"
	# each name is defined once, and far fewer times than used
	defs=$(grep -A2 '^    event_names {' "$BATS_TEST_TMPDIR/p.txt" | grep -c '^      name:')
	uniq=$(grep -A2 '^    event_names {' "$BATS_TEST_TMPDIR/p.txt" | grep '^      name:' | sort -u | wc -l)
	assert_eq "$defs" "$uniq"
	uses=$(grep -c 'name_iid:' "$BATS_TEST_TMPDIR/p.txt")
	[ "$uses" -gt $((defs * 10)) ]
	# one absolute time (the clock snapshot's packet), the rest deltas
	assert_eq "$(grep -c 'timestamp_clock_id: 6$' "$BATS_TEST_TMPDIR/p.txt")" 1
	grep -q 'is_incremental: true' "$BATS_TEST_TMPDIR/p.txt"
	# the first packet clears the incremental state; no other has flags
	# (SEQ_NEEDS_INCREMENTAL_STATE only skips packets from before a clear)
	assert_eq "$(grep 'sequence_flags:' "$BATS_TEST_TMPDIR/p.txt")" "  sequence_flags: 1"
	# whole-number counter samples are varints
	grep -q '^    counter_value: ' "$BATS_TEST_TMPDIR/p.txt"
	# far smaller than the Chrome JSON of the same trace
	S=$(synth_trace big.tkt -n 20000)
	trace-to-perfetto -o "$P" "$S"
	trace-to-chrome -o "$BATS_TEST_TMPDIR/run.json" "$S"
	[ $(( $(stat -c %s "$BATS_TEST_TMPDIR/run.json") / $(stat -c %s "$P") )) -ge 7 ]
}

@test "whole microseconds go on the microsecond clock, other times on the ns one" {
	need_protoc
	# whole microseconds, then times with nanoseconds, then whole again
	python3 - > "$BATS_TEST_TMPDIR/us.jsonl" <<'PY'
print('{"def":"process","ref":"p","pid":1,"host":"h","argv":["app"]}')
print('{"def":"thread","ref":"t","process":"p","tid":1,"name":"main"}')
t = 5_000_000_000
for i in range(600):
    ns = 0 if i < 200 or i >= 400 else 1 + i % 997
    print('{"kind":"range","track":"t","ts":%d,"dur":%d,"name":"op%d"}'
          % (t + ns, 3000 + (i % 7) * 1000, i % 5))
    t += 7000 + (i % 13) * 1000
PY
	mktrace < "$BATS_TEST_TMPDIR/us.jsonl" > "$BATS_TEST_TMPDIR/us.tkt"
	trace-to-perfetto -o "$P" "$BATS_TEST_TMPDIR/us.tkt"
	run -0 check "$BATS_TEST_TMPDIR/us.tkt" "$P"
	decoded "$P" > "$BATS_TEST_TMPDIR/p.txt"
	# the default goes to 65, back to 64 for the nanoseconds, then to 65
	assert_eq "$(grep -A1 'trace_packet_defaults {' "$BATS_TEST_TMPDIR/p.txt" | grep -o 'timestamp_clock_id: [0-9]*' | tr '\n' ' ')" \
	          "timestamp_clock_id: 64 timestamp_clock_id: 65 timestamp_clock_id: 64 timestamp_clock_id: 65 "
	grep -q 'unit_multiplier_ns: 1000' "$BATS_TEST_TMPDIR/p.txt"
	# a nanosecond trace never leaves clock 64
	trace-to-perfetto -o "$P" "$T"
	! decoded "$P" | grep -q 'timestamp_clock_id: 65'
}

@test "overlapping GPU work goes to an extra track; nothing is lost" {
	need_protoc
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
	trace-to-perfetto -o "$P" "$F"
	run -0 check "$F" "$P"
	mapfile -t lines < <(events "$P" | jq -r '"\(.name)\t\(.track_name)"')
	printf '%s\n' "${lines[@]}" | grep -qxF "$(printf 'k1\tstream 7')"
	printf '%s\n' "${lines[@]}" | grep -qxF "$(printf 'k4\tstream 7')"
	printf '%s\n' "${lines[@]}" | grep -qxF "$(printf 'k2 (programmatic dependent launch)\tstream 7 (overlap 1)')"
	printf '%s\n' "${lines[@]}" | grep -qxF "$(printf 'k3\tstream 7 (overlap 2)')"
	printf '%s\n' "${lines[@]}" | grep -qxF "$(printf "crosses outer's end\tmain (overlap 1)")"
	decoded "$P" | grep -A1 'key: "tracekit.slices_moved_to_overlap_tracks"' | grep -q 'string_value: "3"'
}

@test "unsorted input (spans written when they end) converts like sorted input" {
	need_protoc
	S=$BATS_TEST_TMPDIR
	python3 "$CHECKS/chrome-nested.py" --spans 1500 --order begin --watermarks | mktrace > "$S/sorted.tkt"
	python3 "$CHECKS/chrome-nested.py" --spans 1500 --order end --watermarks | mktrace > "$S/ended.tkt"
	trace-to-perfetto -o "$S/a.pftrace" "$S/sorted.tkt"
	trace-to-perfetto -o "$S/b.pftrace" "$S/ended.tkt"
	run -0 check "$S/ended.tkt" "$S/b.pftrace"
	x() { events "$1" | jq -c '[.kind, .track_name, .ts, .dur, .name]' | sort | md5sum; }
	assert_eq "$(x "$S/b.pftrace")" "$(x "$S/a.pftrace")"
	# in order, so no packet needed an absolute time
	assert_eq "$(decoded "$S/b.pftrace" | grep -c 'timestamp_clock_id: 6$')" 1
}

@test "without watermarks and little memory, late events still nest and all arrive" {
	need_protoc
	S=$BATS_TEST_TMPDIR
	python3 "$CHECKS/chrome-nested.py" --spans 1500 --order end | mktrace > "$S/ended.tkt"
	trace-to-perfetto --buffer 0 -o "$P" "$S/ended.tkt"
	run -0 check "$S/ended.tkt" "$P"
	decoded "$P" > "$S/p.txt"
	# early releases go back in time: those packets have absolute times
	[ "$(grep -c 'timestamp_clock_id: 6$' "$S/p.txt")" -gt 10 ]
	n=$(grep -A1 'key: "tracekit.events_released_early"' "$S/p.txt" | sed -n 's/.*string_value: "\(.*\)"/\1/p')
	[ "$n" -gt 100 ]
	run -2 --separate-stderr trace-to-perfetto --buffer lots "$S/ended.tkt"
	assert_eq "${stderr_lines[0]}" "trace-to-perfetto: invalid --buffer 'lots' (bytes, or with k, M, G)"
}

@test "async ranges, marks, dropped notices, memory and imported flows" {
	need_protoc
	F=$(fixture misc.tkt <<'EOF'
{"def":"process","ref":"p","pid":300,"host":"h","argv":["app"],"label":"rank0"}
{"def":"thread","ref":"t","process":"p","tid":300,"name":"main"}
{"def":"thread","ref":"u","process":"p","tid":301,"name":"io"}
{"kind":"range","track":"t","ts":100,"dur":900,"name":"work","args":{"External id":42,"Sequence number":7,"dims":[[2,3],[4]],"note":"x"}}
{"kind":"range","track":"u","ts":150,"dur":300,"name":"read"}
{"kind":"async_range","track":"t","ts":120,"dur":5000,"name":"request","id":9,"end_track":"u"}
{"kind":"async_range","track":"t","ts":130,"dur":100,"name":"request","id":10}
{"kind":"mark","track":"t","ts":500,"name":"checkpoint","payload":1.5}
{"kind":"dropped","track":"p","ts":700,"count":12,"reason":"buffer full"}
{"kind":"flow","track":"t","ts":200,"id":5,"phase":0,"category":"fwdbwd","name":"fwdbwd"}
{"kind":"flow","track":"u","ts":200,"id":5,"phase":2,"category":"fwdbwd","name":"fwdbwd"}
EOF
)
	trace-to-perfetto -o "$P" "$F"
	run -0 check "$F" "$P"
	[[ "$output" == *"async_range 2"*"flow 2"*"mark 1"* ]]
	mapfile -t lines < <(events "$P" | jq -c 'select(.kind == "async_range") | [.name, .track_name, .ts, .dur, .args.id]')
	# the second begins and ends inside the first: it nests on the same track
	assert_eq "${lines[*]}" '["request","async ranges",120,5000,9] ["request","async ranges",130,100,10]'
	assert_eq "$(events "$P" | jq -c 'select(.kind == "mark" or .kind == "dropped") | [.name, .args.payload // .args.count, .args.reason]')" \
	          "$(printf '%s\n' '["checkpoint",1.5,null]' '["dropped events",12,"buffer full"]')"
	# imported args keep their types and nesting
	assert_eq "$(events "$P" | jq -c 'select(.name == "work") | .args')" \
	          '{"External id":42,"Sequence number":7,"dims":[[2,3],[4]],"note":"x"}'
	# the imported flow links its two ends
	assert_eq "$(events "$P" | jq -c 'select(.kind == "flow") | [.track_name, (.flow_out | length), (.flow_in | length)]' | tr '\n' ' ')" \
	          '["main",1,0] ["io",0,1] '
	decoded "$P" | grep -q 'process_labels: "rank0"'
}

@test "imported args that repeat a shape keep every value and type" {
	need_protoc
	# many events of each shape (the converter learns a shape from its
	# first event and annotates the rest without parsing), with negative
	# numbers, "-0", digits in keys and strings, reals, nesting, a number
	# too long for the shortcut, a duplicate key and escapes
	python3 - > "$BATS_TEST_TMPDIR/args.jsonl" <<'PY'
import json, random
random.seed(7)
print(json.dumps({"def": "process", "ref": "p", "pid": 1, "host": "h", "argv": ["app"]}))
print(json.dumps({"def": "thread", "ref": "t", "process": "p", "tid": 1, "name": "main"}))
for i in range(400):
    n = random.randrange(10 ** random.randrange(1, 12))
    shapes = [
        '{"External id":%d,"Ev Idx":%d}' % (i, n),
        '{"neg":-%d,"zero":-0,"s":"vee","b":true,"f":false,"n":null}' % n,
        '{"k2":%d,"s":"x%d"}' % (n, i % 3),
        '{"r":%d.5,"e":1e%d}' % (n, i % 5),
        '{"dims":[[%d,3],[4]],"o":{"a":%d},"empty":[]}' % (n, i),
        '{"big":%d}' % (10 ** 18 + n),
        '{"a":"q","a":%d}' % n,
        '{"t":"caf\\u00e9 \\\"%d\\\"","v":%d}' % (i, n),
    ]
    print('{"kind":"range","track":"t","ts":%d,"dur":5,"name":"op%d","args":%s}'
          % (10 * i, i % 8, shapes[i % 8]))
PY
	mktrace < "$BATS_TEST_TMPDIR/args.jsonl" > "$BATS_TEST_TMPDIR/args.tkt"
	trace-to-perfetto -o "$P" "$BATS_TEST_TMPDIR/args.tkt"
	run -0 check "$BATS_TEST_TMPDIR/args.tkt" "$P"
	[[ "$output" == *"range 400"* ]]
	# the checker compared every event's args with trace-dump's; and one
	# event of the shortcut's shapes by hand
	assert_eq "$(events "$P" | jq -cS 'select(.name == "op1") | .args' | sed -n 2p)" \
	          "$(jq -cS 'select(.name == "op1") | .args | .n = "null" | .zero = 0' "$BATS_TEST_TMPDIR/args.jsonl" | sed -n 2p)"
}

@test "--from, --to and --name keep what trace-to-chrome keeps" {
	need_protoc
	OPTS=(--subset)
	trace-to-perfetto --from 2s --to 3s -o "$P" "$T"
	run -0 check "$T" "$P"
	# the trace start is its earliest begin (a sorted trace: the first chunk's)
	want=$(trace-dump --json "$T" | python3 -c '
import json, sys
ev = [json.loads(l) for l in sys.stdin]
s = min(e["ts"] for e in ev)
print(sum(1 for e in ev if e["ts"] + e["dur"] >= s + 2000000000 and e["ts"] <= s + 3000000000))')
	assert_eq "$(events "$P" | wc -l)" "$want"
	trace-to-perfetto --name '^cuda(LaunchKernel|MemcpyAsync)$' -o "$P" "$T"
	run -0 check "$T" "$P"
	want=$(trace-dump --json "$T" | jq -s 'map(select(.kind == "counter" or .kind == "dropped" or (.name | test("^cuda(LaunchKernel|MemcpyAsync)$")))) | length')
	assert_eq "$(events "$P" | wc -l)" "$want"
	assert_eq "$(events "$P" | jq -r 'select(.kind != "counter") | .name' | sort -u | tr '\n' ' ')" \
	          "cudaLaunchKernel cudaMemcpyAsync "
	run -2 --separate-stderr trace-to-perfetto --to 1s --from 2s "$T"
	assert_eq "${stderr_lines[0]}" "trace-to-perfetto: --to must not be before --from"
}

@test "--no-flows and --no-counters leave them out" {
	need_protoc
	trace-to-perfetto --no-flows --no-counters -o "$P" "$T"
	assert_eq "$(decoded "$P" | grep -c 'flow_ids')" 0
	assert_eq "$(events "$P" | jq -r 'select(.kind == "counter")' | wc -l)" 0
	# everything else is there
	trace-dump --json "$T" | grep -v '"kind":"counter"' > "$BATS_TEST_TMPDIR/d.jsonl"
	run -0 python3 "$CHECKS/perfetto_check.py" --no-flows "$BATS_TEST_TMPDIR/d.jsonl" "$P"
}

@test "--split: files within the size, each loadable alone, together the whole trace" {
	need_protoc
	S=$(synth_trace big.tkt -n 30000)
	trace-to-perfetto --split 64k -o "$BATS_TEST_TMPDIR/s.pftrace" "$S"
	files=("$BATS_TEST_TMPDIR"/s-*.pftrace)
	[ "${#files[@]}" -gt 5 ]
	[ -e "$BATS_TEST_TMPDIR/s-001.pftrace" ]
	for f in "${files[@]}"; do
		[ "$(stat -c %s "$f")" -le 65536 ]
		# alone: it clears its sequence, describes its tracks, closes its slices
		events "$f" > /dev/null
		decoded "$f" | grep -q 'key: "tracekit.version"'
	done
	run -0 check "$S" "${files[@]}"
	[[ "$output" == "ok: ${#files[@]} files, $(trace-dump "$S" | wc -l) events"* ]]
	run -2 --separate-stderr trace-to-perfetto --split 1k -o x "$S"
	[[ "${stderr_lines[0]}" == "trace-to-perfetto: invalid --split '1k'"* ]]
	run -2 --separate-stderr trace-to-perfetto --split 1M "$S"
	assert_eq "${stderr_lines[0]}" "trace-to-perfetto: --split needs -o FILE (the files are named after it)"
}

@test "metadata and GPUs as trace attributes" {
	need_protoc
	trace-to-perfetto -o "$P" "$T"
	decoded "$P" > "$BATS_TEST_TMPDIR/p.txt"
	python3 - "$CHECKS" "$BATS_TEST_TMPDIR/p.txt" <(trace-dump --info "$T") <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from perfetto_check import packets, one
attrs = {}
for p in packets(open(sys.argv[2])):
    for a in one(p, "trace_attributes", {}).get("attribute", []):
        attrs[one(a, "key")] = one(a, "string_value")
for line in open(sys.argv[3]):
    line = line.strip()
    if line.startswith("meta "):
        k, _, v = line[5:].partition(" = ")
        assert attrs.get(k) == v, (k, v, attrs.get(k))
assert attrs["command"].startswith("python3 train.py"), attrs
assert attrs["gpu 0"].startswith("NVIDIA H100"), attrs
PY
}

@test "several inputs and concatenated traces become one timeline" {
	need_protoc
	S=$(synth_trace two.tkt --steps 2 --layers 1 --pid 777 --seed 3)
	cat "$T" "$S" > "$BATS_TEST_TMPDIR/cat.tkt"
	trace-to-perfetto -o "$P" "$BATS_TEST_TMPDIR/cat.tkt"
	OPTS=(--no-flows)
	run -0 check "$BATS_TEST_TMPDIR/cat.tkt" "$P"
	trace-to-perfetto "$T" "$S" > "$BATS_TEST_TMPDIR/two.pftrace"
	run -0 check "$BATS_TEST_TMPDIR/cat.tkt" "$BATS_TEST_TMPDIR/two.pftrace"
	assert_eq "$(decoded "$P" | grep -A1 '^    process {' | grep -c 'pid: \(4242\|777\)$')" 2
}

@test "an empty trace gives a valid trace" {
	need_protoc
	F=$(fixture empty.tkt < /dev/null)
	run -0 trace-to-perfetto -o "$P" "$F"
	assert_eq "$(events "$P" | wc -l)" 0
	decoded "$P" | grep -A1 'key: "tracekit.events_read"' | grep -q 'string_value: "0"'
}

@test "impossible times are counted, not written" {
	need_protoc
	F=$(fixture times.tkt <<'EOF'
{"def":"process","ref":"p","pid":1,"host":"h","argv":["x"]}
{"def":"thread","ref":"t","process":"p","tid":1,"name":"main"}
{"kind":"range","track":"t","ts":1000,"dur":5,"name":"fine"}
{"kind":"range","track":"t","ts":9223372036854775000,"dur":50,"name":"past the end of time"}
EOF
)
	run -0 trace-to-perfetto -o "$P" "$F"
	assert_eq "$(events "$P" | jq -r .name)" "fine"
	decoded "$P" | grep -A1 'tracekit.events_with_impossible_times_skipped' | grep -q 'string_value: "1"'
}

@test "stdin, -o FILE, --output FILE and - give the same bytes; a terminal is refused" {
	trace-to-perfetto -o "$P" "$T"
	trace-to-perfetto < "$T" > "$BATS_TEST_TMPDIR/b.pftrace"
	trace-to-perfetto - < "$T" > "$BATS_TEST_TMPDIR/c.pftrace"
	trace-to-perfetto --output "$BATS_TEST_TMPDIR/d.pftrace" "$T"
	cmp "$P" "$BATS_TEST_TMPDIR/b.pftrace"
	cmp "$P" "$BATS_TEST_TMPDIR/c.pftrace"
	cmp "$P" "$BATS_TEST_TMPDIR/d.pftrace"
	command -v script > /dev/null || skip "script(1) not installed: cannot give it a terminal"
	run script -qec "trace-to-perfetto '$T'" /dev/null
	[ "$status" -eq 2 ]
	[[ "$output" == *"trace-to-perfetto: refusing to write a binary trace to a terminal"* ]]
}

@test "bad input: one line naming the file, exit 1, still a valid trace" {
	need_protoc
	d=$BATS_TEST_TMPDIR
	: > "$d/empty.tkt"
	run -1 --separate-stderr trace-to-perfetto -o "$P" "$d/empty.tkt"
	assert_eq "$stderr" "trace-to-perfetto: $d/empty.tkt: empty input (not a trace)"
	run -1 --separate-stderr trace-to-perfetto -o "$P" "$d/missing.tkt"
	assert_eq "$stderr" "trace-to-perfetto: $d/missing.tkt: No such file or directory"
	S=$(synth_trace big.tkt -n 20000 --chunk-bytes 32768)
	size=$(stat -c %s "$S")
	head -c $((size / 2)) "$S" > "$d/half.tkt"
	run -1 --separate-stderr trace-to-perfetto -o "$d/half.pftrace" "$d/half.tkt"
	[[ "$stderr" =~ ^trace-to-perfetto:\ .*/half.tkt:\ truncated\ chunk\ at\ byte\ [0-9]+$ ]]
	# what was read is there, whole: the events before the damage
	trace-dump "$d/half.tkt" > /dev/null 2>&1 || true
	OPTS=(--subset)
	run -0 check "$d/half.tkt" "$d/half.pftrace"
	[ "$(events "$d/half.pftrace" | wc -l)" -gt 1000 ]
}

@test "--help, --version and usage errors" {
	run -0 trace-to-perfetto --help
	assert_eq "${lines[0]}" "Usage: trace-to-perfetto [OPTIONS] [FILE...]"
	run -0 trace-to-perfetto --version
	[[ "$output" == "trace-to-perfetto (tracekit) "* ]]
	run -2 --separate-stderr trace-to-perfetto --bogus
	assert_eq "${stderr_lines[0]}" "trace-to-perfetto: unknown option '--bogus'"
	run -2 --separate-stderr trace-to-perfetto -o
	assert_eq "${stderr_lines[0]}" "trace-to-perfetto: option '-o' needs a value"
	run -2 --separate-stderr trace-to-perfetto -o /nonexistent/dir/x.pftrace "$T"
	assert_eq "$stderr" "trace-to-perfetto: /nonexistent/dir/x.pftrace: No such file or directory"
}

@test "every long option in --help is in the man page, which mandoc passes" {
	for o in $(trace-to-perfetto --help | grep -o -- '--[a-z-]*' | sort -u); do
		grep -q -- "Fl Fl ${o#--}" "$TK_SRC/man/trace-to-perfetto.1" \
			|| { echo "missing from the man page: $o"; return 1; }
	done
	command -v mandoc > /dev/null || skip "mandoc not installed"
	run -0 mandoc -Tlint -Wwarning "$TK_SRC/man/trace-to-perfetto.1"
	assert_eq "$output" ""
}

@test "a closed pipe ends the output quietly; a full disk is an error" {
	n=200000
	under_valgrind && n=20000
	S=$(synth_trace p.tkt -n $n)
	run -0 --separate-stderr bash -c "trace-to-perfetto '$S' | head -c 100 > /dev/null"
	assert_eq "$stderr" ""
	if [ -w /dev/full ]; then
		run -2 --separate-stderr trace-to-perfetto -o /dev/full "$S"
		assert_eq "$stderr" "trace-to-perfetto: /dev/full: write error: No space left on device"
	fi
}

@test "a recording of the sample program converts and checks" {
	need_protoc
	command -v trace-record > /dev/null || skip "trace-record not built"
	export TMPDIR=$BATS_TEST_TMPDIR
	R=$BATS_TEST_TMPDIR/rec.tkt
	app=$TK_BUILD/tests/apps/nvtx_sample
	if [ -x "$app" ]; then
		trace-record -o "$R" -s 10ms -- "$app" --steps 3 --fork --domain --async
	else
		trace-record -o "$R" -s 10ms -- sh -c 'seq 100000 | sort -n | tail -1 > /dev/null'
	fi
	trace-to-perfetto -o "$P" "$R"
	run -0 check "$R" "$P"
	[[ "$output" == *"process "[1-9]* ]]
	decoded "$P" | grep -q 'key: "command"'
}

@test "every real trace in shared/testdata, imported, converts and checks" {
	need_protoc
	command -v trace-import > /dev/null || skip "trace-import not built"
	[ -d "$TK_SHARED/testdata" ] || skip "real test data not found: $TK_SHARED/testdata"
	n=0
	while IFS= read -r src; do
		name=$(basename "$src")
		tkt=$BATS_TEST_TMPDIR/real.tkt
		trace-import -o "$tkt" "$src" 2> /dev/null || [ $? -eq 1 ]
		trace-to-perfetto -o "$P" "$tkt"
		run check "$tkt" "$P"
		[ "$status" -eq 0 ] || { echo "$src: $output"; return 1; }
		n=$((n + 1))
		# under valgrind or the sanitizers, the smallest few only: every
		# trace is checked by the plain build's run
		{ under_valgrind || under_sanitizers; } && [ $n -ge 3 ] && break
	done < <(find "$TK_SHARED/testdata" -name '*.json' -o -name '*.json.gz' -o -name '*.gz' |
	         xargs ls -S -r)
	[ "$n" -gt 0 ]
}

@test "instants of global scope go to a track of no process; others stay on theirs" {
	need_protoc
	cat > "$BATS_TEST_TMPDIR/mix.json" <<'JSON'
{"traceEvents":[
{"ph":"X","name":"work","cat":"c","pid":1,"tid":2,"ts":10,"dur":100},
{"ph":"i","name":"global","cat":"c","s":"g","pid":1,"tid":2,"ts":20},
{"ph":"i","name":"thread","cat":"c","s":"t","pid":1,"tid":2,"ts":40},
{"ph":"i","name":"global too","s":"g","pid":7,"tid":0,"ts":50}
]}
JSON
	trace-import -o "$BATS_TEST_TMPDIR/mix.tkt" "$BATS_TEST_TMPDIR/mix.json"
	trace-to-perfetto -o "$P" "$BATS_TEST_TMPDIR/mix.tkt"
	run -0 check "$BATS_TEST_TMPDIR/mix.tkt" "$P"
	assert_eq "$(events "$P" | jq -r 'select(.kind == "mark") | "\(.name)=\(.track_name)"' | sort)" \
	          "$(printf '%s\n' 'global too=global instants' 'global=global instants' 'thread=thread 2')"
	# its descriptor names no parent, process or thread
	decoded "$P" > "$BATS_TEST_TMPDIR/p.txt"
	python3 - "$BATS_TEST_TMPDIR/p.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
descs = re.findall(r"track_descriptor \{(.*?)\n  \}", text, re.S)
mine = [d for d in descs if 'name: "global instants"' in d]
assert len(mine) == 1, mine
assert not re.search(r"parent_uuid|process \{|thread \{", mine[0]), mine[0]
PY
}
