#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# compare-builds.sh OLD_BUILD NEW_BUILD: runs every command of two builds
# of tracekit over the same inputs and reports each output that differs,
# byte for byte (stdout, stderr with the command name, exit status).  For
# refactors that must change no behaviour: build the old commit in a git
# worktree (`git worktree add /tmp/old REV && make -C /tmp/old tests`),
# then `tests/tools/compare-builds.sh /tmp/old/build build`.
#
# Inputs: every JSON trace in ../shared/testdata (imported by each build,
# and the two .tkt files compared), synthetic traces from the old build's
# synth (with repeated runs, and a slower "after"), and a recording of the
# NVTX sample made once with the old trace-record.  TK_COMPARE_CMDS
# (e.g. "trace-stats trace-diff") limits the run to those commands; the
# imports are always compared.  Exit 0 when every output is the same, 1
# otherwise.
set -u
old=$(cd "${1:?usage: compare-builds.sh OLD_BUILD NEW_BUILD}" && pwd)
new=$(cd "${2:?usage: compare-builds.sh OLD_BUILD NEW_BUILD}" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
shared=${TK_SHARED:-$top/../shared}/testdata
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
compared=0 differ=0

# run_both NAME CMD ARGS...: CMD is a command name (trace-*) run from
# each build's bin/ with the same arguments; {} in an argument is
# replaced by the build's own copy of a file made by that build.
run_both() {
	local name=$1 cmd=$2; shift 2
	case " ${TK_COMPARE_CMDS:-$cmd} " in *" $cmd "*) ;; *) return 0 ;; esac
	local side dir
	for side in old new; do
		dir=${!side}
		local args=() a
		for a in "$@"; do args+=("${a//\{\}/$work/$side}"); done
		(cd "$work" && "$dir/bin/$cmd" "${args[@]}" \
			>"$work/$side.out" 2>"$work/$side.err"; echo "exit $?" >>"$work/$side.err")
		sed -i "s|$work/$side|DIR|g; s|$dir|BUILD|g" "$work/$side.err"
	done
	compared=$((compared + 1))
	if ! cmp -s "$work/old.out" "$work/new.out" || ! cmp -s "$work/old.err" "$work/new.err"; then
		differ=$((differ + 1))
		echo "DIFFERS: $name: $cmd $*"
		diff <(head -c 20000 "$work/old.out") <(head -c 20000 "$work/new.out") | head -5
		diff "$work/old.err" "$work/new.err" | head -5
	fi
}

mkdir -p "$work/old" "$work/new" "$work/in"
traces=()
# Real traces: each build imports them; the .tkt files must be equal.
if [ -d "$shared" ]; then
	while IFS= read -r json; do
		base=$(echo "${json#$shared/}" | tr '/' '_')
		base=${base%.gz}; base=${base%.json}
		TK_COMPARE_CMDS= run_both "import $base" trace-import -v -o "{}/$base.tkt" "$json"
		if ! cmp -s "$work/old/$base.tkt" "$work/new/$base.tkt"; then
			differ=$((differ + 1)); echo "DIFFERS: imported $base.tkt"
		fi
		[ -s "$work/old/$base.tkt" ] && cp "$work/old/$base.tkt" "$work/in/$base.tkt" &&
			traces+=("$work/in/$base.tkt")
	done < <(find "$shared" -name '*.json' -o -name '*.json.gz' -o -name '*_gz.gz' | sort)
else
	echo "compare-builds: no $shared: real traces skipped" >&2
fi
"$old/tests/tools/synth" -n 20000 -o "$work/in/synth.tkt"
"$old/tests/tools/synth" -n 20000 --seed 2 --slow gemm=1.2 -o "$work/in/synth-slow.tkt"
"$old/tests/tools/synth" --steps 5 --runs 3 -o "$work/in/synth-runs.tkt"
traces+=("$work/in/synth.tkt" "$work/in/synth-slow.tkt" "$work/in/synth-runs.tkt")
if [ -x "$old/tests/apps/nvtx_sample" ] &&
	"$old/bin/trace-record" -q -o "$work/in/nvtx.tkt" -- "$old/tests/apps/nvtx_sample" >/dev/null 2>&1; then
	traces+=("$work/in/nvtx.tkt")
fi

for t in "${traces[@]}"; do
	n=$(basename "$t" .tkt)
	for opts in "" "-c" "-j" "--approx" "--top 3 --units ms -s count" "-r findings" \
		"--per step" "--per ProfilerStep#1" "--name gemm|ncclKernel --exclude mul" \
		"--full-names -r kernels,api" "--from 1ms --to 50ms -j"; do
		# shellcheck disable=SC2086
		run_both "$n" trace-stats $opts "$t"
	done
	for opts in "" "-c" "-j" "-i" "-i -j" "-k kernel,range -n 50"; do
		# shellcheck disable=SC2086
		run_both "$n" trace-dump $opts "$t"
	done
	for opts in "" "--no-flows --no-counters" "--from 1ms --to 20ms --name .*"; do
		# shellcheck disable=SC2086
		run_both "$n" trace-to-chrome $opts "$t"
	done
	rm -f "$work"/*/merged.tkt
	run_both "$n" trace-merge -l a -l b -o "{}/merged.tkt" "$t" "$t"
	[ ! -e "$work/old/merged.tkt" ] || cmp -s "$work/old/merged.tkt" "$work/new/merged.tkt" ||
		{ differ=$((differ + 1)); echo "DIFFERS: merge of $n"; }
	run_both "$n" trace-stats --per step "$t" "$t"
done
for pair in "synth synth-slow" "hta_trace_diff_control_control hta_trace_diff_test_test" \
	"hta_trace_compare_base_base hta_trace_compare_test_test" \
	"param_dlrm_kineto_worker0_step_12.1694128201545.pt.trace param_dlrm_kineto_worker1_step_12.1694128201556.pt.trace"; do
	set -- $pair
	[ -f "$work/in/$1.tkt" ] && [ -f "$work/in/$2.tkt" ] || continue
	for opts in "" "-j" "-c" "-m" "--normalize -k kernel" "--fail-if-slower 5% --metric gpu"; do
		# shellcheck disable=SC2086
		run_both "$1 vs $2" trace-diff $opts "$work/in/$1.tkt" "$work/in/$2.tkt"
	done
done
run_both "runs" trace-diff "$work/in/synth-runs.tkt" "$work/in/synth-runs.tkt"
for c in trace-stats trace-diff trace-dump trace-merge trace-import trace-to-chrome trace-record; do
	run_both "help" "$c" --help
	run_both "bad option" "$c" --no-such-option
done

echo "compare-builds: $compared outputs compared, $differ differ"
[ "$differ" = 0 ]
