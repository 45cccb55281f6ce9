# SPDX-License-Identifier: MIT
# tracekit: `make`, `make check`, `make demo`, `make install`; `make help`.

VERSION := 0.1.0
SOVERSION := 0

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
DESTDIR ?=
CUDA_HOME ?= /usr/local/cuda

# SAN=address,undefined builds everything with sanitizers in its own tree.
SAN ?=
ifneq ($(SAN),)
O ?= build-san-$(subst $(comma),-,$(SAN))
else
O ?= build
endif
comma := ,

CFLAGS ?= -O2 -g
# The library is the hot path of every command: optimise it harder.
LIB_CFLAGS ?= -O3
WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
        -Wmissing-prototypes -Wformat=2 -Wvla -Wpointer-arith \
        -Wno-missing-field-initializers
DEPS_CFLAGS := $(shell pkg-config --cflags jansson zlib libdeflate 2>/dev/null)
DEPS_LIBS := $(shell pkg-config --libs jansson zlib libdeflate 2>/dev/null || \
               echo -ljansson -lz -ldeflate) -lcsv -lm -pthread
# The importer (cmd/import) reads Nsight Systems exports with SQLite:
# the commands and the unit tests (which link its archive) link it.
SQLITE_LIBS := $(shell pkg-config --libs sqlite3 2>/dev/null || echo -lsqlite3)
# trace-to-chrome -z compresses with ISA-L's igzip (Debian libisal-dev).
ISAL_LIBS := $(shell pkg-config --libs libisal 2>/dev/null || echo -lisal)
# What the cmd/ layers need beyond the library's own dependencies.
CMD_DEPS_LIBS := $(SQLITE_LIBS) $(ISAL_LIBS)
SAN_FLAGS := $(if $(SAN),-fsanitize=$(SAN) -fno-omit-frame-pointer \
               -fno-sanitize-recover=all)
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE -Ilib $(WARN) -fPIC -fvisibility=hidden -pthread \
              $(DEPS_CFLAGS) $(SAN_FLAGS) $(CFLAGS)
ALL_LDFLAGS := $(SAN_FLAGS) $(LDFLAGS)

# The CUDA toolkit is optional: CUPTI and the NVTX headers.
HAVE_NVTX := $(shell test -f $(CUDA_HOME)/include/nvtx3/nvToolsExt.h && echo 1)
HAVE_CUPTI := $(shell test -f $(CUDA_HOME)/include/cupti.h && echo 1)
NVCC := $(shell command -v $(CUDA_HOME)/bin/nvcc 2>/dev/null)
ifneq ($(MAKECMDGOALS),clean)
ifeq ($(HAVE_NVTX),)
$(info tracekit: no NVTX headers under CUDA_HOME=$(CUDA_HOME); building without them)
endif
ifeq ($(HAVE_CUPTI),)
$(info tracekit: no CUPTI under CUDA_HOME=$(CUDA_HOME); GPU recording is not built)
endif
endif

ifeq ($(V),1)
Q :=
else
Q := @
endif

# ---- sources ----------------------------------------------------------------

LIB_SRC := $(wildcard lib/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(O)/%.o)
# cmd/ is layered: common/ (front-end helpers: exit codes and messages,
# tables, short names, JSON output) over lib/, import/ (Chrome JSON and
# Nsight Systems exports to tracekit events) over common/, analysis/
# (aggregation, distributions, busy time, per-instance views, statistical
# tests) over import/, and a folder per command over them all.  Each layer is a static
# archive; `make check-layers` fails on an include or call that goes up
# or across commands.
CMDS := $(notdir $(wildcard cmd/trace-*))
CMD_BINS := $(CMDS:%=$(O)/bin/%)
COMMON_LIB := $(O)/cmd/common/libcommon.a
ANALYSIS_LIB := $(O)/cmd/analysis/libanalysis.a
IMPORT_LIB := $(O)/cmd/import/libimport.a
# A command's own archive: every file of its folder but the one with
# main(), so that unit tests can link its parts.
cmd_lib = $(O)/cmd/$(1)/lib$(1).a
CMD_LIBS := $(foreach c,$(CMDS),$(call cmd_lib,$(c)))
# What a program built from cmd/ code links, in layer order.
CMD_LINK := $(CMD_LIBS) $(ANALYSIS_LIB) $(IMPORT_LIB) $(COMMON_LIB)
CMD_HDR := $(wildcard cmd/*/*.h)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRC:tests/unit/%.c=$(O)/tests/unit/%)
TOOL_SRC := $(wildcard tests/tools/*.c)
TOOL_BINS := $(TOOL_SRC:tests/tools/%.c=$(O)/tests/tools/%)
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_REPLAY := $(FUZZ_SRC:tests/fuzz/%.c=$(O)/tests/fuzz/%-replay)
MANS := $(wildcard man/*.[1-9])

STATIC_LIB := $(O)/lib/libtracekit.a
SHARED_LIB := $(O)/lib/libtracekit.so.$(SOVERSION)

.SECONDARY:
.PHONY: all check check-layers check-valgrind demo install uninstall clean bench fuzz \
        fuzz-smoke lint-man help tests

all: $(STATIC_LIB) $(SHARED_LIB) $(CMD_BINS)

# ---- library ----------------------------------------------------------------

$(O)/lib/%.o: lib/%.c $(wildcard lib/*.h)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(LIB_CFLAGS) -DTK_BUILDING_LIBRARY -c -o $@ $<

# The static library's rule is the archives' below ($(call archive)):
# a file moved out of lib/ leaves no stale member behind.  The shared
# library is relinked when that list changes too.
$(SHARED_LIB): $(LIB_OBJ) $(STATIC_LIB).objects
	$(Q)$(CC) -shared -Wl,-soname,libtracekit.so.$(SOVERSION) \
		-Wl,--no-undefined $(ALL_LDFLAGS) -o $@ $(LIB_OBJ) $(DEPS_LIBS)
	$(Q)ln -sf libtracekit.so.$(SOVERSION) $(O)/lib/libtracekit.so

# ---- commands ---------------------------------------------------------------
# Commands link the static library: no rpath or LD_LIBRARY_PATH games.
# Their objects also depend on the library headers cmd/ includes
# (support.h, and the injection library's protocol.h for trace-record):
# an object left from before a change there kept the old layout, and
# stale inline functions in a coverage build (gcovr stops on them).

$(O)/cmd/%.o: cmd/%.c $(CMD_HDR) lib/tracekit.h lib/support.h lib/inject/protocol.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -Icmd -DTK_INJECT_DIR='"$(LIBDIR)/tracekit"' -c -o $@ $<

objs_of = $(patsubst %.c,$(O)/%.o,$(wildcard cmd/$(1)/*.c))

# $(call archive,ARCHIVE,OBJECTS): the rule of a folder's archive.  It
# also depends on ARCHIVE.objects, the list of OBJECTS, rewritten when
# the list changes (a file added to the folder, moved out of it or
# removed) or the archive holds other members than these: otherwise an
# archive that no remaining object is newer than keeps the object of a
# file that is gone, and an archive of no objects (a folder whose only
# file is its main(), such as cmd/trace-import) has no prerequisite at
# all and is never rebuilt.  Either, left from an older layout in a
# build tree, broke the link.  The list is written even when empty: a
# list that is missing would make its archive, and so its command, be
# rebuilt by every make.
define archive
$(1): $(2) $(1).objects
	@mkdir -p $$(@D)
	$$(Q)rm -f $$@
	$$(Q)$$(AR) rcs $$@ $(2)
$(1).objects: FORCE
	@mkdir -p $$(@D)
	@if [ ! -e $$@ ] || [ "$$$$(cat $$@)" != '$(strip $(2))' ] || { [ -e $(1) ] && \
	    [ "$$$$($$(AR) t $(1) | LC_ALL=C sort | xargs)" != '$(sort $(notdir $(2)))' ]; }; \
	then echo '$(strip $(2))' > $$@; fi
endef
$(eval $(call archive,$(STATIC_LIB),$(LIB_OBJ)))
$(eval $(call archive,$(COMMON_LIB),$(call objs_of,common)))
$(eval $(call archive,$(IMPORT_LIB),$(call objs_of,import)))
$(eval $(call archive,$(ANALYSIS_LIB),$(call objs_of,analysis)))
$(foreach c,$(CMDS),$(eval $(call archive,$(call cmd_lib,$(c)),\
	$(filter-out $(O)/cmd/$(c)/$(c).o,$(call objs_of,$(c))))))

define command_rules
$(O)/bin/$(1): $(O)/cmd/$(1)/$(1).o $(call cmd_lib,$(1)) $(ANALYSIS_LIB) $(IMPORT_LIB) $(COMMON_LIB) $(STATIC_LIB)
	@mkdir -p $$(@D)
	$$(Q)$$(CC) $$(ALL_LDFLAGS) -o $$@ $$< $(call cmd_lib,$(1)) $(ANALYSIS_LIB) \
		$(IMPORT_LIB) $(COMMON_LIB) $(STATIC_LIB) $$(DEPS_LIBS) $$(CMD_DEPS_LIBS)
endef
$(foreach c,$(CMDS),$(eval $(call command_rules,$(c))))

# ---- tests ------------------------------------------------------------------

$(O)/tests/unit/%: tests/unit/%.c tests/unit/tap.h $(STATIC_LIB) $(CMD_LINK)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -Icmd -Itests/unit $(ALL_LDFLAGS) -o $@ $< \
		$(CMD_LINK) $(STATIC_LIB) $(DEPS_LIBS) $(CMD_DEPS_LIBS)

# test_parallel links lib/rpool.c built with TK_RPOOL_SCHEDULE ahead of
# the library, whose own rpool.o it then does not pull in: the schedules
# that choose which thread does each slot (rpool.c) are compiled into
# no other program.
RPOOL_SCHEDULE_OBJ := $(O)/tests/unit/rpool_schedule.o
$(RPOOL_SCHEDULE_OBJ): lib/rpool.c $(wildcard lib/*.h)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(LIB_CFLAGS) -DTK_BUILDING_LIBRARY -DTK_RPOOL_SCHEDULE -c -o $@ $<
$(O)/tests/unit/test_parallel: $(RPOOL_SCHEDULE_OBJ)
$(O)/tests/unit/test_parallel: ALL_LDFLAGS += $(RPOOL_SCHEDULE_OBJ)

# test_nomem makes the Nth allocation of the library fail: the library's
# calls to these go through its own __wrap_ functions (link-time
# wrapping; the library is linked statically, so its calls are seen and
# production code stays as it is).
NOMEM_WRAP := malloc calloc realloc strdup libdeflate_alloc_compressor \
              libdeflate_alloc_decompressor pthread_create
$(O)/tests/unit/test_nomem: ALL_LDFLAGS += $(NOMEM_WRAP:%=-Wl,--wrap=%)

$(O)/tests/tools/%: tests/tools/%.c $(STATIC_LIB) $(CMD_LINK)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -Icmd $(ALL_LDFLAGS) -o $@ $< \
		$(CMD_LINK) $(STATIC_LIB) $(DEPS_LIBS) $(CMD_DEPS_LIBS)

# Fuzz targets also build as plain programs that replay the corpus, so
# `make check` runs every saved input through them with any compiler.
# They link a copy of the library built as `make fuzz` builds it
# (TK_FUZZING: checksums not compared, the only code it changes), so
# that the saved inputs reach the decoders behind the checksums.
FUZZ_REPLAY_LIB := $(O)/tests/fuzz/lib/libtracekit.a

$(O)/tests/fuzz/lib/%.o: lib/%.c $(wildcard lib/*.h)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -DTK_BUILDING_LIBRARY -DTK_FUZZING -c -o $@ $<

$(FUZZ_REPLAY_LIB): $(LIB_SRC:lib/%.c=$(O)/tests/fuzz/lib/%.o)
	$(Q)rm -f $@
	$(Q)$(AR) rcs $@ $^

$(O)/tests/fuzz/%-replay: tests/fuzz/%.c tests/fuzz/replay.c $(FUZZ_REPLAY_LIB) $(CMD_LINK)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -DTK_FUZZING -Icmd $(ALL_LDFLAGS) -o $@ $< tests/fuzz/replay.c \
		$(CMD_LINK) $(FUZZ_REPLAY_LIB) $(DEPS_LIBS) $(CMD_DEPS_LIBS)

tests: all $(UNIT_BINS) $(TOOL_BINS) $(FUZZ_REPLAY)

check: tests check-layers
	$(Q)O=$(O) SAN=$(SAN) tests/run-tests.sh

# Includes and calls only go down the layers (lib, cmd/common,
# cmd/analysis, cmd/trace-*), never across commands; no mutable globals
# shared between files of cmd/.
check-layers: all
	$(Q)tests/tools/check-layers.sh $(O)

check-valgrind: tests
	$(Q)O=$(O) SAN=$(SAN) TK_VALGRIND=1 tests/run-tests.sh

# libFuzzer builds (clang), separate from the check builds.
FUZZ_O := build-fuzz
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -DTK_FUZZING -Ilib -Icmd -g -O1 \
               -fsanitize=fuzzer,address,undefined $(DEPS_CFLAGS)
FUZZ_TIME ?= 30
fuzz:
	$(Q)$(MAKE) --no-print-directory O=$(FUZZ_O) CC=clang \
		CFLAGS="-g -O1 -DTK_FUZZING -fsanitize=fuzzer-no-link,address,undefined" \
		$(FUZZ_O)/lib/libtracekit.a $(subst $(O)/,$(FUZZ_O)/,$(CMD_LINK))
	$(Q)for f in $(FUZZ_SRC); do n=$$(basename $$f .c); \
		clang $(FUZZ_CFLAGS) -o $(FUZZ_O)/$$n $$f \
			$(subst $(O)/,$(FUZZ_O)/,$(CMD_LINK)) $(FUZZ_O)/lib/libtracekit.a $(DEPS_LIBS) \
			$(CMD_DEPS_LIBS) || exit 1; done

fuzz-smoke: fuzz
	$(Q)FUZZ_O=$(FUZZ_O) FUZZ_TIME=$(FUZZ_TIME) tests/fuzz/run-smoke.sh

bench: all $(TOOL_BINS)
	$(Q)O=$(O) tests/bench/run-all.sh

lint-man:
	$(Q)mandoc -Tlint -Wwarning $(MANS)
	@echo "man pages: $(words $(MANS)) linted"

# ---- ThreadSanitizer ---------------------------------------------------------
# make check-tsan: the threaded paths under ThreadSanitizer, in a tree of
# their own (TSAN_O): trace-diff's two reader threads, the writer's
# sealer thread (trace-merge; the writer's unit tests with threads),
# trace-import's parse thread, trace-to-chrome -z's compressing threads,
# trace-dump's formatting threads (common/ordpool) and the reader's
# workers (trace-stats, trace-dump), through tests/cli/threads.bats and
# the unit tests named below (and the commands that they run);
# test_parallel (the reader's workers on damaged input) takes minutes
# under ThreadSanitizer and is left out.  Every report is written under
# $(TSAN_O)/tsan/ and fails the target, even one from a command whose
# exit status its test does not look at.  About a minute of 2 cores.  `make check
# SAN=thread` builds every test with ThreadSanitizer in its own tree and
# stops a program at its first report (TSAN_OPTIONS=halt_on_error=1).
TSAN_O := build-san-tsan
TSAN_TESTS := test_roundtrip test_robust test_ordpool threads.bats
TSAN_BINS := trace-diff trace-merge trace-import trace-dump trace-to-chrome trace-stats
TSAN_LOG = $(abspath $(TSAN_O))/tsan
ifneq ($(findstring thread,$(SAN)),)
export TSAN_OPTIONS ?= halt_on_error=1
endif

check-tsan:
	$(Q)$(MAKE) --no-print-directory SAN=thread O=$(TSAN_O) $(TSAN_BINS:%=$(TSAN_O)/bin/%) \
		$(TSAN_O)/tests/tools/synth $(TSAN_O)/tests/tools/reorder \
		$(patsubst %,$(TSAN_O)/tests/unit/%,$(filter test_%,$(TSAN_TESTS)))
	$(Q)rm -rf $(TSAN_LOG) && mkdir -p $(TSAN_LOG)
	$(Q)TSAN_OPTIONS="halt_on_error=1 log_path=$(TSAN_LOG)/report $(TSAN_OPTIONS)" \
		O=$(TSAN_O) SAN=thread TK_ONLY="$(TSAN_TESTS)" tests/run-tests.sh; \
	status=$$?; for f in $(TSAN_LOG)/report*; do \
		[ -e "$$f" ] || continue; cat "$$f"; status=1; done; \
	[ $$status = 0 ] || echo "check-tsan: failed (ThreadSanitizer reports: $(TSAN_LOG))"; \
	exit $$status

.PHONY: check-tsan

# ---- GPU: CUPTI activity converter, CUDA sample ----------------------------
# lib/inject/cupti_convert.c turns CUPTI activity records into events; the
# injection library links $(CUPTI_CONVERT_OBJ) (empty when not built) and
# compiles with $(CUPTI_CFLAGS), links $(CUPTI_LIBS).  It reads the record
# layouts of CUPTI 13.0, so it is built only with those headers.  Its unit
# test links libcupti when present (no GPU or driver needed) to walk real
# buffers; otherwise it tests the records alone, and without CUPTI headers
# it is a single skipped test.  nvcc, when present, builds the CUDA sample
# that tests/gpu/run.sh (`make check-gpu`) records on a machine with a GPU.
HAVE_CUPTI_CONVERT := $(if $(HAVE_CUPTI),$(shell grep -Eqs \
	'define CUPTI_API_VERSION 1300[0-9][0-9]' \
	$(CUDA_HOME)/include/cupti_version.h && echo 1))
CUPTI_LIB := $(firstword $(wildcard $(CUDA_HOME)/lib64/libcupti.so \
	$(CUDA_HOME)/extras/CUPTI/lib64/libcupti.so))
CUPTI_CFLAGS := -I$(CUDA_HOME)/include -Ilib/inject
CUPTI_LIBS := $(if $(CUPTI_LIB),-L$(dir $(CUPTI_LIB)) \
	-Wl$(comma)-rpath$(comma)$(dir $(CUPTI_LIB)) \
	-Wl$(comma)--push-state$(comma)--no-as-needed -lcupti -Wl$(comma)--pop-state) -ldl
CUPTI_CONVERT_OBJ :=
CUPTI_BENCH := $(O)/tests/bench/cupti-convert-bench
CUDA_SAMPLE := $(O)/tests/apps/cuda_sample
CUDA_LAUNCH_BENCH := $(O)/tests/apps/cuda_launch_bench

ifneq ($(MAKECMDGOALS),clean)
ifneq ($(HAVE_CUPTI),)
ifeq ($(HAVE_CUPTI_CONVERT),)
$(info tracekit: CUPTI under CUDA_HOME=$(CUDA_HOME) is not 13.0; the CUPTI converter is not built)
endif
endif
endif
# Rebuild the converter's test when CUDA_HOME or what was found there
# changes, so that a build without CUPTI really runs the skipped variant.
CUPTI_STATE := $(O)/.cupti-state
CUPTI_FOUND := $(CUDA_HOME) $(HAVE_CUPTI_CONVERT) $(CUPTI_LIB)
$(CUPTI_STATE): FORCE
	@mkdir -p $(@D)
	@echo '$(CUPTI_FOUND)' | cmp -s - $@ 2>/dev/null || echo '$(CUPTI_FOUND)' > $@
FORCE:

ifneq ($(HAVE_CUPTI_CONVERT),)
CUPTI_CONVERT_OBJ := $(O)/lib/inject/cupti_convert.o

$(CUPTI_CONVERT_OBJ): lib/inject/cupti_convert.c lib/inject/cupti_convert.h \
		lib/tracekit.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(CUPTI_CFLAGS) -c -o $@ $<

# the converter's allocations failing in turn (as test_nomem's)
$(O)/tests/unit/test_cupti_convert: ALL_LDFLAGS += \
	$(addprefix -Wl$(comma)--wrap=,malloc calloc realloc strdup strndup)
# ... and the writer's definitions refused in turn
$(O)/tests/unit/test_cupti_convert: ALL_LDFLAGS += $(addprefix -Wl$(comma)--wrap=,\
	tk_writer_string tk_writer_stream tk_writer_device tk_writer_counter)
$(O)/tests/unit/test_cupti_convert: tests/unit/test_cupti_convert.c \
		tests/unit/tap.h tests/unit/helpers.h $(CUPTI_CONVERT_OBJ) $(STATIC_LIB)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -DTK_HAVE_CUPTI $(CUPTI_CFLAGS) -Itests/unit \
		$(ALL_LDFLAGS) -o $@ $< $(CUPTI_CONVERT_OBJ) $(STATIC_LIB) \
		$(DEPS_LIBS) $(CUPTI_LIBS)

$(CUPTI_BENCH): tests/bench/cupti-convert/bench.c $(CUPTI_CONVERT_OBJ) \
		$(STATIC_LIB) $(CMD_LINK)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(CUPTI_CFLAGS) -Icmd $(ALL_LDFLAGS) -o $@ $< \
		$(CUPTI_CONVERT_OBJ) $(CMD_LINK) $(STATIC_LIB) $(DEPS_LIBS) \
		$(CMD_DEPS_LIBS) $(CUPTI_LIBS)

tests bench: $(CUPTI_BENCH)
endif

ifneq ($(NVCC),)
$(CUDA_SAMPLE): tests/apps/cuda_sample.cu
	@mkdir -p $(@D)
	$(Q)$(NVCC) -O2 -std=c++17 -lineinfo -Werror all-warnings \
		-Xcompiler -Wall,-Wextra -o $@ $< -ldl

$(CUDA_LAUNCH_BENCH): tests/apps/cuda_launch_bench.cu
	@mkdir -p $(@D)
	$(Q)$(NVCC) -O2 -std=c++17 -Werror all-warnings -Xcompiler -Wall,-Wextra \
		-o $@ $<

tests bench: $(CUDA_SAMPLE) $(CUDA_LAUNCH_BENCH)
endif

$(O)/tests/unit/test_cupti_convert: $(CUPTI_STATE)

check-gpu: tests
	$(Q)O=$(O) tests/gpu/run.sh
	$(Q)O=$(O) tests/gpu/pytorch.sh

.PHONY: check-gpu FORCE

# ---- trace-record: the injection library and its test programs ------------
# libtracekit-inject.so is loaded into the recorded programs (through
# NVTX_INJECTION64_PATH), so it is never built with sanitizers: a
# sanitized library cannot load into an unsanitized program.  Its code
# runs under the sanitizers in tests/unit/test_inject.c instead, which
# links the same sources.  It carries its own hidden copy of the format
# writer and exports nothing but its entry points.

INJECT_SO := $(O)/lib/tracekit/libtracekit-inject.so
# CUDA activity (InitializeInjection, CUPTI's buffers, the converter) is
# built with CUPTI 13.0 headers only.  libcupti is not linked: the
# library loads it when the driver calls InitializeInjection (a program
# that only makes NVTX calls never pays for it), from the program's own
# copy, $$TRACEKIT_CUPTI, or the one found here ($(CUPTI_LIB)).
CUDA_INJECT_SRC := lib/inject/cuda.c lib/inject/cuda_activity.c \
                   lib/inject/cupti_load.c lib/inject/cupti_convert.c
INJECT_SRC := $(filter-out $(CUDA_INJECT_SRC),$(wildcard lib/inject/*.c))
ifeq ($(HAVE_NVTX),)
INJECT_SRC := $(filter-out lib/inject/nvtx.c,$(INJECT_SRC))
endif
ifneq ($(HAVE_CUPTI_CONVERT),)
INJECT_SRC += $(CUDA_INJECT_SRC)
INJECT_CUPTI_CFLAGS := $(CUPTI_CFLAGS) \
	-DTKI_CUPTI_PATH='"$(if $(CUPTI_LIB),$(realpath $(CUPTI_LIB)))"'
endif
INJECT_HDR := $(wildcard lib/inject/*.h) $(wildcard lib/*.h)
INJECT_OBJ := $(INJECT_SRC:lib/inject/%.c=$(O)/inject/%.o) \
              $(LIB_SRC:lib/%.c=$(O)/inject/lib/%.o)
NVTX_CFLAGS := $(if $(HAVE_NVTX),-DTK_HAVE_NVTX=1 -isystem $(CUDA_HOME)/include)
INJECT_CFLAGS := -std=c11 -D_GNU_SOURCE -Ilib -Ilib/inject $(WARN) -fPIC \
                 -fvisibility=hidden -pthread $(DEPS_CFLAGS) $(NVTX_CFLAGS) \
                 $(INJECT_CUPTI_CFLAGS) $(CFLAGS)
APP_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) -pthread $(NVTX_CFLAGS) $(CFLAGS)
APP_BINS := $(O)/tests/apps/no_ptrace $(O)/tests/apps/sigcount \
            $(O)/tests/apps/fake_driver \
            $(if $(HAVE_NVTX),$(O)/tests/apps/nvtx_sample $(O)/tests/apps/nvtx_bench)

ifneq ($(HAVE_NVTX),)
all: $(INJECT_SO)
endif
tests: $(APP_BINS)

$(O)/inject/%.o: lib/inject/%.c $(INJECT_HDR)
	@mkdir -p $(@D)
	$(Q)$(CC) $(INJECT_CFLAGS) -c -o $@ $<

$(O)/inject/lib/%.o: lib/%.c $(wildcard lib/*.h)
	@mkdir -p $(@D)
	$(Q)$(CC) $(INJECT_CFLAGS) -c -o $@ $<

# -z nodelete: once loaded it stays, so its fork and signal handlers
# never point into unmapped code.
$(INJECT_SO): $(INJECT_OBJ)
	@mkdir -p $(@D)
	$(Q)$(CC) -shared -Wl,-soname,libtracekit-inject.so -Wl,-z,nodelete \
		-Wl,--no-undefined -pthread $(LDFLAGS) -o $@ $^ \
		-Wl,--as-needed $(DEPS_LIBS) -ldl

# trace-record and its CUDA part know whether the library records CUDA.
$(O)/cmd/trace-record/trace-record.o: ALL_CFLAGS += $(NVTX_CFLAGS)
$(O)/cmd/trace-record/trace-record.o $(O)/cmd/trace-record/cuda.o: ALL_CFLAGS += \
	$(if $(HAVE_CUPTI_CONVERT),$(if $(HAVE_NVTX),-DTK_HAVE_CUPTI=1))
$(O)/cmd/trace-record/trace-record.o $(O)/cmd/trace-record/cuda.o: $(CUPTI_STATE)

$(O)/tests/unit/test_inject: tests/unit/test_inject.c tests/unit/tap.h \
		$(INJECT_SRC) $(INJECT_HDR) $(STATIC_LIB)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -pthread -Ilib/inject -Itests/unit $(NVTX_CFLAGS) \
		$(INJECT_CUPTI_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(INJECT_SRC) \
		$(STATIC_LIB) $(DEPS_LIBS) -ldl

# A stand-in for libcupti, for end-to-end tests of GPU recording without
# a GPU (tests/cli/trace-record-cuda.bats); the library loads it through
# TRACEKIT_CUPTI.
FAKE_CUPTI := $(O)/tests/apps/libfake_cupti.so
ifneq ($(HAVE_CUPTI_CONVERT),)
tests: $(FAKE_CUPTI)
endif
$(FAKE_CUPTI): tests/apps/fake_cupti.c
	@mkdir -p $(@D)
	$(Q)$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -fPIC -shared -pthread \
		$(CUPTI_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $<

# CUPTI alone, its records thrown away: the reference of
# tests/bench/record-cuda (needs libcupti to link).
CUPTI_NULL := $(O)/tests/apps/libcupti_null.so
ifneq ($(HAVE_CUPTI_CONVERT),)
ifneq ($(CUPTI_LIB),)
tests bench: $(CUPTI_NULL)
endif
endif
$(CUPTI_NULL): tests/apps/cupti_null.c
	@mkdir -p $(@D)
	$(Q)$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -fPIC -shared \
		$(CUPTI_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(CUPTI_LIBS)

# The CUDA session against a fake CUPTI (and libcupti's own buffer walk
# when it can be linked); a skipped test without CUPTI 13.0 or NVTX.
$(O)/tests/unit/test_cuda: tests/unit/test_cuda.c tests/unit/tap.h \
		$(INJECT_SRC) $(INJECT_HDR) $(STATIC_LIB) $(CUPTI_STATE)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -pthread -Ilib/inject -Itests/unit $(NVTX_CFLAGS) \
		$(INJECT_CUPTI_CFLAGS) \
		$(if $(HAVE_CUPTI_CONVERT),$(if $(HAVE_NVTX),-DTK_HAVE_CUPTI=1)) \
		$(ALL_LDFLAGS) -o $@ $< \
		$(if $(HAVE_CUPTI_CONVERT),$(if $(HAVE_NVTX),$(INJECT_SRC))) \
		$(STATIC_LIB) $(DEPS_LIBS) \
		$(if $(HAVE_CUPTI_CONVERT),$(if $(HAVE_NVTX),$(CUPTI_LIBS))) -ldl

# A syscall fault injector for the commands under test (LD_PRELOAD;
# tests/cli/faults.bats).  Never sanitized, like the programs it loads
# into may not be: those tests tell ASan not to mind the load order.
FAULTIO := $(O)/tests/apps/libfaultio.so
tests: $(FAULTIO)
$(FAULTIO): tests/apps/faultio.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(APP_CFLAGS) -fPIC -shared $(LDFLAGS) -o $@ $< -ldl

# Its sibling for the calls that create things (pipe, fork, memfd,
# signalfd, threads) and poll: the Nth call of one fails
# (tests/cli/trace-record-faults.bats).  Never sanitized either.
FAULTSYS := $(O)/tests/apps/libfaultsys.so
tests: $(FAULTSYS)
$(FAULTSYS): tests/apps/faultsys.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(APP_CFLAGS) -fPIC -shared $(LDFLAGS) -o $@ $< -ldl
# ... and with malloc, calloc and realloc too (not with a sanitizer)
FAULTALLOC := $(O)/tests/apps/libfaultalloc.so
tests: $(FAULTALLOC)
$(FAULTALLOC): tests/apps/faultsys.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(APP_CFLAGS) -DFAULTSYS_ALLOC -fPIC -shared $(LDFLAGS) -o $@ $< -ldl

# A driver that only says its version, for trace-record's probe
# (tests/cli/trace-record-cuda.bats, on LD_LIBRARY_PATH).
FAKE_LIBCUDA := $(O)/tests/apps/fakecuda/libcuda.so.1
tests: $(FAKE_LIBCUDA)
$(FAKE_LIBCUDA): tests/apps/fake_libcuda.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(APP_CFLAGS) -fPIC -shared -Wl,-soname,libcuda.so.1 $(LDFLAGS) -o $@ $<

$(O)/tests/apps/%: tests/apps/%.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(APP_CFLAGS) $(LDFLAGS) -o $@ $< -ldl -lm

.PHONY: install-inject uninstall-inject
install: install-inject
uninstall: uninstall-inject
install-inject: all
	$(if $(HAVE_NVTX),install -d $(DESTDIR)$(LIBDIR)/tracekit)
	$(if $(HAVE_NVTX),install -m 755 $(INJECT_SO) $(DESTDIR)$(LIBDIR)/tracekit)
uninstall-inject:
	rm -f $(DESTDIR)$(LIBDIR)/tracekit/libtracekit-inject.so
	-rmdir $(DESTDIR)$(LIBDIR)/tracekit 2>/dev/null

# ---- end of trace-record ----------------------------------------------------

# ---- coverage and mutants (by hand; not part of check) ----------------------
# make coverage: the tests of `make check` in their own tree (COV_O),
# built at -O0 with --coverage (warnings not errors: -O0 changes what gcc
# can prove), then line and branch coverage per folder
# (gcovr, Debian package gcovr).  gcov writes counters at exit() only, so
# -DTK_COVERAGE makes the processes that end otherwise write theirs
# first (tkp_coverage_dump() in lib/support.h: trace-record's child before
# exec and _exit, the injection library's fatal-signal handler, and, for
# the test apps' _exit, tki_coverage_dump() exported by the injection
# library).  Nothing changes in other builds.  SIGKILL still loses them.
# A failing test is shown by the run; the table is printed anyway, and
# gcovr's summary kept in $(COV_O).
# make mutate: tests/mutate/run (MUTATE_ARGS=..., see its --help), small
# bugs put in lib/ and cmd/analysis/, each built in a worktree of HEAD,
# and whether their tests notice.
COV_O := build-cov
MUTATE_ARGS ?=
coverage:
	$(Q)command -v gcovr >/dev/null || { echo 'coverage: gcovr not found (apt-get install gcovr)'; exit 2; }
	$(Q)$(MAKE) --no-print-directory O=$(COV_O) \
		CFLAGS='-O0 -g --coverage -Wno-error -DTK_COVERAGE' LIB_CFLAGS= \
		LDFLAGS=--coverage tests
	$(Q)find $(COV_O) -name '*.gcda' -delete
	-$(Q)O=$(COV_O) tests/run-tests.sh
	@# the second copy of lib/rpool.c test_parallel links (TK_RPOOL_SCHEDULE)
	@# has its functions at other lines: gcovr 5 cannot merge it with the
	@# library's, so it is left out (the library's own copy is counted)
	$(Q)rm -f $(COV_O)/tests/unit/rpool_schedule.gcda $(COV_O)/tests/unit/rpool_schedule.gcno
	$(Q)tests/tools/coverage-table $(COV_O) --json $(COV_O)/coverage.json

mutate:
	$(Q)tests/mutate/run $(MUTATE_ARGS)

.PHONY: coverage mutate

# ---- demo -------------------------------------------------------------------

demo:
	$(Q)tests/demo.sh

# ---- install ----------------------------------------------------------------

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) \
		$(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 \
		$(DESTDIR)$(MANDIR)/man5
	install -m 755 $(CMD_BINS) $(DESTDIR)$(BINDIR)
	install -m 644 $(STATIC_LIB) $(DESTDIR)$(LIBDIR)
	install -m 755 $(SHARED_LIB) $(DESTDIR)$(LIBDIR)
	ln -sf libtracekit.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libtracekit.so
	install -m 644 lib/tracekit.h $(DESTDIR)$(INCLUDEDIR)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' \
		tracekit.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/tracekit.pc
	for m in $(MANS); do install -m 644 $$m \
		$(DESTDIR)$(MANDIR)/man$${m##*.}; done

uninstall:
	rm -f $(CMDS:%=$(DESTDIR)$(BINDIR)/%)
	rm -f $(DESTDIR)$(LIBDIR)/libtracekit.a \
		$(DESTDIR)$(LIBDIR)/libtracekit.so.$(SOVERSION) \
		$(DESTDIR)$(LIBDIR)/libtracekit.so
	rm -f $(DESTDIR)$(INCLUDEDIR)/tracekit.h \
		$(DESTDIR)$(PKGCONFIGDIR)/tracekit.pc
	for m in $(notdir $(MANS)); do \
		rm -f $(DESTDIR)$(MANDIR)/man$${m##*.}/$$m; done

clean:
	rm -rf build build-san-* build-fuzz

help:
	@echo 'Targets:'
	@echo '  all          libraries and commands (default)'
	@echo '  check        build with -Werror and run every test'
	@echo '  check SAN=address,undefined   the same under sanitizers'
	@echo '  check-valgrind   command tests under valgrind'
	@echo '  check-tsan       threaded paths under ThreadSanitizer (O=build-san-tsan)'
	@echo '  check-layers     includes and calls only go down the layers'
	@echo '  demo         record a sample program, show its summary'
	@echo '  bench        run the benchmarks in tests/bench'
	@echo '  fuzz, fuzz-smoke [FUZZ_TIME=s]   libFuzzer targets (clang)'
	@echo '  lint-man     mandoc -Tlint on every man page'
	@echo '  coverage     line and branch coverage of the tests per folder (O=build-cov)'
	@echo '  mutate [MUTATE_ARGS=...]   mutants of lib/ and cmd/analysis/ (tests/mutate/run --help)'
	@echo '  install, uninstall [PREFIX= DESTDIR=]'
	@echo '  clean'
	@echo 'Variables: O=build-dir V=1 CUDA_HOME=$(CUDA_HOME) SAN=...'
