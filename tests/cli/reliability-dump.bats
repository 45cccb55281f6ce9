#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-dump against bad input, bad output and closed pipes: the reliability
# matrix of tests/cli/reliability.bash, one test per cell.

load helpers
load reliability

setup_file() {
	rel_fixtures
}

@test "trace-dump: empty input" { cell_empty dump; }
@test "trace-dump: wrong magic" { cell_magic dump; }
@test "trace-dump: future format version and features" { cell_future_version dump; }
@test "trace-dump: truncated at every kind of offset" { cell_truncated dump; }
@test "trace-dump: flipped bits in every header field and in payloads" { cell_flipped dump; }
@test "trace-dump: a directory" { cell_directory dump; }
@test "trace-dump: a missing file" { cell_missing dump; }
@test "trace-dump: a named pipe, whole and cut short" { cell_fifo dump; }
@test "trace-dump: strings of 1 MiB" { cell_huge dump; }
@test "trace-dump: invalid UTF-8 in every string" { cell_utf8 dump; }
@test "trace-dump: concatenated traces, whole and cut short" { cell_cat dump; }
@test "trace-dump: a damaged input among good ones" { cell_among_good dump; }
@test "trace-dump: output to a full disk" { cell_dev_full dump; }
@test "trace-dump: standard output closed" { cell_closed_stdout dump; }
@test "trace-dump: the reader of the output goes away" { cell_epipe dump; }
