"""What the command line says when a user gets something wrong, or when there is nothing to do:
one line, at once, naming what would have been right."""

import socket
import time

import pytest

from tests.conftest import run_cli


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("tried the network")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)


@pytest.mark.parametrize("command", [
    ["answer", "--kg", "kg", "--queries", "biostrat:q.jsonl", "--out", "a.jsonl"],
    ["kg", "embed", "--kg", "kg"],
    ["dataset", "topics", "--kg", "kg", "--out", "t.jsonl", "--stark", "q.csv"],
])
def test_an_unknown_encoder_fails_at_once_offline_naming_the_valid_ones(command, no_network, tmp_path, capsys,
                                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)  # no kg/ here: the encoder is refused before anything is read
    start = time.perf_counter()
    code, _, err = run_cli(command + ["--encoder", "hashng"], capsys)
    assert time.perf_counter() - start < 2.0
    assert code == 2 and err.count("\n") == 1, err
    assert "'hashng'" in err and "minilm" in err and "hashing" in err and "model directory" in err


def test_a_model_directory_is_accepted_as_an_encoder(tmp_path):
    from adapath.errors import InputError
    from adapath.retrieval.dense import check_encoder

    check_encoder("hashing")
    check_encoder("minilm")
    check_encoder(str(tmp_path))  # a directory: sentence-transformers says whether it holds a model
    with pytest.raises(InputError):
        check_encoder(str(tmp_path / "absent"))


# ---------------------------------------------------------------- nothing to do
def snapshot(folder):
    """Every file under ``folder`` with its bytes and modification time."""
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_complete_bank_is_left_as_it_is_and_said_so(small_world, tmp_path, capsys):
    args = ["bank", "build", "--kg", small_world / "kg", "--queries", f"biostrat:{small_world / 'q.jsonl'}",
            "--out", tmp_path / "bank", "--workers", "1"]
    code, _, err = run_cli(args, capsys)
    assert code == 0 and "wrote" in err, err
    before = snapshot(tmp_path / "bank")
    code, _, err = run_cli(args, capsys)
    assert code == 0, err
    assert err.strip().splitlines() == [f"{tmp_path / 'bank'}: complete already (6/6 queries, the same graph, "
                                        "queries and parameters); nothing written; --force rebuilds it"]
    assert snapshot(tmp_path / "bank") == before
    # other parameters: still the one-line refusal, not "complete already"
    code, _, err = run_cli(args + ["--per-hop", "3"], capsys)
    assert code == 2 and "cannot be resumed" in err and "per_hop" in err, err


def test_a_complete_answer_file_is_left_as_it_is_and_said_so(small_world, tmp_path, capsys):
    out = tmp_path / "answers.jsonl"
    args = ["answer", "--kg", small_world / "kg", "--bank", small_world / "bank", "--queries",
            f"biostrat:{small_world / 'q.jsonl'}", "--out", out, "--encoder", "hashing"]
    code, _, err = run_cli(args, capsys)
    assert code == 0 and "wrote" in err, err
    before = snapshot(tmp_path)
    code, _, err = run_cli(args, capsys)
    assert code == 0, err
    assert err.strip().splitlines() == [f"{out}: complete already (6 results, the same settings); nothing written; "
                                        "--force starts over"]
    assert snapshot(tmp_path) == before


def test_a_complete_node_store_is_left_as_it_is_and_said_so(small_world, tmp_path, capsys):
    import shutil

    shutil.copytree(small_world / "kg", tmp_path / "kg", ignore=shutil.ignore_patterns("cache"))
    args = ["kg", "embed", "--kg", tmp_path / "kg", "--encoder", "hashing"]
    code, _, err = run_cli(args, capsys)
    assert code == 0 and "wrote" in err, err
    before = snapshot(tmp_path / "kg" / "cache")
    assert before
    code, _, err = run_cli(args, capsys)
    assert code == 0 and len(err.strip().splitlines()) == 1, err
    assert "complete already" in err and "nothing written; --force rebuilds it" in err
    assert snapshot(tmp_path / "kg" / "cache") == before


# ---------------------------------------------------------------- one line, nothing before it
@pytest.mark.parametrize("command", [
    ["kg", "import", "primekg", "{tmp}/none.csv", "--out", "{tmp}/g"],
    ["kg", "import", "primekg", "{tmp}/bad.csv", "--out", "{tmp}/g"],  # read, then refused
    ["kg", "import", "hetionet", "{tmp}/none.json", "--out", "{tmp}/g"],
    ["kg", "import", "edges", "{tmp}/bad.csv", "--nodes", "{tmp}/bad.csv", "--out", "{tmp}/g"],
    ["kg", "import", "biostrat", "{tmp}/none.jsonl", "--out", "{tmp}/g"],
    ["kg", "info", "{tmp}/none"],
    ["bank", "info", "{tmp}/none"],
    ["answer", "--kg", "{tmp}/none", "--queries", "biostrat:{tmp}/none.jsonl", "--out", "{tmp}/a.jsonl",
     "--encoder", "hashing"],
    ["eval", "--results", "{tmp}/none.jsonl", "--queries", "biostrat:{tmp}/none.jsonl", "--out", "{tmp}/r"],
    ["llm", "serve", "--llm", "gguf:{tmp}/none.gguf"],
])
def test_a_refused_command_writes_its_one_line_and_nothing_else(command, tmp_path, capsys):
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    code, out, err = run_cli([part.format(tmp=tmp_path) for part in command], capsys)
    assert code == 2 and out == ""
    assert err.startswith("adapath: error: ") and err.count("\n") == 1, repr(err)


# ---------------------------------------------------------------- adapath methods
def test_the_methods_table_fits_80_columns_in_under_60_lines():
    import os
    import subprocess
    import sys

    from adapath.methods.registry import all_methods

    done = subprocess.run([sys.executable, "-m", "adapath.cli", "methods"], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "80"}, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) < 60 and max(len(line) for line in lines) <= 80
    # one line per method: its name first, its LLM calls last
    for spec in all_methods().values():
        (row,) = [line for line in lines if line.split(" ", 1)[0] == spec.name]
        assert row.endswith(spec.calls or "-")
        # readable: what it is runs to at least 60 characters before any cut
        at = lines.index(row)
        block = [row[len(spec.name):len(row) - len(spec.calls or "-")]]
        block += [line for line in lines[at + 1:at + 3] if line.startswith("   ")]
        shown = " ".join(" ".join(block).split())
        assert shown.startswith(" ".join(spec.summary.split())[:60]), shown


def test_one_method_in_full_as_plain_text(capsys, tmp_path):
    from adapath.methods.registry import all_methods

    code, out, _ = run_cli(["methods", "tog"], capsys)
    assert code == 0 and out.startswith("tog: Think-on-Graph")
    flat = " ".join(out.split())  # wrapped lines read as one text
    spec = all_methods()["tog"]
    assert "official code: IDEA-FinAI/ToG (https://github.com/IDEA-FinAI/ToG)" in flat
    assert "width=3: beam width: relations kept per entity and reasoning paths kept per depth" in flat
    for deviation in spec.deviations:
        assert f"- {' '.join(deviation.split())}" in flat
    assert "structgpt" not in out
    code, out, _ = run_cli(["methods", "--long"], capsys)
    assert code == 0 and all(f"\n{name}: " in "\n" + out for name in all_methods())
    # the name is the command's argument NAME (no --method was given); answer names its option
    code, _, err = run_cli(["methods", "togg"], capsys)
    assert code == 2 and err.startswith("adapath: error: NAME 'togg': choose from") and err.count("\n") == 1
    assert "--method" not in err and all(name in err for name in all_methods())
    code, _, err = run_cli(["answer", "--method", "togg", "--kg", tmp_path / "kg", "--queries",
                            f"biostrat:{tmp_path / 'q.jsonl'}", "--out", tmp_path / "o.jsonl"], capsys)
    assert code == 2 and err.startswith("adapath: error: --method 'togg': choose from") and err.count("\n") == 1
