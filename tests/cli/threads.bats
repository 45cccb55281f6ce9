#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The threaded paths of the commands, small and quick: trace-diff's two
# readers (the second in a thread of its own, its messages held back
# until the first's are out), trace-merge's sealer thread (the output
# compressed on a second core while the merge goes on), trace-import's
# parse thread, trace-to-chrome -z's compressing threads and
# trace-dump --csv/--json's formatting threads, the reader's workers
# (chunks inflated and their columns decoded ahead), each
# against its one-thread result where there is a switch for it.
# `make check-tsan` runs this file under ThreadSanitizer, where any
# report fails it.

load helpers

setup() {
	D=$BATS_TEST_TMPDIR
}

@test "trace-diff: both traces read at once" {
	local n=20000
	under_valgrind && n=4000
	A=$(synth_trace a.tkt -n $n)
	B=$(synth_trace b.tkt -n $n --seed 2 --slow gemm=1.2)
	run -1 trace-diff --normalize "$A" "$B"
	run -1 --separate-stderr trace-diff -j "$A" "$B"
	assert_eq "$(jq -c '[.before.input, .after.input, .runs]' <<<"$output")" \
		"[\"$A\",\"$B\",false]"
	run -0 trace-diff -q "$A" "$A"
}

@test "trace-diff: repeated runs on both sides, one of them from standard input" {
	A=$(synth_trace a.tkt --steps 5 --runs 3)
	B=$(synth_trace b.tkt --steps 5 --runs 3 --seed 3)
	run -0 --separate-stderr bash -c "trace-diff -j - '$B' < '$A'"
	assert_eq "$(jq -c '[.before.input, .runs, .summary[0].runs_before]' <<<"$output")" \
		'["(stdin)",true,3]'
}

@test "trace-diff: messages of both readers, in the order of the inputs" {
	A=$(synth_trace a.tkt -n 20000)
	B=$(synth_trace b.tkt -n 20000 --seed 2)
	head -c 3000 "$A" > "$D/a-cut.tkt"
	head -c 3000 "$B" > "$D/b-cut.tkt"
	for i in 1 2 3; do
		run -2 --separate-stderr trace-diff "$D/a-cut.tkt" "$D/b-cut.tkt"
		assert_eq "${#stderr_lines[@]}" 2
		[[ "${stderr_lines[0]}" == "trace-diff: $D/a-cut.tkt: "* ]]
		[[ "${stderr_lines[1]}" == "trace-diff: $D/b-cut.tkt: "* ]]
	done
}

@test "trace-diff: both JSON inputs repaired to UTF-8 at once, each keeping its own strings" {
	# each import turns its invalid UTF-8 metadata into U+FFFD on its
	# own thread; a buffer shared between the threads (as cmd_utf8's
	# was) is a race ThreadSanitizer reports, and could swap strings
	local n=3000
	under_valgrind && n=500
	for side in a b; do
		python3 - $side $n > "$D/$side.json" <<'PY'
import sys
side, n = sys.argv[1].encode(), int(sys.argv[2])
out = sys.stdout.buffer
out.write(b'{')
for i in range(n):
    out.write(b'"%s\xff%d":"%s\xfe%d",' % (side, i, side * 2, i))
out.write(b'"traceEvents":[')
out.write(b',\n'.join(b'{"ph":"X","name":"op%d","cat":"cpu_op","pid":1,"tid":1,'
                      b'"ts":%d,"dur":5}' % (i % 7, i * 10) for i in range(500)))
out.write(b']}')
PY
	done
	run -0 --separate-stderr trace-diff -j "$D/a.json" "$D/b.json"
	# every key and value of each side, as Python's decoder repairs them
	for side in before after; do
		f=$([ $side = before ] && echo a || echo b)
		want=$(python3 -c '
import sys
side, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    print("%s\ufffd%d=%s\ufffd%d" % (side, i, side * 2, i))' $f $n | sort)
		got=$(jq -r ".$side.metadata | to_entries[] | select(.key | test(\"^[ab]\")) |
			\"\(.key)=\(.value)\"" <<<"$output" | sort)
		assert_eq "$got" "$want"
	done
}

@test "trace-merge: the sealer threads write the same bytes as one thread" {
	# inputs of several chunks each, so that chunks are in flight while
	# the merge goes on
	local n=100000
	under_valgrind && n=20000
	X=$(synth_trace x.tkt -n $n --pid 201 --seed 5)
	Y=$(synth_trace y.tkt -n $n --pid 202 --seed 6)
	trace-merge -o "$D/threads.tkt" "$X" "$Y"
	TK_MERGE_THREADS=0 trace-merge -o "$D/one.tkt" "$X" "$Y"
	under_valgrind || [ "$(trace-dump --info --json "$D/one.tkt" | jq .chunks)" -gt 2 ]
	cmp "$D/threads.tkt" "$D/one.tkt"
	# several compressing threads, more than the cores: chunks finish
	# out of order and are written in order
	for n in 3 8; do
		TK_MERGE_THREADS=$n trace-merge -o "$D/many.tkt" "$X" "$Y"
		cmp "$D/many.tkt" "$D/one.tkt"
	done
	run -2 --separate-stderr env TK_MERGE_THREADS=many trace-merge -o "$D/bad.tkt" "$X" "$Y"
	assert_eq "$stderr" "trace-merge: invalid TK_MERGE_THREADS 'many'"
	# a write error met by the sealer thread
	run -2 --separate-stderr bash -c "trace-merge '$X' '$Y' > /dev/full"
	assert_eq "$stderr" "trace-merge: (stdout): write error: No space left on device"
	run -2 --separate-stderr bash -c "TK_MERGE_THREADS=4 trace-merge '$X' '$Y' > /dev/full"
	assert_eq "$stderr" "trace-merge: (stdout): write error: No space left on device"
}

@test "trace-import: the parse thread gives the same bytes as one thread" {
	# batches enough to keep both threads busy; some events need the
	# repairs made on the converting thread (invalid UTF-8, a 64-bit id)
	local n=6000
	under_valgrind && n=2000
	python3 - $n > "$D/in.json" <<'PY'
import sys
out = sys.stdout.buffer
out.write(b'{"traceEvents":[\n')
for i in range(int(sys.argv[1])):
    name = b'op\xff%d' % i if i % 500 == 7 else b'op%d' % (i % 53)
    ident = b',"id":18446744073709551615' if i % 700 == 3 else b''
    out.write(b'{"ph":"X","name":"%s","cat":"c","pid":1,"tid":%d,"ts":%d,'
              b'"dur":%d%s,"args":{"i":%d}},\n'
              % (name, i % 7, i * 10, 5 + i % 9, ident, i))
out.write(b'{"ph":"C","name":"ctr","pid":1,"ts":5,"args":{"v":1}}]}\n')
PY
	run -0 trace-import -o "$D/threads.tkt" "$D/in.json"
	run -0 env TK_IMPORT_THREADS=0 trace-import -o "$D/one.tkt" "$D/in.json"
	cmp "$D/threads.tkt" "$D/one.tkt"
	assert_eq "$(trace-dump "$D/one.tkt" | wc -l)" $((n + 1))
	# malformed in the middle: what came before is kept, the same way
	head -c $((n * 50)) "$D/in.json" > "$D/cut.json"
	printf '{"ph":"X" "x"}]}' >> "$D/cut.json"
	run -1 trace-import -o "$D/threads.tkt" "$D/cut.json"
	run -1 env TK_IMPORT_THREADS=0 trace-import -o "$D/one.tkt" "$D/cut.json"
	cmp "$D/threads.tkt" "$D/one.tkt"
}

@test "trace-to-chrome -z: blocks compressed on threads make one gzip member of the JSON" {
	# several megabytes of JSON: many 1 MiB blocks, on 4 threads and on 1
	local n=40000
	under_valgrind && n=8000
	T=$(synth_trace z.tkt -n $n)
	TK_THREADS=1 trace-to-chrome -o "$D/plain.json" "$T"
	TK_THREADS=4 trace-to-chrome -z -o "$D/four.json.gz" "$T"
	TK_THREADS=1 trace-to-chrome -z -o "$D/one.json.gz" "$T"
	under_valgrind || [ "$(stat -c %s "$D/plain.json")" -gt $((4 << 20)) ]
	gzip -t "$D/four.json.gz"
	if ! cmp "$D/four.json.gz" "$D/one.json.gz"; then
		# which layer differs, for the record: the JSON made (the
		# reader, the conversion) or only its compression (ordpool's
		# blocks, ISA-L)
		local f
		for f in four one; do
			if gzip -dc "$D/$f.json.gz" | cmp - "$D/plain.json" >&2; then
				echo "$f.json.gz: the JSON of one thread, compressed otherwise" >&2
			else
				echo "$f.json.gz: not the JSON of one thread" >&2
			fi
		done
		false
	fi
	# Python's zlib: one member (Perfetto's loader reads no further than
	# the first), its CRC and length right, the bytes of the plain output
	run -0 python3 - "$D/four.json.gz" "$D/plain.json" <<'PY'
import sys, zlib
data = open(sys.argv[1], "rb").read()
d = zlib.decompressobj(16 + zlib.MAX_WBITS)
out = d.decompress(data)
print(d.eof, len(d.unused_data), out == open(sys.argv[2], "rb").read())
PY
	assert_eq "$output" "True 0 True"
	# standard output; a reader that goes away; a write error
	assert_eq "$(TK_THREADS=3 trace-to-chrome -z "$T" | gzip -dc | md5sum)" "$(md5sum < "$D/plain.json")"
	run -0 --separate-stderr bash -c "trace-to-chrome -z '$T' | head -c 100 > /dev/null"
	assert_eq "$stderr" ""
	[ -w /dev/full ] || skip "no writable /dev/full"
	run -2 --separate-stderr bash -c "trace-to-chrome -z '$T' > /dev/full"
	assert_eq "$stderr" "trace-to-chrome: (stdout): write error: No space left on device"
}

# same_with_threads CMD FILE ARGS...: CMD ARGS on FILE with one thread
# and with 2 and 4 (the reader's workers; trace-dump's batches of events
# formatted on threads): the same standard output, standard error and
# exit status
same_with_threads() {
	local cmd=$1 f=$2 t
	shift 2
	TK_THREADS=1 $cmd "$@" "$f" > "$D/one.out" 2> "$D/one.err" && echo 0 > "$D/one.rc" || echo $? > "$D/one.rc"
	for t in 2 4; do
		TK_THREADS=$t $cmd "$@" "$f" > "$D/n.out" 2> "$D/n.err" && echo 0 > "$D/n.rc" || echo $? > "$D/n.rc"
		cmp "$D/one.out" "$D/n.out"
		cmp "$D/one.err" "$D/n.err"
		cmp "$D/one.rc" "$D/n.rc"
	done
}

# dump_same FILE ARGS...: same_with_threads for trace-dump
dump_same() {
	same_with_threads trace-dump "$@"
}

@test "readers: chunks decoded on the workers read as on one thread" {
	# the workers decode a chunk's columns against definitions copied
	# when it was read ahead; the reading thread checks and redoes what
	# later definitions change: three traces back to back (the streams
	# and strings of each start again), events stored by end time and
	# shuffled (tests/tools/reorder), cut in the middle of a chunk
	local n=60000
	under_sanitizers && n=20000
	under_valgrind && n=8000
	A=$(synth_trace a.tkt -n $n)
	B=$(synth_trace b.tkt -n $((n / 2)) --pid 77 --seed 9 --layers 2)
	C=$(synth_trace c.tkt --steps 6 --runs 2 --seed 4)
	cat "$A" "$B" "$C" > "$D/cat.tkt"
	reorder --by-end "$A" "$D/by-end.tkt"
	reorder --shuffle 500 "$B" "$D/shuffled.tkt"
	head -c $(( $(stat -c %s "$D/cat.tkt") * 3 / 5 )) "$D/cat.tkt" > "$D/cut.tkt"
	for f in "$D/cat.tkt" "$D/by-end.tkt" "$D/shuffled.tkt" "$D/cut.tkt"; do
		same_with_threads trace-stats "$f" --approx
		same_with_threads trace-stats "$f" --csv --report kernels
		same_with_threads trace-dump "$f" --csv
	done
	# the cut: the events before it, then one message, as one thread
	assert_eq "$(cat "$D/one.rc")" 1
	[ -s "$D/one.out" ] && [ -s "$D/one.err" ]
	# every event of the whole, counted by Python from the CSV
	same_with_threads trace-dump "$D/cat.tkt" --csv
	rows=$(python3 -c 'import csv, sys; print(sum(1 for _ in csv.reader(open(sys.argv[1], newline=""))) - 1)' "$D/one.out")
	assert_eq "$rows" "$(trace-dump --info --json "$D/cat.tkt" | jq -s 'map(.events) | add')"
}

@test "trace-dump --csv/--json: batches formatted on threads, written as one thread writes them" {
	# two traces one after the other (a new string table in the middle
	# of a batch), many batches of 4096 events
	local n=30000
	under_valgrind && n=6000
	A=$(synth_trace a.tkt -n $n)
	B=$(synth_trace b.tkt -n $((n / 3)) --pid 77 --seed 9 --layers 2)
	cat "$A" "$B" "$A" > "$D/cat.tkt"
	for fmt in --csv --json; do
		dump_same "$D/cat.tkt" $fmt
		# as many events as one thread prints, counted by Python
		rows=$(python3 -c 'import csv, json, sys
f = open(sys.argv[1], newline="")
if sys.argv[2] == "--csv":
    r = list(csv.reader(f)); print(len(r) - 1, len(set(map(len, r))))
else:
    r = [json.loads(l) for l in f]; print(len(r), 1)' "$D/one.out" $fmt)
		under_valgrind || [ "${rows% *}" -gt $((3 * 4096)) ]
		assert_eq "${rows#* }" 1
		dump_same "$D/cat.tkt" $fmt --kind kernel,memcpy,counter
		dump_same "$D/cat.tkt" $fmt --limit 5000 --name '^[a-m]'
	done
	# cut short: what came before the damage, then the same message
	head -c $(( $(stat -c %s "$A") * 2 / 3 )) "$A" > "$D/cut.tkt"
	dump_same "$D/cut.tkt" --csv
	assert_eq "$(cat "$D/one.rc")" 1
	[ -s "$D/one.out" ] && [ -s "$D/one.err" ]
	# a write error met in a batch
	[ -w /dev/full ] || skip "no writable /dev/full"
	run -2 --separate-stderr bash -c "TK_THREADS=2 trace-dump --json '$A' > /dev/full"
	assert_eq "$stderr" "trace-dump: write error: No space left on device"
}

@test "trace-dump --csv/--json: every shared real trace, with threads as with one" {
	[ -d "$TK_SHARED/testdata" ] || skip "real test data not found: $TK_SHARED/testdata"
	under_valgrind && skip "41 imports: too slow under valgrind"
	local i=0 f every=1
	# a sanitizer build imports ~10 times slower: every fourth trace
	under_sanitizers && every=4
	# imported once, then read as one stream of 41 traces
	while IFS= read -r f; do
		i=$((i + 1))
		trace-import -o "$D/$i.tkt" "$f" 2> /dev/null
	done < <(find "$TK_SHARED/testdata" -type f \( -name '*.json' -o -name '*.json.gz' -o -name '*_gz.gz' \) |
	         sort | awk -v k=$every 'NR % k == 1 || k == 1')
	[ "$i" -ge $((40 / every)) ]
	for j in $(seq "$i"); do cat "$D/$j.tkt"; done > "$D/all.tkt"
	dump_same "$D/all.tkt" --csv
	dump_same "$D/all.tkt" --json
	assert_eq "$(cat "$D/one.rc")" 0
	assert_eq "$(wc -l < "$D/one.out")" "$(trace-dump --info --json "$D/all.tkt" | jq -s 'map(.events) | add')"
}
