"""Relational message passing over the global CSR with per-relation vectors (Numba).

PathMind's path representations are sums over walks of products of query-conditioned
relation vectors. One layer is ``y[v] = sum over half-edges (v, u) of x[u] * rho[code]``:
a sparse product whose entries are vectors, one per relation code, shared by every edge of
that code. Written as one pass over the CSR, it needs no per-edge tensor of hidden width
(the design card's decomposition: the relation vectors stay R x W, the edges stay indices).

``x`` is ``places x W`` with ``W = questions x hidden`` (several questions side by side), so a
pass reads each half-edge once for a whole batch. The places are a subset of the nodes (the
ones a batch can reach), read through a global-to-place map; masks skip what is known to be
zero: rows outside the layer's reach and sources not yet reached. Every sum runs in a fixed order
(rows in parallel, each row's half-edges in storage order; the relation gradient in fixed
row blocks summed in block order), so results do not depend on the thread count.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

BLOCKS = 128  # row blocks of the relation gradient: its partial sums, added in block order


@njit(parallel=True, cache=True, nogil=True)
def gather(indptr, indices, code, nodes, local_of, x, rho, rows, sources, out):
    """Over a subset of the graph's nodes (``nodes``, global ids; ``local_of`` maps a global id
    to its place there, -1 outside): ``out[i] = sum_k x[local_of[u]] * rho[code[k]]`` over the
    half-edges k of node ``nodes[i]`` whose neighbour u is a source (``sources`` by place), for
    every place i with ``rows[i]``; other rows are zero."""
    width = x.shape[1]
    for i in prange(nodes.shape[0]):
        for j in range(width):
            out[i, j] = 0.0
        if not rows[i]:
            continue
        v = nodes[i]
        for k in range(indptr[v], indptr[v + 1]):
            at = local_of[indices[k]]
            if at < 0 or not sources[at]:
                continue
            c = code[k]
            for j in range(width):
                out[i, j] += x[at, j] * rho[c, j]
    return out


@njit(parallel=True, cache=True, nogil=True)
def scatter_backward(indptr, indices, code, nodes, local_of, x, grad, rho, rows, sources, dx, drho_parts):
    """The gradient of :func:`gather` (called with the scatter codes: a half-edge's code as
    seen from its other end). For every source place i, ``dx[i] = sum_k grad[at] * rho[code[k]]``
    over the half-edges k of ``nodes[i]`` to row places ``at``; ``drho_parts[b, c] = sum
    x[i] * grad[at]`` over the half-edges of code c whose source place lies in block b (fixed
    blocks of places, summed in block order by the caller). Non-sources get zero."""
    n = nodes.shape[0]
    width = x.shape[1]
    blocks = drho_parts.shape[0]
    step = (n + blocks - 1) // blocks
    for b in prange(blocks):
        part = drho_parts[b]
        for c in range(part.shape[0]):
            for j in range(width):
                part[c, j] = 0.0
        for i in range(b * step, min(n, (b + 1) * step)):
            for j in range(width):
                dx[i, j] = 0.0
            if not sources[i]:
                continue
            u = nodes[i]
            for k in range(indptr[u], indptr[u + 1]):
                at = local_of[indices[k]]
                if at < 0 or not rows[at]:
                    continue
                c = code[k]
                for j in range(width):
                    dx[i, j] += grad[at, j] * rho[c, j]
                    part[c, j] += x[i, j] * grad[at, j]
    return dx, drho_parts


@njit(parallel=True, cache=True, nogil=True)
def neighbour_max(indptr, indices, values, inside, out):
    """``out[v] = max(values[v], max over neighbours u with inside[u] of values[u])`` for v
    with ``inside[v]``; ``-inf`` elsewhere (one step of a look-ahead over the subgraph)."""
    n = indptr.shape[0] - 1
    for v in prange(n):
        if not inside[v]:
            out[v] = -np.inf
            continue
        best = values[v]
        for k in range(indptr[v], indptr[v + 1]):
            u = indices[k]
            if inside[u] and values[u] > best:
                best = values[u]
        out[v] = best
    return out


@njit(cache=True, nogil=True)
def mark_neighbours(indptr, indices, mask, out):
    """``out[v]`` True where v or one of its neighbours is marked in ``mask``."""
    n = indptr.shape[0] - 1
    for v in range(n):
        out[v] = mask[v]
    for u in range(n):
        if mask[u]:
            for k in range(indptr[u], indptr[u + 1]):
                out[indices[k]] = True
    return out
