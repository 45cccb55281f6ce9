#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-to-chrome against bad input, bad output and closed pipes: the reliability
# matrix of tests/cli/reliability.bash, one test per cell.

load helpers
load reliability

setup_file() {
	rel_fixtures
}

@test "trace-to-chrome: empty input" { cell_empty chrome; }
@test "trace-to-chrome: wrong magic" { cell_magic chrome; }
@test "trace-to-chrome: future format version and features" { cell_future_version chrome; }
@test "trace-to-chrome: truncated at every kind of offset" { cell_truncated chrome; }
@test "trace-to-chrome: flipped bits in every header field and in payloads" { cell_flipped chrome; }
@test "trace-to-chrome: a directory" { cell_directory chrome; }
@test "trace-to-chrome: a missing file" { cell_missing chrome; }
@test "trace-to-chrome: a named pipe, whole and cut short" { cell_fifo chrome; }
@test "trace-to-chrome: strings of 1 MiB" { cell_huge chrome; }
@test "trace-to-chrome: invalid UTF-8 in every string" { cell_utf8 chrome; }
@test "trace-to-chrome: concatenated traces, whole and cut short" { cell_cat chrome; }
@test "trace-to-chrome: a damaged input among good ones" { cell_among_good chrome; }
@test "trace-to-chrome: output to a full disk" { cell_dev_full chrome; }
@test "trace-to-chrome: standard output closed" { cell_closed_stdout chrome; }
@test "trace-to-chrome: the reader of the output goes away" { cell_epipe chrome; }
@test "trace-to-chrome: -o to a full disk" { cell_dev_full_option chrome; }
