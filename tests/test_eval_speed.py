"""eval at full size: traversability from both ends equals the plain typed walk, a whole
report is the same as with a straightforward walk, and eval shows its progress in a log."""

import json
import random

import numpy as np
import pytest

from adapath.contract import Result
from adapath.datasets.biostrat import records_query_set
from adapath.datasets.generate import QueryGenerator
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.traverse import WalkChecker
from adapath.eval import scoring
from adapath.eval.report import build_report
from adapath.sources.synthetic import generate
from tests.conftest import run_cli
from tests.helpers import RELS, TYPES, random_graph


def walk_set(graph, source, types, relations):
    """Every node a typed walk from ``source`` reaches: one neighbour at a time, as a set."""
    if graph.node_type[source] != types[0]:
        return set()
    frontier = {source}
    for hop, relation in enumerate(relations):
        nxt = set()
        for u in frontier:
            lo, hi = int(graph.indptr[u]), int(graph.indptr[u + 1])
            for k in range(lo, hi):
                v = int(graph.indices[k])
                if graph.rel[k] == relation and graph.node_type[v] == types[hop + 1]:
                    nxt.add(v)
        frontier = nxt
    return frontier


def text(graph, types, relations):
    parts = [graph.type_names[types[0]]]
    for r, t in zip(relations, types[1:]):
        parts.append(f"-[{graph.relation_names[r]}]- {graph.type_names[t]}")
    return " ".join(parts)


@pytest.mark.parametrize("seed", range(4))
def test_walk_checker_equals_the_plain_walk(seed):
    graph = random_graph(seed, n=60, m=400)
    checker = WalkChecker(graph)
    rng = random.Random(seed)
    for _ in range(40):
        hops = rng.randint(0, 4)
        types = [rng.randrange(len(TYPES)) for _ in range(hops + 1)]
        relations = [rng.randrange(len(RELS)) for _ in range(hops)]
        source = rng.randrange(graph.num_nodes)
        reached = walk_set(graph, source, types, relations) if hops else (
            {source} if graph.node_type[source] == types[0] else set())
        metapath = text(graph, types, relations)
        for target in range(graph.num_nodes):
            assert checker.reaches(source, metapath, target) == (target in reached), (metapath, source, target)
    assert not checker.reaches(0, "a -[no such relation]- b", 1)
    assert not checker.reaches(0, "not a meta-path", 1)


def plain_reaches(self, topic_id, metapath, answer_id):
    """The reference traversability, as eval computed it before: the whole reach set of the
    topic (``engine.traverse.reach``, mask by mask), then whether it holds the answer."""
    from adapath.engine.metapath import MetaPath
    from adapath.engine.traverse import reach

    graph = self.graph
    topic, answer = (int(v) for v in graph.index_of([topic_id, answer_id], missing="ignore"))
    try:
        parsed = MetaPath.parse(metapath)
    except Exception:  # noqa: BLE001 - anything unusable reaches nothing, as documented
        return False
    return topic >= 0 and answer >= 0 and bool(np.isin(answer, reach(graph, [topic], parsed)))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A generated graph, 40 questions, and results that list meta-paths of random typed walks
    from each topic (some reach the answer, most do not) beside the gold one."""
    root = tmp_path_factory.mktemp("eval_speed")
    generate(scale=0.02, seed=7).save(root / "kg")
    graph = KnowledgeGraph.load(root / "kg")
    records = QueryGenerator(graph).generate(40, seed=3)
    (root / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    rng = np.random.default_rng(0)
    lines = []
    for record in records:
        topic = int(graph.index_of([record["path_node_ids"][0]])[0])
        listed = []
        for _ in range(12):
            hops, node, types, relations = int(rng.integers(1, 4)), topic, [int(graph.node_type[topic])], []
            for _ in range(hops):
                nbrs, rels = graph.neighbors(node)
                if len(nbrs) == 0:
                    break
                k = int(rng.integers(len(nbrs)))
                node = int(nbrs[k])
                relations.append(int(rels[k]))
                types.append(int(graph.node_type[node]))
            if relations:
                listed.append({"metapath": text(graph, types, relations), "score": 1.0})
        for level in ("explicit", "bare"):
            lines.append({"id": str(record["data_id"]), "level": level, "method": "m", "answer": "x",
                          "ranked_metapaths": listed, "metapaths": listed[:3]})
    (root / "m.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root, graph, records, lines


def test_report_equals_the_one_with_plain_walks(world, monkeypatch):
    root, graph, records, lines = world
    results = [Result.from_json(x) for x in lines]
    fast = build_report({"m": results}, records_query_set(records), graph, resamples=50)
    monkeypatch.setattr(scoring.Traversability, "reaches", plain_reaches)
    plain = build_report({"m": results}, records_query_set(records), graph, resamples=50)
    assert fast == plain
    flags = fast["methods"]["m"]["metapath_by_level"]["explicit"]["all"]
    assert flags["traversability_n"] > 100 and 0 < flags["traversability"] < 100  # both outcomes occur


def test_eval_logs_its_progress(world, tmp_path, capsys, monkeypatch):
    root, *_ = world
    monkeypatch.setenv("ADAPATH_PROGRESS_INTERVAL", "0")  # a line per result in a log
    code, _, err = run_cli(["eval", "--results", root / "m.jsonl", "--queries", f"biostrat:{root / 'q.jsonl'}",
                            "--kg", root / "kg", "--out", tmp_path / "rep", "--resamples", "10"], capsys)
    assert code == 0, err
    lines = [x for x in err.splitlines() if x.startswith("eval: ")]
    # the first result's time (warm-up) gives no estimate; the second line has one
    assert lines[0].startswith("eval: 1/80 results (1%), first step took ") and "ETA" not in lines[0]
    assert lines[1].startswith("eval: 2/80 results (2%)") and "ETA" in lines[1]
    assert any(x.startswith("eval: 80/80 results (100%)") for x in lines)
    assert lines[-1].startswith("eval: 80 results in ")
