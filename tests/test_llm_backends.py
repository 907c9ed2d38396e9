"""LLM backends: missing models and load failures are one-line errors, --llm-option is
checked per backend, sampling options reach every call, --device for hf:, settings per prompt."""

import json

import pytest

from adapath.errors import InputError
from adapath.llm import (
    GenerationParams,
    SamplingOverride,
    ScriptedBackend,
    check_backend,
    make_backend,
)
from adapath.llm.base import Usage
from adapath.methods.base import LLMCaller
from tests.conftest import run_cli


@pytest.mark.parametrize("spec, words", [
    ("hf:/nonexistent/model", "no model directory"),
    ("hf:/tmp/missing.gguf", "no such GGUF file"),
    ("gguf:/tmp/missing.gguf", "no such GGUF file"),
    ("vllm:/nonexistent/model", "no model there"),
])
def test_missing_models_fail_before_loading(spec, words):
    with pytest.raises(InputError, match=words) as info:
        make_backend(spec)
    assert "huggingface.co" not in str(info.value) and "\n" not in str(info.value)


def test_a_model_that_fails_to_load_is_one_line(tmp_path):
    pytest.importorskip("transformers")
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(InputError, match=r"the model failed to load \(") as info:
        make_backend(f"hf:{tmp_path}")
    assert "\n" not in str(info.value)


def test_answer_with_a_missing_model_exits_2_and_writes_nothing(tmp_path, capsys):
    from adapath.sources.synthetic import generate

    generate(scale=0.01, seed=3).save(tmp_path / "kg")
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "a", "question": "Which drug?", "topic_ids": [0]}) + "\n")
    for spec in ("hf:/nonexistent/model", "hf:/tmp/missing.gguf", "gguf:/tmp/missing.gguf", "vllm:/nonexistent/model"):
        out = tmp_path / "out.jsonl"
        code, _, err = run_cli(["answer", "--method", "io", "--kg", tmp_path / "kg", "--queries", f"questions:{questions}",
                                "--llm", spec, "--out", out], capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert not out.exists()
    code, _, err = run_cli(["answer", "--method", "io", "--kg", tmp_path / "kg", "--queries", f"questions:{questions}",
                            "--llm", "openai:http://127.0.0.1:1/v1#m", "--llm-option", "max_model_len=8",
                            "--out", tmp_path / "x.jsonl"], capsys)
    assert code == 2 and "--llm-option max_model_len: the openai: backend takes none such" in err
    code, _, err = run_cli(["answer", "--method", "io", "--kg", tmp_path / "kg", "--queries", f"questions:{questions}",
                            "--llm", "openai:http://127.0.0.1:1/v1#m", "--device", "cuda",
                            "--out", tmp_path / "x.jsonl"], capsys)
    assert code == 2 and "applies to the hf: LLM backend only" in err


def test_llm_options_are_checked_per_backend():
    kind, model, options = check_backend("vllm:/models/qwen", {"max_model_len": "4096",
                                                                "gpu_memory_utilization": "0.8", "temperature": "0.2",
                                                                "top_p": "0.9", "max_tokens": "128"})
    assert (kind, model) == ("vllm", "/models/qwen")
    assert options == {"max_model_len": 4096, "gpu_memory_utilization": 0.8, "temperature": 0.2, "top_p": 0.9,
                       "max_tokens": 128}
    assert check_backend("hf:/m", {"device": "cuda:1", "dtype": "bfloat16"})[2] == {"device": "cuda:1",
                                                                                      "dtype": "bfloat16"}
    assert check_backend("gguf:/m.gguf", {"n_ctx": "2048"})[2] == {"n_ctx": 2048}
    with pytest.raises(InputError, match=r"--llm-option device: the vllm: backend takes none such \(it takes: adapter, distributed_executor_backend, dtype"):
        check_backend("vllm:/m", {"device": "cuda"})
    with pytest.raises(InputError, match="--llm-option max_model_len: the hf: backend"):
        check_backend("hf:/m", {"max_model_len": "10"})
    with pytest.raises(InputError, match="max_model_len='long': expected an integer"):
        check_backend("vllm:/m", {"max_model_len": "long"})
    with pytest.raises(InputError, match=r"gpu_memory_utilization=1.5: must lie in"):
        check_backend("vllm:/m", {"gpu_memory_utilization": "1.5"})
    with pytest.raises(InputError, match="there is no LLM"):
        check_backend("none", {"temperature": "0"})
    with pytest.raises(InputError, match="unknown backend 'magic'"):
        check_backend("magic:x")


def test_sampling_options_replace_the_methods_settings():
    inner = ScriptedBackend(default="{x}")
    wrapped = SamplingOverride(inner, temperature=0.3, max_tokens=12)
    wrapped.generate(["a", "b"], [GenerationParams(max_tokens=256, seed=1), GenerationParams(temperature=0.9, seed=2)])
    assert [(p.temperature, p.max_tokens, p.top_p, p.seed) for p in inner.params_seen] == [(0.3, 12, 1.0, 1),
                                                                                           (0.3, 12, 1.0, 2)]
    backend = make_backend("openai:http://127.0.0.1:1/v1#m", {"temperature": "0", "timeout": "5", "retries": "0"})
    assert isinstance(backend, SamplingOverride) and backend.temperature == 0.0
    assert backend.backend.timeout == 5.0 and backend.backend.retries == 0 and backend.name.endswith("#m")


def test_llm_caller_sends_one_setting_per_prompt():
    backend = ScriptedBackend(rules={"q": lambda prompt, params: f"{{seed {params.seed}}}"})
    usages = [Usage()]
    replies = LLMCaller(backend)(["q", "q"], [0, 0], usages, [GenerationParams(seed=5), GenerationParams(seed=6)])
    assert replies == ["{seed 5}", "{seed 6}"] and backend.batches == [2] and usages[0].calls == 2
    with pytest.raises(ValueError, match="2 generation settings for 3 prompts"):
        backend.generate(["a", "b", "c"], [GenerationParams(), GenerationParams()])


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    pytest.importorskip("transformers")
    from tests.tiny_lm import make_tiny_lm

    return make_tiny_lm(tmp_path_factory.mktemp("tiny"))


def test_hf_device_and_per_prompt_seeds(tiny_lm):
    with pytest.raises(InputError, match="expected cpu, cuda, cuda:N or mps"):
        make_backend(f"hf:{tiny_lm}", {"device": "gpu"})
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="no such CUDA device"):
            make_backend(f"hf:{tiny_lm}", {"device": "cuda:0"})
    backend = make_backend(f"hf:{tiny_lm}", {"device": "cpu", "max_tokens": "6"})
    hot = [GenerationParams(temperature=1.0, seed=s) for s in (1, 2, 3)]
    batch = backend.generate(["aspirin target"] * 3, hot)
    alone = [backend.generate(["aspirin target"], [p])[0] for p in hot]
    # each sample depends on its own seed only, not on what else is in the batch
    assert [g.text for g in batch] == [g.text for g in alone]
    assert len({g.text for g in batch}) > 1  # and the seeds do differ
    assert all(0 < g.completion_tokens <= 6 for g in batch)


@pytest.mark.parametrize("args", [
    ["dataset", "build", "--kg", "nowhere", "--out", "x", "--llm", "none", "--llm-option", "temperature=0"],
    ["dataset", "topics", "--kg", "nowhere", "--out", "x", "--stark", "s.csv", "--llm", "hf:/m",
     "--llm-option", "n_ctx=4"],
    ["eval", "--results", "r.jsonl", "--queries", "biostrat:q.jsonl", "--out", "rep", "--judge-llm",
     "gguf:/m.gguf", "--llm-option", "device=cuda"],
])
def test_every_command_that_makes_an_llm_checks_its_options_first(args, capsys):
    code, _, err = run_cli(args, capsys)
    assert code == 2 and "--llm-option" in err and len(err.strip().splitlines()) == 1, err
