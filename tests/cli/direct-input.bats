#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Every reading command reads Chrome/PyTorch JSON (plain or gzip) and
# Nsight Systems SQLite exports directly, told by content (issue 19,
# item 1): what each prints is what it prints after trace-import.  Files
# that are none of these get one line saying what they look like.

load helpers

setup() {
	D=$BATS_TEST_TMPDIR
	command -v jq >/dev/null || skip "no jq"
}

# same_as_import CMD [OPTIONS] -- FILE...: CMD on the files directly and
# on their imports (trace-import -o) print the same, once the names of
# the inputs are taken out.
same_as_import() {
	local args=() files=() i=0 f
	while [ "$1" != -- ]; do args+=("$1"); shift; done
	shift
	local cmd=${args[0]} sed_names=()
	for f in "$@"; do
		i=$((i + 1))
		trace-import -o "$D/in$i.tkt" "$f"
		files+=("$D/in$i.tkt")
		sed_names+=(-e "s|$f|INPUT$i|g" -e "s|$D/in$i.tkt|INPUT$i|g")
	done
	case $cmd in
	trace-diff)
		# its exit status says whether the runs differ: the same too
		run --separate-stderr "${args[@]}" "$@"
		local st=$status
		sed "${sed_names[@]}" <<< "$output" > "$D/direct.out"
		run --separate-stderr "${args[@]}" "${files[@]}"
		assert_eq "$st" "$status"
		sed "${sed_names[@]}" <<< "$output" > "$D/import.out"
		[ -s "$D/import.out" ]
		diff "$D/import.out" "$D/direct.out" ;;
	trace-to-perfetto|trace-merge)
		"${args[@]}" -o "$D/direct.out" "$@"
		"${args[@]}" -o "$D/import.out" "${files[@]}"
		cmp "$D/direct.out" "$D/import.out" ;;
	*)
		run -0 --separate-stderr "${args[@]}" "$@"
		[ -z "$stderr" ] || { echo "$stderr"; return 1; }
		sed "${sed_names[@]}" <<< "$output" > "$D/direct.out"
		"${args[@]}" "${files[@]}" | sed "${sed_names[@]}" > "$D/import.out"
		[ -s "$D/import.out" ]
		diff "$D/import.out" "$D/direct.out" ;;
	esac
}

# The real traces read here: the smallest few under valgrind and the
# sanitizers.
traces() {
	local t=$TK_SHARED/testdata
	[ -d "$t" ] || skip "real test data not found: $t (see ../shared/testdata/SOURCES.md)"
	A=$t/hta/critical_path/cuda_event_sync/event_sync_trace.json.gz
	B=$t/hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz
	C=$t/catapult/simple_trace.json
	if under_valgrind || under_sanitizers; then
		LIST=("$A" "$C")
	else
		LIST=("$A" "$B" "$C" "$t/param/dlrm_kineto/worker1_step_12.1694128201556.pt.trace.json")
	fi
}

@test "trace-stats, trace-dump, trace-to-chrome, trace-to-perfetto read PyTorch JSON as they read its import" {
	traces
	for f in "${LIST[@]}"; do
		same_as_import trace-stats -r all -- "$f"
		same_as_import trace-stats --json --steps --operators -- "$f"
		same_as_import trace-dump -- "$f"
		same_as_import trace-dump -i -- "$f"
		same_as_import trace-to-chrome -- "$f"
		same_as_import trace-to-perfetto -- "$f"
	done
}

@test "trace-merge and trace-diff read PyTorch JSON as they read its import" {
	traces
	same_as_import trace-merge -- "$A" "$C"
	same_as_import trace-merge -l a -l b -- "$A" "$A"
	same_as_import trace-diff --fail-if-slower 1000% --json -- "$A" "$B"
	same_as_import trace-diff -k kernel -- "$B" "$A"
}

@test "several inputs of different kinds at once: a .tkt, a JSON, a gzip JSON" {
	traces
	trace-import -o "$D/a.tkt" "$A"
	run -0 --separate-stderr trace-stats --json "$D/a.tkt" "$B" "$C"
	assert_eq "$(jq -c '.run.inputs' <<< "$output")" "[\"$D/a.tkt\",\"$B\",\"$C\"]"
	same_as_import trace-stats -- "$A" "$B" "$C"
}

@test "standard input: a JSON file, a JSON pipe, a gzip pipe are imported; a .tkt pipe is read as it comes" {
	traces
	# the import of standard input names it (stdin) in its metadata: the
	# reference is trace-import - on the same bytes
	trace-stats < "$C" > "$D/direct"
	trace-import - < "$C" | trace-stats > "$D/import"
	diff "$D/import" "$D/direct"
	cat "$C" | trace-dump > "$D/direct"
	cat "$C" | trace-import | trace-dump > "$D/import"
	diff "$D/import" "$D/direct"
	cat "$B" | trace-to-chrome > "$D/direct"
	cat "$B" | trace-import | trace-to-chrome > "$D/import"
	cmp "$D/import" "$D/direct"
	gzip -dc "$B" | trace-stats -r kernels --csv > "$D/direct"
	gzip -dc "$B" | trace-import | trace-stats -r kernels --csv > "$D/import"
	[ "$(wc -l < "$D/import")" -gt 2 ]
	diff "$D/import" "$D/direct"
	# a .tkt on a pipe is looked at without being consumed, also when
	# its first bytes come alone, a while before the rest
	trace-import -o "$D/b.tkt" "$B"
	trace-dump "$D/b.tkt" > "$D/file"
	cat "$D/b.tkt" | trace-dump > "$D/pipe"
	cmp "$D/file" "$D/pipe"
	{ head -c 5 "$D/b.tkt"; sleep 0.3; tail -c +6 "$D/b.tkt"; } | trace-dump > "$D/pipe"
	cmp "$D/file" "$D/pipe"
	{ head -c 12 "$D/b.tkt"; sleep 0.3; tail -c +13 "$D/b.tkt"; } | trace-merge | trace-dump > "$D/pipe"
	cmp "$D/file" "$D/pipe"
}

@test "Nsight Systems SQLite exports are read directly, from a file and from standard input" {
	for n in ex-gpu.s10 profile1; do
		gzip -dc "$TK_SRC/tests/data/nsys/$n.sqlite.gz" > "$D/$n.sqlite"
		same_as_import trace-stats -r all -- "$D/$n.sqlite"
		same_as_import trace-to-chrome -- "$D/$n.sqlite"
		trace-dump < "$D/$n.sqlite" > "$D/direct"
		trace-import - < "$D/$n.sqlite" | trace-dump > "$D/import"
		[ -s "$D/import" ]
		cmp "$D/import" "$D/direct"
	done
}

@test "a JSON the importer reads only in part: what it read, its warning, exit status 1" {
	printf '{"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":2,"pid":1,"tid":1},\n{"ph":' > "$D/cut.json"
	run -1 --separate-stderr trace-dump "$D/cut.json"
	[ "$(wc -l <<< "$output")" -eq 1 ]
	[[ $output == *" a "* ]] || [[ $output == *" a" ]]
	[[ $stderr == "trace-dump: $D/cut.json: "* ]]
	[ "$(wc -l <<< "$stderr")" -eq 1 ]
	run -1 --separate-stderr trace-merge -o "$D/m.tkt" "$D/cut.json"
	[ "$(trace-dump "$D/m.tkt" | wc -l)" -eq 1 ]
}

# wrong FILE MESSAGE: every reading command says MESSAGE about FILE, on
# one line, and exits 1 (trace-diff 2, as diff(1)); trace-stats and
# trace-dump print nothing else (the converters still write an empty
# trace)
wrong() {
	local c
	for c in trace-stats trace-dump trace-to-chrome trace-to-perfetto; do
		run -1 --separate-stderr "$c" "$1"
		assert_eq "$stderr" "$c: $1: ${2//CMD/$c}"
		case $c in trace-stats|trace-dump) [ -z "$output" ] ;; esac
	done
	run -1 --separate-stderr trace-merge -o "$D/m.tkt" "$1"
	assert_eq "$stderr" "trace-merge: $1: ${2//CMD/trace-merge}"
	run -2 --separate-stderr trace-diff "$1" "$1"
	assert_eq "$(head -1 <<< "$stderr")" "trace-diff: $1: ${2//CMD/trace-diff}"
}

@test "files that are not traces get one line saying what they look like and what to do" {
	: > "$D/empty"
	wrong "$D/empty" "empty input (not a trace)"
	{ printf '\x00\x01QuadD report\x00'; head -c 2000 /dev/zero; } > "$D/r.nsys-rep"
	wrong "$D/r.nsys-rep" "an Nsight Systems report: export it first (nsys export --type sqlite FILE), then read the .sqlite"
	echo '{"traceEvents":[]}' | gzip | gzip > "$D/twice.json.gz"
	wrong "$D/twice.json.gz" "gzip inside gzip: decompress it once first (gzip -dc FILE | CMD)"
	printf '<!DOCTYPE html>\n<html><body>Sign in</body></html>\n' > "$D/page.json"
	wrong "$D/page.json" "an HTML page, not a trace (a web page saved instead of the file?)"
	printf 'PK\003\004\024\000\000\000\000\000' > "$D/t.zip"
	wrong "$D/t.zip" "a zip archive: extract the trace first (unzip FILE)"
	printf '# perf report\nkernel 12.5%%\n' > "$D/report.txt"
	wrong "$D/report.txt" "text that is not JSON: not a tracekit trace, Chrome JSON or Nsight Systems SQLite export"
	printf ' \n\t\n' > "$D/blank"
	wrong "$D/blank" "only white space: not a trace"
	synth -o "$D/s.tkt"
	gzip -c "$D/s.tkt" > "$D/s.tkt.gz"
	wrong "$D/s.tkt.gz" "a gzip-compressed tracekit trace: decompress it first (gzip -dc FILE | CMD)"
	printf '\375\067zXZ\000\000' > "$D/x.xz"
	wrong "$D/x.xz" "xz-compressed: decompress it first (xz -dc FILE | CMD)"
	printf '\177ELF\002\001\001' > "$D/prog"
	wrong "$D/prog" "a program (ELF), not a trace"
	printf '\001\002\003\004\005' > "$D/bin"
	wrong "$D/bin" "not a tracekit trace, Chrome JSON or Nsight Systems SQLite export (first bytes 01 02 03 04)"
	# standard input too, named (stdin)
	run -1 --separate-stderr trace-stats < "$D/page.json"
	assert_eq "$stderr" "trace-stats: (stdin): an HTML page, not a trace (a web page saved instead of the file?)"
	run -1 --separate-stderr trace-dump < /dev/null
	assert_eq "$stderr" "trace-dump: (stdin): empty input (not a trace)"
	cat "$D/twice.json.gz" | { run -1 --separate-stderr trace-stats; assert_eq "$stderr" "trace-stats: (stdin): gzip inside gzip: decompress it once first (gzip -dc FILE | trace-stats)"; }
}

@test "the same inside gzip, and the kinds of file the first list has not" {
	gz() { gzip -c > "$D/$1"; }
	: | gz empty.gz
	wrong "$D/empty.gz" "the input is empty"
	printf ' \n' | gz blank.gz
	wrong "$D/blank.gz" "gzip-compressed only white space: not a trace"
	printf 'SQLite format 3\000rest' | gz db.gz
	wrong "$D/db.gz" "a gzip-compressed SQLite database: decompress it first (gzip -dc FILE > x.sqlite)"
	printf '\050\265\057\375\000' | gz z.gz
	wrong "$D/z.gz" "gzip-compressed zstd-compressed: decompress it first (zstd -dc FILE | CMD)"
	printf 'BZh91AY' > "$D/b.bz2"
	wrong "$D/b.bz2" "bzip2-compressed: decompress it first (bzip2 -dc FILE | CMD)"
	printf 'PK\003\004\024\000' | gz zip.gz
	wrong "$D/zip.gz" "gzip-compressed a zip archive: extract the trace first (unzip FILE)"
	printf '\177ELF\002' | gz elf.gz
	wrong "$D/elf.gz" "gzip-compressed a program (ELF), not a trace"
	printf 'x Nsight Systems y' | gz rep.gz
	wrong "$D/rep.gz" "gzip-compressed an Nsight Systems report: export it first (nsys export --type sqlite FILE), then read the .sqlite"
	printf '  <HTML><body></body></HTML>' > "$D/upper.html"
	wrong "$D/upper.html" "an HTML page, not a trace (a web page saved instead of the file?)"
	printf '<?xml version="1.0"?><a/>' | gz x.xml.gz
	wrong "$D/x.xml.gz" "gzip-compressed XML or HTML, not a trace"
	printf '# notes\n' | gz notes.gz
	wrong "$D/notes.gz" "gzip-compressed text that is not JSON: not a tracekit trace, Chrome JSON or Nsight Systems SQLite export"
	# fewer than four bytes: the missing ones shown as 00
	printf '\001' > "$D/one"
	wrong "$D/one" "not a tracekit trace, Chrome JSON or Nsight Systems SQLite export (first bytes 01 00 00 00)"
	printf '\001\002\003\004' | gz bin.gz
	wrong "$D/bin.gz" "gzip-compressed not a tracekit trace, Chrome JSON or Nsight Systems SQLite export (first bytes 01 02 03 04)"
	# a UTF-8 byte order mark before the JSON is read past; an empty
	# TMPDIR means /tmp for the copy of standard input
	printf '\357\273\277 {"traceEvents":[{"ph":"X","name":"k","pid":1,"tid":1,"ts":1,"dur":4}]}' > "$D/bom.json"
	run -0 trace-dump --json "$D/bom.json"
	assert_eq "$(jq -c '[.name, .ts, .dur]' <<< "$output")" '["k",1000,4000]'
	run -0 env TMPDIR= trace-dump --json < "$D/bom.json"
	assert_eq "$(jq -c '[.name, .ts, .dur]' <<< "$output")" '["k",1000,4000]'
}
