# SPDX-License-Identifier: MIT
"""A small PyTorch training loop that behaves as real ones do, for
tests/gpu/pytorch.sh: a DataLoader with worker processes (forked; they
end with os._exit, as multiprocessing children do), host-to-device
copies of each batch, forward, backward and SGD on the GPU, one NVTX
range "step" per iteration ending after torch.cuda.synchronize().

It writes what it did, measured by itself, to the JSON file named by
its first argument: the pids of the loader's workers, each step's
CLOCK_REALTIME begin and end (the recorder's clock) around the NVTX push and pop, the batch
shapes (so the copies' bytes are known) and the step count.

    python3 train_loop.py OUT.json [EPOCHS] [BATCHES_PER_EPOCH]

With "spin SECONDS" instead, it launches one elementwise kernel at a time
forever, printing the launch count every 1000 launches (flushed), for a
test that kills it with SIGKILL.
"""
import json
import os
import sys
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

BATCH = 64
FEATURES = 512
CLASSES = 10


class Synthetic(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(FEATURES, generator=g), i % CLASSES


def note_worker(worker_id):
    # Each worker says who it is; the main process reads these files.
    with open(os.environ["TK_TEST_WORKERS"] + "/%d" % os.getpid(), "w") as f:
        f.write(str(worker_id))


def spin(seconds):
    x = torch.ones(1 << 16, device="cuda")
    torch.cuda.synchronize()
    n = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end + 3600:
        x.mul_(1.0000001)
        n += 1
        if n % 1000 == 0:
            print(n, flush=True)


def main():
    if sys.argv[1] == "spin":
        spin(float(sys.argv[2]))
        return
    out = sys.argv[1]
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    batches = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = nn.Sequential(nn.Linear(FEATURES, 1024), nn.ReLU(),
                          nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, CLASSES)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    data = Synthetic(batches * BATCH)
    steps = []
    # NVTX's first call loads the tool (trace-record's library): not in a step
    torch.cuda.nvtx.mark("training")
    for epoch in range(epochs):
        # Not persistent: each epoch forks its own two workers.
        loader = DataLoader(data, batch_size=BATCH, num_workers=2,
                            worker_init_fn=note_worker)
        for x, y in loader:
            t0 = time.time_ns()
            torch.cuda.nvtx.range_push("step")
            x = x.to(dev)
            y = y.to(dev)
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
            t1 = time.time_ns()
            steps.append({"begin": t0, "end": t1, "epoch": epoch,
                          "x_bytes": x.numel() * x.element_size(),
                          "y_bytes": y.numel() * y.element_size()})
        del loader
    workers = sorted(int(p) for p in os.listdir(os.environ["TK_TEST_WORKERS"]))
    with open(out, "w") as f:
        json.dump({"pid": os.getpid(), "workers": workers, "steps": steps,
                   "device": torch.cuda.get_device_name(0)}, f)


if __name__ == "__main__":
    main()
