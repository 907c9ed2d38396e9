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

A shortlist makes the checks after the first cheap. Every ``hi`` is an upper bound on the
final ``rho`` (the bounds only tighten: ``f_{t+1} + R_{t+1} <= f_t + R_t``), so the full
check keeps the M nodes of largest ``hi`` as the pair's candidates and ``H``, the largest
``hi`` of the nodes it left out: no node outside the candidates can ever end above ``H``.
A later check reads only the candidates: if ``H`` is below the K-th largest ``lo`` among
them (so no outside node can reach the top K, nor tie at its boundary) and the candidates
pass the test above, the top-K set is final. That check is O(M) per pair instead of O(N).
"""

from __future__ import annotations

import numpy as np
from numba import get_num_threads, get_thread_id, njit, prange


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
def _heap_push_indexed(keys, ids, size, key, index):
    """The min-heap of ``_heap_push`` carrying an index with each key; returns (new size,
    the key that left the heap or was refused, -inf if none)."""
    if size < keys.shape[0]:
        i = size
        keys[i], ids[i] = key, index
        while i > 0:
            parent = (i - 1) // 2
            if keys[parent] <= keys[i]:
                break
            keys[parent], keys[i] = keys[i], keys[parent]
            ids[parent], ids[i] = ids[i], ids[parent]
            i = parent
        return size + 1, -np.inf
    if key <= keys[0]:
        return size, key
    dropped = keys[0]
    keys[0], ids[0] = key, index
    i = 0
    while True:
        left, smallest = 2 * i + 1, i
        if left < size and keys[left] < keys[smallest]:
            smallest = left
        if left + 1 < size and keys[left + 1] < keys[smallest]:
            smallest = left + 1
        if smallest == i:
            return size, dropped
        keys[i], keys[smallest] = keys[smallest], keys[i]
        ids[i], ids[smallest] = ids[smallest], ids[i]
        i = smallest


@njit(cache=True, nogil=True)
def certify_columns(f, b, xt_f, xt_b, inv_f, inv_b, residual, ladder, slack, candidates, outside):
    """0 if the top-K of ``f * b`` is certified at every K of ``ladder`` (increasing); else
    the factor by which the bounds' slack ``hi - lo`` must still shrink (1: check again next
    term; inf: a tie at a boundary or K above the node count, never certified). The factor
    only schedules the next check.

    f, b: the two partial sums; xt_f, xt_b: the last term divided by out-weight (any
    non-negative array whose maximum is m_t); inv_f, inv_b: 1 / out-weight (0: no
    out-weight, so no mass arrives); residual: (1 - eta)^(t+1). ``candidates`` (length M,
    0 for none) receives the M nodes of largest ``hi`` (-1 in unused places) and ``outside[0]``
    the largest ``hi`` of the other nodes (0 if none): the shortlist of ``certify_candidates``."""
    n = f.shape[0]
    outside[0] = np.inf  # no shortlist unless the pass below completes
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
        value = f[v] * b[v]
        if size < top or value > heap[0]:  # most nodes fail this: no call
            size = _heap_push(heap, size, value)
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
    listing = candidates.shape[0] > 0
    keys = np.empty(candidates.shape[0])
    listed, beyond = 0, 0.0
    candidates[:] = -1
    for v in range(n):
        lo = f[v] * b[v]
        r_f = residual * min(1.0, m_f / inv_f[v]) if inv_f[v] > 0.0 else 0.0
        r_b = residual * min(1.0, m_b / inv_b[v]) if inv_b[v] > 0.0 else 0.0
        hi = (f[v] + r_f) * (b[v] + r_b)
        if listing:
            if listed == keys.shape[0] and hi <= keys[0]:
                beyond = max(beyond, hi)
            else:
                listed, dropped = _heap_push_indexed(keys, candidates, listed, hi, v)
                beyond = max(beyond, dropped)
        for i in range(rungs):
            if lo >= floor[i]:
                inside[i] += 1
            elif hi >= ceiling[i]:
                need = max(need, (hi - lo) / (ceiling[i] - lo))
    if listing:
        outside[0] = beyond
    for i in range(rungs):
        if inside[i] != ladder[i]:
            return np.inf
    return need


@njit(cache=True, nogil=True)
def certify_candidates(f, b, inv_f, inv_b, m_f, m_b, outside, residual, ladder, slack):
    """The test of ``certify_columns`` on a pair's shortlist: f, b, inv_f, inv_b at the M
    candidates only, m_f and m_b the maxima of the last terms over out-weight (over every
    node), ``outside`` the bound on every node off the list. 0: certified; -1: the bound
    off the list is not below a rung's K-th score (a full check must list again); else as
    ``certify_columns``."""
    size = f.shape[0]
    top = ladder[-1]
    if top >= size:
        return -1.0
    lo = np.empty(size)
    hi = np.empty(size)
    for i in range(size):
        lo[i] = f[i] * b[i]
        r_f = residual * min(1.0, m_f / inv_f[i]) if inv_f[i] > 0.0 else 0.0
        r_b = residual * min(1.0, m_b / inv_b[i]) if inv_b[i] > 0.0 else 0.0
        hi[i] = (f[i] + r_f) * (b[i] + r_b)
    ranked = np.sort(lo)[::-1]
    need = 0.0
    for k in ladder:
        floor = ranked[k - 1]
        if floor <= 0.0:
            return 1.0
        if outside >= floor:
            return -1.0
        ceiling = (1.0 + slack) * floor
        inside = 0
        for i in range(size):
            if lo[i] >= floor:
                inside += 1
            elif hi[i] >= ceiling:
                need = max(need, (hi[i] - lo[i]) / (ceiling - lo[i]))
        if inside != k:
            return np.inf
    return need


@njit(parallel=True, cache=True, nogil=True)
def _certify_direct(pi, pi_blocks, x, xb, inv_blocks, dense, block, lane, weight_of, pairs, todo, residual,
                    ladder, slack, need, candidates, outside, scratch):
    """``certify_columns`` for each pair in ``todo``, its two columns copied into the
    running thread's own rows of ``scratch`` (threads x 6 x N) first."""
    weight_lanes = inv_blocks.shape[2]
    for i in prange(todo.shape[0]):
        p = todo[i]
        rows = scratch[get_thread_id()]
        for side in range(2):
            c = pairs[p, side]
            w = weight_of[c]
            wt, wj = w // weight_lanes, w % weight_lanes
            sums, xts, inv = rows[side], rows[2 + side], rows[4 + side]
            for v in range(sums.shape[0]):
                inv[v] = inv_blocks[wt, v, wj]
            if dense[c]:
                t, at = block[c], lane[c]
                for v in range(sums.shape[0]):
                    sums[v] = pi[c, v] + pi_blocks[t, v, at]
                    xts[v] = xb[t, v, at]
            else:
                for v in range(sums.shape[0]):
                    sums[v] = pi[c, v]
                    xts[v] = x[c, v] * inv[v]
        need[p] = certify_columns(rows[0], rows[1], rows[2], rows[3], rows[4], rows[5], residual, ladder,
                                  slack, candidates[p], outside[p:p + 1])


def certify_pairs(pi, pi_blocks, x, xb, inv_blocks, dense, block, lane, weight_of, pairs, todo,
                  residual, ladder, slack, row_chunks=None, scratch=None, candidates=None, outside=None):
    """The ``certify_columns`` answer (0: certified; else the factor the bounds must still
    shrink by) of each pair in ``todo`` (others: nan), pairs of seed
    columns (forward, backward) read as the Numba power iteration holds them mid-run: a
    column's partial sum is its row of ``pi`` plus, once dense, its lane of ``pi_blocks``;
    its last term over out-weight is ``x[c] * inv`` (push) or its lane of ``xb`` (dense,
    already divided). ``inv_blocks``: 1 / out-weight, weight column w at
    ``[w // lanes, :, w % lanes]``; ``scratch`` (threads x 6 x N), if given, is reused for
    the copied rows.
    ``candidates`` (P x M) and ``outside`` (P), if given, receive each checked pair's
    shortlist (``certify_columns``)."""
    n = pi.shape[1]
    if scratch is None or scratch.shape[0] < get_num_threads():
        scratch = np.empty((get_num_threads(), 6, n))
    if candidates is None:
        candidates, outside = np.empty((len(pairs), 0), dtype=np.int64), np.empty(len(pairs))
    need = np.full(len(pairs), np.nan)
    _certify_direct(pi, pi_blocks, x, xb, inv_blocks, dense, block, lane, weight_of, pairs, todo, residual,
                    ladder, slack, need, candidates, outside, scratch)
    return need


@njit(parallel=True, cache=True, nogil=True)
def _peaks(x, xb, inv_blocks, dense, block, lane, weight_of, columns, row_chunks, partial):
    """partial[chunk, i]: the largest last term over out-weight of column ``columns[i]``
    in the rows of one chunk."""
    for chunk in prange(row_chunks.shape[0] - 1):
        lo, hi = row_chunks[chunk], row_chunks[chunk + 1]
        for i in range(columns.shape[0]):
            c = columns[i]
            m = 0.0
            if dense[c]:
                t, at = block[c], lane[c]
                for v in range(lo, hi):
                    m = max(m, xb[t, v, at])
            else:
                w = weight_of[c]
                wt, wj = w // inv_blocks.shape[2], w % inv_blocks.shape[2]
                for v in range(lo, hi):
                    m = max(m, x[c, v] * inv_blocks[wt, v, wj])
            partial[chunk, i] = m


@njit(parallel=True, cache=True, nogil=True)
def _certify_listed(pi, pi_blocks, inv_blocks, dense, block, lane, weight_of, pairs, todo, peak,
                    candidates, outside, residual, ladder, slack, need):
    for i in prange(todo.shape[0]):
        p = todo[i]
        cf, cb = pairs[p, 0], pairs[p, 1]
        size = candidates.shape[1]
        f, b = np.empty(size), np.empty(size)
        inv_f, inv_b = np.empty(size), np.empty(size)
        for k in range(size):
            v = candidates[p, k]
            f[k] = pi[cf, v] + (pi_blocks[block[cf], v, lane[cf]] if dense[cf] else 0.0)
            b[k] = pi[cb, v] + (pi_blocks[block[cb], v, lane[cb]] if dense[cb] else 0.0)
            wf, wb = weight_of[cf], weight_of[cb]
            inv_f[k] = inv_blocks[wf // inv_blocks.shape[2], v, wf % inv_blocks.shape[2]]
            inv_b[k] = inv_blocks[wb // inv_blocks.shape[2], v, wb % inv_blocks.shape[2]]
        need[p] = certify_candidates(f, b, inv_f, inv_b, peak[cf], peak[cb], outside[p], residual,
                                     ladder, slack)


def certify_listed(pi, pi_blocks, x, xb, inv_blocks, dense, block, lane, weight_of, pairs, todo,
                   residual, ladder, slack, row_chunks, candidates, outside):
    """``certify_candidates`` for each pair in ``todo`` (others: nan) on the shortlist a
    full check (``certify_pairs``) left in ``candidates`` and ``outside``; the arguments
    as ``certify_pairs``. Reads O(M) values per pair, plus one pass over the last terms
    for their maxima."""
    columns = np.unique(pairs[todo].ravel())
    partial = np.empty((row_chunks.shape[0] - 1, len(columns)))
    _peaks(x, xb, inv_blocks, dense, block, lane, weight_of, columns, row_chunks, partial)
    peak = np.zeros(pi.shape[0])
    peak[columns] = partial.max(axis=0) if len(partial) else 0.0
    need = np.full(len(pairs), np.nan)
    _certify_listed(pi, pi_blocks, inv_blocks, dense, block, lane, weight_of, pairs, todo, peak,
                    candidates, outside, residual, ladder, slack, need)
    return need
