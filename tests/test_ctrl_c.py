"""Ctrl-C during a long command: one last line that says what was kept and how to resume (or
that nothing was written), exit 130, and no closing progress line that reads like a finished
run. Real SIGINTs to real processes for `bank build` and `answer`; a KeyboardInterrupt raised
inside the work for `kg embed` and for a command with no account of its own."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import run_cli
from tests.helpers import ctrl_c_enabled

# the closing line of a run that finished: "bank: 992 queries in 10s, 100.9 queries/s"
FINISHED_LINE = re.compile(r"^\S+: \d+ \w+ in \S+, [\d.]+ \w+/s$")


@pytest.fixture(scope="module")
def many(small_world):
    """Sixty generated questions on the small world's graph (enough work to interrupt)."""
    from adapath.datasets.generate import QueryGenerator
    from adapath.engine.graph import KnowledgeGraph

    records = QueryGenerator(KnowledgeGraph.load(small_world / "kg")).generate(60, seed=8)
    path = small_world / "many.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return small_world, path, records


def interrupt_after(args: list, ready: re.Pattern, timeout: float = 120) -> tuple[int, list[str]]:
    """Start `adapath ARGS` (progress lines at every step), send SIGINT once a stderr line
    matches ``ready``, and return the exit status and every stderr line."""
    env = dict(os.environ, ADAPATH_PROGRESS_INTERVAL="0", NUMBA_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-m", "adapath.cli", *map(str, args)], env=env, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=ctrl_c_enabled)
    lines, deadline = [], time.time() + timeout
    for line in proc.stderr:
        lines.append(line.rstrip("\n"))
        if ready.search(line) or time.time() > deadline:
            break
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=60)
    return proc.returncode, lines + rest.splitlines()


def test_bank_build_ctrl_c_says_what_it_kept(many, tmp_path):
    root, spec, records = many
    out = tmp_path / "bank"
    args = ["bank", "build", "--kg", root / "kg", "--queries", f"biostrat:{spec}", "--batch", "2", "--out", out]
    code, lines = interrupt_after(args, re.compile(r"^bank: \d+/\d+ queries"))
    assert code == 130, lines
    done = json.loads((out / "manifest.json").read_text())["queries_done"]  # what the build committed
    assert 0 < done < len(records), lines
    assert lines[-1] == (f"adapath: interrupted: {done:,} of {len(records):,} queries kept in {out}; "
                         "rerun the same command to resume (--force starts over)")
    assert not any(FINISHED_LINE.match(line) for line in lines), lines
    assert lines[-2].startswith("bank: interrupted after ")
    assert "Traceback" not in "\n".join(lines)
    # and the rerun resumes: it finishes the rest, and the bank holds every query
    again = subprocess.run([sys.executable, "-m", "adapath.cli", *map(str, args)], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert set(pq.read_table(out / "queries.parquet").column("id").to_pylist()) == {
        str(r["data_id"]) for r in records}
    assert json.loads((out / "manifest.json").read_text())["complete"] is True


def test_answer_ctrl_c_says_what_it_kept(many, tmp_path):
    root, spec, records = many
    out = tmp_path / "answers.jsonl"
    args = ["answer", "--kg", root / "kg", "--bank", root / "bank", "--queries", f"biostrat:{spec}", "--level",
            "all", "--encoder", "hashing", "--batch", "1", "--out", out]
    code, lines = interrupt_after(args, re.compile(r"^answer: \d+/\d+ questions"))
    assert code == 130, lines
    kept = len(out.read_text().splitlines())
    assert 0 < kept < 3 * len(records)
    assert lines[-1] == f"adapath: interrupted: {kept} results kept in {out}; rerun the same command to resume"
    assert not any(FINISHED_LINE.match(line) for line in lines), lines
    assert lines[-2].startswith("answer: interrupted after "), lines
    assert "Traceback" not in "\n".join(lines)


def test_kg_embed_interrupted_says_what_it_kept(small_world, tmp_path, capsys, monkeypatch):
    """Ctrl-C while node vectors are written: the vectors kept, where, and how to resume."""
    import adapath.retrieval.node_store as node_store
    from adapath.engine.graph import KnowledgeGraph

    class Step:
        done, total, encoded, rate = 256, 0, 256, 1.0

    def stopped(graph, model, path, *_, on_progress=None, **__):
        Step.total = graph.num_nodes
        on_progress(Step)
        raise KeyboardInterrupt

    monkeypatch.setattr(node_store, "embed_all", stopped)
    code, _, err = run_cli(["kg", "embed", "--kg", small_world / "kg", "--encoder", "hashing",
                            "--cache-dir", tmp_path / "cache", "--force"], capsys)
    n = KnowledgeGraph.load(small_world / "kg").num_nodes
    assert code == 130
    line = err.strip().splitlines()[-1]
    assert re.fullmatch(rf"adapath: interrupted: 256 of {n:,} node vectors kept in {re.escape(str(tmp_path))}/\S+; "
                        r"rerun the same command to resume", line), line


def test_a_command_without_its_own_account_says_nothing_was_kept(tmp_path, capsys, monkeypatch):
    """Typer turns a Ctrl-C no command handled into exit 130 before our handler: the CLI
    still says so in one line (it was silent), and the output was never written."""
    import adapath.sources.synthetic as synthetic

    def stopped(*_, **__):
        raise KeyboardInterrupt

    monkeypatch.setattr(synthetic, "generate", stopped)
    code, _, err = run_cli(["kg", "synth", "--scale", "0.01", "--out", tmp_path / "kg"], capsys)
    assert code == 130
    assert err == "adapath: interrupted; nothing half-written was kept (rerun the command to start again)\n"
    assert list(Path(tmp_path).iterdir()) == []


def interrupt_at(args: list, delay: float) -> tuple[int | None, list[str]]:
    """`adapath ARGS` with Numba on 2 threads, SIGINT after ``delay`` seconds; (exit status,
    stderr lines), the status None when the command had finished first."""
    env = dict(os.environ, NUMBA_NUM_THREADS="2")
    proc = subprocess.Popen([sys.executable, "-m", "adapath.cli", *map(str, args)], env=env, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=ctrl_c_enabled)
    try:
        proc.wait(delay)
        return None, proc.communicate()[1].splitlines()
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
    return proc.returncode if proc.wait(120) is not None else None, proc.communicate()[1].splitlines()


def bank_paths(folder: Path) -> list:
    return sorted(map(str, pq.read_table(folder / "paths.parquet").to_pylist()))


def answer_lines(path: Path) -> list:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return sorted(json.dumps({k: v for k, v in r.items() if k != "usage"}, sort_keys=True) for r in rows)


@pytest.mark.parametrize("command", ["bank", "answer"])
def test_ctrl_c_at_random_instants_with_threads_and_batches(many, tmp_path, command):
    """A few SIGINTs at random instants (inside the kernels most of the time), Numba on 2
    threads, batches of 4: each ends with one line and exit 130, and the rerun resumes to the
    output of an uninterrupted run (adapath bench ctrl-c does 20 of each command)."""
    import random

    root, spec, _ = many
    if command == "bank":
        def args(out):
            return ["bank", "build", "--kg", root / "kg", "--queries", f"biostrat:{spec}", "--batch", "4", "--out", out]
        name, read = "bank", bank_paths
    else:
        def args(out):
            return ["answer", "--kg", root / "kg", "--bank", root / "bank", "--queries", f"biostrat:{spec}", "--level",
                    "all", "--encoder", "hashing", "--batch", "4", "--out", out]
        name, read = "answers.jsonl", answer_lines
    start = time.perf_counter()
    code, lines = interrupt_at(args(tmp_path / "reference" / name), 600)
    seconds = time.perf_counter() - start
    assert code is None, lines
    expected = read(tmp_path / "reference" / name)
    rng = random.Random(51)
    for attempt in range(3):
        out = tmp_path / f"try{attempt}" / name
        delay = rng.uniform(0.5, seconds)
        code, lines = interrupt_at(args(out), delay)
        if code == 0:  # the signal came after the last step, as the command wrote its output: it outran it
            assert lines[-1].startswith("wrote "), lines
        elif code is not None:  # a try the command outran is not a try
            assert code == 130, lines
            assert lines[-1].startswith("adapath: interrupted"), lines
            assert "Traceback" not in "\n".join(lines), lines
        again = subprocess.run([sys.executable, "-m", "adapath.cli", *map(str, args(out))], capture_output=True,
                               text=True)
        assert again.returncode == 0, again.stderr
        assert read(out) == expected, f"try {attempt}, SIGINT at {delay:.2f} s"


def test_ctrl_c_while_the_command_line_loads_is_one_line():
    """Ctrl-C in the first second, while the command line's modules import: one line, 130."""
    code = ("import builtins\n"
            "real = builtins.__import__\n"
            "def stopped(name, *args, **kwargs):\n"
            "    if name == 'adapath.cli.evaluate':\n"
            "        raise KeyboardInterrupt\n"
            "    return real(name, *args, **kwargs)\n"
            "builtins.__import__ = stopped\n"
            "import adapath.cli\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parents[1])
    assert done.returncode == 130, done.stderr
    assert done.stderr == "adapath: interrupted; nothing half-written was kept (rerun the command to start again)\n"
