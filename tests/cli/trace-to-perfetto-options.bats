#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-to-perfetto: the option values it refuses (one line, exit 2, as
# its man page says), --name given twice (the last one counts), and
# standard output that cannot be written (a full disk: exit 2 naming
# "(stdout)"; closed: exit 2).  The conversions themselves are checked
# in trace-to-perfetto.bats.

load helpers

setup() {
	T=$(synth_trace t.tkt -n 2000 --seed 3)
}

@test "invalid --from, --to, --name, --buffer and -S: exit 2, the value named" {
	run -2 --separate-stderr trace-to-perfetto --from soon "$T"
	assert_eq "${stderr_lines[0]}" "trace-to-perfetto: invalid --from 'soon' (a duration such as 1.5s or 200ms)"
	run -2 --separate-stderr trace-to-perfetto --to 3parsecs "$T"
	assert_eq "${stderr_lines[0]}" "trace-to-perfetto: invalid --to '3parsecs' (a duration such as 1.5s or 200ms)"
	run -2 --separate-stderr trace-to-perfetto --name '(unclosed' "$T"
	[[ "${stderr_lines[0]}" == "trace-to-perfetto: invalid --name '(unclosed': "?* ]]
	run -2 --separate-stderr trace-to-perfetto --buffer lots "$T"
	assert_eq "${stderr_lines[0]}" "trace-to-perfetto: invalid --buffer 'lots' (bytes, or with k, M, G)"
	run -2 --separate-stderr trace-to-perfetto -S -1 "$T"
	assert_eq "${stderr_lines[0]}" "trace-to-perfetto: invalid --buffer-size '-1' (bytes, or with k, M, G)"
	# each followed by where to look, and nothing written
	assert_eq "${stderr_lines[1]}" "Try 'trace-to-perfetto --help' for more information."
	assert_eq "$output" ""
}

@test "--name twice: the last one counts" {
	trace-to-perfetto --name '^cudaLaunchKernel$' -o "$BATS_TEST_TMPDIR/first.pftrace" "$T"
	trace-to-perfetto --name '^cudaMemcpyAsync$' -o "$BATS_TEST_TMPDIR/last.pftrace" "$T"
	run -0 --separate-stderr trace-to-perfetto --name '^cudaLaunchKernel$' --name '^cudaMemcpyAsync$' \
		-o "$BATS_TEST_TMPDIR/both.pftrace" "$T"
	assert_eq "$stderr" ""
	cmp "$BATS_TEST_TMPDIR/last.pftrace" "$BATS_TEST_TMPDIR/both.pftrace"
	# the two selections differ, so the comparison can fail
	run -1 cmp -s "$BATS_TEST_TMPDIR/first.pftrace" "$BATS_TEST_TMPDIR/both.pftrace"
}

@test "standard output full or closed: exit 2, one line" {
	require_dev_full
	run -2 --separate-stderr bash -c "trace-to-perfetto '$T' > /dev/full"
	assert_eq "$stderr" "trace-to-perfetto: (stdout): write error: No space left on device"
	run -2 --separate-stderr bash -c "trace-to-perfetto '$T' >&-"
	assert_eq "${#stderr_lines[@]}" 1
	assert_eq "$stderr" "trace-to-perfetto: (stdout): write error: Bad file descriptor"
	# --split in a directory that is not there: the first file's name
	run -2 --separate-stderr trace-to-perfetto --split 64k -o "$BATS_TEST_TMPDIR/no/x.pftrace" "$T"
	assert_eq "$stderr" "trace-to-perfetto: $BATS_TEST_TMPDIR/no/x-001.pftrace: No such file or directory"
}
