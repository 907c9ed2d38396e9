"""One step of the walk scorer's sum-product and max-product over a CSR layer.

For the rows ``nodes`` (with their masses and heaviest-walk weights) of a layer
``(indptr, indices, weights)``, every entry ``(u, v, w)`` not into an excluded node adds
``mass[u] * w`` to ``v``'s mass and offers ``best[u] * w`` to ``v``'s heaviest walk, whose
predecessor is the first row (in ``nodes`` order) that attains it. Entries are visited
row by row in CSR order, so each node's mass is summed in the same order as a bincount
over the gathered entries would sum it (the same bits).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def walk_step(indptr, indices, weights, nodes, mass, best, exclude, slot, scratch_mass, scratch_best, scratch_first):
    """(targets sorted, their mass, their best, the position in ``nodes`` of each one's
    heaviest predecessor). ``exclude``: sorted node ids never entered. ``slot`` (all -1),
    ``scratch_*``: arrays over all nodes, handed back as they came."""
    count = 0
    for i in range(len(nodes)):
        count += indptr[nodes[i] + 1] - indptr[nodes[i]]
    touched = np.empty(count, dtype=np.int64)
    seen = 0
    for i in range(len(nodes)):
        u = nodes[i]
        for p in range(indptr[u], indptr[u + 1]):
            v = indices[p]
            if len(exclude):
                k = np.searchsorted(exclude, v)
                if k < len(exclude) and exclude[k] == v:
                    continue
            if slot[v] < 0:
                slot[v] = seen
                touched[seen] = v
                seen += 1
                scratch_mass[v] = 0.0
                scratch_best[v] = 0.0
                scratch_first[v] = -1
            w = weights[p]
            scratch_mass[v] += mass[i] * w
            offer = best[i] * w
            if offer > scratch_best[v] or (offer == scratch_best[v] and scratch_first[v] < 0):
                scratch_best[v] = offer
                scratch_first[v] = i
    targets = np.sort(touched[:seen])
    out_mass = np.empty(seen)
    out_best = np.empty(seen)
    out_first = np.empty(seen, dtype=np.int64)
    for k in range(seen):
        v = targets[k]
        out_mass[k] = scratch_mass[v]
        out_best[k] = scratch_best[v]
        out_first[k] = scratch_first[v]
        slot[v] = -1
    return targets, out_mass, out_best, out_first
