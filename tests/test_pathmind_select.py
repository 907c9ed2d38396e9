"""PathMind's selection: top-K entities over T rounds, each round's selection seeding the next,
on a hand-worked example where the look-ahead and the greedy rule part ways."""

import numpy as np
import pytest

from adapath.engine.graph import KnowledgeGraph
from adapath.methods.pathmind.select import select_entities

# topic 0; its neighbours A=1, B=2, C=3; A leads to D=4 and E=5, B to F=6, C to G=7; H=8 hangs
# off the topic's other side and is outside the subgraph
EDGES = [(0, 1), (0, 2), (0, 3), (1, 4), (1, 5), (2, 6), (3, 7), (0, 8)]
PRIORITY = np.array([100.0, 5, 1, 4, 0, 2, 9, 3, 50])  # the topic's and H's must never count
INSIDE = np.array([True] * 8 + [False])


def graph():
    head, tail = (np.array(x) for x in zip(*EDGES))
    n = 9
    return KnowledgeGraph.from_edges(head, tail, np.zeros(len(EDGES), np.int64), node_type=np.zeros(n, np.int8),
                                     names=[str(i) for i in range(n)], descriptions=[""] * n, type_names=("t",),
                                     relation_names=("r",), relation_descriptions=("",))


@pytest.mark.parametrize("k, rule, rounds, final, parents", [
    # look-ahead, K=1: round 1 ranks A by 5 (itself), B by 9 (F behind it), C by 4 -> B; round 2: F
    (1, "lookahead", [[2], [6]], [6], {2: 0, 6: 2}),
    # greedy, K=1: round 1 takes A (5); round 2 its best neighbour E (2); the answer set is A
    (1, "greedy", [[1], [5]], [1], {1: 0, 5: 1}),
    # look-ahead, K=2: round 1 B (9), A (5); round 2 from them F (9), E (2); answer set F, A
    (2, "lookahead", [[2, 1], [6, 5]], [6, 1], {2: 0, 1: 0, 6: 2, 5: 1}),
    # greedy, K=2: round 1 A (5), C (4); round 2 from them G (3), E (2); answer set A, C
    (2, "greedy", [[1, 3], [7, 5]], [1, 3], {1: 0, 3: 0, 7: 3, 5: 1}),
])
def test_rounds_by_hand(k, rule, rounds, final, parents):
    g = graph()
    got = select_entities(g.indptr, g.indices, PRIORITY, INSIDE, [0], k, 2, rule)
    assert got.rounds == rounds and got.final == final and got.parent == parents
    assert [got.path(v) for v in final] == [[0] + [parents[v]] * (parents[v] != 0) + [v] for v in final]


def test_runners_up_are_the_candidates_no_round_took():
    g = graph()
    got = select_entities(g.indptr, g.indices, PRIORITY, INSIDE, [0], 1, 2, "lookahead")
    assert got.runners_up(PRIORITY) == [1, 3]  # A (5) and C (4), passed over in round 1
    assert got.path(3) == [0, 3]


def test_a_round_with_no_new_neighbour_ends_the_selection():
    g = graph()
    got = select_entities(g.indptr, g.indices, PRIORITY, INSIDE, [0], 3, 3, "greedy")
    # round 1 takes A, C, B; round 2 the best three of their neighbours, F, G, E (D is left);
    # round 3 finds no neighbour of F, G, E that no round took
    assert got.rounds == [[1, 3, 2], [6, 7, 5]]
    assert got.final == [6, 1, 3]


def test_lookahead_is_the_best_priority_within_reach():
    """Each question's look-ahead at any nodes, asked in any order (what earlier asks left
    known is reused), is the best priority among the nodes its subgraph reaches from v in at
    most m steps without leaving it (shortest paths of SciPy on the subgraph's induced graph),
    ``-inf`` outside the subgraph."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    from adapath.methods.pathmind.select import Lookahead
    from tests.helpers import random_graph

    g = random_graph(4, n=60, m=150)
    rng = np.random.default_rng(0)
    n, steps = g.num_nodes, 3
    adjacency = csr_matrix((np.ones(len(g.indices)), g.indices, g.indptr), shape=(n, n))
    for share in (0.9, 0.5, 0.2):
        priority, inside = rng.standard_normal(n), rng.random(n) < share
        keep = np.flatnonzero(inside)
        hops = shortest_path(adjacency[keep][:, keep], unweighted=True)
        look = Lookahead(g.indptr, g.indices, priority, inside, steps)
        for m in (1, 3, 0, 2, 3, 1):
            nodes = rng.choice(n, size=int(rng.integers(1, n)), replace=False)
            want = np.full(n, -np.inf)
            for a, v in enumerate(keep):
                want[v] = priority[keep[hops[a] <= m]].max()
            assert np.array_equal(look.at(m, nodes), want[nodes]), (share, m)


def reference_selection(adjacency: list[list[int]], priority, inside, topics, k, rounds, rule):
    """The selection as the module's text states it, in plain Python: breadth-first search for
    the look-ahead, dictionaries for the rounds."""
    n = len(priority)
    blocked = set(topics)

    def ahead(v, m):  # the best priority within m steps of v inside the subgraph, topics excluded
        if not inside[v] or v in blocked:
            return -np.inf
        seen, layer = {v}, [v]
        for _ in range(m):
            layer = [u for w in layer for u in adjacency[w] if inside[u] and u not in blocked and u not in seen]
            seen.update(layer)
        return max(priority[u] for u in seen)

    taken, seeds, rounds_out, parent, passed = set(topics), list(dict.fromkeys(topics)), [], {}, {}
    for t in range(1, rounds + 1):
        reached = {}
        for seed in seeds:
            for v in adjacency[seed]:
                if inside[v] and v not in taken and v not in reached:
                    reached[v] = seed
        if not reached:
            break
        def key(v, left=rounds - t):
            return ahead(v, left) if rule == "lookahead" else priority[v]
        best = sorted(reached, key=lambda v: (-key(v), -priority[v], v))[:k]
        for v in best:
            parent[v] = reached[v]
            taken.add(v)
        for v, seed in reached.items():
            passed.setdefault(v, seed)
        rounds_out.append(best)
        seeds = best
    chosen = [v for r in rounds_out for v in r]
    final = sorted(chosen, key=lambda v: (-priority[v], v))[:k]
    assert n == len(inside)
    return rounds_out, parent, passed, final


@pytest.mark.parametrize("seed", range(6))
def test_selection_against_a_plain_python_reference(seed):
    """Random graphs, priorities with ties, subgraphs and topics: the rounds, parents,
    passed-over seeds and answer set equal the reference's, for both rules."""
    from tests.helpers import random_graph

    g = random_graph(seed, n=80, m=260)
    rng = np.random.default_rng(seed)
    n = g.num_nodes
    adjacency = [g.indices[g.indptr[v]:g.indptr[v + 1]].tolist() for v in range(n)]
    priority = rng.integers(0, 6, n).astype(float)  # few values: many ties
    inside = rng.random(n) < 0.8
    topics = rng.choice(n, size=int(rng.integers(1, 4)), replace=False).tolist()
    for rule in ("lookahead", "greedy"):
        for k, rounds in ((1, 2), (3, 3), (5, 2)):
            got = select_entities(g.indptr, g.indices, priority, inside, topics, k, rounds, rule)
            want = reference_selection(adjacency, priority, inside, topics, k, rounds, rule)
            assert (got.rounds, got.parent, got.passed, got.final) == want, (rule, k, rounds)


def test_selections_on_threads_equal_the_serial_ones():
    """``select_all`` over a thread pool gives each question the selection it gets alone."""
    from adapath.contract import Query
    from adapath.methods.pathmind.config import TrainConfig
    from adapath.methods.pathmind.infer import PathMind
    from adapath.retrieval.dense import HashingEncoder
    from tests.helpers import random_graph

    g = random_graph(7, n=120, m=400)
    pathmind = PathMind(g, None, TrainConfig(hops=3), HashingEncoder(), mode="random", k=3)
    queries = [Query(f"q{i}", "bare", f"question {i}", (int(g.node_id[i * 7]),)) for i in range(12)]
    examples = pathmind.examples(queries)
    serial = pathmind.select_all(examples, pathmind.prioritize(examples), threads=1)
    threaded = pathmind.select_all(examples, pathmind.prioritize(examples), threads=4)
    assert [(s.rounds, s.parent, s.final) for s in threaded] == [(s.rounds, s.parent, s.final) for s in serial]
    assert any(s.final for s in serial)
