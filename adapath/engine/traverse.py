"""Traversal along meta-paths over the typed CSR."""

from __future__ import annotations

import numpy as np

from adapath.engine.graph import KnowledgeGraph
from adapath.engine.metapath import MetaPath
from adapath.kernels.expand import expand_mask, typed_slice


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


def typed_neighbors(graph: KnowledgeGraph, node: int, relation: int, node_type: int) -> np.ndarray:
    """Neighbours of ``node`` by a relation code into a type code (a CSR slice)."""
    return typed_slice(graph.indptr, graph.indices, graph.rel, graph.node_type,
                       int(node), int(relation), int(node_type))
