"""PathMind's query subgraph: the topics' k-hop neighbourhood, bounded by a node budget.

Three hops around a biomedical topic cover most of a graph of mean degree ~60, so the
neighbourhood is cut to ``budget`` nodes ranked by a topic-seeded personalized PageRank
(uniform query weights). Topics are always kept. How often the answer survives the bound is
reported by the trainer and the benchmark.

Half-edges are stored grouped by source as int32 (a subgraph of 400 nodes carries 10^4-10^5
of them, and training keeps every subgraph in memory), with their order by (target,
relation) beside them, which the network's sparse products use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from adapath.engine.graph import KnowledgeGraph
from adapath.engine.ppr import PPREngine
from adapath.engine.weights import QueryWeights
from adapath.kernels.subgraph import bfs_depths, induced_half_edges


@dataclass
class QuerySubgraph:
    nodes: np.ndarray  # global indices, sorted
    topics: np.ndarray  # local indices of the topics
    src: np.ndarray  # local half-edges (both directions), grouped by src in ascending order; int32
    dst: np.ndarray
    rel: np.ndarray
    depth: np.ndarray  # hop distance from the nearest topic, per local node
    in_order: np.ndarray  # the half-edges sorted by (dst, rel), ties in storage order; int32

    def local(self, global_nodes) -> np.ndarray:
        """Local indices of global nodes (-1 where absent)."""
        global_nodes = np.asarray(global_nodes, dtype=np.int64)
        pos = np.searchsorted(self.nodes, global_nodes)
        pos = np.minimum(pos, len(self.nodes) - 1)
        return np.where(self.nodes[pos] == global_nodes, pos, -1)


class SubgraphBuilder:
    def __init__(self, graph: KnowledgeGraph, hops: int = 3, budget: int = 400, tol: float = 1e-6):
        self.graph, self.hops, self.budget = graph, hops, budget
        self.ppr = PPREngine(graph, tol=tol)
        self._local_of = np.full(graph.num_nodes, -1, dtype=np.int64)

    def build_many(self, topic_sets: list[list[int]]) -> list[QuerySubgraph]:
        g = self.graph
        seeds = [t[0] for t in topic_sets]
        uniform = QueryWeights(np.ones((g.num_relations, 1)), np.zeros((g.num_nodes, 1)))  # shared by all seeds
        pi, _, _ = self.ppr.personalized(uniform, seeds)
        return [self._build(topics, pi[:, j]) for j, topics in enumerate(topic_sets)]

    def _build(self, topics: list[int], score: np.ndarray) -> QuerySubgraph:
        g = self.graph
        depth = None
        for t in topics:
            d = bfs_depths(g.indptr, g.indices, int(t), self.hops).astype(np.int64)
            depth = d if depth is None else np.where((d >= 0) & ((depth < 0) | (d < depth)), d, depth)
        within = np.flatnonzero(depth >= 0)
        if len(within) > self.budget:
            within = top_by_score(within, score[within], self.budget)
        nodes = np.union1d(within, np.asarray(topics, dtype=np.int64))
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
        return QuerySubgraph(nodes, local_topics, src.astype(np.int32), dst.astype(np.int32), rel.astype(np.int32),
                             inner, in_order.astype(np.int32))


def top_by_score(candidates: np.ndarray, score: np.ndarray, k: int) -> np.ndarray:
    """The k candidates of highest score, ties broken by smaller index (candidates ascending);
    in ascending order. A partition, not a full sort: the 3-hop ball is most of the graph."""
    threshold = np.partition(score, len(score) - k)[len(score) - k]
    above = candidates[score > threshold]
    tied = candidates[score == threshold][: k - len(above)]
    return np.sort(np.concatenate([above, tied]))
