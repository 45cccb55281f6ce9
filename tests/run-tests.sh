#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run every test of a build and end with one line
# "N passed, N failed, N skipped" (CI parses it); every skip is listed
# with its reason, and fuzz corpus replays are counted apart.
# Usage: O=build tests/run-tests.sh      (TK_VALGRIND=1: commands under valgrind)
# TK_ONLY="test_roundtrip trace-diff.bats ...": only these unit test
# programs, fuzz replays (fuzz_x-replay) and bats files (make check-tsan).
set -u
cd "$(dirname "$0")/.."
O=${O:-build}
top=$PWD
export TK_BUILD=$top/$O TK_SRC=$top
export TK_SHARED=${TK_SHARED:-$top/../shared}
export PATH="$TK_BUILD/bin:$TK_BUILD/tests/tools:$PATH"
export LC_ALL=C

if [ "${TK_VALGRIND:-0}" = 1 ]; then
	# Every trace-* command runs under valgrind; a leak or an error
	# makes it exit 99, which fails the test that ran it.  "Possibly
	# lost" blocks are not shown: a command that dies on a write error
	# leaves the reader's threads running, whose stacks valgrind calls
	# possibly lost, and those lines broke the one-line message tests.
	vg=$TK_BUILD/valgrind-bin
	rm -rf "$vg" && mkdir -p "$vg"
	for b in "$TK_BUILD"/bin/trace-*; do
		n=$(basename "$b")
		printf '#!/bin/sh\nexec valgrind -q --error-exitcode=99 --leak-check=full --show-possibly-lost=no --errors-for-leak-kinds=definite,indirect --trace-children=no "%s" "$@"\n' "$b" > "$vg/$n"
		chmod +x "$vg/$n"
	done
	export PATH="$vg:$PATH"
	export TK_UNDER_VALGRIND=1
fi

# A hang fails its tests instead of stalling the whole run (and CI's
# time limit with it): each unit test program and each bats file has a
# limit.  (Not bats's own per-test limit: its watchdog is a child of the
# test, which a test's bare `wait` would wait for.)
unit_limit=${TK_UNIT_TIMEOUT:-600}
bats_limit=${TK_BATS_TIMEOUT:-1500}

passed=0 failed=0 skipped=0
replayed=0 replay_failed=0
log= # the log that tally reads: each section's, in turn

# tally [replay]: count the TAP lines of $log, end the section's line
# with what they say (skips are not passes), then list each skip with
# its reason and each failure.  Corpus replays are counted apart from
# tests (their failures also count as failed, for the last line).
tally() {
	local p f s
	p=$(grep -cE '^ok [0-9]+' "$log")
	s=$(grep -cE '^ok [0-9]+.*# (skip|SKIP)' "$log")
	f=$(grep -cE '^not ok [0-9]+' "$log")
	failed=$((failed + f))
	if [ "${1:-}" = replay ]; then
		replayed=$((replayed + p + f))
		replay_failed=$((replay_failed + f))
		echo " $p inputs replayed, $f failed"
	else
		passed=$((passed + p - s))
		skipped=$((skipped + s))
		echo " $((p - s)) passed, $f failed, $s skipped"
		# "ok 3 name # skip why" (bats), "ok 3 - name # SKIP why" (tap.h)
		grep -E '^ok [0-9]+.*# (skip|SKIP)' "$log" |
			sed -E -e 's/^ok [0-9]+ (- )?(.*) # (skip|SKIP) ?(.*)$/    skipped: \2: \4/' \
			       -e 's/: $/: (no reason given)/'
	fi
	if [ "$f" -gt 0 ]; then
		grep -E '^not ok|^#' "$log" | head -40
	fi
}

section() { printf '%-40s' "$1"; }

# only NAME: is NAME among TK_ONLY (or is there no TK_ONLY)?
only() {
	[ -z "${TK_ONLY:-}" ] && return 0
	case " $TK_ONLY " in *" $1 "*) return 0 ;; esac
	return 1
}

# run_limited LIMIT WHAT CMD...: run CMD with its output in $log; if it
# was killed at LIMIT seconds, printed no TAP plan, or exited non-zero
# with no failing test (a sanitizer's report at exit), add a failing line
# that says which.
run_limited() {
	local limit=$1 what=$2 rc
	shift 2
	timeout -k 10 "$limit" "$@" >"$log" 2>&1
	rc=$?
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		echo "not ok 1 - $what still running after $limit s: killed" >>"$log"
	elif ! grep -q '^1\.\.' "$log"; then
		echo "not ok 1 - $what did not finish (rc $rc)" >>"$log"
	elif [ "$rc" != 0 ] && ! grep -q '^not ok' "$log"; then
		# every test passed, yet the program failed: LeakSanitizer's
		# report at exit, or an exit after the plan was printed
		echo "not ok 1 - $what exited with status $rc after its tests" >>"$log"
	fi
}

# The sections: each unit test program, each fuzz corpus replay, each
# bats file.  name|kind|path, kind being unit, replay or bats.
sections=()
if [ "${TK_VALGRIND:-0}" != 1 ]; then
	for t in "$TK_BUILD"/tests/unit/test_*; do
		[ -x "$t" ] && only "$(basename "$t")" || continue
		sections+=("unit/$(basename "$t")|unit|$t")
	done
	for t in "$TK_BUILD"/tests/fuzz/*-replay; do
		[ -x "$t" ] && only "$(basename "$t")" || continue
		sections+=("fuzz corpus/$(basename "$t" -replay)|replay|$t")
	done
fi
for f in tests/cli/*.bats; do
	[ -f "$f" ] && only "$(basename "$f")" || continue
	sections+=("cli/$(basename "$f")|bats|$f")
done

# Sections run TK_JOBS at a time (default: one per CPU), each into a
# log of its own, and are reported in the order above as they finish,
# with the seconds each took.  Every test makes its files under its own
# temporary directory, so they do not see one another; what they share
# is the CPUs, which is why the limits above are generous.
jobs=${TK_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run_section I: run section I with its output in $work/I.log, then
# write its seconds to $work/I.done (the sign that it finished).
run_section() {
	local name kind path start
	IFS='|' read -r name kind path <<<"${sections[$1]}"
	log=$work/$1.log
	start=$(date +%s)
	case $kind in
	unit) run_limited "$unit_limit" "$(basename "$path")" "$path" ;;
	replay) run_limited "$unit_limit" "$(basename "$path" -replay) replay" \
		"$path" tests/fuzz/corpus/"$(basename "$path" -replay)" ;;
	bats) run_limited "$bats_limit" "$path" bats --tap "$path" ;;
	esac </dev/null
	echo $(($(date +%s) - start)) >"$work/$1.tmp" && mv "$work/$1.tmp" "$work/$1.done"
}

# report_finished: tally, in order, every section that has finished
# and follows the last one reported.
reported=0
report_finished() {
	local name kind path
	while [ "$reported" -lt "${#sections[@]}" ] && [ -e "$work/$reported.done" ]; do
		IFS='|' read -r name kind path <<<"${sections[$reported]}"
		section "$name"
		log=$work/$reported.log
		# (not through a pipe: tally adds to this shell's counts)
		if [ "$kind" = replay ]; then tally replay; else tally; fi >"$work/tally"
		sed "1s/\$/ ($(cat "$work/$reported.done") s)/" "$work/tally"
		reported=$((reported + 1))
	done
}

# The longest sections start first (measured: make check's seconds per
# section), so that none of them is left running alone at the end.
slow_first="trace-record-loss.bats trace-to-perfetto.bats trace-export.bats trace-stats-pytorch.bats
	trace-report.bats trace-stats.bats trace-merge.bats"
order=()
for n in $slow_first; do
	for i in "${!sections[@]}"; do
		[ "${sections[$i]%%|*}" = "cli/$n" ] && order+=("$i")
	done
done
for i in "${!sections[@]}"; do
	case " ${order[*]} " in *" $i "*) ;; *) order+=("$i") ;; esac
done

running=0
for i in "${order[@]}"; do
	while [ "$running" -ge "$jobs" ]; do
		wait -n
		running=$((running - 1))
		report_finished
	done
	run_section "$i" &
	running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
	wait -n
	running=$((running - 1))
	report_finished
done
report_finished

[ "$replayed" -gt 0 ] &&
	echo "fuzz corpus: $replayed inputs replayed, $replay_failed failed (not counted as tests, but as failed below)"
[ "$skipped" -gt 0 ] && echo "$skipped skipped: each with its reason above"
# CI parses this line: keep it last, and in this form
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
