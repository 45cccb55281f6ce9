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
