"""Path-Bank construction against an independent re-computation, and crash-safe resume."""

import json
import os
import signal
import subprocess
import sys
import time

import bm25s
import networkx as nx
import numpy as np
import pyarrow.parquet as pq
import pytest
import scipy.linalg

from adapath.datasets.generate import QueryGenerator
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.pathbank import BankConfig, PathBankBuilder, bank_info
from adapath.engine.synthetic import generate
from tests.conftest import run_cli


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    root = tmp_path_factory.mktemp("bank")
    graph = generate(scale=0.01, seed=5)
    graph.save(root / "kg")
    graph = KnowledgeGraph.load(root / "kg")
    records = QueryGenerator(graph).generate(12, seed=3)
    with open(root / "train.jsonl", "w") as handle:
        for r in records:
            handle.write(json.dumps(r) + "\n")
    config = BankConfig(batch=5)
    PathBankBuilder(graph, config, graph_dir=root / "kg").build(records, root / "bank")
    return root, graph, records, config


def reference_query(graph, text, topic, answer, config):
    """Eq. 1 weights, dense PPR solve, corridor and Eq. 5 costs, written from scratch."""
    texts = [f"{graph.name(i)} {graph.description(i)}" for i in range(graph.num_nodes)]
    rel_texts = [f"{n} {d}" for n, d in zip(graph.relation_names, graph.relation_descriptions)]

    def similarity(corpus):
        retriever = bm25s.BM25(k1=config.bm25_k1, b=config.bm25_b)
        retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
        tokens = bm25s.tokenize([text], stopwords="en", return_ids=False, show_progress=False)[0]
        tokens = [t for t in tokens if t in retriever.vocab_dict]
        scores = retriever.get_scores(tokens) if tokens else np.zeros(len(corpus))
        span = scores.max() - scores.min()
        return (scores - scores.min()) / span if span > 0 else np.zeros(len(corpus))

    s_node, s_rel = similarity(texts), similarity(rel_texts)
    heads, rels, tails = graph.edges()
    n = graph.num_nodes
    w = config.beta * s_rel[rels] + (1 - config.beta) / 2 * (s_node[heads] + s_node[tails]) + config.eps
    matrix = np.zeros((n, n))
    np.add.at(matrix, (tails, heads), w)
    np.add.at(matrix, (heads, tails), w)
    transition = matrix / np.where(matrix.sum(axis=0) > 0, matrix.sum(axis=0), 1)

    def ppr(seed):
        s = np.zeros(n)
        s[seed] = 1
        return scipy.linalg.solve(np.eye(n) - (1 - config.eta) * transition, config.eta * s)

    rho = ppr(topic) * ppr(answer)
    order = np.lexsort((np.arange(n), -rho))
    for k in config.ladder:
        nodes = set(order[:k].tolist()) | {topic, answer}
        g = nx.Graph()
        g.add_nodes_from(nodes)
        for h, r, t, weight in zip(heads, rels, tails, w):
            if h in nodes and t in nodes:
                rho_bar = 0.5 * (rho[h] + rho[t]) / rho[list(nodes)].max()
                cost = 1 / (config.alpha * weight + (1 - config.alpha) * rho_bar)
                if not g.has_edge(h, t) or cost < g[h][t]["weight"]:
                    g.add_edge(h, t, weight=cost, relation=graph.relation_names[r])
        if nx.has_path(g, topic, answer):
            return g, k
    return None, None


def test_bank_rows_match_independent_computation(small):
    root, graph, records, config = small
    paths = pq.read_table(root / "bank" / "paths.parquet").to_pylist()
    checked = 0
    for record in records[:4]:
        qid = str(record["data_id"])
        rows = [r for r in paths if r["query_id"] == qid and r["pair"] == "direct"]
        assert rows, qid
        topic, answer = graph.index_of([rows[0]["topic_id"], rows[0]["answer_id"]])
        corridor, k = reference_query(graph, record["explicit_query"], int(topic), int(answer), config)
        assert corridor is not None
        assert all(r["corridor_k"] == k for r in rows)
        best = nx.shortest_path_length(corridor, int(topic), int(answer), weight="weight")
        assert min(r["cost"] for r in rows) == pytest.approx(best, rel=1e-6)
        for r in rows:
            nodes = graph.index_of(r["node_ids"]).tolist()
            assert nodes[0] == topic and nodes[-1] == answer and len(set(nodes)) == len(nodes)
            assert r["hop"] == len(nodes) - 1
            cost = sum(corridor[a][b]["weight"] for a, b in zip(nodes[:-1], nodes[1:]))
            assert r["cost"] == pytest.approx(cost, rel=1e-6)
            assert r["relations"] == [corridor[a][b]["relation"] for a, b in zip(nodes[:-1], nodes[1:])]
            assert r["node_types"] == [graph.type_name(v) for v in nodes]
            checked += 1
    assert checked >= 4


def test_bank_structure(small):
    root, graph, records, config = small
    table = pq.read_table(root / "bank" / "paths.parquet")
    rows = table.to_pylist()
    for row in rows:
        nodes = graph.index_of(row["node_ids"])
        for i, relation in enumerate(row["relations"]):  # every step is a real edge
            assert nodes[i + 1] in graph.neighbors(nodes[i], relation=relation)[0]
    groups = {}
    for row in rows:
        groups.setdefault((row["query_id"], row["pair"], row["hop"]), []).append(row)
    for group in groups.values():
        assert [r["rank"] for r in group] == list(range(len(group)))
        assert len(group) <= config.per_hop
        assert all(a["cost"] <= b["cost"] for a, b in zip(group, group[1:]))
        assert len({r["metapath"] for r in group}) == len(group)
    queries = pq.read_table(root / "bank" / "queries.parquet")
    assert queries.column("id").to_pylist() == [str(r["data_id"]) for r in records]
    manifest = json.loads((root / "bank" / "manifest.json").read_text())
    assert manifest["queries_done"] == manifest["queries_total"] == len(records)
    assert manifest["graph_checksum"] == graph.checksum()
    info = bank_info(root / "bank")
    assert info["paths"] == len(rows)
    assert sum(info["paths_per_hop"].values()) == len(rows)


def test_two_topic_records_give_chain_and_direct_pairs(tmp_path, dev_jsonl):
    graph = generate(scale=0.01, seed=2, evidence=[dev_jsonl])
    records = [json.loads(line) for line in open(dev_jsonl)]
    two = [r for r in records if len(r["topic_entities"]) == 2][:3]
    PathBankBuilder(graph, BankConfig()).build(two, tmp_path / "bank")
    rows = pq.read_table(tmp_path / "bank" / "paths.parquet").to_pylist()
    for record in two:
        pairs = {r["pair"] for r in rows if r["query_id"] == str(record["data_id"])}
        assert pairs == {"chain", "direct"}
        chain = [r for r in rows if r["query_id"] == str(record["data_id"]) and r["pair"] == "chain"]
        assert {chain[0]["topic_id"], chain[0]["answer_id"]} == {record["path_node_ids"][0], record["path_node_ids"][-1]}


def test_resume_after_sigkill_equals_uninterrupted(small, tmp_path):
    root, graph, records, _ = small
    more = QueryGenerator(graph).generate(40, seed=8)
    spec = tmp_path / "q.jsonl"
    spec.write_text("".join(json.dumps(r) + "\n" for r in more))
    args = [sys.executable, "-m", "adapath.cli", "bank", "build", "--kg", str(root / "kg"),
            "--queries", f"biostrat:{spec}", "--batch", "2"]
    env = dict(os.environ, NUMBA_NUM_THREADS="1")
    proc = subprocess.Popen(args + ["--out", str(tmp_path / "crashed")], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    parts = tmp_path / "crashed" / "parts"
    while time.time() < deadline and len(list(parts.glob("part-*.parquet"))) < 3:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "crashed" / "paths.parquet").exists()
    done_before = json.loads((tmp_path / "crashed" / "manifest.json").read_text())["queries_done"]
    assert 0 < done_before < len(more)
    subprocess.run(args + ["--out", str(tmp_path / "crashed")], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run(args + ["--out", str(tmp_path / "clean"), "--batch", "7"], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    crashed = pq.read_table(tmp_path / "crashed" / "paths.parquet")
    clean = pq.read_table(tmp_path / "clean" / "paths.parquet")
    assert crashed.equals(clean)
    keys = list(zip(*(crashed.column(c).to_pylist() for c in ("query_id", "pair", "hop", "rank"))))
    assert len(keys) == len(set(keys))


def test_bank_cli_errors(small, tmp_path, capsys):
    root, *_ = small
    code, _, err = run_cli(["bank", "build", "--kg", root / "kg", "--queries", "nope.jsonl",
                            "--out", tmp_path / "b"], capsys)
    assert code == 2 and "expected biostrat:PATH" in err
    code, _, err = run_cli(["bank", "build", "--kg", root / "kg", "--queries",
                            f"biostrat:{root / 'train.jsonl'}", "--out", root / "bank", "--level", "loud"], capsys)
    assert code == 2 and "--level" in err
    code, _, err = run_cli(["bank", "info", tmp_path / "none"], capsys)
    assert code == 2 and "not a Path-Bank" in err


def test_threaded_pair_stage_gives_the_same_bank(small, tmp_path):
    root, graph, records, config = small
    PathBankBuilder(graph, config, graph_dir=root / "kg", workers=3).build(records, tmp_path / "threaded")
    assert pq.read_table(tmp_path / "threaded" / "paths.parquet").equals(
        pq.read_table(root / "bank" / "paths.parquet"))
