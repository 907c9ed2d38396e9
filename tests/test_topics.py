"""Topic-entity extraction: reverse typed BFS against networkx, and recovery of known topics."""

import json

import networkx as nx
import pytest

from adapath.datasets.generate import QueryGenerator
from adapath.datasets.templates import template_by_id
from adapath.datasets.topics import TopicExtractor
from adapath.retrieval.bm25 import GraphText
from adapath.retrieval.dense import HashingEncoder
from adapath.sources.synthetic import generate
from tests.conftest import run_cli


@pytest.fixture(scope="module")
def setup():
    graph = generate(scale=0.02, seed=41)
    records = [r for r in QueryGenerator(graph).generate(40, seed=5) if len(r["topic_entities"]) == 1]
    extractor = TopicExtractor(graph, GraphText.for_graph(graph, None, b=0.0), HashingEncoder())
    return graph, records, extractor


def test_reverse_bfs_matches_networkx(setup):
    graph, records, extractor = setup
    g = nx.MultiGraph()
    heads, rels, tails = graph.edges()
    for h, r, t in zip(heads.tolist(), rels.tolist(), tails.tolist()):
        g.add_edge(h, t, relation=graph.relation_names[r])
    templates = template_by_id()
    for record in records[:8]:
        template = templates[record["template_id"]]
        answer = int(graph.index_of([record["answer_entity"]["id"]])[0])
        slots, _ = extractor.slot_candidates(template, [answer])
        metapath = template.main.metapath.reversed()
        frontier = {answer}
        for relation, node_type in zip(metapath.relations, metapath.types[1:]):
            frontier = {v for u in frontier for v, data in g[u].items()
                        if graph.type_name(v) == node_type and any(d["relation"] == relation for d in data.values())}
        assert set(slots[0].tolist()) == frontier - {answer}
        topic = int(graph.index_of([int(next(iter(record["topic_entities"])))])[0])
        assert topic in frontier


def test_known_topics_recovered(setup):
    graph, records, extractor = setup
    hits = 0
    for record in records:
        answers = graph.index_of(record["valid_answer_ids"]).tolist()
        choice = extractor.extract(record["bare_query"], answers)
        topic = int(graph.index_of([int(next(iter(record["topic_entities"])))])[0])
        assert choice is not None
        hits += topic in [n for n, _ in choice.candidates[0]] and choice.topics[0] == topic
    assert hits >= 0.8 * len(records)  # the bare question names its topic and nothing else


def test_topics_cli(setup, tmp_path, capsys):
    graph, records, _ = setup
    graph.save(tmp_path / "kg")
    csv_path = tmp_path / "stark.csv"
    rows = ["id,query,answer_ids"] + [f'{r["data_id"]},"{r["bare_query"]}","{json.dumps(r["valid_answer_ids"][:3])}"'
                                      for r in records[:5]]
    rows.append('99,"nothing here",[987654321]')
    csv_path.write_text("\n".join(rows) + "\n")
    code, _, err = run_cli(["dataset", "topics", "--kg", tmp_path / "kg", "--stark", csv_path, "--encoder",
                            "hashing", "--out", tmp_path / "t.jsonl"], capsys)
    assert code == 0, err
    lines = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert len(lines) == 6 and lines[-1]["error"] == "answers not in the graph"
    assert all("template_id" in x for x in lines[:5])
