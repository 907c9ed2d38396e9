"""Local backends, each imported only when chosen: vLLM's offline engine, HF transformers
from a local path, and llama.cpp GGUF files through llama-cpp-python.

Each checks that its model exists before importing anything heavy, so a wrong path is one
line, not a hub lookup; ``make_backend`` turns load failures into one-line errors too.
"""

from __future__ import annotations

from pathlib import Path

from adapath.errors import InputError
from adapath.llm.base import (
    Generation,
    GenerationParams,
    ParamsArg,
    count_tokens,
    fan_out,
    fold,
    per_prompt,
)


def _missing(package: str, extra: str) -> InputError:
    return InputError(f"this backend needs {package}: pip install 'adapath[{extra}]'")


def _looks_like_path(text: str) -> bool:
    return text.startswith(("/", "./", "../", "~")) or text.endswith(".gguf")


def adapter_rank(adapter: str, spec: str) -> int:
    """The LoRA rank of an adapter directory (peft's ``adapter_config.json``); a directory
    without one is a one-line error."""
    import json

    config = Path(adapter).expanduser() / "adapter_config.json"
    if not config.is_file():
        raise InputError(f"{spec}: --llm-option adapter={adapter}: no LoRA adapter there (adapter_config.json)")
    return int(json.loads(config.read_text()).get("r", 8))


class VLLMBackend:
    """vLLM offline engine: one ``chat`` call per batch (one sampling setting per prompt);
    prefix caching; tensor and pipeline parallel across GPUs, and across nodes with
    ``distributed_executor_backend=ray`` (vLLM then places its workers on the Ray cluster this
    process is connected to; ``ray start`` on each node first)."""

    def __init__(self, model: str, tensor_parallel_size: int = 1, enable_prefix_caching: bool = True,
                 max_model_len: int | None = None, gpu_memory_utilization: float = 0.9,
                 dtype: str = "auto", pipeline_parallel_size: int = 1,
                 distributed_executor_backend: str | None = None, adapter: str | None = None):
        """``adapter``: a LoRA adapter directory (peft's format), applied to every request."""
        if _looks_like_path(model) and not Path(model).expanduser().exists():
            raise InputError(f"vllm:{model}: no model there")
        lora = {}
        if adapter:
            rank = adapter_rank(adapter, f"vllm:{model}")
            # vLLM preallocates LoRA slots of a fixed rank: the next size it supports
            lora = {"enable_lora": True, "max_lora_rank": next(r for r in (8, 16, 32, 64, 128, 256, 320, 512)
                                                              if r >= rank)}
        try:
            from vllm import LLM
        except ImportError:
            raise _missing("vllm", "llm") from None
        self.name = f"vllm:{model}"
        self.lora_request = None
        if adapter:
            from vllm.lora.request import LoRARequest

            self.lora_request = LoRARequest("adapter", 1, str(Path(adapter).expanduser()))
        self.llm = LLM(model=str(Path(model).expanduser()) if _looks_like_path(model) else model,
                       tensor_parallel_size=tensor_parallel_size, enable_prefix_caching=enable_prefix_caching,
                       max_model_len=max_model_len, gpu_memory_utilization=gpu_memory_utilization, dtype=dtype,
                       pipeline_parallel_size=pipeline_parallel_size,
                       distributed_executor_backend=distributed_executor_backend, **lora)

    def generate(self, prompts: list[str], params: ParamsArg) -> list[Generation]:
        from vllm import SamplingParams

        sampling = [SamplingParams(max_tokens=p.max_tokens, temperature=p.temperature, top_p=p.top_p,
                                   seed=p.seed, stop=list(p.stop) or None, n=max(1, p.n))
                    for p in per_prompt(params, len(prompts))]
        outputs = self.llm.chat([[{"role": "user", "content": p}] for p in prompts], sampling, use_tqdm=False,
                                lora_request=self.lora_request)
        # n samples of one prompt are one request: the prompt counted once, completions summed
        return [Generation(o.outputs[0].text, len(o.prompt_token_ids), sum(len(c.token_ids) for c in o.outputs),
                           samples=tuple(c.text for c in o.outputs) if len(o.outputs) > 1 else ())
                for o in outputs]


_DTYPES = ("auto", "float32", "float16", "bfloat16")


def check_device(device: str) -> str:
    """``cpu``, ``cuda``, ``cuda:N`` or ``mps``; a GPU that is not there is an error, not a
    silent fall-back to the CPU."""
    kind, _, index = device.partition(":")
    if kind not in ("cpu", "cuda", "mps") or (index and not index.isdigit()) or (index and kind != "cuda"):
        raise InputError(f"--device {device!r}: expected cpu, cuda, cuda:N or mps")
    if kind == "cpu":
        return device
    import torch

    if kind == "cuda" and (not torch.cuda.is_available() or int(index or 0) >= torch.cuda.device_count()):
        raise InputError(f"--device {device}: no such CUDA device here")
    if kind == "mps" and not torch.backends.mps.is_available():
        raise InputError("--device mps: MPS is not available here")
    return device


class HFBackend:
    """transformers from a local directory, or a ``.gguf`` file (de-quantized on load).

    Prompts with the same settings go through one padded ``generate``; settings that differ
    (a self-consistency batch's seeds) each get their own, so a sample depends on its seed.
    """

    def __init__(self, path: str, device: str = "cpu", dtype: str = "auto", adapter: str | None = None):
        """``adapter``: a LoRA adapter directory (peft's format), merged into the weights on load."""
        target = Path(path).expanduser()
        if path.endswith(".gguf"):
            if not target.is_file():
                raise InputError(f"hf:{path}: no such GGUF file")
            directory, kwargs = str(target.parent), {"gguf_file": target.name}
        else:
            if not target.is_dir():
                raise InputError(f"hf:{path}: no model directory there (hf: takes a local directory or .gguf file)")
            directory, kwargs = str(target), {}
        if dtype not in _DTYPES:
            raise InputError(f"--llm-option dtype={dtype!r}: choose {', '.join(_DTYPES)}")
        if adapter:
            adapter_rank(adapter, f"hf:{path}")
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            from adapath.quiet import quiet_gguf_loading, quiet_third_party
        except ImportError:
            raise _missing("transformers and torch", "hf") from None
        if path.endswith(".gguf"):
            import importlib.util

            if importlib.util.find_spec("gguf") is None:
                raise _missing("gguf (to read .gguf files with transformers)", "hf")
        device = check_device(device)
        self.name = f"hf:{path}"
        if path.endswith(".gguf"):
            quiet_gguf_loading()
        else:
            quiet_third_party()
        self.tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True, **kwargs)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        torch_dtype = "auto" if dtype == "auto" else getattr(torch, dtype)
        model = AutoModelForCausalLM.from_pretrained(directory, local_files_only=True, torch_dtype=torch_dtype,
                                                     **kwargs)
        if kwargs:
            model = dequantized(model)
        if adapter:
            try:
                from peft import PeftModel
            except ImportError:
                raise _missing("peft (to load a LoRA adapter)", "train") from None
            model = PeftModel.from_pretrained(model, str(Path(adapter).expanduser())).merge_and_unload()
            self.name += f"+{adapter}"
        self.model = model.to(device).eval()
        self.torch, self.device = torch, device

    def generate(self, prompts: list[str], params: ParamsArg) -> list[Generation]:
        requested = per_prompt(params, len(prompts))
        prompts, settings = fan_out(prompts, requested)  # n samples: n seeds, one call each request
        return fold(self._grouped(prompts, settings), requested)

    def _grouped(self, prompts: list[str], settings: list[GenerationParams]) -> list[Generation]:
        groups: dict[GenerationParams, list[int]] = {}
        for i, setting in enumerate(settings):
            groups.setdefault(setting, []).append(i)
        out: list[Generation | None] = [None] * len(prompts)
        for setting, members in groups.items():
            for i, generation in zip(members, self._generate([prompts[i] for i in members], setting)):
                out[i] = generation
        return out

    def _generate(self, prompts: list[str], params: GenerationParams) -> list[Generation]:
        texts = [self.tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                                    add_generation_prompt=True) for p in prompts]
        batch = self.tokenizer(texts, return_tensors="pt", padding=True).to(self.device)
        self.torch.manual_seed(params.seed)
        sampled = params.temperature > 0
        with self.torch.no_grad():
            out = self.model.generate(**batch, max_new_tokens=params.max_tokens, do_sample=sampled,
                                      temperature=params.temperature if sampled else None,
                                      top_p=params.top_p if sampled else None, top_k=None,
                                      pad_token_id=self.tokenizer.pad_token_id)
        width = batch["input_ids"].shape[1]
        results = []
        for i in range(len(prompts)):
            new = out[i, width:]
            text = self.tokenizer.decode(new, skip_special_tokens=True)
            for stop in params.stop:
                text = text.split(stop)[0]
            prompt_tokens = int(batch["attention_mask"][i].sum())
            completion = int((new != self.tokenizer.pad_token_id).sum())
            results.append(Generation(text, prompt_tokens, completion))
        return results


def dequantized(model):
    """A model read from a ``.gguf`` file with its quantization marks removed: transformers
    de-quantizes the tensors to float32 on load but keeps the model flagged as GGUF-quantized,
    which refuses training and adapters."""
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return model


class GGUFBackend:
    """llama.cpp through llama-cpp-python; prompts run one after another."""

    def __init__(self, path: str, n_ctx: int = 4096, n_threads: int | None = None, n_gpu_layers: int = 0):
        if not Path(path).expanduser().is_file():
            raise InputError(f"gguf:{path}: no such GGUF file")
        try:
            from llama_cpp import Llama
        except ImportError:
            raise _missing("llama-cpp-python", "gguf") from None
        self.name = f"gguf:{path}"
        self.llm = Llama(model_path=str(Path(path).expanduser()), n_ctx=n_ctx, n_threads=n_threads,
                         n_gpu_layers=n_gpu_layers, verbose=False)

    def generate(self, prompts: list[str], params: ParamsArg) -> list[Generation]:
        requested = per_prompt(params, len(prompts))
        out = []
        for prompt, p in zip(*fan_out(prompts, requested)):
            reply = self.llm.create_chat_completion(
                messages=[{"role": "user", "content": prompt}], max_tokens=p.max_tokens,
                temperature=p.temperature, top_p=p.top_p, seed=p.seed, stop=list(p.stop) or None)
            usage = reply.get("usage") or {}
            text = reply["choices"][0]["message"]["content"] or ""
            out.append(Generation(text, int(usage.get("prompt_tokens") or count_tokens(prompt)),
                                  int(usage.get("completion_tokens") or count_tokens(text)),
                                  estimated=not usage.get("prompt_tokens")))
        return fold(out, requested)
