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

with ``xt = x / out`` and ``z = b * xt`` (``out`` = out-weights) stored side by side. Rows
run in parallel and each row owns its output. Mass at a node without out-weight (isolated) returns to the seed.
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
def _scale(x, out, b, xz):
    """xz[:, :B] = x / out and xz[:, B:] = b * x / out, side by side so that one gather per
    half-edge fetches both."""
    n, batch = x.shape
    for u in prange(n):
        for j in range(batch):
            o = out[u, j]
            t = x[u, j] / o if o > 0.0 else 0.0
            xz[u, j] = t
            xz[u, batch + j] = b[u, j] * t


@njit(parallel=True, cache=True, nogil=True)
def _propagate(indptr, indices, rel, a, b, xz, y):
    """y = P x for every column; rows are sorted by relation, so a[r] multiplies per segment."""
    n = indptr.shape[0] - 1
    batch = a.shape[1]
    for v in prange(n):
        acc = np.zeros(batch, dtype=y.dtype)
        seg = np.zeros(batch, dtype=y.dtype)
        total = np.zeros(batch, dtype=y.dtype)
        lo, hi = indptr[v], indptr[v + 1]
        k = lo
        while k < hi:
            r = rel[k]
            seg[:] = 0.0
            while k < hi and rel[k] == r:
                u = indices[k]
                for j in range(batch):
                    seg[j] += xz[u, j]
                    acc[j] += xz[u, batch + j]
                k += 1
            for j in range(batch):
                acc[j] += a[r, j] * seg[j]
                total[j] += seg[j]
        for j in range(batch):
            y[v, j] = acc[j] + b[v, j] * total[j]


@njit(parallel=True, cache=True, nogil=True)
def _push(indptr, indices, rel, a, b, out, x, y):
    """y = P x by pushing from the nonzero entries of each column (early, sparse steps)."""
    n, batch = x.shape
    for j in prange(batch):
        for v in range(n):
            y[v, j] = 0.0
        for u in range(n):
            xu = x[u, j]
            if xu == 0.0 or out[u, j] <= 0.0:
                continue
            t = xu / out[u, j]
            bu = b[u, j]
            for k in range(indptr[u], indptr[u + 1]):
                v = indices[k]
                y[v, j] += (a[rel[k], j] + bu + b[v, j]) * t


@njit(parallel=True, cache=True, nogil=True)
def _push_work(indptr, x):
    """Half-edges a push step would touch, summed over columns."""
    n, batch = x.shape
    work = 0
    for j in prange(batch):
        w = 0
        for u in range(n):
            if x[u, j] != 0.0:
                w += indptr[u + 1] - indptr[u]
        work += w
    return work


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
                    dangling=None, mixed_precision=True, push_fraction=0.25, out=None):
    """PPR for every column with L1 error <= tol. Returns (pi N x B, terms, error bound).

    Early terms, whose support is a few hops around the seed, are pushed from their nonzero
    entries when that touches under ``push_fraction`` of a full pass. With
    ``mixed_precision``, terms from the third on (carrying at most (1-eta)^3 of the mass) run
    in float32, halving the memory traffic of the dense passes; pi accumulates in float64.
    ``out`` (the out-weights of every column) may be given when columns share weights.
    """
    n = indptr.shape[0] - 1
    batch = a.shape[1]
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    seeds = np.ascontiguousarray(seeds, dtype=np.int64)
    columns = np.arange(batch)
    if out is None:
        out = out_weights(indptr, indices, rel, a, b)
    if dangling is None:
        dangling = np.flatnonzero(np.diff(indptr) == 0)
    terms = min(series_terms(eta, tol), max_iter)
    x = np.zeros((n, batch))
    x[seeds, columns] = 1.0
    pi = np.zeros((n, batch))
    pi[seeds, columns] = eta
    dense_cost = (indptr[-1] if n else 0) * batch
    low = None  # float32 copies of a, b, out for the dense low-precision terms
    scale = eta
    for term in range(1, terms + 1):
        lost = _lost_mass(x, out, dangling)
        sparse = x.dtype == np.float64 and _push_work(indptr, x) < push_fraction * dense_cost
        if sparse:
            y = np.empty_like(x)
            _push(indptr, indices, rel, a, b, out, x, y)
        else:
            if mixed_precision and term >= 3:
                if low is None:
                    low = (a.astype(np.float32), b.astype(np.float32))
                la, lb = low
                x = x.astype(np.float32, copy=False)
            else:
                la, lb = a, b
            xz = np.empty((n, 2 * batch), dtype=x.dtype)
            y = np.empty_like(x)
            _scale(x, out, lb, xz)
            _propagate(indptr, indices, rel, la, lb, xz, y)
        y[seeds, columns] += lost
        x = y
        scale *= 1.0 - eta
        _accumulate(pi, x, scale)
    return pi, terms, (1.0 - eta) ** (terms + 1)
