#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check trace-to-perfetto's output against the .tkt it came from.

An independent reading: the Perfetto files are decoded by protoc with
Perfetto's own schema (`protoc --decode=perfetto.protos.Trace`), and this
script rebuilds the timeline from that text the way Perfetto's model
defines it -- interned strings per sequence, the incremental clock,
begin/end pairs as a stack per track, flow ids -- then compares it with
the events of the .tkt as `trace-dump --json` lists them.

    perfetto_check.py [--proto FILE] [--subset] [--no-flows]
                      DUMP.jsonl PERFETTO... : compare, exit 1 on a mismatch
    perfetto_check.py --events [--proto FILE] PERFETTO... : print the
        rebuilt events as JSON lines (kind, ts, dur, name, cat, track,
        args, flows), for tests to query

Checked: every file decodes; each file is a sequence of its own that
clears its state first; every end closes an open slice on its track and
no slice is left open at the end of a file; slices on each track nest;
the events per kind, with their begin times, durations and names, are
those of the .tkt (all of them, or with --subset a part of them); counter
samples have the .tkt's values; kernels' launch configurations are the
.tkt's; each flow starts at an API call and ends at the GPU work with its
correlation, and every correlation with both a call and GPU work has its
flow; imported flow ends are all there.
"""
import collections
import json
import os
import re
import subprocess
import sys

GPU_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
API_CATS = {"cuda_runtime", "cuda_driver", "cuda_api"}
SLICE_CATS = dict(GPU_CATS, cuda_sync="sync", overhead="overhead",
                  process="process", run="run")
INSTANT_CATS = {"cuda_memory": "memory", "dropped": "dropped"}


class Bad(Exception):
    pass


# ---- protoc text format ---------------------------------------------------

def unescape(s):
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        n = s[i + 1]
        if n in "01234567":
            j = i + 1
            while j < len(s) and j < i + 4 and s[j] in "01234567":
                j += 1
            out.append(int(s[i + 1:j], 8))
            i = j
        elif n == "x":
            j = i + 2
            while j < len(s) and j < i + 4 and s[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(s[i + 2:j], 16))
            i = j
        else:
            out += {"n": b"\n", "t": b"\t", "r": b"\r", "\\": b"\\", "'": b"'",
                    '"': b'"', "a": b"\a", "b": b"\b", "f": b"\f",
                    "v": b"\v"}.get(n, n.encode())
            i += 2
    return out.decode("utf-8", "replace")


def scalar(v):
    if v.startswith('"'):
        return unescape(v[1:-1])
    if v in ("true", "false"):
        return v == "true"
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return v  # an enum name


def packets(text_lines):
    """Yield each top-level packet as nested dicts of lists."""
    stack = []
    for line in text_lines:
        line = line.strip()
        if not line:
            continue
        if line.endswith("{"):
            key = line[:-1].strip()
            node = {}
            if stack:
                stack[-1].setdefault(key, []).append(node)
            stack.append(node)
        elif line == "}":
            node = stack.pop()
            if not stack:
                yield node
        else:
            key, _, value = line.partition(":")
            stack[-1].setdefault(key.strip(), []).append(scalar(value.strip()))
    if stack:
        raise Bad("protoc output ends inside a message")


def one(msg, key, default=None):
    v = msg.get(key)
    return v[0] if v else default


def decode(path, proto):
    inc = os.path.dirname(proto)
    with open(path, "rb") as f:
        p = subprocess.run(["protoc", "--decode=perfetto.protos.Trace", "-I", inc,
                            os.path.basename(proto)], stdin=f,
                           capture_output=True, text=True)
    if p.returncode != 0:
        raise Bad("%s: protoc cannot decode it: %s" % (path, p.stderr.strip()))
    return p.stdout.splitlines()


# ---- Perfetto's model -------------------------------------------------------

class Sequence:
    """The state of the one packet sequence of a file."""

    def __init__(self, path):
        self.path = path
        self.cleared = False
        self.interned = {}
        self.clocks = {}          # sequence clock id -> [value, ns per unit, incremental]
        self.default_clock = None

    def start(self, pkt):
        if not one(pkt, "sequence_flags", 0) & 1:
            raise Bad("%s: the first packet does not clear the sequence" % self.path)
        self.cleared = True
        self.interned = collections.defaultdict(dict)
        snap = one(pkt, "clock_snapshot")
        boot = None
        if snap:
            clocks = {one(c, "clock_id"): c for c in snap.get("clocks", [])}
            boot = one(clocks.get(6, {}), "timestamp")
            for cid, c in clocks.items():
                if cid < 64:
                    continue
                mult = one(c, "unit_multiplier_ns", 1)
                # our snapshots read every clock at the same instant
                if boot is None or one(c, "timestamp") * mult != boot:
                    raise Bad("%s: clock %d does not read the snapshot's BOOTTIME" %
                              (self.path, cid))
                self.clocks[cid] = [one(c, "timestamp"), mult,
                                    one(c, "is_incremental", False)]
        self.defaults(pkt)

    def defaults(self, pkt):
        """TracePacketDefaults may come in any packet; they apply to it too."""
        d = one(pkt, "trace_packet_defaults")
        if d:
            self.default_clock = one(d, "timestamp_clock_id")

    def intern(self, pkt):
        data = one(pkt, "interned_data")
        if not data:
            return
        for table, field in (("event_names", "name"), ("event_categories", "name"),
                             ("debug_annotation_names", "name"),
                             ("debug_annotation_string_values", "str")):
            for e in data.get(table, []):
                self.interned[table][one(e, "iid")] = one(e, field)

    def lookup(self, table, iid):
        try:
            return self.interned[table][iid]
        except KeyError:
            raise Bad("%s: iid %d of %s used before it is defined" %
                      (self.path, iid, table))

    def time(self, pkt):
        ts = one(pkt, "timestamp")
        clock = one(pkt, "timestamp_clock_id", self.default_clock)
        if clock is not None and clock >= 64:
            if clock not in self.clocks or not self.clocks[clock][2]:
                raise Bad("%s: incremental timestamp on clock %s, not defined so" %
                          (self.path, clock))
            c = self.clocks[clock]
            c[0] += ts
            return c[0] * c[1]
        if clock in (None, 6):
            return ts
        raise Bad("%s: unexpected clock %s" % (self.path, clock))


def annotation_value(seq, a):
    if "double_value" in a:
        return float(a["double_value"][0])  # protoc writes 1000.0 as "1000"
    for k in ("uint_value", "int_value", "bool_value", "string_value", "pointer_value"):
        if k in a:
            return a[k][0]
    if "string_value_iid" in a:
        return seq.lookup("debug_annotation_string_values", a["string_value_iid"][0])
    if "dict_entries" in a:
        return {annotation_name(seq, e): annotation_value(seq, e)
                for e in a["dict_entries"]}
    if "array_values" in a:
        return [annotation_value(seq, e) for e in a["array_values"]]
    return None


def annotation_name(seq, a):
    if "name_iid" in a:
        return seq.lookup("debug_annotation_names", a["name_iid"][0])
    return one(a, "name", "")


class Timeline:
    def __init__(self):
        self.tracks = {}          # uuid -> descriptor dict, over all files
        self.events = []
        self.attributes = {}
        self.flows_paired = []    # (source event, target event, id)
        self.files = 0

    def track_name(self, uuid):
        d = self.tracks.get(uuid)
        if d is None:
            return None
        if "thread" in d:
            return one(d["thread"][0], "thread_name", "")
        if "process" in d:
            return one(d["process"][0], "process_name", "")
        return one(d, "name", "")

    def read_file(self, path, lines):
        """Tokenize in file order (interning, clocks), as trace processor
        does, then parse the track events in timestamp order (stable)."""
        self.files += 1
        seq = Sequence(path)
        last_ts = None
        pending = []
        for n, pkt in enumerate(packets(lines)):
            if one(pkt, "trusted_packet_sequence_id") is None:
                raise Bad("%s: packet %d has no sequence id" % (path, n))
            if n == 0:
                seq.start(pkt)
            elif one(pkt, "sequence_flags", 0) & 1:
                raise Bad("%s: the sequence is cleared again at packet %d" % (path, n))
            else:
                seq.defaults(pkt)
            seq.intern(pkt)
            if "track_descriptor" in pkt:
                d = pkt["track_descriptor"][0]
                self.tracks[one(d, "uuid")] = d
            for a in one(pkt, "trace_attributes", {}).get("attribute", []):
                self.attributes.setdefault(one(a, "key"), []).append(
                    one(a, "string_value", one(a, "long_value")))
            if "track_event" not in pkt:
                continue
            ts = seq.time(pkt)
            if one(pkt, "timestamp_clock_id") is None:
                if last_ts is not None and ts < last_ts:
                    raise Bad("%s: incremental time goes back at packet %d" % (path, n))
                last_ts = ts
            pending.append((ts, len(pending), self.tokenize(seq, pkt["track_event"][0], ts)))
        pending.sort(key=lambda p: (p[0], p[1]))
        open_slices = collections.defaultdict(list)
        open_flows = {}
        for _, _, ev in pending:
            self.parse(ev, open_slices, open_flows)
        for uuid, st in open_slices.items():
            if st:
                raise Bad("%s: %d slices left open on track %s (%s)" %
                          (path, len(st), uuid, self.track_name(uuid)))

    def tokenize(self, seq, te, ts):
        kind = one(te, "type")
        uuid = one(te, "track_uuid")
        if uuid not in self.tracks:
            raise Bad("track %s used before its descriptor" % uuid)
        ev = {"type": kind, "ts": ts, "track": uuid, "track_name": self.track_name(uuid),
              "file": self.files}
        if kind == "TYPE_COUNTER":
            ev["value"] = one(te, "double_counter_value", one(te, "counter_value"))
            return ev
        if kind == "TYPE_SLICE_END":
            return ev
        ev["name"] = (seq.lookup("event_names", te["name_iid"][0]) if "name_iid" in te
                      else one(te, "name", ""))
        cats = [seq.lookup("event_categories", i) for i in te.get("category_iids", [])]
        ev["cat"] = cats[0] if cats else one(te, "categories", "")
        ev["args"] = {annotation_name(seq, a): annotation_value(seq, a)
                      for a in te.get("debug_annotations", [])}
        ev["dur"] = 0
        ev["flow_out"] = list(te.get("flow_ids", []))
        ev["flow_in"] = list(te.get("terminating_flow_ids", []))
        if kind not in ("TYPE_SLICE_BEGIN", "TYPE_INSTANT"):
            raise Bad("unexpected TrackEvent type %s" % kind)
        return ev

    def parse(self, ev, open_slices, open_flows):
        kind, uuid, ts = ev["type"], ev["track"], ev["ts"]
        if kind == "TYPE_SLICE_END":
            if not open_slices[uuid]:
                raise Bad("a slice end at %d on track %s (%s) with no slice open" %
                          (ts, uuid, self.track_name(uuid)))
            begin = open_slices[uuid].pop()
            begin["dur"] = ts - begin["ts"]
            return
        self.events.append(ev)
        if kind == "TYPE_COUNTER":
            return
        for fid in ev["flow_in"]:
            src = open_flows.pop(fid, None)
            if src is not None:
                self.flows_paired.append((src, ev, fid))
        for fid in ev["flow_out"]:
            open_flows[fid] = ev
        if kind == "TYPE_SLICE_BEGIN":
            open_slices[uuid].append(ev)

    def kind_of(self, ev):
        t = ev["type"]
        if t == "TYPE_COUNTER":
            return "counter"
        cat = ev["cat"]
        if t == "TYPE_INSTANT":
            if ev["flow_out"] or ev["flow_in"]:
                return "flow"
            return INSTANT_CATS.get(cat, "mark")
        if cat in API_CATS:
            return "api"
        if cat in SLICE_CATS:
            return SLICE_CATS[cat]
        base = ev["track_name"] or ""
        if base == "async ranges" or base.startswith("async ranges (overlap"):
            return "async_range"
        return "range"


# ---- checks -----------------------------------------------------------------------

def check_nesting(tl):
    by_track = collections.defaultdict(list)
    for ev in tl.events:
        if ev["type"] == "TYPE_SLICE_BEGIN":
            by_track[ev["track"]].append((ev["ts"], -ev["dur"], ev["ts"] + ev["dur"]))
    for uuid, spans in by_track.items():
        spans.sort()
        stack = []
        for b, _, e in spans:
            while stack and stack[-1] <= b:
                stack.pop()
            if stack and stack[-1] < e:
                raise Bad("slices overlap without nesting on track %s (%s) at %d" %
                          (uuid, tl.track_name(uuid), b))
            stack.append(e)


def tkt_key(e):
    return (e["kind"], e["ts"], e["dur"], e["name"] if e["name"] else None)


def pf_key(tl, ev):
    kind = tl.kind_of(ev)
    return (kind, ev["ts"], ev.get("dur", 0), ev.get("name"))


def compare_events(tl, dump, subset):
    want = collections.Counter()
    for e in dump:
        if e["kind"] == "counter":
            want[("counter", e["ts"], 0, e["value"])] += 1
        else:
            want[tkt_key(e)] += 1
    got = collections.Counter()
    for ev in tl.events:
        k = pf_key(tl, ev)
        if k[0] == "counter":
            k = ("counter", ev["ts"], 0, ev["value"])
        got[k] += 1
    # the .tkt's unnamed events get a name of the kind's: compare them by
    # kind and times
    for k in list(want):
        if k[0] != "counter" and k[3] is None:
            n = want.pop(k)
            for g in [g for g in got if g[:3] == k[:3]]:
                take = min(n, got[g])
                got[g] -= take
                n -= take
                if not got[g]:
                    del got[g]
            if n and not subset:
                raise Bad("%d unnamed %s events at %d missing" % (n, k[0], k[1]))
    missing = want - got
    extra = got - want
    if extra:
        raise Bad("%d events not in the .tkt, e.g. %r" % (sum(extra.values()),
                                                           sorted(extra)[:3]))
    if missing and not subset:
        raise Bad("%d events of the .tkt missing, e.g. %r" % (sum(missing.values()),
                                                               sorted(missing)[:3]))
    return got


def imported_value(v, depth=0):
    """An imported JSON value as trace-to-perfetto's annotations hold it."""
    if v is None:
        return "null"
    if isinstance(v, list):
        if not v or depth >= 9:
            return "[]"
        return [imported_value(x, depth + 1) for x in v]
    if isinstance(v, dict):
        if not v or depth >= 9:
            return "{}"
        return {k: imported_value(x, depth + 1) for k, x in v.items()}
    return v


def check_args(tl, dump):
    """Every event's imported args are among its annotations, each key with
    the value and type the .tkt holds (events matched by kind, times, name;
    those with the same key take the args the .tkt gives them in any order)."""
    by_key = collections.defaultdict(list)
    for ev in tl.events:
        if ev["type"] != "TYPE_COUNTER":
            by_key[pf_key(tl, ev)].append(ev["args"])
    checked = 0
    for e in dump:
        args = e.get("args")
        if not isinstance(args, dict) or not args or not e["name"] or e["kind"] == "counter":
            continue
        want = {k: imported_value(v) for k, v in args.items()}
        cands = by_key.get(tkt_key(e), [])
        for i, got in enumerate(cands):
            if all(k in got and got[k] == v and type(got[k]) is type(v)
                   for k, v in want.items()):
                del cands[i]
                break
        else:
            raise Bad("%s %r at %d: args %s not among its annotations (%s)" %
                      (e["kind"], e["name"], e["ts"], json.dumps(want, sort_keys=True),
                       [json.dumps(c, sort_keys=True) for c in cands[:2]]))
        checked += 1
    return checked


def check_kernels(tl, dump):
    want = collections.Counter()
    for e in dump:
        if e["kind"] == "kernel":
            want[(e["ts"], "grid %dx%dx%d, block %dx%dx%d, %d registers" %
                  tuple(e["grid"] + e["block"] + [e["registers"]]),
                  e.get("shared_static", 0), e.get("shared_dynamic", 0))] += 1
    got = collections.Counter()
    for ev in tl.events:
        if tl.kind_of(ev) == "kernel":
            m = re.match(r"(grid \d+x\d+x\d+, block \d+x\d+x\d+, \d+ registers), "
                         r"shared memory (\d+)\+(\d+)", ev["args"].get("launch", ""))
            if not m:
                raise Bad("kernel %r has no launch configuration" % ev["name"])
            got[(ev["ts"], m.group(1), int(m.group(2)), int(m.group(3)))] += 1
    if got - want:
        raise Bad("kernel launch configurations differ from the .tkt's: %r" %
                  sorted(got - want)[:2])


def check_flows(tl, dump):
    # the file each event went to (a --split series pairs flows in a file)
    where = {}
    for ev in tl.events:
        if ev["type"] == "TYPE_SLICE_BEGIN":
            where[(tl.kind_of(ev), ev["ts"], ev["name"])] = ev["file"]
    apis = collections.defaultdict(set)
    gpu = collections.defaultdict(set)
    for e in dump:
        if e.get("correlation") and e["kind"] in ("api", "kernel", "memcpy", "memset"):
            f = where.get((e["kind"], e["ts"], e["name"]))
            (apis if e["kind"] == "api" else gpu)[e["correlation"]].add(f)
    expected = {c for c in apis if c in gpu and apis[c] & gpu[c]}
    seen = set()
    for src, dst, fid in tl.flows_paired:
        if tl.kind_of(src) == "flow":
            continue
        if tl.kind_of(src) != "api" or tl.kind_of(dst) not in ("kernel", "memcpy", "memset"):
            raise Bad("a flow from %r to %r is not from a call to GPU work" %
                      (src["name"], dst["name"]))
        corr = dst["args"].get("correlation")
        if corr != fid & ((1 << 47) - 1):
            raise Bad("flow %x ends at GPU work of correlation %s" % (fid, corr))
        seen.add(corr)
    if expected - seen:
        raise Bad("%d correlations with a call and GPU work have no flow, e.g. %r" %
                  (len(expected - seen), sorted(expected - seen)[:3]))
    ends = sum(1 for e in dump if e["kind"] == "flow")
    got = sum(1 for ev in tl.events if tl.kind_of(ev) == "flow")
    if got != ends:
        raise Bad("%d imported flow ends written, %d in the .tkt" % (got, ends))
    return len(seen)


def main(argv):
    proto = os.environ.get("PERFETTO_PROTO") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
        "testdata", "perfetto", "perfetto_trace.proto")
    args = argv[1:]
    opts = set()
    while args and args[0].startswith("--"):
        a = args.pop(0)
        if a == "--proto":
            proto = args.pop(0)
        else:
            opts.add(a)
    tl = Timeline()
    try:
        if "--events" in opts:
            for path in args:
                tl.read_file(path, decode(path, proto))
            for ev in tl.events:
                ev = dict(ev, kind=tl.kind_of(ev))
                print(json.dumps(ev, sort_keys=True))
            return 0
        dump = [json.loads(l) for l in open(args[0]) if l.strip()]
        for path in args[1:]:
            tl.read_file(path, decode(path, proto))
        check_nesting(tl)
        got = compare_events(tl, dump, "--subset" in opts)
        check_args(tl, dump)
        check_kernels(tl, dump)
        flows = 0 if "--no-flows" in opts or "--subset" in opts else check_flows(tl, dump)
    except Bad as e:
        print("perfetto_check: %s" % e, file=sys.stderr)
        return 1
    kinds = collections.Counter()
    for k, n in got.items():
        kinds[k[0]] += n
    print("ok: %d files, %d events (%s), %d tracks, %d flows from calls to GPU work" %
          (tl.files, sum(kinds.values()),
           " ".join("%s %d" % kv for kv in sorted(kinds.items())), len(tl.tracks), flows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
