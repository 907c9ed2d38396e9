"""The exact hop-bounded path search against brute-force enumeration of simple paths."""

import networkx as nx
import numpy as np
import pytest

from adapath.engine.corridor import Corridor, CorridorBuilder
from adapath.engine.paths import corridor_graph, hop_bounded
from tests.helpers import random_graph


@pytest.mark.parametrize("seed", range(5))
def test_hop_bounded_matches_brute_force(seed):
    graph = random_graph(seed, n=14, m=40)
    rng = np.random.default_rng(seed)
    a = rng.random(graph.num_relations)
    b = rng.random(graph.num_nodes)
    rho = rng.random(graph.num_nodes)
    corridor = Corridor(np.arange(graph.num_nodes), 0, "")
    local = corridor_graph(graph, CorridorBuilder(graph), corridor, a, b, rho)
    topic, answer = 0, int(max(nx.node_connected_component(_nx(local), 0) - {0}, default=1))
    found = hop_bounded(local, topic, answer, max_hop=4, per_hop=3, graph=graph, pool=5000)
    g = _nx(local)
    for h in range(1, 5):
        best = {}
        for path in nx.all_simple_paths(g, topic, answer, cutoff=h):
            if len(path) - 1 != h:
                continue
            cost = sum(g[u][v]["weight"] for u, v in zip(path[:-1], path[1:]))
            types = tuple(graph.type_name(v) for v in path)
            rels = tuple(g[u][v]["relation"] for u, v in zip(path[:-1], path[1:]))
            key = (types, rels)
            best[key] = min(best.get(key, np.inf), cost)
        expected = sorted(best.values())[:3]
        ours = [p.cost for p in found if p.hops == h]
        assert np.allclose(ours, expected), h
        for p in (p for p in found if p.hops == h):
            assert len(set(p.nodes.tolist())) == len(p.nodes)
            assert p.nodes[0] == topic and p.nodes[-1] == answer


def _nx(local):
    g = nx.Graph()
    g.add_nodes_from(range(len(local.nodes)))
    src = np.repeat(np.arange(len(local.nodes)), np.diff(local.indptr))
    for u, v, c, r in zip(src.tolist(), local.indices.tolist(), local.cost.tolist(), local.relation.tolist()):
        g.add_edge(u, v, weight=c, relation=r)
    return g
