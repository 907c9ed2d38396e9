"""The PPR step on the GPU as one Numba CUDA kernel over the CSR rows.

One term of the series needs ``y[u, c] = sum over u's half-edges (u, v, r) of
(a[r, c] + b[u, c] + b[v, c]) * xt[v, c]`` for every node u and query column c (half-edges
come in both directions, so this is the sparse form's ``A_r @ xt`` sums). Written as sparse
products it takes one product per relation and a dense temporary each; here each thread owns
one (u, c) and walks u's row once, and the 32 threads of a warp hold 32 consecutive columns
of the same row, so every read of ``xt``, ``a`` and ``b`` is coalesced and no warp diverges.

Runs on CuPy arrays (through the CUDA array interface) and, with ``NUMBA_ENABLE_CUDASIM=1``,
on NumPy arrays in Numba's CUDA simulator, which is how the tests check it without a GPU.
"""

from __future__ import annotations

from numba import cuda

WARP = 32
THREADS = 256


@cuda.jit
def _weighted_step(indptr, indices, rel, a, b, xt, y, padded):
    t = cuda.grid(1)
    u = t // padded
    c = t - u * padded
    if u >= y.shape[0] or c >= y.shape[1]:
        return
    bu = b[u, c]
    acc = 0.0
    for k in range(indptr[u], indptr[u + 1]):
        v = indices[k]
        acc += (a[rel[k], c] + bu + b[v, c]) * xt[v, c]
    y[u, c] = acc


def weighted_step(indptr, indices, rel, a, b, xt, out):
    """``out`` (N x B, C order) receives the weighted step of ``xt`` (N x B, C order);
    ``a``: R x B, ``b``: N x B, all of one float dtype."""
    rows, cols = out.shape
    padded = -(-cols // WARP) * WARP
    blocks = -(-(rows * padded) // THREADS)
    if blocks:
        _weighted_step[blocks, THREADS](indptr, indices, rel, a, b, xt, out, padded)
    return out
