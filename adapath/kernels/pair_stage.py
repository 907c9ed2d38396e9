"""A batch's per-pair stage of the Path-Bank in one compiled call (Numba, no GIL).

For each (topic, answer) pair of a batch:

1. the corridor: the pair's top-K nodes by rho plus topic and answer, K climbing the ladder
   until the induced subgraph joins them; else the nodes on shortest topic-answer paths of
   the whole graph within the maximum hop count (capped by rho, one greedy shortest path
   kept); else none ("unreachable");
2. the corridor graph: Eq. 5 costs ``1 / (alpha * w + (1 - alpha) * rho_bar)`` on every
   induced half-edge, sorted by (source, target, cost, relation); the cheapest edge of each
   node pair forms a local CSR;
3. the search: Yen's k cheapest simple node paths, or (hop-bounded) Yen on the layered graph
   of each exact hop count, walks that revisit a node dropped, stopping once ``per_hop``
   signatures cost no more than the walk;
4. each node path's cheapest relation sequences (one lookup per step when each step has one
   edge, else best first over the per-step choices);
5. the hop bins: cheapest first (ties in the order found), one path per typed signature,
   ``per_hop`` per hop count 1..``max_hop``.

Every step repeats the per-pair path it replaces (``adapath.engine.corridor`` and
``adapath.engine.paths``) operation for operation, so the bank is the same path for path and
cost for cost. Two signatures are equal when their type and relation codes map to the same
names (``type_key``, ``rel_key``: each code's first code of the same name).

The pairs run in parallel: each worker of a ``prange`` over threads takes its next pair from
a shared counter, so a slow pair does not hold up a fixed share of the batch, and each pair
writes its own output slot, so the result does not depend on the thread count. Scratch of
the graph's size (a node map, BFS depths and queues) is one row per worker, made once by
the caller and reused batch after batch.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from adapath.kernels.sequences import one_edge_sequences
from adapath.kernels.subgraph import bfs_depths_into, induced_half_edges, reaches, row_order
from adapath.kernels.workers import monotonic_ns, take_next
from adapath.kernels.yen import _yen_flat

FALLBACKS = ("", "ladder", "bounded-search", "unreachable")  # a corridor's fallback, by code
FIRST_RUNG, LADDER, BOUNDED_SEARCH, UNREACHABLE = 0, 1, 2, 3


class Scratch(NamedTuple):
    """One worker's arrays of the graph's size: a node map (all -1 between uses), BFS depths
    from the topic and from the answer, and two BFS queues."""

    local_of: np.ndarray
    from_topic: np.ndarray
    from_answer: np.ndarray
    frontier: np.ndarray
    nxt: np.ndarray


class CorridorGraph(NamedTuple):
    """A corridor with Eq. 5 costs: the local CSR over the cheapest edge of each node pair
    (``indptr``, ``indices``, ``cost``) and every half-edge's key ``src * n + dst``, cost and
    relation, sorted by (key, cost, relation)."""

    indptr: np.ndarray
    indices: np.ndarray
    cost: np.ndarray
    edge_keys: np.ndarray
    edge_cost: np.ndarray
    edge_relation: np.ndarray


class SignatureKeys(NamedTuple):
    """What a typed signature compares: the corridor's global ``nodes``, the graph's
    ``node_type`` and each type's and relation's first code of the same name."""

    nodes: np.ndarray
    node_type: np.ndarray
    type_key: np.ndarray
    rel_key: np.ndarray


class BinRows(NamedTuple):
    """The output rows per slot: hop, rank, cost, global nodes and relations."""

    hop: np.ndarray
    rank: np.ndarray
    cost: np.ndarray
    nodes: np.ndarray
    relations: np.ndarray


# ------------------------------------------------------------------------ the corridor
@njit(cache=True, nogil=True)
def _members(order, k, topic, answer):
    """The first ``k`` nodes of ``order`` with topic and answer, sorted, each once."""
    take = min(k, order.shape[0])
    nodes = np.empty(take + 2, dtype=np.int64)
    nodes[:take] = order[:take]
    nodes[take] = topic
    nodes[take + 1] = answer
    return np.unique(nodes)


@njit(cache=True, nogil=True)
def _induced(indptr, indices, nodes, local_of):
    """``induced_half_edges`` of ``nodes``, ``local_of`` (all -1) left as it was found."""
    for i in range(nodes.shape[0]):
        local_of[nodes[i]] = i
    src, dst, edge = induced_half_edges(indptr, indices, nodes, local_of)
    for i in range(nodes.shape[0]):
        local_of[nodes[i]] = -1
    return src, dst, edge


@njit(cache=True, nogil=True)
def _bounded_search(indptr, indices, rho, topic, answer, max_hop, cap, scratch):
    """The nodes on shortest topic-answer paths within ``max_hop`` hops (the ``cap`` of
    largest rho, ties by node index, plus one shortest path taken greedily by rho), sorted;
    and whether there is one."""
    from_topic, from_answer, frontier, nxt = scratch.from_topic, scratch.from_answer, scratch.frontier, scratch.nxt
    bfs_depths_into(indptr, indices, topic, max_hop, from_topic, frontier, nxt)
    distance = from_topic[answer]
    if distance < 0:
        ends = np.empty(2, dtype=np.int64)
        ends[0], ends[1] = topic, answer
        return np.unique(ends), False
    bfs_depths_into(indptr, indices, answer, max_hop, from_answer, frontier, nxt)
    count = 0
    for v in range(from_topic.shape[0]):
        if from_topic[v] >= 0 and from_answer[v] >= 0 and from_topic[v] + from_answer[v] == distance:
            count += 1
    on_shortest = np.empty(count, dtype=np.int64)
    count = 0
    for v in range(from_topic.shape[0]):
        if from_topic[v] >= 0 and from_answer[v] >= 0 and from_topic[v] + from_answer[v] == distance:
            on_shortest[count] = v
            count += 1
    path = np.empty(distance + 1, dtype=np.int64)  # from the answer back to the topic
    path[0] = answer
    u, i = answer, 1
    while u != topic:
        best = -1
        for k in range(indptr[u], indptr[u + 1]):
            v = indices[k]
            if from_topic[v] == from_topic[u] - 1 and (
                    best < 0 or rho[v] > rho[best] or (rho[v] == rho[best] and v < best)):
                best = v
        path[i] = best
        u = best
        i += 1
    if on_shortest.shape[0] > cap:
        # a stable sort of the ascending nodes by -rho: rho descending, ties by node index
        on_shortest = on_shortest[np.argsort(-rho[on_shortest], kind="mergesort")[:cap]]
    return np.unique(np.concatenate((on_shortest, path))), True


@njit(cache=True, nogil=True)
def _corridor(indptr, indices, rho, order, topic, answer, ladder, max_hop, scratch):
    """(nodes, induced src, dst, half-edge, K, fallback code) of one pair's corridor."""
    for rung in range(ladder.shape[0]):
        nodes = _members(order, ladder[rung], topic, answer)
        src, dst, edge = _induced(indptr, indices, nodes, scratch.local_of)
        s = np.searchsorted(nodes, topic)
        t = np.searchsorted(nodes, answer)
        if reaches(src, dst, nodes.shape[0], s, t):
            return nodes, src, dst, edge, ladder[rung], FIRST_RUNG if rung == 0 else LADDER
    nodes, found = _bounded_search(indptr, indices, rho, topic, answer, max_hop, ladder[-1], scratch)
    if not found:
        empty = np.zeros(0, dtype=np.int64)
        return nodes, empty, empty, empty, 0, UNREACHABLE
    src, dst, edge = _induced(indptr, indices, nodes, scratch.local_of)
    return nodes, src, dst, edge, 0, BOUNDED_SEARCH


@njit(cache=True, nogil=True)
def _corridor_graph(nodes, src, dst, edge, rel, a, b, column, rho, alpha):
    """The corridor with Eq. 5 costs (``CorridorGraph``)."""
    n = nodes.shape[0]
    m = src.shape[0]
    top = -np.inf
    for i in range(n):
        top = max(top, rho[nodes[i]])
    cost = np.empty(m)
    relation = np.empty(m, dtype=np.int64)
    for e in range(m):
        r = np.int64(rel[edge[e]])
        u, v = nodes[src[e]], nodes[dst[e]]
        w = a[r, column] + b[u, column] + b[v, column]
        rho_bar = 0.5 * (rho[u] + rho[v]) / top if top > 0 else 0.0
        cost[e] = 1.0 / (alpha * w + (1.0 - alpha) * rho_bar)
        relation[e] = r
    order = row_order(src, dst, cost, relation)
    edge_keys = np.empty(m, dtype=np.int64)
    edge_cost = np.empty(m)
    edge_relation = np.empty(m, dtype=np.int64)
    firsts = 0
    for i in range(m):
        e = order[i]
        edge_keys[i] = src[e] * n + dst[e]
        edge_cost[i] = cost[e]
        edge_relation[i] = relation[e]
        if i == 0 or edge_keys[i] != edge_keys[i - 1]:
            firsts += 1
    indptr = np.zeros(n + 1, dtype=np.int64)
    indices = np.empty(firsts, dtype=np.int64)
    local_cost = np.empty(firsts)
    j = 0
    for i in range(m):
        if i == 0 or edge_keys[i] != edge_keys[i - 1]:
            indices[j] = edge_keys[i] % n
            local_cost[j] = edge_cost[i]
            indptr[edge_keys[i] // n + 1] += 1
            j += 1
    for u in range(n):
        indptr[u + 1] += indptr[u]
    return CorridorGraph(indptr, indices, local_cost, edge_keys, edge_cost, edge_relation)


# ------------------------------------------------------------------------ found paths
# A pair's found paths: (local nodes, relations, node offsets, costs, count); path i is
# nodes[offsets[i]:offsets[i + 1]], its relations relations[offsets[i] - i:offsets[i + 1] - i - 1].
@njit(cache=True, nogil=True)
def _no_paths():
    return (np.empty(64, dtype=np.int64), np.empty(64, dtype=np.int64), np.zeros(17, dtype=np.int64),
            np.empty(16), 0)


@njit(cache=True, nogil=True)
def _grown(array, need):
    if need <= array.shape[0]:
        return array
    bigger = np.empty(max(need, 2 * array.shape[0]), dtype=array.dtype)
    bigger[:array.shape[0]] = array
    return bigger


@njit(cache=True, nogil=True)
def _add_path(found, path, relations, cost):
    nodes, rels, offsets, costs, count = found
    start = offsets[count]
    end = start + path.shape[0]
    offsets = _grown(offsets, count + 2)
    costs = _grown(costs, count + 1)
    nodes = _grown(nodes, end)
    rels = _grown(rels, end)
    nodes[start:end] = path
    rels[start - count:end - count - 1] = relations
    offsets[count + 1] = end
    costs[count] = cost
    return nodes, rels, offsets, costs, count + 1


@njit(cache=True, nogil=True)
def _choice_cost(edge_cost, lo, choice):
    total = 0.0
    for j in range(lo.shape[0]):
        total += edge_cost[lo[j] + choice[j]]
    return total


@njit(cache=True, nogil=True)
def _ranks_before(cost_a, choice_a, cost_b, choice_b):
    """(cost, choice vector) a before b: cheaper, or as cheap and lexicographically first."""
    if cost_a != cost_b:
        return cost_a < cost_b
    for j in range(choice_a.shape[0]):
        if choice_a[j] != choice_b[j]:
            return choice_a[j] < choice_b[j]
    return False


@njit(cache=True, nogil=True)
def _add_sequences(found, path, edge_keys, edge_cost, edge_relation, n, cap):
    """The ``cap`` cheapest relation sequences along a local node path, cheapest first (ties
    by the choice vector, lexicographically), each added as a found path with its cost."""
    steps = path.shape[0] - 1
    lo = np.empty(steps, dtype=np.int64)
    width = np.empty(steps, dtype=np.int64)
    single = True
    for j in range(steps):
        key = path[j] * n + path[j + 1]
        lo[j] = np.searchsorted(edge_keys, key, side="left")
        width[j] = np.searchsorted(edge_keys, key, side="right") - lo[j]
        single = single and width[j] == 1
    relations = np.empty(steps, dtype=np.int64)
    if cap >= 1 and single:
        total = 0.0
        for j in range(steps):
            total += edge_cost[lo[j]]
            relations[j] = edge_relation[lo[j]]
        return _add_path(found, path, relations, total)
    # best first over choice vectors: each one taken raises one step's choice in each successor
    choices = np.zeros((16, steps), dtype=np.int64)
    totals = np.empty(16)
    waiting = np.zeros(16, dtype=np.bool_)
    totals[0] = _choice_cost(edge_cost, lo, choices[0])
    waiting[0] = True
    made = 1
    taken = 0
    while taken < cap:
        best = -1
        for c in range(made):
            if waiting[c] and (best < 0 or _ranks_before(totals[c], choices[c], totals[best], choices[best])):
                best = c
        if best < 0:
            break
        waiting[best] = False
        for j in range(steps):
            relations[j] = edge_relation[lo[j] + choices[best, j]]
        found = _add_path(found, path, relations, totals[best])
        taken += 1
        for step in range(steps):
            if choices[best, step] + 1 >= width[step]:
                continue
            seen = False
            for c in range(made):
                same = True
                for j in range(steps):
                    if choices[c, j] != choices[best, j] + (1 if j == step else 0):
                        same = False
                        break
                if same:
                    seen = True
                    break
            if seen:
                continue
            if made == choices.shape[0]:
                more = np.zeros((2 * made, steps), dtype=np.int64)
                more[:made] = choices
                choices = more
                totals = _grown(totals, 2 * made)
                waiting = _grown(waiting, 2 * made)
            choices[made] = choices[best]
            choices[made, step] += 1
            totals[made] = _choice_cost(edge_cost, lo, choices[made])
            waiting[made] = True
            made += 1
    return found


@njit(cache=True, nogil=True)
def _same_signature(found, i, j, keys):
    """Whether found paths i and j have the same typed signature (types and relations)."""
    nodes, node_type, type_key, rel_key = keys
    path_nodes, rels, offsets, _, _ = found
    length = offsets[i + 1] - offsets[i]
    if offsets[j + 1] - offsets[j] != length:
        return False
    for q in range(length):
        if (type_key[node_type[nodes[path_nodes[offsets[i] + q]]]]
                != type_key[node_type[nodes[path_nodes[offsets[j] + q]]]]):
            return False
    for q in range(length - 1):
        if rel_key[rels[offsets[i] - i + q]] != rel_key[rels[offsets[j] - j + q]]:
            return False
    return True


# ------------------------------------------------------------------------ the searches
@njit(cache=True, nogil=True)
def _yen_paths(local, s, t, k, cap):
    """Yen's k cheapest simple s-t node paths in the corridor graph ``local``, each with its
    ``cap`` cheapest relation sequences."""
    indptr, indices, cost, edge_keys, edge_cost, edge_relation = local
    n = indptr.shape[0] - 1
    found = _no_paths()
    _, offsets, flat = _yen_flat(indptr, indices, cost, s, t, k)
    single, single_cost, relations = one_edge_sequences(edge_keys, edge_cost, edge_relation, n, flat, offsets)
    for i in range(offsets.shape[0] - 1):
        lo, hi = offsets[i], offsets[i + 1]
        if single[i] and cap >= 1:
            found = _add_path(found, flat[lo:hi], relations[lo - i:hi - i - 1], single_cost[i])
        else:
            found = _add_sequences(found, flat[lo:hi], edge_keys, edge_cost, edge_relation, n, cap)
    return found


@njit(cache=True, nogil=True)
def _hop_bounded_paths(local, keys, s, t, max_hop, per_hop, pool, cap):
    """The cheapest simple s-t paths of each exact hop count 1..max_hop in the corridor
    graph ``local``: Yen over the layered graph of (node, depth) copies, up to ``pool``
    walks per hop count, stopping once ``per_hop`` signatures (``keys``) cost no more than
    the walk."""
    indptr, indices, cost, edge_keys, edge_cost, edge_relation = local
    n = indptr.shape[0] - 1
    found = _no_paths()
    for h in range(1, max_hop + 1):
        size = (h + 1) * n
        layered = np.zeros(size + 1, dtype=np.int64)
        for fill in range(2):  # count the kept half-edges of each row, then write them
            if fill == 1:
                for r in range(size):
                    layered[r + 1] += layered[r]
                tails = np.empty(layered[size], dtype=np.int64)
                costs = np.empty(layered[size])
            for depth in range(h):
                last = depth == h - 1
                for u in range(n):
                    if u == t or (depth == 0 and u != s):
                        continue
                    row = depth * n + u
                    put = layered[row]
                    for e in range(indptr[u], indptr[u + 1]):
                        v = indices[e]
                        if v == s or (v == t) != last:
                            continue
                        if fill == 0:
                            layered[row + 1] += 1
                        else:
                            tails[put] = (depth + 1) * n + v
                            costs[put] = cost[e]
                            put += 1
        walk_costs, walk_offsets, walks = _yen_flat(layered, tails, costs, s, h * n + t, pool)
        signature_path = np.empty(16, dtype=np.int64)  # a found path of each signature so far
        signature_cost = np.empty(16)  # ... and the signature's cheapest cost
        signatures = 0
        for w in range(walk_costs.shape[0]):
            reached = 0
            for q in range(signatures):
                if signature_cost[q] <= walk_costs[w]:
                    reached += 1
            if reached >= per_hop:
                break
            path = walks[walk_offsets[w]:walk_offsets[w + 1]] % n
            simple = True
            for i in range(path.shape[0]):
                for j in range(i):
                    simple = simple and path[i] != path[j]
            if not simple:
                continue
            before = found[4]
            found = _add_sequences(found, path, edge_keys, edge_cost, edge_relation, n, cap)
            for f in range(before, found[4]):
                match = -1
                for q in range(signatures):
                    if _same_signature(found, f, signature_path[q], keys):
                        match = q
                        break
                if match < 0:
                    signature_path = _grown(signature_path, signatures + 1)
                    signature_cost = _grown(signature_cost, signatures + 1)
                    signature_path[signatures] = f
                    signature_cost[signatures] = found[3][f]
                    signatures += 1
                else:
                    signature_cost[match] = min(signature_cost[match], found[3][f])
    return found


# ------------------------------------------------------------------------ hop bins
@njit(cache=True, nogil=True)
def _write_bins(found, keys, per_hop, max_hop, slot, rows):
    """Bin the found paths by hop count (cheapest first, ties in the order found; one per
    signature (``keys``), ``per_hop`` per hop count) and write them as ``rows`` of ``slot``,
    hop by hop, global node indices. Returns the row count."""
    nodes = keys.nodes
    out_hop, out_rank, out_cost, out_nodes, out_relations = rows
    path_nodes, rels, offsets, costs, count = found
    hops = np.empty(count, dtype=np.int64)
    for i in range(count):
        hops[i] = offsets[i + 1] - offsets[i] - 1
    # by cost, ties in the order found (a stable sort); paths of other hop counts go to
    # other bins, so how they interleave does not matter
    order = np.argsort(costs[:count], kind="mergesort")
    kept = np.empty((max_hop + 1, per_hop), dtype=np.int64)
    kept_count = np.zeros(max_hop + 1, dtype=np.int64)
    for i in order:
        h = hops[i]
        if h < 1 or h > max_hop or kept_count[h] >= per_hop:
            continue
        duplicate = False
        for q in range(kept_count[h]):
            if _same_signature(found, i, kept[h, q], keys):
                duplicate = True
                break
        if not duplicate:
            kept[h, kept_count[h]] = i
            kept_count[h] += 1
    row = 0
    for h in range(1, max_hop + 1):
        for rank in range(kept_count[h]):
            i = kept[h, rank]
            out_hop[slot, row] = h
            out_rank[slot, row] = rank
            out_cost[slot, row] = costs[i]
            for q in range(h + 1):
                out_nodes[slot, row, q] = nodes[path_nodes[offsets[i] + q]]
            for q in range(h):
                out_relations[slot, row, q] = rels[offsets[i] - i + q]
            row += 1
    return row


# ------------------------------------------------------------------------ the batch
@njit(cache=True, nogil=True)
def _one_pair(i, graph, weights, ranking, search, scratch, out):
    indptr, indices, rel, node_type, type_key, rel_key = graph
    a, b, columns = weights
    topics, answers, rho, order, slots = ranking
    (ladder, max_hop, alpha, hop_bounded, k_paths, pool, per_hop, sequences, first_rung_only) = search
    out_count, out_hop, out_rank, out_cost, out_nodes, out_relations, out_k, out_fallback, out_climbed, \
        out_seconds = out
    slot, topic, answer = slots[i], topics[i], answers[i]
    clock = monotonic_ns()
    nodes, src, dst, edge, k, fallback = _corridor(indptr, indices, rho[i], order[i], topic, answer, ladder,
                                                   max_hop, scratch)
    out_k[slot], out_fallback[slot], out_count[slot] = k, fallback, 0
    # certified first rung: a corridor that climbs is built again from a solve certified at
    # every rung (the caller's), unless no path can join the pair
    out_climbed[slot] = first_rung_only and fallback != FIRST_RUNG and fallback != UNREACHABLE
    if fallback == UNREACHABLE or out_climbed[slot]:
        out_seconds[slot, 0] += (monotonic_ns() - clock) * 1e-9
        return
    local = _corridor_graph(nodes, src, dst, edge, rel, a, b, columns[i], rho[i], alpha)
    split = monotonic_ns()
    out_seconds[slot, 0] += (split - clock) * 1e-9
    s = np.searchsorted(nodes, topic)
    t = np.searchsorted(nodes, answer)
    if s != t:
        keys = SignatureKeys(nodes, node_type, type_key, rel_key)
        if hop_bounded:
            found = _hop_bounded_paths(local, keys, s, t, max_hop, per_hop, pool, sequences)
        else:
            found = _yen_paths(local, s, t, k_paths, sequences)
        out_count[slot] = _write_bins(found, keys, per_hop, max_hop, slot,
                                      BinRows(out_hop, out_rank, out_cost, out_nodes, out_relations))
    out_seconds[slot, 1] += (monotonic_ns() - split) * 1e-9


@njit(parallel=True, cache=True, nogil=True)
def pair_stage(graph, weights, ranking, search, scratch, out, workers):
    """Every pair of a batch through corridor, path search and hop bins, ``workers`` at once.

    - ``graph``: (indptr, indices, rel, node_type, type_key, rel_key) of the whole graph;
    - ``weights``: (a R x B, b N x B, each item's weight column);
    - ``ranking``: per item i: (topics, answers, rho P x N, order P x T, output slot);
    - ``search``: (ladder, max_hop, alpha, hop_bounded, k_paths, pool, per_hop, relation
      sequences per node path, first_rung_only);
    - ``scratch``: (node map N int64 all -1, two BFS depths N int32, two queues N int64),
      one row per worker;
    - ``out``: per slot: row count, then per row hop, rank, cost, global nodes and relations
      (rows of ``per_hop * max_hop``, hop bins in order), corridor K, fallback code, whether
      it climbed (first_rung_only), and seconds in corridor and in search (added to).
    """
    counter = np.zeros(1, dtype=np.int64)
    items = ranking[0].shape[0]
    for worker in prange(workers):
        local_of, from_topic, from_answer, frontier, nxt = scratch
        mine = Scratch(local_of[worker], from_topic[worker], from_answer[worker], frontier[worker], nxt[worker])
        while True:
            i = take_next(counter)
            if i >= items:
                break
            _one_pair(i, graph, weights, ranking, search, mine, out)
