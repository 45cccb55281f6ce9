#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-stats --hist NAME (issue 25): the bins' counts and the rows of
# the percentiles against Python's own count of the durations that
# trace-dump --json lists; block characters only in a UTF-8 locale.

load helpers

# reference TRACE NAME: "edge_index count [p50] [p95] [p99]" per bin, from
# the events themselves (bins four to a decade: k = floor(4 log10 d))
reference() {
	trace-dump --json "$1" | python3 -c '
import json, math, sys
name = sys.argv[1]
d = sorted(e["dur"] for e in map(json.loads, sys.stdin) if e.get("name") == name
           and e["kind"] in ("kernel", "memcpy", "memset", "api", "range", "async_range"))
def q(p):  # numpy linear interpolation
    r = p * (len(d) - 1); lo = math.floor(r); hi = min(lo + 1, len(d) - 1)
    return d[lo] + (d[hi] - d[lo]) * (r - lo)
def k(v):
    if v <= 1: return 0
    k = math.floor(math.log10(v) * 4)
    while k > 0 and v < 10 ** (k / 4): k -= 1
    while v >= 10 ** ((k + 1) / 4): k += 1
    return k
bins = {}
for v in d: bins[k(v)] = bins.get(k(v), 0) + 1
marks = {}
for p, n in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99")):
    marks.setdefault(k(round(q(p))), []).append(n)
for b in range(min(bins), max(bins) + 1):
    print(" ".join([str(bins.get(b, 0))] + marks.get(b, [])))
' "$2"
}

# ours: the same from trace-stats --hist's rows (ASCII)
ours() {
	LC_ALL=C trace-stats --hist "$2" "$1" | tail -n +2 |
		sed -E 's/^ *[0-9.]+ [a-z]+ \| [# ]+ +([0-9]+)( +<- )?(.*)$/\1 \3/; s/ +$//'
}

@test "--hist: each bin's count and the percentiles' rows equal Python's count of the events" {
	T=$(synth_trace s.tkt --steps 30 --layers 3 --noise 0.4)
	d=$BATS_TEST_TMPDIR
	n=0
	for name in step forward cudaLaunchKernel \
	    "$(trace-stats --json -r kernels "$T" | jq -r '.kernels[0].name')"; do
		reference "$T" "$name" > "$d/ref"
		ours "$T" "$name" > "$d/ours"
		diff "$d/ref" "$d/ours"
		n=$((n + $(wc -l < "$d/ref")))
	done
	[ "$n" -ge 8 ]
	# the comparison can fail: one count off
	sed '1s/^[0-9]*/9999/' "$d/ours" > "$d/bad"
	run -1 cmp -s "$d/ref" "$d/bad"
}

@test "--hist draws blocks in a UTF-8 locale, plain ASCII otherwise" {
	T=$(synth_trace s.tkt --steps 6 --layers 2)
	run -0 env LC_ALL=C trace-stats --hist step "$T"
	# nothing but ASCII
	python3 -c 'import sys; sys.stdin.buffer.read().decode("ascii")' <<< "$output"
	[[ "$output" == *"#"*"<- p50"* ]]
	for loc in "LC_ALL=C.UTF-8" "LANG=en_US.UTF-8" "LC_CTYPE=de_DE.utf8"; do
		run -0 env -u LC_ALL -u LANG -u LC_CTYPE "$loc" trace-stats --hist step "$T"
		[[ "$output" == *"█"* && "$output" == *"◀ p50"* ]] || { echo "$loc: no blocks" >&2; false; }
	done
}

@test "--hist: a name that is not there, --approx, --json" {
	T=$(synth_trace s.tkt --steps 2 --layers 1)
	run trace-stats --hist no-such-name "$T"
	[ "$status" -eq 1 ]
	[ "$output" = "trace-stats: no operation named 'no-such-name'" ]
	run trace-stats --hist step --approx "$T"
	[ "$status" -eq 2 ]
	run trace-stats --hist step --json "$T"
	[ "$status" -eq 2 ]
	run -0 trace-stats --help
	[[ "$output" == *"--hist NAME"* ]]
}
