"""BM25 text similarity between queries and node / relation / training-query text (bm25s).

bm25s precomputes a sparse document x token score matrix; a batch of queries is a sparse
token x query count matrix, so scoring many queries at once is one sparse product. The
scores per query are min-max normalized to [0, 1] over all documents (``s_q`` of Eq. 1).
``b = 0`` makes scores length-agnostic, as the AdaPath reference uses.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import bm25s
import numpy as np
import scipy.sparse as sp

from adapath.fsutil import give_created_modes
from adapath.retrieval.cache_dir import GraphCache

STOPWORDS = "en"


def tokenize(texts: list[str]) -> list[list[str]]:
    return bm25s.tokenize(texts, stopwords=STOPWORDS, return_ids=False, show_progress=False)


class TextIndex:
    """A BM25 index whose score matrix is kept as SciPy CSR (documents x vocabulary)."""

    def __init__(self, matrix: sp.csr_matrix, vocab: dict[str, int], k1: float, b: float):
        self.matrix, self.vocab, self.k1, self.b = matrix, vocab, k1, b

    @classmethod
    def build(cls, texts: list[str], k1: float = 1.5, b: float = 0.75) -> TextIndex:
        tokens = bm25s.tokenize(texts, stopwords=STOPWORDS, show_progress=False)
        retriever = bm25s.BM25(k1=k1, b=b)
        retriever.index(tokens, show_progress=False)
        s = retriever.scores
        n_vocab = len(s["indptr"]) - 1
        csc = sp.csc_matrix((s["data"], s["indices"], s["indptr"]), shape=(s["num_docs"], n_vocab))
        return cls(csc.tocsr().astype(np.float32), dict(tokens.vocab), k1, b)

    @property
    def num_docs(self) -> int:
        return self.matrix.shape[0]

    def query_matrix(self, queries: list[str]) -> sp.csr_matrix:
        """Token counts per query (vocabulary x queries); tokens outside the index drop out."""
        rows, cols = [], []
        for j, tokens in enumerate(tokenize(queries)):
            for token in tokens:
                token_id = self.vocab.get(token)
                if token_id is not None:
                    rows.append(token_id)
                    cols.append(j)
        data = np.ones(len(rows), dtype=np.float32)
        return sp.csr_matrix((data, (rows, cols)), shape=(self.matrix.shape[1], len(queries)))

    def scores(self, queries: list[str], out: np.ndarray | None = None) -> np.ndarray:
        """Raw BM25 scores, documents x queries (float32); ``out`` (float32, that shape)
        receives them."""
        product = (self.matrix @ self.query_matrix(queries)).astype(np.float32, copy=False)
        return product.toarray(out=out)

    def normalized(self, queries: list[str], out: np.ndarray | None = None) -> np.ndarray:
        """Scores min-max normalized per query over all documents; a flat column becomes 0.
        ``out`` (float32, documents x queries): normalized there, in place, so a caller
        scoring batch after batch reuses its pages."""
        return minmax_columns(self.scores(queries, out=out), in_place=out is not None)

    # ---- persistence (npz + JSON, no pickles) and shipping (arrays)
    def to_arrays(self) -> dict:
        """The index as its CSR arrays and plain values, without a copy (``from_arrays``)."""
        m = self.matrix
        return {"data": m.data, "indices": m.indices, "indptr": m.indptr, "shape": tuple(m.shape),
                "vocab": self.vocab, "k1": self.k1, "b": self.b}

    @classmethod
    def from_arrays(cls, arrays: dict) -> TextIndex:
        matrix = sp.csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]),
                               shape=tuple(arrays["shape"]), copy=False)
        return cls(matrix, arrays["vocab"], arrays["k1"], arrays["b"])

    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        m = self.matrix
        np.savez(path / "bm25.npz", data=m.data, indices=m.indices, indptr=m.indptr,
                 shape=np.array(m.shape))
        (path / "bm25.json").write_text(json.dumps({"k1": self.k1, "b": self.b, "vocab": self.vocab}))

    @classmethod
    def load(cls, path: str | Path) -> TextIndex:
        path = Path(path)
        meta = json.loads((path / "bm25.json").read_text())
        with np.load(path / "bm25.npz", allow_pickle=False) as z:
            matrix = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
        return cls(matrix, meta["vocab"], meta["k1"], meta["b"])


def minmax_columns(scores: np.ndarray, in_place: bool = False) -> np.ndarray:
    """Each column as (x - min) / (max - min); a flat column becomes 0. ``in_place``:
    written over ``scores``."""
    lo = scores.min(axis=0, keepdims=True)
    span = scores.max(axis=0, keepdims=True) - lo
    shifted = np.subtract(scores, lo, out=scores if in_place else None)  # a flat column: 0 already
    np.divide(shifted, span, out=shifted, where=span > 0)
    return shifted


def node_texts(graph) -> list[str]:
    names = graph.names.to_pylist()
    descriptions = graph.descriptions.to_pylist()
    return [f"{n} {d}" if d else n for n, d in zip(names, descriptions)]


def relation_texts(graph) -> list[str]:
    return [f"{n} {d}" for n, d in zip(graph.relation_names, graph.relation_descriptions)]


class GraphText:
    """BM25 over a graph's node text and relation text, cached beside the graph."""

    def __init__(self, nodes: TextIndex, relations: TextIndex):
        self.nodes, self.relations = nodes, relations

    @classmethod
    def for_graph(cls, graph, graph_dir: str | Path | None = None, k1: float = 1.5,
                  b: float = 0.75, cache_dir: str | Path | None = None) -> GraphText:
        """Load the cached indexes of ``graph`` or build them (and cache them where
        ``cache_dir.GraphCache`` says; nowhere when ``graph_dir`` is None)."""
        name = f"bm25-{graph.checksum()[:12]}-k{k1}-b{b}"
        places = GraphCache(graph_dir, graph.checksum(), cache_dir) if graph_dir is not None else None
        found = places.find(name, "relations/bm25.json") if places is not None else None
        if found is not None and (found / "nodes" / "bm25.json").is_file():
            return cls(TextIndex.load(found / "nodes"), TextIndex.load(found / "relations"))
        built = cls(TextIndex.build(node_texts(graph), k1, b),
                    TextIndex.build(relation_texts(graph), k1, b))
        cache = places.writable(name) if places is not None else None
        if cache is not None:
            built._save(cache)
        return built

    def to_arrays(self) -> dict:
        """Both indexes as arrays and plain values, without a copy (``from_arrays``)."""
        return {"nodes": self.nodes.to_arrays(), "relations": self.relations.to_arrays()}

    @classmethod
    def from_arrays(cls, arrays: dict) -> GraphText:
        return cls(TextIndex.from_arrays(arrays["nodes"]), TextIndex.from_arrays(arrays["relations"]))

    def _save(self, cache: Path) -> None:
        """Write under a temporary name, then rename; a folder that cannot be written, or
        a concurrent writer that got there first, leaves the indexes uncached."""
        tmp = None
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{cache.name}.", suffix=".tmp", dir=cache.parent))
            self.nodes.save(tmp / "nodes")
            self.relations.save(tmp / "relations")
            give_created_modes(tmp)  # mkdtemp's folder is private
            os.replace(tmp, cache)
        except OSError:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)

    def similarity(self, queries: list[str], node_out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(s_node N x B, s_rel R x B), each min-max normalized to [0, 1] per query;
        ``node_out`` (float32, N x B) receives s_node."""
        return self.nodes.normalized(queries, out=node_out), self.relations.normalized(queries)
