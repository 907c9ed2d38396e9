"""PathMind's ablations as options of one trained model, each on a graph where it must part
ways with the full method: the priority heads (w/o prioritization, d only, f only) on a
network whose heads are set by hand, so each mode's pick is known from a brute-force d; the
paths the reasoner reads (important, shortest, random) on a graph where the prioritized path
and the shortest one differ."""

import itertools

import numpy as np
import pytest
import torch
from torch import nn

from adapath.contract import Query
from adapath.engine.graph import KnowledgeGraph
from adapath.methods.pathmind.config import TrainConfig
from adapath.methods.pathmind.infer import PathMind, Prioritized
from adapath.methods.pathmind.model import PathMindNet, signed_log
from adapath.methods.pathmind.select import select_entities
from adapath.retrieval.dense import HashingEncoder

# topic 0; its neighbours 1, 2, 3, 8; 1 leads to 4 and 5, 2 to 6, 3 to 7
STAR = [(0, 1), (0, 2), (0, 3), (1, 4), (1, 5), (2, 6), (3, 7), (0, 8)]
# topic 0; 1 and 2 its neighbours; 3 behind both; 4 behind 3
DIAMOND = [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)]


def make_graph(edges) -> KnowledgeGraph:
    head, tail = (np.array(x) for x in zip(*edges))
    n = int(max(max(e) for e in edges)) + 1
    return KnowledgeGraph.from_edges(head, tail, np.zeros(len(edges), np.int64), node_type=np.zeros(n, np.int8),
                                     names=[f"n{i}" for i in range(n)], descriptions=[""] * n, type_names=("t",),
                                     relation_names=("r",), relation_descriptions=("",))


class Pick(nn.Module):
    """A head that reads one channel, times a sign."""

    def __init__(self, channel: int, sign: float = 1.0):
        super().__init__()
        self.channel, self.sign = channel, sign

    def forward(self, x):
        return self.sign * x[..., self.channel:self.channel + 1]


class FutureCancelsChannelOne(nn.Module):
    """f([d~, q']) = (0, -d~_1): the priority MLP then reads (d~_0, 0)."""

    def forward(self, x):
        return torch.stack([torch.zeros_like(x[..., 0]), -x[..., 1]], dim=-1)


def hand_set_network(entities: torch.Tensor) -> PathMindNet:
    """The paper's network (sum cost, GNN entities) with hidden 2 and heads set by hand:
    q' = (1, 1), W_r = 1, so d(q, e) sums h_u * h_v over walks; priority = d~_0, the
    cumulative probe = -d~_0, the future probe = f_1 = -d~_1, the readout probe = h_0."""
    net = PathMindNet(num_types=1, num_codes=2, query_dim=4, text_dim=4, hidden=2, hops=2)
    with torch.no_grad():
        net.query.weight.zero_()
        net.query.bias.fill_(1.0)
        net.triple_relation.fill_(1.0)
    net.future = FutureCancelsChannelOne()
    net.priority = Pick(0)
    net.probes["cumulative"] = Pick(0, -1.0)
    net.probes["future"] = Pick(1)
    net.probes["readout"] = Pick(0)
    net.entities = lambda whole, nodes=None: entities if nodes is None else entities.index_select(0, nodes)
    return net


def walk_sum_d(edges, h, topic, hops):
    """d(q, e) by enumerating walks: the sum over walks of at most ``hops`` steps from the
    topic of the sum of h_u * h_v over their steps (q' = 1, W_r = 1)."""
    steps = [(a, b) for a, b in edges] + [(b, a) for a, b in edges]
    d = np.zeros_like(h)
    for length in range(1, hops + 1):
        for walk in itertools.product(steps, repeat=length):
            if walk[0][0] == topic and all(walk[i][1] == walk[i + 1][0] for i in range(length - 1)):
                for u, v in walk:
                    d[walk[-1][1]] += h[u] * h[v]
    return d


def pathmind(graph, net, **options) -> PathMind:
    config = TrainConfig(hops=2, hidden=2, encoder="hashing")
    return PathMind(graph, net, config, HashingEncoder(dim=4), k=1, rounds=1, rule="greedy", **options)


def test_each_priority_ablation_reads_its_own_head_and_parts_from_the_full_method():
    graph = make_graph(STAR)
    rng = np.random.default_rng(5)  # a draw where every ablation picks another entity than the full method
    h = rng.normal(size=(9, 2))
    d = signed_log(torch.as_tensor(walk_sum_d(STAR, h, 0, 2))).numpy()
    frontier = np.array([1, 2, 3, 8])  # round 1 looks at the topic's neighbours
    want = {"model": d[:, 0], "cumulative": -d[:, 0], "future": -d[:, 1], "readout": h[:, 0]}
    picks = {mode: int(frontier[np.argmax(score[frontier])]) for mode, score in want.items()}
    assert all(picks[m] != picks["model"] for m in ("cumulative", "future", "readout")) and picks["future"] != picks["readout"]
    net = hand_set_network(torch.as_tensor(h, dtype=torch.float32))
    query = Query("q1", "a question", "explicit", topic_ids=[int(graph.node_id[0])])
    for mode, pick in picks.items():
        result = pathmind(graph, net, mode=mode).answer([query])[0]
        assert result.extra["prioritized"] == [int(graph.node_id[pick])], mode


def diamond_priority(graph) -> Prioritized:
    """Node 2 before node 1 in round 1, then 3 from 2; 3 is the best of all."""
    from adapath.methods.pathmind.infer import reach_of
    from adapath.methods.pathmind.propagate import RelationalGraph

    inside, depth = reach_of(RelationalGraph(graph).reach_bits([[0]], 2), 0)
    priority = np.array([0.0, 1.0, 2.0, 5.0, -np.inf])
    return Prioritized(np.where(inside, priority, -np.inf), inside, depth)


@pytest.mark.parametrize("kind, walk", [("important", [0, 2, 3]), ("shortest", [0, 1, 3])])
def test_important_paths_follow_the_selection_shortest_ones_do_not(kind, walk):
    graph = make_graph(DIAMOND)
    prioritized = diamond_priority(graph)
    selection = select_entities(graph.indptr, graph.indices, prioritized.priority, prioritized.inside, [0], 1, 2,
                                "greedy")
    assert selection.final == [3] and selection.path(3) == [0, 2, 3]
    method = pathmind(graph, None, paths=kind)
    steps = method.paths(selection, selection.final, prioritized)
    assert [[a, b] for a, _, b, _ in steps[0]] == [[x, y] for x, y in zip(walk, walk[1:])]


def test_random_paths_are_seeded_walks_from_the_topics_inside_the_subgraph():
    graph = make_graph(STAR)
    from adapath.methods.pathmind.infer import reach_of
    from adapath.methods.pathmind.propagate import RelationalGraph
    from adapath.methods.pathmind.train import Example

    inside, depth = reach_of(RelationalGraph(graph).reach_bits([[0]], 1), 0)  # a 1-hop subgraph: 4 to 7 lie outside
    prioritized = Prioritized(np.where(inside, np.arange(9.0), -np.inf), inside, depth)
    selection = select_entities(graph.indptr, graph.indices, prioritized.priority, prioritized.inside, [0], 3, 1,
                                "greedy")
    config = TrainConfig(hops=1, hidden=2, encoder="hashing")
    drawn = {}
    for question in ("a", "b", "c", "d"):
        method = PathMind(graph, None, config, HashingEncoder(dim=4), k=3, rounds=1, paths="random")
        example = Example(question, "", [0], [], np.zeros(4, np.float32))
        walks = method.paths(selection, selection.final, prioritized, example)
        again = method.paths(selection, selection.final, prioritized, example)
        assert walks == again and len(walks) == 3
        for steps in walks:
            assert steps[0][0] == 0 and len(steps) == 1  # hops = 1: one step, from the topic
            assert all(prioritized.inside[b] for _, _, b, _ in steps)
        drawn[question] = tuple(steps[0][2] for steps in walks)
    assert len(set(drawn.values())) > 1  # the walks are drawn, not the selection: they vary by question
    assert set(drawn["a"]) != set(selection.final) or set(drawn["b"]) != set(selection.final)
