#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make demo: on a fresh Debian or Ubuntu machine, install what is missing
# (as root) or print the one command that would, build, make a trace and
# show what the tools say about it.
set -eu
cd "$(dirname "$0")/.."

packages="build-essential pkg-config libjansson-dev zlib1g-dev libdeflate-dev libcsv-dev bats jq mandoc python3"
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

echo "== a synthetic training run (trace-record is not built yet)"
synth --steps 20 -o "$out/run.tkt"
trace-dump --info "$out/run.tkt"
if command -v trace-stats >/dev/null; then
	echo "== trace-stats $out/run.tkt"
	trace-stats "$out/run.tkt"
fi
if command -v trace-to-chrome >/dev/null; then
	trace-to-chrome -o "$out/run.json" "$out/run.tkt"
	echo "== Chrome trace for chrome://tracing or https://ui.perfetto.dev: $out/run.json"
fi
