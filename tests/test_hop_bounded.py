"""The exact hop-bounded path search against brute-force enumeration of simple paths over
every relation of the multigraph."""

import networkx as nx
import numpy as np
import pytest

from adapath.engine.corridor import Corridor, CorridorBuilder
from adapath.engine.paths import bin_by_hop, corridor_graph, hop_bounded
from tests.helpers import random_graph


def eq5_multigraph(graph, a, b, rho, alpha=0.5):
    """Eq. 5 costs, one edge per (pair, relation), computed from the graph's edge list."""
    g = nx.MultiGraph()
    g.add_nodes_from(range(graph.num_nodes))
    top = rho.max()
    for h, r, t in zip(*graph.edges()):
        w = a[r] + b[h] + b[t]
        cost = 1.0 / (alpha * w + (1 - alpha) * 0.5 * (rho[h] + rho[t]) / top)
        g.add_edge(int(h), int(t), key=graph.relation_names[r], weight=cost)
    return g


@pytest.mark.parametrize("seed", range(5))
def test_hop_bounded_matches_brute_force(seed):
    graph = random_graph(seed, n=14, m=40)
    rng = np.random.default_rng(seed)
    a = rng.random(graph.num_relations)
    b = rng.random(graph.num_nodes)
    rho = rng.random(graph.num_nodes)
    corridor = Corridor(np.arange(graph.num_nodes), 0, "")
    local = corridor_graph(graph, CorridorBuilder(graph), corridor, a, b, rho)
    g = eq5_multigraph(graph, a, b, rho)
    topic, answer = 0, int(max(nx.node_connected_component(g, 0) - {0}, default=1))
    found = hop_bounded(local, topic, answer, max_hop=4, per_hop=3, graph=graph, pool=5000,
                        relation_sequences=1000)
    bins = bin_by_hop(graph, found, per_hop=3, max_hop=4)
    for h in range(1, 5):
        best = {}
        for edges in nx.all_simple_edge_paths(g, topic, answer, cutoff=h):
            if len(edges) != h:
                continue
            path = [topic] + [v for _, v, _ in edges]
            cost = sum(g[u][v][rel]["weight"] for u, v, rel in edges)
            key = (tuple(graph.type_name(v) for v in path), tuple(rel for _, _, rel in edges))
            best[key] = min(best.get(key, np.inf), cost)
        expected = sorted(best.values())[:3]
        ours = [p.cost for p in bins.get(h, [])]
        assert np.allclose(ours, expected), h
        for p in bins.get(h, []):
            assert len(set(p.nodes.tolist())) == len(p.nodes)
            assert p.nodes[0] == topic and p.nodes[-1] == answer
