"""Reasoner data in trl's formats and LoRA SFT / DPO on a tiny local model: the loss moves."""

import json

import pytest

from tests.conftest import run_cli
from tests.tiny_lm import make_tiny_lm

pytest.importorskip("trl")
pytest.importorskip("peft")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return make_tiny_lm(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def pathmind_setup(tmp_path_factory):
    from adapath.datasets.generate import QueryGenerator
    from adapath.sources.synthetic import generate

    root = tmp_path_factory.mktemp("pm")
    graph = generate(scale=0.02, seed=6)
    graph.save(root / "kg")
    records = QueryGenerator(graph).generate(40, seed=2)
    (root / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return root


def test_reasoner_data_then_finetune(pathmind_setup, tiny, tmp_path, capsys):
    root = pathmind_setup
    code, _, err = run_cli(["pathmind", "train", "--kg", root / "kg", "--queries", f"biostrat:{root / 'q.jsonl'}",
                            "--out", root / "model", "--epochs", "2", "--budget", "60"], capsys)
    assert code == 0, err
    for stage in ("sft", "dpo"):
        out = tmp_path / f"{stage}.jsonl"
        code, _, err = run_cli(["pathmind", "reasoner-data", "--kg", root / "kg", "--model", root / "model",
                                "--queries", f"biostrat:{root / 'q.jsonl'}", "--stage", stage, "--out", out], capsys)
        assert code == 0, err
        rows = [json.loads(x) for x in out.read_text().splitlines()]
        assert rows
        keys = {"prompt", "completion"} if stage == "sft" else {"prompt", "chosen", "rejected"}
        assert all(set(r) == keys for r in rows)
        if stage == "sft":
            assert all(r["completion"][0]["content"].startswith("{") for r in rows)
        else:
            assert all(r["chosen"][0]["content"] != r["rejected"][0]["content"] for r in rows)
        code, _, err = run_cli(["pathmind", "finetune", "--base", tiny, "--stage", stage, "--data", out,
                                "--out", tmp_path / f"lora-{stage}", "--max-steps", "4", "--lr", "5e-3"], capsys)
        assert code == 0, err
        line = [x for x in err.splitlines() if x.startswith("wrote")][-1]
        first, last = (float(v) for v in line.split("loss ")[1].split(" -> "))
        assert last < first  # the loss moves down
        assert (tmp_path / f"lora-{stage}" / "adapter_config.json").is_file()
