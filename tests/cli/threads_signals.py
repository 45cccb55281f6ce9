# SPDX-License-Identifier: MIT
"""A program of many threads for trace-record's ptrace tests
(trace-record-races.bats): N threads alive at once, SIGUSR1 sent to ten
of them in turn (each must reach its thread: trace-record passes on what
it sees stop a thread), all of them ending, then a thread that execs
`sh -c 'exit 7'` (the exec takes the first thread's id).

  python3 threads_signals.py N FILE    FILE: the signals handled
"""
import os
import signal
import sys
import threading
import time

n, out = int(sys.argv[1]), sys.argv[2]
hits = 0


def on_usr1(sig, frame):
    global hits
    hits += 1


signal.signal(signal.SIGUSR1, on_usr1)
go = threading.Event()
threads = [threading.Thread(target=go.wait) for _ in range(n)]
for t in threads:
    t.start()
for t in threads[:10]:
    before = hits
    signal.pthread_kill(t.ident, signal.SIGUSR1)
    # its handler runs on the main thread, once the signal reached t
    for _ in range(5000):
        if hits > before:
            break
        time.sleep(0.001)
go.set()
for t in threads:
    t.join()
with open(out, "w") as f:
    f.write("%d\n" % hits)
e = threading.Thread(target=lambda: os.execv("/bin/sh", ["sh", "-c", "exit 7"]))
e.start()
e.join()
sys.exit(1)  # not reached: the exec replaced the process
