"""PathMind's query subgraph: the topics' k-hop neighbourhood, bounded by a node budget.

Three hops around a biomedical topic cover most of a graph of mean degree ~60, so the
neighbourhood is cut to ``budget`` nodes. Three ways to choose them (``mode``):

- ``ppr``: the nodes of highest topic-seeded personalized PageRank under uniform weights
  (question-blind), cut from the ball as they come (a kept node may lose its way to the
  topic inside the subgraph);
- ``question``: the PPR under the question's Eq. 1 weights (BM25 of node and relation text
  against the question, the decomposed form the Path-Bank uses), seeded at every topic; nodes
  are taken best first, each with its chain of parents back to a topic (a parent is the
  best-ranked neighbour one hop nearer), so every kept node lies on a whole path from a
  topic inside the subgraph;
- ``metapath``: AdaPath's Path-Bank guides the cut. The walks the walk scorer returns for its
  best candidates come first (whole), then the nodes on typed walks along the question's
  surviving meta-paths (ranked by the question PPR, each with its parents along the
  meta-path), then the ``question`` ranking tops the budget up.

Topics are always kept. ``prior`` records the order in which nodes were taken (1 for the
first, falling with the log of the rank to 0 for the last; a walk's end and a ranked candidate come before the parents taken to
connect them): what the cut knew about each node. A ``metapath`` cut also carries the walk
scorer's vote per node (``candidate``: 1 / rank among the scorer's candidates, 0 elsewhere).
How often the answer survives the bound is reported by the trainer and the benchmark.

Half-edges are stored grouped by source as int32 (a subgraph of 400 nodes carries 10^4-10^5
of them, and training keeps every subgraph in memory), with their order by (target,
relation) beside them, which the network's sparse products use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from adapath.engine.graph import KnowledgeGraph
from adapath.engine.ppr import PPREngine
from adapath.engine.weights import QueryWeights, query_weights
from adapath.errors import InputError
from adapath.kernels.expand import expand_mask
from adapath.kernels.subgraph import bfs_depths, induced_half_edges

MODES = ("ppr", "question", "metapath")


@dataclass
class QuerySubgraph:
    nodes: np.ndarray  # global indices, sorted
    topics: np.ndarray  # local indices of the topics
    src: np.ndarray  # local half-edges (both directions), grouped by src in ascending order; int32
    dst: np.ndarray
    rel: np.ndarray
    depth: np.ndarray  # hop distance from the nearest topic, per local node
    in_order: np.ndarray  # the half-edges sorted by (dst, rel), ties in storage order; int32
    prior: np.ndarray | None = None  # per local node: 1 taken first .. 0 taken last (float32)
    candidate: np.ndarray | None = None  # per local node: the walk scorer's vote (1 its best candidate, 0 none)

    def local(self, global_nodes) -> np.ndarray:
        """Local indices of global nodes (-1 where absent)."""
        global_nodes = np.asarray(global_nodes, dtype=np.int64)
        pos = np.searchsorted(self.nodes, global_nodes)
        pos = np.minimum(pos, len(self.nodes) - 1)
        return np.where(self.nodes[pos] == global_nodes, pos, -1)


@dataclass
class Guide:
    """What the Path-Bank says about one question: typed lanes (relation codes, type codes)
    of its surviving meta-paths, the scorer's walks (node lists from the topic), best first,
    and the scorer's candidate answers (node, score), best first."""

    lanes: list[tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=list)
    walks: list[list[int]] = field(default_factory=list)
    candidates: list[tuple[int, float]] = field(default_factory=list)
    layered: tuple | None = field(default=None, repr=False)  # typed_walk_layers, computed once


class SubgraphBuilder:
    def __init__(self, graph: KnowledgeGraph, hops: int = 3, budget: int = 400, tol: float = 1e-6,
                 mode: str = "ppr", text=None):
        """``text``: the graph's BM25 indexes (:class:`adapath.retrieval.bm25.GraphText`),
        needed by the ``question`` and ``metapath`` modes."""
        if mode not in MODES:
            raise InputError(f"--param subgraph={mode!r}: choose {', '.join(MODES)}")
        if mode != "ppr" and text is None:
            raise InputError(f"subgraph mode {mode!r} needs the graph's BM25 text indexes")
        self.graph, self.hops, self.budget, self.mode, self.text = graph, hops, budget, mode, text
        self.ppr = PPREngine(graph, tol=tol)
        self._local_of = np.full(graph.num_nodes, -1, dtype=np.int64)

    def scores(self, topic_sets: list[list[int]], texts: list[str] | None = None) -> np.ndarray:
        """N x B ranking scores: the uniform PPR from the first topic (``ppr``), else the sum
        over the topics of the PPR under the question's Eq. 1 weights."""
        g = self.graph
        if self.mode == "ppr":
            uniform = QueryWeights(np.ones((g.num_relations, 1)), np.zeros((g.num_nodes, 1)))  # shared by all seeds
            pi, _, _ = self.ppr.personalized(uniform, [t[0] for t in topic_sets])
            return pi
        s_node, s_rel = self.text.similarity(list(texts))
        weights = query_weights(s_node, s_rel)
        seeds = [int(t) for ts in topic_sets for t in ts]
        owner = np.repeat(np.arange(len(topic_sets)), [len(ts) for ts in topic_sets])
        pi, _, _ = self.ppr.personalized(weights, seeds, owner)
        out = np.zeros((g.num_nodes, len(topic_sets)))
        np.add.at(out.T, owner, pi.T)
        return out

    def build_many(self, topic_sets: list[list[int]], texts: list[str] | None = None,
                   guides: list[Guide | None] | None = None, score: np.ndarray | None = None) -> list[QuerySubgraph]:
        """``texts``: the questions (``question``, ``metapath``); ``guides``: the Path-Bank's
        guide per question (``metapath``; a question without one gets the ``question`` cut);
        ``score``: :meth:`scores` of these questions if already computed (another budget's cut)."""
        if self.mode != "ppr" and texts is None:
            raise InputError(f"subgraph mode {self.mode!r} needs the question texts")
        score = self.scores(topic_sets, texts) if score is None else score
        guides = guides if guides is not None else [None] * len(topic_sets)
        return [self._build(topics, score[:, j], guide) for j, (topics, guide) in enumerate(zip(topic_sets, guides))]

    def _build(self, topics: list[int], score: np.ndarray, guide: Guide | None = None) -> QuerySubgraph:
        g = self.graph
        depth = ball_depths(g, topics, self.hops)
        if self.mode == "ppr":
            within = np.flatnonzero(depth >= 0)
            if len(within) > self.budget:
                within = top_by_score(within, score[within], self.budget)
            taken = np.concatenate([np.asarray(topics, dtype=np.int64), within[np.argsort(-score[within], kind="stable")]])
            nodes = np.union1d(within, np.asarray(topics, dtype=np.int64))
        else:
            picker = ConnectedPicker(self.budget + len(set(topics)), topics)  # topics besides the budget
            if self.mode == "metapath" and guide is not None:
                for walk in guide.walks:
                    picker.add_path(walk)
                if guide.layered is None:
                    guide.layered = typed_walk_layers(g, topics[0], guide.lanes)
                layered = guide.layered
                if len(layered):
                    nodes_on, parent = layered
                    picker.add_ranked(nodes_on, score, parent(score))
            within = np.flatnonzero(depth > 0)
            picker.add_ranked(within, score, ball_parent(g, depth, score))
            taken = np.asarray(picker.order, dtype=np.int64)
            nodes = np.sort(taken)
        sub = self._assemble(nodes, topics, taken)
        if self.mode == "metapath":
            sub.candidate = candidate_vote(sub, guide.candidates if guide is not None else [])
        return sub

    def _assemble(self, nodes: np.ndarray, topics: list[int], taken: np.ndarray) -> QuerySubgraph:
        g = self.graph
        self._local_of[nodes] = np.arange(len(nodes))
        try:
            src, dst, edge = induced_half_edges(g.indptr, g.indices, nodes, self._local_of)
        finally:
            self._local_of[nodes] = -1
        local_topics = np.searchsorted(nodes, np.asarray(topics, dtype=np.int64))
        n = len(nodes)
        rel = g.rel[edge].astype(np.int64)
        # hop depth inside the subgraph (the budget may lengthen paths): BFS on the local CSR
        # (induced_half_edges lists the half-edges grouped by source, in node order)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
        inner = None
        for t in local_topics.tolist():
            d = bfs_depths(indptr, dst, int(t), n).astype(np.int64)
            inner = d if inner is None else np.where((d >= 0) & ((inner < 0) | (d < inner)), d, inner)
        key = dst * g.num_relations + rel
        if n * g.num_relations <= np.iinfo(np.uint16).max:
            key = key.astype(np.uint16)  # numpy sorts 16-bit keys by radix: linear time
        in_order = np.argsort(key, kind="stable")
        _, first = np.unique(taken, return_index=True)  # position each node was first taken at
        # log of the rank: the first few taken (the walks' ends, the best ranked) stand apart
        prior = (1.0 - np.log1p(first) / np.log1p(max(len(taken) - 1, 1))).astype(np.float32)
        return QuerySubgraph(nodes, local_topics, src.astype(np.int32), dst.astype(np.int32), rel.astype(np.int32),
                             inner, in_order.astype(np.int32), prior)


def candidate_vote(sub: QuerySubgraph, candidates: list[tuple[int, float]]) -> np.ndarray:
    """Per local node, the walk scorer's vote for it as the answer: 1 / rank among the scorer's
    candidates (1 for its best, 1/2 for the next, ...), 0 for every other node and for a
    candidate the cut left out."""
    vote = np.zeros(len(sub.nodes), dtype=np.float32)
    for rank, (v, _) in enumerate(candidates):
        at = int(sub.local([int(v)])[0])
        if at >= 0 and vote[at] == 0:
            vote[at] = 1.0 / (rank + 1)
    vote[sub.topics] = 0.0
    return vote


def ball_depths(graph: KnowledgeGraph, topics, hops: int) -> np.ndarray:
    """Hop distance from the nearest topic, -1 beyond ``hops``."""
    depth = None
    for t in topics:
        d = bfs_depths(graph.indptr, graph.indices, int(t), hops).astype(np.int64)
        depth = d if depth is None else np.where((d >= 0) & ((depth < 0) | (d < depth)), d, depth)
    return depth


def ball_parent(graph: KnowledgeGraph, depth: np.ndarray, score: np.ndarray) -> Callable[[int], int]:
    """A node's parent in the ball: its best-scored neighbour one hop nearer a topic (ties by
    the smaller index)."""

    def parent(v: int) -> int:
        nbrs, _ = graph.neighbors(v)
        nearer = np.unique(nbrs[depth[nbrs] == depth[v] - 1])
        return int(nearer[np.argmax(score[nearer])])

    return parent


def typed_walk_layers(graph: KnowledgeGraph, topic: int, lanes):
    """The nodes on complete typed walks from ``topic`` along each lane, and a maker of their
    parent function (for a node: the best-scored node one step back along a lane where it
    sits nearest the topic). Empty when no lane has a complete walk."""
    n = graph.num_nodes
    nearest = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)  # layer index of each node's place
    place = np.full(n, -1, dtype=np.int64)  # lane * 16 + layer index of that place
    layers_of: list[list[np.ndarray]] = []
    steps: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    for relations, types in lanes:
        if graph.node_type[topic] != types[0]:
            continue
        layers = [np.array([topic], dtype=np.int64)]
        for r, t in zip(relations, types[1:]):
            mask = np.zeros(n, dtype=bool)
            expand_mask(graph.indptr, graph.indices, graph.rel, graph.node_type, layers[-1], r, t, mask)
            layers.append(np.flatnonzero(mask))
        if len(layers[-1]) == 0:
            continue
        for i in range(len(layers) - 1, 0, -1):  # keep the nodes that lie on a complete walk
            mask = np.zeros(n, dtype=bool)
            expand_mask(graph.indptr, graph.indices, graph.rel, graph.node_type, layers[i], relations[i - 1],
                        types[i - 1], mask)
            layers[i - 1] = layers[i - 1][mask[layers[i - 1]]]
        k = len(layers_of)
        layers_of.append(layers)
        steps.append((tuple(relations), tuple(types)))
        for i in range(1, len(layers)):  # each node at its nearest layer, so parents step nearer
            nodes = layers[i]
            better = nodes[nearest[nodes] > i - 1]
            nearest[better] = i - 1
            place[better] = k * 16 + i - 1
    found = np.flatnonzero(place >= 0)
    found = found[found != topic]
    if len(found) == 0:
        return ()

    def make_parent(score: np.ndarray) -> Callable[[int], int]:
        def parent(v: int) -> int:
            key = int(place[v])
            relations, types = steps[key // 16]
            layer = key % 16
            nbrs, _ = graph.neighbors(v, relation=relations[layer], node_type=types[layer])
            back = layers_of[key // 16][layer]
            nbrs = np.unique(nbrs[np.isin(nbrs, back)])
            return int(nbrs[np.argmax(score[nbrs])])

        return parent

    return found, make_parent


class ConnectedPicker:
    """Takes nodes into a budget so that each comes with its chain of parents back to a kept
    node (the topics are kept first): no kept node is ever cut off from the topics."""

    def __init__(self, budget: int, topics):
        self.budget = budget
        self.kept: set[int] = set()
        self.order: list[int] = []
        for t in topics:
            self._take(int(t))

    def _take(self, v: int) -> None:
        if v not in self.kept:
            self.kept.add(v)
            self.order.append(v)

    @property
    def full(self) -> bool:
        return len(self.kept) >= self.budget

    def add_path(self, path: list[int]) -> bool:
        """A whole walk from a kept node (its first node), or nothing if it does not fit."""
        if not path or int(path[0]) not in self.kept:
            return False
        new = [int(v) for v in path if int(v) not in self.kept]
        if len(self.kept) + len(set(new)) > self.budget:
            return False
        for v in [path[-1], *path[:-1]]:  # the end first: it is what the walk was taken for
            self._take(int(v))
        return True

    def add_ranked(self, candidates: np.ndarray, score: np.ndarray, parent: Callable[[int], int]) -> None:
        """Candidates best score first (ties by smaller index), each with its missing parents;
        a candidate whose chain does not fit is passed over."""
        if self.full or len(candidates) == 0:
            return
        candidates = np.asarray(candidates, dtype=np.int64)
        order = candidates[np.lexsort((candidates, -score[candidates]))]
        misses = 0
        for v in order.tolist():
            if v in self.kept:
                continue
            chain = [v]
            while True:
                p = parent(chain[-1])
                if p in self.kept:
                    break
                chain.append(p)
            if len(self.kept) + len(chain) <= self.budget:
                for u in chain:  # the candidate first, then the parents that connect it
                    self._take(u)
                misses = 0
            else:
                misses += 1
            if self.full or misses > self.budget:  # the few slots left take no more whole chains
                return


def top_by_score(candidates: np.ndarray, score: np.ndarray, k: int) -> np.ndarray:
    """The k candidates of highest score, ties broken by smaller index (candidates ascending);
    in ascending order. A partition, not a full sort: the 3-hop ball is most of the graph."""
    threshold = np.partition(score, len(score) - k)[len(score) - k]
    above = candidates[score > threshold]
    tied = candidates[score == threshold][: k - len(above)]
    return np.sort(np.concatenate([above, tied]))
