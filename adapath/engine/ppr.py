"""Bidirectional personalized PageRank: picks a kernel, returns pi_f and pi_b.

``pi = eta * s + (1 - eta) * P_q pi`` with teleport ``eta`` (0.85), ``P_q`` the walk with the
query's Eq. 1 weights normalized over each node's out-edges, and ``s`` one-hot at the topic
(forward, pi_f) or at the answer (backward, pi_b). A batch of n (topic, answer, query)
triples runs as one power iteration of up to 2n columns (a repeated seed and query once),
both directions walking with their query's weight column, weights computed on the fly.

Backends: ``numba`` (CPU, fused kernel, parallel over rows), ``scipy`` (the array-namespace
kernel on SciPy sparse), ``cupy`` (the same kernel on the GPU, its weighted step one Numba
CUDA kernel). The device is chosen explicitly; the engine picks its solve once, when it is
made (``PPREngine.solver``: ``_NumbaSolve``, ``_ArraySolve`` or ``_CupySolve``, which
share one set of operations), and CuPy is imported only for ``device="cuda"``.
"""

from __future__ import annotations

import contextlib
import threading
import time
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from adapath.engine.graph import KnowledgeGraph
from adapath.engine.weights import QueryWeights
from adapath.errors import InputError
from adapath.kernels.csr import CSR
from adapath.kernels.ppr_numba import DenseTerms, power_iteration, weight_columns, work_chunks
from adapath.kernels.ppr_xp import Operators, power_iteration_xp
from adapath.kernels.rank import rank_pairs
from adapath.kernels.series import Certification, Series
from adapath.kernels.workers import threading_layer
from adapath.kernels.workspace import work_array

ETA = 0.85
TOL = 1e-8


@dataclass
class PPRResult:
    forward: np.ndarray  # N x n, seeded at each topic
    backward: np.ndarray  # N x n, seeded at each answer
    iterations: int
    change: float
    stopped: np.ndarray | None = None  # certified: the term at which each pair stopped


@dataclass
class Ranking:
    """Each pair's corridor score and its best nodes, without pi itself."""

    rho: np.ndarray  # N x n, columns contiguous: rho[:, j] = pi_f * pi_b of pair j
    order: np.ndarray  # n x T: pair j's T nodes of largest rho, ties by node index
    iterations: int
    change: float
    stopped: np.ndarray | None = None  # certified: the term at which each pair stopped


class _SparseOperators:
    """Full adjacency, relation counts and degree in one namespace (``operators``), with
    float32 copies of the adjacencies (``low``); the per-relation adjacency only for the
    sparse-product step (``relations=True``), which the fused GPU step does not need."""

    def __init__(self, graph: KnowledgeGraph, xp, sparse, relations: bool = True):
        n, n_rel = graph.num_nodes, graph.num_relations
        src = np.asarray(graph.src, dtype=np.int64)
        dst = np.asarray(graph.indices, dtype=np.int64)
        rel = np.asarray(graph.rel, dtype=np.int64)
        ones = np.ones(len(dst))
        adjacency = _to_device(sp.csr_matrix((ones, (dst, src)), shape=(n, n)), xp, sparse)
        rel_adjacency = []
        for r in range(n_rel if relations else 0):
            mask = rel == r
            m = sp.csr_matrix((ones[mask], (dst[mask], src[mask])), shape=(n, n))
            rel_adjacency.append(_to_device(m, xp, sparse))
        counts = np.bincount(src * n_rel + rel, minlength=n * n_rel).reshape(n, n_rel)
        self.operators = Operators(adjacency, rel_adjacency, xp.asarray(counts.astype(np.float64)),
                                   xp.asarray(graph.degree().astype(np.float64)))
        # float32 copies for the terms that carry little mass (edge counts are exact in float32);
        # their presence also tells the fused step to run those terms in float32
        self.low = (adjacency.astype(np.float32), [m.astype(np.float32) for m in rel_adjacency])


def _to_device(matrix, xp, sparse):
    if xp is np:
        return matrix
    return sparse.csr_matrix(matrix)


DENSE_PRECISIONS = ("float32", "float16")  # how the dense PPR terms store their values

# Device memory of the array-namespace solve and ranking per pair and graph node, at its peak
# (certified at every rung). NumPy standing in for CuPy measured 202 bytes on a generated
# graph (tests/test_rank.py checks that this bounds it); the rest is room for the GPU
# sort's double buffers and the memory pool's rounding.
DEVICE_BYTES_PER_PAIR_NODE = 320


def device_batch(num_nodes: int, num_half_edges: int, free_bytes: int, queries: int | None = None,
                 share: float = 0.6, pairs_per_query: int = 2, smallest: int = 32, largest: int = 1024) -> int:
    """Queries per GPU batch (``--gpu-batch auto``): as many as fit ``share`` of the free
    device memory after the graph's own arrays, counting ``pairs_per_query`` pairs each, in
    multiples of ``smallest`` within [smallest, largest]; at most a quarter of ``queries``
    (when given), so a pipelined build has batches to overlap."""
    fixed = 24 * num_half_edges + 64 * num_nodes  # CSR, relations and adjacency on the device
    per_query = DEVICE_BYTES_PER_PAIR_NODE * num_nodes * pairs_per_query
    fits = int(max(0.0, share * free_bytes - fixed) // per_query)
    if queries is not None:
        fits = min(fits, queries // 4)
    return max(smallest, min(largest, fits // smallest * smallest))


def free_device_bytes() -> int:
    """Free memory on the current CUDA device, counting what CuPy's pool holds unused."""
    import cupy

    free, _ = cupy.cuda.runtime.memGetInfo()
    return int(free + cupy.get_default_memory_pool().free_bytes())


class _NumbaSolve:
    """The CPU's solve: the fused Numba power iteration (``adapath.kernels.ppr_numba``),
    its work arrays kept across solves. Runs Numba's parallel loops."""

    numba_loops = True
    host_empty = staticmethod(np.empty)

    def __init__(self, graph: KnowledgeGraph, series: Series, dense: DenseTerms):
        self.csr = CSR(graph.indptr, graph.indices, graph.rel)
        self.series, self.dense = series, dense
        self._bounds = None
        self._workspace: dict = {}  # the solve's own arrays, kept across solves

    def _work_chunks(self) -> np.ndarray:
        if self._bounds is None:
            self._bounds = work_chunks(np.asarray(self.csr.indptr))
        return self._bounds

    def solve(self, weights: QueryWeights, seeds, weight_of, certification, keep: bool = True):
        """pi (N x S, columns contiguous), terms, error bound; ``keep=False``: pi lives in the
        work arrays, valid until the next solve (the caller holds the engine's lock and
        reads it at once)."""
        return power_iteration(self.csr, np.asarray(weights.a), np.asarray(weights.b),
                               np.asarray(seeds, dtype=np.int64), weight_of, self.series, self.dense,
                               certification, bounds=self._work_chunks(), workspace=self._workspace, keep=keep)

    def personalized(self, weights, seeds, weight_of, certification):
        return self.solve(weights, seeds, weight_of, certification)

    def ranked(self, weights, seeds, columns, pairs, certification, top, out, empty):
        pi, iterations, change = self.solve(weights, seeds, columns, certification, keep=False)
        rho_t = order = None
        if out is not None:
            rho_t = work_array(out, "rho", (len(pairs), pi.shape[0]), empty=empty)
            order = work_array(out, "order", (len(pairs), min(top, pi.shape[0])), np.int64, empty=empty)
        rho_t, order = rank_pairs(pi.T, pairs[:, 0], pairs[:, 1], top, rho=rho_t, order=order)
        return rho_t, order, iterations, change


class _ArraySolve:
    """The array-namespace solve (``adapath.kernels.ppr_xp``), here on NumPy and SciPy
    sparse products (CPU); ``_CupySolve`` runs it on the GPU. ``fused``: the weighted step
    as one CUDA kernel unless it cannot compile. Times its parts in ``device_seconds``."""

    numba_loops = False
    host_empty = staticmethod(np.empty)  # ``empty(size, dtype=)`` for host arrays the device copies

    def __init__(self, graph: KnowledgeGraph, series: Series, device_seconds: dict, xp=np, sparse=sp,
                 fused: bool = False):
        self.graph, self.series, self.xp, self.sparse = graph, series, xp, sparse
        self.fused = fused
        self.device_seconds = device_seconds
        self._ops = None
        self._step = None

    def operators(self) -> _SparseOperators:
        if self._ops is None:
            fused = self.fused and self.fused_step() is not None
            self._ops = _SparseOperators(self.graph, self.xp, self.sparse, relations=not fused)
        return self._ops

    def fused_step(self):
        """The weighted step as one CUDA kernel over the graph's CSR, kept on the device."""
        if self._step is None:
            from adapath.kernels.ppr_cuda import weighted_step

            xp, g = self.xp, self.graph
            indptr = xp.asarray(np.asarray(g.indptr, dtype=np.int64))
            indices = xp.asarray(np.asarray(g.indices, dtype=np.int32))
            rel = xp.asarray(np.asarray(g.rel, dtype=np.int32))

            def step(xt, a, b):
                return weighted_step(indptr, indices, rel, a, b, xt, xp.empty_like(xt))

            try:  # compile both precisions now: a CUDA toolchain that cannot is reported once
                for dtype in (xp.float64, xp.float32):
                    one = xp.ones((1, 1), dtype=dtype)
                    weighted_step(xp.zeros(2, dtype=xp.int64), xp.zeros(0, dtype=xp.int32),
                                  xp.zeros(0, dtype=xp.int32), one, one, one, xp.empty_like(one))
            except Exception as exc:  # noqa: BLE001 - any compiler failure: the sparse products still work
                warnings.warn(f"the fused CUDA PPR step did not compile ({type(exc).__name__}: {exc}); "
                              "using one sparse product per relation", RuntimeWarning, stacklevel=2)
                step = None
            self._step = step if step is not None else False
        return self._step or None

    def solve(self, weights, seeds, weight_of, certification):
        """pi (N x S) on the device, terms, error bound."""
        xp = self.xp
        step = self.fused_step() if self.fused else None
        ops = self.operators()
        with self._device_timer("upload"):
            columns = xp.asarray(weight_of)
            a = xp.asarray(weights.a, dtype=xp.float64)[:, columns]
            b = xp.asarray(weights.b, dtype=xp.float64)[:, columns]
        with self._device_timer("solve"):
            return power_iteration_xp(xp, ops.operators, a, b, xp.asarray(seeds), self.series, low=ops.low,
                                      certification=certification, step=step)

    def personalized(self, weights, seeds, weight_of, certification):
        pi, iterations, change = self.solve(weights, seeds, weight_of, certification)
        pi = self.xp.ascontiguousarray(pi.T)  # columns contiguous, as the Numba kernel returns them:
        return self._to_host(pi).T, iterations, change  # the corridor reads one column per pair

    def ranked(self, weights, seeds, columns, pairs, certification, top, out, empty):
        """The solve, rho and the ranking stay on the device; only rho (pairs x N) and the
        ranking (pairs x top) are copied back, into host arrays taken from ``out`` with
        ``empty`` (pinned memory when the device is a GPU, so each copy is one DMA transfer
        into pages mapped already). Times its parts (synchronizing the device between them)."""
        xp = self.xp
        pi, iterations, change = self.solve(weights, seeds, columns, certification)
        with self._device_timer("rank"):
            index = xp.asarray(pairs)
            rho_t = xp.ascontiguousarray((pi[:, index[:, 0]] * pi[:, index[:, 1]]).T)
            del pi  # its memory goes back to the pool before the sort takes its own
            order = xp.ascontiguousarray(xp.argsort(-rho_t, axis=1, kind="stable")[:, :top])
        with self._device_timer("copy"):
            host_rho = work_array(out, "rho", rho_t.shape, empty=empty)
            host_order = work_array(out, "order", order.shape, np.int64, empty=empty)
            self._copy_to_host(rho_t, host_rho)
            self._copy_to_host(order, host_order)
        return host_rho, host_order, iterations, change

    def _to_host(self, array):
        return array

    def _copy_to_host(self, array, host: np.ndarray) -> None:
        np.copyto(host, array)

    @contextlib.contextmanager
    def _device_timer(self, part: str):
        """Adds the seconds of the block, device work included, to ``device_seconds[part]``."""
        self._synchronize()
        clock = time.perf_counter()
        try:
            yield
        finally:
            self._synchronize()
            self.device_seconds[part] = self.device_seconds.get(part, 0.0) + time.perf_counter() - clock

    def _synchronize(self) -> None:
        pass  # NumPy has finished when it returns


class _CupySolve(_ArraySolve):
    """The array-namespace solve on the GPU (CuPy and cupyx sparse): host arrays it copies to
    or from are pinned, and its timer waits for the device."""

    def __init__(self, graph: KnowledgeGraph, series: Series, device_seconds: dict, fused: bool):
        try:
            import cupy
            import cupyx.scipy.sparse as cusparse
        except ImportError:
            raise InputError("--device cuda needs CuPy: pip install 'adapath[gpu]'") from None
        super().__init__(graph, series, device_seconds, cupy, cusparse, fused)

    @property
    def host_empty(self):
        """Pinned (page-locked) memory, which the copy engine reads and writes directly."""
        import cupyx

        return cupyx.empty_pinned

    def _to_host(self, array):
        return self.xp.asnumpy(array)

    def _copy_to_host(self, array, host: np.ndarray) -> None:
        self.xp.asnumpy(array, out=host)

    def _synchronize(self) -> None:
        self.xp.cuda.get_current_stream().synchronize()


class PPREngine:
    """Bidirectional PPR on one graph, its solve (``solver``) chosen once from the device,
    the backend and the dense precision."""

    def __init__(self, graph: KnowledgeGraph, device: str = "cpu", backend: str | None = None,
                 eta: float = ETA, tol: float = TOL, max_iter: int = 200, certify_from: int = 5,
                 shortlist: int = 512, fused: bool = True, dense_precision: str = "float32"):
        if device not in ("cpu", "cuda"):
            raise InputError(f"unknown device {device!r}; choose cpu or cuda")
        backend = backend or ("numba" if device == "cpu" else "cupy")
        if (device, backend) not in {("cpu", "numba"), ("cpu", "scipy"), ("cuda", "cupy")}:
            raise InputError(f"backend {backend!r} does not run on device {device!r}")
        if dense_precision not in DENSE_PRECISIONS:
            raise InputError(f"dense precision {dense_precision!r}: choose {' or '.join(DENSE_PRECISIONS)}")
        if dense_precision == "float16" and backend != "numba":
            raise InputError("dense precision float16 runs on the CPU's Numba solve only")
        self.graph, self.device, self.backend = graph, device, backend
        self.series = Series(eta, tol, max_iter)
        self.certify_from = certify_from  # certified solve: the first term checked
        self.shortlist = shortlist  # certified solve: candidates a pair keeps after its full check
        # one solve at a time: a pipelined build solves the next batch while this one's
        # corridors run, and a certified build may solve again from those threads
        self._lock = threading.RLock()
        # array-namespace route: seconds in its parts (upload, solve, rank, copy), summed
        self.device_seconds: dict[str, float] = {}
        if backend == "numba":
            # float16: the dense terms' xt and b stored in half precision (ppr_numba: half)
            self.solver = _NumbaSolve(graph, self.series, DenseTerms(half=dense_precision == "float16"))
        elif backend == "scipy":
            self.solver = _ArraySolve(graph, self.series, self.device_seconds)
        else:  # fused: the one-kernel weighted step (False: one sparse product per relation)
            self.solver = _CupySolve(graph, self.series, self.device_seconds, fused)

    def _certification(self, pairs, ladder, slack: float, stopped) -> Certification | None:
        if pairs is None or ladder is None:
            return None
        return Certification(pairs, ladder, slack, self.certify_from, self.shortlist, stopped)

    def personalized(self, weights: QueryWeights, seeds, weight_of=None, pairs=None, ladder=None,
                     slack: float = 0.0, stopped=None) -> tuple[np.ndarray, int, float]:
        """One PPR column per seed; seed c walks with weight column ``weight_of[c]`` (default
        ``c % W``, the seed count a multiple of the W weight columns). Returns NumPy arrays,
        pi as N x S with contiguous columns. ``pairs`` (P x 2 seed columns) and ``ladder``:
        stop each pair once the top-K of its product is certified at every rung
        (``adapath.kernels.certify``); ``stopped`` receives each pair's last term."""
        seeds = np.asarray(seeds, dtype=np.int64)
        weight_of = weight_columns(weight_of, len(seeds), weights.batch)
        with self._lock:
            return self.solver.personalized(weights, seeds, weight_of,
                                            self._certification(pairs, ladder, slack, stopped))

    def _seed_columns(self, weights: QueryWeights, topics, answers, weight_of):
        """The distinct (seed, weight column) columns of a batch of pairs: (seeds, their
        weight columns, pairs n x 2 as indices into them: forward, backward)."""
        topics = np.asarray(topics, dtype=np.int64)
        answers = np.asarray(answers, dtype=np.int64)
        n = len(topics)
        weight_of = np.arange(n) if weight_of is None else np.asarray(weight_of, dtype=np.int64)
        seeds = np.concatenate([topics, answers])
        columns = np.concatenate([weight_of, weight_of])
        keys = seeds * max(1, weights.batch) + columns
        unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        if len(unique) == len(keys):
            return seeds, columns, np.column_stack([np.arange(n), np.arange(n, 2 * n)])
        inverse = inverse.ravel()
        return seeds[first], columns[first], np.column_stack([inverse[:n], inverse[n:]])

    def bidirectional(self, weights: QueryWeights, topics, answers, weight_of=None, ladder=None,
                      slack: float = 0.0) -> PPRResult:
        """For pair j, pi_f seeded at ``topics[j]`` and pi_b at ``answers[j]``, both walking
        with weight column ``weight_of[j]`` (default j). One run; a (seed, weight column)
        that recurs (the pairs of one record) is computed once. ``ladder`` (corridor sizes):
        the certified solve, each pair stopping once its corridor's top K is final at every
        rung (None: the full solve to ``tol``)."""
        seeds, columns, pairs = self._seed_columns(weights, topics, answers, weight_of)
        n = len(pairs)
        stopped = np.zeros(n, dtype=np.int64) if ladder is not None else None
        with self._lock:
            part, iterations, change = self.personalized(weights, seeds, columns, pairs, ladder, slack, stopped)
        if len(seeds) == 2 * n:
            pi = part
        else:
            pi = np.ascontiguousarray(part.T)[pairs.T.ravel()].T  # rows of the column-major copy
        return PPRResult(pi[:, :n], pi[:, n:], iterations, change, stopped)

    def ranked(self, weights: QueryWeights, topics, answers, weight_of=None, ladder=None,
               slack: float = 0.0, top: int = 1002, out: dict | None = None) -> Ranking:
        """``bidirectional``, then each pair's ``rho = pi_f * pi_b`` and its ``top`` best
        nodes (``adapath.kernels.rank``), without handing pi back: on the GPU, rho and the
        ranking are formed there and only they travel to the host.

        ``out``: a dict the caller keeps for its next solves once it is done with this
        ranking; rho and the ranking are written into arrays held there (with
        ``host_empty``), whose pages are then mapped already (pinned on the GPU)."""
        seeds, columns, pairs = self._seed_columns(weights, topics, answers, weight_of)
        n = len(pairs)
        stopped = np.zeros(n, dtype=np.int64) if ladder is not None else None
        empty = self.host_empty if out is not None else np.empty  # a pinned buffer only to keep
        with self._lock:
            rho_t, order, iterations, change = self.solver.ranked(
                weights, seeds, columns, pairs, self._certification(pairs, ladder, slack, stopped), top, out, empty)
        return Ranking(rho_t.T, order, iterations, change, stopped)

    @property
    def host_empty(self):
        """The solve's ``empty(size, dtype=)`` for host arrays the device copies to or from
        (pinned memory on a GPU, ``np.empty`` on the CPU)."""
        return self.solver.host_empty

    def host_array(self, arrays: dict | None, name: str, shape, dtype=np.float64, staged: bool = False) -> np.ndarray:
        """An array of ``shape`` kept in ``arrays`` (a dict the caller keeps across batches,
        ``adapath.kernels.workspace``); ``staged``: one the solve copies to the device (pinned
        memory on a GPU)."""
        return work_array(arrays, name, shape, dtype, empty=self.host_empty if staged else np.empty)

    def parallel_section(self):
        """A context to hold around one's own Numba parallel loop while this engine may solve
        on another thread: Numba's "workqueue" layer cannot run two parallel loops at once,
        so there it waits for a CPU solve; elsewhere it holds nothing."""
        if self.solver.numba_loops and threading_layer() == "workqueue":
            return self._lock
        return contextlib.nullcontext()
