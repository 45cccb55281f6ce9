#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-stats against bad input, bad output and closed pipes: the reliability
# matrix of tests/cli/reliability.bash, one test per cell.

load helpers
load reliability

setup_file() {
	rel_fixtures
}

@test "trace-stats: empty input" { cell_empty stats; }
@test "trace-stats: wrong magic" { cell_magic stats; }
@test "trace-stats: future format version and features" { cell_future_version stats; }
@test "trace-stats: truncated at every kind of offset" { cell_truncated stats; }
@test "trace-stats: flipped bits in every header field and in payloads" { cell_flipped stats; }
@test "trace-stats: a directory" { cell_directory stats; }
@test "trace-stats: a missing file" { cell_missing stats; }
@test "trace-stats: a named pipe, whole and cut short" { cell_fifo stats; }
@test "trace-stats: strings of 1 MiB" { cell_huge stats; }
@test "trace-stats: invalid UTF-8 in every string" { cell_utf8 stats; }
@test "trace-stats: concatenated traces, whole and cut short" { cell_cat stats; }
@test "trace-stats: a damaged input among good ones" { cell_among_good stats; }
@test "trace-stats: output to a full disk" { cell_dev_full stats; }
@test "trace-stats: standard output closed" { cell_closed_stdout stats; }
@test "trace-stats: the reader of the output goes away" { cell_epipe stats; }
