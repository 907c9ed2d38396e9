"""The rooms of ``adapath`` import one way, top to bottom:

    cli -> bench -> view, eval -> methods -> datasets -> contract -> bank, sources -> executors
        -> engine -> retrieval, llm -> kernels

Rooms on one floor may import each other. The small modules at the package's top (errors,
progress, typed, ...) are the ground every room but ``kernels`` may stand on, and they import
only each other; ``kernels`` imports nothing of ours. Every import statement counts, those
inside functions too (a lazy import is still an arrow)."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "adapath"
FLOORS = (("cli",), ("bench",), ("view", "eval"), ("methods",), ("datasets",), ("contract",), ("bank", "sources"),
          ("executors",), ("engine",), ("retrieval", "llm"), ("kernels",))
FLOOR_OF = {room: i for i, rooms in enumerate(FLOORS) for room in rooms}
GROUND = {"adapath", "errors", "progress", "fsutil", "jsonl", "quiet", "typed", "config", "data", "memory"}


def room_of(module: str) -> str:
    """``adapath.methods.base`` -> ``methods``; ``adapath`` itself -> ``adapath``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def imported(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, module) of every ``adapath`` module that ``source`` (the text of ``module``) imports."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the module's package upwards
                base = module.split(".")[: None if is_package else -1]
                base = base[: len(base) - (node.level - 1)]
                out.append((node.lineno, ".".join(base + ([node.module] if node.module else []))))
            else:
                out.append((node.lineno, node.module or ""))
    return [(line, name) for line, name in out if name == "adapath" or name.startswith("adapath.")]


def back_arrows(module: str, source: str, is_package: bool = False) -> list[str]:
    """Every import of ``module`` that runs against the order, as ``module:line -> target``."""
    here = room_of(module)
    bad = []
    for line, target in imported(source, module, is_package):
        there = room_of(target)
        if there == here:
            continue
        if here == "kernels":
            allowed = False
        elif here in GROUND:
            allowed = there in GROUND
        elif there in GROUND:
            allowed = True
        else:
            if here not in FLOOR_OF or there not in FLOOR_OF:
                raise AssertionError(f"{module}: room {here if here not in FLOOR_OF else there!r} stands on no "
                                     "floor; give it one in FLOORS (or GROUND)")
            allowed = FLOOR_OF[here] <= FLOOR_OF[there]
        if not allowed:
            bad.append(f"{module}:{line} -> {target}")
    return bad


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        yield ".".join(parts[:-1] if is_package else parts), path, is_package


def test_no_module_imports_from_a_room_above_it():
    bad = [arrow for module, path, is_package in modules()
           for arrow in back_arrows(module, path.read_text(), is_package)]
    assert bad == []


@pytest.mark.parametrize("module, source, expected", [
    ("adapath.datasets.specs", "from adapath.methods.base import Query", ["adapath.datasets.specs:1 -> "
                                                                         "adapath.methods.base"]),
    ("adapath.engine.walks", "def f():\n    import adapath.bank.index", ["adapath.engine.walks:2 -> "
                                                                        "adapath.bank.index"]),
    ("adapath.kernels.rank", "from adapath.errors import InputError", ["adapath.kernels.rank:1 -> "
                                                                      "adapath.errors"]),
    ("adapath.errors", "from adapath.engine import graph", ["adapath.errors:1 -> adapath.engine"]),
    ("adapath.methods.pog", "from ..cli import common", ["adapath.methods.pog:1 -> adapath.cli"]),
    ("adapath.datasets.specs", "from adapath.contract import Query\nfrom adapath.bank.query import TrainingQuery"
                               "\nfrom adapath.errors import InputError", []),
    ("adapath.bank.worker", "from adapath.executors.base import WorkerSpec", []),  # bank stands above executors
    ("adapath.executors.local", "from adapath.bank.runner import BatchRunner", ["adapath.executors.local:1 -> "
                                                                               "adapath.bank.runner"]),
    ("adapath.executors.ray", "from adapath.engine.graph import KnowledgeGraph", []),
    ("adapath.engine.ppr", "from adapath.executors import make_executor", ["adapath.engine.ppr:1 -> "
                                                                          "adapath.executors"]),
    ("adapath.view.page", "from adapath.eval import tables", []),  # one floor
    ("adapath.eval.tables", "from adapath.view import page", []),
])
def test_the_walk_finds_back_arrows_written_by_hand(module, source, expected):
    assert back_arrows(module, source) == expected
