"""k-shortest paths inside a corridor with AdaPath's Eq. 5 cost, binned by hop.

Edge cost ``c(u, v) = 1 / (alpha * w_q(u, r, v) + (1 - alpha) * rho_bar(u, v))`` where
``rho_bar`` is the mean of the endpoints' corridor scores after normalizing rho per query by
its maximum over the corridor (so it lies in [0, 1], the range of w up to eps). Node paths
come from Yen's algorithm in cost order over the cheapest edge of each node pair; a pair
joined by several relations gives a path several relation sequences, and each found node
path registers its cheapest ``relation_sequences`` of them (each with its own cost), so a
meta-path through a second relation is not lost behind the first. Paths are binned by hop
count, deduplicated by typed signature, n per hop.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from adapath.engine.corridor import Corridor, CorridorBuilder
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.metapath import MetaPath
from adapath.kernels.sequences import one_edge_sequences
from adapath.kernels.subgraph import row_order
from adapath.kernels.yen import yen_k_shortest, yen_k_shortest_flat

ALPHA = 0.5
RELATION_SEQUENCES = 8  # relation sequences registered per found node path, cheapest first
HOP_POOL = 200  # hop-bounded search: walks enumerated per hop count at most


@dataclass
class FoundPath:
    nodes: np.ndarray  # global node indices
    relations: np.ndarray  # relation codes, one per hop
    cost: float

    @property
    def hops(self) -> int:
        return len(self.relations)

    def metapath(self, graph: KnowledgeGraph) -> MetaPath:
        types, relations = graph.type_names, graph.relation_names  # codes as Python ints: no NumPy scalars
        return MetaPath(tuple(types[t] for t in graph.node_type[self.nodes].tolist()),
                        tuple(relations[r] for r in self.relations.tolist()))


@dataclass
class LocalGraph:
    """The corridor as a local CSR with one (cheapest) cost and relation per neighbour pair,
    and beside it every parallel edge, for the relation sequences of a found node path."""

    nodes: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    cost: np.ndarray
    relation: np.ndarray
    keys: np.ndarray  # src * n + dst, sorted: the lookup for a step's relation
    edge_keys: np.ndarray  # every half-edge's src * n + dst, sorted by (key, cost, relation)
    edge_cost: np.ndarray
    edge_relation: np.ndarray

    def relation_sequences(self, path: np.ndarray, cap: int) -> list[tuple[np.ndarray, float]]:
        """The ``cap`` cheapest relation sequences along a local node path, as (relation
        codes, cost), cheapest first (ties in the order of the relations' codes)."""
        n = len(self.nodes)
        steps = path[:-1] * n + path[1:]
        lo = np.searchsorted(self.edge_keys, steps, side="left")
        hi = np.searchsorted(self.edge_keys, steps, side="right")
        if cap >= 1 and np.all(hi - lo == 1):  # one edge per step (most paths): one sequence
            return [(self.edge_relation[lo].astype(np.int64), float(sum(self.edge_cost[lo].tolist())))]
        options = [(self.edge_cost[a:b].tolist(), self.edge_relation[a:b]) for a, b in zip(lo, hi)]

        def total(choice: tuple[int, ...]) -> float:
            cost = 0.0
            for (costs, _), i in zip(options, choice):
                cost += costs[i]
            return cost

        # best-first over choice vectors: each popped vector's successors raise one step's choice
        first = (0,) * len(options)
        heap, seen, out = [(total(first), first)], {first}, []
        while heap and len(out) < cap:
            cost, choice = heapq.heappop(heap)
            out.append((np.array([rels[i] for (_, rels), i in zip(options, choice)], dtype=np.int64), cost))
            for step, (costs, _) in enumerate(options):
                if choice[step] + 1 < len(costs):
                    nxt = choice[:step] + (choice[step] + 1,) + choice[step + 1:]
                    if nxt not in seen:
                        seen.add(nxt)
                        heapq.heappush(heap, (total(nxt), nxt))
        return out

    def found_paths(self, path: np.ndarray, cap: int) -> list[FoundPath]:
        return [FoundPath(self.nodes[path], relations, cost)
                for relations, cost in self.relation_sequences(path, cap)]


def corridor_graph(graph: KnowledgeGraph, builder: CorridorBuilder, corridor: Corridor,
                   a: np.ndarray, b: np.ndarray, rho: np.ndarray, alpha: float = ALPHA) -> LocalGraph:
    """Local CSR of the corridor with Eq. 5 costs for one query (a: R, b: N, rho: N)."""
    nodes = corridor.nodes
    n = len(nodes)
    src, dst, edge = corridor.induced if corridor.induced is not None else builder.induced(nodes)
    rel = graph.rel[edge].astype(np.int64)
    gu, gv = nodes[src], nodes[dst]
    w = a[rel] + b[gu] + b[gv]
    top = rho[nodes].max()
    rho_bar = 0.5 * (rho[gu] + rho[gv]) / top if top > 0 else np.zeros(len(gu))
    cost = 1.0 / (alpha * w + (1.0 - alpha) * rho_bar)
    if len(src) and np.all(src[1:] >= src[:-1]):  # in row order, as the induced subgraph gives it
        order = row_order(src, dst, cost, rel)
    else:
        order = np.lexsort((rel, cost, src * n + dst))
    cost, rel, dst, src = cost[order], rel[order], dst[order], src[order]
    key = src * n + dst
    edge_keys, edge_cost, edge_rel = key, cost, rel
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    key, cost, rel, dst, src = key[first], cost[first], rel[first], dst[first], src[first]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return LocalGraph(nodes, indptr, dst.astype(np.int64), cost, rel, key, edge_keys, edge_cost, edge_rel)


def k_shortest(local: LocalGraph, topic: int, answer: int, k: int,
               relation_sequences: int = RELATION_SEQUENCES) -> list[FoundPath]:
    """Yen's k cheapest simple topic-answer node paths in the corridor (global indices),
    each with its ``relation_sequences`` cheapest relation sequences."""
    nodes = local.nodes
    s = int(np.searchsorted(nodes, topic))
    t = int(np.searchsorted(nodes, answer))
    if s == t or nodes[s] != topic or nodes[t] != answer:
        return []
    _, offsets, flat = yen_k_shortest_flat(local.indptr, local.indices, local.cost, s, t, k)
    # every path's one-edge relation sequence in one call without the GIL; the few paths
    # with a step of several edges take the best-first search over their choices
    single, cost, relations = one_edge_sequences(local.edge_keys, local.edge_cost, local.edge_relation,
                                                 len(nodes), flat, offsets)
    found_nodes = nodes[flat]
    found = []
    for i in range(len(offsets) - 1):
        lo, hi = int(offsets[i]), int(offsets[i + 1])
        if single[i] and relation_sequences >= 1:
            found.append(FoundPath(found_nodes[lo:hi], relations[lo - i:hi - i - 1], float(cost[i])))
        else:
            found += local.found_paths(flat[lo:hi], relation_sequences)
    return found


def hop_bounded(local: LocalGraph, topic: int, answer: int, max_hop: int, per_hop: int,
                graph: KnowledgeGraph, pool: int = HOP_POOL,
                relation_sequences: int = RELATION_SEQUENCES) -> list[FoundPath]:
    """The cheapest simple paths of each exact hop count 1..max_hop (at least the ``per_hop``
    cheapest distinct typed signatures each, over every relation sequence of a node path).

    For hop count h, Yen runs on the layered DAG of (node, depth) copies of the corridor,
    where every source-target path is a walk of exactly h hops, in cost order; walks that
    revisit a node are dropped, which leaves the simple h-hop paths in cost order. ``pool``
    caps the walks enumerated per hop count. A walk's relation sequences cost at least the
    walk, so the enumeration stops once ``per_hop`` signatures cost no more than the walk.
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
        cheapest: dict[str, float] = {}  # signature -> its cheapest cost so far
        for walk_cost, walk in zip(walk_costs.tolist(), walks):
            if sum(c <= walk_cost for c in cheapest.values()) >= per_hop:
                break
            path = walk % n
            if len(set(path.tolist())) != len(path):
                continue
            for fp in local.found_paths(path, relation_sequences):
                signature = str(fp.metapath(graph))
                cheapest[signature] = min(cheapest.get(signature, fp.cost), fp.cost)
                found.append(fp)  # bin_by_hop keeps each signature's cheapest
    return found


def bin_by_hop(graph: KnowledgeGraph, paths: list[FoundPath], per_hop: int = 5,
               max_hop: int = 5) -> dict[int, list[FoundPath]]:
    """Cheapest first within each hop count 1..max_hop, one path per typed signature."""
    bins: dict[int, list[FoundPath]] = {}
    seen: set[tuple[int, str]] = set()
    for path in sorted(paths, key=lambda p: (p.cost, p.hops)):
        if not 1 <= path.hops <= max_hop or len(bins.get(path.hops, [])) >= per_hop:
            continue
        signature = str(path.metapath(graph))
        if (path.hops, signature) in seen:
            continue
        seen.add((path.hops, signature))
        bins.setdefault(path.hops, []).append(path)
    return dict(sorted(bins.items()))
