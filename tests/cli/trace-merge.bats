#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-merge: one time-ordered trace from many; every check compares the
# events the inputs hold with those of the output, resolved to strings by
# trace-dump --csv and to process identities by the owners test tool.

load helpers

S=1700000000000000000   # synth's default start, ns

setup() {
	A=$(synth_trace a.tkt -n 1500 --pid 101 --seed 1)
	B=$(synth_trace b.tkt -n 1500 --pid 102 --seed 2 --start $((S + 1000000)))
	D=$BATS_TEST_TMPDIR
}

# check_merge [--any-order] MERGED INPUT[:LABEL[:SHIFT_NS]]...
# The merged trace holds exactly the events of the inputs, nothing lost
# or doubled: each event as its process identity (host, pid, start,
# label) and every field of trace-dump --csv, with the input's label (if
# given) and its times moved by SHIFT.  And they are in begin order.
check_merge() {
	python3 - "$@" <<'PY'
import collections, csv, io, subprocess, sys

args = sys.argv[1:]
ordered = True
if args[0] == "--any-order":
    ordered = False
    args = args[1:]
merged, specs = args[0], [a.split(":") for a in args[1:]]

def run(cmd):
    # a truncated input still lists its complete chunks, then exits 1
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode in (0, 1), (cmd, p.returncode, p.stderr)
    return p.stdout

def rows(paths):
    own = run(["owners"] + paths).splitlines()
    out = run(["trace-dump", "--csv"] + paths)
    table = list(csv.reader(io.StringIO(out)))
    header, table = table[0], table[1:]
    assert len(own) == len(table), (len(own), len(table))
    return header, [o.split("\t") + r for o, r in zip(own, table)]

header, got = rows([merged])
ts = 5 + header.index("ts")
want = []
_, inputs = rows([s[0] for s in specs])
for r in inputs:
    spec = specs[int(r[0])]
    label = spec[1] if len(spec) > 1 and spec[1] else None
    shift = int(spec[2]) if len(spec) > 2 else 0
    if label is not None and r[2] != "-1":  # events of a process
        r[4] = label
    if r[3] != "0":
        r[3] = str(int(r[3]) + shift)
    r[ts] = str(int(r[ts]) + shift)
    want.append(r)
for r in got:
    r[0] = "0"
for r in want:
    r[0] = "0"
g = collections.Counter(map(tuple, got))
w = collections.Counter(map(tuple, want))
if g != w:
    print("missing:", list((w - g).items())[:3], file=sys.stderr)
    print("extra:", list((g - w).items())[:3], file=sys.stderr)
    print(f"{sum(g.values())} events, {sum(w.values())} expected", file=sys.stderr)
    sys.exit(1)
if ordered:
    times = [int(r[ts]) for r in got]
    bad = sum(1 for a, b in zip(times, times[1:]) if b < a)
    if bad:
        print(f"{bad} events out of order", file=sys.stderr)
        sys.exit(1)
PY
}

# Processes defined in a trace: "host pid label" lines, sorted.
processes() {
	trace-dump --info --json "$1" |
		jq -r '.tracks[] | select(.type == "process") | "\(.host) \(.pid) \(.label)"' |
		sort
}

@test "one input: the same events in the same order" {
	run -0 --separate-stderr trace-merge "$A"
	assert_eq "$stderr" ""
	trace-merge -o "$D/out.tkt" "$A"
	diff <(trace-dump --csv "$D/out.tkt") <(trace-dump --csv "$A")
	check_merge "$D/out.tkt" "$A"
}

@test "overlapping inputs interleave in begin order" {
	trace-merge "$A" "$B" > "$D/out.tkt"
	check_merge "$D/out.tkt" "$A" "$B"
	# they really interleave: the pid changes often along the output
	changes=$(trace-dump --csv "$D/out.tkt" | awk -F, 'NR > 2 && $5 != p {n++} {p = $5} END {print n}')
	[ "$changes" -gt 100 ]
	assert_eq "$(processes "$D/out.tkt")" "$(printf 'synth-host 101 \nsynth-host 102 ')"
}

@test "disjoint inputs follow each other" {
	span=$(trace-dump --info --json "$A" | jq '.t_max')
	L=$(synth_trace late.tkt -n 2000 --pid 103 --seed 3 --start $((span + 1)))
	trace-merge "$L" "$A" > "$D/out.tkt"
	diff <(trace-dump --csv "$D/out.tkt") <(trace-dump --csv "$A" "$L")
}

@test "64 inputs" {
	files=()
	for i in $(seq 1 64); do
		files+=("$(synth_trace "r$i.tkt" -n 150 --pid $((1000 + i)) --seed "$i" \
			--start $((S + i * 7919)))")
	done
	trace-merge "${files[@]}" > "$D/out.tkt"
	check_merge "$D/out.tkt" "${files[@]}"
	assert_eq "$(processes "$D/out.tkt" | wc -l)" 64
}

@test "colliding pids: processes differ by host or start; the same one merges" {
	X=$(synth_trace x.tkt -n 2000 --pid 7 --seed 1)
	synth -n 2000 --pid 7 --seed 2 | scramble --batch 1 --host nodeB > "$D/y.tkt"
	Z=$(synth_trace z.tkt -n 2000 --pid 7 --seed 3 --start $((S + 5000)))
	trace-merge "$X" "$D/y.tkt" "$Z" > "$D/out.tkt"
	check_merge "$D/out.tkt" "$X" "$D/y.tkt" "$Z"
	assert_eq "$(processes "$D/out.tkt")" "$(printf 'nodeB 7 \nsynth-host 7 \nsynth-host 7 ')"
	# start times tell the two processes of synth-host apart
	run -0 bash -c "owners '$D/out.tkt' | awk -F'\t' '\$3 != -1 {print \$2 \"\t\" \$3 \"\t\" \$4}' | sort -u"
	assert_eq "$output" "$(printf 'nodeB\t7\t%s\nsynth-host\t7\t%s\nsynth-host\t7\t%s' \
		$S $S $((S + 5000)))"
	# one process recorded twice is one process, its events twice
	trace-merge "$X" "$X" > "$D/twice.tkt"
	check_merge "$D/twice.tkt" "$X" "$X"
	assert_eq "$(processes "$D/twice.tkt")" "synth-host 7 "
}

@test "--label per input, in input order" {
	trace-merge --label rank0 -l rank1 "$A" "$B" > "$D/out.tkt"
	check_merge "$D/out.tkt" "$A:rank0" "$B:rank1"
	assert_eq "$(processes "$D/out.tkt")" "$(printf 'synth-host 101 rank0\nsynth-host 102 rank1')"
	# the same trace under two labels: two processes
	trace-merge -l run1 -l run2 "$A" "$A" > "$D/runs.tkt"
	assert_eq "$(processes "$D/runs.tkt")" "$(printf 'synth-host 101 run1\nsynth-host 101 run2')"
	check_merge "$D/runs.tkt" "$A:run1" "$A:run2"
}

@test "--label-from-filename" {
	mkdir "$D/job"
	cp "$A" "$D/job/rank0.tkt"
	cp "$B" "$D/job/rank1.tkt"
	trace-merge --label-from-filename "$D/job/rank0.tkt" - < "$D/job/rank1.tkt" > "$D/out.tkt"
	check_merge "$D/out.tkt" "$A:rank0" "$B:stdin"
	trace-merge -L "$D"/job/rank*.tkt > "$D/out2.tkt"
	assert_eq "$(processes "$D/out2.tkt")" "$(printf 'synth-host 101 rank0\nsynth-host 102 rank1')"
}

@test "labels and offsets: one per input" {
	run -2 --separate-stderr trace-merge -l only "$A" "$B"
	assert_eq "${stderr_lines[0]}" "trace-merge: 1 labels for 2 inputs (give one per input)"
	run -2 --separate-stderr trace-merge -l a -l b -L "$A" "$B"
	assert_eq "${stderr_lines[0]}" "trace-merge: --label and --label-from-filename exclude each other"
	run -2 --separate-stderr trace-merge --offset 1s "$A" "$B"
	assert_eq "${stderr_lines[0]}" "trace-merge: 1 offsets for 2 inputs (give one per input)"
	run -2 --separate-stderr trace-merge --offset 1parsec "$A"
	assert_eq "${stderr_lines[0]}" "trace-merge: invalid --offset '1parsec'"
}

@test "--offset shifts each input by hand" {
	trace-merge --offset 0 --offset -1.5ms "$A" "$B" > "$D/out.tkt"
	check_merge "$D/out.tkt" "$A::0" "$B::-1500000"
	trace-merge -t +2s -t 250us "$A" "$B" > "$D/out2.tkt"
	check_merge "$D/out2.tkt" "$A::2000000000" "$B::250000"
}

@test "--align start: every input starts where the first one does" {
	C=$(synth_trace c.tkt -n 1500 --pid 103 --seed 3 --start $((S + 5000000000)))
	trace-merge --align start "$A" "$C" "$B" > "$D/out.tkt"
	check_merge "$D/out.tkt" "$A" "$C::-5000000000" "$B::-1000000"
	# an offset is added to the alignment
	trace-merge --align start -t 0 -t 1ms -t 0 "$A" "$C" "$B" > "$D/out2.tkt"
	check_merge "$D/out2.tkt" "$A" "$C::-4999000000" "$B::-1000000"
}

@test "--align nvtx:step: the first step ranges line up" {
	C=$(synth_trace c.tkt -n 1500 --pid 103 --seed 3 --speedup 1.3 --start $((S + 777777777)))
	first_step() {
		trace-dump --csv -k range "$1" |
			python3 -c 'import csv,sys; print(min(int(r["ts"]) for r in csv.DictReader(sys.stdin) if r["name"] == "step"))'
	}
	a=$(first_step "$A") c=$(first_step "$C")
	[ "$a" != "$c" ]
	trace-merge --align nvtx:step "$A" "$C" > "$D/out.tkt"
	check_merge "$D/out.tkt" "$A" "$C::$((a - c))"
	# unsorted input: the earliest step, wherever it was written
	scramble --batch 7 "$C" > "$D/c-unsorted.tkt"
	trace-merge --align nvtx:step "$A" "$D/c-unsorted.tkt" > "$D/out2.tkt"
	check_merge "$D/out2.tkt" "$A" "$C::$((a - c))"
}

@test "--align: an input that cannot be aligned" {
	run -1 --separate-stderr trace-merge --align nvtx:nosuchrange "$A" "$B"
	assert_eq "$stderr" "trace-merge: $A: cannot align: no range named 'nosuchrange'"
	# the output stops there: no end marker
	trace-merge --align nvtx:nosuchrange "$A" "$B" > "$D/out.tkt" 2>/dev/null || true
	run -1 --separate-stderr trace-dump "$D/out.tkt"
	[[ "$stderr" == *"no end marker"* ]]
	# --keep-going merges it where it is
	run -1 --separate-stderr trace-merge -k --align nvtx:nosuchrange -o "$D/kept.tkt" "$A" "$B"
	assert_eq "${#stderr_lines[@]}" 2
	check_merge "$D/kept.tkt" "$A" "$B"
	run -2 --separate-stderr trace-merge --align middle "$A"
	assert_eq "${stderr_lines[0]}" "trace-merge: invalid --align 'middle' (none, start or nvtx:NAME)"
}

@test "a file of concatenated traces is split into its traces" {
	cat "$A" "$B" > "$D/cat.tkt"
	run -0 --separate-stderr trace-merge -o "$D/out.tkt" "$D/cat.tkt"
	assert_eq "$stderr" ""
	check_merge "$D/out.tkt" "$D/cat.tkt"
	assert_eq "$(processes "$D/out.tkt" | wc -l)" 2
	# labelled and shifted as one input
	trace-merge -l both -t 1ms "$D/cat.tkt" > "$D/out2.tkt"
	check_merge "$D/out2.tkt" "$D/cat.tkt:both:1000000"
}

@test "standard input is one input" {
	trace-merge - "$B" < "$A" > "$D/out.tkt"
	check_merge "$D/out.tkt" "$A" "$B"
	cat "$A" | trace-merge "$B" - > "$D/out2.tkt"
	check_merge "$D/out2.tkt" "$A" "$B"
	# no operand: stdin
	cat "$A" | trace-merge > "$D/out3.tkt"
	diff <(trace-dump --csv "$D/out3.tkt") <(trace-dump --csv "$A")
	run -2 --separate-stderr trace-merge - - < "$A"
	assert_eq "${stderr_lines[0]}" "trace-merge: standard input can be read only once"
}

@test "concatenated traces on a pipe: late events are counted and reported" {
	run -0 --separate-stderr bash -c "cat '$B' '$A' | trace-merge > '$D/out.tkt'"
	[[ "$stderr" =~ ^trace-merge:\ \(stdin\):\ [0-9]+\ events\ out\ of\ time\ order\ \(it\ holds\ concatenated\ traces,\ which\ can\ only\ be\ ordered\ when\ read\ from\ a\ file\)$ ]]
	check_merge --any-order "$D/out.tkt" "$B" "$A"
	# read twice for alignment, it goes to a file first, and is split
	run -0 --separate-stderr bash -c "cat '$B' '$A' | trace-merge --align start > '$D/out2.tkt'"
	assert_eq "$stderr" ""
	check_merge "$D/out2.tkt" "$B" "$A"
}

@test "unsorted inputs come out sorted" {
	scramble --batch 50 "$A" > "$D/a-held.tkt"
	scramble --batch 50 --no-watermark "$B" > "$D/b-nopromise.tkt"
	trace-merge "$D/a-held.tkt" "$D/b-nopromise.tkt" > "$D/out.tkt"
	check_merge "$D/out.tkt" "$A" "$B"
	# a pipe that promises nothing is held in memory, and spilled to
	# temporary files beyond --buffer-size
	mkdir "$D/tmp"
	scramble --batch 50 --no-watermark "$B" |
		trace-merge -S 64K -T "$D/tmp" "$D/a-held.tkt" - > "$D/out2.tkt"
	check_merge "$D/out2.tkt" "$A" "$B"
	# nothing is left behind
	assert_eq "$(ls -A "$D/tmp")" ""
	run -2 --separate-stderr trace-merge -S lots "$A"
	assert_eq "${stderr_lines[0]}" "trace-merge: invalid --buffer-size 'lots'"
}

@test "merged output merges again, as a stream" {
	C=$(synth_trace c.tkt -n 1500 --pid 103 --seed 3 --start $((S + 2000000)))
	trace-merge -l a -l b "$A" "$B" > "$D/ab.tkt"
	# its promises let it through a tiny buffer: no temporary file needed
	cat "$D/ab.tkt" | trace-merge -S 16K -T "$D/nonexistent" - "$C" > "$D/abc.tkt"
	check_merge "$D/abc.tkt" "$A:a" "$B:b" "$C"
	# while input that promises nothing has to spill
	run -2 --separate-stderr bash -c "scramble --no-watermark '$A' 2>/dev/null |
		trace-merge -S 16K -T '$D/nonexistent' - > /dev/null"
	assert_eq "$stderr" "trace-merge: cannot create a temporary file in $D/nonexistent: No such file or directory"
}

@test "a truncated input stops the merge; the output has no end marker" {
	S2=$(synth_trace big.tkt -n 60000 --pid 104 --chunk-bytes 65536)
	head -c $(($(stat -c %s "$S2") / 2)) "$S2" > "$D/half.tkt"
	run -1 --separate-stderr trace-merge -o "$D/out.tkt" "$A" "$D/half.tkt"
	[[ "$stderr" =~ ^trace-merge:\ $D/half.tkt:\ truncated\ chunk\ at\ byte\ [0-9]+$ ]]
	run -1 --separate-stderr trace-dump "$D/out.tkt"
	[[ "$stderr" == *"no end marker"* ]]
}

@test "--keep-going: the rest is merged and the output ends properly" {
	S2=$(synth_trace big.tkt -n 60000 --pid 104 --chunk-bytes 65536)
	head -c $(($(stat -c %s "$S2") / 2)) "$S2" > "$D/half.tkt"
	: > "$D/empty.tkt"
	run -1 --separate-stderr trace-merge -k -o "$D/out.tkt" "$A" "$D/half.tkt" \
		"$D/missing.tkt" "$D/empty.tkt" "$B"
	assert_eq "${#stderr_lines[@]}" 3
	[[ "${stderr_lines[0]}" == "trace-merge: $D/missing.tkt: No such file or directory" ]]
	[[ "$stderr" == *"trace-merge: $D/empty.tkt: empty input (not a trace)"* ]]
	[[ "$stderr" =~ trace-merge:\ $D/half.tkt:\ truncated\ chunk\ at\ byte\ [0-9]+ ]]
	run -0 trace-dump --info "$D/out.tkt"
	# every complete chunk of the truncated input is there
	check_merge "$D/out.tkt" "$A" "$D/half.tkt" "$B"
}

@test "inputs that are not traces" {
	: > "$D/empty.tkt"
	run -1 --separate-stderr trace-merge "$D/empty.tkt"
	assert_eq "$stderr" "trace-merge: $D/empty.tkt: empty input (not a trace)"
	printf '\211PNG\r\n\032\n\0\0\0\rIHDR' > "$D/png.tkt"
	run -1 --separate-stderr trace-merge "$A" "$D/png.tkt"
	assert_eq "$stderr" "trace-merge: $D/png.tkt: not a tracekit trace, Chrome JSON or Nsight Systems SQLite export (first bytes 89 50 4e 47)"
	run -1 --separate-stderr trace-merge "$D/missing.tkt"
	assert_eq "$stderr" "trace-merge: $D/missing.tkt: No such file or directory"
	run -1 --separate-stderr trace-merge "$D"
	assert_eq "$stderr" "trace-merge: $D: read error at byte 0: Is a directory"
	# a corrupt chunk in the second trace of a file: its offset in the file
	cat "$A" "$B" > "$D/cat.tkt"
	size_a=$(stat -c %s "$A")
	printf '\xff' | dd of="$D/cat.tkt" bs=1 seek=$((size_a + 300)) conv=notrunc 2>/dev/null
	run -1 --separate-stderr trace-merge "$D/cat.tkt"
	assert_eq "$stderr" "trace-merge: $D/cat.tkt: corrupt chunk at byte $((size_a + 36)) (checksum mismatch)"
}

@test "more inputs than open files: merged in passes" {
	under_valgrind && n=70 || n=200
	files=()
	for i in $(seq 1 $n); do
		files+=("$(synth_trace "r$i.tkt" -n 60 --pid $((1000 + i)) --seed "$i" \
			--start $((S + i * 104729)))")
	done
	mkdir "$D/tmp"
	run -0 --separate-stderr bash -c "ulimit -n 64 && trace-merge -L -T '$D/tmp' ${files[*]} > '$D/out.tkt'"
	assert_eq "$stderr" ""
	specs=()
	for f in "${files[@]}"; do specs+=("$f:$(basename "$f" .tkt)"); done
	check_merge "$D/out.tkt" "${specs[@]}"
	assert_eq "$(processes "$D/out.tkt" | wc -l)" "$n"
	assert_eq "$(ls -A "$D/tmp")" ""
	# the same output as in one pass, event for event
	trace-merge -L "${files[@]}" > "$D/one.tkt"
	cmp <(trace-dump --csv "$D/out.tkt") <(trace-dump --csv "$D/one.tkt")
	cmp <(owners "$D/out.tkt") <(owners "$D/one.tkt")
}

@test "the output cannot be an input, nor a terminal" {
	cp "$A" "$D/mine.tkt"
	run -2 --separate-stderr trace-merge -o "$D/mine.tkt" "$B" "$D/mine.tkt"
	assert_eq "${stderr_lines[0]}" "trace-merge: $D/mine.tkt: the output is also an input"
	cmp "$A" "$D/mine.tkt"
	run -2 --separate-stderr bash -c "trace-merge '$D/mine.tkt' >> '$D/mine.tkt'"
	[[ "${stderr_lines[0]}" == *"the output is also an input" ]]
	run -0 script -qec "trace-merge '$A'; echo rc=\$?" /dev/null
	[[ "$output" == *"trace-merge: standard output is a terminal: write to a file (-o FILE) or a pipe"* ]]
	[[ "$output" == *"rc=2"* ]]
}

@test "output errors: a closed pipe is quiet, a full disk is not" {
	run -0 --separate-stderr bash -c "trace-merge '$A' '$B' | head -c 100 > /dev/null"
	assert_eq "$stderr" ""
	run -2 --separate-stderr bash -c "trace-merge '$A' > /dev/full"
	assert_eq "$stderr" "trace-merge: (stdout): write error: No space left on device"
	# the header, written as the output is opened, failing is a write
	# error too; a file that cannot be opened is not
	run -2 --separate-stderr trace-merge -o /dev/full "$A"
	assert_eq "$stderr" "trace-merge: /dev/full: write error: No space left on device"
	run -2 --separate-stderr trace-merge -o "$D/no/such/dir.tkt" "$A"
	assert_eq "$stderr" "trace-merge: $D/no/such/dir.tkt: No such file or directory"
}

@test "TK_MERGE_THREADS=0: the same bytes on one thread" {
	# inputs of several chunks, so that chunks are in flight while the
	# merge goes on
	X=$(synth_trace x.tkt -n 150000 --pid 201 --seed 5)
	Y=$(synth_trace y.tkt -n 150000 --pid 202 --seed 6 --start $((S + 500)))
	trace-merge -o "$D/threads.tkt" "$X" "$Y"
	TK_MERGE_THREADS=0 trace-merge -o "$D/one.tkt" "$X" "$Y"
	[ "$(trace-dump --info --json "$D/one.tkt" | jq .chunks)" -gt 4 ]
	cmp "$D/threads.tkt" "$D/one.tkt"
	[ "$(trace-dump --info --json "$D/one.tkt" | jq .events)" -eq \
	  "$(trace-dump --info --json "$X" "$Y" | jq -s 'map(.events) | add')" ]
	run -2 --separate-stderr bash -c "TK_MERGE_THREADS=0 trace-merge '$A' > /dev/full"
	assert_eq "$stderr" "trace-merge: (stdout): write error: No space left on device"
}

@test "--help and --version" {
	run -0 trace-merge --help
	assert_eq "${lines[0]}" "Usage: trace-merge [OPTIONS] [FILE...]"
	run -0 trace-merge --version
	[[ "$output" == "trace-merge (tracekit) "* ]]
	run -2 --separate-stderr trace-merge --bogus
	assert_eq "${stderr_lines[0]}" "trace-merge: unknown option '--bogus'"
	run -2 --separate-stderr trace-merge --label
	assert_eq "${stderr_lines[0]}" "trace-merge: option '--label' needs a value"
}

@test "every long option of --help is in the man page" {
	for o in $(trace-merge --help | grep -o -- '--[a-z-]*' | sort -u); do
		grep -q -- "Fl Fl ${o#--}" "$TK_SRC/man/trace-merge.1" ||
			{ echo "missing: $o"; return 1; }
	done
}

@test "events with equal begin times keep their order within an unsorted input" {
	# marks at one time, in an input that is not sorted: they wait in
	# memory, ordered by time, then by arrival
	{
		echo '{"def":"process","ref":"p","pid":300,"host":"h","argv":["a"],"start":0}'
		echo '{"def":"thread","ref":"t","process":"p","tid":300,"name":"main"}'
		echo '{"kind":"mark","track":"t","ts":2000,"name":"late"}'
		for n in m1 m2 m3 m4 m5 m6 m7 m8; do
			echo '{"kind":"mark","track":"t","ts":1000,"name":"'$n'"}'
		done
		echo '{"kind":"mark","track":"t","ts":500,"name":"early"}'
	} | mktrace > "$D/unsorted.tkt"
	run -0 trace-merge -o "$D/out.tkt" "$D/unsorted.tkt"
	assert_eq "$(trace-dump --json "$D/out.tkt" | jq -r 'select(.kind == "mark") | .name' | paste -sd' ')" \
		"early m1 m2 m3 m4 m5 m6 m7 m8 late"
}

@test "progress: on a terminal's stderr once the merge takes TK_PROGRESS_AFTER, erased at the end; nothing otherwise" {
	command -v script > /dev/null || skip "script(1) is not installed"
	D=$BATS_TEST_TMPDIR
	X=$(synth_trace x.tkt -n 20000 --pid 301 --seed 11)
	Y=$(synth_trace y.tkt -n 20000 --pid 302 --seed 12)
	size=$(( $(stat -c %s "$X") + $(stat -c %s "$Y") ))
	# script(1) gives the command a terminal for stderr
	TK_PROGRESS_AFTER=0 script -qec "trace-merge -o '$D/tty.tkt' '$X' '$Y'" /dev/null \
		< /dev/null > "$D/tty.out"
	python3 - "$D/tty.out" "$size" <<'PY'
import re, sys
out = open(sys.argv[1], "rb").read().decode()
lines = re.findall(r"\r(trace-merge: [^\r\x1b]*)\x1b\[K", out)
assert lines, repr(out[:200])
assert all(l.startswith("trace-merge: merging 2 inputs: ") for l in lines), lines
pcts = [int(re.search(r": +([0-9]+)% \(", l).group(1)) for l in lines]
assert pcts == sorted(pcts) and 0 <= pcts[0] and pcts[-1] <= 100, pcts
assert ("of %.1f MiB" % (int(sys.argv[2]) / 2**20)) in lines[0], lines[0]
# what is done so far, in MiB: a number that grows, never past the total
done = [float(re.search(r"\(([0-9]+\.[0-9]) MiB of ", l).group(1)) for l in lines]
assert done == sorted(done) and done[-1] <= int(sys.argv[2]) / 2**20 + 0.05, done
# the last thing written erases the line
assert out.endswith("\r\x1b[K"), repr(out[-20:])
PY
	# not a terminal: nothing on stderr, the same trace
	run -0 --separate-stderr env TK_PROGRESS_AFTER=0 trace-merge -o "$D/pipe.tkt" "$X" "$Y"
	assert_eq "$stderr" ""
	cmp "$D/tty.tkt" "$D/pipe.tkt"
	# a terminal, but quicker than the default second: nothing (not
	# timed under valgrind or the sanitizers, which are slower)
	if under_valgrind || under_sanitizers; then return 0; fi
	script -qec "trace-merge -o '$D/quick.tkt' '$X' '$Y'" /dev/null < /dev/null > "$D/quick.out"
	assert_eq "$(wc -c < "$D/quick.out")" 0
}
