"""A generic graph as two tables, CSV or Parquet: edges (head, relation, tail) and nodes
(id, name, type, description)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from adapath.engine.graph import KnowledgeGraph
from adapath.engine.schema import DISPLAY_RELATIONS, NODE_TYPES
from adapath.errors import InputError
from adapath.sources.tables import Vocabulary, assemble, int_column, read_table


def load_edges(edges: str | Path, nodes: str | Path, allow_new_types: bool = False) -> KnowledgeGraph:
    """Generic tables: edges (head, relation, tail) and nodes (id, name, type, description)."""
    edges, nodes = Path(edges), Path(nodes)
    node_table, node_line = read_table(nodes, ("id", "name", "type", "description"))
    edge_table, edge_line = read_table(edges, ("head", "relation", "tail"))
    ids = int_column(node_table, "id", nodes, node_line)
    types = Vocabulary(NODE_TYPES, "node type", growable=allow_new_types)
    relations = Vocabulary(DISPLAY_RELATIONS, "relation", growable=True)
    seen: dict[int, int] = {}
    codes = []
    for i, (node, type_name) in enumerate(zip(ids.tolist(), node_table.column("type").to_pylist())):
        where = f"{nodes}:{node_line + i}" if node_line else f"{nodes} row {i}"
        code = types.code(type_name, where)
        if node in seen:
            if codes[seen[node]] != code:
                raise InputError(f"{where}: node {node} has two types")
            raise InputError(f"{where}: node {node} listed twice")
        seen[node] = len(codes)
        codes.append(code)
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    heads = int_column(edge_table, "head", edges, edge_line)
    tails = int_column(edge_table, "tail", edges, edge_line)
    for column, values in (("head", heads), ("tail", tails)):
        pos = np.minimum(np.searchsorted(sorted_ids, values), max(len(sorted_ids) - 1, 0))
        bad = np.flatnonzero(sorted_ids[pos] != values) if len(sorted_ids) else np.arange(len(values))
        if len(bad):
            row = int(bad[0])
            where = f"{edges}:{edge_line + row}" if edge_line else f"{edges} row {row}"
            raise InputError(f"{where}: {column} {int(values[row])} is not in {nodes}")
    rel_codes = np.array([relations.code(r, str(edges)) for r in edge_table.column("relation").to_pylist()],
                         dtype=np.int64)
    id_list = ids.tolist()
    names = dict(zip(id_list, node_table.column("name").to_pylist()))
    descriptions = dict(zip(id_list, node_table.column("description").to_pylist()))
    return assemble(sorted_ids, np.asarray(codes)[order], heads, tails, rel_codes,
                     names, descriptions, types.names, relations.names)
