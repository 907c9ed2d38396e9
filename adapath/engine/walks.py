"""Every walk along a meta-path, weighted: sparse propagation over typed relation layers.

For a meta-path ``T0 -[r1]- T1 ... -[rH]- TH`` and a source node ``s``, a walk is
``s = v0, v1, ..., vH`` with ``(v_{k-1}, r_k, v_k)`` an edge of the graph and ``v_k`` of type
``T_k``. Its weight is

    w(walk) = prod_k  d_k(v_{k-1})^-damping * d'_k(v_k)^-damping * phi(v_k)

with ``d_k(u)`` the number of ``r_k`` edges from ``u`` into type ``T_k``, ``d'_k(v)`` the number
of ``r_k`` edges from ``v`` into type ``T_{k-1}`` (the degree weighting of Hetionet's
degree-weighted path count, DWPC, with its damping exponent) and ``phi(v) > 0`` a node
potential (what the query makes of ``v``). Walks may revisit nodes but never
enter an excluded node (the query's topics).

One step is ``x_k = (x_{k-1} W_k) * phi`` with ``W_k`` the damped layer of ``(r_k, T_{k-1},
T_k)``; ``x_H(v)`` is then the summed weight of every walk ending at ``v``. The product
gathers the layer rows of the current support (no walk is dropped, whatever the support's
size), and the same pass keeps the heaviest walk into each node (max-product) with its
predecessor, so the heaviest walks to any end are read back exactly. Lanes (one query and
one meta-path each) that share a source and a prefix of steps share that prefix's work.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from adapath.engine.graph import KnowledgeGraph
from adapath.kernels.walk_step import walk_step

DAMPING = 0.4  # Hetionet's DWPC exponent
SPARSE_SHARE = 16  # sums go through a sort when there are fewer entries than nodes / this


@dataclass
class Layer:
    """The damped adjacency of one relation from one node type into another, as CSR over
    all nodes (rows of other types are empty)."""

    indptr: np.ndarray
    indices: np.ndarray
    weights: np.ndarray

    def gather(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every entry of the given rows: (position in ``nodes``, column, weight)."""
        starts = self.indptr[nodes]
        counts = self.indptr[nodes + 1] - starts
        total = int(counts.sum())
        owner = np.repeat(np.arange(len(nodes)), counts)
        offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
        positions = starts[owner] + offsets
        return owner, self.indices[positions], self.weights[positions]

    def row(self, node: int) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = int(self.indptr[node]), int(self.indptr[node + 1])
        return self.indices[lo:hi], self.weights[lo:hi]


class RelationLayers:
    """Damped typed layers of a graph, built on first use and kept."""

    def __init__(self, graph: KnowledgeGraph, damping: float = DAMPING):
        self.graph, self.damping = graph, damping
        self._layers: dict[tuple[int, int, int], Layer] = {}
        self._order: np.ndarray | None = None  # half-edges by (relation, from type, to type), then row
        self._keys: np.ndarray | None = None

    def _key(self, relation, from_type, to_type):
        types = len(self.graph.type_names)
        return (np.asarray(relation, dtype=np.int64) * types + from_type) * types + to_type

    def layer(self, relation: int, from_type: int, to_type: int) -> Layer:
        key = (int(relation), int(from_type), int(to_type))
        if key not in self._layers:
            self._layers[key] = self._build(*key)
        return self._layers[key]

    def build_all(self) -> None:
        """Every layer the graph has (at PrimeKG's size 56 of them, about a second), so that
        answering does not pay for them batch by batch."""
        self._sort()
        types = len(self.graph.type_names)
        for key in np.unique(self._keys).tolist():
            self.layer(key // (types * types), key // types % types, key % types)

    def _sort(self) -> None:
        if self._order is None:  # one sort of the half-edges serves every layer
            g = self.graph
            node_type = np.asarray(g.node_type)
            keys = self._key(np.asarray(g.rel), node_type[g.src], node_type[np.asarray(g.indices)])
            if keys.size and keys.max() < 2**16:  # NumPy's stable sort of 16-bit keys is a radix sort
                keys = keys.astype(np.uint16)
            self._order = np.argsort(keys, kind="stable")
            self._keys = keys[self._order].astype(np.int64)

    def _build(self, relation: int, from_type: int, to_type: int) -> Layer:
        g = self.graph
        n = g.num_nodes
        self._sort()
        key = int(self._key(relation, from_type, to_type))
        lo, hi = np.searchsorted(self._keys, [key, key + 1])
        keep = self._order[lo:hi]  # stable: still in row order
        rows = g.src[keep].astype(np.int64)
        cols = np.asarray(g.indices)[keep].astype(np.int64)
        out_degree = np.bincount(rows, minlength=n).astype(np.float64)
        in_degree = np.bincount(cols, minlength=n).astype(np.float64)
        weights = out_degree[rows] ** -self.damping * in_degree[cols] ** -self.damping
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(out_degree.astype(np.int64), out=indptr[1:])
        return Layer(indptr, cols, weights)


@dataclass
class Step:
    """One depth of a lane: the nodes reached (sorted), the summed weight of the walks into
    each, the heaviest of them and its predecessor (a node of the previous depth)."""

    nodes: np.ndarray
    mass: np.ndarray
    best: np.ndarray
    previous: np.ndarray

    def at(self, node: int) -> int:
        """Position of ``node`` in ``nodes``, or -1."""
        i = int(np.searchsorted(self.nodes, node))
        return i if i < len(self.nodes) and self.nodes[i] == node else -1

    def value(self, nodes: np.ndarray, of: np.ndarray) -> np.ndarray:
        """``of`` (an array aligned with ``self.nodes``) at the given nodes, 0 where absent."""
        if len(self.nodes) == 0:
            return np.zeros(len(nodes))
        pos = np.minimum(np.searchsorted(self.nodes, nodes), len(self.nodes) - 1)
        return np.where(self.nodes[pos] == nodes, of[pos], 0.0)


@dataclass
class Lane:
    """One query's walks along one meta-path: the source, the step codes and what they give."""

    query: int  # whose potentials weigh the walks
    source: int
    relations: tuple[int, ...]
    types: tuple[int, ...]  # len(relations) + 1 node type codes, the source's first
    exclude: tuple[int, ...] = ()
    steps: list[Step] = field(default_factory=list)

    @property
    def hops(self) -> int:
        return len(self.relations)

    @property
    def end(self) -> Step:
        return self.steps[-1]


Potential = Callable[[int, np.ndarray], np.ndarray]  # (query, nodes) -> phi > 0


def _start(source: int) -> Step:
    nodes = np.array([source], dtype=np.int64)
    return Step(nodes, np.ones(1), np.ones(1), np.full(1, -1, dtype=np.int64))


def advance(step: Step, layer: Layer, potential: np.ndarray | Callable[[np.ndarray], np.ndarray],
            exclude: np.ndarray) -> Step:
    """One step of the sum-product and max-product over ``layer`` from ``step``: one pass over
    the rows of the current support (``kernels.walk_step``); each node's mass adds its entries
    in row order, the heaviest walk into it keeps its first heaviest predecessor."""
    n = len(layer.indptr) - 1
    scratch = _scratch(n)
    nodes, mass, best, first = walk_step(layer.indptr, layer.indices, layer.weights, step.nodes, step.mass,
                                         step.best, exclude, *scratch)
    if len(nodes) == 0:
        empty = np.zeros(0)
        return Step(np.zeros(0, dtype=np.int64), empty, empty, np.zeros(0, dtype=np.int64))
    phi = potential(nodes) if callable(potential) else potential
    return Step(nodes, mass * phi, best * phi, step.nodes[first])


_scratches = threading.local()


def _scratch(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per thread, arrays over all nodes that ``walk_step`` borrows (and hands back clean)."""
    found = getattr(_scratches, "arrays", None)
    if found is None or len(found[0]) != n:
        found = (np.full(n, -1, dtype=np.int64), np.zeros(n), np.zeros(n), np.zeros(n, dtype=np.int64))
        _scratches.arrays = found
    return found


def propagate(layers: RelationLayers, lanes: list[Lane], potential: Potential) -> list[Lane]:
    """Fill every lane's steps. Lanes with the same query, source, exclusions and step prefix
    share the work of that prefix."""
    done: dict[tuple, Step] = {}
    for lane in lanes:
        exclude = np.asarray(sorted(set(lane.exclude)), dtype=np.int64)
        key: tuple = (lane.query, lane.source, tuple(exclude.tolist()))
        step = done.setdefault(key, _start(lane.source))
        lane.steps = [step]
        for k in range(lane.hops):
            key = key + ((lane.relations[k], lane.types[k + 1]),)
            if key not in done:
                layer = layers.layer(lane.relations[k], lane.types[k], lane.types[k + 1])
                done[key] = advance(step, layer, lambda nodes, q=lane.query: potential(q, nodes), exclude)
            step = done[key]
            lane.steps.append(step)
    return lanes


def heaviest_walk(lane: Lane, end: int) -> tuple[list[int], float] | None:
    """The heaviest walk of a lane ending at ``end`` (nodes from the source) and its weight."""
    i = lane.end.at(end)
    if i < 0:
        return None
    weight = float(lane.end.best[i])
    nodes = [int(end)]
    for k in range(lane.hops, 0, -1):
        step = lane.steps[k]
        j = step.at(nodes[-1])
        nodes.append(int(step.previous[j]))
    return nodes[::-1], weight


def heaviest_walks_through(lane: Lane, end: int, layers: RelationLayers, potential: Potential,
                           count: int) -> list[tuple[list[int], float]]:
    """The heaviest walk into ``end`` through each of its ``count`` best last predecessors
    (the heaviest walk first): distinct last edges, each with its heaviest prefix."""
    if lane.end.at(end) < 0:
        return []
    if lane.hops == 1 or count <= 1:
        found = heaviest_walk(lane, end)
        return [found] if found else []
    k = lane.hops
    back = layers.layer(lane.relations[k - 1], lane.types[k], lane.types[k - 1])  # the layer reversed
    preds, weights = back.row(end)  # a damped layer's transpose is the reverse layer
    before = lane.steps[k - 1]
    values = before.value(preds, before.best) * weights
    phi = potential(lane.query, np.array([end]))[0]
    order = np.lexsort((preds, -values))
    out = []
    for i in order[:count]:
        if values[i] <= 0:
            break
        prefix = [int(preds[i])]
        for d in range(k - 1, 0, -1):
            step = lane.steps[d]
            prefix.append(int(step.previous[step.at(prefix[-1])]))
        out.append((prefix[::-1] + [int(end)], float(values[i] * phi)))
    return out


def through(lanes: list[Lane], weights: list[float], layers: RelationLayers, potential: Potential,
            ends: dict[int, float]) -> dict[int, dict[int, float]]:
    """Per depth, the weight of the walks of all lanes that pass each node there and end at
    one of ``ends`` (each end counted by its given weight): forward mass times backward mass."""
    parts: dict[int, tuple[list[np.ndarray], list[np.ndarray]]] = {}
    end_nodes = np.array(sorted(ends), dtype=np.int64)
    end_values = np.array([ends[int(v)] for v in end_nodes])
    for lane, weight in zip(lanes, weights):
        if not lane.steps or len(lane.end.nodes) == 0 or weight <= 0:
            continue
        back_nodes, back = end_nodes, end_values
        for k in range(lane.hops, 0, -1):
            step = lane.steps[k]
            forward = step.value(back_nodes, step.mass)
            alive = (forward > 0) & (back > 0)
            if not alive.any():
                break
            nodes_here, values_here = parts.setdefault(k, ([], []))
            nodes_here.append(back_nodes[alive])
            values_here.append(weight * forward[alive] * back[alive])
            if k == 1:
                break
            # backward mass one depth down: sum over the next node of W(u, v) phi(v) back(v)
            reverse = layers.layer(lane.relations[k - 1], lane.types[k], lane.types[k - 1])
            nodes = back_nodes[alive]
            owner, cols, w = reverse.gather(nodes)
            values = (back[alive] * potential(lane.query, nodes))[owner] * w
            back_nodes, back = _sum_into(cols, values, len(reverse.indptr) - 1)
    flow: dict[int, dict[int, float]] = {}
    for k, (nodes_here, values_here) in parts.items():
        unique, sums = sum_by_node(nodes_here, values_here)
        flow[k] = dict(zip(unique.tolist(), sums.tolist()))
    return flow


def _sum_into(cols: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The nonzero sums of ``values`` by ``cols`` as (sorted nodes, sums): few entries through a
    sort, many through an array over all ``n`` nodes; bincount adds each node's values in input
    order either way (the same bits)."""
    if len(cols) * SPARSE_SHARE < n:
        nodes, inverse = np.unique(cols, return_inverse=True)
        sums = np.bincount(inverse, weights=values, minlength=len(nodes))
        keep = sums != 0
        return nodes[keep], sums[keep]
    dense = np.bincount(cols, weights=values, minlength=n)
    nodes = np.flatnonzero(dense)
    return nodes, dense[nodes]


def sum_by_node(nodes: list[np.ndarray], values: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Values summed per node over the parts: (sorted nodes, sums). Each node's values are
    added in part order (bincount adds in input order), so the sums equal a loop's."""
    if not nodes:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    flat = np.concatenate(nodes).astype(np.int64)
    unique, inverse = np.unique(flat, return_inverse=True)
    return unique, np.bincount(inverse, weights=np.concatenate(values).astype(np.float64), minlength=len(unique))
