"""The relation sequence of each found node path when every step has one edge (Numba).

Most corridor paths join each consecutive node pair by a single edge, so their one
relation sequence is a lookup per step. Doing it for all of a pair's paths in one call,
without the GIL, keeps the per-path Python work off the threads that share a batch.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def one_edge_sequences(edge_keys, edge_cost, edge_relation, n, flat, offsets):
    """For path i (local nodes ``flat[offsets[i]:offsets[i + 1]]``; edges keyed
    ``src * n + dst`` in sorted ``edge_keys``): whether each of its steps has exactly one
    edge and, if so, its cost (the step costs summed in path order) and its relations, at
    ``relations[offsets[i] - i:offsets[i + 1] - i - 1]``. Returns (single, cost, relations)."""
    paths = offsets.shape[0] - 1
    single = np.zeros(paths, dtype=np.bool_)
    cost = np.zeros(paths)
    relations = np.zeros(max(0, flat.shape[0] - paths), dtype=np.int64)
    for i in range(paths):
        total = 0.0
        ok = True
        for j in range(offsets[i], offsets[i + 1] - 1):
            key = flat[j] * n + flat[j + 1]
            lo = np.searchsorted(edge_keys, key, side="left")
            hi = np.searchsorted(edge_keys, key, side="right")
            if hi - lo != 1:
                ok = False
                break
            total += edge_cost[lo]
            relations[j - i] = edge_relation[lo]
        single[i] = ok
        cost[i] = total if ok else 0.0
    return single, cost, relations
