"""An --out that cannot be written is one line on stderr naming it, exit 2, before any work:
no traceback, nothing written (a file where a folder should be, a folder where the file
should be, a folder that refuses writes). An OSError that still comes from a write is one
line too: exit 2, or 1 for a fault of the machine (a full disk)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from tests.conftest import run_cli


@pytest.fixture(scope="module")
def world(small_world):
    """The small world (graph, questions, bank) and `answer`'s results over it."""
    from adapath.cli import main

    answers = small_world / "answers.jsonl"
    try:
        main(["answer", "--kg", str(small_world / "kg"), "--bank", str(small_world / "bank"), "--queries",
              f"biostrat:{small_world / 'q.jsonl'}", "--encoder", "hashing", "--out", str(answers), "--force"])
    except SystemExit as exc:
        assert exc.code in (0, None)
    return small_world


def commands(world: Path, out_file: Path, out_folder: Path, tmp: Path) -> dict[str, tuple[list, Path]]:
    """Each command with every input valid (so that only its --out can stop it): its
    arguments and the --out it is given (a file or a folder, as the command writes)."""
    kg, bank, spec = world / "kg", world / "bank", f"biostrat:{world / 'q.jsonl'}"
    data = tmp / "data.jsonl"
    data.write_text(json.dumps({"messages": []}) + "\n")
    (tmp / "base").mkdir(exist_ok=True)
    html = out_file.with_suffix(".html")
    return {
        "answer": (["answer", "--kg", kg, "--bank", bank, "--queries", spec, "--encoder", "hashing", "--out", out_file],
                   out_file),
        "eval": (["eval", "--results", world / "answers.jsonl", "--queries", spec, "--kg", kg, "--resamples", "5",
                  "--out", out_folder], out_folder),
        "view": (["view", "--results", world / "answers.jsonl", "--queries", spec, "--kg", kg, "--out", html], html),
        "bank build": (["bank", "build", "--kg", kg, "--queries", spec, "--out", out_folder], out_folder),
        "bank view": (["bank", "view", bank, "--kg", kg, "--out", html], html),
        "kg synth": (["kg", "synth", "--scale", "0.01", "--seed", "0", "--out", out_folder], out_folder),
        "dataset generate": (["dataset", "generate", "--kg", kg, "--n", "3", "--out", out_file], out_file),
        "pathmind train": (["pathmind", "train", "--kg", kg, "--queries", spec, "--encoder", "hashing", "--epochs", "1",
                            "--out", out_folder], out_folder),
        "pathmind reasoner-data": (["pathmind", "reasoner-data", "--kg", kg, "--model", tmp / "model", "--queries",
                                    spec, "--stage", "sft", "--out", out_file], out_file),
        "pathmind finetune": (["pathmind", "finetune", "--base", tmp / "base", "--stage", "sft", "--data", data,
                               "--out", out_folder], out_folder),
    }


NAMES = ["answer", "eval", "view", "bank build", "bank view", "kg synth", "dataset generate", "pathmind train",
         "pathmind reasoner-data", "pathmind finetune"]


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under root with its bytes (None for a folder)."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def one_line(code, err, out: Path):
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("adapath: error: ") and str(out) in err, err


@pytest.mark.parametrize("name", NAMES)
def test_out_under_a_regular_file(world, tmp_path, capsys, name):
    """`--out test.jsonl/out.jsonl`: a file where a folder should be (fails even for root),
    one level and two levels down."""
    (tmp_path / "in").mkdir()
    blocker = tmp_path / "test.jsonl"
    blocker.write_text("a file, not a folder\n")
    for below in (blocker, blocker / "deeper"):
        args, out = commands(world, below / "out.jsonl", below / "report", tmp_path / "in")[name]
        before = snapshot(tmp_path)
        code, _, err = run_cli(args, capsys)
        one_line(code, err, out)
        assert f"{blocker} is a file, not a folder" in err
        assert snapshot(tmp_path) == before


def permissions_bind(tmp_path: Path) -> bool:
    """Whether a folder of mode 0555 refuses this process's writes (not for root with its
    usual capabilities; so for root under `setpriv --bounding-set=-dac_override`)."""
    probe = tmp_path / "probe"
    probe.mkdir()
    probe.chmod(0o555)
    try:
        (probe / "x").write_text("")
        return False
    except PermissionError:
        return True
    finally:
        probe.chmod(0o755)
        for p in probe.iterdir():
            p.unlink()
        probe.rmdir()


@pytest.mark.parametrize("name", NAMES)
def test_out_in_a_folder_that_refuses_writes(world, tmp_path, capsys, name):
    if not permissions_bind(tmp_path):
        pytest.skip("this process writes into a folder of mode 0555 (root); the file-under-a-file case covers it")
    (tmp_path / "in").mkdir()
    locked = tmp_path / "ro"
    locked.mkdir()
    args, out = commands(world, locked / "out.jsonl", locked / "report", tmp_path / "in")[name]
    locked.chmod(0o555)
    try:
        before = snapshot(tmp_path)
        code, _, err = run_cli(args, capsys)
        one_line(code, err, out)
        assert "refuses writes" in err
        assert snapshot(tmp_path) == before
    finally:
        locked.chmod(0o755)


@pytest.mark.parametrize("name", ["answer", "dataset generate", "view", "eval", "bank build", "kg synth"])
def test_out_of_the_wrong_kind(world, tmp_path, capsys, name):
    """A folder given where a file is written, or a file where a folder is."""
    (tmp_path / "in").mkdir()
    folder, file = tmp_path / "a-folder", tmp_path / "a-file"
    folder.mkdir()
    file.write_text("kept\n")
    args, out = commands(world, folder, file, tmp_path / "in")[name]
    if out.suffix == ".html":  # view writes OUT.html: make that the folder
        out.mkdir()
    before = snapshot(tmp_path)
    code, _, err = run_cli(args, capsys)
    one_line(code, err, out)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("number, status", [(errno.ENOSPC, 1), (errno.EIO, 1), (errno.EACCES, 2),
                                            (errno.EROFS, 2)])
def test_an_os_error_while_writing_is_one_line(world, tmp_path, capsys, monkeypatch, number, status):
    """A write that fails after the checks (here the page's, made to fail): one line naming
    the path with the system's reason; exit 1 for a fault of the machine, else 2."""
    import adapath.view.page as page

    target = tmp_path / "bank.html"

    def failing(*_, **__):
        raise OSError(number, os.strerror(number), str(target))

    monkeypatch.setattr(page, "atomic_file", failing)
    code, _, err = run_cli(["bank", "view", world / "bank", "--out", target], capsys)
    assert code == status, err
    assert err.strip() == f"adapath: error: {target}: {os.strerror(number)}"
    assert not target.exists()


@pytest.mark.parametrize("name, call", [("bank view", "fsync"), ("view", "fsync"), ("answer", "fsync"),
                                        ("eval", "write_text")])
def test_a_full_disk_names_the_output_being_written(world, tmp_path, capsys, monkeypatch, name, call):
    """A write that runs out of disk (``call`` made to fail as a full disk does, with an
    OSError naming no file): the line names the output being written, exit 1, and an atomic
    output leaves no file or temporary behind."""
    (tmp_path / "in").mkdir()
    args, out = commands(world, tmp_path / "out.jsonl", tmp_path / "report", tmp_path / "in")[name]
    before = snapshot(tmp_path)

    def full(*_, **__):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(*((os, "fsync") if call == "fsync" else (Path, "write_text")), full)
    code, _, err = run_cli(args, capsys)
    assert code == 1, err
    assert err.strip().splitlines()[-1] == f"adapath: error: {out}: {os.strerror(errno.ENOSPC)}"
    assert "Traceback" not in err
    if name != "answer":  # answer keeps what it finished (resumable); the others write whole or nothing
        assert snapshot(tmp_path) == before
