# SPDX-License-Identifier: MIT
# Structural checks of Chrome Trace Event JSON, written from the format's
# rules, not from trace-to-chrome's code.  Use: jq -L tests/cli 'include "chrome"; ...'
# Times are compared in integer nanoseconds: round(ts * 1000).

def ns: . * 1000 | round;

# Events missing a field their phase needs, or with one of the wrong type.
def bad_fields:
  [ .traceEvents[]
    | select(
        (.ph | type) != "string"
        or (.pid | type) != "number"
        or (if .ph == "X" then
              (.name | type) != "string" or (.cat | type) != "string"
              or (.tid | type) != "number" or (.ts | type) != "number"
              or (.dur | type) != "number" or .dur < 0
            elif .ph == "i" then
              (.name | type) != "string" or (.ts | type) != "number"
              or (.s | IN("t", "p", "g") | not)
            elif .ph == "C" then
              (.name | type) != "string" or (.ts | type) != "number"
              or (.args | type) != "object" or (.args | length) == 0
              or ([.args[] | type] | all(. == "number") | not)
            elif .ph == "b" or .ph == "e" then
              (.name | type) != "string" or (.cat | type) != "string"
              or (.id | type) != "number" or (.ts | type) != "number"
            elif .ph == "s" or .ph == "t" or .ph == "f" then
              (.id | type) != "number" or (.ts | type) != "number"
              or (.tid | type) != "number" or (.cat | type) != "string"
              or (.name | type) != "string"
              or (.ph == "f" and .bp != "e")
            elif .ph == "M" then
              (.name | IN("process_name", "process_sort_index", "process_labels",
                          "thread_name", "thread_sort_index") | not)
              or (.args | type) != "object"
            else true end))
  ];

# Pairs of complete events on one track that overlap without nesting.
# Sorted by begin, longer first; a stack of open ends per track.
def nesting_errors:
  [ .traceEvents[] | select(.ph == "X")
    | {k: "\(.pid)/\(.tid)", b: (.ts | ns), e: ((.ts | ns) + (.dur | ns)), name} ]
  | group_by(.k)
  | map(sort_by(.b, -.e)
        | reduce .[] as $x ({stack: [], bad: []};
            .stack |= map(select(.e > $x.b))
            | if (.stack | length) > 0 and .stack[-1].e < $x.e
              then .bad += [{track: $x.k, inner: $x.name, outer: .stack[-1].name}]
              else . end
            | .stack += [$x])
        | .bad[])
  | flatten;

# Phases that must not share a track with X events.
def b_e_mixed: [ .traceEvents[] | select(.ph == "B" or .ph == "E") ] | length;

# Flow ids without exactly one start and one end.
def unpaired_flows:
  [ .traceEvents[] | select(.ph == "s" or .ph == "f") ]
  | group_by([.cat, .name, .id])
  | map(select((map(.ph) | sort) != ["f", "s"]) | .[0].id);

# Flow ends with no complete event on their track enclosing them.  Per
# track, sweep intervals and flow points in time order: a point is
# enclosed when some interval that began at or before it ends at or
# after it, i.e. when the largest end so far reaches it.
def unbound_flows:
  [ .traceEvents[]
    | select(.ph == "X" or .ph == "s" or .ph == "t" or .ph == "f")
    | {k: "\(.pid)/\(.tid)", t: (.ts | ns), x: (.ph == "X"),
       e: (if .ph == "X" then (.ts | ns) + (.dur | ns) else null end), id} ]
  | group_by(.k)
  | map(sort_by(.t, (if .x then 0 else 1 end))
        | reduce .[] as $i ({max: null, bad: []};
            if $i.x then .max = ([.max, $i.e] | max)
            elif .max == null or .max < $i.t then .bad += [$i.id]
            else . end)
        | .bad[]);

# Async begin/end events that do not pair up by (cat, name, id).
def unpaired_async:
  [ .traceEvents[] | select(.ph == "b" or .ph == "e") ]
  | group_by([.cat, .name, .id, .pid])
  | map(select((map(.ph) | sort) != ["b", "e"]
               or (map(select(.ph == "b"))[0].ts > map(select(.ph == "e"))[0].ts))
        | .[0].id);
