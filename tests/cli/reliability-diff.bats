#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-diff against bad input, bad output and closed pipes: the reliability
# matrix of tests/cli/reliability.bash, one test per cell.

load helpers
load reliability

setup_file() {
	rel_fixtures
}

@test "trace-diff: empty input" { cell_empty diff; }
@test "trace-diff: wrong magic" { cell_magic diff; }
@test "trace-diff: future format version and features" { cell_future_version diff; }
@test "trace-diff: truncated at every kind of offset" { cell_truncated diff; }
@test "trace-diff: flipped bits in every header field and in payloads" { cell_flipped diff; }
@test "trace-diff: a directory" { cell_directory diff; }
@test "trace-diff: a missing file" { cell_missing diff; }
@test "trace-diff: a named pipe, whole and cut short" { cell_fifo diff; }
@test "trace-diff: strings of 1 MiB" { cell_huge diff; }
@test "trace-diff: invalid UTF-8 in every string" { cell_utf8 diff; }
@test "trace-diff: concatenated traces, whole and cut short" { cell_cat diff; }
@test "trace-diff: a damaged input among good ones" { cell_among_good diff; }
@test "trace-diff: output to a full disk" { cell_dev_full diff; }
@test "trace-diff: standard output closed" { cell_closed_stdout diff; }
@test "trace-diff: the reader of the output goes away" { cell_epipe diff; }
