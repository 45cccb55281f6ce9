#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The installed library: files, exported symbols, pkg-config, and the
# example of tracekit(3) compiled against it.

load helpers

setup_file() {
	export DEST=$BATS_FILE_TMPDIR/root
	make -s -C "$TK_SRC" O="${TK_BUILD#$TK_SRC/}" install DESTDIR="$DEST" PREFIX=/usr >/dev/null
}

@test "install puts binaries, libraries, header, pkg-config file and man pages in place" {
	for f in usr/bin/trace-dump usr/lib/libtracekit.a usr/lib/libtracekit.so.0 \
	         usr/lib/libtracekit.so usr/include/tracekit.h usr/lib/pkgconfig/tracekit.pc \
	         usr/share/man/man1/trace-dump.1 usr/share/man/man3/tracekit.3 \
	         usr/share/man/man5/tracekit-format.5; do
		[ -e "$DEST/$f" ] || { echo "missing $f"; return 1; }
	done
	grep -qx 'Libs: -L${libdir} -ltracekit' "$DEST/usr/lib/pkgconfig/tracekit.pc"
	grep -qx 'libdir=/usr/lib' "$DEST/usr/lib/pkgconfig/tracekit.pc"
}

@test "the shared library has its soname and exports only tk_* functions" {
	run -0 bash -c "objdump -p '$DEST/usr/lib/libtracekit.so.0' | awk '/SONAME/ {print \$2}'"
	assert_eq "$output" "libtracekit.so.0"
	run -0 bash -c "nm -D --defined-only '$DEST/usr/lib/libtracekit.so.0' | awk '\$2 ~ /[TDBR]/ {print \$3}' | grep -v '^tk_' || true"
	assert_eq "$(no_gcov_symbols <<< "$output")" ""
	n=$(nm -D --defined-only "$DEST/usr/lib/libtracekit.so.0" | grep -c ' T tk_')
	[ "$n" -ge 40 ]
}

@test "the example of tracekit(3) builds against the installed library and is right" {
	sed -n '/^#include <stdio.h>/,/^\.Ed/p' "$TK_SRC/man/tracekit.3" | sed 's/\\e/\\/g' | grep -v '^\.Ed' > "$BATS_TEST_TMPDIR/total.c"
	export PKG_CONFIG_PATH=$DEST/usr/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$DEST
	# a library built with sanitizers needs them in the program too
	san=${SAN:+-fsanitize=$SAN}
	cc -std=c11 $san -o "$BATS_TEST_TMPDIR/total" "$BATS_TEST_TMPDIR/total.c" \
		$(pkg-config --cflags --libs tracekit)
	T=$(synth_trace t.tkt -n 3000)
	want=$(trace-dump --csv -k kernel "$T" | awk -F, 'NR > 1 { s += $3 } END { print s " ns in kernels" }')
	run -0 env LD_LIBRARY_PATH="$DEST/usr/lib" "$BATS_TEST_TMPDIR/total" "$T"
	assert_eq "$output" "$want"
	run -0 bash -c "LD_LIBRARY_PATH='$DEST/usr/lib' ldd '$BATS_TEST_TMPDIR/total' | grep libtracekit"
	[[ "$output" == *"$DEST/usr/lib/libtracekit.so.0"* ]]
}

@test "uninstall removes what install put" {
	make -s -C "$TK_SRC" O="${TK_BUILD#$TK_SRC/}" uninstall DESTDIR="$DEST" PREFIX=/usr >/dev/null
	run -0 find "$DEST" -type f
	assert_eq "$output" ""
}
