"""KnowledgeGraph: CSR invariants, neighbour queries against networkx, persistence."""

import json

import networkx as nx
import numpy as np
import pytest

from adapath.engine.graph import KnowledgeGraph
from adapath.errors import InputError

TYPES = ("a", "b", "c")
RELS = ("r0", "r1", "r2", "r3")


def random_multigraph(seed, n=40, m=200):
    rng = np.random.default_rng(seed)
    head = rng.integers(0, n, m)
    tail = rng.integers(0, n, m)
    rel = rng.integers(0, len(RELS), m)
    node_type = rng.integers(0, len(TYPES), n).astype(np.int8)
    graph = KnowledgeGraph.from_edges(
        head, tail, rel, node_type=node_type, node_id=np.arange(n) * 3 + 7,
        names=[f"node {i}" for i in range(n)], descriptions=[f"text {i}" for i in range(n)],
        type_names=TYPES, relation_names=RELS, relation_descriptions=tuple(f"about {r}" for r in RELS),
    )
    reference = nx.MultiGraph()
    reference.add_nodes_from(range(n))
    seen = set()
    for h, t, r in zip(head.tolist(), tail.tolist(), rel.tolist()):
        key = (min(h, t), max(h, t), r)
        if h == t or key in seen:
            continue
        seen.add(key)
        reference.add_edge(h, t, key=r, head=h)
    return graph, reference, node_type


@pytest.mark.parametrize("seed", range(5))
def test_neighbours_match_networkx(seed):
    graph, reference, node_type = random_multigraph(seed)
    assert graph.num_edges == reference.number_of_edges()
    assert np.array_equal(graph.degree(), [reference.degree(v) for v in range(graph.num_nodes)])
    for v in range(graph.num_nodes):
        expected_all = sorted((u, k) for _, u, k in reference.edges(v, keys=True))
        got, rels = graph.neighbors(v)
        assert sorted(zip(got.tolist(), rels.tolist())) == expected_all
        for r in range(len(RELS)):
            for t in range(len(TYPES)):
                expected = sorted(u for u, k in expected_all if k == r and node_type[u] == t)
                got, got_rel = graph.neighbors(v, relation=r, node_type=t)
                assert sorted(got.tolist()) == expected
                assert np.all(got_rel == r)
            expected = sorted(u for u, k in expected_all if k == r)
            assert sorted(graph.neighbors(v, relation=RELS[r])[0].tolist()) == expected
        for t in range(len(TYPES)):
            expected = sorted(u for u, _ in expected_all if node_type[u] == t)
            assert sorted(graph.neighbors(v, node_type=TYPES[t])[0].tolist()) == expected


def test_stored_direction_kept():
    graph, reference, _ = random_multigraph(11)
    heads, rels, tails = graph.edges()
    got = sorted(zip(heads.tolist(), rels.tolist(), tails.tolist()))
    expected = sorted((d["head"], k, u if d["head"] == v else v)
                      for u, v, k, d in reference.edges(keys=True, data=True))
    assert got == expected


def test_index_of_external_ids():
    graph, _, _ = random_multigraph(3)
    ids = np.array([7, 10, 7 + 3 * 39])
    assert graph.index_of(ids).tolist() == [0, 1, 39]
    assert graph.index_of([8], missing="ignore").tolist() == [-1]
    with pytest.raises(InputError):
        graph.index_of([8])


def test_named_triplets():
    graph, _, _ = random_multigraph(3)  # external id of node i is 7 + 3 * i
    steps = [[7, "ppi", 10], [10, "target", 8], [7 + 3 * 39, "x", 7]]
    assert graph.named_triplets(steps) == [
        (graph.names[0].as_py(), "ppi", graph.names[1].as_py()),
        None,  # 8 is no node's id
        (graph.names[39].as_py(), "x", graph.names[0].as_py()),
    ]


def test_save_load_round_trip(tmp_path):
    graph, _, _ = random_multigraph(5)
    graph.save(tmp_path / "g")
    loaded = KnowledgeGraph.load(tmp_path / "g")
    assert isinstance(loaded.indices, np.memmap)
    for name in ("indptr", "indices", "rel", "fwd", "node_type", "node_id"):
        assert np.array_equal(getattr(graph, name), getattr(loaded, name)), name
    assert loaded.names.to_pylist() == graph.names.to_pylist()
    assert loaded.descriptions.to_pylist() == graph.descriptions.to_pylist()
    assert loaded.type_names == TYPES and loaded.relation_names == RELS
    assert loaded.relation_descriptions == graph.relation_descriptions
    assert loaded.info() == graph.info()
    unmapped = KnowledgeGraph.load(tmp_path / "g", mmap=False)
    assert np.array_equal(unmapped.indices, graph.indices)


def test_load_rejects_damage(tmp_path):
    graph, _, _ = random_multigraph(6)
    graph.save(tmp_path / "g")
    meta = json.loads((tmp_path / "g" / "graph.json").read_text())
    meta["checksum"] = "0" * 32
    (tmp_path / "g" / "graph.json").write_text(json.dumps(meta))
    with pytest.raises(InputError, match="checksum"):
        KnowledgeGraph.load(tmp_path / "g")
    (tmp_path / "g" / "nodes.parquet").unlink()
    with pytest.raises(InputError, match="nodes.parquet"):
        KnowledgeGraph.load(tmp_path / "g")
    with pytest.raises(InputError, match="not a graph directory"):
        KnowledgeGraph.load(tmp_path / "missing")


def test_validate_catches_bad_csr():
    graph, _, _ = random_multigraph(2)
    graph.indices = graph.indices.copy()
    graph.indices[0] = graph.num_nodes + 5
    with pytest.raises(InputError, match="out of range"):
        graph.validate()


def test_arrays_round_trip_shares_memory_and_rebuilds_the_graph():
    """``to_arrays`` hands out the graph's own arrays; ``from_arrays`` over them, or over
    read-only copies that went through a pickle of plain arrays (as a Ray worker gets them),
    gives a graph whose neighbours match networkx and whose recomputed checksum is the
    original's."""
    import pickle

    import pyarrow as pa

    graph, reference, _ = random_multigraph(3)
    arrays = graph.to_arrays()
    assert all(isinstance(v, (np.ndarray, pa.Array, tuple, str)) for v in arrays.values())
    same = KnowledgeGraph.from_arrays(arrays)
    for name in ("indptr", "indices", "rel", "fwd", "node_type", "node_id"):
        assert np.shares_memory(getattr(same, name), getattr(graph, name)), name
    shipped = pickle.loads(pickle.dumps(arrays, protocol=5))
    for value in shipped.values():
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
    rebuilt = KnowledgeGraph.from_arrays(shipped)
    assert rebuilt._compute_checksum() == graph.checksum() == rebuilt.checksum()
    assert rebuilt.names.to_pylist() == [f"node {i}" for i in range(graph.num_nodes)]
    assert rebuilt.relation_descriptions == tuple(f"about {r}" for r in RELS)
    for v in range(graph.num_nodes):
        expected = sorted((u, k) for _, u, k in reference.edges(v, keys=True))
        got, rels = rebuilt.neighbors(v)
        assert sorted(zip(got.tolist(), rels.tolist())) == expected
    assert list(rebuilt.index_of([7, 10, 13])) == [0, 1, 2]  # node_id = 3 i + 7
