"""Batched personalized PageRank written against an array namespace ``xp`` (NumPy or CuPy).

The same function runs on SciPy sparse matrices (CPU, tests) and on cupyx sparse matrices
(GPU). It sums the same series as the Numba kernel (``pi = eta * sum_k (1-eta)^k P^k s``).
Per step, with ``xt = x / out`` and ``z = b * xt``:

    y = sum_r a[r] * (A_r @ xt) + A @ z + b * (A @ xt),    A = sum_r A_r

where A_r is the 0/1 adjacency of relation r (multi-edges counted). Out-weights are
``C @ a + deg * b + A @ b`` with C[u, r] the count of u's half-edges of relation r.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from adapath.kernels.series import Certification, Series


class Operators(NamedTuple):
    """The walk's sparse operators in one namespace: ``adjacency`` A (N x N, multi-edges
    counted), ``rel_adjacency`` (the R matrices A_r; none needed when a fused ``step``
    replaces the products), ``counts`` C (N x R) and ``degree`` (N)."""

    adjacency: object
    rel_adjacency: list
    counts: object
    degree: object


def certified_xp(xp, pi, x, out, pairs, residual, ladder, slack):
    """Which pairs (P x 2 columns of pi: forward, backward) have their top-K of
    ``pi_f * pi_b`` certified at every rung of ``ladder``, the rule of
    ``adapath.kernels.certify`` in array form. ``x``: the last term; ``out``: out-weights."""
    xt = xp.where(out > 0, x / xp.where(out > 0, out, 1.0), 0.0)
    m = xt.max(axis=0)
    f, b = pi[:, pairs[:, 0]], pi[:, pairs[:, 1]]
    # a node without out-weight keeps what it holds (a stuck seed): bound 1 there
    bound = xp.where(out > 0, xp.minimum(1.0, m[None, :] * out), (x > 0).astype(out.dtype))
    r_f, r_b = residual * bound[:, pairs[:, 0]], residual * bound[:, pairs[:, 1]]
    lo, hi = f * b, (f + r_f) * (b + r_b)
    if ladder[-1] > lo.shape[0]:
        return xp.zeros(len(pairs), dtype=bool)
    ranked = -xp.sort(-lo, axis=0)
    ok = xp.ones(len(pairs), dtype=bool)
    for k in ladder:
        floor = ranked[k - 1]
        inside = lo >= floor[None, :]
        ok &= (floor > 0) & (inside.sum(axis=0) == k)
        ok &= ~xp.any(~inside & (hi >= (1.0 + slack) * floor[None, :]), axis=0)
    return ok


def power_iteration_xp(xp, operators: Operators, a, b, seeds, series: Series = Series(), low=None,
                       certification: Certification | None = None, step=None):
    """PPR of every seed column (a, b: N x B weight columns, one per seed) summed to
    ``series.tol``. ``low``: adjacency and relation adjacencies in float32; given, terms from
    the third on (at most (1-eta)^3 of the mass) run in float32, halving their memory
    traffic, as on the CPU. ``certification``: the certified early exit of the Numba kernel
    (a stopped column's term is zeroed, so it adds nothing more; its shortlist size is not
    used). ``step(xt, a, b)``: the weighted step computed by a fused kernel instead of the
    sparse products (the GPU's ``adapath.kernels.ppr_cuda``); it must return the same ``y``.

    Returns (pi N x B, terms, L1 error bound).
    """
    adjacency, rel_adjacency, counts, degree = operators
    eta = series.eta
    n = degree.shape[0]
    batch = a.shape[1]
    out = counts @ a + degree[:, None] * b + adjacency @ b
    dangling = out <= 0
    safe = xp.where(dangling, 1.0, out)
    columns = xp.arange(batch)
    x = xp.zeros((n, batch), dtype=xp.float64)
    x[seeds, columns] = 1.0
    pi = eta * x
    terms = series.terms
    scale = eta
    ops = (adjacency, rel_adjacency, a, b)
    certifying = certification is not None and certification.active
    if certifying:
        ladder, slack = certification.ladder, certification.slack
        pairs = xp.asarray(certification.pairs, dtype=xp.int64).reshape(-1, 2)
        pair_done = xp.zeros(len(pairs), dtype=bool)
        pair_terms = xp.full(len(pairs), terms, dtype=xp.int64)
        finished = xp.zeros(batch, dtype=bool)
    for term in range(1, terms + 1):
        if term == 3 and low is not None:
            ops = (*low, a.astype(xp.float32), b.astype(xp.float32))
        adj, rel_adj, a_t, b_t = ops
        xt = xp.where(dangling, 0.0, x / safe).astype(b_t.dtype)
        lost = xp.where(dangling, x, 0.0).sum(axis=0)
        if step is not None:
            y = step(xt, a_t, b_t)
        else:
            y = adj @ (b_t * xt) + b_t * (adj @ xt)
            for r, matrix in enumerate(rel_adj):
                if matrix.nnz:
                    y += a_t[r][None, :] * (matrix @ xt)
        y[seeds, columns] += lost.astype(y.dtype)
        x = y
        scale *= 1.0 - eta
        pi += scale * x
        if certifying and certification.certify_from <= term < terms:
            ok = certified_xp(xp, pi, x.astype(xp.float64), out, pairs, (1.0 - eta) ** (term + 1),
                              ladder, slack) & ~pair_done
            pair_terms[ok] = term
            pair_done |= ok
            needed = xp.zeros(batch, dtype=bool)
            needed[pairs[~pair_done].ravel()] = True
            finished |= ~needed
            x[:, finished] = 0.0
    if certifying and certification.stopped is not None:
        certification.stopped[:] = xp.asnumpy(pair_terms) if xp is not np else pair_terms
    return pi, terms, (1.0 - eta) ** (terms + 1)
