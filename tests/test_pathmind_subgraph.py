"""PathMind's question-conditioned and meta-path-guided subgraphs against independent references:
a dense linear solve of the PPR, brute-force enumeration of typed walks, networkx connectivity."""

import itertools

import networkx as nx
import numpy as np
import pytest

from adapath.engine.graph import KnowledgeGraph
from adapath.engine.ppr import ETA
from adapath.engine.weights import materialize, query_weights
from adapath.errors import InputError
from adapath.methods.pathmind.subgraph import Guide, SubgraphBuilder
from adapath.retrieval.bm25 import GraphText
from tests.helpers import random_graph


def dense_ppr(graph: KnowledgeGraph, weights, seed: int) -> np.ndarray:
    """pi = eta s + (1 - eta) P pi, solved directly on the materialized weighted transition matrix."""
    n = graph.num_nodes
    w = materialize(graph, weights)
    src, dst = np.asarray(graph.src), np.asarray(graph.indices)
    transition = np.zeros((n, n))
    np.add.at(transition, (dst, src), w)
    out = transition.sum(axis=0)
    transition[:, out > 0] /= out[out > 0]
    s = np.zeros(n)
    s[seed] = 1.0
    return np.linalg.solve(np.eye(n) - (1 - ETA) * transition, ETA * s)


def nx_graph(graph: KnowledgeGraph) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(range(graph.num_nodes))
    g.add_edges_from(zip(np.asarray(graph.src).tolist(), np.asarray(graph.indices).tolist()))
    return g


def test_question_ranking_matches_dense_ppr_under_the_questions_weights():
    graph = random_graph(3, n=40, m=160)
    text = GraphText.for_graph(graph, None, b=0.0)
    builder = SubgraphBuilder(graph, hops=3, budget=10, mode="question", text=text, tol=1e-12)
    questions = ["which node 7 text about r2", "node 12 text 30 about r0 r3"]
    topic_sets = [[7], [12, 30]]
    got = builder.scores(topic_sets, questions)
    s_node, s_rel = text.similarity(questions)
    for j, topics in enumerate(topic_sets):
        weights = query_weights(s_node[:, [j]], s_rel[:, [j]])
        expected = sum(dense_ppr(graph, weights, t) for t in topics)
        np.testing.assert_allclose(got[:, j], expected, atol=1e-9)
    # the kept nodes are the best-ranked ones whose chain to the topic fits: the first budget
    # nodes by that rank are kept whenever their parent chain is already in
    sub = builder.build_many([[7]], questions[:1])[0]
    ball = set(nx.single_source_shortest_path_length(nx_graph(graph), 7, cutoff=3))
    assert set(sub.nodes.tolist()) <= ball and len(sub.nodes) == 11
    best = max(ball - {7}, key=lambda v: (got[v, 0], -v))
    assert best in sub.nodes


def hand_graph() -> KnowledgeGraph:
    """Topic 0 (type a); a -r0-> b -r1-> c walks 0-1-3, 0-2-3, 0-2-4; a dead end 0-5 (type b,
    no r1 onward); 6, 7 off the meta-path (other relations)."""
    edges = [(0, 1, 0), (0, 2, 0), (1, 3, 1), (2, 3, 1), (2, 4, 1), (0, 5, 0), (0, 6, 2), (6, 7, 3), (3, 7, 2),
             (5, 6, 3)]
    head, tail, rel = (np.array(x) for x in zip(*edges))
    node_type = np.array([0, 1, 1, 2, 2, 1, 0, 2], dtype=np.int8)
    return KnowledgeGraph.from_edges(head, tail, rel, node_type=node_type,
                                     names=[f"node {i}" for i in range(8)], descriptions=[""] * 8,
                                     type_names=("a", "b", "c"), relation_names=("r0", "r1", "r2", "r3"),
                                     relation_descriptions=("x", "y", "z", "w"))


def typed_walks(graph: KnowledgeGraph, topic: int, relations, types) -> set[tuple[int, ...]]:
    """Every walk from the topic following the relations and types, by brute force over edges."""
    triples = {(int(u), int(r), int(v)) for u, r, v in zip(graph.src, graph.rel, graph.indices)}
    walks = set()
    for nodes in itertools.product(range(graph.num_nodes), repeat=len(relations)):
        path = (topic, *nodes)
        if all((path[i], relations[i], path[i + 1]) in triples and graph.node_type[path[i + 1]] == types[i + 1]
               for i in range(len(relations))):
            walks.add(path)
    return walks


def test_metapath_subgraph_holds_every_typed_walk_and_only_whole_walks_first():
    graph = hand_graph()
    text = GraphText.for_graph(graph, None, b=0.0)
    lane = ((0, 1), (0, 1, 2))
    walks = typed_walks(graph, 0, *lane)
    on_walks = {v for w in walks for v in w}
    assert on_walks == {0, 1, 2, 3, 4}  # the reference itself: 5 is a dead end
    builder = SubgraphBuilder(graph, hops=3, budget=len(on_walks) - 1, mode="metapath", text=text)
    sub = builder.build_many([[0]], ["question"], [Guide([lane], [])])[0]
    assert set(sub.nodes.tolist()) == on_walks  # the budget holds exactly the walks' nodes
    # a larger budget tops up with the question ranking, and still holds every walk
    big = SubgraphBuilder(graph, hops=3, budget=7, mode="metapath", text=text)
    sub = big.build_many([[0]], ["question"], [Guide([lane], [[0, 2, 4]])])[0]
    assert on_walks <= set(sub.nodes.tolist()) and len(sub.nodes) == 8
    # the scorer's walk is taken first, whole, even within a budget of two
    small = SubgraphBuilder(graph, hops=3, budget=2, mode="metapath", text=text)
    sub = small.build_many([[0]], ["question"], [Guide([lane], [[0, 2, 4]])])[0]
    assert set(sub.nodes.tolist()) == {0, 2, 4}


@pytest.mark.parametrize("mode", ["question", "metapath"])
def test_no_kept_node_is_cut_off_from_the_topics(mode):
    graph = random_graph(11, n=120, m=260)
    text = GraphText.for_graph(graph, None, b=0.0)
    topic_sets = [[3], [10, 50], [77]]
    guides = None
    if mode == "metapath":
        t = graph.node_type
        guides = [Guide([((0, 1), (int(t[ts[0]]), 0, 1)), ((2,), (int(t[ts[0]]), 2))], []) for ts in topic_sets]
    for budget in (5, 20):
        builder = SubgraphBuilder(graph, hops=3, budget=budget, mode=mode, text=text)
        for topics, sub in zip(topic_sets, builder.build_many(topic_sets, ["node text r1"] * 3, guides)):
            kept = nx_graph(graph).subgraph(sub.nodes.tolist())
            reachable = set().union(*(nx.node_connected_component(kept, t) for t in topics))
            assert reachable == set(sub.nodes.tolist())
            assert len(sub.nodes) <= budget + len(topics) and np.all(sub.depth >= 0)


def test_text_modes_need_the_text_and_an_unknown_mode_is_one_line():
    graph = random_graph(1)
    with pytest.raises(InputError, match="subgraph='nope': choose ppr, question, metapath"):
        SubgraphBuilder(graph, mode="nope")
    with pytest.raises(InputError, match="needs the graph's BM25"):
        SubgraphBuilder(graph, mode="question")


def test_train_refuses_a_metapath_cut_without_a_bank_in_one_line(tmp_path, capsys):
    from tests.conftest import run_cli

    graph = random_graph(2)
    graph.save(tmp_path / "kg")
    (tmp_path / "q.jsonl").write_text("")
    base = ["pathmind", "train", "--kg", tmp_path / "kg", "--queries", f"biostrat:{tmp_path / 'q.jsonl'}",
            "--out", tmp_path / "m", "--encoder", "hashing"]
    code, _, err = run_cli([*base, "--subgraph", "metapath"], capsys)
    assert code == 2 and err.strip() == ("adapath: error: --subgraph metapath needs a Path-Bank (--bank); "
                                         "or choose --subgraph question")
    code, _, err = run_cli([*base, "--subgraph", "bfs"], capsys)
    assert code == 2 and err.strip() == "adapath: error: --subgraph 'bfs': choose ppr, question, metapath or auto"
    assert not (tmp_path / "m").exists()


def test_prior_follows_the_order_nodes_were_taken():
    graph = hand_graph()
    text = GraphText.for_graph(graph, None, b=0.0)
    builder = SubgraphBuilder(graph, hops=3, budget=3, mode="metapath", text=text)
    sub = builder.build_many([[0]], ["question"], [Guide([], [[0, 2, 4]])])[0]
    prior = dict(zip(sub.nodes.tolist(), sub.prior.tolist()))
    assert prior[0] == 1.0 and prior[0] > prior[4] > prior[2] and min(prior.values()) == 0.0  # the end first
