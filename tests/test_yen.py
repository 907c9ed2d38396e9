"""Yen's k-shortest simple paths against networkx and scipy.sparse.csgraph.yen."""

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import yen as scipy_yen

from adapath.kernels.yen import dijkstra_path, yen_k_shortest


def random_weighted(seed, n=25, m=70):
    """A random undirected graph with parallel edges; returns (local CSR, networkx graph)."""
    rng = np.random.default_rng(seed)
    u, v = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = u != v
    u, v = u[keep], v[keep]
    w = rng.integers(1, 20, len(u)) / 4.0  # coarse weights: ties happen
    # collapse parallel edges to the cheapest first, as both references need
    best = {}
    for a, b, c in zip(u.tolist(), v.tolist(), w.tolist()):
        key = (min(a, b), max(a, b))
        best[key] = min(best.get(key, np.inf), c)
    reference = nx.Graph()
    reference.add_nodes_from(range(n))
    for (a, b), c in best.items():
        reference.add_edge(a, b, weight=c)
    src = np.array([a for a, b in best] + [b for a, b in best])
    dst = np.array([b for a, b in best] + [a for a, b in best])
    cost = np.array(list(best.values()) * 2)
    order = np.lexsort((dst, src))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return indptr, dst[order].astype(np.int64), cost[order].astype(float), reference


def path_cost(reference, path):
    return sum(reference[a][b]["weight"] for a, b in zip(path[:-1], path[1:]))


@pytest.mark.parametrize("seed", range(12))
def test_yen_matches_networkx(seed):
    indptr, indices, cost, reference = random_weighted(seed)
    rng = np.random.default_rng(seed)
    s, t = (int(x) for x in rng.choice(25, 2, replace=False))
    k = 15
    costs, paths = yen_k_shortest(indptr, indices, cost, s, t, k)
    if not nx.has_path(reference, s, t):
        assert len(paths) == 0
        return
    expected = []
    for path in nx.shortest_simple_paths(reference, s, t, weight="weight"):
        expected.append(path)
        if len(expected) == k:
            break
    expected_costs = [path_cost(reference, p) for p in expected]
    assert np.allclose(costs, expected_costs)
    for path, c in zip(paths, costs):
        p = path.tolist()
        assert p[0] == s and p[-1] == t and len(set(p)) == len(p)  # simple
        assert path_cost(reference, p) == pytest.approx(c)
    # same order up to ties: paths with a unique cost must coincide
    # (a tie group at the k-th cost may be cut anywhere, so only costs below it count)
    unique = [c for c in expected_costs if expected_costs.count(c) == 1 and c < expected_costs[-1]]
    for c in unique:
        ours = [p.tolist() for p, oc in zip(paths, costs) if oc == pytest.approx(c)]
        theirs = [p for p, ec in zip(expected, expected_costs) if ec == c]
        assert ours == theirs
    assert len({tuple(p.tolist()) for p in paths}) == len(paths)


@pytest.mark.parametrize("seed", range(8))
def test_yen_costs_match_scipy(seed):
    indptr, indices, cost, reference = random_weighted(seed + 100)
    s = max(reference.nodes, key=reference.degree)
    t = max(nx.node_connected_component(reference, s) - {s})
    matrix = sp.csr_matrix((cost, indices, indptr), shape=(25, 25))
    expected = scipy_yen(matrix, s, t, 10, directed=False)
    costs, _ = yen_k_shortest(indptr, indices, cost, s, t, 10)
    expected = np.asarray(expected)[np.isfinite(expected)]
    assert np.allclose(costs, expected)


def test_dijkstra_respects_blocks():
    indptr, indices, cost, reference = random_weighted(3)
    blocked = np.zeros(25, dtype=bool)
    banned = np.zeros(25, dtype=bool)
    d, path = dijkstra_path(indptr, indices, cost, 0, 5, blocked, banned)
    if np.isfinite(d):
        assert d == pytest.approx(nx.shortest_path_length(reference, 0, 5, weight="weight"))
        middle = path[1:-1]
        if len(middle):
            blocked[middle[0]] = True
            d2, path2 = dijkstra_path(indptr, indices, cost, 0, 5, blocked, banned)
            g = reference.copy()
            g.remove_node(int(middle[0]))
            if nx.has_path(g, 0, 5):
                assert d2 == pytest.approx(nx.shortest_path_length(g, 0, 5, weight="weight"))
            else:
                assert not np.isfinite(d2)


@pytest.mark.parametrize("seed", range(6))
def test_yen_long_lists_on_dense_graphs_match_networkx(seed):
    """A corridor-like dense graph and a bank-sized k: the spur-from-deviation refinement
    must give the same costs as networkx's generator, path by path."""
    indptr, indices, cost, reference = random_weighted(seed + 200, n=30, m=220)
    s, t = 0, 29
    costs, paths = yen_k_shortest(indptr, indices, cost, s, t, 60)
    expected = []
    for path in nx.shortest_simple_paths(reference, s, t, weight="weight"):
        expected.append(path_cost(reference, path))
        if len(expected) == 60:
            break
    assert np.allclose(costs, expected)
    assert len({tuple(p.tolist()) for p in paths}) == len(paths) == len(expected)


@pytest.mark.parametrize("seed", range(4))
def test_guided_spur_searches_match_networkx(seed):
    """The spur searches' A* guide is every node's cost to the target (scipy's Dijkstra);
    with nodes blocked it still finds the cheapest path of the graph without them, and a
    limit below that cost finds nothing."""
    from scipy.sparse.csgraph import dijkstra

    from adapath.kernels.yen import _guided_path, distances_to

    indptr, indices, cost, reference = random_weighted(seed + 300, n=30, m=120)
    t = 29
    to_target = distances_to(indptr, indices, cost, t)
    matrix = sp.csr_matrix((cost, indices, indptr), shape=(30, 30))
    np.testing.assert_allclose(to_target, dijkstra(matrix, directed=False, indices=t))
    rng = np.random.default_rng(seed)
    banned = np.zeros(30, dtype=bool)
    for _ in range(10):
        blocked = np.zeros(30, dtype=bool)
        blocked[rng.choice(np.arange(1, 29), 4, replace=False)] = True
        d, path = _guided_path(indptr, indices, cost, 0, t, blocked, banned, to_target, np.inf)
        g = reference.copy()
        g.remove_nodes_from(np.flatnonzero(blocked).tolist())
        if not nx.has_path(g, 0, t):
            assert not np.isfinite(d)
            continue
        assert d == pytest.approx(nx.shortest_path_length(g, 0, t, weight="weight"))
        assert path_cost(reference, path.tolist()) == pytest.approx(d)
        assert not blocked[path].any()
        assert not np.isfinite(_guided_path(indptr, indices, cost, 0, t, blocked, banned, to_target, 0.99 * d)[0])
        assert _guided_path(indptr, indices, cost, 0, t, blocked, banned, to_target, d)[0] == d


def test_costs_to_the_target_follow_directed_edges():
    """On a directed graph (hop_bounded's layered walks) the guide is the cost along the
    edges' directions: 0 -> 1 -> 2 reaches the target 2, and 3, only reachable from it,
    never does (worked by hand)."""
    from adapath.kernels.yen import distances_to

    # half-edges 0->1 (1.5), 0->2 (4.0), 1->2 (2.0), 2->3 (1.0)
    indptr = np.array([0, 2, 3, 4, 4])
    indices = np.array([1, 2, 2, 3])
    cost = np.array([1.5, 4.0, 2.0, 1.0])
    np.testing.assert_array_equal(distances_to(indptr, indices, cost, 2), [3.5, 2.0, 0.0, np.inf])
