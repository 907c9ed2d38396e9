"""The first run of a command whose kernels are not compiled on this machine yet says so on its
first line, in a log as on a terminal; a later run does not."""

from __future__ import annotations

from tests.conftest import run_cli


def test_a_kernel_without_compiled_code_on_disk_is_found(monkeypatch, tmp_path):
    from numba.core.dispatcher import Dispatcher

    import adapath.kernels.walk_step as module
    from adapath.kernels.cache import uncompiled

    kernels = [k for k in vars(module).values() if isinstance(k, Dispatcher) and k.__module__ == module.__name__]
    assert kernels
    for kernel in kernels:  # as on a fresh machine: no index file where Numba looks
        monkeypatch.setattr(kernel._cache._cache_file, "_index_path", str(tmp_path / "absent.nbi"))
    assert uncompiled(("walk_step",)) == ["walk_step"]


def test_a_compiled_kernel_is_not_announced(small_world):
    """small_world built a bank, whose pair stage compiled (or was read from disk)."""
    from adapath.kernels.cache import uncompiled

    assert uncompiled(("pair_stage",)) == []


def test_bank_build_says_so_on_its_first_line(small_world, tmp_path, capsys, monkeypatch):
    import adapath.kernels.cache as cache
    from adapath.cli.common import COMPILING

    monkeypatch.setattr(cache, "uncompiled", lambda modules: list(modules))
    code, _, err = run_cli(["bank", "build", "--kg", small_world / "kg", "--queries",
                            f"biostrat:{small_world / 'q.jsonl'}", "--out", tmp_path / "bank"], capsys)
    assert code == 0, err
    assert err.splitlines()[0] == COMPILING == "compiling kernels, once per machine, about 2 minutes"
    monkeypatch.setattr(cache, "uncompiled", lambda modules: [])
    code, _, err = run_cli(["bank", "build", "--kg", small_world / "kg", "--queries",
                            f"biostrat:{small_world / 'q.jsonl'}", "--out", tmp_path / "bank2"], capsys)
    assert code == 0 and COMPILING not in err, err
