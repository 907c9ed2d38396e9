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

from adapath.bank.build import BankConfig, build_bank
from adapath.bank.info import bank_info
from adapath.datasets.biostrat import training_queries
from adapath.datasets.generate import QueryGenerator
from adapath.engine.graph import KnowledgeGraph
from adapath.executors import LocalExecutor
from adapath.sources.synthetic import generate
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
    build_bank(graph, training_queries(records), root / "bank", config, graph_dir=root / "kg")
    return root, graph, records, config


def reference_query(graph, text, topic, answer, config):
    """Eq. 1 weights, dense PPR solve, corridor and Eq. 5 costs, written from scratch: the
    corridor as a networkx MultiGraph, one edge per relation (keyed by its name)."""
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
        g = nx.MultiGraph()
        g.add_nodes_from(nodes)
        for h, r, t, weight in zip(heads, rels, tails, w):
            if h in nodes and t in nodes:
                rho_bar = 0.5 * (rho[h] + rho[t]) / rho[list(nodes)].max()
                cost = 1 / (config.alpha * weight + (1 - config.alpha) * rho_bar)
                g.add_edge(h, t, key=graph.relation_names[r], weight=cost)
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
            steps = list(zip(nodes[:-1], nodes[1:], r["relations"]))
            assert all(corridor.has_edge(a, b, key=rel) for a, b, rel in steps)
            cost = sum(corridor[a][b][rel]["weight"] for a, b, rel in steps)
            assert r["cost"] == pytest.approx(cost, rel=1e-6)
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
    build_bank(graph, training_queries(two), tmp_path / "bank", BankConfig())
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
    build_bank(graph, training_queries(records), tmp_path / "threaded", config, LocalExecutor(threads=3),
               graph_dir=root / "kg")
    assert pq.read_table(tmp_path / "threaded" / "paths.parquet").equals(
        pq.read_table(root / "bank" / "paths.parquet"))


def test_bank_build_takes_the_papers_parameters(small, tmp_path, capsys, monkeypatch):
    root, graph, records, _ = small
    monkeypatch.setenv("ADAPATH_PROGRESS_INTERVAL", "0")  # a log line per batch
    config = BankConfig(beta=0.5, eta=0.7, alpha=0.3, ladder=(100, 400), per_hop=2, max_hop=3)
    spec = tmp_path / "q.jsonl"
    spec.write_text("".join(json.dumps(r) + "\n" for r in records[:3]))
    code, _, err = run_cli(["bank", "build", "--kg", root / "kg", "--queries", f"biostrat:{spec}",
                            "--out", tmp_path / "bank", "--beta", "0.5", "--eta", "0.7", "--alpha", "0.3",
                            "--ladder", "100,400", "--per-hop", "2", "--max-hop", "3"], capsys)
    assert code == 0, err
    assert "bank: 3/3 queries (100%)" in err  # progress lines when stderr is a log, not a terminal
    manifest = json.loads((tmp_path / "bank" / "manifest.json").read_text())
    assert manifest["parameters"] == config.signature()
    rows = pq.read_table(tmp_path / "bank" / "paths.parquet").to_pylist()
    groups = {}
    for row in rows:
        groups.setdefault((row["query_id"], row["pair"], row["hop"]), []).append(row)
    assert all(len(g) <= 2 for g in groups.values()) and all(r["hop"] <= 3 for r in rows)
    for record in records[:3]:
        mine = [r for r in rows if r["query_id"] == str(record["data_id"]) and r["pair"] == "direct"]
        topic, answer = graph.index_of([mine[0]["topic_id"], mine[0]["answer_id"]])
        corridor, k = reference_query(graph, record["explicit_query"], int(topic), int(answer), config)
        assert all(r["corridor_k"] == k for r in mine)
        for r in mine:
            nodes = graph.index_of(r["node_ids"]).tolist()
            steps = zip(nodes[:-1], nodes[1:], r["relations"])
            assert r["cost"] == pytest.approx(sum(corridor[a][b][rel]["weight"] for a, b, rel in steps), rel=1e-6)
    code, _, err = run_cli(["bank", "build", "--kg", root / "kg", "--queries", f"biostrat:{spec}",
                            "--out", tmp_path / "b2", "--ladder", "300,150"], capsys)
    assert code == 2 and "ladder 300,150" in err
    assert not (tmp_path / "b2").exists()


def test_resume_refusal_says_what_differs(small, tmp_path, capsys):
    root, graph, records, _ = small
    spec = tmp_path / "q.jsonl"
    spec.write_text("".join(json.dumps(r) + "\n" for r in records[:3]))
    base = ["bank", "build", "--kg", root / "kg", "--out", tmp_path / "bank"]
    assert run_cli(base + ["--queries", f"biostrat:{spec}"], capsys)[0] == 0
    code, _, err = run_cli(base + ["--queries", f"biostrat:{spec}", "--beta", "0.5", "--per-hop", "3"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "parameters: beta 0.3 -> 0.5, per_hop 5 -> 3" in err and "graph:" not in err and "queries:" not in err
    more = tmp_path / "more.jsonl"
    more.write_text("".join(json.dumps(r) + "\n" for r in records[:5]))
    code, _, err = run_cli(base + ["--queries", f"biostrat:{more}"], capsys)
    assert code == 2 and "queries: the bank has 3 queries, the file 5: 2 not in the bank" in err
    assert "parameters:" not in err
    other = generate(scale=0.01, seed=6)
    other.save(tmp_path / "other")
    code, _, err = run_cli(["bank", "build", "--kg", tmp_path / "other", "--out", tmp_path / "bank",
                            "--queries", f"biostrat:{spec}"], capsys)
    assert code == 2 and f"graph: built on another graph (checksum {graph.checksum()[:12]}" in err


def test_device_cuda_without_cupy_leaves_no_folder(small, tmp_path, capsys):
    try:
        import cupy  # noqa: F401

        pytest.skip("CuPy is installed")
    except ImportError:
        pass
    root, *_ = small
    code, _, err = run_cli(["bank", "build", "--kg", root / "kg", "--queries", f"biostrat:{root / 'train.jsonl'}",
                            "--out", tmp_path / "bank", "--device", "cuda"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "CuPy" in err
    assert not (tmp_path / "bank").exists()


def test_bank_info_labels_pairs_and_keeps_each_metapath_on_one_line(small, tmp_path):
    root, *_ = small
    env = dict(os.environ, COLUMNS="40")
    proc = subprocess.run([sys.executable, "-m", "adapath.cli", "bank", "info", str(root / "bank")],
                          capture_output=True, text=True, env=env, check=True)
    lines = proc.stdout.splitlines()
    assert any(line.startswith("pairs by corridor K: ") for line in lines)
    assert any(line.startswith("pairs by fallback: ") for line in lines)
    info = bank_info(root / "bank")
    for metapath, count in list(info["metapaths"].items())[:10]:
        assert any(line.split() == [f"{count:,}", *metapath.split()] for line in lines), metapath
    assert info["pairs_with_paths"] >= info["queries_with_paths"]


def test_plan_cuts_unfinished_runs_into_batches(small):
    from adapath.bank.build import plan_batches

    _, graph, records, _ = small
    queries = training_queries(records[:7])
    done = {queries[2].id, queries[3].id}
    batches = plan_batches(graph, queries, "explicit", 2, done)
    # by hand: places 0-1 | (2, 3 done) | 4-5 | 6
    assert [(b.start, b.stop) for b in batches] == [(0, 2), (4, 6), (6, 7)]
    assert [b.name for b in batches] == ["part-00000000-00000002.parquet", "part-00000004-00000006.parquet",
                                         "part-00000006-00000007.parquet"]
    assert [b.query_ids for b in batches] == [[queries[0].id, queries[1].id], [queries[4].id, queries[5].id],
                                              [queries[6].id]]


def test_partial_bank_with_parts_of_the_older_naming_resumes(small, tmp_path):
    """Parts numbered by an older build (part-NNNNNN) still count as finished on a rerun."""
    import shutil

    root, graph, records, config = small
    shutil.copytree(root / "bank", tmp_path / "bank")
    bank = tmp_path / "bank"
    parts = sorted((bank / "parts").glob("part-*.parquet"))
    for number, part in enumerate(parts):
        part.rename(part.with_name(f"part-{number:06d}.parquet"))
    (bank / "parts" / f"part-{len(parts) - 1:06d}.parquet").unlink()  # the last batch is lost
    (bank / "paths.parquet").unlink()
    manifest = json.loads((bank / "manifest.json").read_text())
    manifest.update(complete=False, queries_done=manifest["queries_done"] - 2)
    (bank / "manifest.json").write_text(json.dumps(manifest))
    progress = build_bank(graph, training_queries(records), bank, config, graph_dir=root / "kg")
    assert progress.resumed_at == len(records) - 2 and progress.done == len(records)
    assert pq.read_table(bank / "paths.parquet").equals(pq.read_table(root / "bank" / "paths.parquet"))


@pytest.mark.parametrize("ppr", ["exact", "certified"])
def test_pipelined_build_gives_the_same_bank(small, tmp_path, ppr):
    """Solving the next batch while this one's corridors run changes nothing in the bank."""
    root, graph, records, config = small
    config = BankConfig(batch=3, ppr=ppr)
    queries = training_queries(records)
    for name, pipeline in (("plain", False), ("pipelined", True)):
        build_bank(graph, queries, tmp_path / name, config, LocalExecutor(threads=2, pipeline=pipeline),
                   graph_dir=root / "kg")
    assert len(list((tmp_path / "pipelined" / "parts").glob("part-*.parquet"))) > 1
    assert pq.read_table(tmp_path / "pipelined" / "paths.parquet").equals(
        pq.read_table(tmp_path / "plain" / "paths.parquet"))


def test_executor_reused_for_another_build_gives_the_same_banks(small, tmp_path):
    """An executor that built a bank builds the next one on the same graph, text index and
    configuration with the runner it has (ready operators and work arrays); the banks equal
    the first build's. Another configuration gets a runner of its own, and its bank equals a
    fresh executor's."""
    from adapath.retrieval.bm25 import GraphText

    root, graph, records, config = small
    queries = training_queries(records)
    text = GraphText.for_graph(graph, root / "kg", k1=config.bm25_k1, b=config.bm25_b)
    executor = LocalExecutor(threads=2)
    build_bank(graph, queries[:4], tmp_path / "first", config, executor, text=text)
    runner = executor.worker.runner
    build_bank(graph, queries, tmp_path / "second", config, executor, text=text)
    assert executor.worker.runner is runner
    assert pq.read_table(tmp_path / "second" / "paths.parquet").equals(pq.read_table(root / "bank" / "paths.parquet"))
    certified = BankConfig(batch=5, ppr="certified")
    build_bank(graph, queries, tmp_path / "certified", certified, executor, text=text)
    assert executor.worker.runner is not runner and executor.worker.runner.config == certified
    build_bank(graph, queries, tmp_path / "fresh", certified, LocalExecutor(threads=2), text=text)
    assert pq.read_table(tmp_path / "certified" / "paths.parquet").equals(
        pq.read_table(tmp_path / "fresh" / "paths.parquet"))


def test_batches_in_flight_keep_their_own_rankings(small):
    """Two solved batches wait at once (as when pipelined): each keeps its own rho and
    ranking, and a batch solved after one has finished reuses that one's arrays. Every
    batch's rows equal those of a fresh runner that runs it alone."""
    from adapath.bank.build import query_pairs
    from adapath.bank.runner import STAGES, BatchRunner
    from adapath.retrieval.bm25 import GraphText

    root, graph, records, config = small
    text = GraphText.for_graph(graph, root / "kg", k1=config.bm25_k1, b=config.bm25_b)
    pairs = [p for i, q in enumerate(training_queries(records)) for p in query_pairs(graph, q, config.level, i)]
    batches = [pairs[0:5], pairs[5:10], pairs[10:15]]
    expected = [BatchRunner(graph, text, config).run_batch(b, dict.fromkeys(STAGES, 0.0)) for b in batches]
    runner = BatchRunner(graph, text, config, threads=2)
    seconds = dict.fromkeys(STAGES, 0.0)
    first, second = runner.solve(batches[0], seconds), runner.solve(batches[1], seconds)
    assert not np.shares_memory(first.rho, second.rho) and not np.shares_memory(first.order, second.order)
    first_rho = first.rho
    assert runner.finish(first, seconds).equals(expected[0])
    third = runner.solve(batches[2], seconds)
    assert np.shares_memory(third.rho, first_rho)  # the finished batch's arrays, mapped already
    assert runner.finish(second, seconds).equals(expected[1])
    assert runner.finish(third, seconds).equals(expected[2])


def test_bank_cli_pipeline_flag(small, tmp_path, capsys):
    root, *_ = small
    args = ["bank", "build", "--kg", root / "kg", "--queries", f"biostrat:{root / 'train.jsonl'}", "--batch", "5"]
    code, _, err = run_cli(args + ["--out", tmp_path / "ray", "--executor", "ray", "--pipeline"], capsys)
    assert code == 2 and "--pipeline needs --executor local" in err and not (tmp_path / "ray").exists()
    code, _, err = run_cli(args + ["--out", tmp_path / "piped", "--pipeline"], capsys)
    assert code == 0, err
    assert pq.read_table(tmp_path / "piped" / "paths.parquet").equals(pq.read_table(root / "bank" / "paths.parquet"))


def test_bank_cli_dense_precision(small, tmp_path, capsys):
    """`--dense-precision float16` builds the float32 bank's paths on this small graph (no
    corridor has a near tie at its boundary) and records its precision; a precision that
    does not exist is one line and no folder."""
    root, *_ = small
    args = ["bank", "build", "--kg", root / "kg", "--queries", f"biostrat:{root / 'train.jsonl'}", "--batch", "5"]
    code, _, err = run_cli(args + ["--out", tmp_path / "bad", "--dense-precision", "float8"], capsys)
    assert code == 2 and "dense precision 'float8'" in err and not (tmp_path / "bad").exists()
    code, _, err = run_cli(args + ["--out", tmp_path / "half", "--dense-precision", "float16"], capsys)
    assert code == 0, err
    columns = ["query_id", "pair", "hop", "rank", "node_ids", "relations"]
    half = pq.read_table(tmp_path / "half" / "paths.parquet", columns=columns)
    assert half.num_rows and half.equals(pq.read_table(root / "bank" / "paths.parquet", columns=columns))
    manifest = json.loads((tmp_path / "half" / "manifest.json").read_text())
    assert manifest["parameters"]["dense_precision"] == "float16"
