#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""same_rows.py EXPECTED.jsonl GOT.jsonl [FLOAT_COLUMN...]: the two files
hold the same rows (JSON arrays of text or null, as pqrand writes them
and query.mjs prints them), in the same order; the numbered columns are
compared as numbers (a double's text differs between printers).  Prints
the first difference and exits 1."""
import json
import sys


def main():
    exp = [json.loads(l) for l in open(sys.argv[1], encoding='utf-8')]
    got = [json.loads(l) for l in open(sys.argv[2], encoding='utf-8')]
    floats = {int(c) for c in sys.argv[3:]}
    if len(exp) != len(got):
        sys.exit(f'{len(got)} rows, expected {len(exp)}')
    for n, (e, g) in enumerate(zip(exp, got)):
        if len(e) != len(g):
            sys.exit(f'row {n}: {len(g)} values, expected {len(e)}')
        for c, (x, y) in enumerate(zip(e, g)):
            same = (x == y or (c in floats and x is not None and y is not None
                               and float(x) == float(y)))
            if not same:
                sys.exit(f'row {n} column {c}: {y!r}, expected {x!r}')
    print(f'{len(exp)} rows the same')


main()
