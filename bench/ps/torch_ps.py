#!/usr/bin/python3
"""bench/ps's peer: a PyTorch parameter server over torch.distributed.rpc, written as PyTorch's
RPC tutorials write one (a ParameterServer object on its own rank that trainers call with
rpc_sync; sync batches every trainer's gradients into one update, as the "batch RPC processing"
tutorial's BatchUpdateParameterServer does). The same MLP, data order, optimizer and cosine
schedule as ringmaster-trainer --ps-servers 1. Ranks 0..W-2 train, rank W-1 serves.
Prints one JSON line (trainer 0): {"samplesPerSecond" (every trainer's samples over the slowest
one's time), "testAccuracy", "trainSeconds", and trainer 0's "steps", "pullSeconds",
"pushSeconds", "bytesPushed", "bytesPulled" (a step's push and pull are one round trip, counted as
push)}.

  RANK=r WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=29700 /usr/bin/python3 torch_ps.py \
      --consistency sync|async
Consistency async applies each push at once, with the learning rate / W (the gradient's share of
a sync step) and momentum per push, which is how a plain PyTorch async PS would do it.
"""
import argparse
import json
import math
import os
import sys
import threading
import time

import torch
import torch.distributed.rpc as rpc
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train"))
import fashion_mnist  # noqa: E402

ARGS = None


def lr_at(step, total_steps):
    return ARGS.lr * 0.5 * (1 + math.cos(math.pi * step / total_steps))


class ParameterServer:
    def __init__(self, widths, trainers, total_steps):
        torch.manual_seed(ARGS.seed)
        self.model = fashion_mnist.mlp(widths)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=ARGS.lr, momentum=ARGS.momentum)
        self.trainers = trainers
        self.total_steps = total_steps
        self.lock = threading.Lock()
        self.pending, self.future, self.updates = 0, torch.futures.Future(), 0

    def params(self):
        with self.lock:
            return [p.detach().clone() for p in self.model.parameters()]

    def _apply(self, lr):
        for group in self.opt.param_groups:
            group["lr"] = lr
        self.opt.step()
        self.opt.zero_grad(set_to_none=False)
        self.updates += 1

    @staticmethod
    @rpc.functions.async_execution
    def push_and_pull(ps_rref, grads):
        self = ps_rref.local_value()
        with self.lock:
            if ARGS.consistency == "async":
                for p, g in zip(self.model.parameters(), grads):
                    p.grad = g / self.trainers
                self._apply(lr_at(self.updates / self.trainers, self.total_steps))
                done = torch.futures.Future()
                done.set_result([p.detach().clone() for p in self.model.parameters()])
                return done
            # Sync: the mean of every trainer's gradient, one update, then all get the result.
            for p, g in zip(self.model.parameters(), grads):
                p.grad = g / self.trainers if p.grad is None or self.pending == 0 \
                    else p.grad + g / self.trainers
            self.pending += 1
            future = self.future
            if self.pending == self.trainers:
                self._apply(lr_at(self.updates, self.total_steps))
                future.set_result([p.detach().clone() for p in self.model.parameters()])
                self.pending, self.future = 0, torch.futures.Future()
            return future


def train(rank, world, ps_rref, steps_per_epoch):
    trainers = world - 1
    model = fashion_mnist.mlp(fashion_mnist.widths(ARGS.hidden))
    loss_fn = nn.CrossEntropyLoss()
    x_train, y_train = fashion_mnist.load(ARGS.data, "train", "torch_ps")
    n = len(x_train) - len(x_train) % trainers
    pull_s = push_s = 0.0
    bytes_pushed = bytes_pulled = 0
    t = time.perf_counter()
    params = ps_rref.rpc_sync().params()
    pull_s += time.perf_counter() - t
    bytes_pulled += sum(p.numel() * 4 for p in params)
    start = time.perf_counter()
    samples = steps = 0
    for epoch in range(ARGS.epochs):
        g = torch.Generator().manual_seed(ARGS.seed + epoch)
        shard = torch.randperm(len(x_train), generator=g)[:n][rank::trainers]
        for b in range(0, steps_per_epoch * ARGS.batch_size, ARGS.batch_size):
            idx = shard[b:b + ARGS.batch_size]
            with torch.no_grad():
                for p, v in zip(model.parameters(), params):
                    p.copy_(v)
            model.zero_grad(set_to_none=True)
            loss_fn(model(x_train[idx]), y_train[idx]).backward()
            grads = [p.grad for p in model.parameters()]
            t = time.perf_counter()
            params = rpc.rpc_sync("ps", ParameterServer.push_and_pull, args=(ps_rref, grads))
            push_s += time.perf_counter() - t  # the push and the pull are one round trip
            bytes_pushed += sum(g.numel() * 4 for g in grads)
            bytes_pulled += sum(p.numel() * 4 for p in params)
            samples += len(idx)
            steps += 1
    seconds = time.perf_counter() - start
    stats = {"samples": samples, "steps": steps, "seconds": seconds, "pull": pull_s,
             "push": push_s, "pushed": bytes_pushed, "pulled": bytes_pulled}
    if rank != 0:
        return stats
    with torch.no_grad():
        for p, v in zip(model.parameters(), params):
            p.copy_(v)
    return model, stats


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--hidden", default="512,512")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--consistency", choices=("sync", "async"), default="sync")
    ARGS = ap.parse_args()
    torch.set_num_threads(1)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    trainers = world - 1
    name = "ps" if rank == world - 1 else f"trainer{rank}"
    options = rpc.TensorPipeRpcBackendOptions(num_worker_threads=8, rpc_timeout=600)
    rpc.init_rpc(name, rank=rank, world_size=world, rpc_backend_options=options)
    if rank == 0:
        x_train, _ = fashion_mnist.load(ARGS.data, "train", "torch_ps")
        n = len(x_train) - len(x_train) % trainers
        steps_per_epoch = len(range(0, n, trainers)) // ARGS.batch_size
        ps_rref = rpc.remote("ps", ParameterServer,
                             args=(fashion_mnist.widths(ARGS.hidden), trainers,
                                   ARGS.epochs * steps_per_epoch))
        futures = [rpc.rpc_async(f"trainer{r}", train, args=(r, world, ps_rref, steps_per_epoch))
                   for r in range(1, trainers)]
        model, mine = train(0, world, ps_rref, steps_per_epoch)
        # The job's throughput: every trainer's samples over the slowest one's time.
        samples, seconds = mine["samples"], mine["seconds"]
        for f in futures:
            other = f.wait()
            samples += other["samples"]
            seconds = max(seconds, other["seconds"])
        x_test, y_test = fashion_mnist.load(ARGS.data, "t10k", "torch_ps")
        with torch.no_grad():
            accuracy = (model(x_test).argmax(1) == y_test).sum().item() / len(y_test)
        print(json.dumps({"samplesPerSecond": samples / seconds, "testAccuracy": accuracy,
                          "trainSeconds": seconds, "steps": mine["steps"],
                          "pullSeconds": mine["pull"], "pushSeconds": mine["push"],
                          "bytesPushed": mine["pushed"], "bytesPulled": mine["pulled"]}),
              flush=True)
    rpc.shutdown()


if __name__ == "__main__":
    main()
