#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-stats --distributed (issue 19, item 5): per rank and per step,
# compute, communication, memory operations, exposed communication and
# idle time, and the straggler finding.  Figures are checked against
# pytorch_reference.py --distributed, which reads the profiler's JSON
# itself (interval unions in Python).

load helpers

REF="$BATS_TEST_DIRNAME/pytorch_reference.py"

# import SOURCE [NAME]: the imported trace's path on stdout
import() {
	local out="$BATS_TEST_TMPDIR/${2:-$(basename "$1")}.tkt"
	trace-import -o "$out" "$1" || return 1
	printf '%s\n' "$out"
}

# dlrm_ranks: F, the DLRM ranks to use: all 8, or 2 under valgrind and
# the sanitizers.  Called as is, never as <(dlrm_ranks): a skip in a
# subshell would not skip the test, which would then read stdin.
dlrm_ranks() {
	[ -d "$TK_SHARED/testdata/param/dlrm_kineto" ] ||
		skip "real test data not found: $TK_SHARED/testdata/param/dlrm_kineto"
	local n=8
	if under_valgrind || under_sanitizers; then n=2; fi
	mapfile -t F < <(ls "$TK_SHARED"/testdata/param/dlrm_kineto/worker*_step_12.*.pt.trace.json |
		head -n "$n")
}

@test "--distributed: the DLRM ranks imported one by one, every rank and step to the nanosecond" {
	dlrm_ranks
	d=$BATS_TEST_TMPDIR
	t=()
	for f in "${F[@]}"; do t+=("$(import "$f")"); done
	python3 "$REF" --distributed "${F[@]}" > "$d/ref.json"
	trace-stats --json --distributed -r run "${t[@]}" > "$d/ours.json"
	run python3 "$REF" --compare-distributed "$d/ref.json" "$d/ours.json"
	[ "$status" -eq 0 ] || { echo "$output" >&2; false; }
	# the ranks are named by distributedInfo.rank, and there is
	# communication, exposed and hidden, in each
	assert_eq "$(jq -r '[.distributed.ranks[].rank] | join(",")' "$d/ours.json")" \
	          "$(jq -r '[.ranks[].rank] | join(",")' "$d/ref.json")"
	[[ "$(jq -r '.distributed.ranks[0].rank' "$d/ours.json")" == "rank 0" ]]
	jq -e '.ranks | length >= 2 and all(.comm_ns > 0 and .exposed_comm_ns > 0 and
	       .exposed_comm_ns < .comm_ns and .steps == 1)' "$d/ref.json" > /dev/null
}

@test "--distributed: ranks merged with a label each are told apart by their labels" {
	dlrm_ranks
	d=$BATS_TEST_TMPDIR
	t=() l=() L=()
	i=0
	for f in "${F[@]}"; do
		t+=("$(import "$f")")
		l+=(-l "worker$i")
		i=$((i + 1))
	done
	trace-merge "${l[@]}" -o "$d/job.tkt" "${t[@]}"
	python3 "$REF" --distributed "${l[@]}" "${F[@]}" > "$d/ref.json"
	trace-stats --json --distributed -r run "$d/job.tkt" > "$d/ours.json"
	run python3 "$REF" --compare-distributed "$d/ref.json" "$d/ours.json"
	[ "$status" -eq 0 ] || { echo "$output" >&2; false; }
	assert_eq "$(jq '.distributed.ranks | length' "$d/ours.json")" "${#F[@]}"
}

@test "--distributed: ranks imported one by one and merged with no label are named by distributedInfo.rank" {
	dlrm_ranks
	d=$BATS_TEST_TMPDIR
	t=()
	for f in "${F[@]}"; do t+=("$(import "$f")"); done
	# no -l: each rank's processes carry "rank N" from the import, so
	# the merged trace keeps them apart (they all said distributedInfo
	# before, and the last one named every rank)
	trace-merge -o "$d/job.tkt" "${t[@]}"
	python3 "$REF" --distributed "${F[@]}" > "$d/ref.json"
	trace-stats --json --distributed -r run,processes,gpu "$d/job.tkt" > "$d/ours.json"
	run python3 "$REF" --compare-distributed "$d/ref.json" "$d/ours.json"
	[ "$status" -eq 0 ] || { echo "$output" >&2; false; }
	want=$(for f in "${F[@]}"; do
		python3 -c 'import json, sys; print("rank %s" % json.load(open(sys.argv[1]))["distributedInfo"]["rank"])' "$f"
	done | sort)
	assert_eq "$(jq -r '.distributed.ranks[].rank' "$d/ours.json" | sort)" "$want"
	# a process and a GPU per rank, each process labelled with its rank
	assert_eq "$(jq -r '.processes[].label' "$d/ours.json" | sort)" "$want"
	assert_eq "$(jq '.gpus | length' "$d/ours.json")" "${#F[@]}"
}

@test "--distributed: HTA's sampled ranks 0 and 1, and its NCCL trace, to the nanosecond" {
	shared_data hta/trace_filter/sampled_rank-0.json.gz F0
	shared_data hta/trace_filter/sampled_rank-1.json.gz F1
	shared_data hta/nccl_parser_config/nccl_data.json.gz F2
	d=$BATS_TEST_TMPDIR
	python3 "$REF" --distributed "$F0" "$F1" > "$d/ref.json"
	trace-stats --json --distributed -r run "$(import "$F0")" "$(import "$F1")" > "$d/ours.json"
	run python3 "$REF" --compare-distributed "$d/ref.json" "$d/ours.json"
	[ "$status" -eq 0 ] || { echo "$output" >&2; false; }
	under_valgrind && return 0
	python3 "$REF" --distributed "$F2" > "$d/ref.json"
	trace-stats --json --distributed -r run "$(import "$F2")" > "$d/ours.json"
	run python3 "$REF" --compare-distributed "$d/ref.json" "$d/ours.json"
	[ "$status" -eq 0 ] || { echo "$output" >&2; false; }
	# three steps, each with its own figures
	assert_eq "$(jq '.distributed.steps | length' "$d/ours.json")" 3
}

@test "--distributed: communication kernels by the name table, renamed ones too, look-alikes not" {
	shared_data param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json F
	d=$BATS_TEST_TMPDIR
	# each NCCL kernel renamed, in turn, as NCCL 2.19+, a "void "
	# signature, RCCL, MSCCL and NVSHMEM name theirs; then as names that
	# only contain nccl
	python3 - "$F" "$d" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
new = ["ncclDevKernel_%s", "void ncclKernel_%s", "rcclGenericKernel_%s",
       "mscclKernel_%s", "NVSHMEMx_%s"]
fake = ["my_ncclKernel_%s", "allreduce_%s", "x%s"]
for out, names in (("renamed", new), ("lookalike", fake)):
    d = json.loads(json.dumps(doc))
    i = 0
    for e in d["traceEvents"]:
        if e.get("cat") == "kernel" and e["name"].startswith("ncclKernel_"):
            e["name"] = names[i % len(names)] % e["name"][len("ncclKernel_"):]
            i += 1
    assert i >= 8
    json.dump(d, open("%s/%s.json" % (sys.argv[2], out), "w"))
PY
	python3 "$REF" --distributed "$F" > "$d/orig.json"
	for v in renamed lookalike; do
		python3 "$REF" --distributed "$d/$v.json" > "$d/ref.json"
		trace-stats --json --distributed -r run "$(import "$d/$v.json" "$v")" > "$d/ours.json"
		run python3 "$REF" --compare-distributed "$d/ref.json" "$d/ours.json"
		[ "$status" -eq 0 ] || { echo "$v: $output" >&2; false; }
	done
	# renamed: the same communication as under the original names
	trace-stats --json --distributed -r run "$(import "$d/renamed.json" renamed2)" > "$d/ours.json"
	assert_eq "$(jq '.distributed.ranks[0].comm_ns' "$d/ours.json")" \
	          "$(jq '.ranks[0].comm_ns' "$d/orig.json")"
	[ "$(jq '.ranks[0].comm_ns' "$d/orig.json")" -gt 0 ]
	# look-alikes: no communication, all of it computation
	trace-stats --json --distributed -r run "$(import "$d/lookalike.json" lookalike2)" > "$d/ours.json"
	assert_eq "$(jq '.distributed.ranks[0] | [.comm_ns, .exposed_comm_ns]' -c "$d/ours.json")" "[0,0]"
	assert_eq "$(jq '.distributed.ranks[0].compute_ns' "$d/ours.json")" \
	          "$(python3 -c '
import json, sys
from decimal import Decimal
ev = json.load(open(sys.argv[1]))["traceEvents"]
iv = sorted((int(Decimal(e["ts"]) * 1000), int(Decimal(e["ts"] + e["dur"]) * 1000))
            for e in ev if e.get("cat") == "kernel")
t, end = 0, None
for b, e in iv:
    if end is None or b > end:
        t += e - b
        end = e
    elif e > end:
        t += e - end
        end = e
print(t)' "$d/lookalike.json")"
}

@test "--distributed: the straggler finding names the rank that sticks out, and by how much" {
	shared_data hta/trace_filter/sampled_rank-0.json.gz F0
	shared_data hta/trace_filter/sampled_rank-1.json.gz F1
	d=$BATS_TEST_TMPDIR
	t0=$(import "$F0") t1=$(import "$F1")
	python3 "$REF" --distributed "$F0" "$F1" > "$d/ref.json"
	trace-stats --json --distributed "$t0" "$t1" > "$d/ours.json"
	# independent: rank 1 computes more than 1.2 times rank 0
	want=$(jq -r '.ranks | "\(.[1].rank) \(.[1].compute_ns / .[0].compute_ns * 1000 | round)"' "$d/ref.json")
	[[ "$want" == "rank 1 "* ]] && [ "${want#rank 1 }" -ge 1200 ]
	assert_eq "$(jq -r '.findings[] | select(.type == "straggler" and (.message | test("computes"))) |
	                   "\(.name) \(.value * 1000 | round)"' "$d/ours.json")" "$want"
	# the text says it in one line
	run -0 trace-stats --distributed -r findings "$t0" "$t1"
	[[ "$output" == *"straggler     rank 1 computes "*"x the other rank ("* ]]
	# the DLRM ranks: as many straggler findings as the reference's
	# figures give at 1.2 times the median of the others
	dlrm_ranks
	t=()
	for f in "${F[@]}"; do t+=("$(import "$f")"); done
	python3 "$REF" --distributed "${F[@]}" > "$d/ref.json"
	want=$(python3 - "$d/ref.json" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1]))["ranks"]
for what, val in (("computes", lambda x: x["compute_ns"]),
                  ("per step", lambda x: x["step_total_ns"] / x["steps"])):
    v = [val(x) for x in r]
    top = max(range(len(v)), key=lambda i: (v[i], -i))
    med = statistics.median(v[:top] + v[top + 1:])
    if v[top] >= 1.2 * med:
        print(r[top]["rank"], what, round(v[top] / med, 3))
PY
)
	got=$(trace-stats --json --distributed -r findings "${t[@]}" |
	      jq -r '.findings[] | select(.type == "straggler") |
	             "\(.name) \(if (.message | test("computes")) then "computes" else "per step" end) \(.value * 1000 | round / 1000)"')
	assert_eq "$got" "$want"
}

@test "--distributed: CSV and text carry the JSON's figures" {
	shared_data hta/trace_filter/sampled_rank-0.json.gz F0
	shared_data hta/trace_filter/sampled_rank-1.json.gz F1
	d=$BATS_TEST_TMPDIR
	t0=$(import "$F0") t1=$(import "$F1")
	trace-stats --json --distributed -r run "$t0" "$t1" > "$d/s.json"
	trace-stats --csv --distributed -r run "$t0" "$t1" > "$d/s.csv"
	python3 - "$d/s.json" "$d/s.csv" <<'PY'
import csv, io, json, sys
j = json.load(open(sys.argv[1]))["distributed"]
rows = []
for s in open(sys.argv[2]).read().split("\n\n"):
    rows += [r for r in csv.DictReader(io.StringIO(s)) if r["report"] in ("ranks", "rank_steps")]
ranks = [r for r in rows if r["report"] == "ranks"]
steps = [r for r in rows if r["report"] == "rank_steps"]
assert len(ranks) == len(j["ranks"]) == 2 and len(steps) == len(j["steps"]) > 0
for got, want in list(zip(ranks, j["ranks"])) + list(zip(steps, j["steps"])):
    for k, v in want.items():
        if isinstance(v, float):
            assert abs(float(got[k]) - v) < 1e-3, (k, got[k], v)
        else:
            assert got[k] == str(v), (k, got[k], v)
for r in j["ranks"]:
    assert abs(r["busy_pct"] - 100 * r["busy_ns"] / r["dur_ns"]) < 1e-6
    assert r["step_mean_ns"] == r["step_total_ns"] / r["steps"]
PY
	run -0 env COLUMNS=200 trace-stats --distributed --units us -r run "$t0" "$t1"
	line=$(printf '%s\n' "$output" | grep '^  rank 1 ')
	want=$(jq -r '.distributed.ranks[1] | [.dur_ns, .busy_ns, .compute_ns, .comm_ns,
	              .exposed_comm_ns, .memops_ns, .idle_ns] | map(tostring) | join(" ")' "$d/s.json")
	got=$(awk '{ for (i = 3; i <= 10; i++) if (i != 4) printf "%s%d", (i > 3 ? " " : ""), $i * 1000 + 0.5; print "" }' <<< "$line")
	assert_eq "$got" "$want"
	# COLUMNS=80: the tables fit, the least telling columns left out
	run -0 env COLUMNS=80 trace-stats --distributed --no-findings -r run "$t0" "$t1"
	sed -n '/^Ranks/,$p' <<< "$output" > "$d/ranks.txt"
	assert_eq "$(awk 'length($0) > 80' "$d/ranks.txt")" ""
	grep -q '^  Rank  *Window  *Compute  *Comm  *Exposed' "$d/ranks.txt"
	grep -q '^  Step  *Rank  *Duration  *Compute .* Exposed .*Idle$' "$d/ranks.txt"
}

@test "--distributed: the reference comparison can fail" {
	shared_data hta/trace_filter/sampled_rank-0.json.gz F0
	d=$BATS_TEST_TMPDIR
	python3 "$REF" --distributed "$F0" > "$d/ref.json"
	trace-stats --json --distributed -r run "$(import "$F0")" > "$d/ours.json"
	python3 "$REF" --compare-distributed "$d/ref.json" "$d/ours.json"
	for cut in '.distributed.ranks[0].exposed_comm_ns += 1' '.distributed.steps[0].idle_ns -= 1' \
	           '.distributed.ranks[0].rank = "rank 9"' 'del(.distributed)' \
	           '.distributed.steps |= .[1:]' '.distributed.ranks[0].comm_ns += 1'; do
		jq "$cut" "$d/ours.json" > "$d/bad.json"
		run python3 "$REF" --compare-distributed "$d/ref.json" "$d/bad.json"
		[ "$status" -eq 1 ] || { echo "$cut not caught" >&2; false; }
	done
}
