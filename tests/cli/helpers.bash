# SPDX-License-Identifier: MIT
# Loaded by every tests/cli/*.bats file: `load helpers`.
# tests/run-tests.sh puts the build's bin/ and tests/tools/ first in PATH,
# so commands are called by name (and under valgrind with check-valgrind).

bats_require_minimum_version 1.5.0

: "${TK_SRC:=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}"
: "${TK_BUILD:=$TK_SRC/build}"
: "${TK_SHARED:=$TK_SRC/../shared}"
case ":$PATH:" in
*":$TK_BUILD/bin:"*) ;;
*) PATH="$TK_BUILD/bin:$TK_BUILD/tests/tools:$PATH" ;;
esac

# shared_data PATH VAR: set VAR to the path of a real trace from
# ../shared/testdata, or skip the test.  Not used as $(shared_data ...):
# skip must run in the test's own shell, not in a subshell.
shared_data() {
	local path_="$TK_SHARED/testdata/$1"
	[ -e "$path_" ] || skip "real test data not found: $path_ (see ../shared/testdata/SOURCES.md)"
	printf -v "$2" '%s' "$path_"
}

# A synthetic trace in the test's temporary directory: synth_trace NAME [synth options]
synth_trace() {
	local name=$1
	shift
	synth "$@" -o "$BATS_TEST_TMPDIR/$name" || return 1
	printf '%s\n' "$BATS_TEST_TMPDIR/$name"
}

# Commands are slow under valgrind; tests that scale can ask.
under_valgrind() { [ "${TK_UNDER_VALGRIND:-0}" = 1 ]; }
# ... and several times slower in a sanitizer build (make check SAN=...).
under_sanitizers() { case $TK_BUILD in *build-san*) true ;; *) false ;; esac; }

# Fail with a message unless "$1" equals "$2".
assert_eq() {
	if [ "$1" != "$2" ]; then
		printf 'expected: %s\n     got: %s\n' "$2" "$1" >&2
		return 1
	fi
}

# Skip unless writing to /dev/full fails as it should (ENOSPC).
require_dev_full() {
	if (printf x > /dev/full) 2>/dev/null; then
		skip "/dev/full accepts writes on this machine; cannot test ENOSPC"
	fi
}

# The symbols gcov's runtime adds to a library built with --coverage
# (make coverage; its objects have .gcno notes beside them), and the
# injection library's tki_coverage_dump of that build: filtered out of
# export lists there.
no_gcov_symbols() {
	if compgen -G "$TK_BUILD/lib/*.gcno" > /dev/null; then
		grep -Ev '^(__gcov_[A-Za-z0-9_]*|mangle_path|tki_coverage_dump)$' || true
	else
		cat
	fi
}
