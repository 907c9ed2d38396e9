"""Reports on a hand-worked pair of real BioStrat-QA records."""

import json

import pytest

from adapath.contract import Result
from adapath.datasets.biostrat import gold_metapath, records_query_set
from adapath.eval.report import write_report
from adapath.sources.biostrat import load_biostrat
from tests.conftest import run_cli


@pytest.fixture(scope="module")
def pair(dev_jsonl):
    records = [json.loads(x) for x in open(dev_jsonl)]
    one = next(r for r in records if r["num_hops"] == 1 and len(r["topic_entities"]) == 1)
    two = next(r for r in records if r["num_hops"] == 2 and len(r["topic_entities"]) == 1)
    return [one, two], load_biostrat([dev_jsonl])


def results_for(one, two):
    p1, p2 = one["path_node_ids"], two["path_node_ids"]
    return [
        {"id": str(one["data_id"]), "level": "explicit", "answer": one["answer_entity"]["name"].upper(),
         "paths": [[[p1[0], one["triplets"][0][1], p1[1]]]], "explored": {"1": [p1[1]]},
         "metapaths": [{"metapath": gold_metapath(one), "score": 1.0}],
         "control": {"answer_type": one["answer_entity"]["type"], "hops": 2}},
        {"id": str(two["data_id"]), "level": "explicit", "answer": two["answer_entity"]["name"][:-2],
         "paths": [[[p2[0], two["triplets"][0][1], p2[1]], [p2[1], "ppi", 999999]]],
         "explored": {"1": [p2[1]], "2": [1, 2]},
         "metapaths": [{"metapath": "drug -[target]- gene/protein", "score": 2.0},
                       {"metapath": gold_metapath(two), "score": 1.0}]},
    ]


def test_hand_worked_report(pair, tmp_path):
    (one, two), graph = pair
    results = [Result.from_json(r) for r in results_for(one, two)]
    metrics = write_report(results, records_query_set([one, two]), graph, tmp_path / "r")
    assert metrics["em_strict"] == 50.0  # the first is an exact (case-folded) match
    assert metrics["em_lenient"] == 100.0  # the second is a prefix of its answer
    cell = metrics["cells"]["explicit"]
    assert cell["hop1_strict"] == 100.0 and cell["hop2_strict"] == 0.0 and cell["avg_strict"] == 50.0
    # hit rate: depth 1 hit twice; depth 2 missed once -> 2/2 and 0/1
    assert metrics["hit_rate_by_depth"] == {"1": 100.0, "2": 0.0}
    # recall: the first steps match gold triplets; the second record's depth 2 does not
    assert metrics["recall_by_depth"] == {"1": 100.0, "2": 0.0}
    # meta-path ranks 1 and 2
    assert metrics["metapath_r1"] == 50.0 and metrics["metapath_r3"] == 100.0
    assert metrics["metapath_mrr"] == pytest.approx(0.75)
    # control signals: only the first result has them: right type, wrong hop count
    assert metrics["control_accuracy"] == {"explicit": {"answer_type": 100.0, "hops": 0.0, "n": 1}}
    for name in ("metrics.json", "table2.md", "table4.md", "table11.md", "table24.md", "hit_rate_by_depth.png",
                 "recall_by_depth.png", "efficiency.md", "report.md"):
        assert (tmp_path / "r" / name).is_file()
    # one method named "results" (the lines carry no method): explicit 1-hop, 2-hop, Avg, Overall
    assert "| results | 100.00 | 0.00 | 50.00 | 50.00 |" in (tmp_path / "r" / "table2.md").read_text()


def test_eval_cli_and_compare(pair, tmp_path, capsys, dev_jsonl):
    (one, two), _ = pair
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps(one) + "\n" + json.dumps(two) + "\n")
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    good = results_for(one, two)
    bad = [dict(r, answer="nothing") for r in good]
    a.write_text("".join(json.dumps(r) + "\n" for r in good))
    b.write_text("".join(json.dumps(r) + "\n" for r in bad))
    code, out, err = run_cli(["eval", "--results", a, "--queries", f"biostrat:{queries}", "--out",
                              tmp_path / "rep", "--ablation", f"full={a}", "--ablation", f"none={b}"], capsys)
    assert code == 0, err
    assert (tmp_path / "rep" / "ablations.png").is_file()
    code, out, err = run_cli(["eval", "compare", a, b, "--queries", f"biostrat:{queries}",
                              "--resamples", "200"], capsys)
    assert code == 0, err
    # strict: a is right on the 1-hop record only; lenient: on both
    assert "| explicit | all | 2 | 50.00 | 0.00 | +50.00 [+0.00, +100.00] | 100.00 | 0.00 | +100.00" in out
    code, out, err = run_cli(["eval", "--results", a], capsys)
    assert code == 2 and "needs --results" in err


def test_gold_set_is_the_same_with_or_without_the_graph(pair, tmp_path, capsys):
    """Real records whose valid answers only the graph names: eval without --kg refuses;
    generated records name every valid answer, so --kg changes nothing."""
    (one, two), graph = pair
    several = one | {"valid_answer_ids": [one["answer_entity"]["id"], two["answer_entity"]["id"]]}
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps(several) + "\n")
    results = tmp_path / "a.jsonl"
    results.write_text(json.dumps({"id": str(one["data_id"]), "level": "explicit",
                                   "answer": two["answer_entity"]["name"]}) + "\n")
    base = ["eval", "--results", results, "--queries", f"biostrat:{queries}"]
    code, _, err = run_cli(base + ["--out", tmp_path / "r0"], capsys)
    assert code == 2 and "pass --kg" in err and not (tmp_path / "r0").exists()
    kg = tmp_path / "kg"
    graph.save(kg)
    code, _, err = run_cli(base + ["--out", tmp_path / "r1", "--kg", kg], capsys)
    assert code == 0, err
    assert json.loads((tmp_path / "r1" / "metrics.json").read_text())["methods"]["a"]["em_strict"] == 100.0
    assert "answer names from the records and the graph (--kg): 1 of 1 questions" in err
    named = several | {"valid_answer_names": [one["answer_entity"]["name"], two["answer_entity"]["name"]]}
    queries.write_text(json.dumps(named) + "\n")
    scores = []
    for extra, name in (([], "r2"), (["--kg", kg], "r3")):
        code, _, err = run_cli(base + ["--out", tmp_path / name] + extra, capsys)
        assert code == 0, err
        scores.append(json.loads((tmp_path / name / "metrics.json").read_text())["methods"]["a"]["em_strict"])
    assert scores == [100.0, 100.0]
