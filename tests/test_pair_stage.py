"""A batch's per-pair stage in one compiled call (``PairStage``) against the per-pair path it
replaces: ``CorridorBuilder.build``, ``corridor_graph``, ``k_shortest`` or ``hop_bounded``
and ``bin_by_hop``, pair by pair, on graphs with hubs, parallel edges, ties and pairs that no
path joins, in both search modes."""

import time

import numba
import numpy as np
import pytest

from adapath.engine.batch_paths import PairStage, PathSearch, name_keys
from adapath.engine.corridor import CorridorBuilder, ranked_size
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.paths import bin_by_hop, corridor_graph, hop_bounded, k_shortest
from adapath.kernels.rank import top_nodes
from adapath.kernels.workers import monotonic_ns, take_next
from tests.helpers import random_graph


def per_pair(graph, search, a, b, rho, order, topic, answer):
    """One pair through the per-pair path, as the bank's runner ran it before: (rows of
    (hop, rank, cost, nodes, relations), corridor K, fallback, whether a found node path
    gave several relation sequences)."""
    builder = CorridorBuilder(graph, search.ladder, search.max_hop)
    corridor = builder.build(rho, topic, answer, order)
    local = corridor_graph(graph, builder, corridor, a, b, rho, search.alpha)
    if corridor.fallback == "unreachable":
        found = []
    elif search.search == "hop-bounded":
        found = hop_bounded(local, topic, answer, search.max_hop, search.per_hop, graph, pool=search.pool,
                            relation_sequences=search.relation_sequences)
    else:
        found = k_shortest(local, topic, answer, search.k_paths, search.relation_sequences)
    rows = [(hop, rank, p.cost, p.nodes.tolist(), p.relations.tolist())
            for hop, paths in bin_by_hop(graph, found, search.per_hop, search.max_hop).items()
            for rank, p in enumerate(paths)]
    several = len(found) > len({tuple(p.nodes.tolist()) for p in found})  # a node path, several sequences
    return rows, corridor.k, corridor.fallback, several


def batch_rows(result, j):
    return [(int(result.hop[j, r]), int(result.rank[j, r]), float(result.cost[j, r]),
             result.nodes[j, r, :result.hop[j, r] + 1].tolist(), result.relations[j, r, :result.hop[j, r]].tolist())
            for r in range(result.count[j])]


def hub_graph(seed, n=60, m=150, hubs=3):
    """Random edges, three hubs joined to a third of the nodes each, a third of the node
    pairs joined again by another relation, two relation codes and two type codes sharing a
    name, and a few nodes without an edge."""
    rng = np.random.default_rng(seed)
    head = np.concatenate([rng.integers(0, n - 4, m), rng.integers(0, hubs, n)])
    tail = np.concatenate([rng.integers(0, n - 4, m), rng.integers(0, n - 4, n)])
    again = len(head) // 3
    head, tail = np.concatenate([head, head[:again]]), np.concatenate([tail, tail[:again]])
    rel = rng.integers(0, 4, len(head))
    return KnowledgeGraph.from_edges(
        head, tail, rel, node_type=rng.integers(0, 3, n).astype(np.int8), names=[f"n{i}" for i in range(n)],
        descriptions=[""] * n, type_names=("drug", "gene", "drug"), relation_names=("r0", "r1", "r1", "r3"),
        relation_descriptions=("",) * 4)


def batch_inputs(graph, seed, pairs=12, columns=3):
    rng = np.random.default_rng(seed)
    a = rng.random((graph.num_relations, columns))
    b = rng.random((graph.num_nodes, columns)) * 0.35
    rho = rng.random((pairs, graph.num_nodes)) ** 4
    if seed % 3 == 0:  # ties in costs and in rho
        a, b, rho = np.round(a, 1), np.round(b, 1), np.round(rho, 1)
    return (a, b, rng.integers(0, columns, pairs), rng.integers(0, graph.num_nodes, pairs),
            rng.integers(0, graph.num_nodes, pairs), rho)


@pytest.mark.parametrize("search", ["yen", "hop-bounded"])
def test_batched_stage_equals_the_per_pair_path(search):
    """Every pair's rows (hop, rank, cost bit for bit, nodes, relations), corridor K and
    fallback equal the per-pair path's, over graphs where corridors stop at every rung, fall
    back to the bounded search, and find no path at all."""
    fallbacks, rows, several = set(), 0, 0
    for seed in range(12):
        graph = hub_graph(seed) if seed % 2 else random_graph(seed, n=50, m=160, isolated=4)
        config = PathSearch(search=search, ladder=(5, 10, 20), max_hop=4, per_hop=3, k_paths=30,
                            relation_sequences=1 + seed % 4, pool=50)
        a, b, columns, topics, answers, rho = batch_inputs(graph, seed)
        order = np.stack([top_nodes(r, ranked_size(config.ladder, graph.num_nodes)) for r in rho])
        result = PairStage(graph, config, workers=2).run(a, b, columns, topics, answers, rho, order)
        for j in range(len(topics)):
            expected, k, fallback, multi = per_pair(graph, config, a[:, columns[j]], b[:, columns[j]], rho[j],
                                                    order[j], topics[j], answers[j])
            assert batch_rows(result, j) == expected, (seed, j)
            assert (result.corridor_k[j], result.fallback_names()[j]) == (k, fallback), (seed, j)
            fallbacks.add(fallback)
            rows += len(expected)
            several += multi
    assert fallbacks == {"", "ladder", "bounded-search", "unreachable"}
    assert rows > 300 and several > 0  # paths found, some through steps of several edges


def test_generated_graph_with_real_rankings():
    """On a generated PrimeKG-shaped graph (hubs, heavy-tailed degrees) with the PPR engine's
    rankings: the bank's parameters, Yen's search, every pair as the per-pair path gives it."""
    from adapath.engine.ppr import PPREngine
    from adapath.engine.weights import query_weights
    from adapath.sources.synthetic import generate

    graph = generate(scale=0.01, seed=5)
    rng = np.random.default_rng(3)
    pairs = 16
    weights = query_weights(rng.random((graph.num_nodes, 4)), rng.random((graph.num_relations, 4)))
    columns = rng.integers(0, 4, pairs)
    hubs = np.argsort(-graph.degree(), kind="stable")[:4]
    topics = np.concatenate([hubs, rng.integers(0, graph.num_nodes, pairs - 4)])
    answers = rng.integers(0, graph.num_nodes, pairs)
    config = PathSearch()
    ranking = PPREngine(graph).ranked(weights, topics, answers, columns,
                                      top=ranked_size(config.ladder, graph.num_nodes))
    rho = np.ascontiguousarray(ranking.rho.T)
    result = PairStage(graph, config, workers=2).run(weights.a, weights.b, columns, topics, answers, rho,
                                                     ranking.order)
    for j in range(pairs):
        expected, k, fallback, _ = per_pair(graph, config, weights.a[:, columns[j]], weights.b[:, columns[j]],
                                            rho[j], ranking.order[j], topics[j], answers[j])
        assert batch_rows(result, j) == expected and result.corridor_k[j] == k, j
    assert result.count.sum() > 3 * pairs


def test_a_pair_with_no_path_and_a_pair_of_one_node():
    """Topic and answer in different components: no rows, "unreachable"; topic = answer:
    no rows, as the per-pair path gives (it finds no path from a node to itself)."""
    graph = random_graph(4, n=30, m=60, isolated=5)
    config = PathSearch(ladder=(5, 10))
    a, b = np.ones((graph.num_relations, 1)), np.zeros((graph.num_nodes, 1))
    rho = np.ones((2, graph.num_nodes))
    topics, answers = np.array([0, 3]), np.array([graph.num_nodes - 1, 3])  # the last node has no edge
    order = np.stack([top_nodes(r, ranked_size(config.ladder, graph.num_nodes)) for r in rho])
    result = PairStage(graph, config).run(a, b, [0, 0], topics, answers, rho, order)
    assert result.count.tolist() == [0, 0]
    assert result.fallback_names()[0] == "unreachable" and result.corridor_k[0] == 0
    for j in range(2):
        expected, k, fallback, _ = per_pair(graph, config, a[:, 0], b[:, 0], rho[j], order[j], topics[j], answers[j])
        assert expected == [] and (result.corridor_k[j], result.fallback_names()[j]) == (k, fallback)


def test_thread_count_does_not_change_the_result():
    graph = hub_graph(7, n=80, m=300)
    config = PathSearch(ladder=(8, 16, 40), max_hop=4)
    a, b, columns, topics, answers, rho = batch_inputs(graph, 7, pairs=24)
    order = np.stack([top_nodes(r, ranked_size(config.ladder, graph.num_nodes)) for r in rho])
    one = PairStage(graph, config, workers=1).run(a, b, columns, topics, answers, rho, order)
    two = PairStage(graph, config, workers=numba.config.NUMBA_NUM_THREADS).run(a, b, columns, topics, answers,
                                                                               rho, order)
    for name in ("count", "hop", "rank", "cost", "nodes", "relations", "corridor_k", "fallback"):
        assert np.array_equal(getattr(one, name), getattr(two, name)), name


def test_first_rung_only_flags_climbing_pairs_and_a_second_call_fills_their_slots():
    """``first_rung_only``: a pair whose corridor leaves the first rung gets no rows and is
    flagged; the pairs it does not flag are done. A second call over the flagged pairs
    (given other rankings, as a certified re-solve gives) writes their slots, which then hold
    what the per-pair path gives with those rankings."""
    graph = hub_graph(9)
    config = PathSearch(ladder=(5, 10, 20), max_hop=4)
    a, b, columns, topics, answers, rho = batch_inputs(graph, 9, pairs=16)
    top = ranked_size(config.ladder, graph.num_nodes)
    order = np.stack([top_nodes(r, top) for r in rho])
    stage = PairStage(graph, config, workers=2)
    result = stage.run(a, b, columns, topics, answers, rho, order, first_rung_only=True)
    full = stage.run(a, b, columns, topics, answers, rho, order)
    climbed = np.flatnonzero(result.climbed)
    assert 0 < len(climbed) < len(topics)
    assert np.array_equal(climbed, np.flatnonzero((full.fallback != 0) & (full.fallback != 3)))
    assert np.all(result.count[climbed] == 0)
    again = np.random.default_rng(1).random((len(climbed), graph.num_nodes))
    again_order = np.stack([top_nodes(r, top) for r in again])
    stage.run(a, b, columns[climbed], topics[climbed], answers[climbed], again, again_order, into=result,
              slots=climbed)
    for j in range(len(topics)):
        r, o = (again[list(climbed).index(j)], again_order[list(climbed).index(j)]) if j in climbed else (rho[j], order[j])
        expected, k, fallback, _ = per_pair(graph, config, a[:, columns[j]], b[:, columns[j]], r, o, topics[j],
                                            answers[j])
        assert batch_rows(result, j) == expected and result.corridor_k[j] == k, j
    searched = result.fallback != 3
    assert np.all(result.seconds[:, 0] > 0) and np.all(result.seconds[searched, 1] > 0)  # timed where run


def test_signatures_compare_names():
    assert name_keys(("drug", "gene", "drug", "x", "gene")).tolist() == [0, 1, 0, 3, 1]


def test_the_compiled_clock_is_the_monotonic_clock():
    @numba.njit
    def read():
        return monotonic_ns()

    read()
    before = time.monotonic_ns()
    now = read()
    after = time.monotonic_ns()
    assert before <= now <= after


def test_take_next_hands_out_each_index_once():
    @numba.njit(parallel=True)
    def claim(items, workers, owner):
        counter = np.zeros(1, dtype=np.int64)
        for _ in numba.prange(workers):
            while True:
                i = take_next(counter)
                if i >= items:
                    break
                owner[i] += 1

    owner = np.zeros(10_000, dtype=np.int64)
    claim(len(owner), 2, owner)
    assert np.all(owner == 1)


def test_relation_sequences_of_equal_cost_in_the_per_pair_paths_order():
    """Drug 0 - gene 1 - disease 2, each step by two relations of equal weight: the four
    sequences cost the same, and with room for two the per-pair path keeps (first, first)
    and then (first, second), its choice vectors compared in order (worked by hand). Yen
    and the hop-bounded search keep those two."""
    head, tail, rel = np.array([0, 0, 1, 1]), np.array([1, 1, 2, 2]), np.array([0, 1, 2, 3])
    graph = KnowledgeGraph.from_edges(head, tail, rel, node_type=np.array([0, 1, 2], np.int8),
                                      names=["d", "g", "s"], descriptions=[""] * 3,
                                      type_names=("drug", "gene", "disease"),
                                      relation_names=("target", "carrier", "associated", "expressed"),
                                      relation_descriptions=("",) * 4)
    a, b, rho = np.ones((4, 1)), np.zeros((3, 1)), np.ones((1, 3))
    for search in ("yen", "hop-bounded"):
        config = PathSearch(ladder=(3,), search=search, relation_sequences=2)
        order = top_nodes(rho[0], 3)[None, :]
        result = PairStage(graph, config).run(a, b, [0], [0], [2], rho, order)
        assert [r[4] for r in batch_rows(result, 0)] == [[0, 2], [0, 3]]
        assert batch_rows(result, 0) == per_pair(graph, config, a[:, 0], b[:, 0], rho[0], order[0], 0, 2)[0]


def test_bounded_search_caps_by_rho_then_node_index():
    """No rung joins topic 0 and answer 9 (the top two nodes by rho are 10 and 11, off to
    the side), so the corridor is the bounded search's: of the nodes on shortest paths
    (0, 9 and the middles 1..7), the two of largest rho (0 and 9), plus a shortest path
    taken greedily (largest rho, ties by node index: through 1). With rho raised at node 5,
    the cap keeps 5 and 0 (a tie with 9, broken by node index) and the path goes through 5."""
    middles = np.arange(1, 8)
    head = np.concatenate([np.zeros(7, int), middles, [10]])
    tail = np.concatenate([middles, np.full(7, 9), [11]])
    graph = KnowledgeGraph.from_edges(head, tail, np.zeros(len(head), int), node_type=np.zeros(12, np.int8),
                                      names=[str(i) for i in range(12)], descriptions=[""] * 12,
                                      type_names=("x",), relation_names=("r",), relation_descriptions=("",))
    config = PathSearch(ladder=(2,), max_hop=3)
    a, b = np.ones((1, 1)), np.zeros((12, 1))
    for boosted, through in ((None, 1), (5, 5)):
        rho = np.full((1, 12), 0.5)
        rho[0, 10:], rho[0, [0, 9]] = 1.0, 0.8
        if boosted is not None:
            rho[0, boosted] = 0.9
        order = top_nodes(rho[0], ranked_size(config.ladder, 12))[None, :]
        result = PairStage(graph, config).run(a, b, [0], [0], [9], rho, order)
        assert result.fallback_names() == ["bounded-search"]
        rows = batch_rows(result, 0)
        assert [r[3] for r in rows] == [[0, through, 9]]  # the corridor holds one middle
        assert rows == per_pair(graph, config, a[:, 0], b[:, 0], rho[0], order[0], 0, 9)[0]
