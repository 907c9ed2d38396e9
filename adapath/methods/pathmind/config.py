"""PathMind training settings (no torch here: the command line reads the defaults)."""

from __future__ import annotations

from dataclasses import dataclass

READINGS = ("vector", "scalar")  # the triple representation (h_u W_r h_v)^T q read as a vector or a number
LOSSES = ("softmax", "bce")


@dataclass
class TrainConfig:
    hops: int = 3  # k of the k-hop query subgraph, and the message-passing layers over it
    hidden: int = 32
    reading: str = "vector"  # the triple representation: vector (d is a vector) or scalar
    epochs: int = 8
    lr: float = 1e-3  # 5e-3 peaked after one epoch on held-out records, then fell (bench/pathmind_real.py, inner split)
    patience: int = 3
    val_fraction: float = 0.2
    seed: int = 0
    encoder: str = "hashing"
    batch: int = 4  # questions per optimizer step, side by side in one pass over the graph
    select: str = "hits1"  # the validation score that picks the best epoch: hits1 or hits3
    text_projection: bool = True  # the entity gate reads a learned projection of its text (else type and cosine)
    weight_decay: float = 0.0
    loss: str = "softmax"  # softmax (cross-entropy of a softmax over the subgraph) or bce (class-balanced)
