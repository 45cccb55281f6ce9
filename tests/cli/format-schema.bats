#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The attribute columns of each kind, as the library reads and writes
# them (tests/tools/schema), are those tracekit-format(5) documents, by
# number and encoding.  Every trace ever written depends on the numbers:
# a column renumbered would still round-trip in one build, and every
# test that writes then reads would pass, while older files would lose
# that attribute.

load helpers

@test "every kind's attribute numbers and encodings are tracekit-format(5)'s" {
	run -0 python3 - "$TK_SRC/man/tracekit-format.5" <(schema) <<'PY'
import re, sys
man = open(sys.argv[1]).read().split("\n")
start = next(i for i, l in enumerate(man) if "The other attributes of each kind" in l)
doc, kinds, text = {}, None, []
def close():
    if kinds is None:
        return
    t = " ".join(text)
    while True:  # parentheticals hold examples and value lists, not attributes
        u = re.sub(r"\([^()]*\)", " ", t)
        if u == t:
            break
        t = u
    found = {(int(n), e) for n, e in
             re.findall(r"(?:^|[,.:]\s*)(\d+) [^,.;:]*? (U|S|D|F|STR|B)(?=\s*[,.]|\s*$)", t)}
    for k in kinds:
        doc[k] = found
for line in man[start + 1:]:
    if line.startswith(".It "):
        close()
        kinds = [int(k) for k in re.findall(r"(\d+) [a-z_]+", line[4:])]
        text = []
    elif line.startswith(".El"):
        close()
        break
    elif kinds is not None:
        text.append(re.sub(r"^\.[A-Z][a-z]\s*", "", line))
code = {}
for line in open(sys.argv[2]):
    k, a, e = line.split()
    code.setdefault(int(k), set()).add((int(a), e))
bad = 0
for k in sorted(set(doc) | set(code)):
    if doc.get(k, set()) != code.get(k, set()):
        bad = 1
        print("kind %d: man page %s, library %s" % (k, sorted(doc.get(k, set())),
                                                    sorted(code.get(k, set()))))
print("kinds", len(code), "attributes", sum(len(v) for v in code.values()))
sys.exit(bad)
PY
	[[ "$output" == "kinds 15 attributes "* ]]
}
