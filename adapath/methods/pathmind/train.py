"""PathMind priority training: examples, the training loop with early stopping, checkpoints.

An example is one question: its query vector, topics, valid answers and bounded query
subgraph. Training minimizes binary cross-entropy with answers positive and every other
subgraph entity negative (positives re-weighted by the class ratio, per question). The best
epoch by validation Hits@3 is kept; training stops after ``patience`` epochs without
improvement. Checkpoints are safetensors + a JSON config, never pickles. Everything is seeded.

Speed: subgraphs are built once (with their half-edge orders) and kept in memory; node text
is encoded once before the first epoch; each step puts ``batch`` questions through the
network as one disjoint graph, and the loss is the mean of the per-question losses.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

from adapath.datasets.biostrat import query_text
from adapath.engine.graph import KnowledgeGraph
from adapath.errors import InputError
from adapath.methods.pathmind.config import TrainConfig
from adapath.methods.pathmind.halfedges import HalfEdges
from adapath.methods.pathmind.model import PathMindNet
from adapath.methods.pathmind.subgraph import MODES as SUBGRAPH_MODES
from adapath.methods.pathmind.subgraph import QuerySubgraph, SubgraphBuilder
from adapath.progress import Progress


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
                  hops: int = 3, budget: int = 400, with_answers: bool = True, progress: bool = False,
                  subgraph: str = "ppr", graph_dir=None, bank=None) -> list[Example]:
    """``subgraph``: how the budget is cut (:mod:`adapath.methods.pathmind.subgraph`); the
    ``metapath`` cut needs a Path-Bank (``bank``)."""
    from adapath.datasets.biostrat import query_from_record

    builder = make_builder(graph, hops, budget, subgraph, graph_dir)
    guide = make_guide(graph, subgraph, bank, encoder, graph_dir)
    texts = [query_text(r, level) for r in records]
    topics = [graph.index_of([int(k) for k in r["topic_entities"]]).tolist() for r in records]
    vectors = encoder.encode(texts)
    subgraphs = []
    with _progress(progress, len(records), "subgraphs", "questions") as bar:
        for lo in range(0, len(records), 64):
            guides = guide.guides([query_from_record(r, level) for r in records[lo:lo + 64]]) if guide else None
            subgraphs += builder.build_many(topics[lo:lo + 64], texts[lo:lo + 64], guides)
            bar.advance(len(topics[lo:lo + 64]))
    examples = []
    for record, t, text, vector, sub in zip(records, topics, texts, vectors, subgraphs):
        answers = []
        if with_answers:
            index = graph.index_of([int(v) for v in record["valid_answer_ids"]], missing="ignore")
            answers = [int(i) for i in index if i >= 0 and i not in t]
        examples.append(Example(str(record["data_id"]), text, t, answers, sub, vector))
    return examples


def make_builder(graph: KnowledgeGraph, hops: int, budget: int, subgraph: str, graph_dir=None) -> SubgraphBuilder:
    """The subgraph builder of a mode, with the graph's BM25 indexes where it ranks by the question
    (the Path-Bank's settings: k1 1.5, b 0)."""
    if subgraph not in SUBGRAPH_MODES:
        raise InputError(f"--param subgraph={subgraph!r}: choose {', '.join(SUBGRAPH_MODES)}")
    text = None
    if subgraph != "ppr":
        from adapath.retrieval.bm25 import GraphText

        text = GraphText.for_graph(graph, graph_dir, b=0.0)
    return SubgraphBuilder(graph, hops=hops, budget=budget, mode=subgraph, text=text)


def make_guide(graph: KnowledgeGraph, subgraph: str, bank, encoder, graph_dir=None):
    """The Path-Bank guide of the ``metapath`` cut (None for the other modes)."""
    if subgraph != "metapath":
        return None
    if bank is None:
        raise InputError("subgraph=metapath needs a Path-Bank (--bank); or choose subgraph=question")
    from adapath.methods.pathmind.guide import MetaPathGuide

    return MetaPathGuide(graph, bank, encoder, graph_dir)


@dataclass
class Batch:
    """Several examples as one disjoint graph: the network's inputs plus where each example sits."""

    inputs: tuple  # node_type, text, topics, query (B x D), src, dst, rel, node_graph, edges, prior, candidate
    node_offsets: np.ndarray  # B + 1
    edge_offsets: np.ndarray  # B + 1

    def nodes_of(self, i: int) -> slice:
        return slice(int(self.node_offsets[i]), int(self.node_offsets[i + 1]))

    def edges_of(self, i: int) -> slice:
        return slice(int(self.edge_offsets[i]), int(self.edge_offsets[i + 1]))


class Featurizer:
    """Tensors of an example (``featurize(example)``) or of several as one graph (``batch``):
    node types, node text embeddings, topics, query, half-edges."""

    def __init__(self, graph: KnowledgeGraph, nodes_embeddings):
        self.graph, self.nodes = graph, nodes_embeddings

    def __call__(self, example: Example):
        sub = example.subgraph
        return (torch.as_tensor(self.graph.node_type[sub.nodes].astype(np.int64)),
                torch.as_tensor(self.nodes.get(sub.nodes)),
                torch.as_tensor(sub.topics, dtype=torch.long),
                torch.as_tensor(example.query),
                torch.as_tensor(sub.src, dtype=torch.long), torch.as_tensor(sub.dst, dtype=torch.long),
                torch.as_tensor(sub.rel, dtype=torch.long))

    def encode_nodes(self, examples: list[Example], progress: bool = False, chunk: int = 4096) -> None:
        """Encode the text of every subgraph node once, up front (not inside the first epoch);
        nothing to do where a complete store (``adapath kg embed``) serves every node."""
        if getattr(self.nodes, "precomputed", False) or not examples:
            return
        todo = np.unique(np.concatenate([e.subgraph.nodes for e in examples]))
        with _progress(progress, len(todo), "node text", "nodes") as bar:
            for lo in range(0, len(todo), chunk):
                self.nodes.get(todo[lo:lo + chunk])
                bar.advance(len(todo[lo:lo + chunk]))

    def batch(self, examples: list[Example]) -> Batch:
        subs = [e.subgraph for e in examples]
        node_offsets = np.zeros(len(subs) + 1, dtype=np.int64)
        np.cumsum([len(s.nodes) for s in subs], out=node_offsets[1:])
        edge_offsets = np.zeros(len(subs) + 1, dtype=np.int64)
        np.cumsum([len(s.src) for s in subs], out=edge_offsets[1:])
        nodes = np.concatenate([s.nodes for s in subs])
        shift = np.repeat(node_offsets[:-1], [len(s.src) for s in subs])
        src = np.concatenate([s.src for s in subs]) + shift
        dst = np.concatenate([s.dst for s in subs]) + shift
        rel = np.concatenate([s.rel for s in subs]).astype(np.int64)
        in_order = np.concatenate([s.in_order + lo for s, lo in zip(subs, edge_offsets[:-1])])
        topics = np.concatenate([s.topics + lo for s, lo in zip(subs, node_offsets[:-1])])
        node_graph = np.repeat(np.arange(len(subs)), np.diff(node_offsets))
        n = int(node_offsets[-1])
        edges = HalfEdges(src, dst, rel, n, self.graph.num_relations, in_order)
        prior = None
        if all(s.prior is not None for s in subs):
            prior = torch.as_tensor(np.concatenate([s.prior for s in subs]).astype(np.float32))
        candidate = None
        if all(s.candidate is not None for s in subs):
            candidate = torch.as_tensor(np.concatenate([s.candidate for s in subs]).astype(np.float32))
        inputs = (torch.as_tensor(self.graph.node_type[nodes].astype(np.int64)),
                  torch.as_tensor(self.nodes.get(nodes)),
                  torch.as_tensor(topics, dtype=torch.long),
                  torch.as_tensor(np.stack([e.query for e in examples])),
                  edges.src, edges.dst, edges.rel, torch.as_tensor(node_graph), edges, prior, candidate)
        return Batch(inputs, node_offsets, edge_offsets)


def _progress(show: bool, total: int, label: str, unit: str) -> Progress:
    return Progress(total, label, unit, quiet=not show)


def _batches(examples: list[Example], size: int) -> list[list[Example]]:
    return [examples[lo:lo + size] for lo in range(0, len(examples), size)]


def batch_loss(logits: torch.Tensor, batch: Batch, examples: list[Example]) -> torch.Tensor:
    """Mean over the examples of each one's class-balanced BCE over its non-topic entities
    (answers positive, weighted by negatives / positives), as one vectorized computation."""
    n = logits.shape[0]
    starts = batch.node_offsets[:-1]
    target = torch.zeros(n)
    target[torch.as_tensor(np.concatenate([e.local_answers + lo for e, lo in zip(examples, starts)]),
                           dtype=torch.long)] = 1.0
    mask = torch.ones(n, dtype=torch.bool)
    mask[batch.inputs[2]] = False
    graph = batch.inputs[7]
    count = torch.zeros(len(examples)).index_add_(0, graph, mask.float())
    positives = torch.zeros(len(examples)).index_add_(0, graph, target * mask).clamp(min=1)
    pos_weight = ((count - positives) / positives).index_select(0, graph)
    # BCE with pos_weight p: -(p y log s(x) + (1 - y) log(1 - s(x)))
    per_node = -(pos_weight * target * F.logsigmoid(logits) + (1 - target) * F.logsigmoid(-logits)) * mask
    per_example = torch.zeros(len(examples)).index_add_(0, graph, per_node) / count.clamp(min=1)
    return per_example.mean()


def _top_k(model, featurize, examples: list[Example], k: int, size: int = 16) -> list[np.ndarray]:
    """Local indices of the top k scored non-topic entities of each example."""
    out = []
    model.eval()
    with torch.no_grad():
        for chunk in _batches(examples, size):
            batch = featurize.batch(chunk)
            logits = model(*batch.inputs)[0]
            for i, ex in enumerate(chunk):
                scores = logits[batch.nodes_of(i)].clone()
                scores[torch.as_tensor(ex.subgraph.topics)] = -np.inf
                out.append(torch.topk(scores, min(k, len(scores))).indices.numpy())
    return out


def hits_at(model, featurize, examples: list[Example], k: int) -> float:
    """Share of examples with an answer among the top k scored non-topic entities."""
    if not examples:
        return 0.0
    tops = _top_k(model, featurize, examples, k)
    return sum(bool(set(top.tolist()) & set(ex.local_answers.tolist())) for top, ex in zip(tops, examples)) / len(examples)


def hits_at_many(model, featurize, examples: list[Example], ks) -> list[float]:
    """:func:`hits_at` for several k from one scoring pass."""
    if not examples:
        return [0.0 for _ in ks]
    tops = _top_k(model, featurize, examples, max(ks))
    return [sum(bool(set(top[:k].tolist()) & set(ex.local_answers.tolist())) for top, ex in zip(tops, examples))
            / len(examples) for k in ks]


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


def train(graph: KnowledgeGraph, examples: list[Example], featurize, config: TrainConfig, log=None,
          progress: bool = False):
    """Returns (model, history) with the best validation epoch's weights.

    ``progress``: show progress within each epoch (:class:`adapath.progress.Progress`).
    """
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    usable = [e for e in examples if len(e.local_answers)]
    if len(usable) < 4:
        raise InputError("too few training questions whose answers survive the subgraph bound")
    order = rng.permutation(len(usable))
    n_val = max(1, int(round(len(usable) * config.val_fraction)))
    val = [usable[i] for i in order[:n_val]]
    fit = [usable[i] for i in order[n_val:]]
    featurize.encode_nodes(usable, progress=progress)
    model = PathMindNet(len(graph.type_names), graph.num_relations, len(examples[0].query),
                        featurize(examples[0])[1].shape[1], hidden=config.hidden, layers=config.layers,
                        rounds=config.hops, prior=uses_prior(config), candidate=uses_candidate(config),
                        candidate_gain=config.candidate_gain, learn_candidate_gain=config.learn_candidate_gain)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    best, best_state, stale, history = -1.0, None, 0, []
    for epoch in range(1, config.epochs + 1):
        model.train()
        clock = time.perf_counter()
        total = 0.0
        shuffled = [fit[i] for i in rng.permutation(len(fit))]
        with _progress(progress, len(fit), f"epoch {epoch}", "questions") as bar:
            for chunk in _batches(shuffled, max(1, config.batch)):
                batch = featurize.batch(chunk)
                loss = batch_loss(model(*batch.inputs)[0], batch, chunk)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += float(loss.detach()) * len(chunk)
                bar.advance(len(chunk))
        seconds = time.perf_counter() - clock
        hits1, hits3 = hits_at_many(model, featurize, val, (1, 3))
        score = hits1 if config.select == "hits1" else hits3
        history.append({"epoch": epoch, "loss": total / max(len(fit), 1), "val_hits1": hits1, "val_hits3": hits3,
                        "seconds": seconds})
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


def uses_prior(config: TrainConfig) -> bool:
    """The cut's order helps where the cut reads the question; the uniform PPR's order misled the
    network on the synthetic test data (Hits@3 0.35 against 0.75 without it)."""
    return config.prior and config.subgraph != "ppr"


def uses_candidate(config: TrainConfig) -> bool:
    """The walk scorer's vote exists only where the Path-Bank guides the cut."""
    return config.candidate and config.subgraph == "metapath"


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
    # older models: cut by the uniform PPR, no prior input, no walk scorer's vote
    return model, TrainConfig(**{"subgraph": "ppr", "prior": False, "candidate": False, **meta["train"]})
