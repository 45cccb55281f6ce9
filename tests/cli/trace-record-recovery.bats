#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# A process that ends without its last flush (_exit, SIGKILL): what it
# recorded is recovered from its durable buffer (cmd/trace-record/
# recover.c) with every attribute the flusher would have written:
# async ranges started and ended on different threads, domains and
# registered strings, categories, payloads, colours, wide-character
# names and thread names.  The reference is the same program ending
# normally (its own flush), whose events trace-record.bats checks
# against what tests/apps/nvtx_sample.c documents.

load helpers
load record

# Every event but the processes, without times or ids: one sorted line each.
content() {
	trace-dump --json "$1" | jq -c 'select(.kind != "process") |
		[.kind, .name, .domain, .category, .payload, .color, .thread, .args]' | sort
}

@test "_exit before any flush: the same events as a normal exit, async ranges and domains too" {
	need_nvtx
	app=("$APPS/nvtx_sample" --steps 3 --layers 2 --threads 2 --domain --async --wide)
	run -0 trace-record -o "$BATS_TEST_TMPDIR/normal.tkt" -- "${app[@]}"
	content "$BATS_TEST_TMPDIR/normal.tkt" > "$BATS_TEST_TMPDIR/normal"
	# the flush interval is far longer than the run: nothing but the
	# durable buffer holds its events when it ends
	run -4 --separate-stderr trace-record --flush-interval 60s -o "$T" -- "${app[@]}" --quick-exit --exit 4
	assert_eq "$stderr" ""
	content "$T" > "$BATS_TEST_TMPDIR/quick"
	diff "$BATS_TEST_TMPDIR/normal" "$BATS_TEST_TMPDIR/quick"
	# and they are what the sample documents (not an empty match)
	assert_eq "$(grep -c '^\["range"' "$BATS_TEST_TMPDIR/quick")" 25
	assert_eq "$(grep -c '^\["async_range","prefetch"' "$BATS_TEST_TMPDIR/quick")" 1
	assert_eq "$(grep -c '"io","sample",2' "$BATS_TEST_TMPDIR/quick")" 1
	assert_eq "$(ev 'select(.kind=="dropped")')" ""
}

# The flusher writes a chunk into the spool, then commits the durable
# snapshot that agrees with it.  A process that dies between the two
# (FAULTIO_WRITE=exit:N ends it right after its Nth write to the spool
# directory: 1-2 are the spool's first chunk, 3 on are the flusher's)
# leaves a chunk whose records recovery converts again: trace-record
# must not read that chunk, or every event in it comes twice.  How many
# chunks the flusher writes depends on how the threads' exits fall into
# its rounds: the 3rd write always comes, a later one may not.
@test "dies between a chunk and its commit: no event twice, none lost, threads named" {
	need_nvtx
	shim=$TK_BUILD/tests/apps/libfaultio.so
	app=("$APPS/nvtx_sample" --steps 3 --layers 2 --threads 2 --domain --async --wide)
	for n in 3 4 5; do
		FAULTIO_MATCH=tracekit- FAULTIO_WRITE=exit:$n \
			run --separate-stderr trace-record --flush-interval 60s -o "$T" -- \
			sh -c 'LD_PRELOAD="$LD_PRELOAD:$0" exec "$@"' "$shim" "${app[@]}"
		[ "$status" -eq 97 ] || { [ "$n" -gt 3 ] && [ "$status" -eq 0 ]; } ||
			{ echo "exit:$n: status $status"; false; }
		assert_eq "$stderr" ""
		trace-dump --json "$T" > "$BATS_TEST_TMPDIR/events"
		# what it had recorded when it died: more than the process
		n_events=$(jq -s 'map(select(.kind != "process")) | length' "$BATS_TEST_TMPDIR/events")
		[ "$n_events" -gt 0 ] || { echo "exit:$n: nothing recovered"; false; }
		# no event twice: the same kind, name, thread and start
		twice=$(jq -c '[.kind, .name, .tid, .ts]' "$BATS_TEST_TMPDIR/events" | sort | uniq -d)
		[ -z "$twice" ] || { echo "exit:$n: events twice: $twice"; false; }
		# nothing counted as lost: the records were all in its buffers
		assert_eq "$(jq -c 'select(.kind == "dropped")' "$BATS_TEST_TMPDIR/events")" ""
		# every event on a named thread (the process's own name or loader-N)
		assert_eq "$(jq -c 'select(.kind != "process" and (.thread // "") == "")' "$BATS_TEST_TMPDIR/events")" ""
	done
}

# Recovery needs the durable buffer; without it (removed under the
# process) what the process recorded and never flushed is counted as
# lost, with the reason, from its status page's count.  nvtx_sample
# --steps 2 --layers 1 --threads 0 records 6 events a step (step,
# forward, layer.0, backward, loss, optimizer): 12.
@test "SIGKILL with the durable buffer gone: each unflushed event counted as dropped, with the reason" {
	need_nvtx
	trace-record -o "$T" --flush-interval 60s -- "$APPS/nvtx_sample" --steps 2 --layers 1 --threads 0 --wait-kill "$BATS_TEST_TMPDIR/ready" &
	rec=$!
	for _ in $(seq 200); do [ -e "$BATS_TEST_TMPDIR/ready" ] && break; sleep 0.05; done
	[ -e "$BATS_TEST_TMPDIR/ready" ]
	bufs=("$TMPDIR"/tracekit-*/*.buf)
	assert_eq "${#bufs[@]}" 1
	rm "${bufs[@]}"
	kill -KILL "$(cat "$BATS_TEST_TMPDIR/ready")"
	st=0
	wait "$rec" || st=$?
	assert_eq "$st" 137
	kept=$(ev 'select(.kind=="range" or .kind=="mark") | .name' | wc -l)
	lost=$(ev 'select(.kind=="dropped") | .count' | paste -sd+ | bc)
	assert_eq "$((kept + ${lost:-0}))" 12
	[ "${lost:-0}" -gt 0 ]
	assert_eq "$(ev 'select(.kind=="dropped") | .reason' | sort -u)" \
		"the process was killed by signal 9 (Killed) before its last flush"
}

# An async range open across many flushes is held in the durable
# snapshot, not in the buffers: after _exit, recovery takes it from
# there (once, unfinished), and every range of the flood around it is
# in the trace exactly once (kept, or counted as dropped).
@test "_exit after many flushes with an async range open: from the snapshot, once, unfinished" {
	need_nvtx
	run -2 --separate-stderr trace-record -o "$T" --flush-interval 5ms -- "$APPS/nvtx_sample" \
		--async --steps 0 --threads 1 --flood 200000 --quick-exit --exit 2
	assert_eq "$stderr" ""
	assert_eq "$(ev 'select(.name=="prefetch") | "\(.kind) \(.args.unfinished)"')" "async_range true"
	kept=$(ev 'select(.name=="flood") | .name' | wc -l)
	lost=$(ev 'select(.kind=="dropped") | .count' | paste -sd+ | bc)
	assert_eq "$((kept + ${lost:-0}))" 200000
	# no range twice: the payloads (0..N-1) are distinct
	assert_eq "$(ev 'select(.name=="flood") | .payload' | sort -u | wc -l)" "$kept"
}

# A spool that stops being writable part way (a full disk; faultio's
# ENOSPC after 1500 bytes of the spool directory's files): the library
# keeps recording into its durable buffers and trace-record recovers
# them at the end.  Nothing is lost, and nothing is said to be.
@test "the spool cannot be written part way: recording goes on in the buffers, nothing lost" {
	need_nvtx
	# valgrind would load the shim into itself, not into trace-record
	under_valgrind && skip "not under valgrind: LD_PRELOAD would load into valgrind"
	app=("$APPS/nvtx_sample" --steps 20 --layers 2 --threads 0 --sleep 10)
	run -0 trace-record -o "$BATS_TEST_TMPDIR/normal.tkt" -- "${app[@]}"
	content "$BATS_TEST_TMPDIR/normal.tkt" > "$BATS_TEST_TMPDIR/normal"
	# (a sanitized trace-record is told not to mind the shim coming first)
	FAULTIO_MATCH=$TMPDIR/tracekit- FAULTIO_WRITE=enospc:1500 \
		LD_PRELOAD=$TK_BUILD/tests/apps/libfaultio.so \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		run -0 --separate-stderr trace-record --flush-interval 20ms -o "$T" -- "${app[@]}"
	assert_eq "$stderr" ""
	content "$T" > "$BATS_TEST_TMPDIR/full"
	diff "$BATS_TEST_TMPDIR/normal" "$BATS_TEST_TMPDIR/full"
	assert_eq "$(grep -c '^\["range","step"' "$BATS_TEST_TMPDIR/full")" 20
}

# A full file system under TMPDIR (a 3 MB tmpfs; needs mount, so root):
# the spool's files are sparse, and a page first touched there used to
# be a SIGBUS -- in the recorded program writing its buffers, and in
# trace-record reading its status page.  Now: both end normally, the
# trace reads, and what did not fit is counted with its reason.
@test "a full file system under TMPDIR: no SIGBUS, the loss counted with its reason" {
	need_nvtx
	small=$BATS_TEST_TMPDIR/small
	mkdir -p "$small"
	mount -t tmpfs -o size=3m tmpfs "$small" 2>/dev/null ||
		skip "cannot mount a small tmpfs here (needs root and mount rights)"
	TMPDIR=$small run --separate-stderr trace-record -o "$T" -- \
		"$APPS/nvtx_sample" --steps 20000 --layers 8 --threads 2 --work 0
	umount "$small"
	assert_eq "$status" 0
	run -0 trace-dump --json "$T"
	echo "$output" > "$BATS_TEST_TMPDIR/events"
	# some of it kept, the rest counted, each thread's to the event: the
	# sample makes 20000 loads on each loader and 13 events a step on
	# its main thread (ranges and a mark), whatever the timing
	[ "$(jq -s 'map(select(.kind == "range")) | length' "$BATS_TEST_TMPDIR/events")" -gt 0 ]
	lost=$(jq -s 'map(select(.kind == "dropped") | .count) | add // 0' "$BATS_TEST_TMPDIR/events")
	[ "$lost" -gt 0 ]
	jq -s -r 'map(select(.thread)) | group_by(.thread)[] |
		"\(.[0].thread) \(map(if .kind == "dropped" then .count else 1 end) | add)"' \
		"$BATS_TEST_TMPDIR/events" | sort > "$BATS_TEST_TMPDIR/per_thread"
	printf 'loader-0 20000\nloader-1 20000\nnvtx_sample 260000\n' |
		diff - "$BATS_TEST_TMPDIR/per_thread"
	assert_eq "$(jq -r 'select(.kind == "dropped") | .reason' "$BATS_TEST_TMPDIR/events" |
		grep -vc 'could not write its spool in .* (No space left on device)')" 0
}

@test "a spool damaged after its first chunk: that chunk's events kept, the damage said once, by the spool's pid" {
	# a spool of two chunks (tests/tools/mktrace): the first five ranges,
	# flushed, then three more; the command writes the file header and
	# the first chunk into the spool directory under its own pid, then
	# in place of the second chunk one of three kinds of damage
	python3 -c '
import json
print(json.dumps({"def": "process", "ref": "p", "pid": 4100, "host": "h", "argv": ["w"], "start": 1000}))
print(json.dumps({"def": "thread", "ref": "t", "process": "p", "tid": 4101, "name": "main"}))
for i in range(5):
    print(json.dumps({"kind": "range", "track": "t", "ts": 2000 + 100 * i, "dur": 50, "name": "kept-%d" % i}))
print(json.dumps({"flush": True}))
for i in range(3):
    print(json.dumps({"kind": "range", "track": "t", "ts": 9000 + 100 * i, "dur": 50, "name": "lost-%d" % i}))
' | "$TK_BUILD/tests/tools/mktrace" > "$BATS_TEST_TMPDIR/two.tkt"
	cat > "$BATS_TEST_TMPDIR/damage.py" <<'PY'
import os, struct, sys
# tracekit-format(5): the file header's size at byte 12; a chunk's
# header size at 4, its payload's stored size at 12
case, good = sys.argv[1], open(sys.argv[2], "rb").read()
hs = struct.unpack_from("<I", good, 12)[0]
first = good[:hs + struct.unpack_from("<I", good, hs + 4)[0] + struct.unpack_from("<I", good, hs + 12)[0]]
damage = {"chunk-header": b"\x89TKC" + struct.pack("<I", 20) + bytes(48),
          "not-a-chunk": b"not a chunk at all, just some text",
          "new-scope": good[:12] + struct.pack("<I", 5000) + bytes(48)}[case]
# as the injection library does: written under a dot name, then renamed
# (a spool is never seen empty)
spool = os.environ["TRACEKIT_SPOOL"]
open("%s/.%d-1.tkt" % (spool, os.getpid()), "wb").write(first + damage)
os.rename("%s/.%d-1.tkt" % (spool, os.getpid()), "%s/%d-1.tkt" % (spool, os.getpid()))
print(os.getpid(), len(first))
PY
	for case in chunk-header not-a-chunk new-scope; do
		run -0 --separate-stderr trace-record -o "$T" -- python3 "$BATS_TEST_TMPDIR/damage.py" $case "$BATS_TEST_TMPDIR/two.tkt"
		read -r pid at <<< "$output"
		case $case in
		chunk-header) why="corrupt chunk at byte $at (bad header size)" ;;
		not-a-chunk) why="bad chunk magic at byte $at" ;;
		new-scope) why="truncated at byte $at (a new trace starts there before the end of the previous one)" ;;
		esac
		assert_eq "$stderr" "trace-record: spool of pid $pid: $why"
		assert_eq "$case $(ev 'select(.kind == "range") | .name' | paste -sd,)" \
			"$case kept-0,kept-1,kept-2,kept-3,kept-4"
		assert_eq "$(ev 'select(.kind == "range") | "\(.pid)/\(.tid)"' | sort -u)" "4100/4101"
	done
}

@test "a durable buffer the program scribbled on: nothing recovered twice, what is left out counted as dropped" {
	need_nvtx
	app=("$APPS/nvtx_sample" --steps 3 --layers 2 --threads 2 --domain --async)
	run -0 trace-record -o "$BATS_TEST_TMPDIR/normal.tkt" -- "${app[@]}"
	trace-dump --json "$BATS_TEST_TMPDIR/normal.tkt" > "$BATS_TEST_TMPDIR/normal.json"
	# tki_buf_head (lib/inject/protocol.h): magic at byte 0, nunits 8,
	# thread_off 24, names_off 32, snap_off[2] 56 and 64, blocks_off 120;
	# an offset of 2^40 is far past the end of the file
	far=1099511627776
	for damage in "0=0" "8=1" "24=$far" "32=$far" "56=$far 64=$far" "120=$far"; do
		args=()
		for d in $damage; do args+=(--scribble "$d"); done
		run --separate-stderr trace-record --flush-interval 60s -o "$T" -- \
			"${app[@]}" --quick-exit --exit 3 "${args[@]}"
		# its exit status; or, when its flusher wrote through the
		# offsets it scribbled before it could _exit, its SIGSEGV
		# (128 + 11): what trace-record keeps must hold either way
		if [ "$status" = 3 ]; then
			assert_eq "$output" "scribbled: 1"
		else
			assert_eq "$damage $status" "$damage 139"
		fi
		trace-dump --json "$T" | python3 -c '
import collections, json, sys
def events(f):
    return [json.loads(l) for l in f if json.loads(l)["kind"] in ("range", "async_range", "mark", "dropped")]
normal = events(open(sys.argv[1]))
got = events(sys.stdin)
keys = collections.Counter((e["kind"], e["name"], e.get("tid"), e["ts"]) for e in got if e["kind"] != "dropped")
twice = [k for k, n in keys.items() if n > 1]
kept = sum(keys.values())
dropped = sum(e["count"] for e in got if e["kind"] == "dropped")
print("%s: %d twice, %d kept + %d dropped of %d" % (sys.argv[2], len(twice), kept, dropped, len(normal)),
      "(ok)" if not twice and kept + dropped == len(normal) else "(wrong)")' "$BATS_TEST_TMPDIR/normal.json" "$damage" > "$BATS_TEST_TMPDIR/sum"
		[[ "$(cat "$BATS_TEST_TMPDIR/sum")" == *"(ok)" ]] || { cat "$BATS_TEST_TMPDIR/sum"; false; }
	done
}
