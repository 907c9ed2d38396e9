"""The reasoner: training data from PathMind's own selection (with and without a Path-Bank),
LoRA SFT then DPO against the SFT model on a tiny local model, and the adapter loaded by the
hf: and vllm: backends."""

import json
import sys
import types

import numpy as np
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
    """A graph, questions, a PathMind model trained without any bank, and a Path-Bank beside."""
    from adapath.datasets.generate import QueryGenerator
    from adapath.sources.synthetic import generate

    root = tmp_path_factory.mktemp("pm")
    graph = generate(scale=0.02, seed=6)
    graph.save(root / "kg")
    records = QueryGenerator(graph).generate(40, seed=2)
    (root / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    code = run_cli_quiet(["pathmind", "train", "--kg", root / "kg", "--queries", f"biostrat:{root / 'q.jsonl'}",
                          "--out", root / "model", "--epochs", "2", "--encoder", "hashing"])
    assert code == 0
    code = run_cli_quiet(["bank", "build", "--kg", root / "kg", "--queries", f"biostrat:{root / 'q.jsonl'}",
                          "--out", root / "bank"])
    assert code == 0
    return root, graph, records


def run_cli_quiet(args) -> int:
    from adapath.cli import main

    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def data_args(root, stage, out, *extra):
    return ["pathmind", "reasoner-data", "--kg", root / "kg", "--model", root / "model", "--queries",
            f"biostrat:{root / 'q.jsonl'}", "--stage", stage, "--out", out, *extra]


@pytest.mark.parametrize("bank", [False, True])
def test_reasoner_data_from_the_selection_with_and_without_a_bank(pathmind_setup, tmp_path, capsys, bank):
    root, graph, records = pathmind_setup
    extra = ["--method", "pathmind+walk", "--bank", root / "bank"] if bank else []
    by_id = {str(r["data_id"]): r for r in records}
    for stage in ("sft", "dpo"):
        out = tmp_path / f"{stage}.jsonl"
        code, _, err = run_cli(data_args(root, stage, out, *extra), capsys)
        assert code == 0, err
        rows = [json.loads(x) for x in out.read_text().splitlines()]
        assert rows
        if stage == "sft":
            assert len(rows) == len(records)
            for row, record in zip(rows, records):
                assert row["prompt"][0]["content"].startswith("Answer the biomedical question using the prioritized")
                assert record["explicit_query"] in row["prompt"][0]["content"]
                assert row["completion"][0]["content"].startswith("{" + record["answer_entity"]["name"] + "}")
            continue
        names = {graph.name(i) for i in range(graph.num_nodes)}
        for row in rows:
            record = next(r for r in records if r["explicit_query"] in row["prompt"][0]["content"])
            valid = {graph.name(i) for i in graph.index_of([int(v) for v in record["valid_answer_ids"]],
                                                           missing="ignore") if i >= 0}
            rejected = row["rejected"][0]["content"]
            ends = [e.strip("{}") for e in rejected.split(" Answer: ")[1].split("} {")]
            assert ends and not set(ends) & valid and set(ends) <= names  # remaining candidates, none valid
            assert row["chosen"][0]["content"].endswith("}") and rejected != row["chosen"][0]["content"]
        assert set(by_id)  # every row's question is one of the records


def test_reasoner_data_for_the_blend_needs_its_bank(pathmind_setup, tmp_path, capsys):
    root, _, _ = pathmind_setup
    code, _, err = run_cli(data_args(root, "sft", tmp_path / "x.jsonl", "--method", "pathmind+walk"), capsys)
    assert code == 2 and err.strip() == "adapath: error: --method pathmind+walk needs --bank"
    assert not (tmp_path / "x.jsonl").exists()


def test_answers_do_not_change_when_the_bank_is_removed(pathmind_setup, tmp_path, capsys):
    import shutil

    root, _, _ = pathmind_setup
    bank = tmp_path / "bank"
    shutil.copytree(root / "bank", bank)
    base = ["answer", "--method", "pathmind", "--model", root / "model", "--kg", root / "kg", "--queries",
            f"biostrat:{root / 'q.jsonl'}", "--encoder", "hashing"]
    code, _, err = run_cli([*base, "--bank", bank, "--out", tmp_path / "with.jsonl"], capsys)
    assert code == 0, err
    shutil.rmtree(bank)
    code, _, err = run_cli([*base, "--out", tmp_path / "without.jsonl"], capsys)
    assert code == 0, err
    with_bank = [json.loads(x) for x in (tmp_path / "with.jsonl").read_text().splitlines()]
    without = [json.loads(x) for x in (tmp_path / "without.jsonl").read_text().splitlines()]
    keys = ("answer", "answer_set", "paths", "explored", "prioritized")
    assert [[r[k] for k in keys] for r in with_bank] == [[r[k] for k in keys] for r in without]


def test_sft_then_dpo_from_the_sft_adapter(pathmind_setup, tiny, tmp_path, capsys):
    root, _, _ = pathmind_setup
    for stage in ("sft", "dpo"):
        code, _, err = run_cli(data_args(root, stage, tmp_path / f"{stage}-all.jsonl"), capsys)
        assert code == 0, err
        # two rows, one batch: every step sees the same examples, so the loss falls step by step
        rows = (tmp_path / f"{stage}-all.jsonl").read_text().splitlines(keepends=True)
        (tmp_path / f"{stage}.jsonl").write_text("".join(rows[:2]))
    code, _, err = run_cli(["pathmind", "finetune", "--base", tiny, "--stage", "dpo", "--data", tmp_path / "dpo.jsonl",
                            "--out", tmp_path / "dpo"], capsys)
    assert code == 2 and "--stage dpo needs --sft-adapter DIR" in err
    adapters = {}
    for stage in ("sft", "dpo"):
        extra = ["--sft-adapter", adapters["sft"]] if stage == "dpo" else []
        code, _, err = run_cli(["pathmind", "finetune", "--base", tiny, "--stage", stage, "--data",
                                tmp_path / f"{stage}.jsonl", "--out", tmp_path / stage, "--max-steps", "5",
                                "--lr", "5e-3", "--batch-size", "2", *extra], capsys)
        assert code == 0, err
        line = [x for x in err.splitlines() if x.startswith("wrote")][-1]
        first, last = (float(v) for v in line.split("loss ")[1].split(" -> "))
        assert last < first  # the loss moves down
        adapters[stage] = tmp_path / stage
        config = json.loads((tmp_path / stage / "adapter_config.json").read_text())
        assert sorted(config["target_modules"]) == ["q_proj", "v_proj"] and config["r"] == 8


def tiny_adapter(tiny, out, seed=0):
    """A LoRA adapter of the tiny model with random, non-zero weights (peft's init leaves B zero)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(str(tiny))
    config = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], init_lora_weights=False,
                        task_type="CAUSAL_LM")
    peft_model = get_peft_model(model, config)
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 2.0)
    peft_model.save_pretrained(str(out))
    return out


def logits_of(model, tokenizer, text="Which drug treats migraine?"):
    import torch

    batch = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        return model(**batch).logits


def test_dpo_reference_is_the_sft_model(tiny, tmp_path):
    """The DPO trainer's frozen reference adapter is the SFT adapter: its logits are the SFT
    model's (base + SFT adapter, loaded on its own), not the base model's."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from adapath.methods.pathmind.sft_dpo import make_trainer

    sft = tiny_adapter(tiny, tmp_path / "sft")
    data = tmp_path / "dpo.jsonl"
    row = {"prompt": [{"role": "user", "content": "Which drug treats migraine?"}],
           "chosen": [{"role": "assistant", "content": "{sumatriptan}"}],
           "rejected": [{"role": "assistant", "content": "{aspirin}"}]}
    data.write_text(json.dumps(row) + "\n")
    trainer = make_trainer(tiny, "dpo", data, tmp_path / "out", max_steps=1, sft_adapter=sft)
    tokenizer = AutoTokenizer.from_pretrained(str(tiny))
    model = trainer.model
    assert set(model.peft_config) == {"default", "ref"}
    model.set_adapter("ref")
    reference = logits_of(model, tokenizer)
    model.set_adapter("default")
    sft_model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(str(tiny)), str(sft))
    base = AutoModelForCausalLM.from_pretrained(str(tiny))
    assert torch.allclose(reference, logits_of(sft_model, tokenizer), atol=1e-5)
    assert not torch.allclose(reference, logits_of(base, tokenizer), atol=1e-3)
    assert not any(p.requires_grad for n, p in model.named_parameters() if ".ref." in n)


def test_hf_backend_loads_an_adapter_that_changes_its_output(tiny, tmp_path):
    from adapath.errors import InputError
    from adapath.llm import GenerationParams, make_backend

    adapter = tiny_adapter(tiny, tmp_path / "lora")
    params = GenerationParams(max_tokens=12)
    plain = make_backend(f"hf:{tiny}").generate(["Which drug treats migraine?"], params)[0].text
    tuned_backend = make_backend(f"hf:{tiny}", {"adapter": str(adapter)})
    tuned = tuned_backend.generate(["Which drug treats migraine?"], params)[0].text
    assert tuned != plain
    again = make_backend(f"hf:{tiny}").generate(["Which drug treats migraine?"], params)[0].text
    assert again == plain  # the base model is unchanged by loading an adapter elsewhere
    with pytest.raises(InputError, match="no LoRA adapter there"):
        make_backend(f"hf:{tiny}", {"adapter": str(tmp_path)})


def test_vllm_backend_sends_every_request_with_the_lora_adapter(tmp_path, monkeypatch):
    """vLLM is not installed here: a stand-in module records what the backend asks of it."""
    from adapath.llm import GenerationParams, make_backend

    adapter = tmp_path / "lora"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"r": 12, "target_modules": ["q_proj", "v_proj"]}))
    calls = {}

    class LLM:
        def __init__(self, **kwargs):
            calls["init"] = kwargs

        def chat(self, messages, sampling, use_tqdm=False, lora_request=None):
            calls["lora_request"] = lora_request
            output = types.SimpleNamespace(text="{x}", token_ids=[1, 2])
            return [types.SimpleNamespace(outputs=[output], prompt_token_ids=[1, 2, 3]) for _ in messages]

    class LoRARequest:
        def __init__(self, name, index, path):
            self.args = (name, index, path)

    vllm = types.ModuleType("vllm")
    vllm.LLM, vllm.SamplingParams = LLM, lambda **kwargs: kwargs
    lora = types.ModuleType("vllm.lora")
    request = types.ModuleType("vllm.lora.request")
    request.LoRARequest = LoRARequest
    for name, module in (("vllm", vllm), ("vllm.lora", lora), ("vllm.lora.request", request)):
        monkeypatch.setitem(sys.modules, name, module)
    model = tmp_path / "model"
    model.mkdir()
    backend = make_backend(f"vllm:{model}", {"adapter": str(adapter)})
    assert backend.generate(["q"], GenerationParams())[0].text == "{x}"
    assert calls["init"]["enable_lora"] is True and calls["init"]["max_lora_rank"] == 16
    assert calls["lora_request"].args == ("adapter", 1, str(adapter))
    plain = make_backend(f"vllm:{model}")
    plain.generate(["q"], GenerationParams())
    assert "enable_lora" not in calls["init"] and calls["lora_request"] is None


def test_answer_set_parsing():
    from adapath.llm.parse import parse_answer_set

    assert parse_answer_set("I think {Aspirin} then {yes} {ibuprofen} and {Aspirin} {}") == ["Aspirin", "ibuprofen"]
    assert parse_answer_set("no braces at all") == []
    assert np.array_equal(parse_answer_set("{ 'x' }"), ["x"])
