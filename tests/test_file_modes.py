"""Files and folders the project writes have the modes a plain create under the umask gives
(0640 and 0750 under umask 027), also where the writer makes private ones: mkstemp and mkdtemp
(0600, 0700), safetensors (0600)."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from tests.conftest import run_cli

UMASK = 0o027


@pytest.fixture
def umask():
    old = os.umask(UMASK)
    try:
        yield UMASK
    finally:
        os.umask(old)


def wrong_modes(root) -> list[str]:
    """Every file or folder under ``root`` whose mode is not the umask's (0640 / 0750)."""
    wrong = []
    for place, folders, files in os.walk(root):
        for name, expected in [(f, 0o640) for f in files] + [(d, 0o750) for d in folders]:
            mode = stat.S_IMODE(os.stat(os.path.join(place, name)).st_mode)
            if mode != expected:
                wrong.append(f"{os.path.relpath(os.path.join(place, name), root)}: {oct(mode)}")
    return wrong


def test_a_model_written_with_safetensors_follows_the_umask(umask, tmp_path):
    """PathMind's save: safetensors inside an atomic folder."""
    safetensors = pytest.importorskip("safetensors.numpy")
    from adapath.fsutil import atomic_dir

    with atomic_dir(tmp_path / "model") as tmp:
        safetensors.save_file({"w": np.zeros(3, dtype=np.float32)}, str(tmp / "model.safetensors"))
        (tmp / "config.json").write_text("{}")
    assert stat.S_IMODE(os.stat(tmp_path / "model").st_mode) == 0o750
    assert wrong_modes(tmp_path) == []


def test_a_kge_cache_follows_the_umask(umask, tmp_path):
    from adapath.retrieval.kge import TripletScorer

    TripletScorer(np.zeros((4, 2), np.float32), np.zeros((2, 2), np.float32), 0.5, 0.9).save(tmp_path / "s.npz")
    assert (tmp_path / "s.npz").is_file() and wrong_modes(tmp_path) == []


def test_the_commands_outputs_follow_the_umask(umask, tmp_path, capsys):
    """A graph, questions, a Path-Bank (with the graph's BM25 cache), node vectors, answers
    and a report, all written under umask 027."""
    kg, q = tmp_path / "kg", tmp_path / "q.jsonl"
    steps = [["kg", "synth", "--scale", "0.01", "--seed", "3", "--out", kg],
             ["dataset", "generate", "--kg", kg, "--n", "4", "--seed", "1", "--out", q],
             ["bank", "build", "--kg", kg, "--queries", f"biostrat:{q}", "--out", tmp_path / "bank"],
             ["kg", "embed", "--kg", kg, "--encoder", "hashing"],
             ["answer", "--kg", kg, "--bank", tmp_path / "bank", "--queries", f"biostrat:{q}", "--encoder",
              "hashing", "--out", tmp_path / "a.jsonl"],
             ["eval", "--results", tmp_path / "a.jsonl", "--queries", f"biostrat:{q}", "--kg", kg, "--out",
              tmp_path / "report", "--resamples", "10"]]
    for args in steps:
        code, _, err = run_cli(args, capsys)
        assert code == 0, err
    written = sum(len(files) for _, _, files in os.walk(tmp_path))
    assert written > 20
    assert wrong_modes(tmp_path) == []
