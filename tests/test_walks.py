"""Walk propagation against a plain-Python enumeration of every walk on small random graphs."""

import itertools

import numpy as np
import pytest

from adapath.engine import walks as walk_engine
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.walks import (
    Lane,
    RelationLayers,
    heaviest_walk,
    heaviest_walks_through,
    propagate,
    through,
)

TYPES = ("drug", "gene/protein", "disease")
RELATIONS = ("target", "ppi", "associated with", "indication")


def random_graph(seed: int, n: int = 24, edges: int = 110):
    """A typed multigraph (two relations may join a pair) and its edge list, built apart from the CSR."""
    rng = np.random.default_rng(seed)
    node_type = rng.integers(0, len(TYPES), n)
    allowed = {("drug", "gene/protein"): (0,), ("gene/protein", "gene/protein"): (1,),
               ("gene/protein", "disease"): (2,), ("drug", "disease"): (3, 2)}
    seen, edge_list = set(), []
    while len(edge_list) < edges:
        u, v = (int(x) for x in rng.integers(0, n, 2))
        pair = (TYPES[node_type[u]], TYPES[node_type[v]])
        if u == v or (pair not in allowed and pair[::-1] not in allowed):
            continue
        rels = allowed.get(pair) or allowed[pair[::-1]]
        r = int(rels[rng.integers(0, len(rels))])
        key = (min(u, v), max(u, v), r)
        if key not in seen:
            seen.add(key)
            edge_list.append((u, r, v))
    head, rel, tail = (np.array(x) for x in zip(*edge_list))
    graph = KnowledgeGraph.from_edges(head, tail, rel, node_type=node_type, names=[f"n{i}" for i in range(n)],
                                      descriptions=[""] * n, type_names=TYPES, relation_names=RELATIONS,
                                      relation_descriptions=("",) * len(RELATIONS))
    return graph, edge_list, node_type


def reference_walks(edge_list, node_type, source, rels, types, exclude=()):
    """Every walk, enumerated: [(nodes, [degree pairs per step])]."""
    neighbours = {}
    for u, r, v in edge_list:
        neighbours.setdefault((u, r), []).append(v)
        neighbours.setdefault((v, r), []).append(u)

    def step_nodes(u, r, t):
        return [v for v in neighbours.get((u, r), []) if node_type[v] == t]

    walks = [[source]]
    for k, r in enumerate(rels):
        walks = [w + [v] for w in walks for v in step_nodes(w[-1], r, types[k + 1]) if v not in exclude]
    degree_out = lambda u, k: len(step_nodes(u, rels[k], types[k + 1]))  # noqa: E731
    degree_in = lambda v, k: len(step_nodes(v, rels[k], types[k]))  # noqa: E731
    return walks, degree_out, degree_in


def walk_weight(walk, degree_out, degree_in, phi, damping):
    w = 1.0
    for k in range(len(walk) - 1):
        w *= degree_out(walk[k], k) ** -damping * degree_in(walk[k + 1], k) ** -damping * phi[walk[k + 1]]
    return w


METAPATHS = [  # (relations, types) as codes
    ((0, 1, 2), (0, 1, 1, 2)),  # drug -target- gene -ppi- gene -associated with- disease
    ((0, 0), (0, 1, 0)),  # drug -target- gene -target- drug (back to the source's type)
    ((3,), (0, 2)),  # drug -indication- disease
    ((2, 2, 3), (1, 2, 1, 2)),  # gene -assoc- disease -assoc- gene ... then indication: no such step
    ((1, 1, 1), (1, 1, 1, 1)),  # ppi three times (a symmetric layer)
]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("damping", [0.0, 0.4, 1.0])
@pytest.mark.parametrize("grouping", ["sorted", "dense"])
def test_propagation_matches_enumerated_walks(seed, damping, grouping, monkeypatch):
    # the explored flow sums its backward mass by a sort or through arrays over all nodes
    monkeypatch.setattr(walk_engine, "SPARSE_SHARE", 0 if grouping == "sorted" else 10**9)
    graph, edge_list, node_type = random_graph(seed)
    rng = np.random.default_rng(100 + seed)
    phi = {q: rng.uniform(0.1, 3.0, graph.num_nodes) for q in range(2)}
    layers = RelationLayers(graph, damping=damping)
    lanes = []
    for q, (rels, types) in itertools.product(range(2), METAPATHS):
        sources = np.flatnonzero(node_type == types[0])
        source = int(sources[(q * 7 + len(rels)) % len(sources)])
        exclude = (source, int(sources[-1])) if q == 1 else (source,)
        lanes.append(Lane(q, source, rels, types, exclude))
    propagate(layers, lanes, lambda q, nodes: phi[q][nodes])
    checked_walks = 0
    for lane in lanes:
        walks, d_out, d_in = reference_walks(edge_list, node_type, lane.source, lane.relations, lane.types,
                                             set(lane.exclude))
        mass, best = {}, {}
        for w in walks:
            value = walk_weight(w, d_out, d_in, phi[lane.query], damping)
            mass[w[-1]] = mass.get(w[-1], 0.0) + value
            best[w[-1]] = max(best.get(w[-1], 0.0), value)
        checked_walks += len(walks)
        assert lane.end.nodes.tolist() == sorted(mass)
        assert lane.end.mass == pytest.approx([mass[v] for v in sorted(mass)], rel=1e-12)
        assert lane.end.best == pytest.approx([best[v] for v in sorted(best)], rel=1e-12)
        for end in sorted(mass):
            nodes, weight = heaviest_walk(lane, end)
            assert nodes in walks and weight == pytest.approx(best[end], rel=1e-12)
            assert walk_weight(nodes, d_out, d_in, phi[lane.query], damping) == pytest.approx(weight, rel=1e-12)
            # the heaviest walk through each of the best last predecessors, heaviest first
            by_pred = {}
            for w in walks:
                if w[-1] == end:
                    value = walk_weight(w, d_out, d_in, phi[lane.query], damping)
                    by_pred[w[-2]] = max(by_pred.get(w[-2], 0.0), value)
            expected = sorted(by_pred.values(), reverse=True)[:3]
            found = heaviest_walks_through(lane, end, layers, lambda q, nodes: phi[q][nodes], 3)
            assert [x[1] for x in found] == pytest.approx(expected, rel=1e-12)
            for walk, value in found:
                assert walk in walks
                assert walk_weight(walk, d_out, d_in, phi[lane.query], damping) == pytest.approx(value, rel=1e-12)
        # the mass through each node per depth, of walks ending at two chosen ends
        if len(mass) >= 2:
            ends = {sorted(mass)[0]: 1.0, sorted(mass)[-1]: 0.5}
            got = through([lane], [2.0], layers, lambda q, nodes: phi[q][nodes], ends)
            want = {}
            for w in walks:
                if w[-1] in ends:
                    value = 2.0 * ends[w[-1]] * walk_weight(w, d_out, d_in, phi[lane.query], damping)
                    for k in range(1, len(w)):
                        want.setdefault(k, {})[w[k]] = want.setdefault(k, {}).get(w[k], 0.0) + value
            assert sorted(got) == sorted(want)
            for k in want:
                assert sorted(got[k]) == sorted(want[k])
                assert [got[k][v] for v in sorted(want[k])] == pytest.approx([want[k][v] for v in sorted(want[k])],
                                                                             rel=1e-12)
    assert checked_walks > 100  # the graphs are dense enough for the check to mean something


def test_shared_prefixes_give_the_same_steps_as_separate_runs():
    graph, _, node_type = random_graph(5)
    phi = np.random.default_rng(0).uniform(0.5, 2.0, graph.num_nodes)
    source = int(np.flatnonzero(node_type == 0)[0])
    together = propagate(RelationLayers(graph), [Lane(0, source, (0, 1), (0, 1, 1)),
                                                 Lane(0, source, (0, 1, 2), (0, 1, 1, 2))],
                         lambda q, nodes: phi[nodes])
    alone = propagate(RelationLayers(graph), [Lane(0, source, (0, 1), (0, 1, 1))], lambda q, nodes: phi[nodes])
    assert together[0].end.nodes.tolist() == alone[0].end.nodes.tolist()
    assert together[0].end.mass.tolist() == alone[0].end.mass.tolist()
    assert together[1].steps[2] is together[0].steps[2]


def test_build_all_makes_every_typed_layer_of_the_graph():
    graph, edge_list, node_type = random_graph(5)
    layers = RelationLayers(graph)
    layers.build_all()
    expected = set()
    for u, r, v in edge_list:  # each edge gives a layer in both directions
        expected.add((r, int(node_type[u]), int(node_type[v])))
        expected.add((r, int(node_type[v]), int(node_type[u])))
    assert set(layers._layers) == expected
    for (r, a, b), layer in layers._layers.items():  # entries: the CSR rows' (r, b) neighbours of a-nodes
        for u in range(graph.num_nodes):
            nbrs, rels = graph.neighbors(u)
            expected_row = sorted(nbrs[(rels == r) & (node_type[nbrs] == b)].tolist()) if node_type[u] == a else []
            assert sorted(layer.row(u)[0].tolist()) == expected_row


def bincount_step(step, layer, phi, exclude):
    """One step the straightforward way: gather every entry of the support's rows, drop
    excluded targets, sum masses with a bincount over all nodes, take each target's best
    offer and the smallest row position that makes it."""
    owner, cols, weights = [], [], []
    for i, u in enumerate(step.nodes.tolist()):
        lo, hi = int(layer.indptr[u]), int(layer.indptr[u + 1])
        for p in range(lo, hi):
            if int(layer.indices[p]) not in exclude:
                owner.append(i)
                cols.append(int(layer.indices[p]))
                weights.append(float(layer.weights[p]))
    owner, cols, weights = np.array(owner, dtype=np.int64), np.array(cols, dtype=np.int64), np.array(weights)
    n = len(layer.indptr) - 1
    mass = np.bincount(cols, weights=step.mass[owner] * weights, minlength=n)
    best = np.zeros(n)
    np.maximum.at(best, cols, step.best[owner] * weights)
    nodes = np.unique(cols)
    first = [min(i for i, c, w in zip(owner, cols, weights) if c == v and step.best[i] * w == best[v])
             for v in nodes.tolist()]
    return nodes, mass[nodes] * phi[nodes], best[nodes] * phi[nodes], step.nodes[np.array(first, dtype=np.int64)]


@pytest.mark.parametrize("seed", [0, 5])
@pytest.mark.parametrize("ties", [False, True])
def test_step_kernel_gives_the_bits_of_a_bincount_step(seed, ties):
    # ties: no damping and flat potentials, so many predecessors offer the same best walk
    graph, _, node_type = random_graph(seed, n=40, edges=260)
    layers = RelationLayers(graph, damping=0.0 if ties else 0.4)
    rng = np.random.default_rng(seed)
    phi = np.ones(graph.num_nodes) if ties else rng.uniform(0.1, 3.0, graph.num_nodes)
    for rels, types in METAPATHS:
        source = int(np.flatnonzero(node_type == types[0])[0])
        exclude = np.array(sorted({source, 3}), dtype=np.int64)
        step = walk_engine._start(source)
        for k, r in enumerate(rels):
            layer = layers.layer(r, types[k], types[k + 1])
            got = walk_engine.advance(step, layer, lambda nodes: phi[nodes], exclude)
            nodes, mass, best, previous = bincount_step(step, layer, phi, set(exclude.tolist()))
            assert got.nodes.tolist() == nodes.tolist()
            assert got.mass.tobytes() == mass.tobytes() and got.best.tobytes() == best.tobytes()
            assert got.previous.tolist() == previous.tolist()
            if len(nodes) == 0:
                break
            step = got
