# SPDX-License-Identifier: MIT
# Loaded by the trace-record tests after helpers: `load record`.

APPS=$TK_BUILD/tests/apps

# Each test spools in a TMPDIR of its own and records into $T.
record_setup() {
	export TMPDIR=$BATS_TEST_TMPDIR/tmp
	mkdir -p "$TMPDIR"
	T=$BATS_TEST_TMPDIR/run.tkt
}

setup() {
	record_setup
}

# The spool directory is gone when trace-record is done.
teardown() {
	if [ -d "$TMPDIR" ] && ls "$TMPDIR" | grep -q '^tracekit-'; then
		echo "spool directory left behind: $(ls "$TMPDIR")" >&2
		return 1
	fi
}

need_nvtx() {
	[ -x "$APPS/nvtx_sample" ] ||
		skip "NVTX headers were not found at build time (CUDA_HOME): no NVTX sample"
}

# jq over the events of the trace: ev 'FILTER' [trace]
ev() {
	trace-dump --json "${2:-$T}" | jq -r "$1"
}
