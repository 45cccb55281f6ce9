# SPDX-License-Identifier: MIT
# The reliability matrix: every reading command against bad input, bad
# output and closed pipes.  Loaded by tests/cli/reliability-*.bats after
# helpers.bash; each of those files runs the same cells for one command
# (a key: dump, stats, chrome, merge) so that a failure names both.
#
# Each cell checks the exit status of the command's man page (EXIT
# STATUS), that standard error holds exactly one line naming the file and
# the byte offset (so a sanitizer or valgrind report fails the cell too),
# and for damaged input that every complete chunk before the damage was
# still delivered: as many events as the chunk headers of the intact part
# count (read by badtrace from the bytes, as tracekit-format(5) describes
# them), and the same events.

# ---- fixtures: once per file -------------------------------------------------

# rel_fixtures: every input of the matrix, in $BATS_FILE_TMPDIR.
rel_fixtures() {
	local d=$BATS_FILE_TMPDIR
	# small chunks, so that a cut or a flip has chunks before and after it
	synth -n 3000 --seed 7 --chunk-bytes 8192 -o "$d/base.tkt"
	synth -n 800 --seed 8 --pid 5151 --start 1700000100000000000 \
		--chunk-bytes 8192 -o "$d/other.tkt"
	# enough output to fill a pipe many times over
	synth -n 60000 --seed 9 -o "$d/big.tkt"
	: > "$d/empty.tkt"
	printf '\211PNG\r\n\032\n\0\0\0\rIHDR' > "$d/magic.tkt"
	badtrace version 2 0 "$d/base.tkt" "$d/v2.tkt"
	badtrace version 1 0 0 4 "$d/base.tkt" "$d/features.tkt"
	badtrace version 1 9 8 "$d/base.tkt" "$d/v1.9.tkt"
	mkdir "$d/cuts" "$d/flips" "$d/dir"
	badtrace cuts "$d/base.tkt" "$d/cuts" > "$d/cuts.txt"
	badtrace flips "$d/base.tkt" "$d/flips" > "$d/flips.txt"
	badtrace huge "$d/huge.tkt"
	badtrace utf8 "$d/utf8.tkt"
	cat "$d/base.tkt" "$d/other.tkt" > "$d/cat.tkt"
	# a trace cut between two chunks, then a whole one: the reader meets
	# the second header where the first trace's next chunk should be
	local line
	line=$(awk '$4 == "end" && $3 > 0 { print; exit }' "$d/cuts.txt")
	set -- $line
	cat "$1" "$d/other.tkt" > "$d/catcut.tkt"
	echo "$3 $5" > "$d/catcut.txt"   # events before the cut, its offset
	# what the intact traces hold, by trace-dump (checked against synth
	# by trace-dump.bats): one line per event
	trace-dump --csv "$d/base.tkt" | tail -n +2 > "$d/base.csv"
	trace-dump --csv "$d/other.tkt" | tail -n +2 > "$d/other.csv"
	trace-dump "$d/base.tkt" > "$d/base.txt"
	cut -d, -f1 "$d/base.csv" > "$d/base.kinds"
}

# ---- running a command ------------------------------------------------------------

# The command line of a key.  trace-merge runs with -k so that it merges
# all it can read; its stop without -k is a cell of its own.  trace-diff
# gets two operands (rel_files).
# VARIANTS: the other output formats, which the output cells try too.
# BAD: the exit status for an input that cannot be read completely.
rel_argv() {
	BAD=1
	case $1 in
	dump) ARGV=(trace-dump) VARIANTS=("" --csv --json --info "--info --json") ;;
	stats) ARGV=(trace-stats --json) VARIANTS=("" --csv --json) ;;
	chrome) ARGV=(trace-to-chrome) VARIANTS=("" -z) ;;
	merge) ARGV=(trace-merge -k) VARIANTS=("") ;;
	diff) ARGV=(trace-diff --json) VARIANTS=("" --json --csv --markdown) BAD=2 ;;
	*) echo "unknown key $1" >&2; return 1 ;;
	esac
}

# rel_files KEY FILE: the file operands for FILE, in $FILES.  trace-diff
# compares an intact input with itself, and a damaged one (any other
# name) with the intact base.tkt, so that the damage is reported once.
rel_files() {
	FILES=("$2")
	[ "$1" = diff ] || return 0
	case ${2##*/} in
	base.tkt|big.tkt|other.tkt|v1.9.tkt|huge.tkt|utf8.tkt|cat.tkt) FILES=("$2" "$2") ;;
	*) FILES=("$BATS_FILE_TMPDIR/base.tkt" "$2") ;;
	esac
}

# rel_run KEY ARG... FILE: run it, stdout to $OUT, stderr to $ERR, status
# $RC.  Never for ever: a command that hangs fails the cell (status 124).
rel_run() {
	local key=$1
	rel_argv "$key" || return 1
	shift
	rel_files "$key" "${@: -1}"
	OUT=$BATS_TEST_TMPDIR/out ERR=$BATS_TEST_TMPDIR/err
	RC=0
	timeout 300 "${ARGV[@]}" "${@:1:$#-1}" "${FILES[@]}" > "$OUT" 2> "$ERR" || RC=$?
}

# The events the last run delivered, counted from its output.
rel_events() {
	case $1 in
	dump) wc -l < "$OUT" ;;
	stats) if [ -s "$OUT" ]; then jq '.run.events' "$OUT"; else echo 0; fi ;;
	chrome) jq '.otherData.tracekit.events_read' "$OUT" ;;
	merge) trace-dump "$OUT" 2>/dev/null | wc -l ;;
	diff) if [ -s "$OUT" ]; then jq '.after.events' "$OUT"; else echo 0; fi ;;
	esac
}

# rel_expect STATUS [REGEX]: the exit status, and standard error exactly
# one line matching REGEX (anchored), or empty without REGEX.
rel_expect() {
	local want=$1 re=${2-} err
	err=$(cat "$ERR")
	if [ "$RC" != "$want" ]; then
		printf 'exit status %s, expected %s; stderr:\n%s\n' "$RC" "$want" "$err" >&2
		return 1
	fi
	if [ -z "$re" ]; then
		[ -z "$err" ] || { printf 'unexpected stderr:\n%s\n' "$err" >&2; return 1; }
		return 0
	fi
	if [ "$(wc -l < "$ERR")" != 1 ] || ! [[ "$err" =~ ^$re$ ]]; then
		printf 'stderr:\n%s\nexpected one line matching:\n%s\n' "$err" "$re" >&2
		return 1
	fi
}

# Regular expression of a literal string.
rel_quote() { printf '%s' "$1" | sed 's/[][\.*^$(){}+?|/]/\\&/g'; }

# rel_msg KEY FILE MESSAGE-REGEX: the regex of "cmd: FILE: MESSAGE".
rel_msg() {
	rel_argv "$1"
	printf '%s: %s: %s' "${ARGV[0]}" "$(rel_quote "$2")" "$3"
}

# The output of the last run is well-formed for its command, whatever
# the input: valid JSON, or a trace that reads to its end.
rel_output_valid() {
	case $1 in
	stats) [ ! -s "$OUT" ] || jq -e '.run' "$OUT" > /dev/null ;;
	diff) [ ! -s "$OUT" ] || jq -e '.after' "$OUT" > /dev/null ;;
	chrome) jq -e '.traceEvents | type == "array"' "$OUT" > /dev/null ;;
	merge) trace-dump --info "$OUT" > /dev/null ;;
	esac
}

# rel_delivered KEY N: the last run delivered the first N events of
# base.tkt: that many, and the same ones (kinds for the summaries, the
# lines themselves for the listings).
rel_delivered() {
	local key=$1 n=$2 d=$BATS_FILE_TMPDIR got
	if [ "$key" = diff ] && [ "$RC" = 2 ]; then
		# a trace with a part missing is not compared at all
		[ ! -s "$OUT" ] || { echo "trace-diff compared a damaged trace" >&2; return 1; }
		return 0
	fi
	got=$(rel_events "$key")
	if [ "$got" != "$n" ]; then
		echo "delivered $got events, expected $n" >&2
		return 1
	fi
	case $key in
	dump)
		diff "$OUT" <(head -n "$n" "$d/base.txt") > /dev/null ||
			{ echo "not the first $n events" >&2; return 1; } ;;
	stats)
		[ "$n" = 0 ] && return 0
		diff <(jq -r '.run.kinds | to_entries[] | "\(.key) \(.value)"' "$OUT" | sort) \
		     <(head -n "$n" "$d/base.kinds" | sort | uniq -c | awk '{ print $2, $1 }' | sort) ;;
	chrome)
		# GPU kernels, one JSON line each
		assert_eq "$(grep -c '"cat":"kernel"' "$OUT")" \
		          "$(head -n "$n" "$d/base.kinds" | grep -c '^kernel$')" ;;
	merge)
		diff <(trace-dump --csv "$OUT" | tail -n +2 | sort) \
		     <(head -n "$n" "$d/base.csv" | sort) > /dev/null ||
			{ echo "not the first $n events" >&2; return 1; } ;;
	esac
}

# Under valgrind every run costs about a second: take every Nth line.
rel_sample() {
	if under_valgrind; then
		awk -v n="${2:-8}" 'NR % n == 1' "$1"
	else
		cat "$1"
	fi
}

rel_sample_note() {
	if under_valgrind; then
		echo "# under valgrind: one in ${1:-8} of the $2 only" >&3
	fi
}

# ---- cells ----------------------------------------------------------------------------

cell_empty() {
	local f=$BATS_FILE_TMPDIR/empty.tkt
	rel_run "$1" "$f"
	rel_expect "$BAD" "$(rel_msg "$1" "$f" 'empty input \(not a trace\)')"
	rel_output_valid "$1"
	rel_delivered "$1" 0
}

cell_magic() {
	local f=$BATS_FILE_TMPDIR/magic.tkt
	rel_run "$1" "$f"
	rel_expect "$BAD" "$(rel_msg "$1" "$f" 'not a tracekit trace, Chrome JSON or Nsight Systems SQLite export \(first bytes 89 50 4e 47\)')"
	rel_output_valid "$1"
	rel_delivered "$1" 0
}

cell_future_version() {
	local d=$BATS_FILE_TMPDIR
	rel_run "$1" "$d/v2.tkt"
	rel_expect "$BAD" "$(rel_msg "$1" "$d/v2.tkt" \
		'unsupported format version 2\.0 at byte 0 \(this reader reads 1\.x\)')"
	rel_output_valid "$1"
	rel_delivered "$1" 0
	rel_run "$1" "$d/features.tkt"
	rel_expect "$BAD" "$(rel_msg "$1" "$d/features.tkt" \
		'unsupported format features 0x4 at byte 0')"
	rel_delivered "$1" 0
	# a later minor version with a longer header is read as usual
	rel_run "$1" "$d/v1.9.tkt"
	rel_expect 0
	rel_delivered "$1" "$(wc -l < "$d/base.csv")"
}

# The message of a cut, by where it falls (see badtrace cuts).
cut_message() {
	case $1 in
	empty) echo 'empty input \(not a trace\)' ;;
	header) echo "truncated header at byte $2" ;;
	end) echo "truncated at byte $2 \\(the trace has no end marker: its writer did not finish\\)" ;;
	chunk) echo "truncated chunk at byte $2" ;;
	esac
}

# The loops over every cut and every flip run in reliability.py: each
# case is one run of the command, checked as the cells here check theirs.
cell_truncated() {
	rel_sample_note 8 "$(wc -l < "$BATS_FILE_TMPDIR/cuts.txt") cuts"
	run -0 python3 "$BATS_TEST_DIRNAME/reliability.py" cuts "$1" "$BATS_FILE_TMPDIR"
	[ "$output" -gt 3 ]
}

cell_flipped() {
	rel_sample_note 8 "$(wc -l < "$BATS_FILE_TMPDIR/flips.txt") flips"
	run -0 python3 "$BATS_TEST_DIRNAME/reliability.py" flips "$1" "$BATS_FILE_TMPDIR"
	[ "$output" -gt 3 ]
}

cell_directory() {
	local f=$BATS_FILE_TMPDIR/dir
	rel_run "$1" "$f"
	rel_expect "$BAD" "$(rel_msg "$1" "$f" 'read error at byte 0: Is a directory')"
	rel_output_valid "$1"
	rel_delivered "$1" 0
}

cell_missing() {
	local f=$BATS_FILE_TMPDIR/no-such.tkt
	rel_run "$1" "$f"
	rel_expect "$BAD" "$(rel_msg "$1" "$f" 'No such file or directory')"
	rel_output_valid "$1"
	rel_delivered "$1" 0
}

# A named pipe: nothing can be sought or read twice.  (trace-diff cannot
# read one pipe twice: it compares base.tkt with the pipe.)
cell_fifo() {
	local d=$BATS_FILE_TMPDIR p=$BATS_TEST_TMPDIR/fifo path off n what at
	mkfifo "$p"
	cat "$d/base.tkt" > "$p" &
	if [ "$1" = diff ]; then
		OUT=$BATS_TEST_TMPDIR/out ERR=$BATS_TEST_TMPDIR/err RC=0 BAD=2
		trace-diff --json "$d/base.tkt" "$p" > "$OUT" 2> "$ERR" || RC=$?
	else
		rel_run "$1" "$p"
	fi
	wait
	rel_expect 0
	rel_delivered "$1" "$(wc -l < "$d/base.csv")"
	# cut inside a chunk
	read -r path off n what at < <(awk '$4 == "chunk" && $3 > 0 { print; exit }' "$d/cuts.txt")
	cat "$path" > "$p" &
	if [ "$1" = diff ]; then
		RC=0
		trace-diff --json "$d/base.tkt" "$p" > "$OUT" 2> "$ERR" || RC=$?
	else
		rel_run "$1" "$p"
	fi
	wait
	rel_expect "$BAD" "$(rel_msg "$1" "$p" "$(cut_message "$what" "$at")")"
	rel_delivered "$1" "$n"
}

# Strings of 1 MiB in every place a string can go come out whole.
cell_huge() {
	local key=$1 f=$BATS_FILE_TMPDIR/huge.tkt mib=1048576
	rel_run "$key" "$f"
	rel_expect 0
	case $key in
	dump)
		assert_eq "$(wc -l < "$OUT")" 23
		rel_run dump --json -k kernel,range "$f"
		rel_expect 0
		assert_eq "$(jq -r '.name | length' "$OUT" | sort -u)" $mib
		rel_run dump --info --json "$f"
		rel_expect 0
		assert_eq "$(jq -r '.tracks[] | select(.type == "process") | .argv[1] | length' "$OUT")" $mib ;;
	stats)
		assert_eq "$(jq -r '[.kernels, .ranges, .api][] | .[].name | length' "$OUT" | sort -u)" $mib
		trace-stats --full-names "$f" | grep -q "$(head -c 100 < <(trace-dump -k kernel --json "$f" | jq -r .name | head -1))" ;;
	chrome)
		assert_eq "$(jq '[.traceEvents[] | select(.cat == "kernel") | .name | length] | unique' -c "$OUT")" "[$mib]" ;;
	merge)
		diff <(trace-dump --csv "$OUT" | sort | md5sum) <(trace-dump --csv "$f" | sort | md5sum) ;;
	diff)
		assert_eq "$(jq '[.groups[] | select(.kind == "kernel" or .kind == "range") | .name | length] | unique' -c "$OUT")" "[$mib]" ;;
	esac
}

# Invalid UTF-8 in every string: the JSON outputs stay valid JSON (bad
# bytes become U+FFFD), the traces keep the bytes as they were.
cell_utf8() {
	local key=$1 f=$BATS_FILE_TMPDIR/utf8.tkt
	rel_run "$key" "$f"
	rel_expect 0
	case $key in
	dump)
		rel_run dump --json "$f"
		rel_expect 0
		json_lines_valid "$OUT"
		assert_eq "$(wc -l < "$OUT")" 23
		rel_run dump --info --json "$f"
		rel_expect 0
		json_lines_valid "$OUT"
		# the entry whose key is not UTF-8 is there too
		assert_eq "$(jq '.metadata | length' "$OUT")" 2
		rel_run dump --csv "$f"
		rel_expect 0
		python3 -c '
import csv, sys
rows = list(csv.reader(open(sys.argv[1], encoding="utf-8", errors="surrogateescape", newline="")))
assert len(rows) == 24 and len({len(r) for r in rows}) == 1, rows' "$OUT" ;;
	stats)
		json_lines_valid "$OUT"
		# both values of the key that is not UTF-8
		assert_eq "$(jq -c '[.run.metadata[] | arrays | length]' "$OUT")" "[2]"
		assert_eq "$(jq '.kernels[0].count' "$OUT")" 3 ;;
	chrome)
		json_lines_valid "$OUT"
		assert_eq "$(jq -c '[.otherData[] | arrays | length]' "$OUT")" "[2]"
		assert_eq "$(jq '.otherData.tracekit.events_written' "$OUT")" 23 ;;
	merge)
		cmp <(trace-dump --csv "$OUT" | sort) <(trace-dump --csv "$f" | sort) ;;
	diff)
		json_lines_valid "$OUT"
		assert_eq "$(jq -c '[.before.metadata[] | arrays | length]' "$OUT")" "[2]"
		local v
		for v in --csv --markdown ""; do
			rel_run diff $v "$f"
			rel_expect 0
		done ;;
	esac
}

# Each line of FILE (or the whole of it) is valid JSON in valid UTF-8.
json_lines_valid() {
	python3 -c '
import json, sys
data = open(sys.argv[1], "rb").read().decode("utf-8")  # strict
try:
    json.loads(data)
except ValueError:
    for line in data.splitlines():
        json.loads(line)' "$1"
}

cell_cat() {
	local key=$1 d=$BATS_FILE_TMPDIR n cut at
	rel_run "$key" "$d/cat.tkt"
	rel_expect 0
	n=$(( $(wc -l < "$d/base.csv") + $(wc -l < "$d/other.csv") ))
	assert_eq "$(rel_events "$key")" "$n"
	case $key in
	stats) assert_eq "$(jq .run.scopes "$OUT")" 2 ;;
	chrome) assert_eq "$(jq -c '[.traceEvents[] | select(.ph == "X" and .cat == "process") | .pid]' "$OUT")" "[4242,5151]" ;;
	diff) assert_eq "$(jq .after.processes "$OUT")" 2 ;;
	merge) trace-dump --csv "$OUT" | awk -F, 'NR > 2 && $2 < prev { exit 1 } { prev = $2 }' ;;
	esac
	# the first trace cut short between two chunks, then a whole one
	read -r cut at < "$d/catcut.txt"
	rel_run "$key" "$d/catcut.tkt"
	if [ "$key" = merge ]; then
		# it splits the file at its headers: the second trace is merged too
		rel_expect "$BAD" "$(rel_msg "$key" "$d/catcut.tkt" "$(cut_message end "$at")")"
		assert_eq "$(rel_events "$key")" $((cut + $(wc -l < "$d/other.csv")))
	else
		rel_expect "$BAD" "$(rel_msg "$key" "$d/catcut.tkt" \
			"truncated at byte $at \\(a new trace starts there before the end of the previous one\\)")"
		rel_delivered "$key" "$cut"
	fi
}

# A damaged input among good ones: the others are read all the same.
cell_among_good() {
	local key=$1 d=$BATS_FILE_TMPDIR path off n what at
	read -r path off n what at < <(awk '$4 == "chunk" && $3 > 0 { print; exit }' "$d/cuts.txt")
	if [ "$key" = diff ]; then
		# two operands: the damaged one first, then an intact one, which
		# is read all the same (in a thread of its own) and says nothing
		OUT=$BATS_TEST_TMPDIR/out ERR=$BATS_TEST_TMPDIR/err RC=0
		trace-diff --json "$path" "$d/other.tkt" > "$OUT" 2> "$ERR" || RC=$?
		rel_expect 2 "$(rel_msg diff "$path" "$(cut_message "$what" "$at")")"
		[ ! -s "$OUT" ]
		return
	fi
	rel_run "$key" "$d/base.tkt" "$path" "$d/other.tkt"
	rel_expect "$BAD" "$(rel_msg "$key" "$path" "$(cut_message "$what" "$at")")"
	rel_output_valid "$key"
	assert_eq "$(rel_events "$key")" $(( $(wc -l < "$d/base.csv") + n + $(wc -l < "$d/other.csv") ))
	if [ "$key" = merge ]; then
		# without -k trace-merge stops at the damage, and says so in
		# its output too: it has no end marker
		RC=0
		trace-merge "$d/base.tkt" "$path" "$d/other.tkt" > "$OUT" 2> "$ERR" || RC=$?
		rel_expect "$BAD" "$(rel_msg "$key" "$path" "$(cut_message "$what" "$at")")"
		run -1 --separate-stderr trace-dump "$OUT"
		[[ "$stderr" == *"(the trace has no end marker: its writer did not finish)" ]]
	fi
}

# ---- output cells -------------------------------------------------------------------

# ENOSPC is an error, never a silent short output.
cell_dev_full() {
	require_dev_full
	local key=$1 d=$BATS_FILE_TMPDIR f v
	rel_argv "$key"
	ERR=$BATS_TEST_TMPDIR/err
	for f in base.tkt big.tkt; do
		rel_files "$key" "$d/$f"
		for v in "${VARIANTS[@]}"; do
			RC=0
			${ARGV[0]} $v "${FILES[@]}" > /dev/full 2> "$ERR" || RC=$?
			rel_expect 2 "${ARGV[0]}: (\\(stdout\\): )?write error: No space left on device" ||
				{ echo "with '$v' on $f" >&2; return 1; }
		done
	done
	[ -c /dev/full ]
}

# -o /dev/full, for the commands that have -o.
cell_dev_full_option() {
	require_dev_full
	local key=$1
	rel_run "$key" -o /dev/full "$BATS_FILE_TMPDIR/base.tkt"
	rel_argv "$key"
	rel_expect 2 "${ARGV[0]}: (/dev/full: )?(write error: )?No space left on device"
	[ -c /dev/full ]   # an output that failed is removed only if a regular file
}

cell_closed_stdout() {
	local key=$1 v
	rel_argv "$key"
	ERR=$BATS_TEST_TMPDIR/err
	rel_files "$key" "$BATS_FILE_TMPDIR/base.tkt"
	for v in "${VARIANTS[@]}"; do
		RC=0
		${ARGV[0]} $v "${FILES[@]}" >&- 2> "$ERR" || RC=$?
		rel_expect 2 "${ARGV[0]}: (\\(stdout\\): )?write error: Bad file descriptor" ||
			{ echo "with '$v'" >&2; return 1; }
	done
}

# closed_pipe CMD...: run CMD with its standard output a pipe whose
# reader has gone already, so that its first write fails with EPIPE
# (no race with the reader, unlike `| head`); print its exit status.
closed_pipe() {
	python3 -c '
import os, subprocess, sys
r, w = os.pipe()
os.close(r)
sys.exit(subprocess.call(sys.argv[1:], stdout=w))' "$@"
}

# A reader that goes away ends the command quietly with status 0.
cell_epipe() {
	local key=$1 d=$BATS_FILE_TMPDIR v lines
	rel_argv "$key"
	ERR=$BATS_TEST_TMPDIR/err
	rel_files "$key" "$d/big.tkt"
	for v in "${VARIANTS[@]}"; do
		RC=0
		closed_pipe ${ARGV[0]} $v "${FILES[@]}" 2> "$ERR" || RC=$?
		rel_expect 0 || { echo "with '$v'" >&2; return 1; }
		# and the way people do it
		RC=0
		lines=$(set -o pipefail; ${ARGV[0]} $v "${FILES[@]}" 2> "$ERR" | head -1 | wc -l) || RC=$?
		rel_expect 0 || { echo "with '$v' | head -1" >&2; return 1; }
		assert_eq "$lines" 1
	done
}
