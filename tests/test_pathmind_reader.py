"""PathMind's reader (--rerank): its conditional logit against torch autograd and against the
weights that drew a sample, its features against a BM25 and cosines worked by hand, its
reordering against a sort, and answering through it against the priority's top entities
reranked independently."""

import json
import math

import numpy as np
import pytest
import torch

from adapath.datasets.biostrat import query_from_record
from adapath.datasets.generate import QueryGenerator
from adapath.errors import InputError
from adapath.methods.answer_type import wh_phrase
from adapath.methods.pathmind.config import TrainConfig
from adapath.methods.pathmind.infer import PathMind
from adapath.methods.pathmind.reader import (
    FILE,
    Evidence,
    Reader,
    conditional_logit_loss,
    evidence_for,
    fit,
    fit_reader,
    load_reader,
    top_nodes,
)
from adapath.methods.pathmind.train import Features, make_examples, train
from adapath.retrieval.bm25 import TextIndex
from adapath.retrieval.dense import HashingEncoder, NodeEmbeddings
from adapath.sources.synthetic import generate
from tests.conftest import run_cli


def random_groups(rng, count, width=(3, 12), answers=(1, 3)):
    groups = []
    for _ in range(count):
        n = int(rng.integers(*width))
        answer = np.zeros(n, dtype=bool)
        answer[rng.choice(n, size=min(n, int(rng.integers(*answers))), replace=False)] = True
        groups.append((rng.normal(size=(n, 4)), answer))
    return groups


def test_the_conditional_logit_and_its_gradient_are_autograds():
    rng = np.random.default_rng(0)
    groups = random_groups(rng, 25)
    w = rng.normal(size=4)
    loss, grad = conditional_logit_loss(w, groups, l2=0.03)
    wt = torch.tensor(w, requires_grad=True)
    terms = []
    for x, answer in groups:
        s = torch.tensor(x) @ wt
        terms.append(torch.logsumexp(s, 0) - torch.logsumexp(s[torch.tensor(answer)], 0))
    want = torch.stack(terms).mean() + 0.03 * (wt[1:] ** 2).sum()
    want.backward()
    assert loss == pytest.approx(float(want.detach()), rel=1e-10)
    np.testing.assert_allclose(grad, wt.grad.numpy(), rtol=1e-8, atol=1e-12)


def test_the_fit_recovers_the_weights_that_drew_the_answers():
    rng = np.random.default_rng(1)
    truth = np.array([1.5, -1.0, 2.0, 0.5])
    groups = []
    for _ in range(4000):
        x = rng.normal(size=(15, 4))
        x = x[np.argsort(-x[:, 0])]  # as read_groups gives them: best priority first
        p = np.exp(x @ truth)
        answer = np.zeros(15, dtype=bool)
        answer[rng.choice(15, p=p / p.sum())] = True
        groups.append((x, answer))
    reader = fit(groups, l2=0.0)
    np.testing.assert_allclose(reader.weights, truth, atol=0.12)
    assert reader.fitted_on == 4000
    # the Hits@1 it reports, counted here: the answer first by the priority column, and by its scores
    assert reader.val_hits1["priority"] == pytest.approx(np.mean([a[np.argmax(x[:, 0])] for x, a in groups]))
    assert reader.val_hits1["reader"] == pytest.approx(np.mean([a[np.argmax(x @ reader.weights)] for x, a in groups]))


def test_questions_without_an_answer_among_their_top_do_not_move_the_fit():
    rng = np.random.default_rng(2)
    groups = random_groups(rng, 40)
    empty = [(rng.normal(size=(6, 4)), np.zeros(6, dtype=bool)) for _ in range(10)]
    a, b = fit(groups), fit(groups + empty)
    np.testing.assert_allclose(a.weights, b.weights)
    assert (a.fitted_on, b.fitted_on) == (40, 40)


def hand_bm25(docs, query, k1=1.5):
    """BM25 with b = 0 (Lucene's idf), tokens of two or more letters, lower-cased."""
    tokenized = [d.lower().split() for d in docs]
    scores = np.zeros(len(docs))
    for term in set(query.lower().split()):
        df = sum(term in t for t in tokenized)
        if not df:
            continue
        idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
        for i, t in enumerate(tokenized):
            tf = t.count(term)
            scores[i] += idf * tf / (tf + k1)
    return scores


def test_the_features_are_bm25_relative_to_the_best_candidate_and_two_cosines():
    docs = ["alpha beta", "beta gamma gamma", "delta epsilon", "alpha alpha beta gamma", "gamma"]
    rng = np.random.default_rng(3)
    text = rng.normal(size=(len(docs), 6))
    unit = text / np.linalg.norm(text, axis=1, keepdims=True)
    evidence = Evidence(TextIndex.build(docs, b=0.0), unit)
    query, wh = rng.normal(size=6), rng.normal(size=6)
    nodes = np.array([3, 0, 2, 1])
    logits = np.array([2.0, 1.5, 0.3, -1.0])
    x = evidence.features(nodes, logits, "alpha gamma", query, wh)
    bm25 = hand_bm25(docs, "alpha gamma")[nodes]
    np.testing.assert_allclose(x[:, 0], logits)
    cos = lambda v: (text[nodes] @ v) / (np.linalg.norm(text[nodes], axis=1) * np.linalg.norm(v))  # noqa: E731
    np.testing.assert_allclose(x[:, 1], cos(query), rtol=1e-10)
    np.testing.assert_allclose(x[:, 2], bm25 / bm25.max(), rtol=1e-5)
    np.testing.assert_allclose(x[:, 3], cos(wh), rtol=1e-10)
    none = evidence.features(np.array([2]), np.array([0.0]), "alpha", query, wh)  # no candidate matches: 0
    assert none[0, 2] == 0.0


@pytest.mark.parametrize("seed, decimals", [(4, 1), (5, 0), (6, 3)])
def test_the_top_and_the_reordering_against_a_sort(seed, decimals):
    rng = np.random.default_rng(seed)
    n = 40
    priority = np.round(rng.normal(size=n), decimals)  # ties (with 0 decimals, most), broken by the smaller node
    inside = rng.random(n) < 0.7
    priority[~inside] = -np.inf
    top = top_nodes(priority, inside, 8)
    want = sorted(np.flatnonzero(inside), key=lambda v: (-priority[v], v))[:8]
    assert top.tolist() == want
    assert top_nodes(priority, inside, 100).tolist() == sorted(np.flatnonzero(inside), key=lambda v: (-priority[v], v))
    x = rng.normal(size=(8, 4))
    reader = Reader([0.5, 2.0, -1.0, 1.0])
    out = reader.reorder(priority, inside, top, x)
    members = np.flatnonzero(inside)
    order = members[np.lexsort((members, -out[members]))]
    reread = top[np.argsort(-(x @ np.array(reader.weights)), kind="stable")]  # ties: the priority's order
    rest = sorted(set(members) - set(top), key=lambda v: (-priority[v], v))
    assert order.tolist() == reread.tolist() + rest
    assert np.array_equal(out[~inside], priority[~inside])
    others = np.setdiff1d(np.arange(n), top)
    assert np.array_equal(out[others], priority[others])
    tied = reader.reorder(priority, inside, top, np.zeros((8, 4)))  # the reader cannot tell them apart
    assert np.array_equal(members[np.lexsort((members, -tied[members]))], members[np.lexsort((members, -priority[members]))])


def test_a_reader_file_round_trips_and_one_of_other_features_is_one_line(tmp_path):
    reader = Reader([1.0, 0.5, 2.0, 3.0], 30, 12, {"priority": 0.5, "reader": 0.6})
    reader.save(tmp_path)
    assert load_reader(tmp_path) == reader
    assert load_reader(tmp_path / "none") is None
    meta = json.loads((tmp_path / FILE).read_text())
    meta["features"] = ["priority", "question"]
    (tmp_path / FILE).write_text(json.dumps(meta))
    with pytest.raises(InputError, match="a reader of other features"):
        load_reader(tmp_path)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    graph = generate(scale=0.02, seed=3)
    records = QueryGenerator(graph).generate(120, seed=1)
    encoder = HashingEncoder(dim=64)
    examples = make_examples(graph, records, encoder)
    features = Features(graph, NodeEmbeddings(graph, encoder), 3)
    config = TrainConfig(epochs=2, hidden=16, seed=0, rerank=True)
    model, _ = train(graph, examples[:100], features, config)
    return graph, records, encoder, examples, features, config, model


def test_a_fitted_reader_reads_the_validation_fifth(small):
    graph, _, encoder, examples, features, config, model = small
    reader = fit_reader(model, features, examples[:100], config, evidence_for(graph, None, features), encoder)
    assert 0 < reader.fitted_on <= 20  # the held-out fifth of 100 questions, those with an answer in their top 30
    assert len(reader.weights) == 4 and np.all(np.isfinite(reader.weights))
    assert reader.val_hits1["reader"] >= 0 and reader.val_hits1["priority"] >= 0


def test_answering_through_the_reader_reranks_the_prioritys_top(small):
    """With the wh-phrase's weight alone, the answer is the entity of the priority's top 30 whose
    text is nearest the question's wh-phrase, computed here from the texts' embeddings."""
    graph, records, encoder, _, _, config, model = small
    queries = [query_from_record(r, "explicit") for r in records[100:]]
    plain = PathMind(graph, model, config, encoder)
    reader = Reader([0.0, 0.0, 0.0, 1.0], top=30)
    read = PathMind(graph, model, config, encoder, reader=reader)
    examples = plain.examples(queries)
    text = plain.features.text.cpu().numpy().astype(np.float64)
    for q, e, p, result in zip(queries, examples, plain.prioritize(examples), read.answer(queries)):
        candidates = p.inside.copy()
        candidates[e.topics] = False
        members = np.flatnonzero(candidates)
        top = sorted(members, key=lambda v: (-p.priority[v], v))[:30]
        wh = np.asarray(encoder.encode([wh_phrase(q.text)])[0], dtype=np.float64)
        cos = text[top] @ wh / (np.linalg.norm(text[top], axis=1) * np.linalg.norm(wh))
        assert result.answer == graph.name(top[int(np.argmax(cos))])
    assert [r.answer for r in PathMind(graph, model, config, encoder, reader=None).answer(queries)] == \
        [r.answer for r in plain.answer(queries)]


def test_train_with_rerank_writes_the_reader_and_answer_can_leave_it_out(tmp_path, capsys):
    graph = generate(scale=0.01, seed=9)
    graph.save(tmp_path / "kg")
    records = QueryGenerator(graph).generate(30, seed=2)
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    model = tmp_path / "m"
    code, _, err = run_cli(["pathmind", "train", "--kg", tmp_path / "kg", "--queries", f"biostrat:{tmp_path / 'q.jsonl'}",
                            "--out", model, "--epochs", "1", "--encoder", "hashing", "--rerank"], capsys)
    assert code == 0, err
    assert "reader fitted on" in err and (model / FILE).is_file()
    answers = {}
    for rerank in ("1", "0"):
        out = tmp_path / f"a{rerank}.jsonl"
        code, _, err = run_cli(["answer", "--method", "pathmind", "--kg", tmp_path / "kg", "--model", model,
                                "--queries", f"biostrat:{tmp_path / 'q.jsonl'}", "--out", out,
                                "--param", f"rerank={rerank}"], capsys)
        assert code == 0, err
        answers[rerank] = [json.loads(line)["answer_set"] for line in out.read_text().splitlines()]
    assert len(answers["1"]) == len(answers["0"]) == 30
    code, _, err = run_cli(["answer", "--method", "pathmind", "--kg", tmp_path / "kg", "--model", model, "--queries",
                            f"biostrat:{tmp_path / 'q.jsonl'}", "--out", tmp_path / "bad.jsonl", "--param",
                            "rerank=2"], capsys)
    assert code == 2 and err.strip().splitlines()[-1].endswith("choose 1 (the model's reader, when it has one) or 0")
    assert not (tmp_path / "bad.jsonl").exists()
    code, _, err = run_cli(["answer", "--method", "pathmind", "--kg", tmp_path / "kg", "--model", model, "--queries",
                            f"biostrat:{tmp_path / 'q.jsonl'}", "--out", tmp_path / "bad.jsonl", "--param",
                            "backend=gpu"], capsys)
    assert code == 2 and err.strip().splitlines()[-1].endswith("backend='gpu': choose auto, torch, openvino")
    assert not (tmp_path / "bad.jsonl").exists()
