#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-merge at its limits: --align none, an input cut before anything
# can be aligned, too few file descriptors for any merge, and merges in
# passes whose temporary files cannot be made or written (the latter
# through tests/apps/faultio.c, as in faults.bats).

load helpers

setup() {
	D=$BATS_TEST_TMPDIR
	A=$(synth_trace a.tkt -n 3000 --seed 7 --chunk-bytes 8192)
	B=$(synth_trace b.tkt -n 200 --seed 8 --pid 5151 --start 1700000100000000000)
}

# N copies of B as inputs, in $INPUTS
copies() {
	INPUTS=()
	for i in $(seq 1 "$1"); do
		cp "$B" "$D/in$i.tkt"
		INPUTS+=("$D/in$i.tkt")
	done
}

@test "--align none: the same bytes as no --align" {
	trace-merge -o "$D/plain.tkt" "$A" "$B"
	trace-merge --align start -o "$D/start.tkt" "$A" "$B"
	run -0 --separate-stderr trace-merge --align none -o "$D/none.tkt" "$A" "$B"
	assert_eq "$stderr" ""
	cmp "$D/plain.tkt" "$D/none.tkt"
	# (and alignment does change something here, so the check can fail)
	run -1 cmp -s "$D/plain.tkt" "$D/start.tkt"
}

@test "--align of an input cut in its first chunk: exit 1, the reader's reason, -k merges the rest" {
	head -c 3000 "$A" > "$D/cut.tkt"
	run -1 --separate-stderr trace-merge --align nvtx:step -o "$D/out.tkt" "$B" "$D/cut.tkt"
	[[ "$stderr" =~ ^trace-merge:\ $D/cut.tkt:\ cannot\ align:\ truncated\ chunk\ at\ byte\ [0-9]+$ ]]
	# -k: one line, the reader's reason, though the merge reads it again
	run -1 --separate-stderr trace-merge -k --align start -o "$D/kept.tkt" "$A" "$D/cut.tkt"
	assert_eq "${#stderr_lines[@]}" 1
	[[ "$stderr" =~ ^trace-merge:\ $D/cut.tkt:\ cannot\ align:\ truncated\ chunk\ at\ byte\ [0-9]+$ ]]
	assert_eq "$(trace-dump --csv "$D/kept.tkt" | wc -l)" "$(trace-dump --csv "$A" | wc -l)"
	run -1 --separate-stderr trace-merge -k --align nvtx:step -o "$D/kept.tkt" "$B" "$D/cut.tkt"
	assert_eq "${#stderr_lines[@]}" 1
	[[ "$stderr" =~ ^trace-merge:\ $D/cut.tkt:\ cannot\ align:\ truncated\ chunk\ at\ byte\ [0-9]+$ ]]
}

@test "-k --align of an input cut after some events: one line, the events before the cut merged" {
	# cut in the middle of its last chunk: it has events, but no range
	# of that name before the cut
	size=$(stat -c %s "$A")
	last=$(trace-dump --info --json "$A" | jq '.chunks')
	[ "$last" -gt 1 ]
	head -c $((size - 200)) "$A" > "$D/cut.tkt"
	run -1 --separate-stderr trace-merge -k --align nvtx:nosuchrange -o "$D/kept.tkt" "$D/cut.tkt"
	assert_eq "${#stderr_lines[@]}" 1
	[[ "$stderr" =~ ^trace-merge:\ $D/cut.tkt:\ cannot\ align:\ truncated\ chunk\ at\ byte\ [0-9]+$ ]]
	# every event trace-dump reads before the cut is in the output
	want=$(trace-dump --csv "$D/cut.tkt" 2>/dev/null | tail -n +2 | wc -l)
	[ "$want" -gt 0 ]
	assert_eq "$(trace-dump --csv "$D/kept.tkt" | tail -n +2 | wc -l)" "$want"
	# the same file under two names: one line each
	ln -s "$D/cut.tkt" "$D/again.tkt"
	run -1 --separate-stderr trace-merge -k --align nvtx:nosuchrange -o "$D/kept.tkt" "$D/cut.tkt" "$D/again.tkt"
	assert_eq "${#stderr_lines[@]}" 2
	[[ "${stderr_lines[1]}" == "trace-merge: $D/again.tkt: cannot align: truncated chunk at byte"* ]]
}

@test "too few file descriptors for any merge: exit 2, one line that says what to do" {
	under_valgrind && skip "valgrind keeps descriptors of its own below the limit: covered by the plain and sanitizer runs"
	copies 40
	run -2 --separate-stderr bash -c 'ulimit -n 12 && trace-merge -o "$0/out.tkt" "$@"' "$D" "${INPUTS[@]}"
	assert_eq "$stderr" "trace-merge: too few file descriptors to merge (raise the limit: ulimit -n)"
}

@test "merging in passes: temporary files that cannot be made or written, exit 2, one line" {
	under_valgrind && skip "valgrind keeps descriptors of its own below the limit: covered by the plain and sanitizer runs"
	copies 40
	run -2 --separate-stderr bash -c 'ulimit -n 20 && trace-merge -T "$0/none" -o "$0/out.tkt" "$@"' "$D" "${INPUTS[@]}"
	assert_eq "$stderr" "trace-merge: cannot create a temporary file in $D/none: No such file or directory"
	shim=$TK_BUILD/tests/apps/libfaultio.so
	[ -f "$shim" ] || skip "the fault injector was not built: $shim"
	under_valgrind && skip "not under valgrind: LD_PRELOAD would load into valgrind"
	mkdir "$D/tmp"
	run -2 --separate-stderr env LD_PRELOAD="$shim" FAULTIO_MATCH="$D/tmp/" FAULTIO_WRITE=enospc:1000 \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		bash -c 'ulimit -n 20 && trace-merge -T "$0/tmp" -o "$0/out.tkt" "$@"' "$D" "${INPUTS[@]}"
	assert_eq "$stderr" "trace-merge: temporary file: No space left on device"
	# without the fault, the same merge in passes works
	run -0 bash -c 'ulimit -n 20 && trace-merge -T "$0/tmp" -o "$0/out.tkt" "$@"' "$D" "${INPUTS[@]}"
	assert_eq "$(trace-dump --csv "$D/out.tkt" | tail -n +2 | wc -l)" $((40 * $(trace-dump --csv "$B" | tail -n +2 | wc -l)))
}

@test "a soft descriptor limit below the hard one is raised: one pass, the same bytes" {
	under_valgrind && skip "valgrind keeps descriptors of its own below the limit: covered by the plain and sanitizer runs"
	copies 40
	trace-merge -o "$D/ref.tkt" "${INPUTS[@]}"
	hard=$(ulimit -Hn)
	[ "$hard" = unlimited ] || [ "$hard" -gt 200 ] || skip "hard limit of descriptors too low: $hard"
	run -0 --separate-stderr bash -c 'ulimit -Sn 30 && trace-merge -T "$0/none" -o "$0/out.tkt" "$@"' "$D" "${INPUTS[@]}"
	# (no temporary file was needed: its directory does not exist)
	assert_eq "$stderr" ""
	cmp "$D/ref.tkt" "$D/out.tkt"
}

@test "--align of a pipe that fails part way: exit 1, one line naming stdin" {
	shim=$TK_BUILD/tests/apps/libfaultio.so
	[ -f "$shim" ] || skip "the fault injector was not built: $shim"
	under_valgrind && skip "not under valgrind: LD_PRELOAD would load into valgrind"
	run -1 --separate-stderr env LD_PRELOAD="$shim" FAULTIO_MATCH=pipe: FAULTIO_READ=eio:3000 \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		bash -c 'cat "$1" | trace-merge --align start -o "$0/out.tkt" - "$2"' "$D" "$A" "$B"
	[[ "$stderr" =~ ^trace-merge:\ \(stdin\):\ read\ error\ at\ byte\ [0-9]+:\ Input/output\ error$ ]]
}
