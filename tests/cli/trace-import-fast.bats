#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-import's fast path (flat.c, fast.c) reads the usual events
# without a jansson tree.  It must write exactly what the jansson path
# writes (TK_IMPORT_FAST=0 sends every event through it, as before the
# fast path): the same trace-dump --json, the same messages, the same -v
# summary, for every real trace and for events made to sit on each edge
# of what the fast path takes.  Some figures are also checked against
# Python reading the JSON.

load helpers

# same IN: both paths on IN, compared byte for byte
same() {
	local in=$1 d=$BATS_TEST_TMPDIR s1 s2
	run --separate-stderr env TK_IMPORT_FAST=0 trace-import -v -o "$d/slow.tkt" "$in"
	s1=$status
	printf '%s\n' "$stderr" > "$d/slow.err"
	run --separate-stderr trace-import -v -o "$d/fast.tkt" "$in"
	s2=$status
	printf '%s\n' "$stderr" > "$d/fast.err"
	[ "$s1" = "$s2" ] || { echo "$in: exit $s1 (jansson) vs $s2 (fast)" >&2; return 1; }
	diff "$d/slow.err" "$d/fast.err" >&2 || { echo "$in: messages differ" >&2; return 1; }
	trace-dump --json "$d/slow.tkt" > "$d/slow.json"
	trace-dump --json "$d/fast.tkt" > "$d/fast.json"
	diff "$d/slow.json" "$d/fast.json" >&2 || { echo "$in: traces differ" >&2; return 1; }
	# and the files themselves: trace-dump writes args again from their
	# JSON, which would hide args stored in another form
	cmp "$d/slow.tkt" "$d/fast.tkt" >&2 || { echo "$in: .tkt files differ" >&2; return 1; }
}

@test "fast path: every real trace imports as through jansson, byte for byte" {
	[ -d "$TK_SHARED/testdata" ] || skip "real test data not found: $TK_SHARED/testdata"
	local n=0 f largest
	while IFS= read -r f; do
		same "$f"
		largest=$f
		n=$((n + 1))
		# under valgrind or the sanitizers, the smallest few only
		if under_valgrind || under_sanitizers; then
			[ "$n" -lt 4 ] || break
		fi
	done < <(find "$TK_SHARED/testdata" -type f \( -name '*.json' -o -name '*.json.gz' -o -name '*_gz.gz' \) |
	         xargs ls -S -r)
	if under_valgrind || under_sanitizers; then
		[ "$n" -eq 4 ]
	else
		[ "$n" -ge 30 ]
		# on one thread the splitter reads the fast path's events
		# itself, events cut by its buffer's end included (the
		# largest trace crosses that end some 50 times)
		TK_IMPORT_THREADS=0 same "$largest"
	fi
}

# Events on each edge of what flat.c takes: the ones it takes, and next
# to each one that it must leave to jansson (or that it takes but with a
# twist: args left, values out of range, derived args dropped).
edge_events() {
	cat <<-'EOF'
	{"traceEvents": [
	{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 8, "ts": 1669783687464181.5, "dur": 45.25, "args": {"External id": 3073, "Ev Idx": 0, "s": "a b", "l": [1, [2, "x"]], "o": {"k": 1.5}, "r": 0.1}},
	{"ph": "X", "cat": "cpu_op", "name": "no args", "pid": 7, "tid": 8, "ts": 10, "dur": 1},
	{"ph": "X", "cat": "cpu_op", "name": "empty args", "pid": 7, "tid": 8, "ts": 10, "dur": 1, "args": {}},
	{"ph": "X", "cat": "cpu_op", "name": "null args", "pid": 7, "tid": 8, "ts": 10, "dur": 1, "args": null},
	{"ph": "X", "cat": "cpu_op", "name": "neg dur", "pid": 7, "tid": 8, "ts": 10, "dur": -3},
	{"ph": "X", "cat": "cpu_op", "name": "no dur", "pid": 7, "tid": 8, "ts": 10},
	{"ph": "X", "cat": "cpu_op", "name": "esc\"aped\u00e9", "pid": 7, "tid": 8, "ts": 11, "dur": 1},
	{"ph": "X", "cat": "cpu_op", "name": "utf8 é ✓ 𝄞", "pid": 7, "tid": 8, "ts": 11, "dur": 1, "args": {"ü": "ß"}},
	{"ph": "X", "cat": "cpu_op", "name": "bad utf8 \xff\xc0\xaf", "pid": 7, "tid": 8, "ts": 12, "dur": 1},
	{"ph": "X", "cat": "cpu_op", "name": "big", "pid": 7, "tid": 8, "ts": 13, "dur": 1, "args": {"id": 18446744073709551615, "n": -9223372036854775808}},
	{"ph": "X", "cat": "cpu_op", "name": "minus zero", "pid": 7, "tid": 8, "ts": 13, "dur": 1, "args": {"z": -0}},
	{"ph": "X", "cat": "cpu_op", "name": "huge real", "pid": 7, "tid": 8, "ts": 13, "dur": 1, "args": {"r": 1e400, "t": 1e-400}},
	{"ph": "X", "cat": "cpu_op", "name": "dup", "pid": 7, "tid": 8, "ts": 14, "dur": 1, "args": {"a": 1, "a": 2}},
	{"ph": "X", "cat": "cpu_op", "name": "dup top", "pid": 7, "tid": 8, "ts": 14, "dur": 1, "dur": 2},
	{"ph": "X", "cat": "nvtx", "name": "attrs", "pid": 7, "tid": 8, "ts": 15, "dur": 1, "args": {"color": "#ff0000", "payload": 3, "category": 2}},
	{"ph": "X", "cat": "cpu_op", "name": "string pid", "pid": "Spans", "tid": "8", "ts": 16, "dur": 1},
	{"ph": "X", "cat": "cpu_op", "name": "real pid", "pid": 7.0, "tid": 8, "ts": 16, "dur": 1},
	{"ph": "X", "cat": "cpu_op", "name": "extra key", "pid": 7, "tid": 8, "ts": 16, "dur": 1, "id": 3},
	{"ph": "X", "cat": "cpu_op", "name": "ts text", "pid": 7, "tid": 8, "ts": "16", "dur": 1},
	{"ph": "X", "cat": "cpu_op", "name": "ts too big", "pid": 7, "tid": 8, "ts": 9223372036854775.808, "dur": 1},
	{"ph": "X", "cat": "cpu_op", "name": "ts min", "pid": 7, "tid": 8, "ts": -9223372036854775.808, "dur": 1},
	{"ph": "X", "cat": "cpu_op", "name": "ts exp", "pid": 7, "tid": 8, "ts": 1.7e1, "dur": 2E0},
	{"ph": "X", "cat": "cpu_op", "name": "bad number", "pid": 7, "tid": 8, "ts": 017, "dur": 1},
	{"ph": "X", "cat": "cpu_op", "name": "ctl", "pid": 7, "tid": 8, "ts": 17, "dur": 1, "args": {"t": "a	b"}},
	{"ph": "X", "cat": "cpu_op", "name": "trailing", "pid": 7, "tid": 8, "ts": 17, "dur": 1,},
	{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 8, "ts": 20, "dur": 5, "args": {"External id": 99, "cbid": 211, "correlation": 99}},
	{"ph": "X", "cat": "cuda_runtime", "name": "other ext", "pid": 7, "tid": 8, "ts": 20, "dur": 5, "args": {"External id": 98, "cbid": 4294967296, "correlation": 100, "result": -2, "note": "x y", "list": [1, true, null]}},
	{"ph": "X", "cat": "cuda_runtime", "name": "no corr", "pid": 7, "tid": 8, "ts": 20, "dur": 5, "args": {"External id": 98, "r": 0.5}},
	{"ph": "X", "cat": "cuda_runtime", "name": "real left", "pid": 7, "tid": 8, "ts": 20, "dur": 5, "args": {"correlation": 101, "r": 0.3, "r2": 1.50, "e": 1E2, "o": {"a": 1, "a": 2}}},
	{"ph": "X", "cat": "cuda_runtime", "name": "minus zero left", "pid": 7, "tid": 8, "ts": 20, "dur": 5, "args": {"correlation": 120, "z": -0}},
	{"ph": "X", "cat": "cuda_runtime", "name": "corr text", "pid": 7, "tid": 8, "ts": 20, "dur": 5, "args": {"correlation": "102"}},
	{"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 7, "tid": 9, "ts": 21, "dur": 5, "args": {"correlation": 103, "cbid": 307}},
	{"ph": "X", "cat": "Runtime", "name": "cudaMemcpyAsync", "pid": 7, "tid": 9, "ts": 21, "dur": 5, "args": {"correlation": 104}},
	{"ph": "X", "cat": "cuda_api", "name": "cudaFoo", "pid": 7, "tid": 9, "ts": 21, "dur": 5, "args": {"correlation": 105}},
	{"ph": "X", "cat": "kernel", "name": "void k<4>(int)", "pid": 1, "tid": 7, "ts": 30, "dur": 3, "args": {"External id": 99, "queued": 0, "device": 1, "context": 1, "stream": 7, "correlation": 99, "registers per thread": 32, "shared memory": 0, "blocks per SM": 0.5, "warps per SM": 2.25, "grid": [80, 1, 1], "block": [128, 1, 1], "est. achieved occupancy %": 3}},
	{"ph": "X", "cat": "kernel", "name": "k2", "pid": 2, "tid": 13, "ts": 31, "dur": 3, "args": {"correlation": 106, "static shared memory": 16, "dynamic shared memory": 32, "shared memory": 48, "grid": [5000000000], "block": [1, 2, 3, 4], "cluster": [2], "graph id": 3, "graph node id": 77, "mangled name": "_Z2k2v"}},
	{"ph": "X", "cat": "kernel", "name": "k3", "pid": 99999, "tid": 14, "ts": 32, "dur": 3, "args": {"correlation": 107, "grid": [1.5], "block": []}},
	{"ph": "X", "cat": "kernel", "name": "k4", "pid": 1, "tid": 7, "ts": 33, "dur": 3, "args": {"correlation": 108, "device": "0x1"}},
	{"ph": "X", "cat": "kernel", "name": "k5", "pid": 1, "tid": 7, "ts": 33, "dur": 3, "args": {"correlation": 109, "left": {"a": 1}}},
	{"ph": "X", "cat": "Kernel", "name": "k6", "pid": 1, "tid": "stream 7", "ts": 33, "dur": 3, "args": {"correlation": 110}},
	{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 1, "tid": 7, "ts": 40, "dur": 15, "args": {"External id": 111, "device": 1, "context": 1, "stream": 7, "correlation": 111, "bytes": 5177344, "memory bandwidth (GB/s)": 339.2088056083339}},
	{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 1, "tid": 7, "ts": 41, "dur": 15, "args": {"correlation": 112, "bytes": 8, "copy kind": "DtoH"}},
	{"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 1, "tid": 7, "ts": 42, "dur": 1, "args": {"External id": 113, "device": 1, "context": 1, "stream": 7, "correlation": 113, "bytes": 128, "value": 0, "memory bandwidth (GB/s)": 0.08888888888888889}},
	{"ph": "X", "cat": "gpu_memset", "name": "Memset (Pinned)", "pid": 1, "tid": 7, "ts": 42, "dur": 1, "args": {"correlation": 114, "bytes": 128, "memory kind": "Device"}},
	{"ph": "X", "cat": "cuda_sync", "name": "Event Sync", "pid": 7, "tid": 8, "ts": 50, "dur": 1, "args": {"correlation": 115}},
	{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 7, "tid": 8, "ts": 60, "args": {"Ev Idx": 42070, "Device Type": 1, "Device Id": 1, "Addr": 139926520725504, "Bytes": 5242880, "Total Allocated": 5435638784, "Total Reserved": 12782141440}},
	{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 7, "tid": 8, "ts": 61, "args": {"Ev Idx": 42071, "Device Type": 1, "Device Id": 1, "Addr": 139926520725504, "Bytes": -5242880, "Total Allocated": 5435638784, "Total Reserved": 12782141440}},
	{"ph": "i", "cat": "cpu_instant_event", "s": "p", "name": "[memory]", "pid": 7, "tid": 8, "ts": 62, "args": {"Device Type": 0, "Device Id": -1, "Bytes": 64, "Total Allocated": 64}},
	{"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 7, "tid": 8, "ts": 63, "args": {"Device Type": 2, "Bytes": 64}},
	{"ph": "i", "cat": "cpu_instant_event", "s": "g", "name": "[memory]", "pid": 7, "tid": 8, "ts": 64, "args": {"Bytes": 64}},
	{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 7, "tid": 8, "ts": 65, "args": {"Bytes": 64, "Total Allocated": 1.5}},
	{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 7, "tid": 8, "ts": 66, "args": {"Ev Idx": 1}},
	{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "other", "pid": 7, "tid": 8, "ts": 67, "args": {"Bytes": 64}},
	{"ph": "B", "cat": "cpu_op", "name": "b", "pid": 7, "tid": 8, "ts": 70},
	{"ph": "E", "cat": "cpu_op", "name": "b", "pid": 7, "tid": 8, "ts": 71}
	]}
	EOF
}

@test "fast path: events on each edge of what it takes import as through jansson" {
	local d=$BATS_TEST_TMPDIR
	edge_events > "$d/edges.json"
	# the text \xff\xc0\xaf becomes those bytes (invalid UTF-8)
	python3 -c 'import sys; p = sys.argv[1]; b = open(p, "rb").read()
open(p, "wb").write(b.replace(rb"\xff\xc0\xaf", b"\xff\xc0\xaf"))' "$d/edges.json"
	grep -c "$(printf '\xff')" "$d/edges.json"
	same "$d/edges.json"
	# and as a gzip stream, on one thread, in a bare array
	gzip -c "$d/edges.json" > "$d/edges.json.gz"
	same "$d/edges.json.gz"
	TK_IMPORT_THREADS=0 same "$d/edges.json"
	sed -e '1s/.*/[/' -e '$s/.*/]/' "$d/edges.json" > "$d/bare.json"
	same "$d/bare.json"
}

@test "fast path: kernels, copies, API calls and allocations against Python on the JSON" {
	shared_data hta/df_index_resolver/df_index_resolver.json.gz F
	local d=$BATS_TEST_TMPDIR
	trace-import -o "$d/t.tkt" "$F"
	trace-dump --json "$d/t.tkt" > "$d/t.json"
	run python3 - "$F" "$d/t.json" <<-'PY'
	import gzip, json, sys
	ev = json.load(gzip.open(sys.argv[1]))["traceEvents"]
	ours = [json.loads(l) for l in open(sys.argv[2])]
	def count(kind):
	    return sum(1 for e in ours if e.get("kind") == kind)
	x = [e for e in ev if e.get("ph") == "X"]
	want = {
	    "kernel": sum(1 for e in x if e.get("cat") == "kernel"),
	    "memcpy": sum(1 for e in x if e.get("cat") == "gpu_memcpy"),
	    "api": sum(1 for e in x if e.get("cat") == "cuda_runtime"),
	    "memory": sum(1 for e in ev if e.get("ph") == "i" and e.get("name") == "[memory]"),
	}
	got = {k: count(k) for k in want}
	assert got == want, (got, want)
	# correlation ids and bytes, summed, to the unit
	kc = sum(e["args"]["correlation"] for e in x if e.get("cat") == "kernel")
	assert kc == sum(e["correlation"] for e in ours if e.get("kind") == "kernel"), "kernel correlation"
	mb = sum(e["args"]["bytes"] for e in x if e.get("cat") == "gpu_memcpy")
	assert mb == sum(e["bytes"] for e in ours if e.get("kind") == "memcpy"), "memcpy bytes"
	ab = sum(abs(e["args"]["Bytes"]) for e in ev if e.get("ph") == "i" and e.get("name") == "[memory]")
	assert ab == sum(e["bytes"] for e in ours if e.get("kind") == "memory"), "allocation bytes"
	# durations to the nanosecond (integer microseconds here)
	kd = sum(e["dur"] for e in x if e.get("cat") == "kernel") * 1000
	assert kd == sum(e["dur"] for e in ours if e.get("kind") == "kernel"), "kernel time"
	PY
	[ "$status" -eq 0 ] || { echo "$output" >&2; false; }
}
