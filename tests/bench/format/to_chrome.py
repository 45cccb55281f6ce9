# SPDX-License-Identifier: MIT
# Reference converter for the format benchmark when trace-to-chrome is not
# built: `trace-dump --json` lines to Chrome Trace JSON in the Kineto dialect
# (X events with args, as the PyTorch profiler writes them).
import json
import sys

cats = {"kernel": "kernel", "memcpy": "gpu_memcpy", "memset": "gpu_memset",
        "api": "cuda_runtime", "range": "user_annotation", "sync": "cuda_sync"}
events = []
for line in sys.stdin:
    e = json.loads(line)
    pid = e.get("pid", 0)
    tid = e.get("stream", e.get("tid", 0))
    ev = {"ph": "X", "cat": cats.get(e["kind"], e["kind"]), "name": e["name"],
          "pid": pid, "tid": tid, "ts": e["ts"] / 1000.0, "dur": e["dur"] / 1000.0}
    args = {k: v for k, v in e.items()
            if k not in ("kind", "name", "ts", "dur", "pid", "tid")}
    if args:
        ev["args"] = args
    events.append(ev)
json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, sys.stdout)
