#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-export (issue 26): its Parquet and CSV read by a real engine,
# DuckDB (npm @duckdb/node-api under tests/cli/duckdb: npm ci --prefix
# tests/cli/duckdb), and checked against figures computed elsewhere:
# the schema of tracekit-tables(5), the events trace-dump --json lists,
# trace-stats --json's per-name figures, random tables from pqrand.

load helpers

DDB=$BATS_TEST_DIRNAME/duckdb
CHECK=$DDB/export_check.py
MAN5=$TK_SRC/man/tracekit-tables.5

need_duckdb() {
	command -v node > /dev/null || skip "node not found (apt-get install nodejs)"
	[ -d "${TK_NODE_MODULES:-$DDB/node_modules}/@duckdb/node-api" ] ||
		skip "DuckDB for node not installed (npm ci --prefix tests/cli/duckdb)"
}

# ddb SQL: the rows of a DuckDB query, one JSON array per line
ddb() { node "$DDB/query.mjs" "$@"; }

# the one run folder under $1
run_dir() {
	local d=("$1"/run=*)
	[ "${#d[@]}" -eq 1 ] && [ -d "${d[0]}" ] || return 1
	printf '%s\n' "${d[0]}"
}

# full_check TRACE LAKE: export TRACE alone and check it every way
full_check() {
	local t=$1 lake=$2 d
	trace-export -o "$lake" "$t" 2> "$lake.err" || { cat "$lake.err"; return 1; }
	d=$(run_dir "$lake")
	trace-dump --json "$t" > "$lake.dump"
	trace-stats --json -n 1000000 "$t" > "$lake.stats"
	python3 "$CHECK" all "$MAN5" "$lake.dump" "$lake.stats" "$d"
}

@test "a synthetic trace: schema of the man page, rows and sums of the events, trace-stats' figures" {
	need_duckdb
	t=$(synth_trace a.tkt -n 20000 -s 3)
	run -0 full_check "$t" "$BATS_TEST_TMPDIR/lake"
	echo "$output"
	[[ "$output" == *"14 tables"* ]]
	[[ "$output" == *"groups"* ]]
}

@test "runs concatenate: hive partitions over several runs, each run's rows, steps and run rows" {
	need_duckdb
	lake=$BATS_TEST_TMPDIR/lake
	for s in 1 2 3; do
		t=$(synth_trace "s$s.tkt" -n 5000 -s $s)
		trace-export -o "$lake" "$t"
	done
	[ "$(ls -d "$lake"/run=* | wc -l)" -eq 3 ]
	# per run, from the events themselves
	want=$(for s in 1 2 3; do
		id=$(ddb "SELECT run_id FROM read_parquet('$lake/*/runs.parquet') WHERE source LIKE '%s$s.tkt'" | jq -r '.[0]')
		n=$(trace-dump --json -k kernel "$BATS_TEST_TMPDIR/s$s.tkt" | wc -l)
		echo "[\"$id\",\"$id\",\"$n\"]"
	done | sort)
	got=$(ddb "SELECT run, run_id, count(*) FROM read_parquet('$lake/*/kernels.parquet', hive_partitioning = true) GROUP BY ALL ORDER BY 1")
	assert_eq "$got" "$want"
	# the runs table: one row each, its event count the trace's
	got=$(ddb "SELECT count(*), sum(events), sum(traces) FROM read_parquet('$lake/*/runs.parquet')")
	n=$(cat "$BATS_TEST_TMPDIR"/s?.tkt | trace-dump --json | wc -l)
	assert_eq "$got" "[\"3\",\"$n\",\"3\"]"
	# two traces concatenated: one run of two traces, string ids of each
	cat "$BATS_TEST_TMPDIR/s1.tkt" "$BATS_TEST_TMPDIR/s2.tkt" > "$BATS_TEST_TMPDIR/both.tkt"
	trace-export -o "$BATS_TEST_TMPDIR/lake2" "$BATS_TEST_TMPDIR/both.tkt"
	got=$(ddb "SELECT (SELECT traces FROM read_parquet('$BATS_TEST_TMPDIR/lake2/*/runs.parquet')), (SELECT string_agg(DISTINCT trace::text, ',' ORDER BY trace::text) FROM read_parquet('$BATS_TEST_TMPDIR/lake2/*/strings.parquet'))")
	assert_eq "$got" '["2","1,2"]'
	# steps: synth's step ranges, and every kernel of a step inside it
	steps=$(trace-dump --json -k range "$BATS_TEST_TMPDIR/s1.tkt" | jq -s '[.[] | select(.name == "step")] | length')
	got=$(ddb "SELECT count(*) FROM read_parquet('$lake/*/steps.parquet') s JOIN read_parquet('$lake/*/runs.parquet') r USING (run_id) WHERE r.source LIKE '%s1.tkt'")
	assert_eq "$got" "[\"$steps\"]"
	got=$(ddb "SELECT count(*) FROM read_parquet('$lake/*/kernels.parquet') k JOIN read_parquet('$lake/*/steps.parquet') s USING (run_id, step) WHERE k.start < s.start OR k.start >= s.end")
	assert_eq "$got" '["0"]'
	# each step's kernel time: the kernels that begin in its window
	got=$(ddb "SELECT count(*) FROM read_parquet('$lake/*/steps.parquet') s WHERE kernel_time <> (SELECT coalesce(sum(duration), 0) FROM read_parquet('$lake/*/kernels.parquet') k WHERE k.run_id = s.run_id AND k.start >= s.start AND k.start < s.end)")
	assert_eq "$got" '["0"]'
}

@test "adding a run leaves the others as they were; the same trace again is left alone" {
	lake=$BATS_TEST_TMPDIR/lake
	a=$(synth_trace a.tkt -n 3000 -s 1)
	b=$(synth_trace b.tkt -n 3000 -s 2)
	trace-export -o "$lake" "$a"
	before=$(cd "$lake" && find . -type f -exec sha256sum {} + | sort)
	stamp=$(stat -c %Y "$(run_dir "$lake")")
	trace-export -o "$lake" "$b"
	# the first run's files as they were, their folder not written to
	now=$(cd "$lake" && find . -type f -exec sha256sum {} + | sort | grep -F -f <(echo "$before" | awk '{print $2}'))
	assert_eq "$now" "$before"
	first=$(awk '{print $2}' <<< "$before" | head -1 | cut -d/ -f2)
	assert_eq "$(stat -c %Y "$lake/$first")" "$stamp"
	[ "$(ls -d "$lake"/run=* | wc -l)" -eq 2 ]
	run -0 trace-export -o "$lake" "$a"
	[[ "$output" == *"already; left as it is"* ]]
	[ "$(ls -d "$lake"/run=* | wc -l)" -eq 2 ]
	# no hidden folder left behind
	[ -z "$(ls -A "$lake" | grep -v '^run=')" ]
	# --run-id names it; stdin works
	trace-export -o "$lake" --run-id nightly-7 < "$a"
	[ -f "$lake/run=nightly-7/kernels.parquet" ]
	# a named pipe is read once, and gets the id of the same bytes
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	cat "$b" > "$BATS_TEST_TMPDIR/fifo" &
	run -0 timeout 120 trace-export -o "$BATS_TEST_TMPDIR/lake2" "$BATS_TEST_TMPDIR/fifo"
	wait
	[ -d "$lake/$(basename "$(run_dir "$BATS_TEST_TMPDIR/lake2")")" ]
}

@test "the Parquet writer: random tables round-trip through DuckDB (nulls, unicode, extremes, row groups, pages)" {
	need_duckdb
	d=$BATS_TEST_TMPDIR
	# seed rows group_rows page_rows gzip-level
	cases="1 1000 300 64 6
2 20000 7000 1000 0
3 1 1 1 6
4 0 10 10 6
5 5000 5000 5000 1
6 3000 128 7 12"
	under_valgrind || under_sanitizers || cases="$cases
7 200000 65536 16384 6"
	while read -r seed rows g p l; do
		pqrand "$seed" "$rows" "$d/t.parquet" "$d/want.jsonl" "$g" "$p" "$l"
		ddb "SELECT * FROM read_parquet('$d/t.parquet') ORDER BY i" > "$d/got.jsonl"
		run python3 "$DDB/same_rows.py" "$d/want.jsonl" "$d/got.jsonl" 4
		[ "$status" -eq 0 ] || { echo "seed $seed: $output"; return 1; }
		# several row groups when asked
		groups=$(ddb "SELECT count(DISTINCT row_group_id) FROM parquet_metadata('$d/t.parquet')" | jq -r '.[0]')
		[ "$rows" -eq 0 ] || [ "$groups" -eq $(((rows + g - 1) / g)) ]
	done <<< "$cases"
	# types: the tool's columns as DuckDB sees them
	got=$(ddb --types "SELECT * FROM read_parquet('$d/t.parquet')" | jq -c . | tr -d '\n')
	assert_eq "$got" '["i","BIGINT"]["a","BIGINT"]["b","BIGINT"]["c","INTEGER"]["d","DOUBLE"]["s","VARCHAR"]["t","VARCHAR"]["z","VARCHAR"]'
}

@test "the comparison can fail: a row changed, a figure off" {
	need_duckdb
	d=$BATS_TEST_TMPDIR
	pqrand 9 100 "$d/t.parquet" "$d/want.jsonl"
	ddb "SELECT * FROM read_parquet('$d/t.parquet') ORDER BY i" > "$d/got.jsonl"
	sed -i '50s/"[^"]*"/"x"/2' "$d/got.jsonl"
	run python3 "$DDB/same_rows.py" "$d/want.jsonl" "$d/got.jsonl" 4
	[ "$status" -eq 1 ]
	[[ "$output" == *"row 49"* ]]
	t=$(synth_trace a.tkt -n 3000)
	trace-export -o "$d/lake" "$t"
	trace-stats --json -n 100000 "$t" | jq '.kernels[0].p95_ns += 1' > "$d/stats.json"
	run python3 "$CHECK" stats "$d/stats.json" "$(run_dir "$d/lake")"
	[ "$status" -eq 1 ]
	[[ "$output" == *"p95_ns"* ]]
	trace-dump --json "$t" | sed '0,/"kind":"kernel"/s/"kind":"kernel"/"kind":"other"/' > "$d/dump.jsonl"
	run python3 "$CHECK" events "$d/dump.jsonl" "$(run_dir "$d/lake")"
	[ "$status" -eq 1 ]
	[[ "$output" == *"kernels: count"* ]]
}

@test "CSV: the same tables and rows as Parquet, nulls apart from empty strings" {
	need_duckdb
	d=$BATS_TEST_TMPDIR
	t=$(synth_trace a.tkt -n 5000)
	trace-export -o "$d/pq" "$t"
	trace-export --format csv --output "$d/csv" "$t"
	[ "$(basename "$(run_dir "$d/pq")")" = "$(basename "$(run_dir "$d/csv")")" ]
	for table in runs processes threads devices streams strings kernels memops api ranges memory counters steps summaries; do
		p=$(run_dir "$d/pq")/$table.parquet c=$(run_dir "$d/csv")/$table.csv
		# the CSV read with the Parquet file's types; "" is not a null
		types=$(ddb --types "SELECT * FROM read_parquet('$p', hive_partitioning = false)" |
		        jq -rs 'map("'"'"'\(.[0])'"'"': '"'"'\(.[1])'"'"'") | "{" + join(", ") + "}"')
		csv="read_csv('$c', header = true, columns = $types, allow_quoted_nulls = false, hive_partitioning = false)"
		got=$(ddb "SELECT (SELECT count(*) FROM (SELECT * FROM read_parquet('$p', hive_partitioning = false) EXCEPT ALL SELECT * FROM $csv)), (SELECT count(*) FROM $csv), (SELECT count(*) FROM read_parquet('$p', hive_partitioning = false))")
		n=$(jq -r '.[2]' <<< "$got")
		assert_eq "$table $got" "$table [\"0\",\"$n\",\"$n\"]"
	done
	# a memset's copy_kind is null, a kernel's mangled name empty
	assert_eq "$(ddb "SELECT count(*) FROM read_csv('$(run_dir "$d/csv")/memops.csv', header = true) WHERE kind = 'memset' AND copy_kind IS NOT NULL")" '["0"]'
}

@test "bad input: one line naming the file, status 1, nothing half written; usage errors say so" {
	d=$BATS_TEST_TMPDIR
	printf 'not a trace\n' > "$d/bad.tkt"
	run -1 trace-export -o "$d/lake" "$d/bad.tkt"
	[[ "$output" == "trace-export: $d/bad.tkt: "* ]]
	[ "${#lines[@]}" -eq 1 ]
	run -1 trace-export -o "$d/lake" "$d/missing.tkt"
	[[ "$output" == "trace-export: $d/missing.tkt: "* ]]
	# a truncated trace: what could be read is exported, status 1
	t=$(synth_trace a.tkt -n 5000)
	head -c 20000 "$t" > "$d/cut.tkt"
	run -1 trace-export -o "$d/lake2" "$d/cut.tkt"
	[ -f "$(run_dir "$d/lake2")/kernels.parquet" ]
	run -2 trace-export --format xml "$t"
	[[ "$output" == *"invalid --format 'xml'"* ]]
	run -2 trace-export --run-id a/b "$t"
	run -2 trace-export --run-id x "$t" "$t"
	run -2 trace-export --row-group 0 "$t"
	run -0 trace-export --help
	[[ "$output" == *"--row-group"* ]]
	run -0 trace-export --version
	[[ "$output" == "trace-export (tracekit) "* ]]
	# an output that cannot be written: status 2
	run -2 trace-export -o /proc/version/x "$t"
	[ -z "$(ls -A "$d/lake" 2>/dev/null | grep -v '^run=')" ]
}

# same_tables A B: the CSV tables of runs A and B hold the same rows, the
# run ids apart; runs.csv's source (the input's name) may differ
same_tables() {
	local a=$1 b=$2 ida idb t
	ida=$(basename "$a"); ida=${ida#run=}
	idb=$(basename "$b"); idb=${idb#run=}
	for t in "$a"/*.csv; do
		t=$(basename "$t")
		[ -f "$b/$t" ] || { echo "$t: missing from $b"; return 1; }
		if [ "$t" = runs.csv ]; then
			diff <(cut -d, -f3- "$a/$t" | sed "s/$ida/RUN/g") \
			     <(cut -d, -f3- "$b/$t" | sed "s/$idb/RUN/g") || { echo "$t differs"; return 1; }
		else
			diff <(sed "s/$ida/RUN/g" "$a/$t") <(sed "s/$idb/RUN/g" "$b/$t") ||
				{ echo "$t differs"; return 1; }
		fi
	done
	[ "$(ls "$a" | wc -l)" -eq "$(ls "$b" | wc -l)" ]
}

@test "another tool's trace (PyTorch JSON, gzip or not, a file or stdin) is exported as its import is" {
	d=$BATS_TEST_TMPDIR
	# a PyTorch-profiler-shaped trace: a step, an operator, a launch, its
	# kernel on a GPU stream, a flow between them
	cat > "$d/pt.json" <<'JSON'
{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}],
 "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 11, "tid": 12, "ts": 1000.0, "dur": 500.0},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 11, "tid": 12, "ts": 1010.0, "dur": 100.0},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 11, "tid": 12, "ts": 1020.0, "dur": 10.0, "args": {"correlation": 5}},
  {"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": 0, "tid": 7, "ts": 1040.0, "dur": 200.5, "args": {"device": 0, "stream": 7, "correlation": 5, "grid": [4, 1, 1], "block": [128, 1, 1]}},
  {"ph": "s", "id": 5, "pid": 11, "tid": 12, "ts": 1020.0, "cat": "ac2g", "name": "ac2g"},
  {"ph": "f", "id": 5, "pid": 0, "tid": 7, "ts": 1040.0, "cat": "ac2g", "name": "ac2g", "bp": "e"}
 ]}
JSON
	gzip -c "$d/pt.json" > "$d/pt.json.gz"
	trace-import -o "$d/pt.tkt" "$d/pt.json"
	trace-export -f csv -o "$d/ref" "$d/pt.tkt"
	ref=$(run_dir "$d/ref")
	# the tables say what the JSON says: one kernel of 200.5 us in step 1
	run python3 -c 'import csv, sys
k = list(csv.DictReader(open(sys.argv[1] + "/kernels.csv")))
s = list(csv.DictReader(open(sys.argv[1] + "/steps.csv")))
print(len(k), k[0]["name"], k[0]["duration"], len(s), s[0]["kernel_time"])' "$ref"
	assert_eq "$output" "1 sm90_gemm 200500 1 200500"
	n=0
	for src in "$d/pt.json" "$d/pt.json.gz" - ; do
		n=$((n + 1))
		if [ "$src" = - ]; then
			run -0 --separate-stderr bash -c "trace-export -f csv -o '$d/l$n' < '$d/pt.json.gz'"
		else
			run -0 --separate-stderr trace-export -f csv -o "$d/l$n" "$src"
		fi
		assert_eq "$stderr" ""
		run same_tables "$ref" "$(run_dir "$d/l$n")"
		[ "$status" -eq 0 ] || { echo "$src: $output"; false; }
		# nothing left behind in the hidden folder
		[ ! -e "$d/l$n/.tmp" ]
	done
	# the run's id comes from the bytes given: the JSON's, not its import's
	[ "$(basename "$(run_dir "$d/l1")")" != "$(basename "$ref")" ]
	[ "$(basename "$(run_dir "$d/l2")")" = "$(basename "$(run_dir "$d/l3")")" ]
	# an import that stops early: what it read is exported, status 1, the
	# importer's one line
	head -c 700 "$d/pt.json" > "$d/cut.json"
	run -1 --separate-stderr trace-export -f csv -o "$d/cut" "$d/cut.json"
	[[ "$stderr" == "trace-export: $d/cut.json: "* ]]
	[ -f "$(run_dir "$d/cut")/kernels.csv" ]
	# JSON that is no trace: one line, status 1, no run
	printf '{"hello": 1}' > "$d/other.json"
	run -1 --separate-stderr trace-export -o "$d/none" "$d/other.json"
	[[ "$stderr" == "trace-export: $d/other.json: "* ]]
	[ -z "$(ls -A "$d/none" 2>/dev/null)" ]
}

@test "an output that fills up: one line naming the table, status 2, no run left, in either format" {
	under_valgrind && skip "valgrind's own files would meet the file size limit"
	d=$BATS_TEST_TMPDIR
	t=$(synth_trace a.tkt -n 30000)
	for fmt in csv parquet; do
		# files past 64 KiB fail with EFBIG (SIGXFSZ ignored), as a
		# full disk would with ENOSPC
		run --separate-stderr -2 bash -c "trap '' XFSZ; ulimit -f 64; exec trace-export -f $fmt -o '$d/$fmt' '$t'"
		assert_eq "${#stderr_lines[@]}" 1
		[[ "$stderr" =~ ^"trace-export: $d/$fmt/run="[0-9a-f]{16}/[a-z]+\.$fmt": write error: File too large"$ ]]
		assert_eq "$(ls -A "$d/$fmt")" ""
	done
	# standard input is copied aside first: that copy failing is a write error too
	run -2 bash -c "trap '' XFSZ; ulimit -f 64; exec trace-export -o '$d/in' < '$t'"
	[[ "$output" =~ ^"trace-export: $d/in/.tmp/run-"[0-9]+-0/stdin.tkt": write error: File too large"$ ]]
	assert_eq "$(ls -A "$d/in")" ""
}

@test "every real trace of the test data, imported, exports and checks (schema, events, trace-stats)" {
	need_duckdb
	[ -d "$TK_SHARED/testdata" ] || skip "real test data not found: $TK_SHARED/testdata"
	n=0
	while IFS= read -r src; do
		tkt=$BATS_TEST_TMPDIR/real$n.tkt
		trace-import -o "$tkt" "$src" 2> /dev/null || [ $? -eq 1 ]
		run full_check "$tkt" "$BATS_TEST_TMPDIR/lake$n"
		[ "$status" -eq 0 ] || { echo "$src: $output"; return 1; }
		n=$((n + 1))
		# under valgrind or the sanitizers, the smallest few only: every
		# trace is checked by the plain build's run
		{ under_valgrind || under_sanitizers; } && [ $n -ge 3 ] && break
	done < <(find "$TK_SHARED/testdata" -name '*.json' -o -name '*.json.gz' -o -name '*.gz' |
	         xargs ls -S -r)
	echo "# $n real traces checked" >&3
	[ "$n" -gt 0 ]
}

@test "the README's query: the kernels made slower come first" {
	need_duckdb
	d=$BATS_TEST_TMPDIR
	mkdir -p "$d/before" "$d/after"
	for s in 1 2 3; do
		synth -n 3000 -s $s -o "$d/before/r$s.tkt"
		synth -n 3000 -s $((s + 3)) --slow elementwise=1.3 -o "$d/after/r$s.tkt"
	done
	# the SQL block of README.md's trace-export section, as it is
	sql=$(awk '/^## trace-export/ { on = 1 } on && /^```sql/ { q = 1; next }
	           q && /^```/ { exit } q' "$TK_SRC/README.md")
	[ -n "$sql" ]
	(cd "$d" && trace-export -o lake before/*.tkt after/*.tkt)
	run -0 bash -c 'cd "$1" && node "$2/query.mjs" "$3"' _ "$d" "$DDB" "$sql"
	[ "${#lines[@]}" -eq 5 ]
	# the four elementwise kernels (30 % slower), then the others, within noise
	for i in 0 1 2 3; do
		[[ "${lines[$i]}" == *vectorized_elementwise* ]]
		pct=$(jq -r '.[3]' <<< "${lines[$i]}")
		awk -v p="$pct" 'BEGIN { exit !(p > 20 && p < 40) }'
	done
	[[ "${lines[4]}" != *elementwise* ]]
}

@test "each bad option value says what it wants, exit 2; a FIFO, --run-id, -f parquet and --row-group together" {
	d=$BATS_TEST_TMPDIR
	t=$(synth_trace a.tkt -n 5000)
	while IFS='|' read -r opt want; do
		run -2 trace-export $opt -o "$d/lake" "$t"
		assert_eq "${lines[0]}" "trace-export: $want"
	done <<-'EOF2'
	--run-id=|invalid --run-id '' (a folder name in UTF-8: no '/', '=', newline or leading '.')
	--run-id .hidden|invalid --run-id '.hidden' (a folder name in UTF-8: no '/', '=', newline or leading '.')
	--run-id a=b|invalid --run-id 'a=b' (a folder name in UTF-8: no '/', '=', newline or leading '.')
	--row-group abc|invalid --row-group 'abc' (rows, 1 to 1073741824)
	--row-group 1073741825|invalid --row-group '1073741825' (rows, 1 to 1073741824)
	EOF2
	# bytes that are not UTF-8 are refused and shown as U+FFFD
	run -2 trace-export --run-id "$(printf 'r\xff1')" -o "$d/lake" "$t"
	assert_eq "${lines[0]}" "trace-export: invalid --run-id 'r$(printf '\xef\xbf\xbd')1' (a folder name in UTF-8: no '/', '=', newline or leading '.')"
	[ ! -e "$d/lake" ]
	# a file where the folder should be: said of it, nothing made
	echo x > "$d/file"
	run -2 trace-export -o "$d/file" "$t"
	assert_eq "$output" "trace-export: $d/file: Not a directory"
	# a named pipe is copied first and gets the id of the same bytes in a file
	trace-export -o "$d/a" "$t"
	trace-export -o "$d/b" <(cat "$t")
	assert_eq "$(ls "$d/b")" "$(ls "$d/a")"
	# options together: 700 rows a group, an id of our own
	n=$(trace-dump -k kernel "$t" | wc -l)
	[ "$n" -gt 1400 ]
	trace-export -f parquet --row-group 700 --run-id 'mine é' -o "$d/c" "$t"
	[ -f "$d/c/run=mine é/kernels.parquet" ]
	# the row groups, from the file's footer: row counts of 700 and the rest
	python3 - "$d/c/run=mine é/kernels.parquet" "$n" <<-'PY'
	import struct, sys
	b = open(sys.argv[1], "rb").read()
	assert b[:4] == b"PAR1" and b[-4:] == b"PAR1"
	flen = struct.unpack("<I", b[-8:-4])[0]
	footer = b[-8 - flen:-8]
	# FileMetaData field 4, row_groups, a list of RowGroup structs whose
	# field 3 is num_rows: read the compact protocol just far enough
	pos = 0
	def varint():
	    global pos
	    v = s = 0
	    while True:
	        c = footer[pos]; pos += 1
	        v |= (c & 0x7f) << s; s += 7
	        if not c & 0x80:
	            return v
	def zz():
	    v = varint()
	    return (v >> 1) ^ -(v & 1)
	def skip(t):
	    global pos
	    if t in (1, 2):
	        return
	    if t in (3,):
	        pos += 1
	    elif t in (4, 5, 6):
	        varint()
	    elif t == 7:
	        pos += 8
	    elif t == 8:
	        n = varint()
	        pos += n
	    elif t in (9, 10):
	        h = footer[pos]; pos += 1
	        n = h >> 4 if h >> 4 != 15 else varint()
	        for _ in range(n):
	            skip(h & 15)
	    elif t == 12:
	        struct_(lambda f, t: skip(t))
	def struct_(on):
	    global pos
	    fid = 0
	    while True:
	        h = footer[pos]; pos += 1
	        if h == 0:
	            return
	        d, t = h >> 4, h & 15
	        fid = fid + d if d else zz()
	        on(fid, t)
	groups = []
	def rowgroup(fid, t):
	    if fid == 3 and t == 6:
	        groups.append(zz())
	    else:
	        skip(t)
	def top(fid, t):
	    global pos
	    if fid == 4 and t == 9:
	        h = footer[pos]; pos += 1
	        n = h >> 4 if h >> 4 != 15 else varint()
	        for _ in range(n):
	            struct_(rowgroup)
	    else:
	        skip(t)
	struct_(top)
	n = int(sys.argv[2])
	want = [700] * (n // 700) + ([n % 700] if n % 700 else [])
	assert groups == want, (groups, want)
	PY
}
