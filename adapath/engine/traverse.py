"""Traversal along meta-paths over the typed CSR."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from adapath.engine.graph import KnowledgeGraph
from adapath.engine.metapath import MetaPath
from adapath.errors import InputError
from adapath.kernels.expand import any_walk, expand_mask, typed_slice, walk_reaches


def metapath_codes(graph: KnowledgeGraph, metapath: MetaPath) -> tuple[np.ndarray, np.ndarray] | None:
    """(type codes, relation codes) of a meta-path, or None if the graph lacks a name."""
    try:
        types = np.array([graph.type_names.index(t) for t in metapath.types], dtype=np.int64)
        rels = np.array([graph.relation_names.index(r) for r in metapath.relations], dtype=np.int64)
    except ValueError:
        return None
    return types, rels


def reach(graph: KnowledgeGraph, sources, metapath: MetaPath) -> np.ndarray:
    """Every node reached from ``sources`` by a walk that follows the meta-path's relations
    and node types hop by hop (set semantics: walks may revisit nodes). Sorted indices."""
    codes = metapath_codes(graph, metapath)
    frontier = np.unique(np.asarray(sources, dtype=np.int64))
    if codes is None:
        return frontier[:0]
    types, rels = codes
    frontier = frontier[graph.node_type[frontier] == types[0]]
    for hop in range(metapath.hops):
        mask = np.zeros(graph.num_nodes, dtype=bool)
        expand_mask(graph.indptr, graph.indices, graph.rel, graph.node_type,
                    frontier, rels[hop], types[hop + 1], mask)
        frontier = np.flatnonzero(mask)
        if len(frontier) == 0:
            break
    return frontier


class WalkChecker:
    """Many "does a typed walk from this node along this meta-path end at that node?" checks
    on one graph (the same answer as ``target in reach(graph, [source], metapath)``), with
    scratch arrays and parsed meta-paths kept between checks."""

    def __init__(self, graph: KnowledgeGraph):
        self.graph = graph
        self._scratch = np.zeros((5, max(graph.num_nodes, 1)), dtype=np.int64)
        self._tick = 0
        self._codes: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}

    def codes(self, metapath: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(type codes, relation codes) of a meta-path's text; None when it does not parse or
        names a type or relation the graph lacks."""
        if metapath not in self._codes:
            try:
                parsed = MetaPath.parse(metapath)
            except (InputError, ValueError):
                parsed = None
            self._codes[metapath] = None if parsed is None else metapath_codes(self.graph, parsed)
        return self._codes[metapath]

    def reaches(self, source: int, metapath: str, target: int) -> bool:
        """Internal node indices; an unusable meta-path reaches nothing."""
        codes = self.codes(metapath)
        if codes is None:
            return False
        types, rels = codes
        g = self.graph
        reached, self._tick = walk_reaches(g.indptr, g.indices, g.rel, g.node_type, int(source), rels, types,
                                           int(target), self._scratch, self._tick)
        return bool(reached)


def realizable(graph: KnowledgeGraph, source: int, metapath: MetaPath) -> bool:
    """Whether some walk from ``source`` follows the meta-path to its end: ``len(reach(...)) >
    0``, found depth first, stopping at the first complete walk."""
    codes = metapath_codes(graph, metapath)
    if codes is None:
        return False
    types, rels = codes
    if graph.node_type[source] != types[0]:
        return False
    return bool(any_walk(graph.indptr, graph.indices, graph.rel, graph.node_type, int(source), rels, types))


def typed_neighbors(graph: KnowledgeGraph, node: int, relation: int, node_type: int) -> np.ndarray:
    """Neighbours of ``node`` by a relation code into a type code (a CSR slice)."""
    return typed_slice(graph.indptr, graph.indices, graph.rel, graph.node_type,
                       int(node), int(relation), int(node_type))


def _typed_segments(graph: KnowledgeGraph, node: int) -> list[tuple[int, int, np.ndarray]]:
    """A node's neighbours split by (relation, neighbour type): contiguous runs of its CSR row,
    which is sorted by (relation, neighbour type, neighbour)."""
    nbrs, rels = graph.neighbors(node)
    if len(nbrs) == 0:
        return []
    types = graph.node_type[nbrs]
    cut = np.flatnonzero((rels[1:] != rels[:-1]) | (types[1:] != types[:-1])) + 1
    bounds = [0, *cut.tolist(), len(nbrs)]
    return [(int(rels[lo]), int(types[lo]), nbrs[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])]


def _first_seen(parts) -> tuple[np.ndarray, np.ndarray]:
    """The distinct nodes of several (beam, nodes, meta-paths) parts in first-seen order, and
    the beam that saw each first."""
    if len(parts) == 1:
        b, nodes, _ = parts[0]
        return nodes, np.full(len(nodes), b, dtype=np.int64)
    every = np.concatenate([nodes for _, nodes, _ in parts])
    beam = np.concatenate([np.full(len(nodes), b, dtype=np.int64) for b, nodes, _ in parts])
    _, first = np.unique(every, return_index=True)
    first.sort()
    return every[first], beam[first]


# ---------------------------------------------------------------------------- guided search
#
# A traversal advances one depth at a time so that a driver can score the candidates of
# many queries in one batch (one LLM call per query and depth). Each query's state lists
# candidate groups at the current depth; the driver picks candidates; the state advances.



@dataclass
class Beam:
    nodes: list[int]
    relations: list[int]
    metapaths: tuple[int, ...]  # indices of the meta-paths this beam still follows (() = free)
    score: float = 0.0


@dataclass
class Candidate:
    beam: int  # index into the state's beams
    node: int
    relation: int
    metapaths: tuple[int, ...]


@dataclass
class Group:
    relation: int
    node_type: int
    parent: int  # the parent node
    candidates: list[Candidate]


@dataclass
class TraversalState:
    """One query's meta-path guided (or free) breadth-first search with a beam."""

    graph: KnowledgeGraph
    topic: int
    metapaths: list[tuple[np.ndarray, np.ndarray]]  # (type codes, relation codes); empty = free
    max_depth: int
    answer_type: int = -1  # >= 0: a path that reaches this type early is also kept as complete
    beams: list[Beam] = field(default_factory=list)
    complete: list[Beam] = field(default_factory=list)
    explored: dict[int, list[int]] = field(default_factory=dict)
    depth: int = 0

    def __post_init__(self):
        follow = tuple(range(len(self.metapaths)))
        self.beams = [Beam([self.topic], [], follow)]
        lengths = [len(rels) for _, rels in self.metapaths]
        self.target_depth = min(self.max_depth, max(lengths)) if lengths else self.max_depth

    @property
    def free(self) -> bool:
        return not self.metapaths

    @property
    def finished(self) -> bool:
        return self.depth >= self.target_depth or not self.beams

    def groups(self, prefilter=None, limit: int = 50) -> list[Group]:
        """Candidate groups at the next depth: one per (parent, relation, node type).

        Guided: only neighbours matching position d of a meta-path the beam follows. Free:
        every neighbour. Nodes already on the beam's path are skipped and empty groups
        dropped. Groups larger than ``limit`` keep the ``limit`` best by
        ``prefilter(nodes) -> scores`` (or the first ones). Neighbour lists stay arrays until
        that cut, so a hub costs array operations, not one Python object per neighbour.
        """
        g = self.graph
        d = self.depth
        # (parent, relation, type) -> [(beam, neighbour array, meta-paths)], in first-seen order
        merged: dict[tuple[int, int, int], list[tuple[int, np.ndarray, tuple[int, ...]]]] = {}
        for b, beam in enumerate(self.beams):
            parent = beam.nodes[-1]
            if self.free:
                options = [(r, t, nodes, ()) for r, t, nodes in _typed_segments(g, parent)]
            else:
                by_step: dict[tuple[int, int], list[int]] = {}
                for m in beam.metapaths:
                    types, rels = self.metapaths[m]
                    if len(rels) > d:
                        by_step.setdefault((int(rels[d]), int(types[d + 1])), []).append(m)
                options = [(r, t, typed_neighbors(g, parent, r, t), tuple(ms)) for (r, t), ms in by_step.items()]
            on_path = np.asarray(beam.nodes, dtype=np.int64)
            for r, t, nodes, ms in options:
                nodes = np.asarray(nodes, dtype=np.int64)
                nodes = nodes[~np.isin(nodes, on_path)]
                merged.setdefault((parent, r, t), []).append((b, nodes, ms))
        out = []
        for (parent, r, t), parts in merged.items():
            nodes, beams_of = _first_seen(parts)
            if len(nodes) == 0:
                continue
            if len(nodes) > limit:
                scores = prefilter(nodes) if prefilter is not None else -np.arange(len(nodes))
                keep = np.sort(np.lexsort((nodes, -scores))[:limit])
                nodes, beams_of = nodes[keep], beams_of[keep]
            candidates = []
            for v, b in zip(nodes.tolist(), beams_of.tolist()):
                ms = parts[0][2] if len(parts) == 1 else tuple(sorted(
                    {m for _, part_nodes, part_ms in parts if np.any(part_nodes == v) for m in part_ms}))
                candidates.append(Candidate(b, v, r, ms))
            out.append(Group(r, t, parent, candidates))
        return out

    def advance(self, chosen: list[tuple[Candidate, float]], considered: list[int]) -> None:
        """Move to the next depth keeping the chosen candidates (with their scores)."""
        self.depth += 1
        self.explored[self.depth] = sorted(set(considered))
        new = []
        for candidate, score in chosen:
            parent = self.beams[candidate.beam]
            beam = Beam(parent.nodes + [candidate.node], parent.relations + [candidate.relation],
                        candidate.metapaths, parent.score + score)
            if self.free:
                self.complete.append(beam)
                new.append(beam)
                continue
            lengths = [len(self.metapaths[m][1]) for m in candidate.metapaths]
            if any(n == self.depth for n in lengths) or self.graph.node_type[candidate.node] == self.answer_type:
                self.complete.append(beam)  # a full meta-path, or a shorter path to the answer type
            longer = tuple(m for m, n in zip(candidate.metapaths, lengths) if n > self.depth)
            if longer:
                new.append(Beam(beam.nodes, beam.relations, longer, beam.score))
        self.beams = new
