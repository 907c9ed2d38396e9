"""PathMind training settings (no torch here: the command line reads the defaults)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TrainConfig:
    hops: int = 3
    budget: int = 400
    hidden: int = 32
    layers: int = 3
    epochs: int = 20
    lr: float = 3e-3
    patience: int = 4
    val_fraction: float = 0.2
    seed: int = 0
    encoder: str = "hashing"
    batch: int = 1  # questions per optimizer step, put through the network as one graph
    subgraph: str = "ppr"  # how the budget is cut: ppr, question or metapath (pathmind.subgraph)
    prior: bool = True  # question / metapath cuts: the network sees each node's order in the cut
    candidate: bool = True  # metapath cut: the network sees the walk scorer's vote per node
    candidate_gain: float = 8.0  # the vote's weight on the priority logit (its starting value if learned)
    learn_candidate_gain: bool = True
    select: str = "hits3"  # the validation score that picks the best epoch: hits1 or hits3
