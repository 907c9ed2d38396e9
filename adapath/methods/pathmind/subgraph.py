"""PathMind's query subgraph: the topics' k-hop neighbourhood, bounded by a node budget.

Three hops around a biomedical topic cover most of a graph of mean degree ~60, so the
neighbourhood is cut to ``budget`` nodes ranked by a topic-seeded personalized PageRank
(uniform query weights). Topics are always kept. How often the answer survives the bound is
reported by the trainer and the benchmark.
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
    src: np.ndarray  # local half-edges (both directions)
    dst: np.ndarray
    rel: np.ndarray
    depth: np.ndarray  # hop distance from the nearest topic, per local node

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
            within = within[np.lexsort((within, -score[within]))[: self.budget]]
        nodes = np.union1d(within, np.asarray(topics, dtype=np.int64))
        self._local_of[nodes] = np.arange(len(nodes))
        try:
            src, dst, edge = induced_half_edges(g.indptr, g.indices, nodes, self._local_of)
        finally:
            self._local_of[nodes] = -1
        local_topics = np.searchsorted(nodes, np.asarray(topics, dtype=np.int64))
        # hop depth inside the subgraph (the budget may lengthen paths)
        n = len(nodes)
        inner = np.full(n, -1, dtype=np.int64)
        inner[local_topics] = 0
        frontier = list(local_topics)
        order = np.argsort(src, kind="stable")
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
        sorted_dst = dst[order]
        step = 0
        while frontier:
            step += 1
            nxt = []
            for u in frontier:
                for v in sorted_dst[indptr[u]:indptr[u + 1]].tolist():
                    if inner[v] < 0:
                        inner[v] = step
                        nxt.append(v)
            frontier = nxt
        return QuerySubgraph(nodes, local_topics, src, dst, g.rel[edge].astype(np.int64), inner)
