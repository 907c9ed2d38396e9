"""Node-text embeddings of one graph and one encoder, stored as a memory-mapped array.

A store is a folder ``emb-<encoder>-<chars>/`` (``cache_dir`` says where it lives):

- ``vectors.npy``: N x dim, float16 or float32, NumPy format (memory-mapped, never loaded);
- ``done.npy``: N bools, which rows hold a vector;
- ``store.json``: format, encoder name, text recipe (``chars``), dim, dtype, node count, the
  graph's checksum and a checksum of its node text.

Rows are written in place: the new rows with ``os.pwrite``, then their done flags, never
the whole array. An interrupted ``kg embed`` or ``answer`` keeps every row it finished and
a rerun goes on from there. A node's text is its name and the first ``chars`` characters
of its description: enough to tell candidates apart, and it bounds the encoder's cost.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from adapath.errors import InputError
from adapath.retrieval.cache_dir import can_write

FORMAT = "adapath-node-embeddings"
FORMAT_VERSION = 1
HEADER = "store.json"
DTYPES = ("float16", "float32")
DEFAULT_DTYPE = "float32"
CHARS = 300


def store_name(encoder_name: str, chars: int = CHARS) -> str:
    return f"emb-{encoder_name}-{chars}"


def node_text(graph, node: int, chars: int = CHARS) -> str:
    return f"{graph.name(node)} {graph.description(node)[:chars]}".strip()


def text_checksum(graph) -> str:
    """blake2b of the node names and descriptions (the graph's own checksum covers only its
    structure, and the embeddings depend on the text)."""
    h = hashlib.blake2b(digest_size=16)
    for column in (graph.names, graph.descriptions):
        column = column.cast(pa.large_string())
        _, offsets_buffer, data_buffer = column.buffers()
        offsets = np.frombuffer(offsets_buffer, dtype=np.int64)[column.offset:column.offset + len(column) + 1]
        h.update((offsets - offsets[0]).tobytes())
        if data_buffer is not None:
            h.update(memoryview(data_buffer)[int(offsets[0]):int(offsets[-1])])
    return h.hexdigest()


def expected_header(graph, encoder_name: str, chars: int = CHARS) -> dict:
    """The fields a store must match to serve ``graph`` with this encoder."""
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "encoder": encoder_name,
            "chars": chars, "nodes": graph.num_nodes, "graph_checksum": graph.checksum(),
            "text_checksum": text_checksum(graph)}


class NodeStore:
    """Vectors and done flags of every node: files (written row by row) or, where nothing can
    be written, arrays in memory (``np.zeros`` pages cost nothing until touched)."""

    def __init__(self, vectors: np.ndarray, done: np.ndarray, path: Path | None = None,
                 writable: bool = True, header: dict | None = None):
        self.vectors, self.done, self.path, self.writable = vectors, done, path, writable
        self.header = header or {}
        self._fds: tuple[int, int] | None = None
        if path is not None and writable:
            self._fds = (os.open(path / "vectors.npy", os.O_RDWR), os.open(path / "done.npy", os.O_RDWR))
        # a finalizer, not __del__: it also runs at interpreter exit before the modules are torn
        # down, so a store still referenced then closes without an "Exception ignored" message
        self._closer = weakref.finalize(self, _close_fds, self._fds)

    @property
    def dim(self) -> int:
        return self.vectors.shape[1]

    @property
    def complete(self) -> bool:
        return bool(self.done.all())

    # ------------------------------------------------------------------ open / create
    @classmethod
    def in_memory(cls, nodes: int, dim: int, dtype: str) -> NodeStore:
        return cls(np.zeros((nodes, dim), dtype=dtype), np.zeros(nodes, dtype=bool))

    @classmethod
    def open(cls, path: str | Path, expect: dict) -> NodeStore:
        """Open an existing store; one clear line if it belongs to another graph or encoder."""
        path = Path(path)
        try:
            header = json.loads((path / HEADER).read_text())
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: not a readable node-embedding store ({exc}); delete it") from None
        check_header(path, header, expect)
        vectors = np.load(path / "vectors.npy", mmap_mode="r", allow_pickle=False)
        done = np.load(path / "done.npy", mmap_mode="r", allow_pickle=False)
        if vectors.shape != (expect["nodes"], header["dim"]) or done.shape != (expect["nodes"],):
            raise InputError(f"{path}: arrays do not match store.json; delete the folder and rerun")
        writable = all(os.access(path / f, os.W_OK) for f in ("vectors.npy", "done.npy")) and \
            all((path / f).stat().st_mode & 0o222 for f in ("vectors.npy", "done.npy"))
        return cls(vectors, done, path, writable, header)

    @classmethod
    def create(cls, path: str | Path, expect: dict, dim: int, dtype: str) -> NodeStore:
        """Create an empty store (under a temporary name, renamed when whole); if another
        process created it meanwhile, open that one."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
        try:
            os.chmod(tmp, 0o777 & ~_umask())
            n = expect["nodes"]
            np.lib.format.open_memmap(tmp / "vectors.npy", mode="w+", dtype=dtype, shape=(n, dim)).flush()
            np.lib.format.open_memmap(tmp / "done.npy", mode="w+", dtype=bool, shape=(n,)).flush()
            (tmp / HEADER).write_text(json.dumps({**expect, "dim": dim, "dtype": dtype}, indent=2))
            os.replace(tmp, path)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            if not (path / HEADER).is_file():
                raise
        return cls.open(path, expect)

    def close(self) -> None:
        self._closer()
        self._fds = None

    # ------------------------------------------------------------------ rows
    def rows(self, nodes: np.ndarray) -> np.ndarray:
        return np.asarray(self.vectors[nodes], dtype=np.float32)

    def write(self, nodes: np.ndarray, vectors: np.ndarray) -> None:
        """Store ``vectors`` as the rows of ``nodes`` (sorted, unique), then flag them done."""
        nodes = np.asarray(nodes, dtype=np.int64)
        rows = np.ascontiguousarray(vectors, dtype=self.vectors.dtype)
        if self._fds is None:
            self.vectors[nodes] = rows
            self.done[nodes] = True
            return
        vectors_fd, done_fd = self._fds
        row_bytes = rows.shape[1] * rows.itemsize
        for lo, hi in _runs(nodes):
            _pwrite_all(vectors_fd, rows[lo:hi].tobytes(), self.vectors.offset + int(nodes[lo]) * row_bytes)
        for lo, hi in _runs(nodes):  # flags after the rows: a flagged row is always whole
            _pwrite_all(done_fd, b"\x01" * (hi - lo), self.done.offset + int(nodes[lo]))


def _close_fds(fds: tuple[int, ...] | None) -> None:
    for fd in fds or ():
        os.close(fd)


def check_header(path: Path, header: dict, expect: dict) -> None:
    if header.get("format") != FORMAT or header.get("format_version") != FORMAT_VERSION:
        raise InputError(f"{path}: not an {FORMAT} v{FORMAT_VERSION} store; delete it")
    if header.get("encoder") != expect["encoder"] or header.get("chars") != expect["chars"]:
        raise InputError(f"{path}: node embeddings by encoder {header.get('encoder')!r} "
                         f"({header.get('chars')} chars), not {expect['encoder']!r} ({expect['chars']} chars); "
                         "delete it or rerun `adapath kg embed --force`")
    for field, what in (("graph_checksum", "graph structure"), ("text_checksum", "node text"),
                        ("nodes", "node count")):
        if header.get(field) != expect[field]:
            raise InputError(f"{path}: stale node embeddings (the {what} differs from this graph's); "
                             "delete it or rerun `adapath kg embed --force`")
    if header.get("dtype") not in DTYPES or not isinstance(header.get("dim"), int):
        raise InputError(f"{path}: store.json lacks a valid dtype/dim; delete the folder")


def _runs(nodes: np.ndarray) -> list[tuple[int, int]]:
    """[lo, hi) index ranges of consecutive node ids in a sorted array."""
    if len(nodes) == 0:
        return []
    breaks = np.flatnonzero(np.diff(nodes) != 1) + 1
    bounds = np.concatenate([[0], breaks, [len(nodes)]])
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))


def _pwrite_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# ---------------------------------------------------------------------- where `kg embed` writes
def check_dtype(dtype: str | None) -> None:
    """A storage dtype asked for (None: the store's own, or the default)."""
    if dtype is not None and dtype not in DTYPES:
        raise InputError(f"--dtype {dtype!r}: choose float32 or float16")


@dataclass
class EmbedTarget:
    """Where a bulk pass writes a graph's node store, and what it holds there."""

    path: Path
    expect: dict  # the header the store must match (``expected_header``)
    dtype: str
    complete: bool  # the store there is whole already: nothing to encode


def embed_target(graph, encoder_name: str, places, dtype: str | None = None, force: bool = False) -> EmbedTarget:
    """The store ``kg embed`` fills: the one already in a cache place (``places``, a
    ``GraphCache``) is resumed in its own dtype (asking for another is an error), unless
    ``force`` removes it (a read-only one is left where it is and a new one made in a writable
    place); else a new store in the first writable place, in ``dtype`` or the default."""
    check_dtype(dtype)
    name = store_name(encoder_name)
    expect = expected_header(graph, encoder_name)
    path = places.find(name, HEADER)
    if path is not None and force:
        if can_write(path.parent):
            shutil.rmtree(path)
        path = None  # a read-only store stays; the new one goes to a writable place
    if path is None:
        path = places.writable(name)
        if path is None:
            raise InputError(f"nowhere to write node embeddings for {places.graph_dir}: pass --cache-dir DIR")
        return EmbedTarget(path, expect, dtype or DEFAULT_DTYPE, False)
    store = NodeStore.open(path, expect)
    try:
        if dtype is not None and store.header["dtype"] != dtype:
            raise InputError(f"{path}: the store holds {store.header['dtype']}; pass --force to rebuild it as {dtype}")
        return EmbedTarget(path, expect, store.header["dtype"], store.complete)
    finally:
        store.close()


# ---------------------------------------------------------------------- the bulk pass
@dataclass
class EmbedProgress:
    done: int
    total: int
    encoded: int  # rows encoded by this run (the rest were there already)
    seconds: float

    @property
    def rate(self) -> float:
        return self.encoded / self.seconds if self.seconds > 0 else 0.0


def embed_all(graph, encoder, path: Path, expect: dict, dtype: str, chunk: int = 2048,
              on_progress: Callable[[EmbedProgress], None] | None = None) -> EmbedProgress:
    """Encode every node without a vector in the store at ``path`` (created if absent), in
    chunks of texts of similar length, writing each chunk as it finishes."""
    store = NodeStore.open(path, expect) if (path / HEADER).is_file() else None
    if store is not None and not store.writable:
        raise InputError(f"{path}: the store is read-only; pass --cache-dir to write one elsewhere")
    todo = np.arange(graph.num_nodes) if store is None else np.flatnonzero(~np.asarray(store.done))
    texts = {int(i): node_text(graph, int(i), expect["chars"]) for i in todo.tolist()}
    todo = np.array(sorted(texts, key=lambda i: (len(texts[i]), i)), dtype=np.int64)
    total, start = graph.num_nodes, time.perf_counter()
    progress = EmbedProgress(total - len(todo), total, 0, 0.0)
    for lo in range(0, len(todo), chunk):
        nodes = todo[lo:lo + chunk]
        vectors = encoder.encode([texts[i] for i in nodes.tolist()])
        if store is None:
            store = NodeStore.create(path, expect, vectors.shape[1], dtype)
        order = np.argsort(nodes)
        store.write(nodes[order], vectors[order])
        progress.done += len(nodes)
        progress.encoded += len(nodes)
        progress.seconds = time.perf_counter() - start
        if on_progress is not None:
            on_progress(progress)
    if store is None:  # an empty graph
        store = NodeStore.create(path, expect, int(getattr(encoder, "dim", 1)), dtype)
    store.close()
    return progress
