"""Importers on small files in the real formats, checked against hand-worked expectations."""

import csv
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapath.sources.biostrat import load_biostrat
from adapath.sources.edges import load_edges
from adapath.sources.hetionet import load_hetionet
from adapath.sources.primekg import PRIMEKG_COLUMNS, load_primekg

# Hand-written relationships in PrimeKG's format; kg.csv lists each in both directions.
RELATIONSHIPS = [
    ("drug_protein", "target", (0, "DB001", "drug", "Aspirinol", "DrugBank"),
     (2, "1234", "gene/protein", "PTGS9", "NCBI")),
    ("indication", "indication", (0, "DB001", "drug", "Aspirinol", "DrugBank"),
     (3, "5678", "disease", "headache disorder", "MONDO")),
    ("disease_protein", "associated with", (3, "5678", "disease", "headache disorder", "MONDO"),
     (2, "1234", "gene/protein", "PTGS9", "NCBI")),
    ("protein_protein", "ppi", (2, "1234", "gene/protein", "PTGS9", "NCBI"),
     (5, "999", "gene/protein", "ALB2", "NCBI")),
    ("drug_drug", "synergistic interaction", (0, "DB001", "drug", "Aspirinol", "DrugBank"),
     (1, "DB002", "drug", "Warfarinol", "DrugBank")),
    ("drug_protein", "carrier", (1, "DB002", "drug", "Warfarinol", "DrugBank"),
     (5, "999", "gene/protein", "ALB2", "NCBI")),
    ("drug_protein", "enzyme", (1, "DB002", "drug", "Warfarinol", "DrugBank"),
     (5, "999", "gene/protein", "ALB2", "NCBI")),
    ("anatomy_protein_present", "expression present", (4, "UBERON:1", "anatomy", "liver", "UBERON"),
     (5, "999", "gene/protein", "ALB2", "NCBI")),
]


def write_kg_csv(path, rows=RELATIONSHIPS, both=True):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(PRIMEKG_COLUMNS)
        for relation, display, x, y in rows:
            writer.writerow([relation, display, *x, *y])
            if both:
                writer.writerow([relation, display, *y, *x])
    return path


def test_primekg_import_matches_hand_count(tmp_path):
    graph = load_primekg(write_kg_csv(tmp_path / "kg.csv"), block_size=256)
    assert graph.num_nodes == 6
    assert graph.num_edges == len(RELATIONSHIPS)  # both directions stored once
    assert graph.node_id.tolist() == [0, 1, 2, 3, 4, 5]
    assert [graph.name(i) for i in range(6)] == ["Aspirinol", "Warfarinol", "PTGS9",
                                                  "headache disorder", "liver", "ALB2"]
    assert [graph.type_name(i) for i in range(6)] == ["drug", "drug", "gene/protein", "disease",
                                                      "anatomy", "gene/protein"]
    # Warfarinol and ALB2 are joined twice (carrier and enzyme): a multigraph.
    neighbours, rels = graph.neighbors(1, node_type="gene/protein")
    assert sorted(graph.relation_names[r] for r in rels) == ["carrier", "enzyme"]
    assert set(neighbours.tolist()) == {5}
    heads, rels, tails = graph.edges()
    edges = {(int(h), graph.relation_names[r], int(t)) for h, r, t in zip(heads, rels, tails)}
    # the first row's direction is the stored one
    assert (0, "target", 2) in edges and (4, "expression present", 5) in edges
    info = graph.info()
    assert info["relations"]["synergistic interaction"] == 1
    assert info["degree"]["max"] == 4  # ALB2: ppi, carrier, enzyme, expression


def test_primekg_one_direction_and_sparse_ids(tmp_path):
    rows = [("indication", "indication", (15057, "x", "drug", "Rucaparib", "s"),
             (36794, "y", "disease", "ovarian adenocarcinoma", "s"))]
    graph = load_primekg(write_kg_csv(tmp_path / "kg.csv", rows, both=False))
    assert graph.node_id.tolist() == [15057, 36794]
    assert graph.index_of([36794]).tolist() == [1]
    assert graph.num_edges == 1


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_primekg_nodes_table_descriptions(tmp_path, suffix):
    kg = write_kg_csv(tmp_path / "kg.csv")
    table = pa.table({
        "node_index": [0, 3, 7],
        "name": ["Aspirinol", "headache disorder", "isolated pathway"],
        "type": ["drug", "disease", "pathway"],
        "description": ["An analgesic.", "Recurrent head pain.", "A lonely pathway."],
    })
    nodes = tmp_path / f"nodes{suffix}"
    if suffix == ".csv":
        pa.csv.write_csv(table, nodes)
    else:
        pq.write_table(table, nodes)
    graph = load_primekg(kg, nodes=nodes)
    assert graph.description(0) == "An analgesic."
    assert graph.description(3) == "Recurrent head pain."
    assert graph.description(2) == ""
    assert graph.node_id.tolist()[-1] == 7 and graph.type_name(graph.num_nodes - 1) == "pathway"


def test_hetionet_json(tmp_path):
    data = {
        "metanode_kinds": ["Gene", "Compound", "Disease"],
        "nodes": [
            {"kind": "Gene", "identifier": 1017, "name": "CDK2", "data": {"description": "kinase"}},
            {"kind": "Compound", "identifier": "DB00001", "name": "Lepirudin", "data": {}},
            {"kind": "Disease", "identifier": "DOID:1", "name": "disease one", "data": {}},
            {"kind": "Pharmacologic Class", "identifier": "N0001", "name": "class", "data": {}},
        ],
        "edges": [
            {"source_id": ["Compound", "DB00001"], "target_id": ["Gene", 1017], "kind": "binds",
             "direction": "both", "data": {}},
            {"source_id": ["Compound", "DB00001"], "target_id": ["Disease", "DOID:1"],
             "kind": "treats", "direction": "both", "data": {}},
            {"source_id": ["Pharmacologic Class", "N0001"], "target_id": ["Compound", "DB00001"],
             "kind": "includes", "direction": "both", "data": {}},
        ],
    }
    path = tmp_path / "hetionet.json"
    path.write_text(json.dumps(data))
    graph = load_hetionet(path)
    assert graph.num_nodes == 4 and graph.num_edges == 3
    assert graph.type_name(0) == "gene/protein" and graph.type_name(1) == "drug"
    assert graph.type_name(3) == "pharmacologic_class"
    assert graph.description(0) == "kinase"
    neighbours, rels = graph.neighbors(1)
    assert sorted((graph.name(v), graph.relation_names[r]) for v, r in zip(neighbours, rels)) == [
        ("CDK2", "binds"), ("class", "includes"), ("disease one", "treats")]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_generic_edges(tmp_path, suffix):
    nodes = pa.table({"id": [10, 20, 30], "name": ["A", "B", "C"],
                      "type": ["drug", "disease", "gene/protein"], "description": ["a", "b", "c"]})
    edges = pa.table({"head": [10, 10, 30], "relation": ["indication", "target", "associated with"],
                      "tail": [20, 30, 20]})
    write = (lambda t, p: pa.csv.write_csv(t, p)) if suffix == ".csv" else pq.write_table
    write(nodes, tmp_path / f"nodes{suffix}")
    write(edges, tmp_path / f"edges{suffix}")
    graph = load_edges(tmp_path / f"edges{suffix}", tmp_path / f"nodes{suffix}")
    assert graph.node_id.tolist() == [10, 20, 30]
    assert graph.num_edges == 3
    got = {(graph.name(h), graph.relation_names[r], graph.name(t)) for h, r, t in zip(*graph.edges())}
    assert got == {("A", "indication", "B"), ("A", "target", "C"), ("C", "associated with", "B")}


def test_biostrat_evidence_graph_has_every_triplet(dev_jsonl):
    graph = load_biostrat([dev_jsonl])
    edges = {(graph.name(h), graph.relation_names[r], graph.name(t)) for h, r, t in zip(*graph.edges())}
    lookup = {}
    with open(dev_jsonl) as handle:
        records = [json.loads(line) for line in handle]
    for record in records:
        for meta in record["node_metadata"]:
            lookup[meta["id"]] = meta
        for head, relation, tail in record["triplets"]:
            # undirected: a triplet seen reversed in an earlier record keeps that direction
            assert (head, relation, tail) in edges or (tail, relation, head) in edges
    ids = np.array(sorted(lookup))
    assert graph.node_id.tolist() == ids.tolist()
    for i in (0, len(ids) // 2, len(ids) - 1):
        meta = lookup[int(ids[i])]
        assert graph.name(i) == meta["name"] and graph.type_name(i) == meta["type"]
        assert graph.description(i) == meta["description"]
