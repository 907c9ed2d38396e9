"""Path-Bank builds on a local Ray cluster (2 CPUs, loopback only) against the local build:
any worker count, a worker killed mid-task, a driver killed and rerun, a bad address, and
every socket the cluster listens on is a loopback one.

One cluster serves the module; the graph and query set are tiny so that the time goes to
what is tested (worker start-up dominates)."""

import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import psutil
import pyarrow.parquet as pq
import pytest

from adapath.bank.build import BankConfig, build_bank
from adapath.datasets.biostrat import training_queries
from adapath.executors import LocalExecutor
from tests.helpers import generated_world

ray = pytest.importorskip("ray")

TASK_TITLE = "ray::run_bank_batch"  # Ray titles a worker process after the task it runs


@pytest.fixture(scope="module")
def cluster():
    """The local cluster `--executor ray` starts (adapath.executors.cluster.connect), shared by the module."""
    from adapath.executors.cluster import connect

    assert connect(None, 2)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """A tiny graph, 24 training queries and their bank built locally (the reference)."""
    root = tmp_path_factory.mktemp("bank_ray")
    graph, records = generated_world(root, graph_seed=5, questions=24, question_seed=4, name="train.jsonl")
    queries = training_queries(records)
    build_bank(graph, queries, root / "local", BankConfig(batch=5), LocalExecutor(threads=1),
               graph_dir=root / "kg")
    return root, graph, queries


def same_bank(a, b):
    for name in ("paths.parquet", "queries.parquet"):
        assert pq.read_table(a / name).equals(pq.read_table(b / name)), name
    manifest = json.loads((a / "manifest.json").read_text())
    assert manifest["complete"] and manifest["queries_done"] == manifest["queries_total"]


@pytest.mark.parametrize("workers", [1, 2])
def test_ray_build_equals_local_build(cluster, job, tmp_path, workers):
    from adapath.executors.ray import RayExecutor

    root, graph, queries = job
    executor = RayExecutor(workers=workers)
    try:
        build_bank(graph, queries, tmp_path / "bank", BankConfig(batch=3), executor, graph_dir=root / "kg")
    finally:
        executor.close()
    assert ray.is_initialized()  # a cluster it did not start is left alone
    assert executor.slots == workers
    assert len(list((tmp_path / "bank" / "parts").glob("part-*.parquet"))) == 8
    same_bank(tmp_path / "bank", root / "local")


def running_task_workers():
    """Worker processes of this test's cluster that are inside a bank task right now."""
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.cmdline()[:1] == [TASK_TITLE]:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_worker_killed_mid_task_is_retried(cluster, job, tmp_path):
    from adapath.executors.ray import RayExecutor

    root, graph, queries = job
    executor = RayExecutor(workers=2)
    failure = []

    def build():
        try:
            build_bank(graph, queries, tmp_path / "bank", BankConfig(batch=1), executor, graph_dir=root / "kg")
        except BaseException as exc:  # noqa: BLE001 - reported to the test thread
            failure.append(exc)

    thread = threading.Thread(target=build)
    thread.start()
    killed = None
    deadline = time.time() + 120
    while killed is None and thread.is_alive() and time.time() < deadline:
        workers = running_task_workers()
        if workers:
            killed = workers[0].pid
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.005)
    thread.join(timeout=300)
    executor.close()
    assert killed is not None, "no bank task was caught running"
    assert not failure, failure
    same_bank(tmp_path / "bank", root / "local")


def test_driver_killed_then_rerun_resumes_to_the_same_bank(cluster, job, tmp_path):
    root, _, _ = job
    args = [sys.executable, "-m", "adapath.cli", "bank", "build", "--kg", str(root / "kg"),
            "--queries", f"biostrat:{root / 'train.jsonl'}", "--out", str(tmp_path / "bank"),
            "--batch", "1", "--executor", "ray", "--ray-address", cluster, "--workers", "2"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    parts = tmp_path / "bank" / "parts"
    deadline = time.time() + 180
    while time.time() < deadline and proc.poll() is None and len(list(parts.glob("part-*.parquet"))) < 3:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "bank" / "paths.parquet").exists(), "the driver finished before it was killed"
    before = len(list(parts.glob("part-*.parquet")))
    assert 0 < before < 24
    rerun = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    same_bank(tmp_path / "bank", root / "local")
    assert len(list(parts.glob("part-*.parquet"))) == 24


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("address", [f"127.0.0.1:{free_port()}", "not-an-address"])
def test_bad_ray_address_is_one_line_and_exit_2(job, tmp_path, address):
    root, _, _ = job
    args = [sys.executable, "-m", "adapath.cli", "bank", "build", "--kg", str(root / "kg"),
            "--queries", f"biostrat:{root / 'train.jsonl'}", "--out", str(tmp_path / "bank"),
            "--executor", "ray", "--ray-address", address]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--ray-address" in lines[0] and address in lines[0], proc.stderr
    assert not (tmp_path / "bank").exists()


def listening(pid):
    """(process, address, port) of every listening TCP / bound UDP socket of a process tree,
    straight from psutil."""
    root = psutil.Process(pid)
    found = set()
    for proc in [root, *root.children(recursive=True)]:
        try:
            for conn in proc.net_connections(kind="inet"):
                if conn.status == psutil.CONN_LISTEN or (conn.type == socket.SOCK_DGRAM and conn.laddr):
                    found.add((proc.name(), conn.laddr.ip, conn.laddr.port))
        except psutil.Error:
            continue
    return found


def test_every_socket_of_a_ray_build_is_on_loopback(cluster, job, tmp_path, capsys):
    """While `bank build --executor ray` runs (on the cluster the CLI would start), the driver,
    GCS, raylet, agents and the workers inside bank tasks listen on loopback only."""
    from tests.conftest import run_cli

    root, _, _ = job
    seen, done = set(), threading.Event()

    def watch():
        while not done.is_set():
            seen.update(listening(os.getpid()))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        code, _, err = run_cli(["bank", "build", "--kg", root / "kg", "--queries", f"biostrat:{root / 'train.jsonl'}",
                                "--out", tmp_path / "bank", "--batch", "3", "--executor", "ray", "--workers", "2"],
                               capsys)
    finally:
        done.set()
        watcher.join()
    assert code == 0, err
    names = {name for name, _, _ in seen}
    assert {"gcs_server", "raylet"} <= names and any(n.startswith("ray::") for n in names), names
    exposed = [(name, ip, port) for name, ip, port in seen
               if not ipaddress.ip_address(ip.removeprefix("::ffff:")).is_loopback]
    assert not exposed, exposed
    assert {node["NodeManagerAddress"] for node in ray.nodes()} == {"127.0.0.1"}
