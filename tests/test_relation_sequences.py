"""Every relation sequence of a found node path is registered (up to the cap), on a
hand-built multigraph: a gene joined to a drug by both `target` and `transporter`."""

import networkx as nx
import numpy as np
import pytest

from adapath.engine.corridor import Corridor, CorridorBuilder
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.paths import bin_by_hop, corridor_graph, k_shortest

RELATIONS = ("target", "transporter", "associated with", "expression present", "indication")
# a[r] chosen so that, with b = 0, rho flat and alpha = 0.5, a step costs 2 / (a[r] + 1)
A = np.array([1.0, 0.6, 1.0, 0.2, 0.0])
STEP = {"target": 1.0, "transporter": 1.25, "associated with": 1.0, "expression present": 2 / 1.2,
        "indication": 2.0}


def hand_graph():
    # 0 drug (topic), 1 gene, 2 disease (answer)
    edges = [(0, 1, 0), (0, 1, 1), (1, 2, 2), (1, 2, 3), (0, 2, 4)]
    head, tail, rel = (np.array(c) for c in zip(*edges))
    return KnowledgeGraph.from_edges(
        head, tail, rel, node_type=np.array([0, 1, 2], np.int8), names=["aspirin", "PTGS1", "pain"],
        descriptions=["", "", ""], type_names=("drug", "gene/protein", "disease"),
        relation_names=RELATIONS, relation_descriptions=RELATIONS)


def found_by_hop(cap):
    graph = hand_graph()
    b, rho = np.zeros(3), np.ones(3)
    corridor = Corridor(np.arange(3), 3, "")
    local = corridor_graph(graph, CorridorBuilder(graph), corridor, A, b, rho, alpha=0.5)
    found = k_shortest(local, 0, 2, k=10, relation_sequences=cap)
    return graph, bin_by_hop(graph, found, per_hop=5, max_hop=5)


def test_every_relation_sequence_is_registered_hand_worked():
    graph, bins = found_by_hop(cap=8)
    two = [(str(p.metapath(graph)), p.cost) for p in bins[2]]
    expected = [  # by hand: the sums of the step costs, cheapest first
        ("drug -[target]- gene/protein -[associated with]- disease", 2.0),
        ("drug -[transporter]- gene/protein -[associated with]- disease", 2.25),
        ("drug -[target]- gene/protein -[expression present]- disease", 1 + 2 / 1.2),
        ("drug -[transporter]- gene/protein -[expression present]- disease", 1.25 + 2 / 1.2),
    ]
    assert [m for m, _ in two] == [m for m, _ in expected]
    assert [c for _, c in two] == pytest.approx([c for _, c in expected])
    assert [(str(p.metapath(graph)), p.cost) for p in bins[1]] == [("drug -[indication]- disease", 2.0)]


def test_relation_sequences_match_multigraph_enumeration():
    graph, bins = found_by_hop(cap=8)
    g = nx.MultiGraph()
    for h, r, t in zip(*graph.edges()):
        g.add_edge(int(h), int(t), key=graph.relation_names[r])
    reference = {}
    for edges in nx.all_simple_edge_paths(g, 0, 2):
        cost = sum(STEP[rel] for _, _, rel in edges)
        reference.setdefault(len(edges), []).append((cost, tuple(rel for _, _, rel in edges)))
    for hop, paths in bins.items():
        assert sorted(c for c, _ in reference[hop]) == pytest.approx([p.cost for p in paths])
        assert {rels for _, rels in reference[hop]} == {
            tuple(graph.relation_names[r] for r in p.relations) for p in paths}


@pytest.mark.parametrize("cap, count", [(1, 1), (2, 2), (3, 3)])
def test_the_cap_keeps_the_cheapest_sequences(cap, count):
    graph, bins = found_by_hop(cap=cap)
    assert [p.cost for p in bins[2]] == pytest.approx([2.0, 2.25, 1 + 2 / 1.2][:count])


def test_one_edge_paths_match_the_edges_between_their_nodes():
    """On a random multigraph corridor, each found path whose every step has one edge (by
    networkx's multigraph) carries that edge's relation per step and the sum of Eq. 5 step
    costs computed from the weights directly; a path with a step of several edges comes
    back once per relation sequence, each sequence made of edges the multigraph has."""
    from tests.helpers import random_graph

    graph = random_graph(21, n=30, m=160)
    rng = np.random.default_rng(21)
    a, b, rho = rng.random(graph.num_relations), rng.random(graph.num_nodes) * 0.3, rng.random(graph.num_nodes)
    nodes = np.arange(graph.num_nodes)
    local = corridor_graph(graph, CorridorBuilder(graph), Corridor(nodes, len(nodes), ""), a, b, rho, alpha=0.5)
    multi = nx.MultiGraph()
    for h, r, t in zip(*graph.edges()):
        multi.add_edge(int(h), int(t), key=int(r))
    top = rho.max()

    def step_cost(u, v, r):
        return 1.0 / (0.5 * (a[r] + b[u] + b[v]) + 0.5 * 0.5 * (rho[u] + rho[v]) / top)

    topic, answer = 0, int(np.flatnonzero(graph.degree() > 0)[-1])
    found = k_shortest(local, topic, answer, k=40, relation_sequences=8)
    singles = multis = 0
    for path in found:
        steps = list(zip(path.nodes[:-1].tolist(), path.nodes[1:].tolist()))
        relations = [sorted(multi.get_edge_data(u, v)) for u, v in steps]
        for r, options in zip(path.relations.tolist(), relations):
            assert r in options
        expected = 0.0
        for (u, v), r in zip(steps, path.relations.tolist()):
            expected += step_cost(u, v, r)
        assert path.cost == pytest.approx(expected, rel=1e-12)
        if all(len(options) == 1 for options in relations):
            singles += 1
        else:
            multis += 1
    assert singles > 5 and multis > 0  # both routes ran


def test_row_order_is_lexsort_within_rows():
    """Half-edges in row order sort by (dst, cost, rel) within their rows as np.lexsort
    sorts them by (src, dst, cost, rel), ties (equal in all four) kept in order."""
    from adapath.kernels.subgraph import row_order

    rng = np.random.default_rng(5)
    src = np.sort(rng.integers(0, 12, 400))
    dst = rng.integers(0, 12, 400)
    cost = rng.integers(0, 4, 400) / 2.0  # coarse: ties in cost, and in all four
    rel = rng.integers(0, 3, 400)
    np.testing.assert_array_equal(row_order(src, dst, cost, rel), np.lexsort((rel, cost, dst, src)))
