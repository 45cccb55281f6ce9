#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make demo: on a fresh Debian or Ubuntu machine, install what is missing
# (as root) or print the one command that would, build, record the bundled
# sample program (a simulated training loop with NVTX ranges, threads and
# a forked child), and show what the tools say about the trace.
set -eu
cd "$(dirname "$0")/.."

packages="build-essential pkg-config libjansson-dev zlib1g-dev libdeflate-dev libcsv-dev libsqlite3-dev libisal-dev bats jq mandoc python3"
missing=""
for p in $packages; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	if [ "$(id -u)" = 0 ]; then
		echo "demo: installing:$missing"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
	else
		echo "demo: these packages are missing; install them with:"
		echo "  sudo apt-get install -y$missing"
		exit 1
	fi
fi

make -s all tests
export PATH="$PWD/build/bin:$PWD/build/tests/tools:$PATH"
out=build/demo
mkdir -p "$out"
trace=$out/sample.tkt

sample=build/tests/apps/nvtx_sample
if [ -x "$sample" ]; then
	echo "== trace-record -s 10ms -- $sample --steps 5 --fork --domain --async"
	trace-record -o "$trace" -s 10ms -- "$sample" --steps 5 --fork --domain --async
else
	echo "== (no NVTX headers under CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}:"
	echo "   the NVTX sample is not built; recording a shell pipeline instead)"
	trace-record -o "$trace" -s 10ms -- sh -c 'seq 200000 | sort -n | tail -1 > /dev/null'
fi

echo "== the first events (trace-dump -n 12)"
trace-dump -n 12 "$trace"
echo "== processes"
trace-dump -k process "$trace"

if command -v trace-stats >/dev/null; then
	echo "== trace-stats $trace"
	trace-stats "$trace"
else
	echo "== trace-dump --info $trace   (trace-stats is not built yet)"
	trace-dump --info "$trace"
fi
if command -v trace-to-chrome >/dev/null; then
	trace-to-chrome -o "$out/sample.json" "$trace"
	echo "== Chrome trace for chrome://tracing or https://ui.perfetto.dev: $out/sample.json"
else
	echo "== (trace-to-chrome is not built yet: no Chrome JSON)"
fi
if command -v trace-to-perfetto >/dev/null; then
	trace-to-perfetto -o "$out/sample.pftrace" "$trace"
	echo "== Perfetto trace for https://ui.perfetto.dev: $out/sample.pftrace"
fi
if command -v trace-report >/dev/null; then
	trace-report -o "$out/sample.html" "$trace"
	echo "== a page of pictures for any browser: $out/sample.html"
fi
