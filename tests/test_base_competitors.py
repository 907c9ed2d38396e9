"""`kg synth --base` (evidence planted onto real base nodes by type and name), related
competitors (`--competitors`) and the answer-describing phrasing, on the committed HPO
excerpt. Expectations are read off the excerpt files by hand."""

import json
from pathlib import Path

import numpy as np
import pytest

from adapath.engine.graph import KnowledgeGraph
from adapath.retrieval.dense import HashingEncoder
from adapath.sources.competitors import answer_pool, plant_competitors, pool_difficulty
from adapath.sources.hpo import load_hpo
from adapath.sources.synthetic import generate
from tests.conftest import run_cli

EXCERPT = Path(__file__).parent / "data" / "hpo_excerpt"
HYPERKALEMIA = "An abnormally increased potassium concentration in the blood."
HAND_TREMOR_RECORD = "Shaking of the hands, as the record describes it."


def _meta(i, name, type_, description=""):
    return {"id": i, "name": name, "type": type_, "description": description}


def _records():
    # 1 hop drug -side effect-> phenotype; the answer "hyperkalemia" (lower case) is the base's
    # "Hyperkalemia"; 1 hop phenotype -associated with-> gene, both in the base and linked there.
    return [
        {"template_id": "t1", "num_hops": 1, "path_node_ids": [900001, 900002],
         "triplets": [["Potassiol", "side effect", "hyperkalemia"]],
         "topic_entities": {"900001": "Potassiol"},
         "answer_entity": {"id": 900002, "name": "hyperkalemia", "type": "effect/phenotype"},
         "node_metadata": [_meta(900001, "Potassiol", "drug", "A potassium-sparing drug."),
                           _meta(900002, "hyperkalemia", "effect/phenotype")],
         "answer_ambiguity": 40, "valid_answer_ids": [900002],
         "explicit_query": "Which side effect of Potassiol is an abnormally increased potassium "
                           "concentration in the blood?",
         "implicit_query": "Which side effect of Potassiol raises blood potassium concentration?",
         "bare_query": "Which effect of Potassiol is an increased potassium concentration in the blood?",
         "data_id": 1},
        {"template_id": "t2", "num_hops": 1, "path_node_ids": [900003, 900004],
         "triplets": [["Hand tremor", "associated with", "ABCB6"]],
         "topic_entities": {"900003": "Hand tremor"},
         "answer_entity": {"id": 900004, "name": "ABCB6", "type": "gene/protein"},
         "node_metadata": [_meta(900003, "Hand tremor", "effect/phenotype", HAND_TREMOR_RECORD),
                           _meta(900004, "ABCB6", "gene/protein", "ATP binding cassette subfamily B member 6.")],
         "answer_ambiguity": 1, "valid_answer_ids": [900004],
         "explicit_query": "q", "implicit_query": "q", "bare_query": "q", "data_id": 2},
        {"template_id": "t3", "num_hops": 1, "path_node_ids": [900005, 900006],
         "triplets": [["Madeupitis", "associated with", "NOTAGENE1"]],
         "topic_entities": {"900005": "Madeupitis"},
         "answer_entity": {"id": 900006, "name": "NOTAGENE1", "type": "gene/protein"},
         "node_metadata": [_meta(900005, "Madeupitis", "disease"), _meta(900006, "NOTAGENE1", "gene/protein")],
         "answer_ambiguity": 1, "valid_answer_ids": [900006],
         "explicit_query": "q", "implicit_query": "q", "bare_query": "q", "data_id": 3},
    ]


@pytest.fixture()
def planted(tmp_path):
    base, _ = load_hpo(EXCERPT)
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    report: dict = {}
    graph = generate(scale=0.002, seed=3, evidence=[records], base=base, report=report)
    return base, graph, records, report


def test_evidence_lands_on_base_nodes_by_type_and_name(planted):
    base, graph, _, report = planted
    # matched: hyperkalemia, Hand tremor, ABCB6; not: Potassiol (drug, not a base type),
    # Madeupitis and NOTAGENE1 (no such names in the excerpt).
    assert report["matched_nodes"] == 3 and report["evidence_nodes"] == 6
    # Hand tremor - ABCB6 is in genes_to_phenotype.txt; the other two triplets are not.
    assert report["matched_edges"] == 1 and report["evidence_edges"] == 3
    # a matched node keeps the base's name; the record has no description: the base's fills it
    node = graph.index_of([900002])[0]
    assert graph.name(node) == "Hyperkalemia" and graph.description(node) == HYPERKALEMIA
    # where the record has a description (PrimeKG's own text), it replaces the base's
    tremor = graph.index_of([900003])[0]
    assert "def: \"An unintentional, oscillating" in (EXCERPT / "hp.obo").read_text()
    assert graph.name(tremor) == "Hand tremor" and graph.description(tremor) == HAND_TREMOR_RECORD
    names = graph.names.to_pylist()
    assert names.count("Hyperkalemia") == 1 and names.count("ABCB6") == 1
    # base types come from the base whole: 106 terms (+0 unmatched planted), 4 + 1 diseases.
    info = graph.info()["node_types"]
    assert info["effect/phenotype"] == 106 and info["disease"] == 5 and info["gene/protein"] == 4
    # the base's edges survive on the matched node: Hyperkalemia is_a child of its parent
    neighbours = {names[v] for v in graph.indices[graph.indptr[node]:graph.indptr[node + 1]].tolist()}
    assert {"Abnormal blood potassium concentration", "ABCB6", "Pseudohyperkalemia, familial, 2, due to red cell leak"} <= neighbours


def test_competitors_are_related_and_never_valid(planted):
    base, graph, records, _ = planted
    record = _records()[0]
    before = answer_pool(graph, record)
    grown, counts = plant_competitors(graph, [records], k=5, seed=0, base=base)
    after = answer_pool(grown, record)
    answer = grown.index_of([900002])[0]
    added = sorted(set(after.tolist()) - set(grown.index_of(graph.node_id[before]).tolist()))
    assert len(added) == min(5, 40 - len(before)) > 0
    assert answer not in added
    for node in added:  # a phenotype, not the answer's name, linked to the topic by side effect
        assert grown.type_name(node) == "effect/phenotype"
        assert grown.name(node).lower() != "hyperkalemia"
    # ambiguity 1 and the pool already holds the answer: nothing added for those records
    assert counts["edges"] == len(added)
    # the rivals are the nearest descriptions: every one shares a word with the answer's text
    words = set(HYPERKALEMIA.lower().replace(".", "").split()) - {"an", "in", "the"}
    assert all(words & set((grown.name(v) + " " + grown.description(v)).lower().replace(".", " ").split())
               for v in added)


def test_competitors_lower_the_answers_cosine_percentile(planted, tmp_path):
    base, graph, records, _ = planted
    grown, _ = plant_competitors(graph, [records], k=5, seed=0, base=base)
    encoder = HashingEncoder()
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps(_records()[0]) + "\n")
    easy = pool_difficulty(graph, [one], encoder, level="implicit")
    hard = pool_difficulty(grown, [one], encoder, level="implicit")
    assert hard["pool_median"] > easy["pool_median"]
    assert hard["percentile_mean"] < easy["percentile_mean"]


def test_cli_synth_base_reports_matches(planted, tmp_path, capsys):
    base_dir = tmp_path / "hpo"
    code, _, err = run_cli(["kg", "import", "hpo", EXCERPT, "--out", base_dir], capsys)
    assert code == 0, err
    _, _, records, _ = planted
    code, _, err = run_cli(["kg", "synth", "--scale", "0.002", "--seed", "3", "--base", base_dir,
                            "--evidence", records, "--competitors", "3", "--out", tmp_path / "kg"], capsys)
    assert code == 0, err
    assert "3 of 6 evidence nodes, 1 of 3 evidence edges" in err
    assert "competitors:" in err
    assert KnowledgeGraph.load(tmp_path / "kg").num_nodes > 0


def test_describe_phrasing_carries_the_answers_definition():
    from adapath.datasets.generate import QueryGenerator

    graph, _ = load_hpo(EXCERPT)
    records = QueryGenerator(graph).generate(6, seed=2, hops=(1,), phrasing="describe")
    obo = (EXCERPT / "hp.obo").read_text()
    for record in records:
        answer = record["answer_entity"]
        assert record["valid_answer_ids"] == [answer["id"]]
        node = graph.index_of([answer["id"]])[0]
        definition_words = graph.description(node).split()
        assert definition_words and f'def: "{graph.description(node)}' in obo
        for level in ("explicit", "implicit", "bare"):
            text = record[f"{level}_query"]
            assert answer["name"].lower() not in text.lower()
            # the definition's later words appear verbatim (the first may name the answer)
            assert " ".join(definition_words[1:6]).rstrip(".,;:") in text
    templated = QueryGenerator(graph).generate(6, seed=2, hops=(1,))
    assert any(len(r["valid_answer_ids"]) > 1 for r in templated)
    with pytest.raises(Exception, match="phrasing"):
        QueryGenerator(graph).generate(1, seed=0, hops=(1,), phrasing="poetic")
    assert np.all([r["bare_query"] != t["bare_query"] for r, t in zip(records, templated)])


def test_records_without_ambiguity_get_k_rivals(planted, tmp_path):
    base, graph, _, _ = planted
    record = dict(_records()[0])
    del record["answer_ambiguity"]
    path = tmp_path / "no_ambiguity.jsonl"
    path.write_text(json.dumps(record) + "\n")
    before = len(answer_pool(graph, record))
    grown, counts = plant_competitors(graph, [path], k=3, seed=0, base=base)
    assert counts["edges"] == 3 and len(answer_pool(grown, record)) == before + 3
