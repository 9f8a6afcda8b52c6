"""The PyTorch peer of bench_pipeline: the same MLP (input -> width x depth -> 10), cut at the same
layers (--partition, from `bench_pipeline --print-partition`), the same micro-batches and schedule,
stage to stage with torch.distributed send/recv over gloo (sends started with isend, as ours), an
SGD step after each mini-batch. Rank 0 prints one JSON line in bench_pipeline's shape.
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def schedule(kind, stage, stages, micro):
    """The same per-stage order of forwards (F) and backwards (B) as trainer/pipeline/schedule.h."""
    if kind == "gpipe":
        return [("F", m) for m in range(micro)] + [("B", m) for m in range(micro)]
    warmup = min(stages - stage - 1, micro)
    ops, f, b = [], 0, 0
    while f < warmup:
        ops.append(("F", f))
        f += 1
    while f < micro:
        ops.append(("F", f))
        ops.append(("B", b))
        f, b = f + 1, b + 1
    while b < micro:
        ops.append(("B", b))
        b += 1
    return ops


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--stages", type=int, default=2)
    p.add_argument("--micro-batches", type=int, default=4)
    p.add_argument("--schedule", default="1f1b")
    p.add_argument("--input", type=int, default=784)
    p.add_argument("--width", type=int, default=2048)
    p.add_argument("--depth", type=int, default=8)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--partition", required=True)
    a = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, stages, micro = dist.get_rank(), a.stages, a.micro_batches
    assert dist.get_world_size() == stages
    widths = [a.input] + [a.width] * a.depth + [10]
    layers = len(widths) - 1
    starts = [int(s) for s in a.partition.split(",")]
    first, end = starts[rank], starts[rank + 1] if rank + 1 < stages else layers
    mods = []
    for i in range(first, end):
        mods.append(nn.Linear(widths[i], widths[i + 1]))
        if i + 1 < layers:
            mods.append(nn.ReLU())
    module = nn.Sequential(*mods)
    opt = torch.optim.SGD(module.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    rows = a.batch // micro
    g = torch.Generator().manual_seed(7)
    x = torch.rand(a.batch, a.input, generator=g)
    y = torch.randint(0, 10, (a.batch,), generator=g)
    prev, nxt = rank - 1, rank + 1 if rank + 1 < stages else -1
    ops = schedule(a.schedule, rank, stages, micro)
    compute = sched = 0.0
    for step in range(a.warmup + a.steps):
        if step == a.warmup:
            dist.barrier()
            start = time.perf_counter()
        t_sched = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        inputs, outputs, sends = {}, {}, []
        for kind, m in ops:
            if kind == "F":
                if prev < 0:
                    inp = x[m * rows:(m + 1) * rows]
                else:
                    inp = torch.empty(rows, widths[first])
                    dist.recv(inp, prev)
                    inp.requires_grad_()
                t0 = time.perf_counter()
                out = module(inp)
                if nxt < 0:
                    out = loss_fn(out, y[m * rows:(m + 1) * rows]) * (rows / a.batch)
                compute += time.perf_counter() - t0
                if nxt >= 0:
                    sent = out.detach().contiguous()
                    sends.append((dist.isend(sent, nxt), sent))
                inputs[m], outputs[m] = inp, out
            else:
                if nxt < 0:
                    t0 = time.perf_counter()
                    outputs[m].backward()
                else:
                    grad = torch.empty_like(outputs[m])
                    dist.recv(grad, nxt)
                    t0 = time.perf_counter()
                    outputs[m].backward(grad)
                compute += time.perf_counter() - t0
                if prev >= 0:
                    sent = inputs[m].grad.contiguous()
                    sends.append((dist.isend(sent, prev), sent))
                del outputs[m]
        for work, _ in sends:
            work.wait()
        if step >= a.warmup:
            sched += time.perf_counter() - t_sched
        else:
            compute = 0.0
        opt.step()
    dist.barrier()
    wall = time.perf_counter() - start
    bubbles = torch.zeros(stages)
    bubbles[rank] = 1.0 - compute / sched
    dist.all_reduce(bubbles)
    if rank == 0:
        print(json.dumps({
            "who": "pytorch", "schedule": a.schedule, "stages": stages, "micro_batches": micro,
            "samples_per_second": round(a.steps * a.batch / wall, 1),
            "bubble": round(float(bubbles.mean()), 4),
            "bubble_per_stage": [round(float(b), 4) for b in bubbles],
            "ideal_bubble": round((stages - 1) / (micro + stages - 1), 4)}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
