"""The reasoner: training data from PathMind's own selection (with and without a Path-Bank),
LoRA SFT then DPO against the SFT model on a tiny local model (on the device there is, its
loss on the answer set alone), and the adapter loaded by the hf: and vllm: backends. Tests
that need trl or peft skip one by one where they are missing (the train extra installs them)."""

import json
import re
import sys
import types

import numpy as np
import pytest

from tests.conftest import run_cli
from tests.tiny_lm import make_tiny_lm


def needs(*modules):
    """Skip the calling test where a fine-tuning package is missing, saying which."""
    for module in modules:
        pytest.importorskip(module, reason=f"needs {module}, which fine-tuning uses: pip install -e '.[train]'")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    needs("transformers")
    return make_tiny_lm(tmp_path_factory.mktemp("tiny"))


# a step of a printed path: " -[r]-> " along the stored edge, " <-[r]- " against it
STEP = re.compile(r" (?:-\[([^\]]+)\]->|<-\[([^\]]+)\]-) ")


def printed_steps(prompt: str) -> list[tuple[str, str, str, bool]]:
    """(head, relation, tail, along the stored edge) of every step of the prompt's numbered paths."""
    steps = []
    for line in prompt.splitlines():
        if not re.match(r"\d+\. ", line):
            continue
        parts = STEP.split(line.split(". ", 1)[1])  # name, forward relation, backward relation, name, ...
        for i in range(0, len(parts) - 3, 3):
            forward, backward = parts[i + 1], parts[i + 2]
            steps.append((parts[i], forward or backward, parts[i + 3], forward is not None))
    return steps


def stored_edges(graph, by=lambda graph, v: graph.name(v)) -> set[tuple]:
    """The graph's edges in their stored direction (the reference a step's direction is read against)."""
    heads, relations, tails = graph.edges()
    return {(by(graph, int(h)), graph.relation_names[int(r)], by(graph, int(t))) for h, r, t in zip(heads, relations, tails)}


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
    stored = stored_edges(graph)
    for stage in ("sft", "dpo"):
        out = tmp_path / f"{stage}.jsonl"
        code, _, err = run_cli(data_args(root, stage, out, *extra), capsys)
        assert code == 0, err
        rows = [json.loads(x) for x in out.read_text().splitlines()]
        assert rows
        if stage == "sft":
            assert len(rows) == len(records)
            backward = 0
            for row, record in zip(rows, records):
                assert row["prompt"][0]["content"].startswith("Answer the biomedical question using the prioritized")
                assert record["explicit_query"] in row["prompt"][0]["content"]
                assert row["completion"][0]["content"].startswith("{" + record["answer_entity"]["name"] + "}")
                for head, relation, tail, forward in printed_steps(row["prompt"][0]["content"]):
                    # a step printed a -[r]-> b is stored a r b; one printed a <-[r]- b is stored b r a
                    assert ((head, relation, tail) if forward else (tail, relation, head)) in stored
                    backward += not forward
            assert backward  # the generated graph's walks do go against stored edges
            continue
        names = {graph.name(i) for i in range(graph.num_nodes)}
        asked = {r["explicit_query"]: r for r in records}
        assert len(rows) <= len(records)
        for row in rows:
            question = row["prompt"][0]["content"].split("\n")[0]
            assert question in asked  # every row's question is one of the records
            record = asked[question]
            valid = {graph.name(i) for i in graph.index_of([int(v) for v in record["valid_answer_ids"]],
                                                           missing="ignore") if i >= 0}
            rejected = row["rejected"][0]["content"]
            ends = [e.strip("{}") for e in rejected.split(" Answer: ")[1].split("} {")]
            assert ends and not set(ends) & valid and set(ends) <= names  # remaining candidates, none valid
            assert row["chosen"][0]["content"].endswith("}") and rejected != row["chosen"][0]["content"]


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
    # each step is [head, relation, tail] in walked order, "reversed" fourth where the graph stores tail -> head
    from adapath.engine.graph import KnowledgeGraph

    stored = stored_edges(KnowledgeGraph.load(root / "kg"), by=lambda graph, v: int(graph.node_id[v]))
    steps = [step for r in without for path in r["paths"] for step in path]
    for step in steps:
        assert (tuple(step[:3]) if len(step) == 3 else (step[2], step[1], step[0])) in stored
        assert len(step) == 3 or step[3] == "reversed"
    assert any(len(step) == 4 for step in steps) and any(len(step) == 3 for step in steps)


def test_sft_then_dpo_from_the_sft_adapter(pathmind_setup, tiny, tmp_path, capsys):
    needs("trl", "peft")
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
        record = json.loads((tmp_path / stage / "adapath_reasoner.json").read_text())
        assert record["learning_rate"] == 5e-3 and record["stage"] == stage


def tiny_adapter(tiny, out, seed=0):
    """A LoRA adapter of the tiny model with random, non-zero weights (peft's init leaves B zero)."""
    needs("peft")
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
    needs("trl", "peft")
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
    needs("peft")
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


# ------------------------------------------------------------------ the device fine-tuning runs on
@pytest.mark.parametrize("gpu, bf16, asked, expected", [
    (False, False, "auto", ("cpu", "float32")), (True, True, "auto", ("cuda", "bfloat16")),
    (True, False, "auto", ("cuda", "float16")), (True, True, "cpu", ("cpu", "float32")),
    (True, True, "cuda", ("cuda", "bfloat16"))])
def test_fine_tuning_takes_the_gpu_there_is(monkeypatch, gpu, bf16, asked, expected):
    import torch

    from adapath.methods.pathmind.sft_dpo import training_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: bf16)
    device, dtype = training_device(asked)
    assert (device, dtype) == (expected[0], getattr(torch, expected[1]))


def test_cuda_without_a_gpu_is_one_line(monkeypatch, tmp_path, capsys):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    data = tmp_path / "sft.jsonl"
    data.write_text("{}\n")
    base = ["pathmind", "finetune", "--base", tmp_path, "--stage", "sft", "--data", data, "--out", tmp_path / "out"]
    code, _, err = run_cli([*base, "--device", "cuda"], capsys)
    assert (code, err) == (2, "adapath: error: --device cuda: no CUDA device here (torch sees none)\n")
    code, _, err = run_cli([*base, "--device", "tpu"], capsys)
    assert (code, err) == (2, "adapath: error: --device 'tpu': choose auto, cpu, cuda\n")
    assert not (tmp_path / "out").exists()


def sft_row(tmp_path):
    data = tmp_path / "sft.jsonl"
    data.write_text(json.dumps({"prompt": [{"role": "user", "content": "Which drug treats migraine?"}],
                                "completion": [{"role": "assistant", "content": "{sumatriptan}"}]}) + "\n")
    return data


@pytest.mark.parametrize("stage", ["sft", "dpo"])
@pytest.mark.parametrize("bf16", [True, False])
def test_on_cuda_the_base_goes_to_the_gpu_in_half_precision(tiny, tmp_path, monkeypatch, stage, bf16):
    """With a GPU (mocked), the base is loaded in bfloat16 (float16 without it) onto cuda and
    the trainer runs mixed precision off the CPU; trl's classes are stand-ins that record."""
    needs("trl", "peft")
    import torch
    import trl

    from adapath.methods.pathmind import sft_dpo

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: bf16)
    loaded, seen, real_load = {}, {}, sft_dpo.load_base

    def load_base(base, dtype=None, device="cpu"):
        loaded.update(dtype=dtype, device=device)
        return real_load(base)  # the real loader, left on the CPU

    monkeypatch.setattr(sft_dpo, "load_base", load_base)
    for name in ("SFTConfig", "DPOConfig"):
        monkeypatch.setattr(trl, name, lambda seen=seen, **kwargs: seen.update(kwargs) or kwargs)
    for name in ("SFTTrainer", "DPOTrainer"):
        monkeypatch.setattr(trl, name, lambda **kwargs: kwargs)
    import peft  # peft reads an adapter through CUDA's pinned memory when it believes there is a GPU

    monkeypatch.setattr(peft, "PeftModel", types.SimpleNamespace(
        from_pretrained=lambda model, path, is_trainable: loaded.update(adapter=str(path)) or model))
    if stage == "sft":
        data, adapter = sft_row(tmp_path), None
    else:
        data, adapter = tmp_path / "dpo.jsonl", tiny_adapter(tiny, tmp_path / "sft")
        data.write_text(json.dumps({"prompt": [{"role": "user", "content": "q"}], "chosen": [{"role": "assistant",
                        "content": "{a}"}], "rejected": [{"role": "assistant", "content": "{b}"}]}) + "\n")
    sft_dpo.make_trainer(tiny, stage, data, tmp_path / "out", max_steps=1, sft_adapter=adapter)
    assert {k: loaded[k] for k in ("dtype", "device")} == {"dtype": torch.bfloat16 if bf16 else torch.float16,
                                                           "device": "cuda"}
    assert loaded.get("adapter") == (str(adapter) if adapter else None)
    assert (seen["use_cpu"], seen["bf16"], seen["fp16"]) == (False, bf16, not bf16)
    assert seen["learning_rate"] == (sft_dpo.SFT_LR if stage == "sft" else sft_dpo.DPO_LR)
    assert seen.get("completion_only_loss") is (True if stage == "sft" else None)


def test_without_a_gpu_fine_tuning_stays_on_the_cpu_in_float32(tiny, tmp_path, monkeypatch):
    needs("trl", "peft")
    import torch

    from adapath.methods.pathmind.sft_dpo import make_trainer

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    trainer = make_trainer(tiny, "sft", sft_row(tmp_path), tmp_path / "out", max_steps=1)
    assert (trainer.args.use_cpu, trainer.args.bf16, trainer.args.fp16) == (True, True, False)  # bf16 autocast
    weights = [p for n, p in trainer.model.named_parameters() if "lora" not in n]
    assert {p.device.type for p in weights} == {"cpu"} and {p.dtype for p in weights} == {torch.float32}


def test_sft_loss_is_on_the_answer_set_alone(tiny, tmp_path):
    """A tokenized example: the labels of the prompt (the chat template up to the assistant's
    turn) are -100, those of the completion (the answer set and the end of the turn) are its
    tokens; the reference is the tokenizer's own chat template."""
    needs("trl", "peft")
    from adapath.methods.pathmind.sft_dpo import make_trainer

    trainer = make_trainer(tiny, "sft", sft_row(tmp_path), tmp_path / "out", max_steps=1)
    assert trainer.args.completion_only_loss is True
    batch = trainer.data_collator([trainer.train_dataset[0]])
    ids, labels = batch["input_ids"][0], batch["labels"][0]
    masked = (labels == -100).tolist()
    cut = masked.index(False)
    assert all(masked[:cut]) and not any(masked[cut:]) and cut > 0  # a masked prefix, then the completion
    assert labels[cut:].tolist() == ids[cut:].tolist()
    tokenizer = trainer.processing_class
    question = [{"role": "user", "content": "Which drug treats migraine?"}]
    whole = tokenizer.apply_chat_template(question + [{"role": "assistant", "content": "{sumatriptan}"}],
                                          tokenize=False)
    asking = tokenizer.apply_chat_template(question, tokenize=False, add_generation_prompt=True)
    prompt_text, completion_text = tokenizer.decode(ids[:cut]), tokenizer.decode(ids[cut:])
    assert prompt_text + completion_text == whole
    assert prompt_text.strip() == asking.strip() and "migraine" in prompt_text
    assert completion_text.strip() == "{sumatriptan}" + tokenizer.eos_token
