#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# One name per idea across the commands (issue 19, item 7), the old
# spellings kept as aliases: -S/--buffer-size for memory before
# temporary files or for reordering, -T/--temporary-directory, and
# event kinds and trace-stats reports in the singular or the plural.

load helpers

setup() {
	T=$(synth_trace run.tkt --steps 3 --layers 2)
	D=$BATS_TEST_TMPDIR
}

@test "-S/--buffer-size and --temporary-directory everywhere; --memory, --tmpdir and --buffer still work" {
	trace-to-chrome -o "$D/run.json" "$T"
	mkdir "$D/t1" "$D/t2"
	trace-import --memory 64k --tmpdir "$D/t1" -o "$D/old.tkt" "$D/run.json"
	trace-import --buffer-size 64k --temporary-directory "$D/t2" -o "$D/new.tkt" "$D/run.json"
	trace-import -S 64k -T "$D/t2" -o "$D/short.tkt" "$D/run.json"
	cmp "$D/old.tkt" "$D/new.tkt"
	cmp "$D/old.tkt" "$D/short.tkt"
	run -2 --separate-stderr trace-import --buffer-size 10 -o "$D/x.tkt" "$D/run.json"
	assert_eq "${stderr_lines[0]}" "trace-import: invalid --buffer-size '10' (at least 64k; bytes, or with k, M, G)"
	run -2 --separate-stderr trace-import --temporary-directory "$D/nodir" -S 64k -o "$D/x.tkt" "$D/run.json"
	[[ "${stderr_lines[0]}" == *"$D/nodir"* ]]
	trace-to-chrome --buffer 0 -o "$D/a.json" "$T"
	trace-to-chrome --buffer-size 0 -o "$D/b.json" "$T"
	trace-to-chrome -S 0 -o "$D/c.json" "$T"
	cmp "$D/a.json" "$D/b.json"
	cmp "$D/a.json" "$D/c.json"
	run -2 --separate-stderr trace-to-chrome --buffer-size lots "$T"
	assert_eq "${stderr_lines[0]}" "trace-to-chrome: invalid --buffer-size 'lots' (bytes, or with k, M, G)"
	trace-to-perfetto --buffer 0 -o "$D/a.pftrace" "$T"
	trace-to-perfetto --buffer-size 0 -o "$D/b.pftrace" "$T"
	trace-to-perfetto -S 0 -o "$D/c.pftrace" "$T"
	cmp "$D/a.pftrace" "$D/b.pftrace"
	cmp "$D/a.pftrace" "$D/c.pftrace"
}

@test "kinds and reports in the singular or the plural: trace-dump -k, trace-diff -k, trace-stats -r" {
	assert_eq "$(trace-dump -k kernels,ranges,processes "$T" | md5sum)" \
	          "$(trace-dump -k kernel,range,process "$T" | md5sum)"
	[ "$(trace-dump -k kernels "$T" | wc -l)" -gt 0 ]
	run -2 --separate-stderr trace-dump -k kernelz "$T"
	assert_eq "${stderr_lines[0]}" "trace-dump: unknown kind 'kernelz'"
	assert_eq "$(trace-diff --json -k kernels,memcpys "$T" "$T" | jq -c '[.groups[].kind] | unique')" \
	          "$(trace-diff --json -k kernel,memcpy "$T" "$T" | jq -c '[.groups[].kind] | unique')"
	assert_eq "$(trace-diff --json -k kernels "$T" "$T" | jq -c '[.groups[].kind] | unique')" '["kernel"]'
	assert_eq "$(trace-stats --json -r kernel,memop,process,range "$T" | jq -c 'keys')" \
	          "$(trace-stats --json -r kernels,memops,processes,ranges "$T" | jq -c 'keys')"
	trace-stats --json -r kernel "$T" | jq -e '.kernels | length > 0' > /dev/null
	run -2 --separate-stderr trace-stats -r kernelz "$T"
	assert_eq "${stderr_lines[0]}" "trace-stats: unknown report 'kernelz'"
}
