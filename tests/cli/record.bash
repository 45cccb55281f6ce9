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

# The start of the recording in TRACE (its start metadata, an ISO time
# with nanoseconds), in nanoseconds since the epoch: where --delay and
# --duration windows are measured from.
start_ns() {
	trace-dump --info --json "$1" | jq -r .metadata.start | python3 -c '
import datetime, sys
sec, frac = sys.stdin.read().strip()[:-1].split(".")
print(int(datetime.datetime.strptime(sec, "%Y-%m-%dT%H:%M:%S").replace(
    tzinfo=datetime.timezone.utc).timestamp()) * 10**9 + int(frac))'
}
