"""Batched personalized PageRank by power iteration with on-the-fly query weights (Numba, CPU).

A batch has B columns; column j walks with weights ``w = a[r, j] + b[u, j] + b[v, j]`` and
teleports to ``seeds[j]`` with probability ``eta``. The CSR lists every edge in both
directions, so the in-edges of v are its row, and one pass over the CSR per step serves
all B columns:

    y[v, j] = sum over half-edges (v, r, u) of (a[r, j] + b[v, j]) * xt[u, j] + z[u, j]

with ``xt = pi / out`` and ``z = b * xt`` precomputed per step (``out`` = out-weights).
Rows run in parallel; each row owns its output, so there are no write conflicts.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


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
def _scale(pi, out, b, xz):
    n, batch = pi.shape
    for u in prange(n):
        for j in range(batch):
            o = out[u, j]
            t = pi[u, j] / o if o > 0.0 else 0.0
            xz[u, j] = t
            xz[u, batch + j] = b[u, j] * t


@njit(parallel=True, cache=True, nogil=True)
def _propagate(indptr, indices, rel, a, b, xz, y):
    n = indptr.shape[0] - 1
    batch = a.shape[1]
    for v in prange(n):
        for j in range(batch):
            y[v, j] = 0.0
        for k in range(indptr[v], indptr[v + 1]):
            u, r = indices[k], rel[k]
            for j in range(batch):
                y[v, j] += (a[r, j] + b[v, j]) * xz[u, j] + xz[u, batch + j]


@njit(parallel=True, cache=True, nogil=True)
def _teleport_and_diff(pi, y, seeds, eta, lost):
    """y <- (1 - eta) y + (eta + (1 - eta) lost) at the seed; returns the L1 change bound."""
    n, batch = pi.shape
    diff = 0.0
    for v in prange(n):
        row = 0.0
        for j in range(batch):
            y[v, j] *= 1.0 - eta
        for j in range(batch):
            if seeds[j] == v:
                y[v, j] += eta + (1.0 - eta) * lost[j]
            d = abs(y[v, j] - pi[v, j])
            row += d
        diff += row
    return diff


@njit(cache=True, nogil=True)
def _lost_mass(pi, out, dangling):
    batch = pi.shape[1]
    lost = np.zeros(batch)
    for i in range(dangling.shape[0]):
        u = dangling[i]
        for j in range(batch):
            if out[u, j] <= 0.0:
                lost[j] += pi[u, j]
    return lost


def power_iteration(indptr, indices, rel, a, b, seeds, eta=0.85, tol=1e-8, max_iter=200,
                    dangling=None):
    """PPR for every column; stops when the summed L1 change over all columns is <= tol.

    Mass at a node with no out-weight (isolated) returns to the column's seed, so each
    column stays a probability distribution. Returns (pi N x B, iterations, last change).
    """
    n = indptr.shape[0] - 1
    batch = a.shape[1]
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    seeds = np.ascontiguousarray(seeds, dtype=np.int64)
    out = out_weights(indptr, indices, rel, a, b)
    if dangling is None:
        dangling = np.flatnonzero(np.diff(indptr) == 0)
    pi = np.zeros((n, batch))
    pi[seeds, np.arange(batch)] = 1.0
    y = np.empty_like(pi)
    xz = np.empty((n, 2 * batch))
    change = np.inf
    iterations = 0
    for iterations in range(1, max_iter + 1):
        _scale(pi, out, b, xz)
        lost = _lost_mass(pi, out, dangling)
        _propagate(indptr, indices, rel, a, b, xz, y)
        change = _teleport_and_diff(pi, y, seeds, eta, lost)
        pi, y = y, pi
        if change <= tol:
            break
    return pi, iterations, change
