"""Benches that time Numba kernels compile them untimed first: in each timing function, the
first clocked region around the kernels' work comes after an untimed call of that work (a
warm-up on a small batch), and the bench's docstring says so. Read from the source (the
benches take minutes to run): ``clock = time.perf_counter()`` ... ``time.perf_counter() -
clock`` is a clocked region. A bench module (each ``adapath bench NAME``) that times Numba
kernels and is not listed here fails the coverage test, so a new one is checked too; the
PathMind work's own (``pathmind``, its real-records and reasoner parts, the reasoner smoke run)
keep their warm-ups themselves. A comparison timed through ``adapath.bench.timing.alternate``
is warmed by that helper (tests/test_bench.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "adapath" / "bench"

# (file, timing function): (calls whose time is measured, calls that warm them up untimed)
TIMED = {
    ("answer.py", "main"): ({"retrieve", "realizable", "answer"}, {"answer"}),
    ("answer.py", "timed_answers"): ({"answer_all"}, {"answer"}),
    ("answer.py", "stages_ms"): ({"answer_all"}, {"answer"}),
    ("bank.py", "ours"): ({"build_bank"}, {"build_bank"}),
    ("methods.py", "run_method"): ({"answer_all"}, {"answer"}),
    ("timing.py", "timed_build"): ({"build_bank"}, {"build_bank"}),  # paths-recall's, metapath-coverage's
    ("real_records.py", "answer_method"): ({"run_queries"}, {"answer"}),
    ("gpu.py", "part_ppr"): ({"personalized"}, {"personalized"}),
    ("pathmind_default.py", "run"): ({"train", "answer"}, {"train"}),
}
# Benches that time no Numba kernel, or whose timing is checked elsewhere.
NOT_TIMING_KERNELS = {
    "kg.py": "times graph generation and kg.csv import in child processes: no Numba kernel",
    "encoder.py": "times sentence encoders (torch, OpenVINO), after its own warm-up call",
    "view.py": "times page writing and the browser",
    "reasoner.py": "times LoRA SFT steps (transformers, torch): no Numba kernel",
    "pathmind.py": "PathMind's bench: its untimed epoch compiles the kernels (0d136e0)",
    "pathmind_speed.py": "its clock wraps callables (timed()); child() runs a training step, a validation "
                               "and an answering batch untimed before the first",
}
KERNEL_MODULES = ("adapath.bank", "adapath.methods", "adapath.engine", "adapath.kernels")


def calls(node: ast.AST) -> list[tuple[int, str]]:
    """(line, called name) of every call under node: ``f(...)`` and ``x.f(...)`` both as f."""
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name:
                out.append((n.lineno, name))
    return out


def is_clock(n: ast.AST) -> bool:
    return isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "perf_counter"


def regions(function: ast.FunctionDef) -> list[tuple[int, int]]:
    """(first line, last line) of each clocked region: a name set to time.perf_counter() up to
    the next time.perf_counter() - that name."""
    starts = [(n.lineno, n.targets[0].id) for n in ast.walk(function)
              if isinstance(n, ast.Assign) and is_clock(n.value) and isinstance(n.targets[0], ast.Name)]
    ends = [(n.lineno, n.right.id) for n in ast.walk(function)
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub) and is_clock(n.left)
            and isinstance(n.right, ast.Name)]
    out = []
    for line, name in sorted(starts):
        end = min((e for e, n in ends if n == name and e > line), default=None)
        if end is not None:
            out.append((line, end))
    return out


def function(file: str, name: str) -> ast.FunctionDef:
    tree = ast.parse((BENCH / file).read_text())
    return next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)


@pytest.mark.parametrize("file, name", sorted(TIMED))
def test_the_first_clocked_kernel_work_comes_after_an_untimed_warm_up(file, name):
    timed, warm = TIMED[(file, name)]
    f = function(file, name)
    made = calls(f)
    clocked = [(a, b) for a, b in regions(f) if any(a < line <= b and c in timed for line, c in made)]
    assert clocked, f"{file}:{name}: no clocked region around {timed}"
    first = clocked[0][0]
    assert any(line < first and c in warm for line, c in made), (
        f"{file}:{name}: the region clocked from line {first} times {sorted(timed)} with no untimed "
        f"call of {sorted(warm)} before it")


def test_the_checker_finds_a_missing_warm_up():
    source = ("import time\ndef main(g):\n    clock = time.perf_counter()\n    build_bank(g)\n"
              "    s = time.perf_counter() - clock\n    build_bank(g)\n")
    f = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef))
    assert regions(f) == [(3, 5)]
    assert not any(line < 3 and c == "build_bank" for line, c in calls(f))


def test_every_bench_timing_kernels_is_checked_and_says_so():
    """Each bench that imports our kernel-running modules and reads a clock is listed above
    (or named as timing no kernel), and its docstring states the untimed warm-up."""
    from adapath.bench import BENCHES

    for path in sorted(BENCH / (module.rsplit(".", 1)[1] + ".py") for module, _ in BENCHES.values()):
        text = path.read_text()
        if "perf_counter" not in text or not any(m in text for m in KERNEL_MODULES):
            continue
        assert path.name in {f for f, _ in TIMED} | set(NOT_TIMING_KERNELS), f"{path.name}: not checked"
        if path.name in {f for f, _ in TIMED}:
            doc = ast.get_docstring(ast.parse(text)) or ""
            assert "untimed" in doc and ("compil" in doc), f"{path.name}: the docstring does not state its warm-up"
