"""The evidence graph of BioStrat-QA records: ``node_metadata`` and ``triplets`` aligned with
``path_node_ids``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from adapath.engine.graph import KnowledgeGraph
from adapath.engine.schema import DISPLAY_RELATIONS, NODE_TYPES
from adapath.errors import InputError
from adapath.jsonl import iter_jsonl
from adapath.sources.tables import Vocabulary, assemble


def evidence_from_biostrat(paths: Iterable[str | Path]):
    """Nodes and triplets of BioStrat-QA records.

    Returns ``(nodes, edges)``: ``nodes`` maps id -> (name, type, description) and
    ``edges`` is a list of (head id, display relation, tail id). Triplet i joins
    ``path_node_ids[i]`` and ``path_node_ids[i+1]``; its names give the direction.
    """
    nodes: dict[int, tuple[str, str, str]] = {}
    edges: list[tuple[int, str, int]] = []
    for path in paths:
        for lineno, record in iter_jsonl(path):
            where = f"{path}:{lineno}"
            try:
                metadata = record["node_metadata"]
                path_ids = [int(v) for v in record["path_node_ids"]]
                triplets = record["triplets"]
            except (KeyError, TypeError, ValueError):
                raise InputError(f"{where}: record lacks node_metadata/path_node_ids/triplets") from None
            for meta in metadata:
                try:
                    node = int(meta["id"])
                    entry = (str(meta["name"]), str(meta["type"]), str(meta.get("description") or ""))
                except (KeyError, TypeError, ValueError):
                    raise InputError(f"{where}: node_metadata entry lacks an integer id, name or type") from None
                if entry[1] not in NODE_TYPES:
                    raise InputError(f"{where}: unknown node type {entry[1]!r}")
                old = nodes.get(node)
                if old is not None and old[1] != entry[1]:
                    raise InputError(f"{where}: node {node} has two types ({old[1]} and {entry[1]})")
                nodes.setdefault(node, entry)
            if len(triplets) != len(path_ids) - 1:
                raise InputError(f"{where}: {len(triplets)} triplets for {len(path_ids)} path nodes")
            for i, triplet in enumerate(triplets):
                try:
                    head_name, relation, tail_name = triplet
                except (TypeError, ValueError):
                    raise InputError(f"{where}: triplet {i} is not [head, relation, tail]") from None
                a, b = path_ids[i], path_ids[i + 1]
                if a not in nodes or b not in nodes:
                    raise InputError(f"{where}: path node without node_metadata")
                if (nodes[a][0], nodes[b][0]) == (head_name, tail_name):
                    edges.append((a, relation, b))
                elif (nodes[b][0], nodes[a][0]) == (head_name, tail_name):
                    edges.append((b, relation, a))
                else:
                    raise InputError(f"{where}: triplet {i} names do not match its path nodes")
    return nodes, edges


def load_biostrat(paths: Iterable[str | Path]) -> KnowledgeGraph:
    """The evidence graph of BioStrat-QA records: their nodes and triplets, nothing else."""
    nodes, edges = evidence_from_biostrat(paths)
    types = Vocabulary(NODE_TYPES, "node type", growable=False)
    relations = Vocabulary(DISPLAY_RELATIONS, "relation", growable=True)
    ids = np.array(sorted(nodes), dtype=np.int64)
    codes = [types.code(nodes[i][1], "records") for i in ids.tolist()]
    heads = np.array([e[0] for e in edges], dtype=np.int64)
    tails = np.array([e[2] for e in edges], dtype=np.int64)
    rels = np.array([relations.code(e[1], "records") for e in edges], dtype=np.int64)
    return assemble(ids, codes, heads, tails, rels,
                     {i: v[0] for i, v in nodes.items()}, {i: v[2] for i, v in nodes.items()},
                     types.names, relations.names)
