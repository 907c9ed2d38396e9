"""Weights (Eq. 1) and bidirectional PPR against a dense SciPy solve and igraph."""

import igraph
import numpy as np
import pytest
import scipy.linalg

from adapath.engine.ppr import PPREngine
from adapath.engine.weights import EPS, QueryWeights, materialize, query_weights
from tests.helpers import random_graph


def random_weights(graph, batch, seed):
    rng = np.random.default_rng(seed)
    s_node = rng.random((graph.num_nodes, batch))
    s_rel = rng.random((graph.num_relations, batch))
    return s_node, s_rel, query_weights(s_node, s_rel, beta=0.3)


def test_materialize_is_eq1():
    graph = random_graph(1)
    s_node, s_rel, weights = random_weights(graph, 2, 1)
    w = materialize(graph, weights, column=1)
    src = graph.src
    for k in range(0, graph.num_half_edges, 7):
        u, v, r = src[k], graph.indices[k], graph.rel[k]
        expected = 0.3 * s_rel[r, 1] + 0.7 / 2 * (s_node[u, 1] + s_node[v, 1]) + EPS
        assert w[k] == pytest.approx(expected, rel=1e-12)


def test_node_weights_written_into_a_buffer_are_computed_in_float64():
    """query_weights(out=) gives b = (1 - beta) / 2 * s_node in float64 from float32
    similarities (the BM25 scores are float32), bit for bit as without a buffer; NumPy would
    otherwise multiply float32 by the Python scalar in float32."""
    rng = np.random.default_rng(2)
    s_node = rng.random((500, 3)).astype(np.float32)
    s_rel = rng.random((4, 3)).astype(np.float32)
    buffer = np.full((500, 3), np.nan)
    weights = query_weights(s_node, s_rel, out=buffer)
    assert weights.b is buffer
    np.testing.assert_array_equal(buffer, s_node.astype(np.float64) * 0.35)


def dense_ppr(graph, weights, column, seed, eta=0.85):
    """Materialize P and solve (I - (1 - eta) P) pi = eta s."""
    n = graph.num_nodes
    w = materialize(graph, weights, column)
    matrix = np.zeros((n, n))
    np.add.at(matrix, (graph.indices, graph.src), w)  # column u holds u's out-weights
    out = matrix.sum(axis=0)
    transition = np.divide(matrix, out, out=np.zeros_like(matrix), where=out > 0)
    s = np.zeros(n)
    s[seed] = 1.0
    return scipy.linalg.solve(np.eye(n) - (1 - eta) * transition, eta * s)


def igraph_ppr(graph, weights, column, seed):
    heads, rels, tails = graph.edges()
    w = weights.a[rels, column] + weights.b[heads, column] + weights.b[tails, column]
    g = igraph.Graph(n=graph.num_nodes, edges=list(zip(heads.tolist(), tails.tolist())), directed=False)
    return np.array(g.personalized_pagerank(reset_vertices=[int(seed)], damping=0.15, weights=w.tolist()))


@pytest.mark.parametrize("backend", ["numba", "scipy"])
@pytest.mark.parametrize("seed", range(4))
def test_bidirectional_ppr_matches_references(backend, seed):
    graph = random_graph(seed, n=60, m=300)
    _, _, weights = random_weights(graph, 3, seed)
    rng = np.random.default_rng(seed)
    connected = np.flatnonzero(graph.degree() > 0)
    topics, answers = rng.choice(connected, 3), rng.choice(connected, 3)
    result = PPREngine(graph, backend=backend, tol=1e-10).bidirectional(weights, topics, answers)
    for j in range(3):
        for pi, s in ((result.forward[:, j], topics[j]), (result.backward[:, j], answers[j])):
            assert np.abs(pi - dense_ppr(graph, weights, j, s)).sum() <= 1e-6
            assert np.abs(pi - igraph_ppr(graph, weights, j, s)).sum() <= 1e-6
            assert pi.sum() == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("backend", ["numba", "scipy"])
def test_isolated_seed_keeps_its_mass(backend):
    graph = random_graph(5, n=30, m=80, isolated=3)
    _, _, weights = random_weights(graph, 1, 5)
    result = PPREngine(graph, backend=backend).bidirectional(weights, [29], [0])
    assert result.forward[29, 0] == pytest.approx(1.0)
    assert np.abs(result.backward[:, 0] - dense_ppr(graph, weights, 0, 0)).sum() <= 1e-6


def test_backends_agree_and_default_tolerance_is_tight():
    graph = random_graph(9, n=200, m=1500)
    _, _, weights = random_weights(graph, 8, 9)
    seeds = np.arange(8) * 7
    numba_pi, it_numba, change = PPREngine(graph).personalized(weights, seeds)
    scipy_pi, _, _ = PPREngine(graph, backend="scipy").personalized(weights, seeds)
    assert change <= 1e-8
    assert np.abs(numba_pi - scipy_pi).sum(axis=0).max() <= 1e-7
    assert it_numba == 9  # eta = 0.85: 0.15**10 <= 1e-8, so x_0..x_9 are summed


def test_float32_dense_terms_and_their_sum_stay_within_the_series_remainder(monkeypatch):
    """From the third term on these columns are dense (a push would touch more than 5% of
    the half-edges): their terms, and their share of pi, are summed in float32. Against a
    dense float64 solve each column's L1 error is the series' remainder (1 - eta)^(terms+1)
    plus under 2e-9 of rounding."""
    from adapath.kernels import ppr_numba

    sweeps = []
    step = ppr_numba._step
    monkeypatch.setattr(ppr_numba, "_step", lambda *args: sweeps.append(1) or step(*args))
    graph = random_graph(3, n=400, m=6000)
    _, _, weights = random_weights(graph, 8, 3)
    seeds = np.arange(8) * 7
    pi, terms, _ = PPREngine(graph).personalized(weights, seeds)
    assert len(sweeps) == terms - 2  # terms 3..terms were dense sweeps
    for j in range(8):
        error = np.abs(pi[:, j] - dense_ppr(graph, weights, j, seeds[j])).sum()
        assert error <= 0.15 ** (terms + 1) + 2e-9


def test_columns_do_not_depend_on_their_batch():
    graph = random_graph(4, n=120, m=900)
    _, _, weights = random_weights(graph, 6, 4)
    seeds = np.arange(6) * 11
    engine = PPREngine(graph)
    together, _, _ = engine.personalized(weights, seeds)
    alone, _, _ = engine.personalized(weights.columns(slice(2, 3)), seeds[2:3])
    assert np.array_equal(together[:, 2], alone[:, 0])


@pytest.mark.parametrize("backend", ["numba", "scipy"])
def test_seeds_share_weight_columns(backend):
    """Seed c walks with weight column weight_of[c]; each column still equals a dense solve."""
    graph = random_graph(6, n=90, m=700)
    _, _, weights = random_weights(graph, 3, 6)
    seeds = np.array([3, 17, 40, 3, 55, 71, 8])
    weight_of = np.array([0, 2, 1, 1, 0, 2, 2])
    pi, _, _ = PPREngine(graph, backend=backend, tol=1e-10).personalized(weights, seeds, weight_of)
    for c, (seed, w) in enumerate(zip(seeds, weight_of)):
        assert np.abs(pi[:, c] - dense_ppr(graph, weights, w, seed)).sum() <= 1e-6


def test_repeated_pairs_are_computed_once_and_match():
    """The pairs of one record share a query text (a weight column) and may share a seed;
    each direction of each pair still equals its own dense solve."""
    graph = random_graph(8, n=70, m=500)
    _, _, weights = random_weights(graph, 2, 8)
    topics, answers, weight_of = [5, 5, 9], [30, 41, 30], [0, 0, 1]
    result = PPREngine(graph, tol=1e-10).bidirectional(weights, topics, answers, weight_of)
    for j in range(3):
        assert np.abs(result.forward[:, j] - dense_ppr(graph, weights, weight_of[j], topics[j])).sum() <= 1e-6
        assert np.abs(result.backward[:, j] - dense_ppr(graph, weights, weight_of[j], answers[j])).sum() <= 1e-6


def test_columns_do_not_depend_on_their_block():
    """More columns than one dense block holds: a column's bits do not depend on its block,
    its lane, or on whether its neighbours in the block went dense earlier."""
    graph = random_graph(12, n=300, m=3000, isolated=2)
    _, _, weights = random_weights(graph, 70, 12)
    rng = np.random.default_rng(12)
    seeds = rng.integers(0, graph.num_nodes, 70)
    seeds[[5, 44]] = [298, 299]  # isolated: their PPR is their indicator
    engine = PPREngine(graph)
    together, _, _ = engine.personalized(weights, seeds)
    for c in (0, 5, 33, 44, 69):
        alone, _, _ = engine.personalized(weights.columns(slice(c, c + 1)), seeds[c:c + 1])
        assert np.array_equal(together[:, c], alone[:, 0])
    for c in (5, 44):
        assert together[seeds[c], c] == 1.0 and together[:, c].sum() == 1.0
    assert np.abs(together[:, 33] - dense_ppr(graph, weights, 33, seeds[33])).sum() <= 1e-7


def test_seed_whose_edges_all_weigh_zero_keeps_its_mass():
    graph = random_graph(13, n=50, m=300)
    s_node = np.zeros((graph.num_nodes, 1))
    s_rel = np.zeros((graph.num_relations, 1))
    weights = query_weights(s_node, s_rel, beta=0.3, eps=0.0)  # every weight is 0
    seed = int(np.flatnonzero(graph.degree() > 0)[0])
    pi, _, _ = PPREngine(graph).personalized(weights, [seed])
    expected = np.zeros(graph.num_nodes)
    expected[seed] = 1.0
    assert np.array_equal(pi[:, 0], expected)


def test_pair_layout_gives_the_same_bits_as_one_column_per_weight():
    """The two directions of a pair share a slot (and its b) in the dense blocks; the same
    columns with their weights repeated, one slot each, must come out bit for bit equal."""
    graph = random_graph(14, n=250, m=2500)
    _, _, weights = random_weights(graph, 5, 14)
    rng = np.random.default_rng(14)
    topics, answers = rng.integers(0, 250, 5), rng.integers(0, 250, 5)
    engine = PPREngine(graph)
    paired = engine.bidirectional(weights, topics, answers)
    repeated = QueryWeights(np.concatenate([weights.a] * 2, axis=1), np.concatenate([weights.b] * 2, axis=1))
    single, _, _ = engine.personalized(repeated, np.concatenate([topics, answers]), np.arange(10))
    assert np.array_equal(paired.forward, single[:, :5])
    assert np.array_equal(paired.backward, single[:, 5:])
    assert np.abs(paired.forward[:, 2] - dense_ppr(graph, weights, 2, topics[2])).sum() <= 1e-7


@pytest.mark.parametrize("weight_of, halves", [
    (np.r_[np.arange(20), np.arange(20)], 2),  # bank pairs: two directions per weight column
    (np.arange(45), 1),  # one column per weight column
    (np.r_[np.arange(9), np.arange(9), [3, 3, 7]], 2),  # 2-topic records add a third and fourth user
])
def test_dense_layout_places_every_column_once_with_its_weights(weight_of, halves):
    from adapath.kernels.ppr_numba import LANES, VECTOR, dense_layout

    got_halves, slots, blocks, slot_weight, block, lane = dense_layout(weight_of, int(weight_of.max()) + 1)
    assert got_halves == halves and slots % VECTOR == 0 and halves * slots <= LANES
    places = set(zip(block.tolist(), lane.tolist()))
    assert len(places) == len(weight_of)  # no two columns share a lane
    for c, w in enumerate(weight_of):
        assert lane[c] < halves * slots and block[c] < blocks
        assert slot_weight[block[c] * slots + lane[c] % slots] == w  # its slot holds its weights


def test_array_kernel_float32_terms_stay_within_tolerance():
    """The array-namespace kernel (CuPy's) runs terms 3+ in float32; against float64 all
    the way, every column moves by far less than the 1e-8 tolerance."""
    from adapath.kernels.ppr_xp import power_iteration_xp

    graph = random_graph(15, n=200, m=1600)
    _, _, weights = random_weights(graph, 6, 15)
    engine = PPREngine(graph, backend="scipy")
    ops = engine.solver.operators()
    args = (np, ops.operators, weights.a, weights.b, np.arange(6) * 9)
    mixed, _, _ = power_iteration_xp(*args, low=ops.low)
    full, _, _ = power_iteration_xp(*args)
    assert ops.low[0].dtype == np.float32
    assert 0 < np.abs(mixed - full).sum(axis=0).max() <= 1e-9


def test_reused_work_arrays_leave_no_trace_between_solves():
    """The engine keeps its solve's arrays across calls; a solve after others of other
    shapes gives the bits of a solve on a fresh engine."""
    graph = random_graph(7, n=120, m=700)
    rng = np.random.default_rng(7)
    connected = np.flatnonzero(graph.degree() > 0)
    batches = []
    for size in (9, 3, 40, 9):
        _, _, weights = random_weights(graph, size, int(rng.integers(1 << 30)))
        batches.append((weights, rng.choice(connected, size), rng.choice(connected, size)))
    shared = PPREngine(graph)
    for weights, topics, answers in batches:
        for ladder in (None, (5, 10)):
            reused = shared.bidirectional(weights, topics, answers, ladder=ladder)
            fresh = PPREngine(graph).bidirectional(weights, topics, answers, ladder=ladder)
            np.testing.assert_array_equal(reused.forward, fresh.forward)
            np.testing.assert_array_equal(reused.backward, fresh.backward)
            # ranked: pi itself lives in the work arrays, rho and the ranking are new
            ranked = shared.ranked(weights, topics, answers, ladder=ladder, top=25)
            np.testing.assert_array_equal(ranked.rho, fresh.forward * fresh.backward)
            np.testing.assert_array_equal(ranked.order, np.argsort(-ranked.rho.T, axis=1, kind="stable")[:, :25])
