"""The certified PPR solve: its residual bound and its top-K sets against a dense SciPy
solve, and early exit that leaves the other queries of a batch unchanged."""

import numpy as np
import pytest

from adapath.engine.ppr import PPREngine
from adapath.engine.weights import materialize
from adapath.kernels.series import series_terms
from tests.helpers import RELS, TYPES, random_graph
from tests.test_ppr import dense_ppr, random_weights

LADDER = (4, 8, 16)


def top_k(rho, k):
    """The k largest by rho, ties by node index (the corridor's order)."""
    return set(np.lexsort((np.arange(len(rho)), -rho))[:k].tolist())


def pairs_of(graph, count, seed):
    rng = np.random.default_rng(seed)
    connected = np.flatnonzero(graph.degree() > 0)
    return rng.choice(connected, count), rng.choice(connected, count)


@pytest.mark.parametrize("seed", range(3))
def test_residual_bound_holds_against_dense_solve(seed):
    """After t terms, 0 <= pi - pi_t <= (1 - eta)^(t+1) * min(1, m_t * out) node by node, with
    m_t = max x_t / out: the lemma the certificate rests on, checked on the exact solution."""
    graph = random_graph(seed, n=50, m=250)
    _, _, weights = random_weights(graph, 1, seed)
    n, eta = graph.num_nodes, 0.85
    w = materialize(graph, weights, 0)
    matrix = np.zeros((n, n))
    np.add.at(matrix, (graph.indices, graph.src), w)
    out = matrix.sum(axis=0)
    transition = np.divide(matrix, out, out=np.zeros_like(matrix), where=out > 0)
    source = int(np.flatnonzero(graph.degree() > 0)[0])
    exact = dense_ppr(graph, weights, 0, source)
    x = np.zeros(n)
    x[source] = 1.0
    partial = eta * x
    for t in range(1, 8):
        x = transition @ x
        partial = partial + eta * (1 - eta) ** t * x
        m = np.max(np.divide(x, out, out=np.zeros(n), where=out > 0))
        bound = (1 - eta) ** (t + 1) * np.minimum(1.0, m * out)
        remaining = exact - partial
        assert np.all(remaining >= -1e-14)
        assert np.all(remaining <= bound + 1e-14)


@pytest.mark.parametrize("backend", ["numba", "scipy"])
@pytest.mark.parametrize("seed", range(4))
def test_certified_top_k_equals_dense_solve(backend, seed):
    """Every pair that stopped early has, at every rung, the top K of the exact solution."""
    graph = random_graph(seed, n=120, m=700)
    _, _, weights = random_weights(graph, 6, seed)
    topics, answers = pairs_of(graph, 6, seed)
    engine = PPREngine(graph, backend=backend, tol=1e-14, certify_from=3)
    result = engine.bidirectional(weights, topics, answers, ladder=LADDER)
    terms = series_terms(0.85, 1e-14)
    assert result.stopped is not None and np.any(result.stopped < terms)  # the rule does fire
    for j in range(6):
        rho = dense_ppr(graph, weights, j, topics[j]) * dense_ppr(graph, weights, j, answers[j])
        ours = result.forward[:, j] * result.backward[:, j]
        for k in LADDER:
            assert top_k(ours, k) == top_k(rho, k), (j, k, result.stopped[j])


def test_certified_top_k_on_a_hand_made_graph():
    """A path 0-1-2-3-4 with a pendant leaf (5, 6, 7) on each inner node, uniform weights:
    the top 5 of rho is the path between topic 0 and answer 4 (every walk between them
    through a leaf is two steps longer)."""
    from adapath.engine.graph import KnowledgeGraph
    from adapath.engine.weights import query_weights

    edges = np.array([(i, i + 1) for i in range(4)] + [(i, 4 + i) for i in range(1, 4)])
    graph = KnowledgeGraph.from_edges(
        edges[:, 0], edges[:, 1], np.zeros(len(edges), dtype=np.int64),
        node_type=np.zeros(8, dtype=np.int8), names=[f"n{i}" for i in range(8)],
        descriptions=[""] * 8, type_names=TYPES, relation_names=RELS,
        relation_descriptions=tuple(RELS))
    weights = query_weights(np.zeros((8, 4)), np.zeros((4, 4)), beta=0.3)
    result = PPREngine(graph, tol=1e-14).bidirectional(weights, [0], [4], ladder=(5,))
    assert result.stopped[0] < series_terms(0.85, 1e-14)
    rho = result.forward[:, 0] * result.backward[:, 0]
    assert top_k(rho, 5) == set(range(5))  # the path itself
    exact = dense_ppr(graph, weights, 0, 0) * dense_ppr(graph, weights, 0, 4)
    assert top_k(exact, 5) == set(range(5))


@pytest.mark.parametrize("backend", ["numba", "scipy"])
def test_early_exit_leaves_the_other_queries_unchanged(backend):
    graph = random_graph(7, n=150, m=900)
    _, _, weights = random_weights(graph, 8, 7)
    topics, answers = pairs_of(graph, 8, 7)
    engine = PPREngine(graph, backend=backend, tol=1e-14, certify_from=3)
    together = engine.bidirectional(weights, topics, answers, ladder=LADDER)
    assert len(set(together.stopped.tolist())) > 1  # pairs stop at different terms
    for j in range(8):
        alone = engine.bidirectional(weights.columns(slice(j, j + 1)), topics[j:j + 1], answers[j:j + 1],
                                     ladder=LADDER)
        assert alone.stopped[0] == together.stopped[j]
        np.testing.assert_allclose(alone.forward[:, 0], together.forward[:, j], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(alone.backward[:, 0], together.backward[:, j], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("precision", ["float32", "float16"])
def test_batch_laid_out_again_as_pairs_stop_leaves_every_pair_unchanged(monkeypatch, precision):
    """24 pairs, each with its own weights, fill two float32 dense blocks (one in half
    precision). 18 pairs lie in one
    component and stop early; the other 6 join the two components (rho is 0 everywhere, a
    tie that is never certified) and run every term. Once the 18 stop, the 6 are moved into
    one block (work arrays from the engine's workspace) and run on there. Every pair has the
    dense solve's top K and the result of solving it alone; a second batch on the same
    engine after the move equals a fresh engine's."""
    from adapath.engine.graph import KnowledgeGraph
    from adapath.kernels import ppr_numba

    moves = []
    move_lanes = ppr_numba._move_lanes

    def counted(*args):
        moves.append(len(args[-2]))
        return move_lanes(*args)

    monkeypatch.setattr(ppr_numba, "_move_lanes", counted)
    rng = np.random.default_rng(11)
    head = np.concatenate([rng.integers(0, 120, 800), rng.integers(120, 160, 200)])
    tail = np.concatenate([rng.integers(0, 120, 800), rng.integers(120, 160, 200)])
    graph = KnowledgeGraph.from_edges(
        head, tail, rng.integers(0, len(RELS), len(head)), node_type=rng.integers(0, len(TYPES), 160).astype(np.int8),
        names=[f"node {i}" for i in range(160)], descriptions=[f"text {i}" for i in range(160)],
        type_names=TYPES, relation_names=RELS, relation_descriptions=tuple(f"about {r}" for r in RELS))
    _, _, weights = random_weights(graph, 24, 11)
    topics = rng.integers(0, 120, 24)
    answers = np.concatenate([rng.integers(0, 120, 18), rng.integers(120, 160, 6)])
    engine = PPREngine(graph, tol=1e-14, certify_from=3, dense_precision=precision)
    terms = series_terms(0.85, 1e-14)
    together = engine.bidirectional(weights, topics, answers, ladder=LADDER)
    assert np.all(together.stopped[:18] < terms - 4) and np.all(together.stopped[18:] == terms)
    assert moves, "the batch was never laid out again"
    for j in range(24):
        rho = dense_ppr(graph, weights, j, topics[j]) * dense_ppr(graph, weights, j, answers[j])
        ours = together.forward[:, j] * together.backward[:, j]
        for k in LADDER:
            assert top_k(ours, k) == top_k(rho, k), (j, k, together.stopped[j])
    for j in (0, 17, 18, 23):
        alone = PPREngine(graph, tol=1e-14, certify_from=3, dense_precision=precision).bidirectional(
            weights.columns(slice(j, j + 1)), topics[j:j + 1], answers[j:j + 1], ladder=LADDER)
        assert alone.stopped[0] == together.stopped[j]
        np.testing.assert_allclose(alone.forward[:, 0], together.forward[:, j], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(alone.backward[:, 0], together.backward[:, j], rtol=1e-12, atol=1e-15)
    later = slice(4, 16)
    half = engine.bidirectional(weights.columns(later), topics[later], answers[later], ladder=LADDER)
    fresh = PPREngine(graph, tol=1e-14, certify_from=3, dense_precision=precision).bidirectional(
        weights.columns(later), topics[later], answers[later], ladder=LADDER)
    np.testing.assert_array_equal(half.stopped, fresh.stopped)
    np.testing.assert_array_equal(half.forward, fresh.forward)
    np.testing.assert_array_equal(half.backward, fresh.backward)


def test_without_a_ladder_the_solve_is_the_exact_one():
    graph = random_graph(3, n=80, m=400)
    _, _, weights = random_weights(graph, 3, 3)
    topics, answers = pairs_of(graph, 3, 3)
    engine = PPREngine(graph)
    exact = engine.bidirectional(weights, topics, answers)
    assert exact.stopped is None
    np.testing.assert_array_equal(exact.forward, engine.bidirectional(weights, topics, answers).forward)


def test_certified_bank_registers_the_exact_banks_paths(tmp_path):
    """A certified build's corridors are the exact solve's top K, so its paths are the same."""
    from adapath.bank.build import BankConfig, build_bank
    from adapath.bank.store import BankStore
    from adapath.datasets.biostrat import training_queries
    from adapath.datasets.generate import QueryGenerator
    from adapath.sources.synthetic import generate

    graph = generate(scale=0.01, seed=5)
    queries = training_queries(QueryGenerator(graph).generate(8, seed=3))
    columns = ["query_id", "pair", "hop", "rank", "node_ids", "relations"]
    tables = {}
    for ppr in ("exact", "certified"):
        build_bank(graph, queries, tmp_path / ppr, BankConfig(batch=4, ppr=ppr, ladder=(20, 40)))
        tables[ppr] = BankStore(tmp_path / ppr).read_paths(columns).to_pylist()
    assert tables["exact"] and tables["certified"] == tables["exact"]


def test_unknown_ppr_solve_is_one_clear_error():
    from adapath.bank.build import BankConfig
    from adapath.errors import InputError

    with pytest.raises(InputError, match="ppr 'fast': choose exact or certified"):
        BankConfig(ppr="fast").check()


@pytest.mark.parametrize("seed", range(3))
def test_shortlist_checks_certify_only_the_dense_solves_top_k(seed):
    """With a shortlist far smaller than the graph, later checks read the listed nodes
    only; every pair that stopped still has the exact top K at every rung."""
    graph = random_graph(seed + 10, n=300, m=1500)
    _, _, weights = random_weights(graph, 6, seed)
    topics, answers = pairs_of(graph, 6, seed)
    engine = PPREngine(graph, tol=1e-14, certify_from=3, shortlist=24)  # 4 x the top rung: 64
    result = engine.bidirectional(weights, topics, answers, ladder=LADDER)
    assert np.any(result.stopped < series_terms(0.85, 1e-14))
    for j in range(6):
        rho = dense_ppr(graph, weights, j, topics[j]) * dense_ppr(graph, weights, j, answers[j])
        ours = result.forward[:, j] * result.backward[:, j]
        for k in LADDER:
            assert top_k(ours, k) == top_k(rho, k), (j, k, result.stopped[j])


def test_listed_check_refuses_when_the_bound_off_the_list_is_too_loose():
    """certify_candidates on hand-made values: a clear top 2 is certified when nothing off
    the list can reach it, refused (-1: list again) when the outside bound reaches the
    2nd score, and a tie at the boundary is never certified."""
    from adapath.kernels.certify import certify_candidates

    f = np.array([1.0, 0.9, 0.1, 0.05])
    b = np.ones(4)
    inv = np.ones(4)
    ladder = np.array([2])
    assert certify_candidates(f, b, inv, inv, 0.0, 0.0, 0.01, 1e-3, ladder, 0.0) == 0.0
    assert certify_candidates(f, b, inv, inv, 0.0, 0.0, 0.95, 1e-3, ladder, 0.0) == -1.0
    tied = np.array([1.0, 0.9, 0.9, 0.05])
    assert certify_candidates(tied, b, inv, inv, 0.0, 0.0, 0.01, 1e-3, ladder, 0.0) == np.inf
    # the last term's mass could still lift node 2 above node 1: not yet
    assert certify_candidates(f, b, inv, inv, 1.0, 1.0, 0.01, 0.6, ladder, 0.0) > 0.0


def test_certified_bank_climbing_the_ladder_matches_the_exact_bank(tmp_path):
    """The certified build certifies the first rung only; a pair whose corridor climbs is
    solved again at every rung, so a ladder whose first rung is too small to connect
    topic and answer still gives the exact build's paths."""
    from adapath.bank.build import BankConfig, build_bank
    from adapath.bank.store import BankStore
    from adapath.datasets.biostrat import training_queries
    from adapath.datasets.generate import QueryGenerator
    from adapath.sources.synthetic import generate

    graph = generate(scale=0.01, seed=6)
    queries = training_queries(QueryGenerator(graph).generate(6, seed=4))
    columns = ["query_id", "pair", "hop", "rank", "node_ids", "relations", "corridor_k"]
    tables = {}
    for ppr in ("exact", "certified"):
        build_bank(graph, queries, tmp_path / ppr, BankConfig(batch=3, ppr=ppr, ladder=(1, 30, 60)))
        tables[ppr] = BankStore(tmp_path / ppr).read_paths(columns).to_pylist()
    assert any(row["corridor_k"] > 1 for row in tables["exact"])  # corridors did climb
    assert tables["exact"] and tables["certified"] == tables["exact"]
