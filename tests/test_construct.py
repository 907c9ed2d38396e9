"""BioStrat-QA construction on a generated graph: real paths, complete answers, no leakage,
disjoint splits; LLM surface forms that leak are refused."""

import json

import pytest

from adapath.datasets.construct import BuildConfig, _rewrite, build_dataset
from adapath.llm import ScriptedBackend
from adapath.sources.synthetic import generate
from tests.conftest import run_cli


@pytest.fixture(scope="module")
def graph():
    return generate(scale=0.02, seed=31)


def test_construction_properties(graph):
    splits, stats = build_dataset(graph, BuildConfig(per_template=12, min_grounding=3, max_answers=30, seed=4))
    everything = [r for records in splits.values() for r in records]
    assert stats["templates_kept"] + len(stats["dropped_templates"]) == stats["templates_total"]
    sizes = [len(splits[n]) for n in ("train", "dev", "test")]
    assert abs(sizes[0] / sum(sizes) - 0.5) < 0.06 and abs(sizes[2] / sum(sizes) - 0.3) < 0.06
    paths = {name: {tuple(r["path_node_ids"]) for r in records} for name, records in splits.items()}
    assert not (paths["train"] & paths["dev"]) and not (paths["train"] & paths["test"])
    assert not (paths["dev"] & paths["test"])
    assert len({r["data_id"] for r in everything}) == len(everything)
    for record in everything:
        nodes = graph.index_of(record["path_node_ids"])
        for i, (head, relation, tail) in enumerate(record["triplets"]):
            a, b = nodes[i], nodes[i + 1]
            assert b in graph.neighbors(a, relation=relation)[0]
            assert {graph.name(a), graph.name(b)} == {head, tail}
        assert len(record["valid_answer_ids"]) <= 30
        name = record["answer_entity"]["name"].lower()
        assert all(name not in record[f"{lv}_query"].lower() for lv in ("explicit", "implicit", "bare"))


def test_llm_surface_forms_and_leak_refusal(graph):
    backend = ScriptedBackend(rules={"Summarise this biomedical pathway": "A summary of a pathway.",
                                     "paraphrases the intermediate": "Which target sits down this pathway?"},
                              default="Which entity relates to the topic?")
    splits, _ = build_dataset(graph, BuildConfig(per_template=4, min_grounding=2, seed=1), llm=backend)
    records = [r for rs in splits.values() for r in rs]
    assert all(r["implicit_query"] == "Which target sits down this pathway?" for r in records)
    assert all(r["bare_query"] == "Which entity relates to the topic?" for r in records)
    multi = [r for r in records if r["num_hops"] >= 2]
    assert multi and all(r["pathway_summary"] == "A summary of a pathway." for r in multi)
    # summary prompts describe targets without naming them
    summaries = [p for p in backend.seen if p.startswith("Summarise this biomedical pathway")]
    record = multi[0]
    hidden = [m["name"] for m in record["node_metadata"][1: record["num_hops"] + 1]]
    start = record["node_metadata"][0]["name"]
    matching = [p for p in summaries if f"Start: {start}" in p]
    assert matching and not any(f"a {m['type']}: {name}" in p for p in matching
                                for m, name in zip(record["node_metadata"][1:], hidden))


def test_leaking_rewrite_is_refused(graph):
    splits, _ = build_dataset(graph, BuildConfig(per_template=3, min_grounding=2, seed=2))
    record = dict(splits["train"][0])
    templated = record["explicit_query"]
    answer = record["answer_entity"]["name"]
    backend = ScriptedBackend(rules={"names every intermediate": f"Is the answer {answer}?"},
                              default="A clean question?")
    _rewrite(graph, [record], backend)
    assert record["explicit_query"] == templated  # the leaking reply was refused
    assert record["bare_query"] == "A clean question?"


def test_dataset_build_cli(graph, tmp_path, capsys):
    graph.save(tmp_path / "kg")
    code, _, err = run_cli(["dataset", "build", "--kg", tmp_path / "kg", "--out", tmp_path / "ds",
                            "--per-template", "6", "--min-grounding", "2"], capsys)
    assert code == 0, err
    for name in ("train", "dev", "test"):
        lines = (tmp_path / "ds" / f"{name}.jsonl").read_text().splitlines()
        assert lines and all(json.loads(x)["template_id"] for x in lines)
    assert json.loads((tmp_path / "ds" / "stats.json").read_text())["templates_kept"] > 30
