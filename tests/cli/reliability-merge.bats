#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-merge against bad input, bad output and closed pipes: the reliability
# matrix of tests/cli/reliability.bash, one test per cell.

load helpers
load reliability

setup_file() {
	rel_fixtures
}

@test "trace-merge: empty input" { cell_empty merge; }
@test "trace-merge: wrong magic" { cell_magic merge; }
@test "trace-merge: future format version and features" { cell_future_version merge; }
@test "trace-merge: truncated at every kind of offset" { cell_truncated merge; }
@test "trace-merge: flipped bits in every header field and in payloads" { cell_flipped merge; }
@test "trace-merge: a directory" { cell_directory merge; }
@test "trace-merge: a missing file" { cell_missing merge; }
@test "trace-merge: a named pipe, whole and cut short" { cell_fifo merge; }
@test "trace-merge: strings of 1 MiB" { cell_huge merge; }
@test "trace-merge: invalid UTF-8 in every string" { cell_utf8 merge; }
@test "trace-merge: concatenated traces, whole and cut short" { cell_cat merge; }
@test "trace-merge: a damaged input among good ones" { cell_among_good merge; }
@test "trace-merge: output to a full disk" { cell_dev_full merge; }
@test "trace-merge: standard output closed" { cell_closed_stdout merge; }
@test "trace-merge: the reader of the output goes away" { cell_epipe merge; }
@test "trace-merge: -o to a full disk" { cell_dev_full_option merge; }
