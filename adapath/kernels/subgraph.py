"""Induced subgraphs and bounded BFS over the global CSR (Numba)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def induced_half_edges(indptr, indices, nodes, local_of):
    """Half-edges with both ends in ``nodes`` (local_of[v] >= 0 marks members).

    Returns (local source, local target, global half-edge index), rows in order of ``nodes``.
    """
    total = 0
    for i in range(nodes.shape[0]):
        u = nodes[i]
        for k in range(indptr[u], indptr[u + 1]):
            if local_of[indices[k]] >= 0:
                total += 1
    src = np.empty(total, dtype=np.int64)
    dst = np.empty(total, dtype=np.int64)
    edge = np.empty(total, dtype=np.int64)
    pos = 0
    for i in range(nodes.shape[0]):
        u = nodes[i]
        for k in range(indptr[u], indptr[u + 1]):
            lv = local_of[indices[k]]
            if lv >= 0:
                src[pos] = i
                dst[pos] = lv
                edge[pos] = k
                pos += 1
    return src, dst, edge


@njit(cache=True, nogil=True)
def bfs_depths(indptr, indices, source, max_depth):
    """Hop distance from ``source`` to every node, -1 beyond ``max_depth`` or unreachable."""
    n = indptr.shape[0] - 1
    depth = np.empty(n, dtype=np.int32)
    bfs_depths_into(indptr, indices, source, max_depth, depth, np.empty(n, dtype=np.int64),
                    np.empty(n, dtype=np.int64))
    return depth


@njit(cache=True, nogil=True)
def bfs_depths_into(indptr, indices, source, max_depth, depth, frontier, nxt):
    """``bfs_depths`` written into ``depth`` (int32, one per node), with ``frontier`` and
    ``nxt`` (int64, one per node) as its queues: scratch a caller reuses."""
    depth[:] = -1
    depth[source] = 0
    frontier[0] = source
    size = 1
    for d in range(1, max_depth + 1):
        count = 0
        for i in range(size):
            u = frontier[i]
            for k in range(indptr[u], indptr[u + 1]):
                v = indices[k]
                if depth[v] < 0:
                    depth[v] = d
                    nxt[count] = v
                    count += 1
        if count == 0:
            break
        frontier, nxt = nxt, frontier
        size = count


@njit(cache=True, nogil=True)
def reaches(src, dst, size, source, target):
    """Whether ``target`` is reachable from ``source`` along the half-edges (src[k], dst[k])
    of a graph of ``size`` nodes, src in increasing order (as ``induced_half_edges`` gives
    them)."""
    if source == target:
        return True
    start = np.zeros(size + 1, dtype=np.int64)
    for k in range(src.shape[0]):
        start[src[k] + 1] += 1
    for i in range(size):
        start[i + 1] += start[i]
    seen = np.zeros(size, dtype=np.bool_)
    queue = np.empty(size, dtype=np.int64)
    queue[0] = source
    seen[source] = True
    head, tail = 0, 1
    while head < tail:
        u = queue[head]
        head += 1
        for k in range(start[u], start[u + 1]):
            v = dst[k]
            if not seen[v]:
                if v == target:
                    return True
                seen[v] = True
                queue[tail] = v
                tail += 1
    return False


@njit(cache=True, nogil=True)
def row_order(src, dst, cost, rel):
    """The order of half-edges by (src, dst, cost, rel), ties kept in their given order,
    for ``src`` already nondecreasing (as ``induced_half_edges`` gives it): an insertion
    sort within each row, whose few entries make it cheaper than one sort of them all."""
    m = src.shape[0]
    order = np.arange(m)
    start = 0
    while start < m:
        end = start + 1
        while end < m and src[end] == src[start]:
            end += 1
        for i in range(start + 1, end):
            e = order[i]
            j = i - 1
            while j >= start:
                f = order[j]
                if dst[f] < dst[e] or (dst[f] == dst[e] and (cost[f] < cost[e] or (
                        cost[f] == cost[e] and rel[f] <= rel[e]))):
                    break
                order[j + 1] = f
                j -= 1
            order[j + 1] = e
        start = end
    return order
