#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-import pairs begins and ends (B/E, b/e, S/F) in time order, not
# file order: the ranges are checked against pairing_reference.py, which
# pairs the JSON in Python as a viewer that sorts first does.

load helpers

setup() {
	D=$BATS_TEST_TMPDIR
	REF=$BATS_TEST_DIRNAME/pairing_reference.py
}

# got FILE.json [options]: the imported ranges as the reference prints
# them (dur "open" for a begin never ended), then "unmatched N" from -v.
got() {
	local f=$1
	shift
	trace-import -v "$@" -o "$D/got.tkt" "$f" 2> "$D/got.err" || return 1
	trace-dump --json "$D/got.tkt" | python3 -c '
import json, sys
out = []
for line in sys.stdin:
    e = json.loads(line)
    if e["kind"] in ("range", "async_range"):
        unclosed = e.get("args", {}).get("chrome.unclosed")
        out.append((e["kind"], e["ts"], "open" if unclosed else e["dur"], e["name"]))
for r in sorted(out, key=str):
    print(*r)'
	# "  e  a     2 -> dropped: end without a begin 2"
	awk '/dropped: end without a begin/ { n += $NF } END { print "unmatched", n + 0 }' "$D/got.err"
}

# check FILE.json [options]: the import pairs as the reference does.
check() {
	python3 "$REF" "$1" > "$D/want"
	got "$@" > "$D/got"
	diff "$D/want" "$D/got"
}

@test "an e, F and E before their begins in the file pair with them" {
	cat > "$D/t.json" <<'JSON'
[{"ph":"e","name":"io","cat":"a","id":1,"pid":1,"tid":2,"ts":20},
 {"ph":"F","name":"old","cat":"a","id":"0x7","pid":1,"tid":1,"ts":40},
 {"ph":"E","pid":1,"tid":1,"ts":30},
 {"ph":"b","name":"io","cat":"a","id":1,"pid":1,"tid":1,"ts":10},
 {"ph":"S","name":"old","cat":"a","id":"0x7","pid":1,"tid":1,"ts":15},
 {"ph":"B","name":"work","pid":1,"tid":1,"ts":5}]
JSON
	check "$D/t.json"
	# and none of them is left unmatched or open
	grep -q 'unmatched 0' "$D/want"
	! grep -q open "$D/want"
	[ "$(wc -l < "$D/want")" -eq 4 ]
	# the e kept its own thread as the range's end track
	[[ "$(trace-dump -k async_range "$D/got.tkt")" == *"io domain=a id=1 end_track=2"* ]]
}

@test "an end with no begin anywhere is dropped; a begin with no end stays open" {
	cat > "$D/t.json" <<'JSON'
[{"ph":"e","name":"x","cat":"a","id":9,"pid":1,"tid":1,"ts":50},
 {"ph":"b","name":"y","cat":"a","id":3,"pid":1,"tid":1,"ts":10},
 {"ph":"E","pid":1,"tid":2,"ts":20},
 {"ph":"B","name":"z","pid":1,"tid":3,"ts":5},
 {"ph":"b","name":"w","cat":"a","id":4,"pid":1,"tid":1,"ts":7},
 {"ph":"e","name":"w","cat":"a","id":4,"pid":1,"tid":1,"ts":5},
 {"ph":"B","name":"v","pid":1,"tid":4,"ts":6},
 {"ph":"E","pid":1,"tid":4,"ts":5}]
JSON
	check "$D/t.json"
	# e:9 and E on tid 2 have no begin at all; e:4 and E on tid 4 come
	# after their begins in the file but before them in time
	grep -q 'unmatched 4' "$D/want"
	[ "$(grep -c ' open ' "$D/want")" -eq 4 ]
	grep -q 'async begin without end: ended at the end of the trace (args chrome.unclosed): 2' "$D/got.err"
	grep -q 'B without E: ended at the end of the trace (args chrome.unclosed): 2' "$D/got.err"
}

@test "at equal times the file's order decides" {
	cat > "$D/t.json" <<'JSON'
[{"ph":"b","name":"p","cat":"a","id":1,"pid":1,"tid":1,"ts":10},
 {"ph":"e","name":"p","cat":"a","id":1,"pid":1,"tid":1,"ts":10},
 {"ph":"e","name":"q","cat":"a","id":2,"pid":1,"tid":1,"ts":10},
 {"ph":"b","name":"q","cat":"a","id":2,"pid":1,"tid":1,"ts":10},
 {"ph":"E","pid":1,"tid":1,"ts":12},
 {"ph":"B","name":"r","pid":1,"tid":1,"ts":12}]
JSON
	check "$D/t.json"
	grep -q 'async_range 10000 0 p' "$D/want"
	grep -q 'unmatched 2' "$D/want"
}

# write_mixed SEED [unique]: 400 overlapping async ranges over 40 ids
# (each id reused ten times, every tenth range with a child of the same
# id nested within: b b e e), nested B/E stacks on 4 threads, an end with
# no begin, begins with no end, X events around them; written sorted
# (sorted.json, ties in the order written), reversed (reversed.json) and
# shuffled with SEED (shuffled.json).  With "unique", every async range
# has its own id, without children or B/E: the files whose shuffles
# trace-import pairs exactly (trace-import(1), BUGS).
write_mixed() {
	python3 - "$D" "$1" "${2:-}" <<'PY'
import json, random, sys
d, seed, unique = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "unique"
rnd = random.Random(seed)
ev, t = [], 0
for i in range(400):
    t += rnd.randrange(1, 20)
    k = i if unique else i % 40
    ev.append({"ph": "b", "name": "op%d" % k, "cat": "io", "id": k, "pid": 1, "tid": i % 3, "ts": t})
    ev.append({"ph": "e", "name": "op%d" % k, "cat": "io", "id": k, "pid": 1, "tid": (i + 1) % 3,
               "ts": t + rnd.randrange(1, 30) if i % 10 else t + 50})
    if i % 10 == 0 and not unique:
        ev.append({"ph": "b", "name": "child", "cat": "io", "id": k, "pid": 1, "tid": 0, "ts": t + 1})
        ev.append({"ph": "e", "name": "child", "cat": "io", "id": k, "pid": 1, "tid": 0, "ts": t + 49})
for th in range(0 if unique else 4):
    s = th * 3
    for j in range(50):
        s += 100
        ev.append({"ph": "B", "name": "outer", "pid": 2, "tid": th, "ts": s})
        ev.append({"ph": "B", "name": "inner", "pid": 2, "tid": th, "ts": s + 10})
        ev.append({"ph": "E", "pid": 2, "tid": th, "ts": s + 20})
        ev.append({"ph": "E", "pid": 2, "tid": th, "ts": s + 40})
for th in range(4):
    ev.append({"ph": "X", "name": "x", "pid": 2, "tid": th, "ts": rnd.randrange(5000), "dur": 1})
ev.append({"ph": "e", "name": "lost", "cat": "io", "id": 999, "pid": 1, "tid": 0, "ts": 3})
ev.append({"ph": "b", "name": "open", "cat": "io", "id": 998, "pid": 1, "tid": 0, "ts": 4})
if not unique:
    ev.append({"ph": "B", "name": "open", "pid": 2, "tid": 9, "ts": 5})
ev.sort(key=lambda e: e["ts"])   # stable: the order above at equal ts
with open(d + "/sorted.json", "w") as f:
    json.dump({"traceEvents": ev}, f)
with open(d + "/reversed.json", "w") as f:
    json.dump(ev[::-1], f)
rnd.shuffle(ev)
with open(d + "/shuffled.json", "w") as f:
    json.dump(ev, f)
PY
}

@test "nested and reused ids, B/E stacks: sorted and reversed files pair by time" {
	write_mixed 1
	check "$D/sorted.json"
	# nested children, an unmatched end and open begins are all there
	[ "$(grep -c ' child$' "$D/want")" -eq 40 ]
	grep -q 'unmatched 1' "$D/want"
	[ "$(grep -c ' open ' "$D/want")" -eq 2 ]
	[ "$(grep -c '^range .* inner$' "$D/want")" -eq 200 ]
	cp "$D/got" "$D/got.sorted"
	# reversed, each id's and thread's first event is an end: all wait
	check "$D/reversed.json"
	diff "$D/got.sorted" "$D/got"
}

@test "shuffled files (one range per id): the same ranges as the sorted file" {
	for seed in 2 3 4; do
		write_mixed "$seed" unique
		check "$D/shuffled.json"
		grep -q 'unmatched 1' "$D/want"
		[ "$(grep -c '^async_range ' "$D/want")" -eq 401 ]
		got "$D/sorted.json" > "$D/got.sorted"
		diff "$D/got.sorted" "$D/got"
	done
}

@test "in memory-limited mode (sorted runs spilled) the pairing is the same" {
	write_mixed 5 unique
	python3 "$REF" "$D/shuffled.json" > "$D/want"
	got "$D/shuffled.json" -S 64k > "$D/got"
	grep -q 'sorted runs in temporary files: [1-9]' "$D/got.err"
	diff "$D/want" "$D/got"
	write_mixed 6
	python3 "$REF" "$D/reversed.json" > "$D/want"
	got "$D/reversed.json" -S 64k > "$D/got"
	grep -q 'sorted runs in temporary files: [1-9]' "$D/got.err"
	diff "$D/want" "$D/got"
}

@test "real catapult traces, as written and reversed, pair as the reference does" {
	for f in async_begin_end big_trace nestable_async x_event_trace; do
		shared_data "catapult/$f.json" J
		check "$J"
		python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"] if isinstance(d, dict) else d
json.dump(ev[::-1], sys.stdout)' "$J" > "$D/reversed.json"
		check "$D/reversed.json"
	done
}
