"""Ranking nodes by rho = pi_f * pi_b, and reachability in a corridor, against NumPy's
stable sort, a dense product and networkx."""

import networkx as nx
import numpy as np
import pytest

from adapath.engine.ppr import PPREngine
from adapath.engine.weights import query_weights
from adapath.kernels.rank import rank_pairs, top_nodes
from adapath.kernels.subgraph import reaches
from tests.helpers import random_graph


def stable_top(rho, top):
    """The reference order: a stable sort of -rho (score descending, ties by node index)."""
    return np.argsort(-rho, kind="stable")[:top]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("top", [1, 7, 50, 400])
def test_top_nodes_is_a_stable_sort_with_ties(seed, top):
    rng = np.random.default_rng(seed)
    n = 300
    # coarse integer scores with many zeros: ties inside the top and across its boundary
    rho = np.where(rng.random(n) < 0.4, 0.0, rng.integers(0, 6, n).astype(float))
    np.testing.assert_array_equal(top_nodes(rho, top), stable_top(rho, top))


def test_top_nodes_all_equal_keeps_the_lowest_indices():
    np.testing.assert_array_equal(top_nodes(np.zeros(10), 4), [0, 1, 2, 3])
    np.testing.assert_array_equal(top_nodes(np.array([1.0, 3.0, 3.0, 2.0]), 9), [1, 2, 3, 0])


def test_rank_pairs_matches_the_dense_product():
    rng = np.random.default_rng(4)
    columns = rng.integers(0, 4, (5, 200)).astype(float) / 4.0  # S x N with ties
    forward, backward = np.array([0, 2, 4, 1]), np.array([1, 3, 0, 1])
    rho, order = rank_pairs(columns, forward, backward, 60)
    for p, (f, b) in enumerate(zip(forward, backward)):
        expected = columns[f] * columns[b]
        np.testing.assert_array_equal(rho[p], expected)
        np.testing.assert_array_equal(order[p], stable_top(expected, 60))


def test_rank_pairs_into_given_arrays_overwrites_them_whole():
    """Outputs handed in (say a previous batch's, full of its values) come back holding
    exactly the dense product and the stable order; a wrong shape is refused."""
    rng = np.random.default_rng(5)
    columns = rng.integers(0, 4, (4, 150)).astype(float) / 4.0
    forward, backward = np.array([0, 2, 3]), np.array([1, 1, 0])
    rho, order = np.full((3, 150), 7.0), np.full((3, 40), 99, dtype=np.int64)
    got_rho, got_order = rank_pairs(columns, forward, backward, 40, rho=rho, order=order)
    assert got_rho is rho and got_order is order
    for p, (f, b) in enumerate(zip(forward, backward)):
        np.testing.assert_array_equal(rho[p], columns[f] * columns[b])
        np.testing.assert_array_equal(order[p], stable_top(columns[f] * columns[b], 40))
    with pytest.raises(ValueError, match="shape"):
        rank_pairs(columns, forward, backward, 40, rho=np.empty((3, 149)))


@pytest.mark.parametrize("backend", ["numba", "scipy"])
def test_ranked_equals_bidirectional_then_a_stable_sort(backend):
    graph = random_graph(3, n=80, m=400)
    rng = np.random.default_rng(3)
    weights = query_weights(rng.random((graph.num_nodes, 3)), rng.random((graph.num_relations, 3)), beta=0.3)
    connected = np.flatnonzero(graph.degree() > 0)
    topics, answers = rng.choice(connected, 5), rng.choice(connected, 5)
    answers[4], topics[3] = answers[0], topics[1]  # a repeated seed: one column serves two pairs
    cols = np.array([0, 1, 2, 0, 0])
    engine = PPREngine(graph, backend=backend)
    full = engine.bidirectional(weights, topics, answers, cols)
    ranking = engine.ranked(weights, topics, answers, cols, top=30)
    for j in range(5):
        rho = full.forward[:, j] * full.backward[:, j]
        np.testing.assert_array_equal(ranking.rho[:, j], rho)  # the same products, bit for bit
        np.testing.assert_array_equal(ranking.order[j], stable_top(rho, 30))


@pytest.mark.parametrize("seed", range(8))
def test_reaches_agrees_with_networkx(seed):
    rng = np.random.default_rng(seed)
    n, m = 40, 45  # sparse: several components
    u, v = rng.integers(0, n, m), rng.integers(0, n, m)
    src, dst = np.concatenate([u, v]), np.concatenate([v, u])
    order = np.argsort(src, kind="stable")
    src, dst = src[order], dst[order]
    reference = nx.Graph()
    reference.add_nodes_from(range(n))
    reference.add_edges_from(zip(u.tolist(), v.tolist()))
    for s, t in rng.integers(0, n, (20, 2)).tolist():
        assert reaches(src, dst, n, s, t) == nx.has_path(reference, s, t)


def test_array_route_ranks_into_reused_host_buffers(monkeypatch):
    """The array-namespace route (the GPU's, here on NumPy) copies rho and the ranking into
    host arrays taken from ``out`` with the engine's host allocator (pinned memory on a GPU):
    allocated by the first solve, reused by the next, equal to a solve without ``out``. Its
    parts are timed."""
    from adapath.engine.ppr import PPREngine

    allocations = []

    def recording_empty(size, dtype):
        allocations.append((size, np.dtype(dtype)))
        return np.empty(size, dtype=dtype)

    monkeypatch.setattr(PPREngine, "host_empty", property(lambda self: recording_empty))
    graph = random_graph(5, n=60, m=300)
    rng = np.random.default_rng(5)
    weights = query_weights(rng.random((graph.num_nodes, 2)), rng.random((graph.num_relations, 2)))
    connected = np.flatnonzero(graph.degree() > 0)
    topics, answers, cols = rng.choice(connected, 4), rng.choice(connected, 4), np.array([0, 1, 0, 1])
    engine = PPREngine(graph, backend="scipy")
    plain = engine.ranked(weights, topics, answers, cols, top=20)
    assert allocations == []  # nothing kept: plain host arrays
    out: dict = {}
    first = engine.ranked(weights, topics, answers, cols, top=20, out=out)
    assert sorted(allocations) == sorted([(4 * graph.num_nodes, np.dtype(np.float64)), (4 * 20, np.dtype(np.int64))])
    second = engine.ranked(weights, topics[::-1], answers[::-1], cols[::-1], top=20, out=out)
    assert len(allocations) == 2 and np.shares_memory(first.rho, second.rho)
    np.testing.assert_array_equal(second.rho, plain.rho[:, ::-1])
    np.testing.assert_array_equal(second.order, plain.order[::-1])
    assert set(engine.device_seconds) == {"upload", "solve", "rank", "copy"}


def test_device_batch_from_free_memory():
    """The bytes per pair and node that ``--gpu-batch auto`` counts bound the peak of the
    array-namespace solve and ranking (certified at every rung), measured with NumPy
    standing in for CuPy; the batch is what fits, worked by hand."""
    import tracemalloc

    from adapath.engine.ppr import DEVICE_BYTES_PER_PAIR_NODE, PPREngine, device_batch
    from adapath.sources.synthetic import generate

    graph = generate(scale=0.02, seed=1)
    n, pairs = graph.num_nodes, 16
    rng = np.random.default_rng(0)
    weights = query_weights(rng.random((n, pairs)).astype(np.float32), rng.random((graph.num_relations, pairs)))
    topics, answers = rng.integers(0, n, pairs), rng.integers(0, n, pairs)
    engine = PPREngine(graph, backend="scipy", fused=False)
    engine.ranked(weights, topics[:2], answers[:2], [0, 1])  # the operators, made once
    tracemalloc.start()
    engine.ranked(weights, topics, answers, np.arange(pairs), ladder=(150, 300, 500, 1000))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert 0.4 * DEVICE_BYTES_PER_PAIR_NODE < peak / (pairs * n) <= DEVICE_BYTES_PER_PAIR_NODE
    # PrimeKG's size on 80 GB free: (0.6 * 80e9 - 24 * 8,097,470 - 64 * 129,375) // (320 * 129,375 * 2)
    # = 577 queries, down to a multiple of 32
    assert device_batch(129_375, 8_097_470, 80 * 10**9) == 576
    assert device_batch(129_375, 8_097_470, 80 * 10**9, queries=1024) == 256  # a quarter: batches to overlap
    assert device_batch(129_375, 8_097_470, 10**8) == 32  # never below the smallest
    assert device_batch(1_000, 10_000, 10**12) == 1024  # nor above the largest
