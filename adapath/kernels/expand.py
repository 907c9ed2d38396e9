"""Typed frontier expansion over a CSR whose rows are sorted by (relation, neighbour type)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _bound(keys, lo, hi, value, strict):
    """First position in [lo, hi) whose key is > value (strict) or >= value."""
    while lo < hi:
        m = (lo + hi) // 2
        if keys[m] < value or (strict and keys[m] == value):
            lo = m + 1
        else:
            hi = m
    return lo


@njit(cache=True, nogil=True, inline="always")
def _bound_by_type(indices, node_type, lo, hi, value, strict):
    """As _bound, keyed by the neighbour's node type."""
    while lo < hi:
        m = (lo + hi) // 2
        key = node_type[indices[m]]
        if key < value or (strict and key == value):
            lo = m + 1
        else:
            hi = m
    return lo


@njit(cache=True, nogil=True, inline="always")
def _segment(indptr, indices, rel, node_type, u, r, t):
    """[lo, hi) of u's half-edges with relation r and (t >= 0) neighbour type t."""
    start = _bound(rel, indptr[u], indptr[u + 1], r, False)
    end = _bound(rel, start, indptr[u + 1], r, True)
    if t < 0:
        return start, end
    first = _bound_by_type(indices, node_type, start, end, t, False)
    return first, _bound_by_type(indices, node_type, first, end, t, True)


@njit(cache=True, nogil=True)
def expand_mask(indptr, indices, rel, node_type, frontier, r, t, out):
    """Mark in ``out`` every neighbour of a frontier node reached by relation r into type t."""
    for i in range(frontier.shape[0]):
        lo, hi = _segment(indptr, indices, rel, node_type, frontier[i], r, t)
        for k in range(lo, hi):
            out[indices[k]] = True


@njit(cache=True, nogil=True)
def any_walk(indptr, indices, rel, node_type, source, rels, types):
    """Whether a walk from ``source`` takes relation rels[h] into type types[h + 1] at every
    hop h: depth first, each (hop, node) expanded once, stopping at the first full walk."""
    hops = rels.shape[0]
    if hops == 0:
        return True
    seen = np.zeros((hops, indptr.shape[0] - 1), dtype=np.bool_)
    stack_pos = np.empty(hops, dtype=np.int64)
    stack_end = np.empty(hops, dtype=np.int64)
    lo, hi = _segment(indptr, indices, rel, node_type, source, rels[0], types[1])
    depth = 0
    stack_pos[0], stack_end[0] = lo, hi
    while depth >= 0:
        if stack_pos[depth] >= stack_end[depth]:
            depth -= 1
            continue
        v = indices[stack_pos[depth]]
        stack_pos[depth] += 1
        if depth + 1 == hops:
            return True
        if seen[depth + 1, v]:
            continue
        seen[depth + 1, v] = True
        lo, hi = _segment(indptr, indices, rel, node_type, v, rels[depth + 1], types[depth + 2])
        depth += 1
        stack_pos[depth], stack_end[depth] = lo, hi
    return False


@njit(cache=True, nogil=True)
def count_typed(indptr, indices, rel, node_type, nodes, r, t):
    """Number of (relation r, type t) neighbours of each node."""
    out = np.zeros(nodes.shape[0], dtype=np.int64)
    for i in range(nodes.shape[0]):
        lo, hi = _segment(indptr, indices, rel, node_type, nodes[i], r, t)
        out[i] = hi - lo
    return out


@njit(cache=True, nogil=True)
def typed_slice(indptr, indices, rel, node_type, u, r, t):
    """Neighbours of u by relation r into type t, as a view of the CSR."""
    lo, hi = _segment(indptr, indices, rel, node_type, u, r, t)
    return indices[lo:hi]


@njit(cache=True, nogil=True)
def _step(indptr, indices, rel, node_type, front, size, r, t, mark, tick, out):
    """The distinct nodes one typed hop from front[:size] into ``out``; marks them ``tick``."""
    grown = 0
    for i in range(size):
        lo, hi = _segment(indptr, indices, rel, node_type, front[i], r, t)
        for k in range(lo, hi):
            v = indices[k]
            if mark[v] != tick:
                mark[v] = tick
                out[grown] = v
                grown += 1
    return grown


@njit(cache=True, nogil=True)
def walk_reaches(indptr, indices, rel, node_type, source, rels, types, target, scratch, tick):
    """Whether a typed walk from ``source`` (relation rels[h] into type types[h + 1] at hop h)
    ends at ``target``: the same answer as ``target in reach(source)``, searched from both
    ends (the graph holds every edge both ways), each step widening the smaller frontier,
    until one hop separates them.

    ``scratch`` is a (5, nodes) int64 array kept between calls: two mark rows (a node is in a
    frontier when its mark equals that frontier's tick, so nothing is cleared per call) and
    three frontier buffers. Returns (reached, the last tick used)."""
    hops = rels.shape[0]
    if node_type[source] != types[0] or node_type[target] != types[hops]:
        return False, tick
    if hops == 0:
        return source == target, tick
    mark_f, mark_b, front_f, front_b, buf = scratch[0], scratch[1], scratch[2], scratch[3], scratch[4]
    tick += 1
    tick_f, tick_b = tick, tick
    front_f[0], front_b[0] = source, target
    mark_f[source], mark_b[target] = tick_f, tick_b
    size_f, size_b = 1, 1
    f, b = 0, hops  # meta-path positions of the two frontiers
    while b - f > 1:
        tick += 1
        if size_f <= size_b:
            size_f = _step(indptr, indices, rel, node_type, front_f, size_f, rels[f], types[f + 1], mark_f, tick, buf)
            front_f[:size_f] = buf[:size_f]
            tick_f, f = tick, f + 1
            if size_f == 0:
                return False, tick
        else:
            size_b = _step(indptr, indices, rel, node_type, front_b, size_b, rels[b - 1], types[b - 1], mark_b, tick,
                           buf)
            front_b[:size_b] = buf[:size_b]
            tick_b, b = tick, b - 1
            if size_b == 0:
                return False, tick
    # one hop (relation rels[f]) between the frontiers: look across from the smaller side
    if size_f <= size_b:
        for i in range(size_f):
            lo, hi = _segment(indptr, indices, rel, node_type, front_f[i], rels[f], types[b])
            for k in range(lo, hi):
                if mark_b[indices[k]] == tick_b:
                    return True, tick
    else:
        for i in range(size_b):
            lo, hi = _segment(indptr, indices, rel, node_type, front_b[i], rels[f], types[f])
            for k in range(lo, hi):
                if mark_f[indices[k]] == tick_f:
                    return True, tick
    return False, tick
