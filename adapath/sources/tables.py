"""Shared reading of tabular graph sources: CSV/Parquet tables with required columns,
vocabularies of node types and relations, and the assembly of external ids into the CSR graph.

Every user mistake raises ``InputError`` naming the file and, where there is one, the line.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from adapath.engine.graph import KnowledgeGraph
from adapath.engine.schema import relation_description
from adapath.errors import InputError


class Vocabulary:
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


def require_files(directory: Path, files: Iterable[str], kind: str) -> dict[str, Path]:
    """name -> path of each file a release directory must hold; one-line error otherwise."""
    if not directory.is_dir():
        raise InputError(f"{directory}: no such directory")
    files = list(files)
    paths = {name: directory / name for name in files}
    missing = [name for name, p in paths.items() if not p.is_file()]
    if missing:
        raise InputError(f"{directory}: missing {', '.join(missing)} ({kind} holds {', '.join(files)})")
    return paths


def csv_fields(text: str, where: str) -> list[str]:
    """One line's fields; a line the csv module refuses (a bare carriage return inside it) is an
    InputError naming ``where`` (path:line)."""
    try:
        return next(csv.reader([text]), [])
    except csv.Error:
        raise InputError(f"{where}: a carriage return inside a line (save the file with \\n or \\r\\n line ends)") from None


def read_header(path: Path) -> list[str]:
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    with open(path, "rb") as handle:
        first = handle.readline()
    try:
        text = first.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{path}:1: header is not UTF-8") from None
    return csv_fields(text, f"{path}:1")


def require_columns(path: Path, header: list[str], required: Iterable[str]) -> None:
    missing = [c for c in required if c not in header]
    if missing:
        found = ", ".join(c if c.isprintable() else repr(c) for c in header)  # an unclosed quote holds a newline
        raise InputError(f"{path}:1: missing column(s) {', '.join(missing)}; found {found or 'none'}")


def locate_csv_problem(path: Path, int_columns: Iterable[str]) -> str:
    """Slow scan, run only after Arrow refused the file: find the first bad line."""
    int_columns = list(int_columns)
    with open(path, "rb") as handle:
        header = None
        for lineno, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError:
                return f"{path}:{lineno}: bytes are not valid UTF-8"
            try:
                row = csv_fields(text, f"{path}:{lineno}")
            except InputError as error:
                return str(error)
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


def codes(column: pa.Array, vocab: Vocabulary, path: Path, rows_done: int) -> np.ndarray:
    encoded = column.dictionary_encode()
    mapping = np.empty(len(encoded.dictionary), dtype=np.int16)
    for i, value in enumerate(encoded.dictionary.to_pylist()):
        try:
            mapping[i] = vocab.code(value, str(path))
        except InputError:
            row = int(np.flatnonzero(encoded.indices.to_numpy(zero_copy_only=False) == i)[0])
            raise InputError(f"{path}:{rows_done + row + 2}: unknown {vocab.kind} {value!r}") from None
    return mapping[encoded.indices.to_numpy(zero_copy_only=False)]


def read_table(path: Path, required: Iterable[str]) -> tuple[pa.Table, int]:
    """A CSV or Parquet table with required columns; returns (table, first data line)."""
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    if path.suffix == ".parquet":
        try:
            table = pq.read_table(path)
        except pa.ArrowException as exc:
            raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
        require_columns(path, table.column_names, required)
        return table, 0
    header = read_header(path)
    require_columns(path, header, required)
    try:
        table = pacsv.read_csv(
            path,
            convert_options=pacsv.ConvertOptions(
                column_types={c: pa.string() for c in header}, strings_can_be_null=False
            ),
        )
    except pa.ArrowInvalid:
        raise InputError(locate_csv_problem(path, ())) from None
    return table, 2


def int_column(table: pa.Table, column: str, path: Path, first_line: int) -> np.ndarray:
    values = table.column(column).to_pylist()
    out = np.empty(len(values), dtype=np.int64)
    for i, v in enumerate(values):
        try:
            out[i] = int(v)
        except (TypeError, ValueError):
            where = f"{path}:{first_line + i}" if first_line else f"{path} row {i}"
            raise InputError(f"{where}: column {column} is not an integer id: {v!r}") from None
    return out


def assemble(ids, type_codes, heads_ext, tails_ext, rels, names: dict, descriptions: dict,
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
