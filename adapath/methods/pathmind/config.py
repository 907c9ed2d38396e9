"""PathMind training settings: the one home of their defaults and checks (no torch here: the
command line reads them; `adapath pathmind train`'s options are the settings with help)."""

from __future__ import annotations

from dataclasses import dataclass

from adapath.config import setting
from adapath.errors import InputError
from adapath.retrieval import DEFAULT_ENCODER

READINGS = ("vector", "scalar")  # the triple representation (h_u W_r h_v)^T q read as a vector or a number
LOSSES = ("softmax", "bce")
SELECTS = ("hits1", "hits3")
MAX_HOPS = 5  # the Path-Bank's construction bound; a ball of mean degree ~60 covers the graph well before


@dataclass
class TrainConfig:
    hops: int = setting(3, f"k of the k-hop query subgraph, and the message-passing layers (1-{MAX_HOPS}).")
    hidden: int = 32
    reading: str = setting("vector", "The triple representation (h W_r h)^T q read as a vector (d(q, e) a "
                                     "vector) or a scalar.")
    epochs: int = setting(8, "Most epochs (early stopping on --select).")
    lr: float = 1e-3  # 5e-3 peaked after one epoch on held-out records, then fell (bench/pathmind_real.py, inner split)
    patience: int = 3
    val_fraction: float = 0.2
    seed: int = setting(0, "Seed of the split, the shuffling and the initial weights.")
    encoder: str = DEFAULT_ENCODER  # the command line's --encoder, shared by every command
    batch: int = setting(4, "Questions per optimizer step, side by side.")
    select: str = setting("hits1", "Validation score that picks the best epoch and stops early: hits1 (the "
                                   "extractive answer) or hits3 (the K=3 entities an LLM reads).")
    text_projection: bool = True  # the entity gate reads a learned projection of its text (else type and cosine)
    weight_decay: float = 0.0  # AdamW's; 0 is Adam's update
    loss: str = setting("softmax", "softmax (cross-entropy of a softmax over the subgraph's entities) or bce "
                                   "(class-balanced binary cross-entropy).")

    def check(self) -> None:
        """One line for the first setting out of range, named as its option."""
        if self.epochs < 1:
            raise InputError(f"--epochs {self.epochs}: must be at least 1")
        if not 1 <= self.hops <= MAX_HOPS:
            raise InputError(f"--hops {self.hops}: must be between 1 and {MAX_HOPS}")
        if self.batch < 1:
            raise InputError(f"--batch {self.batch}: must be at least 1")
        if self.reading not in READINGS:
            raise InputError(f"--reading {self.reading!r}: choose {', '.join(READINGS)}")
        if self.select not in SELECTS:
            raise InputError(f"--select {self.select!r}: choose hits1 or hits3")
        if self.loss not in LOSSES:
            raise InputError(f"--loss {self.loss!r}: choose {', '.join(LOSSES)}")
