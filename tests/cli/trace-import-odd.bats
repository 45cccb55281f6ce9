#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-import on odd but valid JSON: top-level keys of every type and
# shape (metadata, GPUs, otherData, the bounds on values and keys),
# checked against import_meta_reference.py, which computes what the
# import should keep from the JSON alone.

load helpers

REF=$BATS_TEST_DIRNAME/import_meta_reference.py

setup() {
	D=$BATS_TEST_TMPDIR
}

# meta_of TKT: its metadata as "KEY = VALUE" lines, sorted
meta_of() {
	trace-dump --info "$1" | sed -n 's/^  meta //p' | sort
}

@test "top-level keys of every type: metadata, GPUs, otherData, base time, bounds" {
	python3 "$REF" make "$D/odd.json"
	run --separate-stderr trace-import -v -o "$D/odd.tkt" "$D/odd.json"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"deviceProperties entries without an id (kept as metadata): 3"* ]]
	[[ "$stderr" == *"systemTraceEvents (ftrace text) not imported: 1"* ]]
	[[ "$stderr" == *"otherData.tracekit (the exporter's report) not kept: 1"* ]]
	{
		python3 "$REF" meta "$D/odd.json"
		echo "import.source = $D/odd.json"
		echo "importer = $(trace-import --version | sed 's/ (tracekit)//')"
	} | sort > "$D/want"
	meta_of "$D/odd.tkt" > "$D/got"
	diff "$D/want" "$D/got"
	# the GPUs, every field trace-to-chrome writes back
	python3 "$REF" devices "$D/odd.json" > "$D/want"
	trace-to-chrome "$D/odd.tkt" | python3 -c '
import json, sys
for d in json.load(sys.stdin)["deviceProperties"]:
    print(json.dumps(d, sort_keys=True))' > "$D/got"
	diff "$D/want" "$D/got"
	# baseTimeNanoseconds as a string of digits shifts the times
	assert_eq "$(trace-dump --json "$D/odd.tkt" | jq .ts)" 1001000
}

@test "deviceProperties that is not an array, a base time that is not a number" {
	printf '{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":5,"dur":1}],"deviceProperties":{"count":2,"kind":"A100"},"baseTimeNanoseconds":"soon"}' > "$D/n.json"
	run --separate-stderr trace-import -v -o "$D/n.tkt" "$D/n.json"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"baseTimeNanoseconds that is not an integer (kept as metadata, not applied): 1"* ]]
	python3 "$REF" meta "$D/n.json" > "$D/want"
	meta_of "$D/n.tkt" | grep -v '^import' > "$D/got"
	diff "$D/want" "$D/got"
	assert_eq "$(trace-dump --json "$D/n.tkt" | jq .ts)" 5000
	assert_eq "$(trace-to-chrome "$D/n.tkt" | jq '.deviceProperties | length')" 0
}

@test "metadata over its bound: the first 4096 values kept and counted; the import's own keys too" {
	python3 -c '
import json
print(json.dumps({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}],
                  "otherData": {"many": list(range(5000))}}))' > "$D/big.json"
	run --separate-stderr trace-import -v -o "$D/big.tkt" "$D/big.json"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"metadata values not kept (over 4096 keys or 1 MiB): 904"* ]]
	meta_of "$D/big.tkt" > "$D/got"
	assert_eq "$(grep -c '^many = ' "$D/got")" 4096
	# the first 4096 values, in order
	diff <(seq 0 4095) <(trace-dump --info "$D/big.tkt" | sed -n 's/^  meta many = //p')
	grep -qx "import.source = $D/big.json" "$D/got"
	grep -q '^importer = trace-import ' "$D/got"
}

@test "counters of every shape, marks by scope, id2 ranges, colours and unknown metadata events" {
	cat > "$D/c.json" <<-'EOF2'
	[{"ph":"C","ts":10,"name":"mem","pid":1,"args":{"used":"12","free":"x","n":3.5}},
	{"ph":"C","ts":11,"name":"pool","pid":1,"id":5,"args":{"bytes":10}},
	{"ph":"C","ts":12,"name":"q","pid":1,"id":"a","args":{"value":2}},
	{"ph":"C","ts":13,"cat":"cc","pid":1,"args":{"flag":true}},
	{"ph":"C","ts":14,"pid":2,"args":{"v":"1e3"}},
	{"ph":"i","ts":12,"name":"glob","s":"g","pid":1,"tid":1},
	{"ph":"i","ts":12,"name":"proc","s":"p","pid":1,"tid":1},
	{"ph":"b","ts":6,"name":"span","cat":"x","id2":{"local":"0x11"},"pid":1,"tid":2},
	{"ph":"e","ts":9,"name":"span","cat":"x","id2":{"local":"0x11"},"pid":1,"tid":3},
	{"ph":"M","name":"weird_meta","pid":1,"args":{"a":1}},
	{"ph":"M","name":"process_sort_index","pid":1,"args":{"sort_index":3}},
	{"ph":"X","ts":5,"dur":1,"name":"red","cname":"good","pid":1,"tid":1,"args":{"color":"#ff0000"}}]
	EOF2
	run --separate-stderr trace-import -v -o "$D/c.tkt" "$D/c.json"
	[ "$status" -eq 0 ]
	# "free": "x" and "flag": true are not numbers
	[[ "$stderr" == *"counter values that are not numbers (not kept): 2"* ]]
	[[ "$stderr" == *"sort indexes not kept (tools order tracks themselves): 1"* ]]
	# a sample per numeric arg; one arg: the event's name, the key its
	# unit unless "value"; several: name.key; an id in brackets; no name
	# nor category: "counter"
	assert_eq "$(trace-dump --info "$D/c.tkt" | sed -n 's/^  track [0-9]*: counter //p' | paste -sd,)" \
		"mem.used,mem.n,pool[5],q[a],counter"
	assert_eq "$(trace-dump --json -k counter "$D/c.tkt" | jq -r '"\(.ts) \(.value) \(.unit)"' | paste -sd,)" \
		"10000 12 ,10000 3.5 ,11000 10 bytes,12000 2 ,14000 1000 v"
	# "s": "g" stays on the thread with its scope as an arg; "p" is the process's
	assert_eq "$(trace-dump --json -k mark "$D/c.tkt" | jq -c '[.name, .tid, .args]' | paste -sd,)" \
		'["glob",1,{"chrome.s":"g"}],["proc",null,null]'
	# id2.local pairs within the process, across its threads
	assert_eq "$(trace-dump --json -k async_range "$D/c.tkt" | jq -c '[.name, .ts, .dur, .tid, .domain]')" \
		'["span",6000,3000,2,"x"]'
	# "#rrggbb" is an opaque ARGB colour; cname is kept as chrome.cname
	assert_eq "$(trace-dump --json -k range "$D/c.tkt" | jq -c '[.color, .args]')" \
		"[$((0xffff0000)),{\"chrome.cname\":\"good\"}]"
	# an M event tracekit has no use for is run metadata
	trace-dump --info "$D/c.tkt" | grep -qx '  meta chrome.M.weird_meta = {"a":1}'
}

@test "GPU lanes by name and label, overlap tracks back on their thread, pids as reals" {
	cat > "$D/p.json" <<-'EOF2'
	[{"ph":"M","name":"process_name","pid":100,"args":{"name":"GPU 2: NVIDIA A100"}},
	{"ph":"M","name":"process_name","pid":101,"args":{"name":"GPU 3: unknown"}},
	{"ph":"M","name":"process_name","pid":102,"args":{"name":"GPU x"}},
	{"ph":"M","name":"process_name","pid":103,"args":{"name":"GPU 5junk"}},
	{"ph":"M","name":"process_labels","pid":104,"args":{"labels":"GPU 4"}},
	{"ph":"M","name":"process_labels","pid":105,"args":{"labels":"CPU"}},
	{"ph":"M","name":"process_labels","pid":106,"args":{"labels":"rank 1"}},
	{"ph":"M","name":"thread_name","pid":106,"tid":1,"args":{"name":"work"}},
	{"ph":"M","name":"thread_name","pid":106,"tid":2,"args":{"name":"work (overlap 1)"}},
	{"ph":"M","name":"thread_name","pid":106,"tid":3,"args":{"name":"work (overlap x)"}},
	{"ph":"M","name":"thread_name","pid":106,"tid":4,"args":{"name":"other (overlap 1)"}},
	{"ph":"X","name":"k2","cat":"kernel","pid":100,"tid":7,"ts":1,"dur":1,"args":{"stream":7}},
	{"ph":"X","name":"k3","cat":"kernel","pid":101,"tid":7,"ts":1,"dur":1},
	{"ph":"X","name":"k4","cat":"kernel","pid":104,"tid":"stream 9","ts":1,"dur":1},
	{"ph":"X","name":"a","pid":102,"tid":1,"ts":1,"dur":1},
	{"ph":"X","name":"b","pid":103,"tid":1,"ts":1,"dur":1},
	{"ph":"X","name":"c","pid":105,"tid":1,"ts":1,"dur":1},
	{"ph":"X","name":"d","pid":106.0,"tid":1,"ts":1,"dur":1},
	{"ph":"X","name":"e","pid":106,"tid":2,"ts":3,"dur":1},
	{"ph":"X","name":"f","pid":106,"tid":3,"ts":1,"dur":1},
	{"ph":"X","name":"g","pid":106,"tid":4,"ts":1,"dur":1},
	{"ph":"X","name":"h","pid":106.5,"tid":1,"ts":1,"dur":1}]
	EOF2
	run --separate-stderr trace-import -o "$D/p.tkt" "$D/p.json"
	[ "$status" -eq 1 ]
	assert_eq "$stderr" "trace-import: $D/p.json: event at byte $(grep -bo '{"ph":"X","name":"h"' "$D/p.json" | cut -d: -f1): 'pid' is not an integer"
	run -0 trace-dump --json "$D/p.tkt"
	# "GPU N: name" (trace-to-chrome) and the label "GPU N" (Kineto) make
	# GPU lanes; the tid, or "stream N", or args.stream, is the stream
	assert_eq "$(jq -r 'select(.kind == "kernel") | "\(.name) \(.device) \(.stream)"' <<< "$output" | paste -sd,)" \
		"k2 2 7,k3 3 7,k4 4 9"
	# not GPU names: the process's name; "CPU" says nothing; 106.0 is 106;
	# "work (overlap 1)" is work's extra track, "(overlap x)" and an
	# unknown base are names of their own
	assert_eq "$(jq -r 'select(.kind == "range") | "\(.name) \(.pid) \(.tid)"' <<< "$output" | paste -sd,)" \
		"a 102 1,b 103 1,c 105 1,d 106 1,f 106 3,g 106 4,e 106 1"
	run -0 trace-dump --info "$D/p.tkt"
	[[ "$output" == *"GPU 2 NVIDIA A100, "* && "$output" == *"GPU 3 , "* ]]
	[[ "$output" == *"pid 102 ppid 0 host  argv: GPU x"* && "$output" == *"argv: GPU 5junk"* ]]
	[[ "$output" == *"pid 106 ppid 0 host  label rank 1"* ]]
	[[ "$output" == *"pid 106/tid 3 (work (overlap x))"* && "$output" == *"pid 106/tid 4 (other (overlap 1))"* ]]
	[[ "$output" != *"pid 106/tid 2"* && "$output" != *"label CPU"* ]]
}

@test "times plus baseTimeNanoseconds past 64 bits: those events skipped, one line, exit 1" {
	for base in 9223372036854000000 -9223372036854775000; do
		python3 - "$base" > "$D/b.json" <<-'PY'
		import json, sys
		base = int(sys.argv[1])
		ev = [{"ph": "X", "name": n, "pid": 1, "tid": 1, "ts": ts, "dur": dur}
		      for n, ts, dur in (("a", 10, 1), ("b", -9000000000, 1), ("c", 900, 1),
		                         ("d", 1, 9000000000000000), ("e", -9100000000, 1))]
		print(json.dumps({"traceEvents": ev, "baseTimeNanoseconds": base}))
		PY
		# what should come out, with Python's integers: kept when the
		# time fits in int64, the duration cut at INT64_MAX
		want=$(python3 - "$D/b.json" <<-'PY'
		import json, sys
		d = json.load(open(sys.argv[1]))
		top, out, skipped = 2**63 - 1, [], 0
		for e in d["traceEvents"]:
		    ts = e["ts"] * 1000 + d["baseTimeNanoseconds"]
		    if not -2**63 <= ts <= top:
		        skipped += 1
		        continue
		    dur = min(e["dur"] * 1000, top - ts) if ts > 0 else e["dur"] * 1000
		    out.append((ts, e["name"], dur))
		print(skipped)
		for ts, n, dur in sorted(out):
		    print(n, ts, dur)
		PY
		)
		skipped=$(head -1 <<< "$want")
		[ "$skipped" -gt 0 ]
		run --separate-stderr trace-import -o "$D/b.tkt" "$D/b.json"
		[ "$status" -eq 1 ]
		assert_eq "$stderr" "trace-import: $D/b.json: $skipped event$([ "$skipped" -eq 1 ] || echo s) whose time plus baseTimeNanoseconds does not fit in 64-bit nanoseconds: skipped"
		# (not jq: it rounds integers past 2^53)
		assert_eq "$(trace-dump --json "$D/b.tkt" | python3 -c '
import json, sys
for l in sys.stdin:
    e = json.loads(l)
    print(e["name"], e["ts"], e["dur"])')" "$(tail -n +2 <<< "$want")"
	done
}
