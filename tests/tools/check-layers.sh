#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check-layers.sh BUILD_DIR: the layers of the tree, checked from the
# source (includes) and from the built objects (calls and data).
#
#   lib/            libtracekit: includes only lib/ (lib/inject/ may also
#                   include lib/, never the reverse)
#   cmd/common/     front-end helpers: lib/'s public header (tracekit.h),
#                   its header-only support.h (growable array, hash), and
#                   itself
#   cmd/import/     the importer (Chrome JSON, Nsight Systems exports):
#                   common/ and lib/ below it
#   cmd/analysis/   the analysis layer: import/, common/ and lib/ below it
#   cmd/trace-*/    one folder per command: analysis/, import/, common/, lib/;
#                   never another command's folder
#
# An include or a call that goes up a layer or across commands fails, and
# so does a global variable in cmd/ that is not const: files pass a
# context, they do not share mutable state.  Prints what is wrong, one
# line each, and exits 1; quiet and 0 when the tree is clean.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: check-layers.sh BUILD_DIR}
cd "$top" || exit 2
bad=0
fail() { echo "check-layers: $*"; bad=1; }

# The layer of a source folder: lib 0, lib/inject 1, common 1, import 2,
# analysis 3, a command 4.  Commands are also told apart by name.
layer_of() {
	case $1 in
	lib) echo 0 ;; lib/inject|cmd/common) echo 1 ;; cmd/import) echo 2 ;;
	cmd/analysis) echo 3 ;; cmd/trace-*) echo 4 ;; *) echo 9 ;;
	esac
}

# ---- includes -------------------------------------------------------------
# A quoted include resolves in the file's own folder first, then through
# -Icmd (common/..., analysis/..., trace-*/...) or -Ilib.
while IFS= read -r f; do
	dir=$(dirname "$f")
	while IFS= read -r inc; do
		if [ -e "$dir/$inc" ]; then
			target=$(dirname "$(realpath -m --relative-to=. "$dir/$inc")")
		elif [ "${dir#cmd/}" != "$dir" ] && [ -e "cmd/$inc" ]; then
			target=$(dirname "cmd/$inc")
		elif [ -e "lib/$inc" ]; then
			target=$(dirname "lib/$inc")
		else
			continue # a system header, or one from the CUDA toolkit
		fi
		[ "$target" = "$dir" ] && continue
		from=$(layer_of "$dir") to=$(layer_of "$target")
		case $dir:$target in
		cmd/*:lib)
			[ "$inc" = tracekit.h ] || [ "$inc" = support.h ] ||
				fail "$f includes $inc: commands see the library through tracekit.h (and support.h) only" ;;
		cmd/trace-record:lib/inject)
			[ "$inc" = inject/protocol.h ] ||
				fail "$f includes $inc: trace-record shares only the spool protocol with the injection library" ;;
		cmd/trace-*:cmd/trace-*)
			fail "$f includes $inc: across commands (move what both need down a layer)" ;;
		*)
			[ "$to" -lt "$from" ] ||
				fail "$f includes $inc: $target is not below $dir" ;;
		esac
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done < <(git ls-files 'lib/*.[ch]' 'cmd/*.[ch]')

# ---- calls and data, from the objects -------------------------------------
# Every symbol an object needs must be defined in its own layer or below;
# a command's symbols are its own.
[ -d "$build/cmd" ] || { echo "check-layers: no $build/cmd: build first" >&2; exit 2; }
defs=$(mktemp)
trap 'rm -f "$defs"' EXIT
for o in "$build"/lib/*.o "$build"/cmd/*/*.o; do
	[ -e "$o" ] || continue
	src=${o#"$build"/}; src=${src%.o}.c
	[ -e "$src" ] || continue # left over from a file that was moved
	nm --defined-only -g "$o" | awk -v d="$(dirname "$src")" 'NF == 3 { print $3, d }'
done | sort -u >"$defs"
for o in "$build"/cmd/*/*.o; do
	src=${o#"$build"/}; src=${src%.o}.c
	[ -e "$src" ] || continue
	dir=$(dirname "$src") from=$(layer_of "$(dirname "$src")")
	while read -r sym; do
		while read -r _ target; do
			[ "$target" = "$dir" ] && continue
			to=$(layer_of "$target")
			if [ "${target#cmd/trace-}" != "$target" ] && [ "${dir#cmd/trace-}" != "$dir" ]; then
				fail "$src calls $sym of $target: across commands"
			elif [ "$to" -ge "$from" ]; then
				fail "$src calls $sym of $target: not below $dir"
			fi
		done < <(awk -v s="$sym" '$1 == s' "$defs")
	done < <(nm --undefined-only "$o" | awk '{ print $2 }')
	# Mutable data with external linkage: state shared between files
	# (read-only data, even .data.rel.ro with relocated pointers, is fine;
	# so are the sanitizers' and gcov's own symbols, such as the
	# __odr_asan.NAME indicator AddressSanitizer adds beside each global).
	objdump -t "$o" | awk -v f="$src" '$2 == "g" && $3 == "O" &&
		$4 !~ /^\.(rodata|data\.rel\.ro)/ &&
		$NF !~ /^__(odr_asan|asan|ubsan|tsan|gcov|llvm)/ {
		print "check-layers: " f " defines global variable " $NF \
		      ": pass it in a context (or make it const)" }' | grep . && bad=1
done
exit $bad
