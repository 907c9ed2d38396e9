"""Importers for real knowledge-graph formats.

- ``load_primekg``: PrimeKG's ``kg.csv`` (streamed with Arrow; every relationship appears in
  both directions and is stored once), with an optional nodes table for descriptions;
- ``load_hetionet``: Hetionet v1.0 JSON;
- ``load_edges``: a generic edges table (head, relation, tail) + nodes table
  (id, name, type, description), CSV or Parquet;
- ``load_biostrat``: the evidence graph of BioStrat-QA records (``node_metadata`` and
  ``triplets`` aligned with ``path_node_ids``).

Every user mistake raises ``InputError`` naming the file and, where there is one, the line.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from adapath.engine.graph import KnowledgeGraph
from adapath.engine.schema import DISPLAY_RELATIONS, NODE_TYPES, relation_description
from adapath.errors import InputError

PRIMEKG_COLUMNS = (
    "relation", "display_relation",
    "x_index", "x_id", "x_type", "x_name", "x_source",
    "y_index", "y_id", "y_type", "y_name", "y_source",
)
_PRIMEKG_USED = ("display_relation", "x_index", "x_type", "x_name", "y_index", "y_type", "y_name")
NODES_COLUMNS = ("node_index", "name", "type", "description")

HETIONET_KINDS = {
    "Gene": "gene/protein",
    "Compound": "drug",
    "Disease": "disease",
    "Anatomy": "anatomy",
    "Symptom": "effect/phenotype",
    "Side Effect": "effect/phenotype",
    "Biological Process": "biological_process",
    "Cellular Component": "cellular_component",
    "Molecular Function": "molecular_function",
    "Pathway": "pathway",
    "Pharmacologic Class": "pharmacologic_class",
}


class _Vocabulary:
    """Name -> code, starting from a fixed list, optionally growing."""

    def __init__(self, names: Iterable[str], kind: str, growable: bool):
        self.names = list(names)
        self.codes = {n: i for i, n in enumerate(self.names)}
        self.kind, self.growable = kind, growable

    def code(self, name: str, where: str) -> int:
        code = self.codes.get(name)
        if code is None:
            if not self.growable:
                raise InputError(f"{where}: unknown {self.kind} {name!r}")
            code = self.codes[name] = len(self.names)
            self.names.append(name)
        return code


# ---------------------------------------------------------------------------- PrimeKG


def _read_header(path: Path) -> list[str]:
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    with open(path, "rb") as handle:
        first = handle.readline()
    try:
        text = first.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{path}:1: header is not UTF-8") from None
    return next(csv.reader([text]), [])


def _require_columns(path: Path, header: list[str], required: Iterable[str]) -> None:
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(
            f"{path}:1: missing column(s) {', '.join(missing)}; found {', '.join(header) or 'none'}"
        )


def _locate_csv_problem(path: Path, int_columns: Iterable[str]) -> str:
    """Slow scan, run only after Arrow refused the file: find the first bad line."""
    int_columns = list(int_columns)
    with open(path, "rb") as handle:
        header = None
        for lineno, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError:
                return f"{path}:{lineno}: bytes are not valid UTF-8"
            row = next(csv.reader([text]), [])
            if header is None:
                header = row
                positions = [(c, header.index(c)) for c in int_columns if c in header]
                continue
            if not row:
                continue
            if len(row) != len(header):
                return f"{path}:{lineno}: expected {len(header)} fields, found {len(row)}"
            for column, pos in positions:
                value = row[pos].strip()
                if not value.lstrip("-").isdigit():
                    return f"{path}:{lineno}: column {column} is not an integer id: {value!r}"
    return f"{path}: unreadable CSV"


def load_primekg(kg_csv: str | Path, nodes: str | Path | None = None,
                 block_size: int = 1 << 25, progress=None) -> KnowledgeGraph:
    """Stream PrimeKG's kg.csv into a graph; ``x_index``/``y_index`` stay the node ids."""
    path = Path(kg_csv)
    header = _read_header(path)
    _require_columns(path, header, _PRIMEKG_USED)
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
        raise InputError(_locate_csv_problem(path, ("x_index", "y_index"))) from None

    types = _Vocabulary(NODE_TYPES, "node type", growable=False)
    relations = _Vocabulary(DISPLAY_RELATIONS, "relation", growable=True)
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
            xt = _codes(batch.column("x_type"), types, path, rows_done)
            yt = _codes(batch.column("y_type"), types, path, rows_done)
            rc = _codes(batch.column("display_relation"), relations, path, rows_done)
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
        raise InputError(_locate_csv_problem(path, ("x_index", "y_index"))) from None

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
    return _assemble(
        present, node_type[present],
        np.concatenate(heads) if heads else np.zeros(0, np.int32),
        np.concatenate(tails) if tails else np.zeros(0, np.int32),
        np.concatenate(rels) if rels else np.zeros(0, np.int16),
        names, descriptions, types.names, relations.names,
    )


def _codes(column: pa.Array, vocab: _Vocabulary, path: Path, rows_done: int) -> np.ndarray:
    encoded = column.dictionary_encode()
    mapping = np.empty(len(encoded.dictionary), dtype=np.int16)
    for i, value in enumerate(encoded.dictionary.to_pylist()):
        try:
            mapping[i] = vocab.code(value, str(path))
        except InputError:
            row = int(np.flatnonzero(encoded.indices.to_numpy(zero_copy_only=False) == i)[0])
            raise InputError(f"{path}:{rows_done + row + 2}: unknown {vocab.kind} {value!r}") from None
    return mapping[encoded.indices.to_numpy(zero_copy_only=False)]


def _read_table(path: Path, required: Iterable[str]) -> tuple[pa.Table, int]:
    """A CSV or Parquet table with required columns; returns (table, first data line)."""
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    if path.suffix == ".parquet":
        try:
            table = pq.read_table(path)
        except pa.ArrowException as exc:
            raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
        _require_columns(path, table.column_names, required)
        return table, 0
    header = _read_header(path)
    _require_columns(path, header, required)
    try:
        table = pacsv.read_csv(
            path,
            convert_options=pacsv.ConvertOptions(
                column_types={c: pa.string() for c in header}, strings_can_be_null=False
            ),
        )
    except pa.ArrowInvalid:
        raise InputError(_locate_csv_problem(path, ())) from None
    return table, 2


def _int_column(table: pa.Table, column: str, path: Path, first_line: int) -> np.ndarray:
    values = table.column(column).to_pylist()
    out = np.empty(len(values), dtype=np.int64)
    for i, v in enumerate(values):
        try:
            out[i] = int(v)
        except (TypeError, ValueError):
            where = f"{path}:{first_line + i}" if first_line else f"{path} row {i}"
            raise InputError(f"{where}: column {column} is not an integer id: {v!r}") from None
    return out


def _read_primekg_nodes(path: Path, types: _Vocabulary) -> dict[int, tuple[str, int, str]]:
    table, first_line = _read_table(path, NODES_COLUMNS)
    ids = _int_column(table, "node_index", path, first_line)
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


def _assemble(ids, type_codes, heads_ext, tails_ext, rels, names: dict, descriptions: dict,
              type_names, relation_names) -> KnowledgeGraph:
    """Map external ids to internal indices and build the CSR graph."""
    ids = np.asarray(ids, dtype=np.int64)
    contiguous = len(ids) == 0 or (ids[0] == 0 and ids[-1] == len(ids) - 1)
    if contiguous:
        head, tail = heads_ext, tails_ext
    else:
        head = np.searchsorted(ids, heads_ext)
        tail = np.searchsorted(ids, tails_ext)
    id_list = ids.tolist()
    return KnowledgeGraph.from_edges(
        head, tail, rels,
        node_type=np.asarray(type_codes, dtype=np.int8),
        node_id=ids,
        names=[names.get(i, "") or "" for i in id_list],
        descriptions=[descriptions.get(i, "") or "" for i in id_list],
        type_names=tuple(type_names),
        relation_names=tuple(relation_names),
        relation_descriptions=tuple(relation_description(r) for r in relation_names),
    )


# ---------------------------------------------------------------------------- Hetionet


def load_hetionet(path: str | Path) -> KnowledgeGraph:
    """Hetionet v1.0 JSON: nodes (kind, identifier, name), edges (source_id, target_id, kind)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except UnicodeDecodeError:
        raise InputError(f"{path}: bytes are not valid UTF-8") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg} column {exc.colno})") from None
    if not isinstance(data, dict) or "nodes" not in data or "edges" not in data:
        raise InputError(f"{path}: expected a Hetionet JSON object with 'nodes' and 'edges'")
    types = _Vocabulary(NODE_TYPES, "node type", growable=True)
    relations = _Vocabulary(DISPLAY_RELATIONS, "relation", growable=True)
    index: dict[tuple[str, str], int] = {}
    type_codes, names, descriptions = [], {}, {}
    for i, node in enumerate(data["nodes"]):
        try:
            kind, identifier, name = node["kind"], node["identifier"], node["name"]
        except (KeyError, TypeError):
            raise InputError(f"{path}: node {i} lacks kind/identifier/name") from None
        if kind not in HETIONET_KINDS:
            raise InputError(f"{path}: node {i}: unknown node kind {kind!r}")
        key = (kind, str(identifier))
        if key in index:
            raise InputError(f"{path}: node {i}: duplicate node {kind}::{identifier}")
        index[key] = len(type_codes)
        type_codes.append(types.code(HETIONET_KINDS[kind], str(path)))
        names[index[key]] = str(name)
        descriptions[index[key]] = str((node.get("data") or {}).get("description", ""))
    heads, tails, rels = [], [], []
    for i, edge in enumerate(data["edges"]):
        try:
            (sk, sid), (tk, tid), kind = edge["source_id"], edge["target_id"], edge["kind"]
        except (KeyError, TypeError, ValueError):
            raise InputError(f"{path}: edge {i} lacks source_id/target_id/kind") from None
        try:
            heads.append(index[(sk, str(sid))])
            tails.append(index[(tk, str(tid))])
        except KeyError as exc:
            raise InputError(f"{path}: edge {i} names an unknown node {exc.args[0]}") from None
        rels.append(relations.code(str(kind), str(path)))
    ids = np.arange(len(type_codes), dtype=np.int64)
    return _assemble(ids, type_codes, np.array(heads, np.int64), np.array(tails, np.int64),
                     np.array(rels, np.int64), names, descriptions, types.names, relations.names)


# ---------------------------------------------------------------------------- generic edges


def load_edges(edges: str | Path, nodes: str | Path, allow_new_types: bool = False) -> KnowledgeGraph:
    """Generic tables: edges (head, relation, tail) and nodes (id, name, type, description)."""
    edges, nodes = Path(edges), Path(nodes)
    node_table, node_line = _read_table(nodes, ("id", "name", "type", "description"))
    edge_table, edge_line = _read_table(edges, ("head", "relation", "tail"))
    ids = _int_column(node_table, "id", nodes, node_line)
    types = _Vocabulary(NODE_TYPES, "node type", growable=allow_new_types)
    relations = _Vocabulary(DISPLAY_RELATIONS, "relation", growable=True)
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
    heads = _int_column(edge_table, "head", edges, edge_line)
    tails = _int_column(edge_table, "tail", edges, edge_line)
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
    return _assemble(sorted_ids, np.asarray(codes)[order], heads, tails, rel_codes,
                     names, descriptions, types.names, relations.names)


# ---------------------------------------------------------------------------- BioStrat-QA


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line; bad JSON names its line."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(f"{path}:{lineno}: bytes are not valid UTF-8") from None
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{lineno}: not valid JSON ({exc.msg} column {exc.colno})") from None
            if not isinstance(obj, dict):
                raise InputError(f"{path}:{lineno}: expected a JSON object")
            yield lineno, obj


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
    types = _Vocabulary(NODE_TYPES, "node type", growable=False)
    relations = _Vocabulary(DISPLAY_RELATIONS, "relation", growable=True)
    ids = np.array(sorted(nodes), dtype=np.int64)
    codes = [types.code(nodes[i][1], "records") for i in ids.tolist()]
    heads = np.array([e[0] for e in edges], dtype=np.int64)
    tails = np.array([e[2] for e in edges], dtype=np.int64)
    rels = np.array([relations.code(e[1], "records") for e in edges], dtype=np.int64)
    return _assemble(ids, codes, heads, tails, rels,
                     {i: v[0] for i, v in nodes.items()}, {i: v[2] for i, v in nodes.items()},
                     types.names, relations.names)
