#!/usr/bin/python3
"""The yardstick for bench/train: PyTorch DDP (gloo) on the same MLP, data and schedule as
ringmaster-trainer. One process per rank, one thread each. Prints one JSON line (rank 0):
{"samplesPerSecond": ..., "testAccuracy": ..., "trainSeconds": ...}.

Run by bench/train/run.sh; usable alone:
  RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29600 /usr/bin/python3 torch_ddp.py &
  RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29600 /usr/bin/python3 torch_ddp.py
"""
import argparse
import gzip
import json
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

MEAN, STD = 0.2860, 0.3530  # the same normalization as ringmaster-trainer


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(data_dir, prefix):
    def find(name):
        for candidate in (name + ".gz", name):
            p = os.path.join(data_dir, candidate)
            if os.path.exists(p):
                return p
        sys.exit(f"torch_ddp: {name}(.gz) not found in {data_dir}")
    images = read_idx(find(f"{prefix}-images-idx3-ubyte")).reshape(-1, 784).astype(np.float32)
    labels = read_idx(find(f"{prefix}-labels-idx1-ubyte")).astype(np.int64)
    images = (images / 255.0 - MEAN) / STD
    return torch.from_numpy(images), torch.from_numpy(labels)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--hidden", default="512,512")
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()

    torch.set_num_threads(1)
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(args.seed)

    widths = [784] + [int(h) for h in args.hidden.split(",")] + [10]
    layers = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i < len(widths) - 2:
            layers.append(nn.ReLU())
    model = nn.parallel.DistributedDataParallel(nn.Sequential(*layers))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    loss_fn = nn.CrossEntropyLoss()

    x_train, y_train = load(args.data, "train")
    x_test, y_test = load(args.data, "t10k")
    n = len(x_train) - len(x_train) % world

    train_seconds, samples = 0.0, 0
    for epoch in range(args.epochs):
        g = torch.Generator().manual_seed(args.seed + epoch)
        shard = torch.randperm(len(x_train), generator=g)[:n][rank::world]  # strided, like ours
        dist.barrier()
        t0 = time.perf_counter()
        for b in range(0, len(shard), args.batch_size):
            idx = shard[b:b + args.batch_size]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x_train[idx]), y_train[idx])
            loss.backward()
            opt.step()
            samples += len(idx) * world
        dist.barrier()
        train_seconds += time.perf_counter() - t0

    with torch.no_grad():
        correct = (model(x_test).argmax(1) == y_test).sum().item()
    if rank == 0:
        print(json.dumps({"samplesPerSecond": samples / train_seconds,
                          "testAccuracy": correct / len(y_test),
                          "trainSeconds": train_seconds, "worldSize": world}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
