"""The PrimeKG-shaped generator: statistics against PrimeKG's targets, planting, determinism."""

import json

import numpy as np
import pytest

from adapath.engine.schema import PRIMEKG_NODE_COUNTS, PRIMEKG_RELATIONS
from adapath.sources.synthetic import generate

SCALE = 0.05


@pytest.fixture(scope="module")
def graph():
    return generate(scale=SCALE, seed=7)


def test_node_type_counts_within_5_percent(graph):
    info = graph.info()
    for type_name, count in PRIMEKG_NODE_COUNTS.items():
        assert abs(info["node_types"][type_name] - count * SCALE) <= 0.05 * count * SCALE + 1, type_name
    assert abs(info["nodes"] - 129_375 * SCALE) <= 0.05 * 129_375 * SCALE


def test_relation_mix_within_5_percent(graph):
    # Targets from PrimeKG's kg.csv row counts (both directions) summed per display relation.
    targets: dict[str, float] = {}
    for relation in PRIMEKG_RELATIONS:
        targets[relation.display] = targets.get(relation.display, 0) + relation.kg_rows / 2 * SCALE
    info = graph.info()
    for display, target in targets.items():
        if target >= 100:  # tiny relations round to a handful of edges at this scale
            assert abs(info["relations"].get(display, 0) - target) <= 0.05 * target, display
    assert abs(info["edges"] - 8_100_498 / 2 * SCALE) <= 0.05 * 8_100_498 / 2 * SCALE
    # mean degree keeps PrimeKG's profile (~63 half-edges per node) at any scale
    assert 55 <= info["degree"]["mean"] <= 70


def test_degrees_are_heavy_tailed(graph):
    degree = graph.degree()
    assert degree.max() > 15 * degree.mean()
    assert np.median(degree) < 0.5 * degree.mean()


def test_relations_join_the_right_types(graph):
    allowed = {}
    for relation in PRIMEKG_RELATIONS:
        allowed.setdefault(relation.display, set()).add(
            frozenset((relation.x_type, relation.y_type)))
    heads, rels, tails = graph.edges()
    types = np.array(graph.type_names)
    for h, r, t in zip(heads[::50], rels[::50], tails[::50]):
        pair = frozenset((types[graph.node_type[h]], types[graph.node_type[t]]))
        assert pair in allowed[graph.relation_names[r]]


def test_names_unique(graph):
    names = graph.names.to_pylist()
    assert len(set(names)) == len(names)


def test_deterministic_per_seed():
    a, b, c = generate(0.01, seed=3), generate(0.01, seed=3), generate(0.01, seed=4)
    assert a.checksum() == b.checksum()
    assert a.names.to_pylist() == b.names.to_pylist()
    assert a.descriptions.to_pylist() == b.descriptions.to_pylist()
    assert a.checksum() != c.checksum()


def test_evidence_planted(dev_jsonl):
    graph = generate(scale=0.02, seed=1, evidence=[dev_jsonl])
    records = [json.loads(line) for line in open(dev_jsonl)]
    meta = {m["id"]: m for r in records for m in r["node_metadata"]}
    index = graph.index_of(sorted(meta))
    for node_id, i in zip(sorted(meta), index):
        assert graph.name(i) == meta[node_id]["name"]
        assert graph.type_name(i) == meta[node_id]["type"]
        assert graph.description(i) == meta[node_id]["description"]
    for record in records:
        path = graph.index_of(record["path_node_ids"])
        for i, (_, relation, _) in enumerate(record["triplets"]):
            neighbours, _ = graph.neighbors(path[i], relation=relation)
            assert path[i + 1] in neighbours.tolist(), (record["data_id"], i)
    # background ids never alias an id a record mentions (valid answers included)
    mentioned = {int(v) for r in records for v in r["valid_answer_ids"] + r["path_node_ids"]}
    planted = set(meta)
    background = set(graph.node_id.tolist()) - planted
    assert not background & mentioned
    # real names are never reused by distractors
    real = {m["name"].lower() for m in meta.values()}
    distractor_names = [graph.name(i) for i in range(graph.num_nodes)
                        if int(graph.node_id[i]) not in planted]
    assert not {n.lower() for n in distractor_names} & real
    # planted nodes are wired into the background, not left as an island
    planted_index = graph.index_of(sorted(planted))
    assert np.median(graph.degree()[planted_index]) > 3


def test_distractor_text_drawn_from_real_descriptions(dev_jsonl):
    graph = generate(scale=0.01, seed=2, description_sources=[dev_jsonl])
    records = [json.loads(line) for line in open(dev_jsonl)]
    real_drug_text = " ".join(m["description"] for r in records for m in r["node_metadata"]
                              if m["type"] == "drug")
    drugs = np.flatnonzero(graph.node_type == graph.type_code("drug"))
    # each distractor drug's first sentence comes from a real drug description (name swapped)
    sample = [graph.description(i) for i in drugs[:20]]
    hits = sum(any(word in real_drug_text for word in text.split(". ")[0].split()[3:9])
               for text in sample)
    assert hits >= 15
