#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run each libFuzzer target built by `make fuzz` for FUZZ_TIME seconds on
# a copy of its corpus (new inputs stay out of the repository) and print
# what it did.  Exit non-zero if any target finds a crash.
set -u
cd "$(dirname "$0")/../.."
FUZZ_O=${FUZZ_O:-build-fuzz}
FUZZ_TIME=${FUZZ_TIME:-30}
status=0
for bin in "$FUZZ_O"/fuzz_*; do
	[ -x "$bin" ] || continue
	name=$(basename "$bin")
	work=$(mktemp -d)
	cp -r "tests/fuzz/corpus/$name/." "$work/" 2>/dev/null
	log=$(mktemp)
	"$bin" -max_total_time="$FUZZ_TIME" -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$FUZZ_O/$name-" "$work" >"$log" 2>&1
	rc=$?
	execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
	[ -n "$execs" ] || execs=$(grep -oE '#[0-9]+' "$log" | tail -1 | tr -d '#')
	if [ $rc -eq 0 ]; then
		echo "$name: ok, ${execs:-?} executions in ${FUZZ_TIME}s"
	else
		echo "$name: FAILED (exit $rc); last lines:"
		tail -30 "$log"
		status=1
	fi
	rm -rf "$work" "$log"
done
exit $status
