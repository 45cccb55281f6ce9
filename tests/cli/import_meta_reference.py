#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The run metadata and GPUs trace-import should make of a Chrome JSON's
top-level keys, by the rules of trace-import(1) and cmd/import/meta.c's
comment, computed here from the JSON alone:

  import_meta_reference.py make FILE.json        write a JSON with odd keys
  import_meta_reference.py meta FILE.json        "KEY = VALUE" lines, sorted
  import_meta_reference.py devices FILE.json     one JSON line per GPU

Rules: deviceProperties entries with an id become GPUs (name, host,
totalGlobalMem, numSms, computeMajor/Minor, a 32-digit uuid); what has no
field stays as metadata "deviceProperties.<id>", once as
"deviceProperties" when every GPU has the same; entries without an id
are kept whole as "deviceProperties.<position>".  otherData's keys are
the run's own (its "tracekit" report dropped), arrays of scalars one
value per element.  Other keys are metadata, objects flattened with
dotted keys to 8 levels.  Values are text: numbers as the shortest of
15 to 17 digits that reads back, true, false, "" for null, compact JSON
for the rest; a value over 4 KiB becomes its size.  baseTimeNanoseconds
(an integer, or a string of one) shifts the times;
systemTraceEvents is dropped.
"""
import json
import sys

MAX_VALUE = 4096
MAX_DEPTH = 8


def odd_json():
    deep = "leaf"
    for k in "jihgfedcba":   # ten levels: the last two stay JSON text
        deep = {k: deep}
    return {
        "traceEvents": [
            {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2},
        ],
        "schemaVersion": 1,
        "ratio": 0.1,
        "third": 1 / 3,
        "huge": 1e300,
        "whole": 3.0,
        "yes": True,
        "no": False,
        "nothing": None,
        "empty": {},
        "list": [1, "two", None],
        "distributedInfo": {"rank": 3, "world_size": 8, "pg": {"backend": "nccl"}},
        "deep": deep,
        "long": "x" * 5000,
        "long_list": list(range(2000)),
        "hostname": "node7",
        "baseTimeNanoseconds": "1000000",
        "systemTraceEvents": "# tracer: nop\n",
        "otherData": {
            "tracekit": {"events_read": 5},
            "command": "python3 train.py",
            "tags": ["a", "b", 7, True],
            "none": [],
            "mixed": [1, {"x": 1}],
            "nested": {"inner": ["c", "d"]},
        },
        "deviceProperties": [
            {"id": 0, "name": "GPU A", "host": "h0", "totalGlobalMem": 1 << 34,
             "numSms": 132, "computeMajor": 9, "computeMinor": 0,
             "uuid": "000102030405060708090a0b0c0d0e0f", "warpSize": 32},
            {"id": 2, "name": "GPU B", "numSms": 1 << 33, "computeMajor": -1,
             "uuid": "zz0102030405060708090a0b0c0d0e0f", "warpSize": 64},
            {"id": 5, "uuid": "0102"},
            dict({"name": "no id"}, **{"p%d" % i: i for i in range(600)}),
            7,
            {"id": 1 << 40, "name": "id too big"},
        ],
    }


def number(d):
    for p in (15, 16, 17):
        t = "%.*g" % (p, d)
        if float(t) == d:
            return t
    return t


def text(v):
    if isinstance(v, bool):
        t = "true" if v else "false"
    elif isinstance(v, str):
        t = v
    elif isinstance(v, int):
        t = str(v)
    elif isinstance(v, float):
        t = number(v)
    elif v is None:
        t = ""
    else:
        t = json.dumps(v, separators=(",", ":"), ensure_ascii=False)
    if len(t.encode()) > MAX_VALUE:
        if isinstance(v, list):
            t = "(array of %d items, not kept)" % len(v)
        elif isinstance(v, dict):
            t = "(object of %d keys, not kept)" % len(v)
        else:
            t = "(%d bytes, not kept)" % len(t.encode())
    return t


def scalar(v):
    return not isinstance(v, (list, dict))


def flatten(out, key, v, depth, repeat):
    if isinstance(v, dict) and depth < MAX_DEPTH and v:
        for k, x in v.items():
            flatten(out, key + "." + k if key else k, x, depth + 1, repeat)
    elif repeat and isinstance(v, list) and v and all(map(scalar, v)):
        for x in v:
            out.append((key, text(x)))
    else:
        out.append((key, text(v)))


def uint(d, k, top=None):
    v = d.get(k)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        return None
    return v if top is None or v <= top else None


def uuid(s):
    if isinstance(s, str) and len(s) == 32:
        try:
            return bytes.fromhex(s).hex()
        except ValueError:
            return None
    return None


def devices(doc):
    """(GPUs by id, metadata pairs) of deviceProperties."""
    gpus, extras, meta = {}, {}, []
    props = doc.get("deviceProperties")
    if not isinstance(props, list):
        if props is not None:
            flatten(meta, "deviceProperties", props, 0, False)
        return gpus, meta
    for i, d in enumerate(props):
        index = uint(d, "id", 0xFFFFFFFF) if isinstance(d, dict) else None
        if index is None:
            meta.append(("deviceProperties.%d" % i, text(d)))
            continue
        g = gpus.setdefault(index, {"id": index, "name": "", "host": "",
                                    "totalGlobalMem": 0, "numSms": 0,
                                    "computeMajor": 0, "computeMinor": 0,
                                    "uuid": "0" * 32})
        rest = dict(d)
        del rest["id"]
        for k in ("name", "host"):
            if isinstance(d.get(k), str):
                g[k] = rest.pop(k)
        for k, top in (("totalGlobalMem", None), ("numSms", 0xFFFFFFFF),
                       ("computeMajor", 0xFFFFFFFF), ("computeMinor", 0xFFFFFFFF)):
            if uint(d, k, top) is not None:
                g[k] = rest.pop(k)
        if uuid(d.get("uuid")):
            g["uuid"] = uuid(rest.pop("uuid"))
        if rest:
            extras["deviceProperties.%d" % index] = rest
    vals = list(extras.values())
    if len(vals) > 1 and all(v == vals[0] for v in vals) and len(vals) == len(props):
        meta.append(("deviceProperties", text(vals[0])))
    else:
        meta += [(k, text(v)) for k, v in extras.items()]
    return gpus, meta


def metadata(doc):
    out = []
    for key, v in doc.items():
        if key in ("traceEvents", "deviceProperties", "systemTraceEvents"):
            continue
        if key == "baseTimeNanoseconds" and (
                (isinstance(v, int) and not isinstance(v, bool)) or
                (isinstance(v, str) and v.lstrip("-").isdigit())):
            continue
        if key == "otherData" and isinstance(v, dict):
            v = {k: x for k, x in v.items()
                 if not (k == "tracekit" and isinstance(x, dict))}
            flatten(out, "", v, 0, True)
            continue
        flatten(out, key, v, 0, False)
    out += devices(doc)[1]
    return out


def main():
    what, path = sys.argv[1], sys.argv[2]
    if what == "make":
        json.dump(odd_json(), open(path, "w"))
        return
    doc = json.load(open(path))
    if what == "meta":
        for k, v in sorted(metadata(doc)):
            print("%s = %s" % (k, v))
    elif what == "devices":
        for _, g in sorted(devices(doc)[0].items()):
            print(json.dumps(g, sort_keys=True))


if __name__ == "__main__":
    main()
