"""Typed frontier expansion over a CSR whose rows are sorted by (relation, neighbour type)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _segment(indptr, indices, rel, node_type, u, r, t):
    """[lo, hi) of u's half-edges with relation r and neighbour type t (two binary searches)."""
    lo, hi = indptr[u], indptr[u + 1]
    a, b = lo, hi
    while a < b:  # first half-edge with rel >= r
        m = (a + b) // 2
        if rel[m] < r:
            a = m + 1
        else:
            b = m
    start = a
    a, b = start, hi
    while a < b:  # first with rel > r
        m = (a + b) // 2
        if rel[m] <= r:
            a = m + 1
        else:
            b = m
    end = a
    if t < 0:
        return start, end
    a, b = start, end
    while a < b:  # first with type >= t
        m = (a + b) // 2
        if node_type[indices[m]] < t:
            a = m + 1
        else:
            b = m
    s2 = a
    a, b = s2, end
    while a < b:  # first with type > t
        m = (a + b) // 2
        if node_type[indices[m]] <= t:
            a = m + 1
        else:
            b = m
    return s2, a


@njit(cache=True, nogil=True)
def expand_mask(indptr, indices, rel, node_type, frontier, r, t, out):
    """Mark in ``out`` every neighbour of a frontier node reached by relation r into type t."""
    for i in range(frontier.shape[0]):
        lo, hi = _segment(indptr, indices, rel, node_type, frontier[i], r, t)
        for k in range(lo, hi):
            out[indices[k]] = True


@njit(cache=True, nogil=True)
def count_typed(indptr, indices, rel, node_type, nodes, r, t):
    """Number of (relation r, type t) neighbours of each node."""
    out = np.zeros(nodes.shape[0], dtype=np.int64)
    for i in range(nodes.shape[0]):
        lo, hi = _segment(indptr, indices, rel, node_type, nodes[i], r, t)
        out[i] = hi - lo
    return out


@njit(cache=True, nogil=True)
def typed_slice(indptr, indices, rel, node_type, u, r, t):
    """Neighbours of u by relation r into type t, as a view of the CSR."""
    lo, hi = _segment(indptr, indices, rel, node_type, u, r, t)
    return indices[lo:hi]
