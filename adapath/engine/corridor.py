"""The corridor: the top-K nodes by rho = pi_f * pi_b, plus topic and answer.

If topic and answer are not connected inside the top K, K climbs the ladder
(150 / 300 / 500 / 1000). If no rung connects them, a full-graph search bounded by the
maximum hop count takes the nodes on shortest topic-answer paths (ranked by rho, capped at
the last rung, one shortest path always kept). Each corridor records the K it used and
which fallback, if any, produced it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from adapath.engine.graph import KnowledgeGraph
from adapath.kernels.rank import top_nodes
from adapath.kernels.subgraph import bfs_depths, induced_half_edges, reaches

LADDER = (150, 300, 500, 1000)


def ranked_size(ladder, num_nodes: int) -> int:
    """How many of a pair's best nodes a corridor may read: the last rung and two more."""
    return min(max(ladder) + 2, num_nodes)


@dataclass
class Corridor:
    nodes: np.ndarray  # global node indices, topic and answer included
    k: int  # the rung used (0 when the bounded search produced it)
    fallback: str  # "" | "ladder" | "bounded-search" | "unreachable"
    induced: tuple | None = None  # (local src, local dst, global half-edge), when the ladder found it


class CorridorBuilder:
    def __init__(self, graph: KnowledgeGraph, ladder=LADDER, max_hop: int = 5):
        self.graph, self.ladder, self.max_hop = graph, tuple(ladder), max_hop
        self._local_of = np.full(graph.num_nodes, -1, dtype=np.int64)  # scratch, reset after use
        self._last = (None, None)  # the corridor's subgraph is asked for twice: keep the last

    def induced(self, nodes: np.ndarray):
        """(local src, local dst, global half-edge) of the subgraph induced by ``nodes``."""
        last_nodes, last = self._last
        if last_nodes is not None and np.array_equal(last_nodes, nodes):
            return last
        self._local_of[nodes] = np.arange(len(nodes))
        try:
            result = induced_half_edges(self.graph.indptr, self.graph.indices, nodes, self._local_of)
        finally:
            self._local_of[nodes] = -1
        self._last = (np.array(nodes, copy=True), result)
        return result

    def _connected(self, nodes: np.ndarray, topic_pos: int, answer_pos: int) -> bool:
        src, dst, _ = self.induced(nodes)
        return bool(reaches(src, dst, len(nodes), topic_pos, answer_pos))

    def ranked_size(self, num_nodes: int) -> int:
        """How many of a pair's best nodes ``build`` may read (``ranked_size``)."""
        return ranked_size(self.ladder, num_nodes)

    def build(self, rho: np.ndarray, topic: int, answer: int, order: np.ndarray | None = None) -> Corridor:
        """The corridor of one pair. ``order``: its best nodes by rho (ties by node index),
        at least ``ranked_size`` of them, when already ranked (``PPREngine.ranked``)."""
        if order is None:
            order = top_nodes(rho, self.ranked_size(len(rho)))
        for rung, k in enumerate(self.ladder):
            top = order[:k]
            nodes = np.union1d(top, [topic, answer])
            if self._connected(nodes, int(np.searchsorted(nodes, topic)), int(np.searchsorted(nodes, answer))):
                return Corridor(nodes, k, "" if rung == 0 else "ladder", self.induced(nodes))
        return self._bounded_search(rho, topic, answer)

    def _bounded_search(self, rho, topic, answer) -> Corridor:
        g = self.graph
        from_topic = bfs_depths(g.indptr, g.indices, topic, self.max_hop)
        distance = int(from_topic[answer])
        if distance < 0:
            return Corridor(np.array(sorted({topic, answer}), dtype=np.int64), 0, "unreachable")
        from_answer = bfs_depths(g.indptr, g.indices, answer, self.max_hop)
        on_shortest = np.flatnonzero((from_topic >= 0) & (from_answer >= 0)
                                     & (from_topic + from_answer == distance))
        # one shortest path, greedily by rho, so the capped corridor stays connected
        path = [answer]
        while path[-1] != topic:
            u = path[-1]
            nbrs = g.indices[g.indptr[u]:g.indptr[u + 1]]
            prev = nbrs[from_topic[nbrs] == from_topic[u] - 1]
            path.append(int(prev[np.lexsort((prev, -rho[prev]))][0]))
        cap = max(self.ladder)
        if len(on_shortest) > cap:
            on_shortest = on_shortest[np.lexsort((on_shortest, -rho[on_shortest]))][:cap]
        return Corridor(np.union1d(on_shortest, path), 0, "bounded-search")
