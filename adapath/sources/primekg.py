"""PrimeKG's ``kg.csv``, streamed with Arrow (every relationship appears in both directions and is
stored once), with an optional nodes table for descriptions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from adapath.engine.graph import KnowledgeGraph
from adapath.engine.schema import DISPLAY_RELATIONS, NODE_TYPES
from adapath.errors import InputError
from adapath.sources.tables import (
    Vocabulary,
    assemble,
    codes,
    int_column,
    locate_csv_problem,
    read_header,
    read_table,
    require_columns,
)

PRIMEKG_COLUMNS = (
    "relation", "display_relation",
    "x_index", "x_id", "x_type", "x_name", "x_source",
    "y_index", "y_id", "y_type", "y_name", "y_source",
)
_PRIMEKG_USED = ("display_relation", "x_index", "x_type", "x_name", "y_index", "y_type", "y_name")
NODES_COLUMNS = ("node_index", "name", "type", "description")


def load_primekg(kg_csv: str | Path, nodes: str | Path | None = None,
                 block_size: int = 1 << 25, progress=None) -> KnowledgeGraph:
    """Stream PrimeKG's kg.csv into a graph; ``x_index``/``y_index`` stay the node ids."""
    path = Path(kg_csv)
    header = read_header(path)
    require_columns(path, header, _PRIMEKG_USED)
    column_types = {c: pa.string() for c in _PRIMEKG_USED}
    column_types["x_index"] = column_types["y_index"] = pa.int64()
    try:
        reader = pacsv.open_csv(
            path,
            read_options=pacsv.ReadOptions(block_size=block_size),
            convert_options=pacsv.ConvertOptions(
                include_columns=list(_PRIMEKG_USED), column_types=column_types,
                strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid:
        raise InputError(locate_csv_problem(path, ("x_index", "y_index"))) from None

    types = Vocabulary(NODE_TYPES, "node type", growable=False)
    relations = Vocabulary(DISPLAY_RELATIONS, "relation", growable=True)
    node_type = np.full(1024, -1, dtype=np.int8)
    named = np.zeros(1024, dtype=bool)
    names: dict[int, str] = {}
    heads, tails, rels = [], [], []
    rows_done = 0
    try:
        for batch in reader:
            n = batch.num_rows
            x = batch.column("x_index").to_numpy()
            y = batch.column("y_index").to_numpy()
            if n and min(x.min(), y.min()) < 0:
                bad = int(np.flatnonzero((x < 0) | (y < 0))[0])
                raise InputError(f"{path}:{rows_done + bad + 2}: negative node index")
            xt = codes(batch.column("x_type"), types, path, rows_done)
            yt = codes(batch.column("y_type"), types, path, rows_done)
            rc = codes(batch.column("display_relation"), relations, path, rows_done)
            top = int(max(x.max(), y.max())) + 1 if n else 0
            if top > len(node_type):
                size = max(top, 2 * len(node_type))
                grown = np.full(size, -1, dtype=np.int8)
                grown[: len(node_type)] = node_type
                node_type = grown
                named = np.concatenate([named, np.zeros(size - len(named), bool)])
            idx = np.concatenate([x, y])
            t = np.concatenate([xt, yt]).astype(np.int8)
            # A new node takes the type of its first row in file order (x and y interleaved
            # by row), so a clash is reported at the later, disagreeing row.
            row_major = np.arange(2 * n).reshape(2, n).T.ravel()
            idx_rm, t_rm = idx[row_major], t[row_major]
            fresh = np.flatnonzero(node_type[idx_rm] == -1)
            _, first_fresh = np.unique(idx_rm[fresh], return_index=True)
            node_type[idx_rm[fresh[first_fresh]]] = t_rm[fresh[first_fresh]]
            clash = np.flatnonzero(node_type[idx] != t)
            if len(clash):
                clash = clash[np.argsort(clash % n, kind="stable")]
                row = int(clash[0] % n)
                node = int(idx[clash[0]])
                raise InputError(
                    f"{path}:{rows_done + row + 2}: node {node} has two types "
                    f"({types.names[node_type[node]]} and {types.names[t[clash[0]]]})"
                )
            new_nodes, first = np.unique(idx, return_index=True)
            unseen = ~named[new_nodes]
            named[new_nodes] = True
            if unseen.any():
                both = pa.concat_arrays([batch.column("x_name"), batch.column("y_name")])
                taken = both.take(pa.array(first[unseen])).to_pylist()
                names.update(zip(new_nodes[unseen].tolist(), taken))
            heads.append(x.astype(np.int32))
            tails.append(y.astype(np.int32))
            rels.append(rc.astype(np.int16))
            rows_done += n
            if progress is not None:
                progress(rows_done)
    except pa.ArrowInvalid:
        raise InputError(locate_csv_problem(path, ("x_index", "y_index"))) from None

    present = np.flatnonzero(node_type >= 0)
    descriptions: dict[int, str] = {}
    if nodes is not None:
        extra = _read_primekg_nodes(Path(nodes), types)
        for node, (name, type_code, description) in extra.items():
            if node < len(node_type) and node_type[node] >= 0:
                if node_type[node] != type_code:
                    raise InputError(
                        f"{nodes}: node {node} has type {types.names[type_code]} but "
                        f"{types.names[node_type[node]]} in {path}"
                    )
            else:
                names.setdefault(node, name)
            descriptions[node] = description
        ids = np.union1d(present, np.fromiter(extra.keys(), dtype=np.int64, count=len(extra)))
        full_types = np.full(int(ids.max()) + 1 if len(ids) else 0, -1, dtype=np.int8)
        full_types[: len(node_type)] = node_type[: len(full_types)]
        for node, (_, type_code, _) in extra.items():
            full_types[node] = type_code
        node_type = full_types
        present = ids
    return assemble(
        present, node_type[present],
        np.concatenate(heads) if heads else np.zeros(0, np.int32),
        np.concatenate(tails) if tails else np.zeros(0, np.int32),
        np.concatenate(rels) if rels else np.zeros(0, np.int16),
        names, descriptions, types.names, relations.names,
    )


def _read_primekg_nodes(path: Path, types: Vocabulary) -> dict[int, tuple[str, int, str]]:
    table, first_line = read_table(path, NODES_COLUMNS)
    ids = int_column(table, "node_index", path, first_line)
    out = {}
    for i, (node, name, type_name, description) in enumerate(zip(
        ids.tolist(), table.column("name").to_pylist(), table.column("type").to_pylist(),
        table.column("description").to_pylist(),
    )):
        where = f"{path}:{first_line + i}" if first_line else f"{path} row {i}"
        code = types.code(type_name, where)
        if node in out and out[node][1] != code:
            raise InputError(f"{where}: node {node} has two types")
        out[node] = (name or "", code, description or "")
    return out
