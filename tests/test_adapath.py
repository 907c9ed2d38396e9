"""AdaPath inference: Eq. 6, meta-path filtering, guided traversal, batching, no gold data."""

import json

import bm25s
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapath.bank.build import BankConfig, build_bank
from adapath.bank.index import BankIndex
from adapath.datasets.biostrat import query_from_record, training_queries
from adapath.datasets.generate import QueryGenerator
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.metapath import MetaPath
from adapath.llm import ScriptedBackend
from adapath.methods.adapath import AdaPath, AdaPathConfig
from adapath.retrieval.dense import HashingEncoder
from adapath.sources.synthetic import generate
from tests.conftest import run_cli

GOLD_FIELDS = ("triplets", "path_node_ids", "answer_entity", "valid_answer_ids", "node_metadata",
               "template_id", "num_hops", "pathway_summary", "answer_ambiguity")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("adapath")
    generate(scale=0.02, seed=21).save(root / "kg")
    graph = KnowledgeGraph.load(root / "kg")
    generator = QueryGenerator(graph)
    train = generator.generate(60, seed=1)
    test = generator.generate(12, seed=2, first_id=1000)
    (root / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in train))
    (root / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in test))
    build_bank(graph, training_queries(train), root / "bank", BankConfig(), graph_dir=root / "kg")
    encoder = HashingEncoder()
    bank = BankIndex(root / "bank", encoder)
    return root, graph, bank, encoder, test


# The settings these tests were written against (AdaPathConfig's defaults until `adapath answer`'s
# became its defaults): the paper's beam, meta-paths cut by the control signals, three of them.
PAPER_BEAM = {"scorer": "beam", "control": "filter", "metapaths": 3}


def hand_bank(tmp_path):
    texts = ["which drug treats migraine headache", "drug for severe migraine attacks",
             "which gene does the drug target", "disease linked to the gene"]
    queries = {
        "id": ["a", "b", "c", "d"], "explicit": texts, "implicit": texts, "bare": texts,
        "topic_id": [1, 2, 3, 4], "topic_type": ["drug", "drug", "drug", "disease"],
        "answer_id": [9, 9, 9, 9], "answer_type": ["disease", "disease", "gene/protein", "gene/protein"],
        "hops": [1, 1, 2, 1], "template_id": ["t"] * 4,
    }
    pq.write_table(pa.table(queries), tmp_path / "queries.parquet")
    rows = [("a", "drug -[indication]- disease", 0), ("b", "drug -[indication]- disease", 0),
            ("b", "drug -[off-label use]- disease", 1), ("c", "drug -[target]- gene/protein", 0),
            ("d", "disease -[associated with]- gene/protein", 0)]
    pq.write_table(pa.table({"query_id": [r[0] for r in rows], "pair": ["direct"] * 5, "hop": [1] * 5,
                             "rank": [r[2] for r in rows], "metapath": [r[1] for r in rows]}),
                   tmp_path / "paths.parquet")
    (tmp_path / "manifest.json").write_text(json.dumps({"parameters": {"level": "explicit"}}))
    return texts


def test_eq6_hand_worked(tmp_path):
    texts = hand_bank(tmp_path)
    encoder = HashingEncoder()
    bank = BankIndex(tmp_path, encoder, k=2)
    question = "what drug treats migraine"
    retrieved = bank.retrieve(encoder.encode([question]), [question], ["drug"])[0]
    # by hand: candidates are the three drug-topic queries
    cos = encoder.encode(texts[:3]) @ encoder.encode([question])[0]
    retriever = bm25s.BM25(b=0.0)
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    tokens = [t for t in bm25s.tokenize([question], stopwords="en", return_ids=False, show_progress=False)[0]
              if t in retriever.vocab_dict]
    bm = retriever.get_scores(tokens)[:3]
    mm = lambda x: (x - x.min()) / (x.max() - x.min())  # noqa: E731
    sim = 0.5 * mm(cos) + 0.5 * mm(bm)
    order = np.argsort(-sim, kind="stable")[:2]
    assert [r.index for r in retrieved] == order.tolist()
    assert [r.similarity for r in retrieved] == pytest.approx(sim[order].tolist())
    pooled = bank.pooled_metapaths(retrieved)
    held = {0: {"drug -[indication]- disease"},
            1: {"drug -[indication]- disease", "drug -[off-label use]- disease"},
            2: {"drug -[target]- gene/protein"}}
    expected = {}
    for r in retrieved:
        for mp in held[r.index]:
            expected[mp] = expected.get(mp, 0) + r.similarity
    assert {str(p.metapath): p.score for p in pooled} == pytest.approx(expected)
    assert [p.score for p in pooled] == sorted((p.score for p in pooled), reverse=True)
    answer_type, hops = bank.vote(retrieved)
    assert (answer_type, hops) == ("disease", 1)


@pytest.mark.parametrize("scorer", ["beam", "walk"])
def test_guided_paths_follow_surviving_metapaths(setup, scorer):
    root, graph, bank, encoder, test = setup
    results = AdaPath(graph, bank, encoder, None, AdaPathConfig(**{**PAPER_BEAM, "scorer": scorer}), graph_dir=root / "kg").answer(
        [query_from_record(r, "explicit") for r in test])
    results = [r.to_json() for r in results]
    guided = 0
    for result, record in zip(results, test):
        if result["fallback"]:
            continue
        guided += 1
        allowed = [MetaPath.parse(m["metapath"]) for m in result["metapaths"]]
        assert result["control"]["answer_type"] is not None
        for mp in allowed:
            assert mp.types[-1] == result["control"]["answer_type"] and mp.hops == result["control"]["hops"]
        topics = [int(t) for t in record["topic_entities"]]
        assert result["paths"] and result["answer"] == graph.name(graph.index_of([result["paths"][0][-1][2]])[0])
        for path in result["paths"]:
            nodes = graph.index_of([path[0][0]] + [step[2] for step in path])
            types = tuple(graph.type_name(v) for v in nodes)
            relations = tuple(step[1] for step in path)
            walked = MetaPath(types, relations)
            if path[0][0] == topics[0]:
                # a surviving meta-path, or a shorter prefix of one that ends in the answer type
                assert walked in allowed or (types[-1] == result["control"]["answer_type"] and any(
                    mp.types[:len(types)] == types and mp.relations[:len(relations)] == relations
                    for mp in allowed))
            else:  # the second topic's one step into an answer both topics reach
                assert len(topics) == 2 and path[0][0] == topics[1] and len(path) == 1
                assert types[-1] == result["control"]["answer_type"]
            for (h, r, t) in path:  # every step is a real edge
                assert graph.index_of([t])[0] in graph.neighbors(graph.index_of([h])[0], relation=r)[0]
        for explored in result["explored"].values():
            assert len(explored) <= 3 * 3 * 5 * max(1, len(allowed))
    assert guided >= len(results) // 2


@pytest.mark.parametrize("scorer", ["beam", "walk"])
def test_scripted_llm_batches_and_no_gold(setup, scorer):
    root, graph, bank, encoder, test = setup
    rules = {"Reply with JSON": lambda p: json.dumps({"answer_type": "drug", "hops": 2}),
             "numbers in braces": "{2, 1}", "wrapped in braces": "{some answer}"}
    backend = ScriptedBackend(rules=rules)
    config = AdaPathConfig(**{**PAPER_BEAM, "scorer": scorer})
    results = AdaPath(graph, bank, encoder, backend, config, graph_dir=root / "kg").answer(
        [query_from_record(r, "implicit") for r in test])
    results = [r.to_json() for r in results]
    n = len(test)
    assert backend.batches[0] == n and backend.batches[-1] == n  # control, ..., answers
    assert all(b <= n for b in backend.batches) and len(backend.batches) <= 2 + config.max_depth
    for result in results:
        assert result["answer"] == "some answer"
        assert result["usage"]["calls"] <= 2 + config.max_depth
        assert result["control"]["source"] == "llm"
    if scorer == "walk":  # control, then one answer prompt: the walks pick what the LLM sees
        walked = [(result, prompt) for result, prompt in zip(results, backend.seen[-n:]) if not result["fallback"]]
        assert walked
        for result, prompt in walked:
            assert result["usage"]["calls"] == 2
            for path in result["paths"]:
                for h, r, t in path:
                    names = graph.named_triplets([[h, r, t]])[0]
                    assert f"({names[0]}, {r}, {names[2]})" in prompt
    # the same run on records stripped of every gold field gives the same output
    stripped = [{k: v for k, v in r.items() if k not in GOLD_FIELDS} for r in test]
    again = AdaPath(graph, bank, encoder, ScriptedBackend(rules=rules), config, graph_dir=root / "kg").answer(
        [query_from_record(r, "implicit") for r in stripped])
    again = [r.to_json() for r in again]
    strip_time = lambda rs: [{k: v for k, v in r.items() if k != "usage"} for r in rs]  # noqa: E731
    assert strip_time(again) == strip_time(results)


def test_ablations(setup):
    root, graph, bank, encoder, test = setup
    free = AdaPath(graph, bank, encoder, None, AdaPathConfig(**{**PAPER_BEAM, "metapath": False}), graph_dir=root / "kg").answer(
        [query_from_record(r, "explicit") for r in test[:4]])
    free = [r.to_json() for r in free]
    assert all(r["fallback"] == "no-metapath" and not r["metapaths"] for r in free)
    plan = "drug -[target]- gene/protein\nnonsense line\ndisease -[indication]- drug"
    backend = ScriptedBackend(rules={"You plan relation paths": plan, "Reply with JSON": "{}"}, default="{x}")
    planned = AdaPath(graph, bank, encoder, backend, AdaPathConfig(**{**PAPER_BEAM, "plan": "llm"}), graph_dir=root / "kg").answer(
        [query_from_record(r, "explicit") for r in test[:4]])
    planned = [r.to_json() for r in planned]
    for result, record in zip(planned, test[:4]):
        topic_type = graph.type_name(graph.index_of([int(next(iter(record["topic_entities"])))])[0])
        for m in result["metapaths"]:
            assert m["metapath"] in plan and m["metapath"].startswith(topic_type)
        assert result["fallback"] == ("" if result["metapaths"] else "free-bfs")


def test_answer_cli_resumes_and_keeps_results_on_llm_failure(setup, tmp_path, capsys):
    root, *_ = setup
    out = tmp_path / "answers.jsonl"
    args = ["answer", "--kg", root / "kg", "--bank", root / "bank", "--queries", f"biostrat:{root / 'test.jsonl'}",
            "--encoder", "hashing", "--out", out, "--batch", "4"]
    code, _, err = run_cli(args + ["--limit", "5"], capsys)
    assert code == 0, err
    assert len(out.read_text().splitlines()) == 5
    with open(out, "a") as handle:
        handle.write('{"id": "torn')  # a crash mid-line
    code, _, err = run_cli(args + ["--level", "all"], capsys)
    assert code == 0, err
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 12 * 3 and len({(x["id"], x["level"]) for x in lines}) == 36
    for line in lines:
        assert set(line) >= {"id", "level", "answer", "raw", "paths", "explored", "metapaths",
                             "control", "fallback", "usage"}
    # a backend that is down: a clear one-line error, earlier results kept
    code, _, err = run_cli(["answer", "--kg", root / "kg", "--bank", root / "bank", "--queries",
                            f"biostrat:{root / 'test.jsonl'}", "--encoder", "hashing", "--out",
                            tmp_path / "llm.jsonl", "--llm", "openai:http://127.0.0.1:9#m"], capsys)
    assert code == 2 and "LLM backend failed" in err and len(err.strip().splitlines()) == 1


def test_answer_cli_refuses_a_folder_that_is_not_a_bank_in_one_line(setup, tmp_path, capsys):
    """No manifest, or a manifest that is not JSON: one line naming the folder or the file."""
    root, *_ = setup
    args = ["answer", "--kg", root / "kg", "--queries", f"biostrat:{root / 'test.jsonl'}", "--encoder", "hashing",
            "--out", tmp_path / "x.jsonl"]
    (tmp_path / "empty").mkdir()
    code, _, err = run_cli(args + ["--bank", tmp_path / "empty"], capsys)
    assert code == 2 and err.strip() == (f"adapath: error: {tmp_path / 'empty'}: not a Path-Bank (no manifest.json; "
                                         "run `adapath bank build`)")
    (tmp_path / "torn").mkdir()
    (tmp_path / "torn" / "manifest.json").write_text('{"graph_checksum": ')
    code, _, err = run_cli(args + ["--bank", tmp_path / "torn"], capsys)
    assert code == 2 and err.strip() == (f"adapath: error: {tmp_path / 'torn' / 'manifest.json'}: not valid JSON "
                                         "(Expecting value, line 1 column 20)")
    assert not (tmp_path / "x.jsonl").exists()


def test_answer_cli_refuses_a_topic_outside_the_graph(setup, tmp_path, capsys):
    """A question whose topic id the graph lacks is named, with the id, before anything runs."""
    root, graph, _, _, test = setup
    record = json.loads(json.dumps(test[0]))
    missing = int(graph.node_id.max()) + 1
    record["topic_entities"] = {str(missing): "nowhere"}
    (tmp_path / "q.jsonl").write_text(json.dumps(record) + "\n")
    code, _, err = run_cli(["answer", "--kg", root / "kg", "--bank", root / "bank", "--queries",
                            f"biostrat:{tmp_path / 'q.jsonl'}", "--encoder", "hashing", "--out", tmp_path / "x.jsonl"],
                           capsys)
    assert code == 2 and err.strip() == (f"adapath: error: question {record['data_id']}: topic id(s) [{missing}] "
                                         f"are not in {root / 'kg'}")
    assert not (tmp_path / "x.jsonl").exists()


def test_answer_cli_refuses_a_foreign_bank_and_mixed_settings(setup, tmp_path, capsys):
    root, *_ = setup
    other = tmp_path / "other-kg"
    generate(scale=0.02, seed=22).save(other)
    args = ["answer", "--bank", root / "bank", "--queries", f"biostrat:{root / 'test.jsonl'}",
            "--encoder", "hashing", "--limit", "2"]
    code, _, err = run_cli(args + ["--kg", other, "--out", tmp_path / "x.jsonl"], capsys)
    assert code == 2 and "built on another graph" in err and not (tmp_path / "x.jsonl").exists()
    out = tmp_path / "a.jsonl"
    code, _, err = run_cli(args + ["--kg", root / "kg", "--out", out, "--no-metapath"], capsys)
    assert code == 0, err
    code, _, err = run_cli(args + ["--kg", root / "kg", "--out", out, "--limit", "4"], capsys)
    assert code == 2 and "made with params=" in err and "--force" in err
    assert len(out.read_text().splitlines()) == 2  # nothing was mixed in
    code, _, err = run_cli(args + ["--kg", root / "kg", "--out", out, "--limit", "4", "--force"], capsys)
    assert code == 0, err
    assert all(not json.loads(x)["fallback"] == "no-metapath" for x in out.read_text().splitlines())


def test_answer_scorer_flag(setup, tmp_path, capsys):
    """--scorer picks AdaPath's scorer (recorded in the settings); a bad one is one line, no file."""
    root, *_ = setup
    args = ["answer", "--kg", root / "kg", "--bank", root / "bank", "--queries", f"biostrat:{root / 'test.jsonl'}",
            "--encoder", "hashing", "--limit", "2"]
    code, _, err = run_cli(args + ["--out", tmp_path / "bad.jsonl", "--scorer", "sideways"], capsys)
    assert code == 2 and "scorer" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "bad.jsonl").exists()
    for scorer in ("beam", "walk"):
        out = tmp_path / f"{scorer}.jsonl"
        code, _, err = run_cli(args + ["--out", out, "--scorer", scorer], capsys)
        assert code == 0, err
        settings = json.loads((tmp_path / f"{scorer}.jsonl.settings.json").read_text())
        assert settings["params"]["scorer"] == scorer
    code, _, err = run_cli(args + ["--method", "io", "--llm", "none", "--out", tmp_path / "io.jsonl",
                                   "--scorer", "beam"], capsys)
    assert code == 2 and "scorer" in err
