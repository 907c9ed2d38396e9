"""Batched personalized PageRank with on-the-fly query weights (Numba, CPU).

PPR is summed as its series ``pi = eta * sum_k (1 - eta)^k P^k s``: ``x_0 = s``,
``x_{k+1} = P x_k``. P preserves mass, so after K terms the L1 error is exactly the
mass left, ``(1 - eta)^(K+1)``; the term count follows from the tolerance alone, which
makes every column independent of the others in its batch (the same query gives the same
scores in any batch).

A batch has B columns; column j walks with weights ``w = a[r, j] + b[u, j] + b[v, j]``.
The CSR lists every edge in both directions, so the in-edges of v are its row, and one
pass over the CSR per step serves all B columns:

    y[v, j] = sum over half-edges (v, r, u) of (a[r, j] + b[v, j]) * xt[u, j] + z[u, j]

with ``xt = x / out`` and ``z = b * xt`` (``out`` = out-weights). Rows run in parallel and
each row owns its output. Mass at a node without out-weight (isolated) returns to the seed.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange


def series_terms(eta: float, tol: float) -> int:
    """Smallest K with (1 - eta)^(K + 1) <= tol: the terms x_0 .. x_K to sum."""
    if tol >= 1.0:
        return 0
    return max(0, math.ceil(math.log(tol) / math.log(1.0 - eta)) - 1)


@njit(parallel=True, cache=True, nogil=True)
def out_weights(indptr, indices, rel, a, b):
    """out[u, j] = sum of w over u's half-edges = sum a[r] + deg(u) * b[u] + sum b[v]."""
    n = indptr.shape[0] - 1
    batch = a.shape[1]
    out = np.zeros((n, batch), dtype=np.float64)
    for u in prange(n):
        lo, hi = indptr[u], indptr[u + 1]
        for k in range(lo, hi):
            r, v = rel[k], indices[k]
            for j in range(batch):
                out[u, j] += a[r, j] + b[v, j]
        deg = hi - lo
        for j in range(batch):
            out[u, j] += deg * b[u, j]
    return out


@njit(parallel=True, cache=True, nogil=True)
def _scale(x, out, b, xt, z):
    n, batch = x.shape
    for u in prange(n):
        for j in range(batch):
            o = out[u, j]
            t = x[u, j] / o if o > 0.0 else 0.0
            xt[u, j] = t
            z[u, j] = b[u, j] * t


@njit(parallel=True, cache=True, nogil=True)
def _propagate(indptr, indices, rel, a, b, xt, z, y):
    """y = P x for every column; rows are sorted by relation, so a[r] multiplies per segment."""
    n = indptr.shape[0] - 1
    batch = a.shape[1]
    for v in prange(n):
        acc = np.zeros(batch)
        seg = np.zeros(batch)
        total = np.zeros(batch)
        lo, hi = indptr[v], indptr[v + 1]
        k = lo
        while k < hi:
            r = rel[k]
            seg[:] = 0.0
            while k < hi and rel[k] == r:
                u = indices[k]
                for j in range(batch):
                    seg[j] += xt[u, j]
                    acc[j] += z[u, j]
                k += 1
            for j in range(batch):
                acc[j] += a[r, j] * seg[j]
                total[j] += seg[j]
        for j in range(batch):
            y[v, j] = acc[j] + b[v, j] * total[j]


@njit(parallel=True, cache=True, nogil=True)
def _accumulate(pi, x, scale):
    n, batch = pi.shape
    for v in prange(n):
        for j in range(batch):
            pi[v, j] += scale * x[v, j]


@njit(cache=True, nogil=True)
def _lost_mass(x, out, dangling):
    batch = x.shape[1]
    lost = np.zeros(batch)
    for i in range(dangling.shape[0]):
        u = dangling[i]
        for j in range(batch):
            if out[u, j] <= 0.0:
                lost[j] += x[u, j]
    return lost


def power_iteration(indptr, indices, rel, a, b, seeds, eta=0.85, tol=1e-8, max_iter=200,
                    dangling=None):
    """PPR for every column with L1 error <= tol. Returns (pi N x B, terms, error bound)."""
    n = indptr.shape[0] - 1
    batch = a.shape[1]
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    seeds = np.ascontiguousarray(seeds, dtype=np.int64)
    columns = np.arange(batch)
    out = out_weights(indptr, indices, rel, a, b)
    if dangling is None:
        dangling = np.flatnonzero(np.diff(indptr) == 0)
    terms = min(series_terms(eta, tol), max_iter)
    x = np.zeros((n, batch))
    x[seeds, columns] = 1.0
    pi = np.zeros((n, batch))
    pi[seeds, columns] = eta
    xt, z, y = np.empty_like(x), np.empty_like(x), np.empty_like(x)
    scale = eta
    for _ in range(terms):
        _scale(x, out, b, xt, z)
        lost = _lost_mass(x, out, dangling)
        _propagate(indptr, indices, rel, a, b, xt, z, y)
        y[seeds, columns] += lost
        x, y = y, x
        scale *= 1.0 - eta
        _accumulate(pi, x, scale)
    return pi, terms, (1.0 - eta) ** (terms + 1)
