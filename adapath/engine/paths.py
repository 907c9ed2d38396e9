"""k-shortest paths inside a corridor with AdaPath's Eq. 5 cost, binned by hop.

Edge cost ``c(u, v) = 1 / (alpha * w_q(u, r, v) + (1 - alpha) * rho_bar(u, v))`` where
``rho_bar`` is the mean of the endpoints' corridor scores after normalizing rho per query by
its maximum over the corridor (so it lies in [0, 1], the range of w up to eps). Between
parallel edges the cheapest relation is kept. Paths come from Yen's algorithm in cost
order and are binned by hop count, deduplicated by typed signature, n per hop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from adapath.engine.corridor import Corridor, CorridorBuilder
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.metapath import MetaPath
from adapath.kernels.yen import yen_k_shortest

ALPHA = 0.5


@dataclass
class FoundPath:
    nodes: np.ndarray  # global node indices
    relations: np.ndarray  # relation codes, one per hop
    cost: float

    @property
    def hops(self) -> int:
        return len(self.relations)

    def metapath(self, graph: KnowledgeGraph) -> MetaPath:
        return MetaPath(tuple(graph.type_names[t] for t in graph.node_type[self.nodes]),
                        tuple(graph.relation_names[r] for r in self.relations))


@dataclass
class LocalGraph:
    """The corridor as a local CSR with one (cheapest) cost and relation per neighbour pair."""

    nodes: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    cost: np.ndarray
    relation: np.ndarray
    keys: np.ndarray  # src * n + dst, sorted: the lookup for a step's relation


def corridor_graph(graph: KnowledgeGraph, builder: CorridorBuilder, corridor: Corridor,
                   a: np.ndarray, b: np.ndarray, rho: np.ndarray, alpha: float = ALPHA) -> LocalGraph:
    """Local CSR of the corridor with Eq. 5 costs for one query (a: R, b: N, rho: N)."""
    nodes = corridor.nodes
    n = len(nodes)
    src, dst, edge = builder.induced(nodes)
    rel = graph.rel[edge].astype(np.int64)
    gu, gv = nodes[src], nodes[dst]
    w = a[rel] + b[gu] + b[gv]
    top = rho[nodes].max()
    rho_bar = 0.5 * (rho[gu] + rho[gv]) / top if top > 0 else np.zeros(len(gu))
    cost = 1.0 / (alpha * w + (1.0 - alpha) * rho_bar)
    key = src * n + dst
    order = np.lexsort((rel, cost, key))
    key, cost, rel, dst, src = key[order], cost[order], rel[order], dst[order], src[order]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    key, cost, rel, dst, src = key[first], cost[first], rel[first], dst[first], src[first]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return LocalGraph(nodes, indptr, dst.astype(np.int64), cost, rel, key)


def k_shortest(local: LocalGraph, topic: int, answer: int, k: int) -> list[FoundPath]:
    """Yen's k cheapest simple topic-answer paths in the corridor (global indices)."""
    nodes = local.nodes
    s = int(np.searchsorted(nodes, topic))
    t = int(np.searchsorted(nodes, answer))
    if s == t or nodes[s] != topic or nodes[t] != answer:
        return []
    costs, paths = yen_k_shortest(local.indptr, local.indices, local.cost, s, t, k)
    n = len(nodes)
    found = []
    for cost, path in zip(costs.tolist(), paths):
        steps = path[:-1] * n + path[1:]
        relations = local.relation[np.searchsorted(local.keys, steps)]
        found.append(FoundPath(nodes[path], relations, cost))
    return found


def hop_bounded(local: LocalGraph, topic: int, answer: int, max_hop: int, per_hop: int,
                graph: KnowledgeGraph, pool: int = 200) -> list[FoundPath]:
    """The cheapest simple paths of each exact hop count 1..max_hop (up to ``per_hop``
    distinct typed signatures each).

    For hop count h, Yen runs on the layered DAG of (node, depth) copies of the corridor,
    where every source-target path is a walk of exactly h hops, in cost order; walks that
    revisit a node are dropped, which leaves the simple h-hop paths in cost order. ``pool``
    caps the walks enumerated per hop count.
    """
    nodes = local.nodes
    n = len(nodes)
    s = int(np.searchsorted(nodes, topic))
    t = int(np.searchsorted(nodes, answer))
    if s == t or nodes[s] != topic or nodes[t] != answer:
        return []
    src = np.repeat(np.arange(n), np.diff(local.indptr))
    dst, cost = local.indices, local.cost
    found: list[FoundPath] = []
    for h in range(1, max_hop + 1):
        heads, tails, costs = [], [], []
        for depth in range(h):
            keep = (dst != s) & ((dst != t) if depth < h - 1 else (dst == t)) & (src != t)
            if depth == 0:
                keep &= src == s
            heads.append(depth * n + src[keep])
            tails.append((depth + 1) * n + dst[keep])
            costs.append(cost[keep])
        head, tail, c = np.concatenate(heads), np.concatenate(tails), np.concatenate(costs)
        size = (h + 1) * n
        order = np.lexsort((tail, head))
        head, tail, c = head[order], tail[order], c[order]
        indptr = np.zeros(size + 1, dtype=np.int64)
        np.cumsum(np.bincount(head, minlength=size), out=indptr[1:])
        walk_costs, walks = yen_k_shortest(indptr, tail.astype(np.int64), c.astype(np.float64),
                                           s, h * n + t, pool)
        signatures: set[str] = set()
        for walk_cost, walk in zip(walk_costs.tolist(), walks):
            path = walk % n
            if len(set(path.tolist())) != len(path):
                continue
            steps = path[:-1] * n + path[1:]
            fp = FoundPath(nodes[path], local.relation[np.searchsorted(local.keys, steps)], walk_cost)
            signature = str(fp.metapath(graph))
            if signature in signatures:
                continue
            signatures.add(signature)
            found.append(fp)
            if len(signatures) == per_hop:
                break
    return found


def bin_by_hop(graph: KnowledgeGraph, paths: list[FoundPath], per_hop: int = 5,
               max_hop: int = 5) -> dict[int, list[FoundPath]]:
    """Cheapest first within each hop count 1..max_hop, one path per typed signature."""
    bins: dict[int, list[FoundPath]] = {}
    seen: set[tuple[int, str]] = set()
    for path in sorted(paths, key=lambda p: (p.cost, p.hops)):
        if not 1 <= path.hops <= max_hop:
            continue
        signature = str(path.metapath(graph))
        if (path.hops, signature) in seen or len(bins.get(path.hops, [])) >= per_hop:
            continue
        seen.add((path.hops, signature))
        bins.setdefault(path.hops, []).append(path)
    return dict(sorted(bins.items()))
