"""Candidate groups of the guided / free traversal against a plain per-neighbour reference."""

import numpy as np
import pytest

from adapath.engine.traverse import Beam, TraversalState
from tests.helpers import random_graph


def reference_groups(state, prefilter, limit):
    """One neighbour at a time, as the method describes: per beam, the neighbours matching
    the next step (or all, free), minus the beam's own path, merged per (parent, relation,
    type) in first-seen order; meta-paths of a node reached twice are united; a group over
    ``limit`` keeps its best ``limit`` by prefilter score (ties: lower node), in order; a group
    left empty is dropped."""
    g, d = state.graph, state.depth
    merged = {}
    for b, beam in enumerate(state.beams):
        parent = beam.nodes[-1]
        lo, hi = int(g.indptr[parent]), int(g.indptr[parent + 1])
        for k in range(lo, hi):
            v, r = int(g.indices[k]), int(g.rel[k])
            t = int(g.node_type[v])
            if state.free:
                ms = ()
            else:
                ms = tuple(m for m in beam.metapaths if len(state.metapaths[m][1]) > d
                           and state.metapaths[m][1][d] == r and state.metapaths[m][0][d + 1] == t)
                if not ms:
                    continue
            bucket = merged.setdefault((parent, r, t), {})  # a step's place is set when first matched
            if v in beam.nodes:
                continue
            if v in bucket:
                bucket[v] = (bucket[v][0], tuple(sorted(set(bucket[v][1]) | set(ms))))
            else:
                bucket[v] = (b, ms)
    out = []
    for (parent, r, t), bucket in merged.items():
        items = list(bucket.items())
        if not items:
            continue
        if len(items) > limit:
            scores = {v: prefilter(np.array([v]))[0] for v, _ in items}
            best = sorted(items, key=lambda item: (-scores[item[0]], item[0]))[:limit]
            items = [item for item in items if item in best]
        out.append((parent, r, t, [(v, b, ms) for v, (b, ms) in items]))
    return out


def as_tuples(groups):
    return [(gr.parent, gr.relation, gr.node_type, [(c.node, c.beam, c.metapaths) for c in gr.candidates])
            for gr in groups]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("free", [True, False])
def test_groups_match_reference(seed, free):
    graph = random_graph(seed, n=30, m=400)
    rng = np.random.default_rng(seed)
    scores = rng.random(graph.num_nodes)
    scores[rng.integers(0, graph.num_nodes, 5)] = 0.5  # ties broken by node id
    metapaths = [] if free else [
        (rng.integers(0, 3, 4), rng.integers(0, 4, 3)) for _ in range(4)]
    state = TraversalState(graph, 0, metapaths, 3)
    # several beams, two of them ending at the same parent, each with its own path
    parents = rng.integers(0, graph.num_nodes, 3).tolist()
    follow = (0, 1, 2, 3) if not free else ()
    state.beams = [Beam([int(rng.integers(0, 30)), parents[0]], [0], follow),
                   Beam([int(rng.integers(0, 30)), parents[0]], [1], follow[::2]),
                   Beam([parents[1]], [], follow[1:]),
                   Beam([parents[2], parents[0], parents[1]], [0, 1], follow)]
    state.depth = 1
    if not free:  # make step 1 of the meta-paths match real edges of the parents
        for m, (types, rels) in enumerate(metapaths):
            nbrs, nrels = graph.neighbors(parents[m % 3])
            if len(nbrs):
                rels[1], types[2] = nrels[0], graph.node_type[nbrs[0]]
    for limit in (3, 50):
        prefilter = lambda nodes: scores[nodes]  # noqa: E731
        got = as_tuples(state.groups(prefilter=prefilter, limit=limit))
        assert got == reference_groups(state, prefilter, limit)
        assert got  # not vacuous


@pytest.mark.parametrize("seed", range(4))
def test_reach_matches_walk_by_walk_reference(seed):
    from adapath.engine.metapath import MetaPath
    from adapath.engine.traverse import reach
    from tests.helpers import RELS, TYPES

    graph = random_graph(seed, n=300, m=1200 if seed % 2 else 6000)  # sparse and dense: both branches
    rng = np.random.default_rng(seed)
    for _ in range(20):
        hops = int(rng.integers(1, 4))
        types = [TYPES[i] for i in rng.integers(0, 3, hops + 1)]
        rels = [RELS[i] for i in rng.integers(0, 4, hops)]
        mp = MetaPath.parse(" ".join(f"{t} -[{r}]-" for t, r in zip(types, rels)) + f" {types[-1]}")
        sources = rng.integers(0, graph.num_nodes, 3)
        frontier = {int(s) for s in sources if graph.type_name(int(s)) == types[0]}
        for r, t in zip(rels, types[1:]):  # by hand: every half-edge of every frontier node
            frontier = {int(graph.indices[k]) for u in frontier
                        for k in range(graph.indptr[u], graph.indptr[u + 1])
                        if graph.relation_names[graph.rel[k]] == r and graph.type_name(int(graph.indices[k])) == t}
        assert reach(graph, sources, mp).tolist() == sorted(frontier)


@pytest.mark.parametrize("seed", range(4))
def test_realizable_is_reach_nonempty(seed):
    from adapath.engine.metapath import MetaPath
    from adapath.engine.traverse import reach, realizable
    from tests.helpers import RELS, TYPES

    graph = random_graph(seed, n=200, m=900)
    rng = np.random.default_rng(seed)
    answers = []
    for _ in range(60):
        hops = int(rng.integers(1, 4))
        types = [TYPES[i] for i in rng.integers(0, 3, hops + 1)]
        rels = [RELS[i] for i in rng.integers(0, 4, hops)]
        mp = MetaPath.parse(" ".join(f"{t} -[{r}]-" for t, r in zip(types, rels)) + f" {types[-1]}")
        source = int(rng.integers(0, graph.num_nodes))
        answers.append(realizable(graph, source, mp))
        assert answers[-1] == (len(reach(graph, [source], mp)) > 0)
    assert any(answers) and not all(answers)
