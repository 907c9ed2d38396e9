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

Checks run on a shortlist. Every ``hi`` is an upper bound on the final ``rho`` (the bounds
only tighten: ``f_{t+1} + R_{t+1} <= f_t + R_t``), so a full check (``certify_fused``, one
pass over the rows for every pair) keeps the M nodes of largest ``hi`` as the pair's
candidates and ``H``, the largest ``hi`` of the nodes it left out: no node off the list can
ever end above ``H``. A check (``certify_candidates``) reads only the candidates: if ``H``
is below the K-th largest ``lo`` among them (so no node off the list can reach the top K,
nor tie at its boundary) and the candidates pass the test above, the top-K set is final.
The checks after the first are O(M) per pair instead of O(N).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from adapath.kernels.half import decoded as _decoded

ROWS = 512  # rows per run of the fused full check (a block's rows stay in cache)


class LastTerms(NamedTuple):
    """Each seed column's last term over out-weight as the Numba power iteration holds it
    mid-run: ``x[c] * inv`` for a push column (``x`` column-major, S x N), its lane of
    ``xb`` for a dense one (``dense[c]``: block ``block[c]``, lane ``lane[c]``; already
    divided, times the column's scale: ``unscale`` is its inverse; float32, float64 or
    binary16 bits). ``inv_blocks``: 1 / out-weight, weight column w at
    ``[w // lanes, :, w % lanes]``; column c walks with weight column ``weight_of[c]``."""

    x: np.ndarray
    xb: np.ndarray
    unscale: np.ndarray
    inv_blocks: np.ndarray
    dense: np.ndarray
    block: np.ndarray
    lane: np.ndarray
    weight_of: np.ndarray


class SolveState(NamedTuple):
    """The power iteration mid-run, as the checks read it: a column's partial sum is its
    row of ``pi`` (S x N) plus, once dense, its lane of ``pi_blocks``; ``pairs`` (P x 2 seed
    columns: forward, backward) are what is certified."""

    pi: np.ndarray
    pi_blocks: np.ndarray
    pairs: np.ndarray
    last: LastTerms


class Rule(NamedTuple):
    """One check's terms: the residual (1 - eta)^(t+1) after term t (times the half
    storage's allowance), the corridor sizes (increasing) and the slack."""

    residual: float
    ladder: np.ndarray
    slack: float


class Shortlist(NamedTuple):
    """Each pair's candidates from its last full check (P x M node ids, -1 past the end)
    and ``outside``, the bound on every node off its list."""

    candidates: np.ndarray
    outside: np.ndarray


class _Heaps(NamedTuple):
    """Per group of rows and listed pair: a min-heap of the M largest ``hi`` (keys, node
    ids, size) and the largest ``hi`` it left out."""

    keys: np.ndarray
    ids: np.ndarray
    sizes: np.ndarray
    beyond: np.ndarray


@njit(cache=True, nogil=True)
def _heap_push_indexed(keys, ids, size, key, index):
    """Keep the ``len(keys)`` largest keys seen, each with its index, in a min-heap; returns
    (new size, the key that left the heap or was refused, -inf if none)."""
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
def certify_candidates(f, b, inv_f, inv_b, m_f, m_b, outside, residual, ladder, slack):
    """The certificate on a pair's shortlist: f, b, inv_f, inv_b (1 / out-weight, 0 for
    none) at the M listed nodes, m_f and m_b the maxima of the last terms over out-weight
    (over every node), ``outside`` the bound on every node off the list, residual
    (1 - eta)^(t+1). Returns 0 if the top K is certified at every rung of ``ladder``
    (increasing); -1 if the bound off the list is not below a rung's K-th score (a full
    check must list again); inf on a tie at a boundary; else the factor by which the
    bounds' slack ``hi - lo`` must still shrink (1: check again next term), which only
    schedules the next check."""
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
def last_term_peaks(last, columns, row_chunks, partial):
    """partial[chunk, i]: the largest last term over out-weight (``LastTerms``) of column
    ``columns[i]`` in the rows of one chunk."""
    x, xb, unscale, inv_blocks, dense, block, lane, weight_of = last
    for chunk in prange(row_chunks.shape[0] - 1):
        lo, hi = row_chunks[chunk], row_chunks[chunk + 1]
        for i in range(columns.shape[0]):
            c = columns[i]
            m = 0.0
            if dense[c]:
                t, at = block[c], lane[c]
                for v in range(lo, hi):
                    m = max(m, _decoded(xb[t, v, at]))
                m *= unscale[c]
            else:
                w = weight_of[c]
                wt, wj = w // inv_blocks.shape[2], w % inv_blocks.shape[2]
                for v in range(lo, hi):
                    m = max(m, x[c, v] * inv_blocks[wt, v, wj])
            partial[chunk, i] = m


@njit(parallel=True, cache=True, nogil=True)
def _certify_listed(state, todo, peak, shortlist, rule, need):
    """need[p]: ``certify_candidates`` of each pair p in ``todo`` on its shortlist."""
    pi, pi_blocks, pairs = state.pi, state.pi_blocks, state.pairs
    inv_blocks, dense, block, lane, weight_of = (state.last.inv_blocks, state.last.dense, state.last.block,
                                                 state.last.lane, state.last.weight_of)
    candidates, outside = shortlist
    residual, ladder, slack = rule
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


def _last_term_peaks(state: SolveState, todo, row_chunks) -> np.ndarray:
    """Every seed column's largest last term over out-weight, for the columns of the pairs
    in ``todo`` (0 for the others)."""
    columns = np.unique(state.pairs[todo].ravel())
    partial = np.empty((row_chunks.shape[0] - 1, len(columns)))
    last_term_peaks(state.last, columns, row_chunks, partial)
    peak = np.zeros(state.pi.shape[0])
    peak[columns] = partial.max(axis=0) if len(partial) else 0.0
    return peak


def certify_listed(state: SolveState, todo, rule: Rule, row_chunks, shortlist: Shortlist) -> np.ndarray:
    """``certify_candidates`` for each pair in ``todo`` (others: nan) on the shortlist a
    full check (``certify_fused``) left; the arguments as ``certify_fused``. Reads O(M)
    values per pair, plus one pass over the last terms for their maxima."""
    peak = _last_term_peaks(state, todo, row_chunks)
    need = np.full(len(state.pairs), np.nan)
    _certify_listed(state, todo, peak, shortlist, rule, need)
    return need


@njit(parallel=True, cache=True, nogil=True)
def _list_rows(state, todo, peak, residual, groups, heaps):
    """For each group of rows g and listed pair i: the M nodes of largest ``hi`` among the
    group's rows in a min-heap (keys[g, i], ids[g, i], sizes[g, i]) and the largest ``hi``
    it left out (beyond[g, i]). Rows go in runs of ``ROWS`` so that a block's rows stay in
    cache while every pair reads its lanes."""
    pi, pi_blocks, pairs = state.pi, state.pi_blocks, state.pairs
    inv_blocks, dense, block, lane, weight_of = (state.last.inv_blocks, state.last.dense, state.last.block,
                                                 state.last.lane, state.last.weight_of)
    keys, ids, sizes, beyond = heaps
    lanes_w = inv_blocks.shape[2]
    size_cap = keys.shape[2]
    for g in prange(groups.shape[0] - 1):
        for i in range(todo.shape[0]):
            sizes[g, i] = 0
            beyond[g, i] = 0.0
        for start in range(groups[g], groups[g + 1], ROWS):
            stop = min(start + ROWS, groups[g + 1])
            for i in range(todo.shape[0]):
                p = todo[i]
                cf, cb = pairs[p, 0], pairs[p, 1]
                wf, wb = weight_of[cf], weight_of[cb]
                m_f, m_b = peak[cf], peak[cb]
                heap_keys, heap_ids = keys[g, i], ids[g, i]
                size, left = sizes[g, i], beyond[g, i]
                for v in range(start, stop):
                    f = pi[cf, v] + (pi_blocks[block[cf], v, lane[cf]] if dense[cf] else 0.0)
                    b = pi[cb, v] + (pi_blocks[block[cb], v, lane[cb]] if dense[cb] else 0.0)
                    inv_f = inv_blocks[wf // lanes_w, v, wf % lanes_w]
                    inv_b = inv_blocks[wb // lanes_w, v, wb % lanes_w]
                    r_f = residual * min(1.0, m_f / inv_f) if inv_f > 0.0 else 0.0
                    r_b = residual * min(1.0, m_b / inv_b) if inv_b > 0.0 else 0.0
                    hi = (f + r_f) * (b + r_b)
                    if size == size_cap and hi <= heap_keys[0]:  # most nodes: no call
                        left = max(left, hi)
                    else:
                        size, dropped = _heap_push_indexed(heap_keys, heap_ids, size, hi, v)
                        left = max(left, dropped)
                sizes[g, i], beyond[g, i] = size, left


@njit(parallel=True, cache=True, nogil=True)
def _merge_lists(heaps, todo, shortlist):
    """Each pair's M nodes of largest ``hi`` over all groups, and the largest ``hi`` of the
    nodes left out (0 if none)."""
    keys, ids, sizes, beyond = heaps
    candidates, outside = shortlist
    groups, _, size_cap = keys.shape
    for i in prange(todo.shape[0]):
        total = 0
        for g in range(groups):
            total += sizes[g, i]
        all_keys = np.empty(total)
        all_ids = np.empty(total, dtype=np.int64)
        at = 0
        left = 0.0
        for g in range(groups):
            for k in range(sizes[g, i]):
                all_keys[at], all_ids[at] = keys[g, i, k], ids[g, i, k]
                at += 1
            left = max(left, beyond[g, i])
        order = np.argsort(-all_keys)
        take = min(size_cap, total)
        p = todo[i]
        for k in range(size_cap):
            candidates[p, k] = all_ids[order[k]] if k < take else -1
        if total > take:
            left = max(left, all_keys[order[take]])
        outside[p] = left


def certify_fused(state: SolveState, todo, rule: Rule, row_chunks, shortlist: Shortlist,
                  groups: int = 8) -> np.ndarray:
    """The full check in one pass over the rows for every pair in ``todo`` (of
    ``state.pairs``; others: nan): each pair's shortlist (the M =
    ``shortlist.candidates.shape[1]`` nodes of largest ``hi``, M at most N) and the bound on
    every other node, then ``certify_candidates`` on the list. Sound for the same reason as
    the shortlist: a node off the list ends at most at its ``hi``, below the bound; if the
    bound is not below a rung's K-th score the answer is -1 (not certified; a later full
    check lists again). ``shortlist`` (P x M candidates, P outside) receives each checked
    pair's list; ``row_chunks``: row boundaries for the pass over the last terms."""
    n = state.pi.shape[1]
    size_cap = shortlist.candidates.shape[1]
    cuts = np.unique(np.linspace(0, n, groups + 1).astype(np.int64))
    heaps = _Heaps(np.empty((len(cuts) - 1, len(todo), size_cap)),
                   np.empty((len(cuts) - 1, len(todo), size_cap), dtype=np.int64),
                   np.zeros((len(cuts) - 1, len(todo)), dtype=np.int64), np.zeros((len(cuts) - 1, len(todo))))
    peak = _last_term_peaks(state, todo, row_chunks)
    _list_rows(state, todo, peak, rule.residual, cuts, heaps)
    _merge_lists(heaps, todo, shortlist)
    need = np.full(len(state.pairs), np.nan)
    _certify_listed(state, todo, peak, shortlist, rule, need)
    return need
