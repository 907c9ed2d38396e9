"""BM25 batch scoring against bm25s's own per-query scores; the corridor K ladder."""

import bm25s
import networkx as nx
import numpy as np
import pytest

from adapath.engine.corridor import CorridorBuilder
from adapath.retrieval.bm25 import TextIndex, minmax_columns
from tests.helpers import random_graph

CORPUS = [
    "aspirin inhibits prostaglandin synthesis and reduces fever",
    "warfarin is an anticoagulant used to prevent blood clots",
    "the liver metabolises many drugs through cytochrome enzymes",
    "fever and inflammation respond to nonsteroidal drugs",
    "clots in blood vessels cause stroke",
]
QUERIES = ["which drug reduces fever", "blood clots anticoagulant warfarin warfarin", "zebra"]


@pytest.mark.parametrize("b", [0.0, 0.75])
def test_batch_scores_equal_bm25s_per_query(b):
    index = TextIndex.build(CORPUS, k1=1.5, b=b)
    batch = index.scores(QUERIES)
    retriever = bm25s.BM25(k1=1.5, b=b)
    retriever.index(bm25s.tokenize(CORPUS, stopwords="en", show_progress=False), show_progress=False)
    for j, query in enumerate(QUERIES):
        tokens = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
        tokens = [t for t in tokens if t in retriever.vocab_dict]
        expected = retriever.get_scores(tokens) if tokens else np.zeros(len(CORPUS))
        assert np.allclose(batch[:, j], expected, atol=1e-6)
    normalized = minmax_columns(batch)
    assert np.allclose(normalized[:, 2], 0)  # no known token: a flat column
    assert normalized[:, 0].min() == 0 and normalized[:, 0].max() == 1


def test_normalized_into_a_reused_buffer_is_min_max_of_bm25s():
    """Normalized in place into a buffer that held other values: each column is
    (score - min) / (max - min) of bm25s's scores (b = 0.75), a flat column 0."""
    index = TextIndex.build(CORPUS, k1=1.5, b=0.75)
    retriever = bm25s.BM25(k1=1.5, b=0.75)
    retriever.index(bm25s.tokenize(CORPUS, stopwords="en", show_progress=False), show_progress=False)
    buffer = np.full((len(CORPUS), len(QUERIES)), 7.0, dtype=np.float32)
    out = index.normalized(QUERIES, out=buffer)
    assert out is buffer
    for j, query in enumerate(QUERIES):
        tokens = [t for t in bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
                  if t in retriever.vocab_dict]
        raw = retriever.get_scores(tokens) if tokens else np.zeros(len(CORPUS))
        span = raw.max() - raw.min()
        expected = (raw - raw.min()) / span if span > 0 else np.zeros(len(CORPUS))
        assert np.allclose(out[:, j], expected, atol=1e-6)


def test_length_agnostic_option_ignores_length():
    index = TextIndex.build(["fever", "fever " + "padding " * 30], b=0.0)
    scores = index.scores(["fever"])
    assert scores[0, 0] == pytest.approx(scores[1, 0])


def test_save_load(tmp_path):
    index = TextIndex.build(CORPUS)
    index.save(tmp_path / "i")
    loaded = TextIndex.load(tmp_path / "i")
    assert np.allclose(loaded.scores(QUERIES), index.scores(QUERIES))


def test_an_index_rebuilt_from_its_arrays_scores_as_bm25s():
    """``to_arrays`` -> a pickle of plain arrays, read-only (as a Ray worker gets them) ->
    ``from_arrays``: bm25s's own per-query scores; a ``GraphText`` so rebuilt gives the
    similarities of the one it came from."""
    import pickle

    from adapath.retrieval.bm25 import GraphText

    index = TextIndex.build(CORPUS, k1=1.5, b=0.75)
    arrays = pickle.loads(pickle.dumps(index.to_arrays(), protocol=5))
    for name in ("data", "indices", "indptr"):
        arrays[name].setflags(write=False)
    shipped = TextIndex.from_arrays(arrays)
    retriever = bm25s.BM25(k1=1.5, b=0.75)
    retriever.index(bm25s.tokenize(CORPUS, stopwords="en", show_progress=False), show_progress=False)
    scores = shipped.scores(QUERIES)
    for j, query in enumerate(QUERIES):
        tokens = [t for t in bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
                  if t in retriever.vocab_dict]
        expected = retriever.get_scores(tokens) if tokens else np.zeros(len(CORPUS))
        assert np.allclose(scores[:, j], expected, atol=1e-6)
    text = GraphText(index, TextIndex.build(["target of", "treats", "causes fever"], b=0.0))
    rebuilt = GraphText.from_arrays(pickle.loads(pickle.dumps(text.to_arrays(), protocol=5)))
    for got, expected in zip(rebuilt.similarity(QUERIES), text.similarity(QUERIES)):
        assert np.array_equal(got, expected)


@pytest.mark.parametrize("seed", range(6))
def test_corridor_ladder_matches_reference(seed):
    graph = random_graph(seed, n=80, m=140)
    rng = np.random.default_rng(seed)
    rho = rng.random(graph.num_nodes)
    topic, answer = (int(v) for v in rng.choice(graph.num_nodes, 2, replace=False))
    ladder = (5, 10, 20, 40)
    corridor = CorridorBuilder(graph, ladder=ladder, max_hop=5).build(rho, topic, answer)
    g = nx.Graph()
    heads, _, tails = graph.edges()
    g.add_edges_from(zip(heads.tolist(), tails.tolist()))
    g.add_nodes_from(range(graph.num_nodes))
    order = np.argsort(-rho, kind="stable")
    for k in ladder:
        nodes = set(order[:k].tolist()) | {topic, answer}
        if nx.has_path(g.subgraph(nodes), topic, answer):
            assert set(corridor.nodes.tolist()) == nodes and corridor.k == k
            assert corridor.fallback == ("" if k == ladder[0] else "ladder")
            return
    try:
        distance = nx.shortest_path_length(g, topic, answer)
    except nx.NetworkXNoPath:
        distance = None
    if distance is None or distance > 5:
        assert corridor.fallback == "unreachable"
    else:
        assert corridor.fallback == "bounded-search"
        assert nx.has_path(g.subgraph(corridor.nodes.tolist()), topic, answer)
        on_paths = {v for p in nx.all_shortest_paths(g, topic, answer) for v in p}
        assert set(corridor.nodes.tolist()) <= on_paths
