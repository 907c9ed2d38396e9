"""Bidirectional personalized PageRank: picks a kernel, returns pi_f and pi_b.

``pi = eta * s + (1 - eta) * P_q pi`` with teleport ``eta`` (0.85), ``P_q`` the walk with the
query's Eq. 1 weights normalized over each node's out-edges, and ``s`` one-hot at the topic
(forward, pi_f) or at the answer (backward, pi_b). A batch of n (topic, answer, query)
triples runs as one 2n-column power iteration, weights computed on the fly.

Backends: ``numba`` (CPU, fused kernel, parallel over rows), ``scipy`` (the array-namespace
kernel on SciPy sparse), ``cupy`` (the same kernel on the GPU). The device is chosen
explicitly; CuPy is imported only for ``device="cuda"``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from adapath.engine.graph import KnowledgeGraph
from adapath.engine.weights import QueryWeights
from adapath.errors import InputError
from adapath.kernels.ppr_numba import out_weights, power_iteration
from adapath.kernels.ppr_xp import power_iteration_xp

ETA = 0.85
TOL = 1e-8


@dataclass
class PPRResult:
    forward: np.ndarray  # N x n, seeded at each topic
    backward: np.ndarray  # N x n, seeded at each answer
    iterations: int
    change: float


class _SparseOperators:
    """Per-relation adjacency, full adjacency, relation counts and degree in one namespace."""

    def __init__(self, graph: KnowledgeGraph, xp, sparse):
        n, n_rel = graph.num_nodes, graph.num_relations
        src = np.asarray(graph.src, dtype=np.int64)
        dst = np.asarray(graph.indices, dtype=np.int64)
        rel = np.asarray(graph.rel, dtype=np.int64)
        ones = np.ones(len(dst))
        self.adjacency = _to_device(sp.csr_matrix((ones, (dst, src)), shape=(n, n)), xp, sparse)
        self.rel_adjacency = []
        for r in range(n_rel):
            mask = rel == r
            m = sp.csr_matrix((ones[mask], (dst[mask], src[mask])), shape=(n, n))
            self.rel_adjacency.append(_to_device(m, xp, sparse))
        counts = np.bincount(src * n_rel + rel, minlength=n * n_rel).reshape(n, n_rel)
        self.counts = xp.asarray(counts.astype(np.float64))
        self.degree = xp.asarray(graph.degree().astype(np.float64))


def _to_device(matrix, xp, sparse):
    if xp is np:
        return matrix
    return sparse.csr_matrix(matrix)


class PPREngine:
    def __init__(self, graph: KnowledgeGraph, device: str = "cpu", backend: str | None = None,
                 eta: float = ETA, tol: float = TOL, max_iter: int = 200):
        if device not in ("cpu", "cuda"):
            raise InputError(f"unknown device {device!r}; choose cpu or cuda")
        backend = backend or ("numba" if device == "cpu" else "cupy")
        if (device, backend) not in {("cpu", "numba"), ("cpu", "scipy"), ("cuda", "cupy")}:
            raise InputError(f"backend {backend!r} does not run on device {device!r}")
        self.graph, self.device, self.backend = graph, device, backend
        self.eta, self.tol, self.max_iter = eta, tol, max_iter
        self._ops = None
        self._xp = np
        if backend == "cupy":
            try:
                import cupy
                import cupyx.scipy.sparse as cusparse
            except ImportError:
                raise InputError("--device cuda needs CuPy: pip install 'adapath[gpu]'") from None
            self._xp, self._sparse = cupy, cusparse
        elif backend == "scipy":
            self._sparse = sp
        self._dangling = np.flatnonzero(graph.degree() == 0)

    def _operators(self):
        if self._ops is None:
            self._ops = _SparseOperators(self.graph, self._xp, self._sparse)
        return self._ops

    def personalized(self, weights: QueryWeights, seeds, out=None) -> tuple[np.ndarray, int, float]:
        """One PPR column per seed, each with its own weight column. Returns NumPy arrays."""
        g = self.graph
        seeds = np.asarray(seeds, dtype=np.int64)
        if self.backend == "numba":
            return power_iteration(g.indptr, g.indices, g.rel, np.asarray(weights.a),
                                   np.asarray(weights.b), seeds, self.eta, self.tol,
                                   self.max_iter, self._dangling, out=out)
        xp = self._xp
        ops = self._operators()
        pi, iterations, change = power_iteration_xp(
            xp, ops.adjacency, ops.rel_adjacency, ops.counts, ops.degree,
            xp.asarray(weights.a, dtype=xp.float64), xp.asarray(weights.b, dtype=xp.float64),
            xp.asarray(seeds), self.eta, self.tol, self.max_iter)
        if xp is not np:
            pi = xp.asnumpy(pi)
        return pi, iterations, change

    def bidirectional(self, weights: QueryWeights, topics, answers) -> PPRResult:
        """pi_f seeded at each topic and pi_b at each answer, one 2n-column run."""
        topics = np.asarray(topics, dtype=np.int64)
        answers = np.asarray(answers, dtype=np.int64)
        n = len(topics)
        xp = self._xp if self.backend == "cupy" else np
        both = QueryWeights(xp.concatenate([xp.asarray(weights.a)] * 2, axis=1),
                            xp.concatenate([xp.asarray(weights.b)] * 2, axis=1))
        out = None
        if self.backend == "numba":  # both directions walk with the same weights: one out pass
            g = self.graph
            half = out_weights(g.indptr, g.indices, g.rel, np.ascontiguousarray(weights.a, dtype=np.float64),
                               np.ascontiguousarray(weights.b, dtype=np.float64))
            out = np.concatenate([half, half], axis=1)
        pi, iterations, change = self.personalized(both, np.concatenate([topics, answers]), out=out)
        return PPRResult(pi[:, :n], pi[:, n:], iterations, change)
