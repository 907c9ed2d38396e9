"""Batched personalized PageRank written against an array namespace ``xp`` (NumPy or CuPy).

The same function runs on SciPy sparse matrices (CPU, tests) and on cupyx sparse matrices
(GPU). It sums the same series as the Numba kernel (``pi = eta * sum_k (1-eta)^k P^k s``).
Per step, with ``xt = x / out`` and ``z = b * xt``:

    y = sum_r a[r] * (A_r @ xt) + A @ z + b * (A @ xt),    A = sum_r A_r

where A_r is the 0/1 adjacency of relation r (multi-edges counted). Out-weights are
``C @ a + deg * b + A @ b`` with C[u, r] the count of u's half-edges of relation r.
"""

from __future__ import annotations

from adapath.kernels.ppr_numba import series_terms


def power_iteration_xp(xp, adjacency, rel_adjacency, counts, degree, a, b, seeds, eta=0.85,
                       tol=1e-8, max_iter=200, low=None):
    """adjacency: N x N sparse; rel_adjacency: R sparse N x N; counts: N x R; degree: N.
    ``low``: the same two operators in float32; given, terms from the third on (at most
    (1-eta)^3 of the mass) run in float32, halving their memory traffic, as on the CPU.

    Returns (pi N x B, terms, L1 error bound).
    """
    n = degree.shape[0]
    batch = a.shape[1]
    out = counts @ a + degree[:, None] * b + adjacency @ b
    dangling = out <= 0
    safe = xp.where(dangling, 1.0, out)
    columns = xp.arange(batch)
    x = xp.zeros((n, batch), dtype=xp.float64)
    x[seeds, columns] = 1.0
    pi = eta * x
    terms = min(series_terms(eta, tol), max_iter)
    scale = eta
    ops = (adjacency, rel_adjacency, a, b)
    for term in range(1, terms + 1):
        if term == 3 and low is not None:
            ops = (*low, a.astype(xp.float32), b.astype(xp.float32))
        adj, rel_adj, a_t, b_t = ops
        xt = xp.where(dangling, 0.0, x / safe).astype(b_t.dtype)
        lost = xp.where(dangling, x, 0.0).sum(axis=0)
        y = adj @ (b_t * xt) + b_t * (adj @ xt)
        for r, matrix in enumerate(rel_adj):
            if matrix.nnz:
                y += a_t[r][None, :] * (matrix @ xt)
        y[seeds, columns] += lost.astype(y.dtype)
        x = y
        scale *= 1.0 - eta
        pi += scale * x
    return pi, terms, (1.0 - eta) ** (terms + 1)
