#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-import against bad input, bad output and closed pipes: the
# reliability matrix for its input side, Chrome JSON (plain and gzip).
# A Chrome trace has no format version: that cell is a gzip stream with
# a compression method or header flags no inflater knows.

load helpers
load reliability

setup_file() {
	local d=$BATS_FILE_TMPDIR
	synth -n 1500 --seed 7 -o "$d/base.tkt"
	synth -n 400 --seed 8 --pid 5151 -o "$d/other.tkt"
	trace-to-chrome "$d/base.tkt" > "$d/base.json"
	trace-to-chrome "$d/other.tkt" > "$d/other.json"
	synth -n 60000 --seed 9 -o "$d/big.tkt"
	trace-to-chrome "$d/big.tkt" > "$d/big.json"
	python3 "$BATS_TEST_DIRNAME/reliability.py" json-fixtures "$d"
	mkdir "$d/dir"
	: > "$d/empty.json"
	printf ' \n\t\n' > "$d/blank.json"
	# random bytes after one that no JSON text starts with (a random
	# first byte is whitespace, '{' or '[' one time in 40)
	{ printf '\x89'; head -c 4095 /dev/urandom; } > "$d/random.json"
	printf '\x89PNG\r\n\x1a\n\0\0\0\rIHDR' > "$d/png.json"
	python3 - "$d" <<'PY'
import gzip, os, sys
d = sys.argv[1]
z = bytearray(gzip.compress(b'{"traceEvents": []}', mtime=0))
z[2] = 9  # compression method 9: none is defined but 8, deflate
open(os.path.join(d, "method.json.gz"), "wb").write(z)
z[2] = 8
z[3] = 0xe0  # reserved header flags
open(os.path.join(d, "flags.json.gz"), "wb").write(z)

# strings of 1 MiB: event names, a thread name, an args key and value,
# run metadata
m = 1 << 20
def s(c):
    return c * m
ev = [
    '{"ph":"M","name":"thread_name","pid":100,"tid":101,"args":{"name":"%s"}}' % s("T"),
    '{"ph":"X","cat":"kernel","name":"%s","pid":0,"tid":7,"ts":10,"dur":5,'
    '"args":{"device":0,"stream":7,"correlation":1,"%s":"%s"}}' % (s("K"), s("k"), s("v")),
    '{"ph":"X","cat":"user_annotation","name":"%s","pid":100,"tid":101,"ts":1,"dur":20}' % s("R"),
    '{"ph":"i","s":"t","name":"%s","pid":100,"tid":101,"ts":3}' % s("I"),
]
doc = '{"traceEvents":[\n%s\n],"otherData":{"note":"%s"}}\n' % (",\n".join(ev), s("N"))
open(os.path.join(d, "huge.json"), "w").write(doc)

# invalid UTF-8 in names, a thread name, keys and values, metadata
bad = [b"lone\x80", b"ff\xff\xfe", b"over\xc0\xaf", b"sur\xed\xa0\x80", b"cut\xe2\x82"]
ev = [
    b'{"ph":"M","name":"thread_name","pid":100,"tid":101,"args":{"name":"' + bad[0] + b'"}}',
    b'{"ph":"X","cat":"kernel","name":"' + bad[1] + b'","pid":0,"tid":7,"ts":10,"dur":5,'
    b'"args":{"device":0,"stream":7,"' + bad[2] + b'":"' + bad[3] + b'"}}',
    b'{"ph":"X","cat":"cpu_op","name":"' + bad[4] + b'","pid":100,"tid":101,"ts":1,"dur":20}',
]
doc = b'{"traceEvents":[\n' + b",\n".join(ev) + b'\n],"' + bad[1] + b'":"' + bad[2] + b'"}\n'
open(os.path.join(d, "utf8.json"), "wb").write(doc)
PY
	cat "$d/base.json" "$d/other.json" > "$d/cat.json"
	gzip -c "$d/base.json" > "$d/b.gz"
	gzip -c "$d/other.json" > "$d/o.gz"
	cat "$d/b.gz" "$d/o.gz" > "$d/cat.json.gz"
	grep -c '"cat":"kernel"' "$d/base.json" > "$d/base.kernels"
}

setup() {
	D=$BATS_FILE_TMPDIR
	T=$BATS_TEST_TMPDIR
}

# imp FILE [OPTIONS]: trace-import FILE to $T/out.tkt; $RC, $ERR.
imp() {
	local f=$1
	shift
	OUT=$T/out.tkt ERR=$T/err RC=0
	trace-import "$@" -o "$OUT" "$f" 2> "$ERR" || RC=$?
}

# The output is a valid trace holding N kernels (N events with N=any).
imported() {
	run -0 trace-dump -k kernel "$OUT"
	[ "$1" = any ] || assert_eq "${#lines[@]}" "$1"
}

@test "trace-import: empty input" {
	imp "$D/empty.json"
	rel_expect 1 "trace-import: $(rel_quote "$D/empty.json"): the input is empty"
	imported 0
	imp "$D/blank.json"
	rel_expect 1 "trace-import: $(rel_quote "$D/blank.json"): the input is empty"
	imported 0
}

@test "trace-import: wrong magic (not JSON, or a trace already)" {
	for f in random.json png.json; do
		imp "$D/$f"
		rel_expect 1 "trace-import: $(rel_quote "$D/$f"): not JSON: expected '\\{' or '\\[' at byte 0"
		imported 0
	done
	imp "$D/base.tkt"
	rel_expect 1 "trace-import: $(rel_quote "$D/base.tkt"): already a tracekit trace"
}

@test "trace-import: a gzip stream of an unknown method or flags" {
	imp "$D/method.json.gz"
	rel_expect 1 "trace-import: $(rel_quote "$D/method.json.gz"): corrupt gzip data at byte 4 of the file: unknown compression method after byte 0 of the JSON"
	imported 0
	imp "$D/flags.json.gz"
	rel_expect 1 "trace-import: $(rel_quote "$D/flags.json.gz"): corrupt gzip data at byte 4 of the file: unknown header flags set after byte 0 of the JSON"
	imported 0
}

@test "trace-import: JSON and gzip cut short at many offsets" {
	rel_sample_note 8 "$(wc -l < "$D/json-cuts.txt") cuts"
	run -0 python3 "$BATS_TEST_DIRNAME/reliability.py" json-cuts "$D"
	[ "$output" -gt 5 ]
}

@test "trace-import: flipped bits in JSON and gzip" {
	rel_sample_note 8 "$(wc -l < "$D/json-flips.txt") flips"
	run -0 python3 "$BATS_TEST_DIRNAME/reliability.py" json-flips "$D"
	[ "$output" -gt 1 ]
}

@test "trace-import: a directory" {
	imp "$D/dir"
	rel_expect 1 "trace-import: $(rel_quote "$D/dir"): Is a directory"
}

@test "trace-import: a missing file" {
	imp "$D/no-such.json"
	rel_expect 1 "trace-import: $(rel_quote "$D/no-such.json"): No such file or directory"
}

@test "trace-import: a named pipe, plain and gzip" {
	mkfifo "$T/fifo"
	trace-import -o "$T/want.tkt" "$D/base.json"
	for f in base.json base.json.gz; do
		cat "$D/$f" > "$T/fifo" &
		imp "$T/fifo"
		wait
		rel_expect 0
		cmp <(trace-dump --csv "$OUT") <(trace-dump --csv "$T/want.tkt")
	done
}

@test "trace-import: strings of 1 MiB" {
	imp "$D/huge.json"
	rel_expect 0
	run -0 trace-dump --json "$OUT"
	assert_eq "$(jq -r '.name | length' <<< "$output" | sort -u)" 1048576
	assert_eq "$(jq -c 'select(.kind == "kernel") | .args | [keys[], .[] | length] | unique' <<< "$output")" "[1048576]"
	assert_eq "$(jq -r 'select(.kind == "range") | .thread | length' <<< "$output")" 1048576
	run -0 trace-dump --info --json "$OUT"
	# run metadata is for short facts: a long value is said, not kept
	[[ "$(jq -r '.metadata.note' <<< "$output")" == *1048576* ]]
	imp "$D/huge.json" -v
	grep -q 'metadata values longer than 4 KiB replaced by their size: 1' "$ERR"
}

@test "trace-import: invalid UTF-8 becomes U+FFFD and is counted" {
	imp "$D/utf8.json" -v
	assert_eq "$RC" 0
	grep -q 'events with invalid UTF-8 (bad bytes became U+FFFD): 4' "$ERR"
	run -0 trace-dump --json "$OUT"
	python3 -c '
import json, sys
for line in sys.stdin.buffer.read().decode("utf-8").splitlines():
    json.loads(line)' <<< "$output"
	assert_eq "$(jq -r 'select(.kind == "kernel") | .name' <<< "$output")" "ff$(printf '\xef\xbf\xbd\xef\xbf\xbd')"
	assert_eq "$(jq -r 'select(.kind == "range") | .thread' <<< "$output")" "lone$(printf '\xef\xbf\xbd')"
}

@test "trace-import: concatenated traces, plain and gzip" {
	for f in cat.json cat.json.gz; do
		imp "$D/$f"
		rel_expect 1 "trace-import: $(rel_quote "$D/$f"): unexpected data after the end of the JSON at byte $(stat -c %s "$D/base.json")"
		# the first trace is all there
		imported "$(cat "$D/base.kernels")"
	done
}

@test "trace-import: output to a full disk" {
	require_dev_full
	for f in base.json big.json; do
		RC=0
		trace-import "$D/$f" > /dev/full 2> "$T/err" || RC=$?
		ERR=$T/err
		rel_expect 2 "trace-import: \\(stdout\\): No space left on device"
		RC=0
		trace-import -o /dev/full "$D/$f" 2> "$T/err" || RC=$?
		rel_expect 2 "trace-import: /dev/full: No space left on device"
	done
	[ -c /dev/full ]
}

@test "trace-import: standard output closed" {
	RC=0
	trace-import "$D/base.json" >&- 2> "$T/err" || RC=$?
	ERR=$T/err
	rel_expect 2 "trace-import: \\(stdout\\): Bad file descriptor"
}

@test "trace-import: the reader of the output goes away" {
	ERR=$T/err
	RC=0
	closed_pipe trace-import "$D/big.json" 2> "$ERR" || RC=$?
	rel_expect 0
	RC=0
	(set -o pipefail; trace-import "$D/big.json" 2> "$ERR" | head -c 100 > /dev/null) || RC=$?
	rel_expect 0
}
