#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run every benchmark: tests/bench/<name>/run.  Each prints its figures
# next to a reference measured in the same run.  BENCH=name runs one.
set -u
cd "$(dirname "$0")/../.."
O=${O:-build}
export TK_BUILD=$PWD/$O TK_SRC=$PWD
export TK_SHARED=${TK_SHARED:-$PWD/../shared}
export PATH="$TK_BUILD/bin:$TK_BUILD/tests/tools:$PATH"
export LC_ALL=C
export BENCH_TMP=${BENCH_TMP:-$(mktemp -d)}
trap 'rm -rf "$BENCH_TMP"' EXIT
status=0
for b in tests/bench/*/run; do
	name=$(basename "$(dirname "$b")")
	[ -n "${BENCH:-}" ] && [ "$BENCH" != "$name" ] && continue
	echo "== bench/$name"
	"$b" || { echo "bench/$name failed"; status=1; }
	echo
done
exit $status
