#!/usr/bin/env python3
"""The PyTorch peer of bench/train/gpu.sh: the same MLP, data and schedule as
`ringmaster-trainer --device cuda`, on one GPU, eager or torch.compile, fp32 or bf16.

Same model (nn.Linear + ReLU per hidden width, then nn.Linear to 10 classes; PyTorch's default
init), SGD with momentum, cross-entropy. The whole data set sits in GPU memory as float tensors;
each epoch shuffles with torch.randperm on the device and gathers batches with index_select on
the device (the last, short batch is trained too, as ours does); nothing waits on the host
inside an epoch (the loss is summed on the device). fp32 is plain fp32 with TF32 off, the same
arithmetic as ours; bf16 is torch.autocast with fp32 master weights.
--mode compile compiles the whole training step (forward, backward, optimizer) with
torch.compile's default options; --compile-mode picks another torch.compile mode (e.g.
max-autotune-no-cudagraphs), never used unless asked for.

Prints one JSON line: samplesPerSecond (all epochs), steadySamplesPerSecond (without epoch 1,
which includes compilation and warm-up; all epochs when there is one), testAccuracy (after the
last epoch, same precision, no grad), trainSeconds, model ("mlp:784-512-512-10"), mode,
precision, and a few details (sgd, batchSize, epochs, torch, gpu).

Run by bench/train/gpu.sh; usable alone:
  python3 bench/train/torch_gpu.py --precision bf16 --mode compile --hidden 8192,8192,8192 \\
      --batch-size 4096 --epochs 5
  /usr/bin/python3 bench/train/torch_gpu.py --device cpu --hidden 64 --batch-size 256 --epochs 1
(--device cpu only smoke-tests the script on a machine without a GPU.)
"""
import argparse
import json
import sys
import time
import warnings

import torch
import torch.nn as nn

import fashion_mnist
from fashion_mnist import mlp

NAME = "torch_gpu.py"


def load(data_dir, prefix, device):
    """Images and labels (fashion_mnist.load) on `device`."""
    x, y = fashion_mnist.load(data_dir, prefix, NAME)
    return x.to(device), y.to(device)


def disable_tf32():
    # The legacy switches set the legacy and the new (torch >= 2.9) TF32 state consistently;
    # setting only the new per-backend flags can leave cuDNN's legacy flag on and make torch
    # refuse a later query ("mix of the legacy and new APIs"). Silence their deprecation note.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


def parse_args():
    ap = argparse.ArgumentParser(description="PyTorch peer of bench/train/gpu.sh")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                    help="cpu only to smoke-test this script")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--mode", default="eager", choices=["eager", "compile"])
    ap.add_argument("--compile-mode", default=None,
                    help="torch.compile mode (default: torch.compile's default)")
    ap.add_argument("--sgd", default="auto", choices=["auto", "fused", "foreach"],
                    help="SGD implementation; auto: fused on the GPU in eager mode (one kernel "
                         "for all parameters), foreach under compile (which Inductor fuses), "
                         "foreach on the CPU")
    ap.add_argument("--hidden", default="512,512")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    if a.epochs < 1 or a.batch_size < 1:
        ap.error("--epochs and --batch-size must be at least 1")
    return a


def main():
    a = parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit(f"{NAME}: no GPU visible to PyTorch {torch.__version__} "
                 "(--device cpu only smoke-tests the script)")
    if a.mode == "compile" and not hasattr(torch, "compile"):
        sys.exit(f"{NAME}: --mode compile needs torch.compile (PyTorch >= 2.0); "
                 f"this is PyTorch {torch.__version__}")
    sgd = a.sgd
    if sgd == "auto":
        sgd = "fused" if a.device == "cuda" and a.mode == "eager" else "foreach"
    if a.device == "cuda":
        disable_tf32()
    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)

    x_train, y_train = load(a.data, "train", dev)
    x_test, y_test = load(a.data, "t10k", dev)
    widths = fashion_mnist.widths(a.hidden)
    model = mlp(widths).to(dev)
    try:
        opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum,
                              **{sgd: True})
    except (TypeError, RuntimeError) as e:  # e.g. no fused SGD in this build or on this device
        sys.exit(f"{NAME}: SGD({sgd}=True) unavailable: {e}")
    loss_fn = nn.CrossEntropyLoss()
    use_bf16 = a.precision == "bf16"

    def step(xb, yb):
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=a.device, dtype=torch.bfloat16, enabled=use_bf16):
            loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss.detach()

    if a.mode == "compile":
        # Compiled lazily at the first call (inside epoch 1). The last, short batch gets its own
        # static specialization (dynamic=False) rather than a dynamic-shape graph for all steps.
        step = torch.compile(step, mode=a.compile_mode, dynamic=False)

    n, bs = x_train.shape[0], a.batch_size
    steps_per_epoch = (n + bs - 1) // bs
    epoch_seconds = []
    loss_sum = torch.zeros((), device=dev)
    for epoch in range(a.epochs):
        sync()
        t0 = time.perf_counter()
        order = torch.randperm(n, device=dev)
        loss_sum = torch.zeros((), device=dev)
        for start in range(0, n, bs):
            idx = order[start:start + bs]
            loss_sum += step(x_train.index_select(0, idx), y_train.index_select(0, idx))
        sync()
        epoch_seconds.append(time.perf_counter() - t0)
        print(f"{NAME}: epoch {epoch + 1}/{a.epochs}: {n / epoch_seconds[-1]:.0f} samples/s",
              file=sys.stderr, flush=True)

    correct = torch.zeros((), dtype=torch.int64, device=dev)
    with torch.no_grad(), torch.autocast(device_type=a.device, dtype=torch.bfloat16,
                                         enabled=use_bf16):
        for start in range(0, x_test.shape[0], bs):
            logits = model(x_test[start:start + bs])
            correct += (logits.argmax(1) == y_test[start:start + bs]).sum()
    steady = epoch_seconds[1:] or epoch_seconds
    print(json.dumps({
        "samplesPerSecond": n * len(epoch_seconds) / sum(epoch_seconds),
        "steadySamplesPerSecond": n * len(steady) / sum(steady),
        "testAccuracy": correct.item() / x_test.shape[0],
        "trainSeconds": sum(epoch_seconds),
        "model": "mlp:" + "-".join(str(w) for w in widths),
        "mode": a.mode,
        "compileMode": (a.compile_mode or "default") if a.mode == "compile" else None,
        "precision": a.precision,
        "finalTrainLoss": loss_sum.item() / steps_per_epoch,
        "sgd": sgd,
        "batchSize": bs,
        "epochs": a.epochs,
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name() if a.device == "cuda" else "cpu",
    }), flush=True)


if __name__ == "__main__":
    main()
