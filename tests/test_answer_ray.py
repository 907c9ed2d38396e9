"""`adapath answer --executor ray` on a local Ray cluster (2 CPUs, loopback only): the same
result file as the local executor, resumable, and a bad address is one line."""

import json
import logging

import pytest

from adapath.bank.build import BankConfig, build_bank
from adapath.datasets.biostrat import training_queries
from adapath.datasets.generate import QueryGenerator
from adapath.engine.graph import KnowledgeGraph
from adapath.executors import LocalExecutor
from adapath.sources.synthetic import generate
from tests.conftest import run_cli

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    root = tmp_path_factory.mktemp("answer_ray")
    generate(scale=0.01, seed=6).save(root / "kg")
    graph = KnowledgeGraph.load(root / "kg")
    generator = QueryGenerator(graph)
    train = generator.generate(30, seed=1)
    test = generator.generate(9, seed=2, first_id=1000)
    (root / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in test))
    build_bank(graph, training_queries(train), root / "bank", BankConfig(batch=10), LocalExecutor(threads=1),
               graph_dir=root / "kg")
    return root


@pytest.fixture(scope="module")
def cluster():
    ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             object_store_memory=96 * 2**20, logging_level=logging.ERROR, log_to_driver=False)
    yield
    ray.shutdown()


def lines_without_time(path):
    out = []
    for line in path.read_text().splitlines():
        obj = json.loads(line)
        obj["usage"].pop("seconds")
        out.append(obj)
    return out


def test_bad_ray_address_is_one_line(job, capsys, tmp_path):
    """First in the module: before the cluster fixture connects this process to Ray."""
    assert not ray.is_initialized()
    root = job
    code, _, err = run_cli(["answer", "--kg", root / "kg", "--bank", root / "bank", "--queries",
                            f"biostrat:{root / 'test.jsonl'}", "--encoder", "hashing", "--out", tmp_path / "x.jsonl",
                            "--executor", "ray", "--ray-address", "127.0.0.1:1"], capsys)
    assert code == 2 and "no Ray cluster answers there" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.jsonl").exists()


def test_ray_answers_equal_local_and_resume(job, cluster, tmp_path, capsys):
    root = job
    base = ["answer", "--kg", root / "kg", "--bank", root / "bank", "--queries", f"biostrat:{root / 'test.jsonl'}",
            "--encoder", "hashing", "--level", "all", "--batch", "4"]
    code, _, err = run_cli(base + ["--out", tmp_path / "local.jsonl"], capsys)
    assert code == 0, err
    ray_out = tmp_path / "ray.jsonl"
    code, _, err = run_cli(base + ["--out", ray_out, "--executor", "ray", "--workers", "2", "--limit", "3"], capsys)
    assert code == 0, err
    assert len(ray_out.read_text().splitlines()) == 9  # 3 questions x 3 levels
    code, _, err = run_cli(base + ["--out", ray_out, "--executor", "ray", "--workers", "2"], capsys)
    assert code == 0, err
    assert "18 new results (9 already there)" in err
    local = lines_without_time(tmp_path / "local.jsonl")
    remote = lines_without_time(ray_out)
    key = lambda r: (r["level"], r["id"])  # noqa: E731 - the limit run wrote a different order
    assert sorted(remote, key=key) == sorted(local, key=key)
    # the settings file does not tie a result file to its executor
    assert json.loads((tmp_path / "ray.jsonl.settings.json").read_text()) == \
        json.loads((tmp_path / "local.jsonl.settings.json").read_text())


def test_what_a_ray_worker_raises_is_the_one_line_it_raised(job, cluster, tmp_path, capsys):
    """The method is made on the worker (from its recipe and the graph's arrays): an error
    there is not retried, and reaches the command as the one line the local run gives."""
    root = job
    args = ["answer", "--method", "pathmind", "--kg", root / "kg", "--queries", f"biostrat:{root / 'test.jsonl'}",
            "--encoder", "hashing"]
    from adapath.cli.common import COMPILING

    def error_lines(err: str) -> list[str]:  # a cold kernel cache's notice comes first; it is no error
        return [line for line in err.splitlines() if line != COMPILING]

    code, _, local_err = run_cli(args + ["--out", tmp_path / "local.jsonl"], capsys)
    assert code == 2 and error_lines(local_err) == ["adapath: error: --method pathmind needs --model"]
    code, _, err = run_cli(args + ["--out", tmp_path / "ray.jsonl", "--executor", "ray", "--workers", "2"], capsys)
    assert code == 2 and error_lines(err) == error_lines(local_err)
    assert not (tmp_path / "ray.jsonl").exists()
