"""KnowledgeGraph: an undirected, typed multigraph stored once as CSR over both directions.

Arrays (``N`` nodes, ``E`` undirected edges, ``2E`` half-edges):

- ``indptr[N+1]`` (int64), ``indices[2E]`` (int32): the neighbour of each half-edge;
- ``rel[2E]`` (int16): relation id (index into ``relation_names``, display relations);
- ``fwd[2E]`` (bool): True where the half-edge follows the edge's stored direction;
- ``node_type[N]`` (int8): index into ``type_names``;
- ``node_id[N]`` (int64): the external id (PrimeKG's ``node_index`` where imported).

Within a node's row, half-edges are sorted by (relation, neighbour type, neighbour), so a
neighbour query filtered by relation and type is two binary searches inside the row.
Names and descriptions are Arrow string arrays. On disk a graph is a directory:
``graph.npz`` (uncompressed, members memory-mapped on load), ``nodes.parquet``,
``relations.parquet`` and ``graph.json`` (counts, vocabularies, checksum).
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from adapath.errors import InputError
from adapath.fsutil import atomic_dir

FORMAT = "adapath-kg"
FORMAT_VERSION = 1
_ARRAYS = ("indptr", "indices", "rel", "fwd", "node_type", "node_id")


@dataclass(eq=False)
class KnowledgeGraph:
    indptr: np.ndarray
    indices: np.ndarray
    rel: np.ndarray
    fwd: np.ndarray
    node_type: np.ndarray
    node_id: np.ndarray
    names: pa.Array
    descriptions: pa.Array
    type_names: tuple[str, ...]
    relation_names: tuple[str, ...]
    relation_descriptions: tuple[str, ...]
    _src: np.ndarray | None = field(default=None, repr=False)
    _id_order: np.ndarray | None = field(default=None, repr=False)
    _sorted_ids: np.ndarray | None = field(default=None, repr=False)
    _checksum: str | None = field(default=None, repr=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_edges(
        cls,
        head: np.ndarray,
        tail: np.ndarray,
        rel: np.ndarray,
        *,
        node_type: np.ndarray,
        node_id: np.ndarray | None = None,
        names: list[str] | pa.Array,
        descriptions: list[str] | pa.Array,
        type_names: tuple[str, ...],
        relation_names: tuple[str, ...],
        relation_descriptions: tuple[str, ...],
    ) -> KnowledgeGraph:
        """Build from undirected edges given as internal indices (head -> tail stored direction).

        Duplicate (pair, relation) edges are merged, keeping the first one's direction;
        self-loops are dropped (no path uses them and a walk gains nothing from them).
        """
        n = len(node_type)
        head = np.asarray(head, dtype=np.int64)
        tail = np.asarray(tail, dtype=np.int64)
        rel = np.asarray(rel, dtype=np.int64)
        keep = head != tail
        head, tail, rel = head[keep], tail[keep], rel[keep]
        n_rel = max(len(relation_names), 1)
        lo, hi = np.minimum(head, tail), np.maximum(head, tail)
        key = (lo * n + hi) * n_rel + rel
        _, first = np.unique(key, return_index=True)
        first.sort()  # keep file order among survivors
        head, tail, rel = head[first], tail[first], rel[first]

        src = np.concatenate([head, tail])
        dst = np.concatenate([tail, head])
        hrel = np.concatenate([rel, rel])
        fwd = np.concatenate([np.ones(len(head), bool), np.zeros(len(head), bool)])
        ntype = np.asarray(node_type, dtype=np.int8)
        n_types = max(len(type_names), 1)
        order_key = ((src * n_rel + hrel) * n_types + ntype[dst]) * n + dst
        order = np.argsort(order_key, kind="stable")
        del order_key
        counts = np.bincount(src, minlength=n)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        if node_id is None:
            node_id = np.arange(n, dtype=np.int64)
        return cls(
            indptr=indptr,
            indices=dst[order].astype(np.int32),
            rel=hrel[order].astype(np.int16),
            fwd=fwd[order],
            node_type=ntype,
            node_id=np.asarray(node_id, dtype=np.int64),
            names=_as_string_array(names),
            descriptions=_as_string_array(descriptions),
            type_names=tuple(type_names),
            relation_names=tuple(relation_names),
            relation_descriptions=tuple(relation_descriptions),
        )

    # ------------------------------------------------------------------ sizes
    @property
    def num_nodes(self) -> int:
        return len(self.node_type)

    @property
    def num_half_edges(self) -> int:
        return len(self.indices)

    @property
    def num_edges(self) -> int:
        return self.num_half_edges // 2

    @property
    def num_relations(self) -> int:
        return len(self.relation_names)

    def degree(self) -> np.ndarray:
        """Degree of every node in half-edges (a multi-edge counts once per relation)."""
        return np.diff(self.indptr)

    @property
    def src(self) -> np.ndarray:
        """Source node of each half-edge (computed once)."""
        if self._src is None:
            self._src = np.repeat(np.arange(self.num_nodes, dtype=np.int32), self.degree())
        return self._src

    def edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Undirected edges in their stored direction: (head, relation, tail) arrays."""
        mask = self.fwd
        return self.src[mask], self.rel[mask], self.indices[mask]

    # ------------------------------------------------------------------ vocabularies
    def type_code(self, name: str) -> int:
        try:
            return self.type_names.index(name)
        except ValueError:
            raise InputError(f"unknown node type {name!r}; known: {', '.join(self.type_names)}") from None

    def relation_code(self, name: str) -> int:
        try:
            return self.relation_names.index(name)
        except ValueError:
            raise InputError(
                f"unknown relation {name!r}; known: {', '.join(self.relation_names)}"
            ) from None

    def name(self, node: int) -> str:
        return self.names[int(node)].as_py()

    def description(self, node: int) -> str:
        return self.descriptions[int(node)].as_py()

    def type_name(self, node: int) -> str:
        return self.type_names[int(self.node_type[node])]

    def named_triplets(self, path) -> list[tuple[str, str, str] | None]:
        """``[head_id, relation, tail_id]`` steps (external ids; a fourth element, the step's
        direction mark, is dropped) as (head name, relation, tail name); None for a step with
        an end not in the graph."""
        named = []
        for step in path:
            head, relation, tail = step[:3]
            h, t = self.index_of([head, tail], missing="ignore")
            named.append((self.name(h), relation, self.name(t)) if h >= 0 and t >= 0 else None)
        return named

    # ------------------------------------------------------------------ ids
    def index_of(self, ids, missing: str = "raise") -> np.ndarray:
        """Internal indices of external node ids; ``missing='ignore'`` gives -1 instead."""
        ids = np.asarray(ids, dtype=np.int64)
        if self._id_order is None:  # computed once: a gather of every id costs ~1 ms at PrimeKG's size
            self._id_order = np.argsort(self.node_id, kind="stable")
            self._sorted_ids = self.node_id[self._id_order]
        sorted_ids = self._sorted_ids
        pos = np.searchsorted(sorted_ids, ids)
        pos_c = np.minimum(pos, len(sorted_ids) - 1)
        found = (len(sorted_ids) > 0) & (sorted_ids[pos_c] == ids)
        out = np.where(found, self._id_order[pos_c], -1).astype(np.int64)
        if missing == "raise" and not np.all(found):
            bad = ids[~found][:5].tolist()
            raise InputError(f"node id(s) not in the graph: {bad}")
        return out

    # ------------------------------------------------------------------ neighbours
    def neighbors(
        self, node: int, relation: int | str | None = None, node_type: int | str | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Neighbours of ``node`` (internal indices) and the relation of each half-edge.

        Filtering by relation and neighbour type costs two binary searches in the row;
        the result is a view-sized slice, never a scan of the graph.
        """
        lo, hi = int(self.indptr[node]), int(self.indptr[node + 1])
        if relation is None and node_type is None:
            return self.indices[lo:hi], self.rel[lo:hi]
        if relation is not None:
            r = self.relation_code(relation) if isinstance(relation, str) else int(relation)
            rels = self.rel[lo:hi]
            a = lo + int(np.searchsorted(rels, r, side="left"))
            b = lo + int(np.searchsorted(rels, r, side="right"))
            lo, hi = a, b
            if node_type is not None:
                t = self.type_code(node_type) if isinstance(node_type, str) else int(node_type)
                types = self.node_type[self.indices[lo:hi]]
                a = lo + int(np.searchsorted(types, t, side="left"))
                b = lo + int(np.searchsorted(types, t, side="right"))
                lo, hi = a, b
            return self.indices[lo:hi], self.rel[lo:hi]
        t = self.type_code(node_type) if isinstance(node_type, str) else int(node_type)
        idx = self.indices[lo:hi]
        mask = self.node_type[idx] == t
        return idx[mask], self.rel[lo:hi][mask]

    # ------------------------------------------------------------------ statistics
    def info(self) -> dict:
        deg = self.degree()
        rel_counts = np.bincount(self.rel[self.fwd], minlength=self.num_relations)
        type_counts = np.bincount(self.node_type, minlength=len(self.type_names))
        pct = np.percentile(deg, [50, 90, 99]) if len(deg) else np.zeros(3)
        return {
            "nodes": self.num_nodes,
            "edges": self.num_edges,
            "half_edges": self.num_half_edges,
            "node_types": {t: int(c) for t, c in zip(self.type_names, type_counts) if c},
            "relations": {r: int(c) for r, c in zip(self.relation_names, rel_counts) if c},
            "degree": {
                "mean": float(deg.mean()) if len(deg) else 0.0,
                "p50": float(pct[0]),
                "p90": float(pct[1]),
                "p99": float(pct[2]),
                "max": int(deg.max()) if len(deg) else 0,
            },
        }

    def checksum(self) -> str:
        """blake2b of the structure arrays and vocabularies (computed once: a graph's arrays
        are not modified after construction)."""
        if self._checksum is None:
            self._checksum = self._compute_checksum()
        return self._checksum

    def _compute_checksum(self) -> str:
        h = hashlib.blake2b(digest_size=16)
        for name in _ARRAYS:
            arr = np.ascontiguousarray(getattr(self, name))
            h.update(name.encode())
            h.update(memoryview(arr).cast("B"))
        h.update(json.dumps([self.type_names, self.relation_names]).encode())
        return h.hexdigest()

    # ------------------------------------------------------------------ persistence
    def to_arrays(self) -> dict:
        """The graph as plain values, without a copy: its NumPy and Arrow arrays, its
        vocabularies and its checksum (so a worker that rebuilds it does not hash it again).
        What travels to workers (``from_arrays`` rebuilds it there), never a pickle of the graph."""
        return {**{name: getattr(self, name) for name in _ARRAYS},
                "names": self.names, "descriptions": self.descriptions,
                "type_names": self.type_names, "relation_names": self.relation_names,
                "relation_descriptions": self.relation_descriptions, "checksum": self.checksum()}

    @classmethod
    def from_arrays(cls, arrays: dict) -> KnowledgeGraph:
        """The graph ``to_arrays`` gave, over the same arrays (read-only ones stay read-only)."""
        graph = cls(**{name: arrays[name] for name in _ARRAYS},
                    names=arrays["names"], descriptions=arrays["descriptions"],
                    type_names=tuple(arrays["type_names"]), relation_names=tuple(arrays["relation_names"]),
                    relation_descriptions=tuple(arrays["relation_descriptions"]))
        graph._checksum = arrays["checksum"]
        return graph

    def save(self, path: str | Path, overwrite: bool = False) -> Path:
        """Write the graph directory atomically (a temporary directory renamed at the end)."""
        path = Path(path)
        with atomic_dir(path, overwrite=overwrite) as tmp:
            self.write_into(tmp)
        return path

    def write_into(self, directory: Path) -> None:
        np.savez(directory / "graph.npz", **{name: getattr(self, name) for name in _ARRAYS})
        nodes = pa.table(
            {
                "node_id": pa.array(self.node_id),
                "name": self.names,
                "type": pa.DictionaryArray.from_arrays(
                    pa.array(self.node_type.astype(np.int32)), pa.array(list(self.type_names))
                ),
                "description": self.descriptions,
            }
        )
        pq.write_table(nodes, directory / "nodes.parquet")
        relations = pa.table(
            {
                "rel_id": pa.array(np.arange(self.num_relations, dtype=np.int32)),
                "name": pa.array(list(self.relation_names), pa.string()),
                "description": pa.array(list(self.relation_descriptions), pa.string()),
            }
        )
        pq.write_table(relations, directory / "relations.parquet")
        meta = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "nodes": self.num_nodes,
            "half_edges": self.num_half_edges,
            "type_names": list(self.type_names),
            "relation_names": list(self.relation_names),
            "checksum": self.checksum(),
        }
        (directory / "graph.json").write_text(json.dumps(meta, indent=2))

    @classmethod
    def load(cls, path: str | Path, mmap: bool = True, verify: bool = True) -> KnowledgeGraph:
        """Load a graph directory; arrays are memory-mapped, structure and checksum checked."""
        path = Path(path)
        meta_path = path / "graph.json"
        if not path.is_dir():
            raise InputError(f"{path}: not a graph directory (run `adapath kg synth` or `kg import`)")
        for member in ("graph.json", "graph.npz", "nodes.parquet", "relations.parquet"):
            if not (path / member).is_file():
                raise InputError(f"{path}: missing {member}; not a complete graph directory")
        try:
            meta = json.loads(meta_path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"{meta_path}: not valid JSON ({exc})") from None
        if meta.get("format") != FORMAT or meta.get("format_version") != FORMAT_VERSION:
            raise InputError(f"{meta_path}: not an {FORMAT} v{FORMAT_VERSION} graph")
        arrays = _load_npz(path / "graph.npz", mmap=mmap)
        missing = [a for a in _ARRAYS if a not in arrays]
        if missing:
            raise InputError(f"{path / 'graph.npz'}: missing arrays {missing}")
        nodes = pq.read_table(path / "nodes.parquet", memory_map=mmap)
        relations = pq.read_table(path / "relations.parquet", memory_map=mmap)
        graph = cls(
            **arrays,
            names=nodes.column("name").combine_chunks(),
            descriptions=nodes.column("description").combine_chunks(),
            type_names=tuple(meta["type_names"]),
            relation_names=tuple(relations.column("name").to_pylist()),
            relation_descriptions=tuple(relations.column("description").to_pylist()),
        )
        graph.validate(path)
        if verify and graph.checksum() != meta.get("checksum"):
            raise InputError(f"{path}: checksum mismatch; the graph files are damaged or mixed")
        return graph

    def validate(self, where: str | Path = "graph") -> None:
        """Check the CSR invariants; raise InputError naming what is broken."""
        n, m = self.num_nodes, self.num_half_edges
        problems = []
        if self.indptr.shape != (n + 1,) or self.indptr[0] != 0 or self.indptr[-1] != m:
            problems.append("indptr does not span the half-edges")
        elif np.any(np.diff(self.indptr) < 0):
            problems.append("indptr is not non-decreasing")
        if not (len(self.rel) == len(self.fwd) == m):
            problems.append("rel/fwd lengths differ from indices")
        if m and (self.indices.min() < 0 or self.indices.max() >= n):
            problems.append("neighbour index out of range")
        if m and (self.rel.min() < 0 or self.rel.max() >= self.num_relations):
            problems.append("relation id out of range")
        if n and (self.node_type.min() < 0 or self.node_type.max() >= len(self.type_names)):
            problems.append("node type out of range")
        if len(self.node_id) != n or len(self.names) != n or len(self.descriptions) != n:
            problems.append("node table length differs from node count")
        if m % 2 or int(self.fwd.sum()) * 2 != m:
            problems.append("half-edges are not paired")
        if problems:
            raise InputError(f"{where}: invalid graph: {'; '.join(problems)}")


def _as_string_array(values) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        return values.cast(pa.string()) if values.type != pa.string() else values
    return pa.array(values, type=pa.string())


def _load_npz(path: Path, mmap: bool) -> dict[str, np.ndarray]:
    """Read an uncompressed .npz, memory-mapping each member in place.

    np.load ignores ``mmap_mode`` for archives, but members written by np.savez are stored
    uncompressed, so each one is an .npy blob at a fixed offset of the zip file.
    """
    if not mmap:
        with np.load(path, allow_pickle=False) as data:
            return {k: np.array(data[k]) for k in data.files}
    out = {}
    try:
        with zipfile.ZipFile(path) as archive, open(path, "rb") as raw:
            for info in archive.infolist():
                name = info.filename.removesuffix(".npy")
                if info.compress_type != zipfile.ZIP_STORED:
                    with archive.open(info) as member:
                        out[name] = np.lib.format.read_array(member, allow_pickle=False)
                    continue
                raw.seek(info.header_offset)
                local = raw.read(30)
                name_len = int.from_bytes(local[26:28], "little")
                extra_len = int.from_bytes(local[28:30], "little")
                raw.seek(info.header_offset + 30 + name_len + extra_len)
                version = np.lib.format.read_magic(raw)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(raw)
                else:
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(raw)
                if dtype.hasobject:
                    raise InputError(f"{path}: member {name} holds objects; refusing to load")
                offset = raw.tell()
                if int(np.prod(shape)) == 0:
                    out[name] = np.zeros(shape, dtype=dtype)
                else:
                    out[name] = np.memmap(
                        path, dtype=dtype, mode="r", offset=offset, shape=shape,
                        order="F" if fortran else "C",
                    )
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise InputError(f"{path}: cannot read arrays ({exc})") from None
    return out
