#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-import of Nsight Systems SQLite exports (nsys export --type
# sqlite).  Every figure is checked against SQL run by the sqlite3 CLI on
# the same database, never against tracekit's own output: two real
# exports from public test data (tests/data/nsys/README.md), a database
# built here from the documented schema (column names of nsys 2024-2026,
# schema 3.x), and damaged copies of them.

load helpers

setup() {
	D=$BATS_TEST_TMPDIR
	command -v sqlite3 >/dev/null || skip "no sqlite3 CLI (Debian package sqlite3)"
	command -v jq >/dev/null || skip "no jq"
	DATA=$TK_SRC/tests/data/nsys
}

# unpack NAME: the real export NAME from tests/data/nsys into $D
unpack() {
	gzip -dc "$DATA/$1.sqlite.gz" > "$D/$1.sqlite"
}

# q DB SQL: one value; 0 when the table is not in this export
q() {
	local t
	t=$(grep -o 'FROM [A-Z_a-z]*' <<< "$2" | head -1 | cut -d' ' -f2)
	if [ -n "$t" ] && [ -z "$(sqlite3 "$1" "SELECT name FROM sqlite_master WHERE name = '$t'")" ]; then
		echo 0
		return
	fi
	sqlite3 "$1" "$2"
}

# dumpq TKT KIND JQ: jq over the events of one kind, slurped
dumpq() {
	trace-dump --json -k "$2" "$1" | jq -s "$3"
}

# check_export DB: the import of DB against SQL on DB
check_export() {
	local db=$1 t=$D/check.tkt
	run --separate-stderr trace-import -o "$t" "$db"
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	local K=CUPTI_ACTIVITY_KIND_
	# kernels: count, time, names, launch configuration, correlation
	assert_eq "$(dumpq "$t" kernel 'length')" "$(q "$db" "SELECT count(*) FROM ${K}KERNEL")"
	assert_eq "$(dumpq "$t" kernel 'map(.dur) | add // 0')" \
		"$(q "$db" "SELECT coalesce(sum(\"end\" - start), 0) FROM ${K}KERNEL")"
	assert_eq "$(trace-dump --json -k kernel "$t" | jq -r .name | sort)" \
		"$(sqlite3 "$db" "SELECT s.value FROM ${K}KERNEL AS k JOIN StringIds AS s ON s.id = k.demangledName" | sort)"
	assert_eq "$(dumpq "$t" kernel 'map((.grid | .[0] * .[1] * .[2]) * (.block | .[0] * .[1] * .[2]) + .registers) | add // 0')" \
		"$(q "$db" "SELECT coalesce(sum(gridX * gridY * gridZ * blockX * blockY * blockZ + registersPerThread), 0) FROM ${K}KERNEL")"
	assert_eq "$(dumpq "$t" kernel 'map(.correlation) | add // 0')" \
		"$(q "$db" "SELECT coalesce(sum(correlationId), 0) FROM ${K}KERNEL")"
	assert_eq "$(dumpq "$t" kernel '[.[] | "\(.device)/\(.stream)"] | unique | length')" \
		"$(q "$db" "SELECT count(DISTINCT deviceId || '/' || streamId) FROM ${K}KERNEL")"
	# copies: count, bytes, time, direction
	assert_eq "$(dumpq "$t" memcpy 'length')" "$(q "$db" "SELECT count(*) FROM ${K}MEMCPY")"
	assert_eq "$(dumpq "$t" memcpy 'map(.bytes) | add // 0')" \
		"$(q "$db" "SELECT coalesce(sum(bytes), 0) FROM ${K}MEMCPY")"
	assert_eq "$(dumpq "$t" memcpy 'map(.dur) | add // 0')" \
		"$(q "$db" "SELECT coalesce(sum(\"end\" - start), 0) FROM ${K}MEMCPY")"
	assert_eq "$(dumpq "$t" memcpy 'map(select(.name | startswith("Memcpy HtoD"))) | length')" \
		"$(q "$db" "SELECT count(*) FROM ${K}MEMCPY WHERE copyKind = 1")"
	assert_eq "$(dumpq "$t" memset 'map(.bytes) | add // 0')" \
		"$(q "$db" "SELECT coalesce(sum(bytes), 0) FROM ${K}MEMSET")"
	# allocations: count, bytes allocated
	assert_eq "$(dumpq "$t" memory 'length')" "$(q "$db" "SELECT count(*) FROM CUDA_GPU_MEMORY_USAGE_EVENTS")"
	assert_eq "$(dumpq "$t" memory 'map(select(.name | startswith("Alloc")) | .bytes) | add // 0')" \
		"$(q "$db" "SELECT coalesce(sum(bytes), 0) FROM CUDA_GPU_MEMORY_USAGE_EVENTS WHERE memoryOperationType = 0")"
	# API calls (eventClass 67 rows are backtraces of calls, not calls)
	assert_eq "$(dumpq "$t" api 'length')" "$(q "$db" "SELECT count(*) FROM ${K}RUNTIME WHERE eventClass <> 67")"
	assert_eq "$(dumpq "$t" api 'map(.dur) | add // 0')" \
		"$(q "$db" "SELECT coalesce(sum(\"end\" - start), 0) FROM ${K}RUNTIME WHERE eventClass <> 67")"
	assert_eq "$(dumpq "$t" api 'map(select(.api == "driver")) | length')" \
		"$(q "$db" "SELECT count(*) FROM ${K}RUNTIME WHERE eventClass = 1")"
	assert_eq "$(dumpq "$t" api 'map(.correlation) | add // 0')" \
		"$(q "$db" "SELECT coalesce(sum(correlationId), 0) FROM ${K}RUNTIME WHERE eventClass <> 67")"
	# the tables merged in time order
	assert_eq "$(trace-dump --json "$t" | jq -s 'map(.ts) | . == sort')" true
	# NVTX push/pop ranges, start/end ranges and marks
	assert_eq "$(dumpq "$t" range,async_range,mark 'length')" \
		"$(q "$db" "SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60)")"
	assert_eq "$(dumpq "$t" range 'map(.dur) | add // 0')" \
		"$(q "$db" "SELECT coalesce(sum(\"end\" - start), 0) FROM NVTX_EVENTS WHERE eventType = 59")"
}

@test "nsys 2022 export (schema 2.9.1): every kind of event against SQL on the database" {
	unpack profile1
	check_export "$D/profile1.sqlite"
	# the domain nvtxDomainCreate named, on every range
	local dom
	dom=$(sqlite3 "$D/profile1.sqlite" "SELECT text FROM NVTX_EVENTS WHERE eventType = 75")
	assert_eq "$(dumpq "$D/check.tkt" range '[.[].domain] | unique | join(",")')" "\"$dom\""
	# thread and process ids from the serialized globalTid
	assert_eq "$(dumpq "$D/check.tkt" api '[.[] | "\(.pid)/\(.tid)"] | unique | join(",")')" \
		"\"$(sqlite3 "$D/profile1.sqlite" "SELECT DISTINCT ((globalTid >> 24) & 16777215) || '/' || (globalTid & 16777215) FROM CUPTI_ACTIVITY_KIND_RUNTIME" | paste -sd,)\""
}

@test "older nsys export (TARGET_INFO_CUDA_GPU, no metadata table): against SQL" {
	unpack ex-gpu.s10
	check_export "$D/ex-gpu.s10.sqlite"
	# the device as TARGET_INFO_CUDA_GPU describes it
	local row
	row=$(sqlite3 -separator ' ' "$D/ex-gpu.s10.sqlite" "SELECT name, numMultiprocessors, globalMemorySize FROM TARGET_INFO_CUDA_GPU LIMIT 1")
	set -- $row
	trace-dump -i "$D/check.tkt" | grep -F "$1, $2 SMs, $3 bytes"
}

@test "the import works with every command, and -v counts the tables it skipped" {
	unpack profile1
	run --separate-stderr trace-import -v -o "$D/p.tkt" "$D/profile1.sqlite"
	[ "$status" -eq 0 ]
	local db=$D/profile1.sqlite all known
	all=$(sqlite3 "$db" "SELECT count(*) FROM sqlite_master WHERE type = 'table'")
	# tables it reads: 6 of events, 9 of definitions or metadata in this export
	known=$(sqlite3 "$db" "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN
		('CUPTI_ACTIVITY_KIND_KERNEL', 'CUPTI_ACTIVITY_KIND_MEMCPY', 'CUPTI_ACTIVITY_KIND_MEMSET',
		 'CUPTI_ACTIVITY_KIND_RUNTIME', 'NVTX_EVENTS', 'CUDA_GPU_MEMORY_USAGE_EVENTS', 'StringIds',
		 'ThreadNames', 'PROCESSES', 'TARGET_INFO_GPU', 'TARGET_INFO_SYSTEM_ENV',
		 'TARGET_INFO_SESSION_START_TIME', 'EXPORT_META_DATA', 'TARGET_INFO_CUDA_NULL_STREAM')")
	[[ "$stderr" == *"tables not read: $((all - known)) ("* ]]
	[[ "$stderr" == *"CUPTI_ACTIVITY_KIND_KERNEL: 12 -> 12"* ]]
	# trace-stats: the kernel count and the GPU's name
	run trace-stats "$D/p.tkt"
	[ "$status" -eq 0 ]
	[[ "$output" == *"GPU kernels: $(sqlite3 "$db" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") in"* ]]
	[[ "$output" == *"$(sqlite3 "$db" "SELECT name FROM TARGET_INFO_GPU WHERE id = 0")"* ]]
	[[ "$output" == *"nsys.EXPORT_PRODUCT_VERSION=$(sqlite3 "$db" "SELECT value FROM EXPORT_META_DATA WHERE name = 'EXPORT_PRODUCT_VERSION'")"* ]]
	# trace-to-chrome: valid JSON, every kernel in it
	trace-to-chrome "$D/p.tkt" > "$D/p.json"
	assert_eq "$(jq '[.traceEvents[] | select(.cat == "kernel")] | length' "$D/p.json")" \
		"$(sqlite3 "$db" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")"
	# and back: the chrome JSON imports again with the same kernels
	trace-import -o "$D/back.tkt" "$D/p.json"
	assert_eq "$(dumpq "$D/back.tkt" kernel 'length')" 12
}

@test "told by content: a .sqlite named .json, standard input; other databases refused" {
	unpack profile1
	cp "$D/profile1.sqlite" "$D/renamed.json"
	want=$(trace-import "$D/profile1.sqlite" | trace-dump)
	assert_eq "$(trace-import "$D/renamed.json" | trace-dump)" "$want"
	assert_eq "$(trace-import - < "$D/profile1.sqlite" | trace-dump)" "$want"
	assert_eq "$(cat "$D/profile1.sqlite" | trace-import | trace-dump)" "$want"
	# standard input is copied to a temporary file, removed at the end
	mkdir "$D/tmp"
	assert_eq "$(cat "$D/profile1.sqlite" | TMPDIR=$D/tmp trace-import | trace-dump)" "$want"
	assert_eq "$(ls -A "$D/tmp")" ""
	# a reader that goes away: quietly, status 0
	run --separate-stderr bash -c "trace-import '$D/profile1.sqlite' | head -c 10 > /dev/null; exit \${PIPESTATUS[0]}"
	[ "$status" -eq 0 ] && [ -z "$stderr" ]
	# a SQLite database that is not an nsys export: one line, exit 1, no output
	sqlite3 "$D/other.db" "CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1);"
	run -1 --separate-stderr trace-import -o "$D/x.tkt" "$D/other.db"
	assert_eq "$stderr" "trace-import: $D/other.db: a SQLite database without Nsight Systems tables (StringIds, CUPTI_ACTIVITY_KIND_*, NVTX_EVENTS)"
	[ ! -e "$D/x.tkt" ]
}

@test "an Nsight Systems report (.nsys-rep) gets the command that exports it" {
	# no public report was found to take its first bytes from: a binary
	# header naming Nsight Systems' internal name (QuadD), as reports do
	{ printf '\x00\x01QuadD report\x00'; head -c 2000 /dev/zero; } > "$D/r.nsys-rep"
	run -1 --separate-stderr trace-import -o "$D/x.tkt" "$D/r.nsys-rep"
	assert_eq "$stderr" "trace-import: $D/r.nsys-rep: an Nsight Systems report: export it first (nsys export --type sqlite FILE), then import the .sqlite"
	[ ! -e "$D/x.tkt" ]
}

# A database with the column names of nsys 2024-2026 (schema 3.x, from
# the user guide's SQLite schema reference), a subset of its tables.
make_v3() {
	local gtid1=$(( (1 << 56) | (4242 << 24) | 4242 )) gtid2=$(( (1 << 56) | (4242 << 24) | 4250 ))
	local gpid=$(( (1 << 56) | (4242 << 24) ))
	sqlite3 "$1" <<-EOF
	CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
	CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
	CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER, devStateName TEXT NOT NULL,
	  name TEXT NOT NULL, nameEnum INTEGER NOT NULL, value TEXT NOT NULL);
	CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
	CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);
	CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT,
	  busLocation TEXT, totalMemory INTEGER, smCount INTEGER, uuid TEXT, cuDevice INTEGER,
	  computeMajor INTEGER, computeMinor INTEGER);
	CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER NOT NULL,
	  pid INTEGER NOT NULL, uuid TEXT, numMultiprocessors INTEGER);
	CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
	  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,
	  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
	  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER,
	  launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,
	  gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
	  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
	  staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
	  localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
	  gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER,
	  sharedMemoryLimitConfig INTEGER);
	CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
	  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER,
	  nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
	CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
	  rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
	  endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER,
	  int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER,
	  floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
	CREATE TABLE TARGET_INFO_CUDA_NULL_STREAM (streamId INTEGER NOT NULL, hwId INTEGER NOT NULL,
	  vmId INTEGER NOT NULL, processId INTEGER NOT NULL, deviceId INTEGER NOT NULL,
	  contextId INTEGER NOT NULL);
	CREATE TABLE TARGET_INFO_NVTX_CUDA_STREAM (name TEXT NOT NULL, hwId INTEGER NOT NULL,
	  vmId INTEGER NOT NULL, processId INTEGER NOT NULL, deviceId INTEGER NOT NULL,
	  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL);
	CREATE TABLE SOME_FUTURE_TABLE (x INTEGER);
	INSERT INTO TARGET_INFO_CUDA_NULL_STREAM VALUES (7, 0, 0, 4242, 0, 1);
	INSERT INTO TARGET_INFO_NVTX_CUDA_STREAM VALUES ('copies', 0, 0, 4242, 0, 1, 13);
	INSERT INTO StringIds VALUES (1, 'void gemm<float>(float *, int)'), (2, 'gemm'),
	  (3, '_Z4gemmIfEvPfi'), (4, 'cudaLaunchKernel_v7000'), (5, 'cuLaunchKernel'),
	  (6, 'worker'), (7, 'registered text');
	INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.28.1');
	INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (0, 'Local', 'Hostname', 1, 'node17');
	INSERT INTO PROCESSES VALUES ($gpid, 4242, 'python3');
	INSERT INTO ThreadNames VALUES (6, 0, $gtid2);
	INSERT INTO TARGET_INFO_GPU VALUES (0, 5, 'NVIDIA H100 80GB HBM3', '0000:18:00.0',
	  85520809984, 132, 'GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9', 3, 9, 0);
	INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (5, 0, 4242, NULL, 132);
	INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
	  (1000, 1500, 0, $gtid1, 11, 4, 0, NULL), (3000, 3200, 1, $gtid2, 12, 5, 0, NULL);
	INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
	  (2000, 2600, 0, 1, NULL, 7, 11, $gpid, 1, 2, 3, 0, 0, 32, 4, 2, 1, 256, 1, 1, 1024, 0, 0, 0, 1, NULL, NULL, NULL),
	  (4000, 4100, 0, 1, NULL, 13, 12, $gpid, 1, 2, 3, 0, 0, 32, 8, 1, 1, 128, 1, 1, 0, 4096, 0, 0, 2, NULL, NULL, NULL);
	INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES
	  (10, NULL, 75, 'my.domain', $gtid1, 3);
	INSERT INTO NVTX_EVENTS (start, end, eventType, category, text, globalTid, domainId) VALUES
	  (11, NULL, 33, 7, 'io', $gtid1, 3);
	INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES
	  (12, NULL, 39, 'main thread', $gtid1);
	INSERT INTO NVTX_EVENTS (start, end, eventType, rangeId, category, color, text, globalTid,
	  endGlobalTid, textId, domainId, int64Value) VALUES
	  (900, 5000, 59, NULL, 7, 4278190335, 'step', $gtid1, NULL, NULL, 3, -5),
	  (950, 4500, 60, 77, 0, NULL, NULL, $gtid1, $gtid2, 7, 0, NULL),
	  (2500, NULL, 34, NULL, 0, NULL, 'mark here', $gtid2, NULL, NULL, 0, NULL),
	  (2700, NULL, 59, NULL, 0, NULL, 'never popped', $gtid2, NULL, NULL, 0, NULL);
	EOF
}

@test "nsys 3.x schema: threads, devices, streams, domains, categories, async ranges" {
	local db=$D/v3.sqlite
	make_v3 "$db"
	run --separate-stderr trace-import -v -o "$D/v3.tkt" "$db"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"tables not read: 1 (SOME_FUTURE_TABLE)"* ]]
	[[ "$stderr" == *"NVTX ranges that never ended (zero length): 1"* ]]
	local info
	info=$(trace-dump -i "$D/v3.tkt")
	# the device: TARGET_INFO_CUDA_DEVICE maps CUDA device 0 to GPU 5
	[[ "$info" == *"GPU 0 NVIDIA H100 80GB HBM3, 132 SMs, 85520809984 bytes, compute 9.0, host node17"* ]]
	[[ "$info" == *"pid 4242"*"python3"* ]]
	# stream names: the null stream's, and the one nvtxNameCudaStream gave
	[[ "$info" == *"stream 7 (default)"* && "$info" == *"stream 13 (copies)"* ]]
	# thread names: NVTX's (type 39) before nsys's (ThreadNames)
	assert_eq "$(dumpq "$D/v3.tkt" api '[.[] | .thread] | join(",")')" '"main thread,worker"'
	# runtime names lose their version, driver names keep theirs
	assert_eq "$(dumpq "$D/v3.tkt" api '[.[] | "\(.name)/\(.api)"] | join(",")')" \
		'"cudaLaunchKernel/runtime,cuLaunchKernel/driver"'
	assert_eq "$(dumpq "$D/v3.tkt" kernel '[.[] | .mangled] | unique | join(",")')" '"_Z4gemmIfEvPfi"'
	# the push/pop range: its domain, category, color and payload
	assert_eq "$(dumpq "$D/v3.tkt" range '.[0] | "\(.name) \(.domain) \(.category) \(.payload)"')" \
		'"step my.domain 7 -5"'
	# the start/end range: its text from StringIds, ended on another thread
	assert_eq "$(dumpq "$D/v3.tkt" async_range '.[0] | "\(.name) \(.dur) \(.id)"')" '"registered text 3550 77"'
	assert_eq "$(dumpq "$D/v3.tkt" mark '.[0].name')" '"mark here"'
	# the category name, in its domain
	trace-dump -i "$D/v3.tkt" | grep -F "my.domain" | grep -F "io"
	# pids and tids from the globalTid bits, checked with SQL's own arithmetic
	assert_eq "$(dumpq "$D/v3.tkt" api '[.[] | .tid] | join(",")')" \
		"\"$(sqlite3 "$db" "SELECT globalTid % 16777216 FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY start" | paste -sd,)\""
}

# damaged COPY: the import of COPY exits 0 or 1 (never killed by a
# signal), says at most a few lines, each naming the file, and whatever
# it wrote can be read
damaged() {
	local f=$1
	run --separate-stderr trace-import -o "$D/d.tkt" "$f"
	if [ "$status" -gt 1 ]; then
		printf 'exit %s on %s: %s\n' "$status" "$f" "$stderr" >&2
		return 1
	fi
	local line
	while IFS= read -r line; do
		[[ -z "$line" || "$line" == "trace-import: $f: "* ]] || {
			printf 'unexpected message on %s: %s\n' "$f" "$line" >&2
			return 1
		}
	done <<< "$stderr"
	[ "$(wc -l <<< "$stderr")" -le 12 ]
	if [ -e "$D/d.tkt" ]; then
		trace-dump "$D/d.tkt" > /dev/null
	fi
	rm -f "$D/d.tkt"
}

# drop_views DB: Extra-P's views, which name columns the tests change
drop_views() {
	sqlite3 "$1" "SELECT 'DROP VIEW \"' || name || '\";' FROM sqlite_master WHERE type = 'view'" |
		sqlite3 "$1"
}

@test "damaged databases: truncated, wrong schema, missing tables, NULLs and flipped bytes" {
	unpack profile1
	local db=$D/profile1.sqlite size
	size=$(stat -c %s "$db")
	# truncated anywhere: in the header, in the schema, in the data
	for n in 10 100 1000 4096 5000 50000 100000 200000 $((size - 4096)); do
		head -c "$n" "$db" > "$D/trunc$n.sqlite"
		damaged "$D/trunc$n.sqlite"
	done
	head -c 100 "$db" > "$D/t.sqlite"
	run -1 --separate-stderr trace-import -o "$D/x.tkt" "$D/t.sqlite"
	[ ! -e "$D/x.tkt" ]
	# a schema this importer does not know: columns renamed
	cp "$db" "$D/schema.sqlite"
	drop_views "$D/schema.sqlite"
	sqlite3 "$D/schema.sqlite" "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME COLUMN start TO startNs;
		UPDATE EXPORT_META_DATA SET value = '9.0.0' WHERE name = 'EXPORT_SCHEMA_VERSION'"
	run -1 --separate-stderr trace-import -o "$D/s.tkt" "$D/schema.sqlite"
	assert_eq "$stderr" "trace-import: $D/schema.sqlite: export schema version 9.0.0 is not one this importer knows (2.x, 3.x): reading the columns it knows by name
trace-import: $D/schema.sqlite: table CUPTI_ACTIVITY_KIND_KERNEL has no column 'start' (a schema this importer does not know): skipped"
	assert_eq "$(dumpq "$D/s.tkt" api length)" \
		"$(sqlite3 "$db" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass <> 67")"
	# missing tables: no StringIds (names are lost, nothing else), no events at all
	cp "$db" "$D/nostr.sqlite"
	drop_views "$D/nostr.sqlite"
	sqlite3 "$D/nostr.sqlite" "DROP TABLE StringIds"
	run -0 --separate-stderr trace-import -o "$D/n.tkt" "$D/nostr.sqlite"
	assert_eq "$(dumpq "$D/n.tkt" kernel length)" 12
	cp "$db" "$D/none.sqlite"
	drop_views "$D/none.sqlite"
	sqlite3 "$D/none.sqlite" "SELECT 'DROP TABLE \"' || name || '\";' FROM sqlite_master
		WHERE type = 'table' AND (name LIKE 'CUPTI%' OR name IN ('NVTX_EVENTS', 'StringIds',
		'CUDA_GPU_MEMORY_USAGE_EVENTS'))" | sqlite3 "$D/none.sqlite"
	run -1 --separate-stderr trace-import -o "$D/x.tkt" "$D/none.sqlite"
	[[ "$stderr" == *"without Nsight Systems tables"* ]]
	# NULLs and text where numbers belong: those rows are skipped and counted
	cp "$db" "$D/nulls.sqlite"
	drop_views "$D/nulls.sqlite"
	sqlite3 "$D/nulls.sqlite" "PRAGMA writable_schema = 0;
		CREATE TABLE k2 AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL;
		DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL;
		CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL AS SELECT * FROM k2; DROP TABLE k2;
		UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = NULL WHERE rowid = 1;
		UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET \"end\" = 'soon' WHERE rowid = 2;
		UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = NULL, gridX = 'x', shortName = NULL,
			demangledName = -5 WHERE rowid = 3"
	run -1 --separate-stderr trace-import -v -o "$D/u.tkt" "$D/nulls.sqlite"
	[[ "$stderr" == *"rows without valid times (skipped): 2"* ]]
	assert_eq "$(dumpq "$D/u.tkt" kernel length)" 10
	damaged "$D/nulls.sqlite"
	# flipped bytes in the data pages, at places fixed by a seed
	local i off
	for i in $(seq 1 12); do
		cp "$db" "$D/flip$i.sqlite"
		off=$(( (i * 7919 * 37) % (size - 200) + 100 ))
		printf '\xff\x00\x7f' | dd of="$D/flip$i.sqlite" bs=1 seek="$off" conv=notrunc status=none
		damaged "$D/flip$i.sqlite"
	done
}

# unconstrain DB: every table rebuilt without its constraints (NOT NULL,
# keys), so that any value can be stored where the reader expects another
unconstrain() {
	local t sql=""
	drop_views "$1"
	for t in $(sqlite3 "$1" "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'"); do
		sql+="CREATE TABLE \"tk_$t\" AS SELECT * FROM \"$t\"; DROP TABLE \"$t\";
			ALTER TABLE \"tk_$t\" RENAME TO \"$t\";"
	done
	sqlite3 "$1" "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; $sql" > /dev/null
}

# spoil DB VALUE: in every table, column number i (from 0) takes VALUE
# in the row i + 1 of the table (rows in rowid order), so that each
# column of each table read gets a wrong value in a row of its own
spoil() {
	local db=$1 value=$2 t c i sql=""
	for t in $(sqlite3 "$db" "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'"); do
		i=0
		for c in $(sqlite3 "$db" "SELECT name FROM pragma_table_info('$t')"); do
			sql+="UPDATE \"$t\" SET \"$c\" = $value WHERE rowid =
				(SELECT rowid FROM \"$t\" ORDER BY rowid LIMIT 1 OFFSET $i);"
			i=$((i + 1))
		done
	done
	sqlite3 "$db" "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; $sql" > /dev/null
}

@test "damaged databases: NULLs, text, reals and extremes in every column of every table" {
	unpack profile1
	make_v3 "$D/v3.sqlite"
	local src db v n
	for src in profile1 v3; do
		n=0
		for v in NULL "'x'" "''" 1.5 -1 -9223372036854775808 9223372036854775807 1e308 "x'00ff'"; do
			n=$((n + 1))
			db=$D/$src-spoilt$n.sqlite
			cp "$D/$src.sqlite" "$db"
			unconstrain "$db"
			spoil "$db" "$v"
			# the value really is there (a check of the test itself)
			[ "$(sqlite3 "$db" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start IS $v")" -ge 1 ] || {
				echo "$db: $v not stored" >&2
				return 1
			}
			damaged "$db"
		done
	done
}

@test "damaged databases: the schema version missing, empty, not a version, a number" {
	unpack profile1
	local db v
	for v in NULL "''" "'x.y'" "'2'" 3 "'4.0'" "x'ff00'"; do
		db=$D/version.sqlite
		cp "$D/profile1.sqlite" "$db"
		unconstrain "$db"
		sqlite3 "$db" "UPDATE EXPORT_META_DATA SET value = $v WHERE name = 'EXPORT_SCHEMA_VERSION'"
		run --separate-stderr trace-import -o "$D/v.tkt" "$db"
		# a version it cannot read is one it does not know: said, and read
		[ "$status" -eq 0 ] || { echo "$v: exit $status: $stderr" >&2; return 1; }
		assert_eq "$(dumpq "$D/v.tkt" kernel length)" \
			"$(sqlite3 "$db" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")"
		if [ "$v" = NULL ] || [ "$v" = 3 ]; then
			[ -z "$stderr" ] || [[ "$stderr" == "trace-import: $db: export schema version"*"is not one this importer knows"* ]]
		else
			[[ "$stderr" == "trace-import: $db: export schema version"*"is not one this importer knows (2.x, 3.x): reading the columns it knows by name" ]] ||
				{ echo "$v: $stderr" >&2; return 1; }
			assert_eq "$(wc -l <<< "$stderr")" 1
		fi
	done
	# no metadata table at all, and one without its columns
	cp "$D/profile1.sqlite" "$db"
	unconstrain "$db"
	sqlite3 "$db" "DROP TABLE EXPORT_META_DATA"
	run -0 --separate-stderr trace-import -o "$D/v.tkt" "$db"
	assert_eq "$stderr" ""
	sqlite3 "$db" "CREATE TABLE EXPORT_META_DATA (x INTEGER); INSERT INTO EXPORT_META_DATA VALUES (1)"
	run -0 --separate-stderr trace-import -o "$D/v.tkt" "$db"
	assert_eq "$stderr" ""
}
