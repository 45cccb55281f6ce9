#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The PyTorch allocator's memory (profile_memory=True; issue 19, item 3):
# Kineto's "Total Allocated" and "Total Reserved" of each device and of
# the host, their peaks in trace-stats -r memory (of the whole trace and
# of each step, with the operation at each) and their counters in Chrome
# JSON, against pytorch_reference.py --memory and --memory-ops on the
# JSON.

load helpers

REF="$BATS_TEST_DIRNAME/pytorch_reference.py"

setup() {
	D=$BATS_TEST_TMPDIR
	command -v jq >/dev/null || skip "no jq"
	shared_data hta/df_index_resolver/df_index_resolver.json.gz FULL
	# under valgrind and the sanitizers: the trace's first 2000 events
	# but its [memory] ones, its steps, and the first 300 [memory] events
	# of the GPU and of the host, cut by Python
	if under_valgrind || under_sanitizers; then
		python3 - "$FULL" "$D/small.json" <<'PY'
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1], "rt"))
ev = d["traceEvents"]
mem = [e for e in ev if e.get("name") == "[memory]"]
keep = [e for e in ev[:2000] if e.get("name") != "[memory]"]
keep += [e for e in ev[2000:] if str(e.get("name")).startswith("ProfilerStep#")]
for t in (0, 1):
    keep += [e for e in mem if e["args"].get("Device Type") == t][:300]
d["traceEvents"] = keep
json.dump(d, open(sys.argv[2], "w"))
PY
		F=$D/small.json
	else
		F=$FULL
	fi
}

# ours JSON: trace-stats --json's allocator peaks as the reference writes them
ours() {
	jq -r '.memory.devices[] | select(.allocator) | "gpu \(.device)" as $w | .allocator |
	         (if .allocated_peak_bytes then "\($w) allocated \(.allocated_peak_bytes) \(.allocated_peak_ns)" else empty end),
	         (if .reserved_peak_bytes then "\($w) reserved \(.reserved_peak_bytes) \(.reserved_peak_ns)" else empty end)' "$1"
	jq -r '.memory.processes[] | select(.allocator) | .allocator |
	         (if .allocated_peak_bytes then "host allocated \(.allocated_peak_bytes) \(.allocated_peak_ns)" else empty end),
	         (if .reserved_peak_bytes then "host reserved \(.reserved_peak_bytes) \(.reserved_peak_ns)" else empty end)' "$1"
}

@test "trace-stats -r memory: peak allocated and reserved per device and for the host, and when" {
	want=$(python3 "$REF" --memory "$F")
	[ "$(grep -c '^gpu ' <<< "$want")" -ge 2 ]
	[ "$(grep -c '^host ' <<< "$want")" -ge 1 ]
	trace-stats -r memory --json "$F" > "$D/ours.json"
	assert_eq "$(ours "$D/ours.json" | sort)" "$want"
	# CSV: a row each
	assert_eq "$(trace-stats -r memory --csv "$F" | awk -F, '$5 ~ /^allocator_/ {
		w = $2 == "device" ? "gpu " $4 : "host"; sub("allocator_", "", $5); print w " " $5 " " $6 }' | sort)" \
		"$(awk '{ NF--; print }' <<< "$want")"
	# the text report has a row for each, naming the counter
	run -0 trace-stats -r memory "$F"
	assert_eq "$(grep -c 'by the PyTorch allocator' <<< "$output")" "$(wc -l <<< "$want")"
	grep -q "^  GPU 1 .* allocated by the PyTorch allocator (Total Allocated), at " <<< "$output"
}

@test "the comparison can fail: a byte off, a microsecond off (jq counts in doubles), a peak missing" {
	want=$(python3 "$REF" --memory "$F")
	trace-stats -r memory --json "$F" > "$D/ours.json"
	for cut in '.memory.devices[0].allocator.allocated_peak_bytes += 1' \
	           '.memory.devices[0].allocator.reserved_peak_ns -= 1000' \
	           'del(.memory.processes[0].allocator)'; do
		jq "$cut" "$D/ours.json" > "$D/bad.json"
		[ "$(ours "$D/bad.json" | sort)" != "$want" ]
	done
}

@test "trace-to-chrome draws the allocator's totals as counters of the GPU and of the host process" {
	want=$(python3 "$REF" --memory "$F")
	trace-to-chrome -o "$D/c.json" "$F"
	got=$(python3 - "$D/c.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
lanes = {e["pid"]: e["args"]["name"] for e in d["traceEvents"]
         if e.get("ph") == "M" and e.get("name") == "process_name"}
peak = {}
for e in d["traceEvents"]:
    if e.get("ph") != "C" or e["name"] not in ("Total Allocated", "Total Reserved"):
        continue
    lane = lanes[e["pid"]]
    where = "gpu " + lane.split(":")[0].split()[1] if lane.startswith("GPU ") else "host"
    what = "allocated" if e["name"] == "Total Allocated" else "reserved"
    peak[(where, what)] = max(peak.get((where, what), 0), e["args"]["bytes"])
print("\n".join(sorted(f"{w} {k} {v}" for (w, k), v in peak.items())))
PY
)
	# the reference without the times: Chrome JSON's are microseconds
	assert_eq "$got" "$(awk '{ NF--; print }' <<< "$want")"
}

@test "per step: each total's peak, when, and the operation at it, against the reference; the comparison can fail" {
	python3 "$REF" --memory-ops "$F" > "$D/ref.json"
	[ "$(jq '.steps | length' "$D/ref.json")" -ge 1 ]
	# the operation is known for the GPU's peaks of the real trace
	[ "$(jq '[.peaks[] | select(.device) | .allocated.op] | map(select(. != null)) | length' \
		"$D/ref.json")" -ge 1 ]
	trace-stats -r memory --steps --json "$F" > "$D/ours.json"
	run -0 python3 "$REF" --compare-memory "$D/ref.json" "$D/ours.json"
	# CSV: a step_memory row per step, device or host and total
	want=$(jq -r '.steps | to_entries[] | .key as $i | .value[] |
		(if .device != null then "device,,\(.device)" else "process,\(.pid)," end) as $w |
		to_entries[] | select(.key == "allocated" or .key == "reserved") |
		"\($i + 1),\($w),allocator_\(.key),\(.value.bytes),\(.value.ns),\(.value.op // "")"' \
		"$D/ref.json" | sort)
	# (once imported: CSV and text of the same trace, quicker)
	trace-import -o "$D/f.tkt" "$F"
	got=$(trace-stats -r memory --steps --csv "$D/f.tkt" | grep '^step_memory,' | cut -d, -f2- | sort)
	assert_eq "$got" "$want"
	# text: a row each (at most 20 steps), the operation last
	run -0 trace-stats -r memory --steps --full-names "$D/f.tkt"
	rows=$(awk '/^  Step  Where/ { on = 1; next } on && /^ +[0-9]+  / { n++ } on && /^$/ { on = 0 }
		END { print n + 0 }' <<< "$output")
	assert_eq "$rows" "$(wc -l <<< "$want")"
	# the comparison fails on an operation, a time (a microsecond: jq
	# counts in doubles) or a peak that is off
	for cut in '.steps.instances[0].memory[0].allocated_peak_op = "aten::other"' \
	           '.steps.instances[-1].memory[0].reserved_peak_ns += 1000' \
	           'del(.steps.instances[0].memory[-1])' \
	           '.memory.devices[0].allocator.allocated_peak_op = null'; do
		jq "$cut" "$D/ours.json" > "$D/bad.json"
		run -1 python3 "$REF" --compare-memory "$D/ref.json" "$D/bad.json"
	done
}
