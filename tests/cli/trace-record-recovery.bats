#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# A process that ends without its last flush (_exit, SIGKILL): what it
# recorded is recovered from its durable buffer (cmd/trace-record/
# recover.c) with every attribute the flusher would have written:
# async ranges started and ended on different threads, domains and
# registered strings, categories, payloads, colours, wide-character
# names and thread names.  The reference is the same program ending
# normally (its own flush), whose events trace-record.bats checks
# against what tests/apps/nvtx_sample.c documents.

load helpers
load record

# Every event but the processes, without times or ids: one sorted line each.
content() {
	trace-dump --json "$1" | jq -c 'select(.kind != "process") |
		[.kind, .name, .domain, .category, .payload, .color, .thread, .args]' | sort
}

@test "_exit before any flush: the same events as a normal exit, async ranges and domains too" {
	need_nvtx
	app=("$APPS/nvtx_sample" --steps 3 --layers 2 --threads 2 --domain --async --wide)
	run -0 trace-record -o "$BATS_TEST_TMPDIR/normal.tkt" -- "${app[@]}"
	content "$BATS_TEST_TMPDIR/normal.tkt" > "$BATS_TEST_TMPDIR/normal"
	# the flush interval is far longer than the run: nothing but the
	# durable buffer holds its events when it ends
	run -4 --separate-stderr trace-record --flush-interval 60s -o "$T" -- "${app[@]}" --quick-exit --exit 4
	assert_eq "$stderr" ""
	content "$T" > "$BATS_TEST_TMPDIR/quick"
	diff "$BATS_TEST_TMPDIR/normal" "$BATS_TEST_TMPDIR/quick"
	# and they are what the sample documents (not an empty match)
	assert_eq "$(grep -c '^\["range"' "$BATS_TEST_TMPDIR/quick")" 25
	assert_eq "$(grep -c '^\["async_range","prefetch"' "$BATS_TEST_TMPDIR/quick")" 1
	assert_eq "$(grep -c '"io","sample",2' "$BATS_TEST_TMPDIR/quick")" 1
	assert_eq "$(ev 'select(.kind=="dropped")')" ""
}
