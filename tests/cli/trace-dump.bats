#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-dump: listing events, --csv, --json, --info, filters and bad input.

load helpers

setup() {
	T=$(synth_trace run.tkt --steps 3 --layers 2)
}

@test "text lists every event, one per line" {
	run -0 trace-dump "$T"
	n=$(trace-dump --json "$T" | wc -l)
	assert_eq "${#lines[@]}" "$n"
	[[ "${lines[0]}" == *"process"*"python3 exit=0"* ]]
}

@test "stdin is read when no file or - is given" {
	a=$(trace-dump "$T" | md5sum)
	b=$(trace-dump < "$T" | md5sum)
	c=$(cat "$T" | trace-dump - | md5sum)
	assert_eq "$b" "$a"
	assert_eq "$c" "$a"
}

@test "--csv has a header and one row per event, times in integer ns" {
	run -0 trace-dump --csv "$T"
	[[ "${lines[0]}" == kind,ts,dur,name,pid,tid,* ]]
	n=$(trace-dump --json "$T" | wc -l)
	assert_eq "$(( ${#lines[@]} - 1 ))" "$n"
	# kernels: durations are integers and sum like the JSON says
	csv_sum=$(trace-dump --csv -k kernel "$T" | python3 -c '
import csv, sys
rows = list(csv.DictReader(sys.stdin))
print(len(rows), sum(int(r["dur"]) for r in rows))')
	json_sum=$(trace-dump --json -k kernel "$T" | jq -s 'length, (map(.dur) | add)' | paste -sd' ')
	assert_eq "$csv_sum" "$json_sum"
}

@test "--csv quotes names with commas (libcsv)" {
	run -0 trace-dump --csv -k kernel -n 50 "$T"
	# template kernel names hold commas: the CSV must still parse to 28 fields
	python3 -c '
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
assert all(len(r) == 28 for r in rows), set(len(r) for r in rows)
assert any("," in r[3] for r in rows[1:])
' <(trace-dump --csv -k kernel -n 50 "$T")
}

@test "--json is one valid object per line with kind-specific fields" {
	run -0 bash -c "trace-dump --json '$T' | jq -c 'select(.kind==\"kernel\")' | head -1"
	[[ "$output" == *'"grid":[264,1,1]'* ]]
	[[ "$output" == *'"correlation":'* ]]
	trace-dump --json "$T" | jq -e . > /dev/null
	run -0 bash -c "trace-dump --json -k memcpy '$T' | jq -r '.copy_kind' | sort -u"
	assert_eq "$output" "$(printf 'DtoH\nHtoD')"
}

@test "--kind filters and --limit stops" {
	run -0 trace-dump -k kernel,memcpy "$T"
	for l in "${lines[@]}"; do [[ "$l" == *" kernel "* || "$l" == *" memcpy "* ]]; done
	run -0 trace-dump -n 7 "$T"
	assert_eq "${#lines[@]}" 7
	run -2 --separate-stderr trace-dump -k nosuchkind "$T"
	[[ "$stderr" == *"unknown kind 'nosuchkind'"* ]]
}

@test "--info summarises header, definitions and counts" {
	run -0 trace-dump --info "$T"
	[[ "$output" == *"tracekit format 1.1"* ]]
	[[ "$output" == *"device 1: GPU 0 NVIDIA H100 80GB HBM3"* ]]
	[[ "$output" == *"meta command = python3 train.py"* ]]
	kernels=$(trace-dump -k kernel "$T" | wc -l)
	[[ "$output" == *"kernel       $kernels"* ]]
	run -0 bash -c "trace-dump --info --json '$T' | jq -r '.kinds.kernel, .devices[0].name'"
	assert_eq "${lines[0]}" "$kernels"
	assert_eq "${lines[1]}" "NVIDIA H100 80GB HBM3"
}

@test "--info --json: one entry per track and device id, the last definition" {
	d=$BATS_TEST_TMPDIR
	mktrace > "$d/renamed.tkt" <<'EOF'
{"def":"process","ref":"p","pid":100,"host":"h","argv":["python3"]}
{"def":"thread","ref":"t","process":"p","tid":101,"name":"main"}
{"def":"device","ref":"d","index":0,"name":"","sm_count":0}
{"kind":"range","track":"t","ts":1000,"dur":10,"name":"a"}
{"flush":true}
{"def":"thread","ref":"t","process":"p","tid":101,"name":"worker"}
{"def":"device","ref":"d","index":0,"name":"NVIDIA H100","sm_count":132}
{"kind":"range","track":"t","ts":2000,"dur":10,"name":"b"}
EOF
	# the text lists each definition as it comes
	run -0 trace-dump --info "$d/renamed.tkt"
	[[ "$output" == *"pid 100/tid 101 (main)"*"pid 100/tid 101 (worker)"* ]]
	run -0 bash -c "trace-dump --info --json '$d/renamed.tkt' | jq -c '[.tracks[].desc], [.devices[] | [.id, .name, .sm_count]]'"
	assert_eq "${lines[0]}" '["pid 100","pid 100/tid 101 (worker)"]'
	assert_eq "${lines[1]}" '[[1,"NVIDIA H100",132]]'
	# a concatenated trace's ids are other tracks
	cat "$d/renamed.tkt" "$d/renamed.tkt" > "$d/twice.tkt"
	run -0 bash -c "trace-dump --info --json '$d/twice.tkt' | jq -c '[(.tracks | length), (.devices | length)]'"
	assert_eq "$output" "[4,2]"
}

@test "several files and concatenated traces are all listed" {
	a=$(trace-dump "$T" | wc -l)
	cat "$T" "$T" > "$BATS_TEST_TMPDIR/cat.tkt"
	run -0 trace-dump "$BATS_TEST_TMPDIR/cat.tkt"
	assert_eq "${#lines[@]}" "$((2 * a))"
	run -0 trace-dump "$T" "$T"
	assert_eq "${#lines[@]}" "$((2 * a))"
	run -0 trace-dump --info "$BATS_TEST_TMPDIR/cat.tkt"
	[[ "$output" == *"concatenated trace 2"* ]]
}

@test "--help and --version" {
	run -0 trace-dump --help
	[[ "${lines[0]}" == "Usage: trace-dump [OPTIONS] [FILE...]" ]]
	run -0 trace-dump --version
	[[ "$output" == "trace-dump (tracekit) "* ]]
	run -2 --separate-stderr trace-dump --bogus
	assert_eq "${stderr_lines[0]}" "trace-dump: unknown option '--bogus'"
}

@test "bad input: one line naming the file, exit 1" {
	d=$BATS_TEST_TMPDIR
	: > "$d/empty.tkt"
	run -1 --separate-stderr trace-dump "$d/empty.tkt"
	assert_eq "$stderr" "trace-dump: $d/empty.tkt: empty input (not a trace)"
	printf '\211PNG\r\n\032\n\0\0\0\rIHDR' > "$d/png.tkt"
	run -1 --separate-stderr trace-dump "$d/png.tkt"
	assert_eq "$stderr" "trace-dump: $d/png.tkt: not a tracekit trace, Chrome JSON or Nsight Systems SQLite export (first bytes 89 50 4e 47)"
	run -1 --separate-stderr trace-dump "$d/missing.tkt"
	assert_eq "$stderr" "trace-dump: $d/missing.tkt: No such file or directory"
	run -1 --separate-stderr trace-dump "$d"
	assert_eq "$stderr" "trace-dump: $d: read error at byte 0: Is a directory"
}

@test "a future major version is refused" {
	# header of version 2.0 with a valid checksum
	python3 - "$BATS_TEST_TMPDIR/v2.tkt" <<'PY'
import struct, sys, zlib
h = b"\x89TKT\r\n\x1a\n" + struct.pack("<HHIQQ", 2, 0, 36, 0, 0)
open(sys.argv[1], "wb").write(h + struct.pack("<I", zlib.crc32(h)))
PY
	run -1 --separate-stderr trace-dump "$BATS_TEST_TMPDIR/v2.tkt"
	[[ "$stderr" == *"unsupported format version 2.0 at byte 0 (this reader reads 1.x)" ]]
}

@test "truncated input: every complete chunk is listed, then a warning" {
	S=$(synth_trace big.tkt -n 60000 --chunk-bytes 65536)
	size=$(stat -c %s "$S")
	head -c $((size / 2)) "$S" > "$BATS_TEST_TMPDIR/half.tkt"
	run -1 --separate-stderr trace-dump "$BATS_TEST_TMPDIR/half.tkt"
	[[ "$stderr" =~ ^trace-dump:\ .*/half.tkt:\ truncated\ chunk\ at\ byte\ [0-9]+$ ]]
	[ "${#lines[@]}" -gt 1000 ]
	# the events listed are exactly the first ones of the whole trace
	diff <(printf '%s\n' "${lines[@]}") <(trace-dump "$S" | head -n "${#lines[@]}")
}

@test "a corrupted byte is reported with its chunk offset" {
	S=$(synth_trace c.tkt -n 5000)
	cp "$S" "$BATS_TEST_TMPDIR/bad.tkt"
	printf '\xff' | dd of="$BATS_TEST_TMPDIR/bad.tkt" bs=1 seek=300 conv=notrunc 2>/dev/null
	run -1 --separate-stderr trace-dump "$BATS_TEST_TMPDIR/bad.tkt"
	[[ "$stderr" == *"bad.tkt: corrupt chunk at byte 36 (checksum mismatch)" ]]
}

@test "a closed pipe ends the listing quietly" {
	S=$(synth_trace p.tkt -n 200000)
	run -0 --separate-stderr bash -c "trace-dump '$S' | head -1"
	assert_eq "$stderr" ""
	assert_eq "${#lines[@]}" 1
	set -o pipefail
	trace-dump --json "$S" | head -1 > /dev/null
}

@test "output errors are reported (ENOSPC)" {
	require_dev_full
	run -2 --separate-stderr bash -c "trace-dump '$T' > /dev/full"
	assert_eq "$stderr" "trace-dump: write error: No space left on device"
}

@test "--json: a process's counts are printed when 0; its exit, only when it exited" {
	d=$BATS_TEST_TMPDIR
	# (mktrace writes a process event's figures as 0: none was measured)
	mktrace > "$d/p.tkt" <<'EOF2'
{"def":"process","ref":"p","pid":100,"host":"h","argv":["app"],"start":0}
{"kind":"process","track":"p","ts":1000,"dur":5000,"name":"app"}
EOF2
	run -0 trace-dump --json "$d/p.tkt"
	# 0 page faults or switches is a count, not a field left out
	assert_eq "$(jq -c '[.utime, .stime, .max_rss, .minflt, .majflt, .nvcsw, .nivcsw]' <<< "$output")" "[0,0,0,0,0,0,0]"
	assert_eq "$(jq -c 'has("exit_code") or has("signal")' <<< "$output")" false
}

@test "--name, --from and --to keep what trace-stats's do: names by regex, begins in a window of the trace" {
	shared_data hta/trace_filter/sampled_rank-0.json.gz F
	d=$BATS_TEST_TMPDIR
	trace-import -o "$d/s.tkt" "$F"
	# independent: the JSON's complete events (all of them become events)
	python3 - "$F" > "$d/want" <<'PY'
import gzip, json, re, sys
ev = [e for e in json.load(gzip.open(sys.argv[1], "rt"))["traceEvents"] if e.get("ph") == "X"]
t0 = min(int(e["ts"]) for e in ev)
for a, b, pat in ((1000000, 1100000, "nccl"), (0, 10**12, "^aten::(add|mul)_?$"),
                  (850000, 853000, ".")):
    n = sum(1 for e in ev if t0 + a <= int(e["ts"]) < t0 + b and re.search(pat, e["name"]))
    assert n > 0
    print(n)
PY
	{
		trace-dump --name nccl --from 1s --to 1.1s "$d/s.tkt" | wc -l
		trace-dump --csv --name '^aten::(add|mul)_?$' "$d/s.tkt" | tail -n +2 | wc -l
		trace-dump --json --from 850ms --to 853ms "$d/s.tkt" | wc -l
	} > "$d/got"
	assert_eq "$(cat "$d/got")" "$(cat "$d/want")"
	# the names match as they are, not the kind or the track
	trace-dump --json --name nccl --from 1s --to 1.1s "$d/s.tkt" | jq -e 'select(.name | test("nccl") | not)' && false
	run -2 --separate-stderr trace-dump --name '(' "$d/s.tkt"
	[[ "${stderr_lines[0]}" == "trace-dump: invalid --name '(': "* ]]
	run -2 --separate-stderr trace-dump --from 2s --to 1s "$d/s.tkt"
	assert_eq "${stderr_lines[0]}" "trace-dump: --to must be later than --from"
}
