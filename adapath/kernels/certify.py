"""Certifying a corridor's top K before PPR has converged.

The series ``pi = eta * sum_k (1 - eta)^k x_k`` (``x_0`` the seed, ``x_{k+1} = P x_k``)
summed to term t leaves ``R_t = eta * sum_{k>t} (1 - eta)^k x_k >= 0``. Two facts bound it
node by node:

1. P moves mass and never makes it (a node without out-weight receives none), so
   ``x_k(v) <= |x_k|_1 <= 1``.
2. The Eq. 1 weight ``w(u, r, v) = a[r] + b[u] + b[v]`` is the same for a half-edge and its
   twin in the other direction, so the walk is reversible: in-weight equals out-weight.
   With ``m_k = max_u x_k(u) / out(u)``,
   ``x_{k+1}(v) = sum_u w(u, v) x_k(u) / out(u) <= m_k * sum_u w(u, v) = m_k * out(v)``;
   dividing by out(v) gives ``m_{k+1} <= m_k``, so ``x_k(v) <= m_t * out(v)`` for k >= t.

Summing the geometric tail, ``0 <= R_t(v) <= (1 - eta)^(t+1) * min(1, m_t * out(v))`` for
each direction. The corridor ranks nodes by ``rho = pi_f * pi_b``; both factors are
non-negative and only grow, so after t terms

    lo(v) = f_t(v) * b_t(v)  <=  rho(v)  <=  (f_t(v) + R_f(v)) * (b_t(v) + R_b(v)) = hi(v).

Let S be the K nodes of largest ``lo`` and ``L = min_S lo``. If exactly K nodes have
``lo >= L`` (no tie at the boundary) and every other node has ``hi < L``, then every
member of S ends above every non-member: the top-K set is final whatever the remaining
terms add (in exact arithmetic; the float32 rounding of the dense terms is shared with the
full solve). The corridor may climb the K ladder, so a pair stops only when every rung is
certified. With ``slack`` d > 0 the test is ``hi < (1 + d) * L`` instead: no node left
out can end more than a factor (1 + d) above the weakest node kept (d = 0: the exact
certificate).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True)
def _heap_push(heap, size, value):
    """Keep the ``len(heap)`` largest values seen in a min-heap; returns the new size."""
    if size < heap.shape[0]:
        i = size
        heap[i] = value
        while i > 0:
            parent = (i - 1) // 2
            if heap[parent] <= heap[i]:
                break
            heap[parent], heap[i] = heap[i], heap[parent]
            i = parent
        return size + 1
    if value <= heap[0]:
        return size
    heap[0] = value
    i = 0
    while True:
        left, smallest = 2 * i + 1, i
        if left < size and heap[left] < heap[smallest]:
            smallest = left
        if left + 1 < size and heap[left + 1] < heap[smallest]:
            smallest = left + 1
        if smallest == i:
            return size
        heap[i], heap[smallest] = heap[smallest], heap[i]
        i = smallest


@njit(cache=True, nogil=True)
def certify_columns(f, b, xt_f, xt_b, inv_f, inv_b, residual, ladder, slack):
    """0 if the top-K of ``f * b`` is certified at every K of ``ladder`` (increasing); else
    the factor by which the bounds' slack ``hi - lo`` must still shrink (1: check again next
    term; inf: a tie at a boundary or K above the node count, never certified). The factor
    only schedules the next check.

    f, b: the two partial sums; xt_f, xt_b: the last term divided by out-weight (any
    non-negative array whose maximum is m_t); inv_f, inv_b: 1 / out-weight (0: no
    out-weight, so no mass arrives); residual: (1 - eta)^(t+1)."""
    n = f.shape[0]
    m_f = 0.0
    m_b = 0.0
    for v in range(n):
        m_f = max(m_f, xt_f[v])
        m_b = max(m_b, xt_b[v])
    top = ladder[-1]
    if top > n:
        return np.inf
    heap = np.empty(top)
    size = 0
    for v in range(n):
        size = _heap_push(heap, size, f[v] * b[v])
    ranked = np.sort(heap)[::-1]
    rungs = ladder.shape[0]
    floor = np.empty(rungs)
    ceiling = np.empty(rungs)
    inside = np.zeros(rungs, dtype=np.int64)
    for i in range(rungs):
        floor[i] = ranked[ladder[i] - 1]
        ceiling[i] = (1.0 + slack) * floor[i]
        if floor[i] <= 0.0:
            return 1.0  # fewer than K nodes reached from both ends yet: check next term
    need = 0.0
    for v in range(n):
        lo = f[v] * b[v]
        r_f = residual * min(1.0, m_f / inv_f[v]) if inv_f[v] > 0.0 else 0.0
        r_b = residual * min(1.0, m_b / inv_b[v]) if inv_b[v] > 0.0 else 0.0
        hi = (f[v] + r_f) * (b[v] + r_b)
        for i in range(rungs):
            if lo >= floor[i]:
                inside[i] += 1
            elif hi >= ceiling[i]:
                need = max(need, (hi - lo) / (ceiling[i] - lo))
    for i in range(rungs):
        if inside[i] != ladder[i]:
            return np.inf
    return need


@njit(parallel=True, cache=True, nogil=True)
def _gather(pi, pi_blocks, x, xb, inv_cols, dense, block, lane, weight_of, columns, row_chunks,
            sums, xts):
    """Each listed column's partial sum and last term over out-weight, as contiguous rows;
    row chunk by row chunk, so that reading the lanes of the dense blocks stays in cache."""
    for chunk in prange(row_chunks.shape[0] - 1):
        lo, hi = row_chunks[chunk], row_chunks[chunk + 1]
        for i in range(columns.shape[0]):
            c = columns[i]
            w = weight_of[c]
            if dense[c]:
                t, at = block[c], lane[c]
                for v in range(lo, hi):
                    sums[i, v] = pi[c, v] + pi_blocks[t, v, at]
                    xts[i, v] = xb[t, v, at]
            else:
                for v in range(lo, hi):
                    sums[i, v] = pi[c, v]
                    xts[i, v] = x[c, v] * inv_cols[w, v]


@njit(parallel=True, cache=True, nogil=True)
def _certify_rows(sums, xts, inv_cols, weight_of, columns, slot, pairs, todo, residual, ladder,
                  slack, need):
    for i in prange(todo.shape[0]):
        p = todo[i]
        f, b = slot[pairs[p, 0]], slot[pairs[p, 1]]
        need[p] = certify_columns(sums[f], sums[b], xts[f], xts[b],
                                       inv_cols[weight_of[columns[f]]], inv_cols[weight_of[columns[b]]],
                                       residual, ladder, slack)


def certify_pairs(pi, pi_blocks, x, xb, inv_cols, dense, block, lane, weight_of, pairs, todo,
                  residual, ladder, slack, row_chunks, buffers=None):
    """The ``certify_columns`` answer (0: certified; else the factor the bounds must still
    shrink by) of each pair in ``todo`` (others: nan), pairs of seed
    columns (forward, backward) read as the Numba power iteration holds them mid-run: a
    column's partial sum is its row of ``pi`` plus, once dense, its lane of ``pi_blocks``;
    its last term over out-weight is ``x[c] * inv_cols[w]`` (push) or its lane of ``xb``
    (dense, already divided). ``inv_cols``: 1 / out-weight, one row per weight column;
    ``buffers`` (2 x at least the columns x N), if given, are reused for the gathered rows."""
    columns = np.unique(pairs[todo].ravel())
    slot = np.full(pi.shape[0], -1, dtype=np.int64)
    slot[columns] = np.arange(len(columns))
    n = pi.shape[1]
    if buffers is None:
        buffers = np.empty((2, len(columns), n))
    sums, xts = buffers[0, :len(columns)], buffers[1, :len(columns)]
    _gather(pi, pi_blocks, x, xb, inv_cols, dense, block, lane, weight_of, columns, row_chunks, sums, xts)
    need = np.full(len(pairs), np.nan)
    _certify_rows(sums, xts, inv_cols, weight_of, columns, slot, pairs, todo, residual, ladder, slack,
                  need)
    return need
