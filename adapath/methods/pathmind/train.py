"""PathMind priority training: examples, the training loop with early stopping, checkpoints.

An example is one question: its query vector, topics, valid answers and bounded query
subgraph. Training minimizes binary cross-entropy with answers positive and every other
subgraph entity negative (positives re-weighted by the class ratio). The best epoch by
validation Hits@3 is kept; training stops after ``patience`` epochs without improvement.
Checkpoints are safetensors + a JSON config, never pickles. Everything is seeded.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from adapath.engine.graph import KnowledgeGraph
from adapath.errors import InputError
from adapath.methods.pathmind.model import PathMindNet
from adapath.methods.pathmind.subgraph import QuerySubgraph, SubgraphBuilder


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


@dataclass
class Example:
    id: str
    text: str
    topics: list[int]  # global
    answers: list[int]  # global (valid answers in the graph)
    subgraph: QuerySubgraph
    query: np.ndarray

    @property
    def local_answers(self) -> np.ndarray:
        local = self.subgraph.local(self.answers)
        return local[local >= 0]


def make_examples(graph: KnowledgeGraph, records: list[dict], encoder, level: str = "explicit",
                  hops: int = 3, budget: int = 400, with_answers: bool = True) -> list[Example]:
    builder = SubgraphBuilder(graph, hops=hops, budget=budget)
    topics = [graph.index_of([int(k) for k in r["topic_entities"]]).tolist() for r in records]
    texts = [r[f"{level}_query"] for r in records]
    vectors = encoder.encode(texts)
    subgraphs = []
    for lo in range(0, len(records), 64):
        subgraphs += builder.build_many(topics[lo:lo + 64])
    examples = []
    for record, t, text, vector, sub in zip(records, topics, texts, vectors, subgraphs):
        answers = []
        if with_answers:
            index = graph.index_of([int(v) for v in record["valid_answer_ids"]], missing="ignore")
            answers = [int(i) for i in index if i >= 0 and i not in t]
        examples.append(Example(str(record["data_id"]), text, t, answers, sub, vector))
    return examples


class Featurizer:
    """Tensors of an example: node types, node text embeddings, edges, topics, query."""

    def __init__(self, graph: KnowledgeGraph, nodes_embeddings):
        self.graph, self.nodes = graph, nodes_embeddings

    def __call__(self, example: Example):
        sub = example.subgraph
        return (torch.as_tensor(self.graph.node_type[sub.nodes].astype(np.int64)),
                torch.as_tensor(self.nodes.get(sub.nodes)),
                torch.as_tensor(sub.topics, dtype=torch.long),
                torch.as_tensor(example.query),
                torch.as_tensor(sub.src), torch.as_tensor(sub.dst), torch.as_tensor(sub.rel))


def hits_at(model, featurize, examples: list[Example], k: int) -> float:
    """Share of examples with an answer among the top k scored non-topic entities."""
    if not examples:
        return 0.0
    model.eval()
    hits = 0
    with torch.no_grad():
        for ex in examples:
            logits = model(*featurize(ex))[0].clone()
            logits[ex.subgraph.topics] = -np.inf
            top = torch.topk(logits, min(k, len(logits))).indices.numpy()
            hits += bool(set(top.tolist()) & set(ex.local_answers.tolist()))
    return hits / len(examples)


def baseline_hits(graph: KnowledgeGraph, examples: list[Example], kind: str, k: int, seed: int = 0) -> float:
    """Hits@k of a non-learned ranking of the subgraph entities: ``degree`` or ``random`` (seeded)."""
    rng = np.random.default_rng(seed)
    degree = graph.degree()
    hits = 0
    for e in examples:
        candidates = np.setdiff1d(np.arange(len(e.subgraph.nodes)), e.subgraph.topics)
        if kind == "degree":
            top = candidates[np.argsort(-degree[e.subgraph.nodes[candidates]], kind="stable")[:k]]
        else:
            top = rng.choice(candidates, min(k, len(candidates)), replace=False)
        hits += bool(set(top.tolist()) & set(e.local_answers.tolist()))
    return hits / max(len(examples), 1)


def train(graph: KnowledgeGraph, examples: list[Example], featurize, config: TrainConfig, log=None):
    """Returns (model, history) with the best validation epoch's weights."""
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    usable = [e for e in examples if len(e.local_answers)]
    if len(usable) < 4:
        raise InputError("too few training questions whose answers survive the subgraph bound")
    order = rng.permutation(len(usable))
    n_val = max(1, int(round(len(usable) * config.val_fraction)))
    val = [usable[i] for i in order[:n_val]]
    fit = [usable[i] for i in order[n_val:]]
    model = PathMindNet(len(graph.type_names), graph.num_relations, len(examples[0].query),
                        featurize(examples[0])[1].shape[1], hidden=config.hidden, layers=config.layers,
                        rounds=config.hops)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    best, best_state, stale, history = -1.0, None, 0, []
    for epoch in range(1, config.epochs + 1):
        model.train()
        clock = time.perf_counter()
        total = 0.0
        for i in rng.permutation(len(fit)):
            ex = fit[i]
            logits = model(*featurize(ex))[0]
            target = torch.zeros_like(logits)
            target[torch.as_tensor(ex.local_answers)] = 1.0
            mask = torch.ones_like(logits, dtype=torch.bool)
            mask[torch.as_tensor(ex.subgraph.topics)] = False
            positives = target[mask].sum().clamp(min=1)
            weight = (mask.sum() - positives) / positives
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                logits[mask], target[mask], pos_weight=weight)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
        score = hits_at(model, featurize, val, 3)
        history.append({"epoch": epoch, "loss": total / max(len(fit), 1), "val_hits3": score,
                        "seconds": time.perf_counter() - clock})
        if log:
            log(history[-1])
        if score > best:
            best, stale = score, 0
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            stale += 1
            if stale >= config.patience:
                break
    model.load_state_dict(best_state)
    model.eval()
    return model, history


def save_checkpoint(model: PathMindNet, config: TrainConfig, graph: KnowledgeGraph, out: str | Path,
                    history: list[dict] | None = None) -> None:
    from safetensors.torch import save_file

    from adapath.fsutil import atomic_dir

    with atomic_dir(out, overwrite=True) as tmp:
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(tmp / "model.safetensors"))
        (tmp / "config.json").write_text(json.dumps({
            "format": "adapath-pathmind", "model": model.config, "train": asdict(config),
            "graph_checksum": graph.checksum(), "history": history or []}, indent=2))


def load_checkpoint(path: str | Path) -> tuple[PathMindNet, TrainConfig]:
    from safetensors.torch import load_file

    path = Path(path)
    if not (path / "config.json").is_file() or not (path / "model.safetensors").is_file():
        raise InputError(f"{path}: not a PathMind model (config.json + model.safetensors)")
    meta = json.loads((path / "config.json").read_text())
    if meta.get("format") != "adapath-pathmind":
        raise InputError(f"{path}: not a PathMind model")
    model = PathMindNet(**meta["model"])
    model.load_state_dict(load_file(str(path / "model.safetensors")))
    model.eval()
    return model, TrainConfig(**meta["train"])
