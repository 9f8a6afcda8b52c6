#!/usr/bin/python3
"""The yardstick for bench/train: PyTorch DDP (gloo) on the same MLP, data and schedule as
ringmaster-trainer. One process per rank, one thread each. Prints one JSON line (rank 0):
{"samplesPerSecond": ..., "testAccuracy": ..., "trainSeconds": ...,
 "epochs": [{"epoch": 1, "testAccuracy": ..., "trainSeconds": <training time so far>}, ...]}.

Run by bench/train/run.sh; usable alone:
  RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29600 /usr/bin/python3 torch_ddp.py &
  RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29600 /usr/bin/python3 torch_ddp.py
"""
import argparse
import json
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn

import fashion_mnist

def load(data_dir, prefix):
    return fashion_mnist.load(data_dir, prefix, "torch_ddp")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--hidden", default="512,512")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--lr-schedule", choices=("constant", "cosine"), default="constant")
    args = ap.parse_args()

    torch.set_num_threads(1)
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(args.seed)

    widths = fashion_mnist.widths(args.hidden)
    model = nn.parallel.DistributedDataParallel(fashion_mnist.mlp(widths))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    loss_fn = nn.CrossEntropyLoss()

    x_train, y_train = load(args.data, "train")
    x_test, y_test = load(args.data, "t10k")
    n = len(x_train) - len(x_train) % world

    def test_accuracy():
        with torch.no_grad():
            return (model(x_test).argmax(1) == y_test).sum().item() / len(y_test)

    steps_per_epoch = (len(range(rank, n, world)) + args.batch_size - 1) // args.batch_size
    total_steps, step = args.epochs * steps_per_epoch, 0

    def lr_at(step):  # ringmaster-trainer's: cosine decays to 0 at the last step
        if args.lr_schedule != "cosine":
            return args.lr
        return args.lr * 0.5 * (1 + math.cos(math.pi * step / total_steps))

    train_seconds, samples, history = 0.0, 0, []
    for epoch in range(args.epochs):
        g = torch.Generator().manual_seed(args.seed + epoch)
        shard = torch.randperm(len(x_train), generator=g)[:n][rank::world]  # strided, like ours
        dist.barrier()
        t0 = time.perf_counter()
        for b in range(0, len(shard), args.batch_size):
            idx = shard[b:b + args.batch_size]
            for group in opt.param_groups:
                group["lr"] = lr_at(step)
            step += 1
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x_train[idx]), y_train[idx])
            loss.backward()
            opt.step()
            samples += len(idx) * world
        dist.barrier()
        train_seconds += time.perf_counter() - t0
        # Evaluated after each epoch, outside the timed part, as ringmaster-trainer does.
        history.append({"epoch": epoch + 1, "testAccuracy": test_accuracy(),
                        "trainSeconds": train_seconds})

    if rank == 0:
        print(json.dumps({"samplesPerSecond": samples / train_seconds,
                          "testAccuracy": history[-1]["testAccuracy"],
                          "trainSeconds": train_seconds, "worldSize": world,
                          "epochs": history}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
