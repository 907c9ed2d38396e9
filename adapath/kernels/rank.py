"""Ranking nodes by a pair's corridor score ``rho = pi_f * pi_b`` (Numba, CPU).

A corridor needs only the few hundred best nodes of each pair, in the order ``rho``
descending, ties by node index ascending (the order of a stable sort of ``-rho``). One
pass keeps them in a min-heap of ``top`` entries, so a pair costs O(N) instead of a
partition and a sort of N values, and a batch's pairs run in parallel without the GIL.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True, inline="always")
def _below(key_a, id_a, key_b, id_b):
    """Whether entry a ranks below entry b: smaller score, or the same score and a larger
    node index."""
    return key_a < key_b or (key_a == key_b and id_a > id_b)


@njit(cache=True, nogil=True)
def _sift_down(keys, ids, size, i):
    while True:
        left, lowest = 2 * i + 1, i
        if left < size and _below(keys[left], ids[left], keys[lowest], ids[lowest]):
            lowest = left
        if left + 1 < size and _below(keys[left + 1], ids[left + 1], keys[lowest], ids[lowest]):
            lowest = left + 1
        if lowest == i:
            return
        keys[i], keys[lowest] = keys[lowest], keys[i]
        ids[i], ids[lowest] = ids[lowest], ids[i]
        i = lowest


@njit(cache=True, nogil=True)
def _top_of(rho, keys, ids, out):
    """``out`` receives the ``len(out)`` best nodes of ``rho`` in rank order (-1 past N);
    keys and ids: scratch of that length."""
    top = out.shape[0]
    size = 0
    for v in range(rho.shape[0]):
        r = rho[v]
        if size < top:  # sift up
            i = size
            keys[i], ids[i] = r, v
            size += 1
            while i > 0:
                parent = (i - 1) // 2
                if not _below(keys[i], ids[i], keys[parent], ids[parent]):
                    break
                keys[i], keys[parent] = keys[parent], keys[i]
                ids[i], ids[parent] = ids[parent], ids[i]
                i = parent
        elif r > keys[0]:  # v is later than every kept node: an equal score ranks below
            keys[0], ids[0] = r, v
            _sift_down(keys, ids, size, 0)
    for i in range(size, top):
        out[i] = -1
    while size > 0:  # pop the lowest to the back: rank order front to back
        size -= 1
        out[size] = ids[0]
        keys[0], ids[0] = keys[size], ids[size]
        _sift_down(keys, ids, size, 0)


@njit(cache=True, nogil=True)
def top_nodes(rho, top):
    """The ``min(top, N)`` nodes of largest ``rho``, by score descending then node index."""
    take = min(top, rho.shape[0])
    out = np.empty(take, dtype=np.int64)
    _top_of(rho, np.empty(take), np.empty(take, dtype=np.int64), out)
    return out


@njit(parallel=True, cache=True, nogil=True)
def _rank_pairs(columns, forward, backward, rho, order):
    top = order.shape[1]
    for p in prange(forward.shape[0]):
        f, b, r = columns[forward[p]], columns[backward[p]], rho[p]
        for v in range(r.shape[0]):
            r[v] = f[v] * b[v]
        _top_of(r, np.empty(top), np.empty(top, dtype=np.int64), order[p])


def rank_pairs(columns: np.ndarray, forward: np.ndarray, backward: np.ndarray, top: int,
               rho: np.ndarray | None = None, order: np.ndarray | None = None):
    """For pair p, ``rho = columns[forward[p]] * columns[backward[p]]`` (columns: S x N, one
    PPR column per row) and its ``min(top, N)`` best nodes. Returns (rho P x N, order
    P x top), written into ``rho`` and ``order`` when given (C-contiguous, of those shapes)."""
    columns = np.ascontiguousarray(columns)
    forward = np.ascontiguousarray(forward, dtype=np.int64)
    backward = np.ascontiguousarray(backward, dtype=np.int64)
    shapes = ((len(forward), columns.shape[1]), (len(forward), min(top, columns.shape[1])))
    for given, shape, dtype in ((rho, shapes[0], np.float64), (order, shapes[1], np.int64)):
        if given is not None and (given.shape != shape or given.dtype != dtype or not given.flags.c_contiguous):
            raise ValueError(f"rank_pairs: an output must be a C-contiguous {np.dtype(dtype)} array of shape {shape}")
    rho = np.empty(shapes[0]) if rho is None else rho
    order = np.empty(shapes[1], dtype=np.int64) if order is None else order
    _rank_pairs(columns, forward, backward, rho, order)
    return rho, order
