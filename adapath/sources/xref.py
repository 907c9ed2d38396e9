"""A real base graph with its nodes' original identifiers, as a graph directory.

Beside the graph files, ``xref.parquet`` (``node_id``, ``xref``, ``source``) holds each
node's identifiers in the sources it came from (``HP:0000118``, ``OMIM:619340``,
``MONDO:0013924``, ``ORPHA:2056``, ``DOID:0111680``), one row per identifier; a node may
have several. ``groups.parquet`` (``node_id``, ``group``), where a source groups its nodes
(PrimeKG's disease groups), names each node's group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from adapath.engine.graph import KnowledgeGraph
from adapath.errors import InputError
from adapath.fsutil import atomic_dir

XREF_FILE = "xref.parquet"
GROUPS_FILE = "groups.parquet"


@dataclass
class Base:
    """A graph with, per node position, its original identifiers and its group ("" if none)."""

    graph: KnowledgeGraph
    xrefs: list[list[str]]
    groups: list[str] = field(default_factory=list)

    def __post_init__(self):
        if not self.groups:
            self.groups = [""] * self.graph.num_nodes

    def group_names(self) -> dict[tuple[str, str], str]:
        """(type, lower-case name) -> group, for the nodes that have one (first node wins)."""
        out: dict[tuple[str, str], str] = {}
        for i, group in enumerate(self.groups):
            if group:
                key = (self.graph.type_name(i), self.graph.name(i).strip().lower())
                out.setdefault(key, group)
        return out


def save_with_xref(graph: KnowledgeGraph, xref: Sequence[str | Sequence[str]], out: str | Path,
                   overwrite: bool = False, groups: Sequence[str] | None = None) -> Path:
    """The graph directory plus ``xref.parquet`` (and ``groups.parquet`` when ``groups`` has a
    non-empty entry), written atomically. ``xref``: per node, one identifier or several."""
    out = Path(out)
    node_ids, values = [], []
    for node, refs in zip(graph.node_id.tolist(), xref):
        for ref in [refs] if isinstance(refs, str) else refs:
            node_ids.append(node)
            values.append(ref)
    with atomic_dir(out, overwrite=overwrite) as tmp:
        graph.write_into(tmp)
        pq.write_table(pa.table({"node_id": pa.array(node_ids, pa.int64()),
                                 "xref": pa.array(values, pa.string()),
                                 "source": pa.array([v.split(":")[0] for v in values], pa.string())}),
                       tmp / XREF_FILE)
        if groups is not None and any(groups):
            rows = [(n, g) for n, g in zip(graph.node_id.tolist(), groups) if g]
            pq.write_table(pa.table({"node_id": pa.array([n for n, _ in rows], pa.int64()),
                                     "group": pa.array([g for _, g in rows], pa.string())}),
                           tmp / GROUPS_FILE)
    return out


def save_base(base: Base, out: str | Path, overwrite: bool = False) -> Path:
    return save_with_xref(base.graph, base.xrefs, out, overwrite=overwrite, groups=base.groups)


def _read(graph_dir: Path, name: str, columns: tuple[str, ...]) -> pa.Table | None:
    path = graph_dir / name
    if not path.is_file():
        return None
    try:
        table = pq.read_table(path)
    except pa.ArrowException as exc:
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)}")
    return table


def read_xrefs(graph_dir: str | Path) -> dict[int, list[str]]:
    """node_id -> its original identifiers, in file order ({} without ``xref.parquet``)."""
    table = _read(Path(graph_dir), XREF_FILE, ("node_id", "xref"))
    out: dict[int, list[str]] = {}
    if table is not None:
        for node, ref in zip(table.column("node_id").to_pylist(), table.column("xref").to_pylist()):
            out.setdefault(node, []).append(ref)
    return out


def read_xref(graph_dir: str | Path) -> dict[int, str]:
    """node_id -> its first original identifier (one per node for an HPO graph)."""
    return {node: refs[0] for node, refs in read_xrefs(graph_dir).items()}


def load_base(graph_dir: str | Path, require_xref: bool = True) -> Base:
    """A graph directory with its ``xref.parquet`` (required unless told) and
    ``groups.parquet`` (optional)."""
    graph_dir = Path(graph_dir)
    graph = KnowledgeGraph.load(graph_dir)
    if require_xref and not (graph_dir / XREF_FILE).is_file():
        raise InputError(f"{graph_dir}: no {XREF_FILE}; bases merge by their cross-references "
                         "(`adapath kg import hpo` and `kg import diseases` write it)")
    by_id = read_xrefs(graph_dir)
    table = _read(graph_dir, GROUPS_FILE, ("node_id", "group"))
    group_of = {} if table is None else dict(zip(table.column("node_id").to_pylist(),
                                                 table.column("group").to_pylist()))
    ids = graph.node_id.tolist()
    return Base(graph, [by_id.get(i, []) for i in ids], [group_of.get(i) or "" for i in ids])
