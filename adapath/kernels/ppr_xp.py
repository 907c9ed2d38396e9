"""Batched personalized PageRank written against an array namespace ``xp`` (NumPy or CuPy).

The same function runs on SciPy sparse matrices (CPU, tests) and on cupyx sparse matrices
(GPU). Per step, with ``xt = pi / out`` and ``z = b * xt``:

    y = sum_r a[r] * (A_r @ xt) + A @ z + b * (A @ xt),    A = sum_r A_r

where A_r is the 0/1 adjacency of relation r (multi-edges counted). Out-weights are
``C @ a + deg * b + A @ b`` with C[u, r] the count of u's half-edges of relation r.
"""

from __future__ import annotations


def power_iteration_xp(xp, adjacency, rel_adjacency, counts, degree, a, b, seeds, eta=0.85,
                       tol=1e-8, max_iter=200):
    """adjacency: N x N sparse; rel_adjacency: R sparse N x N; counts: N x R; degree: N.

    Mass at a node with no out-weight returns to its column's seed. Returns
    (pi N x B, iterations, summed L1 change of the last step).
    """
    n = degree.shape[0]
    batch = a.shape[1]
    out = counts @ a + degree[:, None] * b + adjacency @ b
    dangling = out <= 0
    safe = xp.where(dangling, 1.0, out)
    columns = xp.arange(batch)
    pi = xp.zeros((n, batch), dtype=xp.float64)
    pi[seeds, columns] = 1.0
    change = float("inf")
    iterations = 0
    for iterations in range(1, max_iter + 1):
        xt = xp.where(dangling, 0.0, pi / safe)
        lost = xp.where(dangling, pi, 0.0).sum(axis=0)
        y = adjacency @ (b * xt) + b * (adjacency @ xt)
        for r, matrix in enumerate(rel_adjacency):
            if matrix.nnz:
                y += a[r][None, :] * (matrix @ xt)
        y *= 1.0 - eta
        y[seeds, columns] += eta + (1.0 - eta) * lost
        change = float(xp.abs(y - pi).sum())
        pi = y
        if change <= tol:
            break
    return pi, iterations, change
