import os
from pathlib import Path

import pytest

import adapath  # noqa: F401  (sets OMP_WAIT_POLICY before torch or Numba loads)

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DEV_JSONL = SHARED / "biostrat_qa" / "dev.jsonl"
TEMPLATES_JSONL = SHARED / "biostrat_qa" / "templates.jsonl"

# Keep Numba's thread pool small on 2-core machines and CI.
os.environ.setdefault("NUMBA_NUM_THREADS", "2")


@pytest.fixture(scope="session")
def dev_jsonl() -> Path:
    if not DEV_JSONL.is_file():
        pytest.skip("../shared/data/biostrat_qa/dev.jsonl is not present")
    return DEV_JSONL


def run_cli(args, capsys):
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""
    from adapath.cli import main

    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def small_world(tmp_path_factory):
    """A tiny generated graph (root/kg), six generated training questions (root/q.jsonl) and
    their Path-Bank (root/bank)."""
    from adapath.bank.build import BankConfig, build_bank
    from adapath.datasets.biostrat import training_queries
    from tests.helpers import generated_world

    root = tmp_path_factory.mktemp("small")
    graph, records = generated_world(root, graph_seed=3, questions=6, question_seed=1)
    build_bank(graph, training_queries(records), root / "bank", BankConfig(), graph_dir=root / "kg")
    return root
