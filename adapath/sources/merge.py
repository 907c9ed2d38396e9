"""Several real bases as one: nodes of one type that share a cross-reference are one node.

Bases are read in order. A node of a later base joins every earlier node of its type with
which it shares an identifier (``OMIM:…``, ``ORPHA:…``, …), unless that node already holds
a node of the same base: two nodes of one base stay two (a base's nodes are distinct by
construction), so one HPO disease never fuses two PrimeKG diseases. A merged node takes
the name, description and group of its latest base (an empty one is filled from earlier
bases), the union of the identifiers, and every base's edges (duplicates and self-loops
dropped). Node ids are 0..M-1 in order of first appearance.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from adapath.engine.graph import KnowledgeGraph
from adapath.engine.schema import NODE_TYPES, relation_description
from adapath.errors import InputError
from adapath.sources.xref import Base, load_base


class _Sets:
    """Union-find over global node positions, each set remembering the bases it holds."""

    def __init__(self):
        self.parent: list[int] = []
        self.bases: list[set[int]] = []

    def add(self, base: int) -> int:
        self.parent.append(len(self.parent))
        self.bases.append({base})
        return len(self.parent) - 1

    def find(self, x: int) -> int:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        a, b = self.find(a), self.find(b)
        if a != b:
            a, b = min(a, b), max(a, b)
            self.parent[b] = a
            self.bases[a] |= self.bases[b]


def merge_bases(bases: list[Base]) -> tuple[Base, dict]:
    """One base from several; the report counts, per later base and type, the nodes that
    joined earlier ones and the earlier nodes they absorbed."""
    if not bases:
        raise InputError("no base to merge")
    for b in bases:
        unknown = set(b.graph.type_names) - set(NODE_TYPES)
        if unknown:
            raise InputError(f"a base has node type {sorted(unknown)[0]!r}, not one of PrimeKG's")
    sets = _Sets()
    owners: dict[tuple[str, str], list[int]] = defaultdict(list)  # (type, xref) -> positions
    offsets, report = [], {}
    for k, base in enumerate(bases):
        offsets.append(len(sets.parent))
        joined: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for i in range(base.graph.num_nodes):
            g = sets.add(k)
            type_name = base.graph.type_name(i)
            keys = [(type_name, x) for x in base.xrefs[i]]
            targets = {sets.find(o) for key in keys for o in owners.get(key, ())}
            targets = sorted(t for t in targets if k not in sets.bases[t])
            if targets:
                joined[type_name][0] += 1
                joined[type_name][1] += len(targets)
                for t in targets:
                    sets.union(t, g)
            for key in keys:
                owners[key].append(g)
        if k:
            report[k] = {t: {"joined": c[0], "earlier": c[1]} for t, c in sorted(joined.items())}
    return _assemble(bases, sets, offsets), report


def load_bases(directories: list[Path]) -> tuple[Base, dict]:
    """One base directory as it is (its cross-references and groups where it has them), or
    several merged; the report is keyed by the index of each later directory."""
    if len(directories) == 1:
        return load_base(directories[0], require_xref=False), {}
    return merge_bases([load_base(d) for d in directories])


def _assemble(bases: list[Base], sets: _Sets, offsets: list[int]) -> Base:
    total = len(sets.parent)
    root = np.array([sets.find(g) for g in range(total)], dtype=np.int64)
    _, first, merged = np.unique(root, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # merged nodes in order of first appearance
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    node_of = rank[merged]  # global position -> merged node
    m = len(order)
    names, descriptions, groups = [""] * m, [""] * m, [""] * m
    xrefs: list[list[str]] = [[] for _ in range(m)]
    node_type = np.zeros(m, dtype=np.int8)
    relation_names: list[str] = []
    rel_code: dict[str, int] = {}
    heads, tails, rels = [], [], []
    for base, offset in zip(bases, offsets):  # later bases overwrite earlier text
        graph = base.graph
        base_names, base_desc = graph.names.to_pylist(), graph.descriptions.to_pylist()
        for i in range(graph.num_nodes):
            v = int(node_of[offset + i])
            node_type[v] = NODE_TYPES.index(graph.type_name(i))
            names[v] = base_names[i] or names[v]
            descriptions[v] = base_desc[i] or descriptions[v]
            groups[v] = base.groups[i] or groups[v]
            xrefs[v] += [x for x in base.xrefs[i] if x not in xrefs[v]]
        codes = np.array([rel_code.setdefault(r, len(rel_code)) for r in graph.relation_names], dtype=np.int64)
        h, r, t = graph.edges()
        heads.append(node_of[offset + h.astype(np.int64)])
        tails.append(node_of[offset + t.astype(np.int64)])
        rels.append(codes[r] if len(r) else np.zeros(0, np.int64))
    relation_names = list(rel_code)
    head, tail, rel = np.concatenate(heads), np.concatenate(tails), np.concatenate(rels)
    keep = head != tail
    edges = np.unique(np.stack([head[keep], rel[keep], tail[keep]], axis=1), axis=0)
    graph = KnowledgeGraph.from_edges(
        edges[:, 0], edges[:, 2], edges[:, 1], node_type=node_type,
        node_id=np.arange(m, dtype=np.int64), names=names, descriptions=descriptions,
        type_names=NODE_TYPES, relation_names=tuple(relation_names),
        relation_descriptions=tuple(relation_description(r) for r in relation_names),
    )
    return Base(graph, xrefs, groups)
