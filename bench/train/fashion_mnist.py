"""What the PyTorch peers of bench/train share: Fashion-MNIST as ringmaster-trainer reads it
(IDX files, gzip'd or plain, normalized with the same mean and std) and the same MLP."""
import gzip
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn

MEAN, STD = 0.2860, 0.3530  # the normalization ringmaster-trainer uses


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(data_dir, prefix, who="bench/train"):
    """Images as normalized float32 [n, 784] and labels as int64 [n] (CPU tensors);
    prefix is "train" or "t10k"."""
    def find(name):
        for candidate in (name + ".gz", name):
            p = os.path.join(data_dir, candidate)
            if os.path.exists(p):
                return p
        sys.exit(f"{who}: {name}(.gz) not found in {data_dir}")
    images = read_idx(find(f"{prefix}-images-idx3-ubyte")).reshape(-1, 784).astype(np.float32)
    labels = read_idx(find(f"{prefix}-labels-idx1-ubyte")).astype(np.int64)
    images = (images / 255.0 - MEAN) / STD
    return torch.from_numpy(images), torch.from_numpy(labels)


def widths(hidden):
    """The MLP's layer widths for hidden widths given as "512,512": 784 in, 10 classes out."""
    return [784] + [int(h) for h in hidden.split(",")] + [10]


def mlp(widths):
    """Linear + ReLU per hidden width, then Linear to the classes (PyTorch's default init)."""
    layers = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i < len(widths) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)
