"""Dijkstra and Yen's k-shortest simple paths on a small undirected CSR (Numba).

The corridor subgraph is given as a local CSR with one cost per half-edge (parallel edges
already collapsed to the cheapest). Yen's algorithm: the next path is the cheapest spur
path that leaves some node of the previous path (its root blocked, and the edges that
earlier paths with the same root took out of the spur node banned). With Lawler's
refinement, a path is spurred only from the node where it left its parent on: the spurs
before it were already taken when the parent was.

Two cuts leave the list unchanged. Every spur search is A* guided by each node's cost to
the target in the whole graph (one Dijkstra from the target), a lower bound whatever a
spur blocks. And once the candidates hold as many paths as are still to be picked, a spur
path dearer than the dearest of those cheapest ones can never be picked: a spur whose root
plus its bound already exceeds that is skipped, and a search stops when every route left
does.
"""

from __future__ import annotations

import heapq

import numpy as np
from numba import njit
from numba.typed import List


@njit(cache=True, nogil=True)
def dijkstra_path(indptr, indices, cost, source, target, blocked, banned_from_source):
    """Cheapest path source -> target avoiding ``blocked`` nodes and, out of the source,
    the neighbours flagged in ``banned_from_source``. Returns (cost, nodes) or (inf, [])."""
    return _guided_path(indptr, indices, cost, source, target, blocked, banned_from_source,
                        np.zeros(indptr.shape[0] - 1), np.inf)


@njit(cache=True, nogil=True)
def distances_to(indptr, indices, cost, target):
    """Every node's cheapest cost to ``target`` along the half-edges' directions (inf where
    it cannot reach it): one Dijkstra from the target over the reversed half-edges, so
    directed graphs (the layered walks of ``hop_bounded``) are served too."""
    n = indptr.shape[0] - 1
    into = np.zeros(n + 1, dtype=np.int64)
    for k in range(indices.shape[0]):
        into[indices[k] + 1] += 1
    for v in range(n):
        into[v + 1] += into[v]
    fill = into[:-1].copy()
    origin = np.empty(indices.shape[0], dtype=np.int64)
    weight = np.empty(indices.shape[0])
    for u in range(n):
        for k in range(indptr[u], indptr[u + 1]):
            v = indices[k]
            origin[fill[v]], weight[fill[v]] = u, cost[k]
            fill[v] += 1
    dist = np.full(n, np.inf)
    done = np.zeros(n, dtype=np.bool_)
    dist[target] = 0.0
    heap = [(0.0, target)]
    while len(heap) > 0:
        d, v = heapq.heappop(heap)
        if done[v]:
            continue
        done[v] = True
        for k in range(into[v], into[v + 1]):
            u = origin[k]
            nd = d + weight[k]
            if not done[u] and nd < dist[u]:
                dist[u] = nd
                heapq.heappush(heap, (nd, u))
    return dist


@njit(cache=True, nogil=True)
def _guided_path(indptr, indices, cost, source, target, blocked, banned_from_source, to_target, limit):
    """``dijkstra_path`` as A*: nodes leave the heap in order of cost so far plus
    ``to_target``, a lower bound on their cost to the target that no edge breaks
    (``to_target[u] <= cost(u, v) + to_target[v]``; zeros: plain Dijkstra). The costs to
    the target in the whole graph are such a bound whatever is blocked or banned, and with
    them a search goes straight down the cheapest remaining route. A path dearer than
    ``limit`` is not wanted: the search gives up once every route left must cost more."""
    n = indptr.shape[0] - 1
    dist = np.full(n, np.inf)
    prev = np.full(n, -1, dtype=np.int64)
    done = np.zeros(n, dtype=np.bool_)
    dist[source] = 0.0
    heap = [(to_target[source], source)]
    while len(heap) > 0:
        least, u = heapq.heappop(heap)
        if least > limit:
            break
        if done[u]:
            continue
        done[u] = True
        if u == target:
            break
        d = dist[u]
        for k in range(indptr[u], indptr[u + 1]):
            v = indices[k]
            if blocked[v] or done[v]:
                continue
            if u == source and banned_from_source[v]:
                continue
            nd = d + cost[k]
            if nd < dist[v] and to_target[v] < np.inf:
                dist[v] = nd
                prev[v] = u
                heapq.heappush(heap, (nd + to_target[v], v))
    if not done[target]:
        return np.inf, np.zeros(0, dtype=np.int64)
    length = 1
    v = target
    while v != source:
        v = prev[v]
        length += 1
    path = np.empty(length, dtype=np.int64)
    v = target
    for i in range(length - 1, -1, -1):
        path[i] = v
        v = prev[v]
    return dist[target], path


@njit(cache=True, nogil=True)
def _edge_cost(indptr, indices, cost, u, v):
    best = np.inf
    for k in range(indptr[u], indptr[u + 1]):
        if indices[k] == v and cost[k] < best:
            best = cost[k]
    return best


@njit(cache=True, nogil=True)
def _same(a, b):
    if a.shape[0] != b.shape[0]:
        return False
    for i in range(a.shape[0]):
        if a[i] != b[i]:
            return False
    return True


def yen_k_shortest_flat(indptr, indices, cost, source, target, k):
    """Up to k cheapest simple paths, in order of cost, as one flat array: (costs, offsets of
    len(costs) + 1, nodes); path i is ``nodes[offsets[i]:offsets[i + 1]]``."""
    return _yen_flat(indptr, indices, cost, source, target, k)


def yen_k_shortest(indptr, indices, cost, source, target, k):
    """Up to k cheapest simple paths, in order of cost. Returns (costs, list of node arrays).

    The kernel hands its paths back as one flat array: reading a Numba typed list from
    Python unboxes every element under the GIL, which made this call most of a path
    search's time when threads share the work."""
    costs, offsets, flat = yen_k_shortest_flat(indptr, indices, cost, source, target, k)
    return costs, np.split(flat, offsets[1:-1]) if len(costs) else []


@njit(cache=True, nogil=True)
def _yen_flat(indptr, indices, cost, source, target, k):
    """``_yen`` with its paths concatenated: (costs, offsets of len(costs) + 1, nodes)."""
    costs, paths = _yen(indptr, indices, cost, source, target, k)
    offsets = np.zeros(len(paths) + 1, dtype=np.int64)
    for i in range(len(paths)):
        offsets[i + 1] = offsets[i] + paths[i].shape[0]
    flat = np.empty(offsets[-1], dtype=np.int64)
    for i in range(len(paths)):
        flat[offsets[i]:offsets[i + 1]] = paths[i]
    return costs, offsets, flat


@njit(cache=True, nogil=True)
def _yen(indptr, indices, cost, source, target, k):
    """Up to k cheapest simple paths, in order of cost: (costs, typed list of node arrays)."""
    n = indptr.shape[0] - 1
    paths = List()
    costs = List()
    blocked = np.zeros(n, dtype=np.bool_)
    banned = np.zeros(n, dtype=np.bool_)
    to_target = distances_to(indptr, indices, cost, target)  # guides every spur search
    first_cost, first = _guided_path(indptr, indices, cost, source, target, blocked, banned, to_target, np.inf)
    if first.shape[0] == 0:
        return np.zeros(0), paths
    paths.append(first)
    costs.append(first_cost)
    cand_paths = List()
    cand_costs = List()
    cand_devs = List()  # where each candidate leaves the path it was spurred from
    cand_paths.append(first)  # typed-list seed, removed at once
    cand_costs.append(0.0)
    cand_devs.append(0)
    cand_paths.pop()
    cand_costs.pop()
    cand_devs.pop()
    last_dev = 0
    while len(paths) < k:
        last = paths[len(paths) - 1]
        root_cost = 0.0
        for i in range(last_dev):
            root_cost += _edge_cost(indptr, indices, cost, last[i], last[i + 1])
        # the k - len(paths) paths still to pick are no dearer than the as many cheapest
        # candidates: a spur path dearer than those (with room for rounding) is never picked
        wanted = k - len(paths)
        bound = np.inf
        if len(cand_costs) >= wanted:
            pending = np.empty(len(cand_costs))
            for c in range(len(cand_costs)):
                pending[c] = cand_costs[c]
            bound = np.partition(pending, wanted - 1)[wanted - 1] * (1.0 + 1e-9)
        for i in range(last_dev, last.shape[0] - 1):
            spur = last[i]
            if root_cost + to_target[spur] > bound:
                root_cost += _edge_cost(indptr, indices, cost, last[i], last[i + 1])
                continue
            for p in paths:
                if p.shape[0] > i + 1 and _same(p[: i + 1], last[: i + 1]):
                    banned[p[i + 1]] = True
            for j in range(i):
                blocked[last[j]] = True
            spur_cost, spur_path = _guided_path(indptr, indices, cost, spur, target, blocked, banned, to_target,
                                                bound - root_cost)
            for j in range(i):
                blocked[last[j]] = False
            for p in paths:
                if p.shape[0] > i + 1:
                    banned[p[i + 1]] = False
            if spur_path.shape[0] > 0:
                total = np.empty(i + spur_path.shape[0], dtype=np.int64)
                total[:i] = last[:i]
                total[i:] = spur_path
                duplicate = False
                for c in cand_paths:
                    if _same(c, total):
                        duplicate = True
                        break
                if not duplicate:
                    cand_paths.append(total)
                    cand_costs.append(root_cost + spur_cost)
                    cand_devs.append(i)
            root_cost += _edge_cost(indptr, indices, cost, last[i], last[i + 1])
        if len(cand_paths) == 0:
            break
        best = 0
        for c in range(1, len(cand_costs)):
            # cheapest first; among equal costs the fewer hops, then the earlier found
            if cand_costs[c] < cand_costs[best] or (
                cand_costs[c] == cand_costs[best] and cand_paths[c].shape[0] < cand_paths[best].shape[0]
            ):
                best = c
        paths.append(cand_paths.pop(best))
        costs.append(cand_costs.pop(best))
        last_dev = cand_devs.pop(best)
    out = np.empty(len(costs))
    for i in range(len(costs)):
        out[i] = costs[i]
    return out, paths
