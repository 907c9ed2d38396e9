"""A knowledge-graph embedding that judges triplets: DistMult trained on the graph's edges.

KGARevion's review judges a triplet with a model trained on the graph's triplets (KG
embeddings read by a fine-tuned LLM). This is the embedding half on its own:

- score(h, r, t) = sum_k e_h[k] * w_r[k] * e_t[k] (DistMult). It is symmetric, the same
  for (h, r, t) and (t, r, h), as fits the undirected triplets it judges.
- Training: every edge is a positive; each gets ``negatives`` corrupted copies, its head or
  its tail (one coin flip each) replaced by a random node of the same type that the graph
  does not join to the other end by that relation. Logistic loss with a small L2 penalty,
  Adam, ``epochs`` passes capped at ``max_steps`` mini-batches. Every random draw comes
  from ``seed``.
- Threshold: ``holdout`` of the edges (at most ``max_holdout``) are kept out of training;
  they and as many corrupted copies are scored, and the threshold is the midpoint that
  classifies them best (the lowest such on a tie).

The result is cached as npz (embeddings, threshold, the held-out accuracy) among the graph's
caches, under a name that holds the graph's checksum and every setting.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from adapath.fsutil import give_created_modes
from adapath.retrieval.cache_dir import GraphCache


@dataclass(frozen=True)
class KGEConfig:
    dim: int = 64
    epochs: int = 30
    max_steps: int = 3000
    batch: int = 2048
    negatives: int = 4
    lr: float = 0.02
    l2: float = 1e-5
    holdout: float = 0.05
    max_holdout: int = 20_000
    seed: int = 42

    def key(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:10]


@dataclass
class TripletScorer:
    entity: np.ndarray  # N x dim, float32
    relation: np.ndarray  # R x dim
    threshold: float
    holdout_accuracy: float

    def score(self, heads, relations, tails) -> np.ndarray:
        """DistMult scores of aligned index arrays."""
        h = self.entity[np.asarray(heads, dtype=np.int64)]
        r = self.relation[np.asarray(relations, dtype=np.int64)]
        t = self.entity[np.asarray(tails, dtype=np.int64)]
        return np.einsum("ij,ij,ij->i", h, r, t).astype(np.float64)

    def best(self, heads: list[int], relation: int, tails: list[int]) -> tuple[int, int, float]:
        """The (head, tail) pair of the candidates that scores highest, and its score."""
        pairs = [(h, t) for h in heads for t in tails]
        scores = self.score([h for h, _ in pairs], [relation] * len(pairs), [t for _, t in pairs])
        i = int(np.argmax(scores))
        return pairs[i][0], pairs[i][1], float(scores[i])

    def accepts(self, score: float) -> bool:
        return score >= self.threshold

    # ------------------------------------------------------------------ storage
    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp.npz", dir=path.parent)
        os.close(fd)
        try:
            np.savez(tmp, entity=self.entity, relation=self.relation,
                     threshold=np.float64(self.threshold), holdout_accuracy=np.float64(self.holdout_accuracy))
            give_created_modes(tmp)  # mkstemp's file is private
            os.replace(tmp, path)
        except OSError:
            Path(tmp).unlink(missing_ok=True)

    @classmethod
    def load(cls, path: Path) -> TripletScorer:
        with np.load(path, allow_pickle=False) as data:
            return cls(data["entity"].astype(np.float32), data["relation"].astype(np.float32),
                       float(data["threshold"]), float(data["holdout_accuracy"]))


# ---------------------------------------------------------------------- training
def _edge_keys(head: np.ndarray, relation: np.ndarray, tail: np.ndarray, n: int, r: int) -> np.ndarray:
    return (head.astype(np.int64) * r + relation.astype(np.int64)) * n + tail.astype(np.int64)


class _Corrupter:
    """Corrupted copies of edges: head or tail replaced by a same-type node that is no edge."""

    def __init__(self, graph, rng: np.random.Generator):
        self.n, self.r, self.rng = graph.num_nodes, graph.num_relations, rng
        head, rel, tail = graph.edges()
        both = np.concatenate([_edge_keys(head, rel, tail, self.n, self.r),
                               _edge_keys(tail, rel, head, self.n, self.r)])
        self.known = np.unique(both)
        types = np.asarray(graph.node_type)
        self.by_type_order = np.argsort(types, kind="stable")
        counts = np.bincount(types, minlength=int(types.max()) + 1 if len(types) else 0)
        self.type_start = np.concatenate([[0], np.cumsum(counts)])
        self.types = types

    def _same_type(self, nodes: np.ndarray) -> np.ndarray:
        t = self.types[nodes]
        start, size = self.type_start[t], self.type_start[t + 1] - self.type_start[t]
        pick = start + (self.rng.random(len(nodes)) * size).astype(np.int64)
        return self.by_type_order[np.minimum(pick, self.type_start[t + 1] - 1)]

    def is_edge(self, keys: np.ndarray) -> np.ndarray:
        if not len(self.known):
            return np.zeros(len(keys), dtype=bool)
        at = np.minimum(np.searchsorted(self.known, keys), len(self.known) - 1)
        return self.known[at] == keys

    def corrupt(self, head: np.ndarray, rel: np.ndarray, tail: np.ndarray, tries: int = 5):
        head, tail = head.copy(), tail.copy()
        side = self.rng.random(len(head)) < 0.5
        todo = np.arange(len(head))
        original_h, original_t = head.copy(), tail.copy()
        for _ in range(tries):  # redraw the few that hit a real edge (or the node itself)
            if not len(todo):
                break
            h_side = side[todo]
            head[todo[h_side]] = self._same_type(original_h[todo[h_side]])
            tail[todo[~h_side]] = self._same_type(original_t[todo[~h_side]])
            keys = _edge_keys(head[todo], rel[todo], tail[todo], self.n, self.r)
            hit = self.is_edge(keys) | ((head[todo] == original_h[todo]) & (tail[todo] == original_t[todo]))
            todo = todo[hit]
        return head, rel, tail


def best_threshold(positive: np.ndarray, negative: np.ndarray) -> tuple[float, float]:
    """(threshold, accuracy): the cut between sorted scores that classifies best (score >=
    threshold means true); the midpoint of the two scores it falls between."""
    scores = np.concatenate([positive, negative]).astype(np.float64)
    labels = np.concatenate([np.ones(len(positive)), np.zeros(len(negative))])
    order = np.argsort(scores, kind="stable")
    scores, labels = scores[order], labels[order]
    # cut i puts scores[:i] below the threshold: correct = negatives below + positives above
    neg_below = np.concatenate([[0], np.cumsum(1 - labels)])
    pos_above = len(positive) - np.concatenate([[0], np.cumsum(labels)])
    correct = neg_below + pos_above
    cuts = np.flatnonzero(np.concatenate([[True], scores[1:] > scores[:-1], [True]]))  # between distinct scores
    i = int(cuts[np.argmax(correct[cuts])])
    if i == 0:
        threshold = scores[0] - 1.0
    elif i == len(scores):
        threshold = scores[-1] + 1.0
    else:
        threshold = (scores[i - 1] + scores[i]) / 2
    return float(threshold), float(correct[i] / len(scores))


def train(graph, config: KGEConfig = KGEConfig()) -> TripletScorer:
    """DistMult embeddings of ``graph`` and their acceptance threshold (see the module)."""
    import torch

    rng = np.random.default_rng(config.seed)
    head, rel, tail = (np.asarray(a, dtype=np.int64) for a in graph.edges())
    m = len(head)
    order = rng.permutation(m)
    held = min(int(round(m * config.holdout)), config.max_holdout) if m > 1 else 0
    test, fit = order[:held], order[held:]
    corrupter = _Corrupter(graph, rng)

    torch.manual_seed(config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    entity = torch.nn.Embedding(graph.num_nodes, config.dim)
    relation = torch.nn.Embedding(max(graph.num_relations, 1), config.dim)
    torch.nn.init.normal_(entity.weight, std=0.1, generator=generator)
    torch.nn.init.normal_(relation.weight, mean=1.0, std=0.1, generator=generator)
    optimizer = torch.optim.Adam([entity.weight, relation.weight], lr=config.lr)

    steps_per_epoch = max(1, -(-len(fit) // config.batch))
    steps = min(config.epochs * steps_per_epoch, config.max_steps) if len(fit) else 0
    k = config.negatives
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small kernels: one thread is as fast, and never stalls on a busy machine
    try:
        with torch.enable_grad():
            for step in range(steps):
                if step % steps_per_epoch == 0:
                    fit = fit[rng.permutation(len(fit))]
                batch = fit[(step % steps_per_epoch) * config.batch:][: config.batch]
                h, r, t = head[batch], rel[batch], tail[batch]
                nh, nr, nt = corrupter.corrupt(np.repeat(h, k), np.repeat(r, k), np.repeat(t, k))
                hh = torch.from_numpy(np.concatenate([h, nh]))
                rr = torch.from_numpy(np.concatenate([r, nr]))
                tt = torch.from_numpy(np.concatenate([t, nt]))
                target = torch.cat([torch.ones(len(h)), torch.zeros(len(nh))])
                weight = torch.cat([torch.full((len(h),), float(k)), torch.ones(len(nh))])  # balance the classes
                eh, er, et = entity(hh), relation(rr), entity(tt)
                logits = (eh * er * et).sum(-1)
                loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, target, weight=weight) + \
                    config.l2 * (eh.pow(2).sum(-1) + et.pow(2).sum(-1) + er.pow(2).sum(-1)).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    finally:
        torch.set_num_threads(threads)

    scorer = TripletScorer(entity.weight.detach().numpy().astype(np.float32),
                           relation.weight.detach().numpy().astype(np.float32), 0.0, float("nan"))
    if held:
        nh, nr, nt = corrupter.corrupt(head[test], rel[test], tail[test])
        scorer.threshold, scorer.holdout_accuracy = best_threshold(
            scorer.score(head[test], rel[test], tail[test]), scorer.score(nh, nr, nt))
    return scorer


_TRAINED: dict[tuple[str, str], TripletScorer] = {}  # this process's scorers, so a rebuilt method trains once


def scorer_for_graph(graph, graph_dir: str | Path | None = None, config: KGEConfig = KGEConfig(),
                     cache_dir: str | Path | None = None) -> TripletScorer:
    """The cached scorer of ``graph`` with ``config``, trained (and cached) when there is none."""
    name = f"kge-distmult-{graph.checksum()[:12]}-{config.key()}"
    if (graph.checksum(), config.key()) in _TRAINED:
        return _TRAINED[graph.checksum(), config.key()]
    places = GraphCache(graph_dir, graph.checksum(), cache_dir) if graph_dir is not None else None
    found = places.find(name, "scorer.npz") if places is not None else None
    if found is not None:
        scorer = TripletScorer.load(found / "scorer.npz")
    else:
        scorer = train(graph, config)
        where = places.writable(name) if places is not None else None
        if where is not None:
            scorer.save(where / "scorer.npz")
    if len(_TRAINED) >= 4:
        _TRAINED.clear()
    _TRAINED[graph.checksum(), config.key()] = scorer
    return scorer
