"""Local backends, each imported only when chosen: vLLM's offline engine, HF transformers
from a local path, and llama.cpp GGUF files through llama-cpp-python."""

from __future__ import annotations

from adapath.errors import InputError
from adapath.llm.base import Generation, GenerationParams


def _missing(package: str, extra: str) -> InputError:
    return InputError(f"this backend needs {package}: pip install 'adapath[{extra}]'")


class VLLMBackend:
    """vLLM offline engine: one ``chat`` call per batch; tensor parallel and prefix caching."""

    def __init__(self, model: str, tensor_parallel_size: int = 1, prefix_caching: bool = True,
                 max_model_len: int | None = None, gpu_memory_utilization: float = 0.9):
        try:
            from vllm import LLM
        except ImportError:
            raise _missing("vllm", "llm") from None
        self.name = f"vllm:{model}"
        self.llm = LLM(model=model, tensor_parallel_size=tensor_parallel_size,
                       enable_prefix_caching=prefix_caching, max_model_len=max_model_len,
                       gpu_memory_utilization=gpu_memory_utilization)

    def generate(self, prompts: list[str], params: GenerationParams) -> list[Generation]:
        from vllm import SamplingParams

        sampling = SamplingParams(max_tokens=params.max_tokens, temperature=params.temperature,
                                  top_p=params.top_p, seed=params.seed, stop=list(params.stop) or None)
        outputs = self.llm.chat([[{"role": "user", "content": p}] for p in prompts], sampling,
                                use_tqdm=False)
        return [Generation(o.outputs[0].text, len(o.prompt_token_ids), len(o.outputs[0].token_ids))
                for o in outputs]


class HFBackend:
    """transformers from a local directory (or a GGUF file inside it via ``gguf_file``)."""

    def __init__(self, path: str, gguf_file: str | None = None, device: str = "cpu"):
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError:
            raise _missing("transformers and torch", "hf") from None
        self.name = f"hf:{path}"
        kwargs = {"gguf_file": gguf_file} if gguf_file else {}
        self.tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(path, **kwargs).to(device).eval()
        self.torch, self.device = torch, device

    def generate(self, prompts: list[str], params: GenerationParams) -> list[Generation]:
        texts = [self.tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                                    add_generation_prompt=True) for p in prompts]
        batch = self.tokenizer(texts, return_tensors="pt", padding=True).to(self.device)
        self.torch.manual_seed(params.seed)
        with self.torch.no_grad():
            out = self.model.generate(**batch, max_new_tokens=params.max_tokens,
                                      do_sample=params.temperature > 0,
                                      temperature=params.temperature or None, top_p=params.top_p,
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


class GGUFBackend:
    """llama.cpp through llama-cpp-python; prompts run one after another."""

    def __init__(self, path: str, n_ctx: int = 4096, n_threads: int | None = None):
        try:
            from llama_cpp import Llama
        except ImportError:
            raise _missing("llama-cpp-python", "gguf") from None
        self.name = f"gguf:{path}"
        self.llm = Llama(model_path=path, n_ctx=n_ctx, n_threads=n_threads, verbose=False)

    def generate(self, prompts: list[str], params: GenerationParams) -> list[Generation]:
        out = []
        for prompt in prompts:
            reply = self.llm.create_chat_completion(
                messages=[{"role": "user", "content": prompt}], max_tokens=params.max_tokens,
                temperature=params.temperature, top_p=params.top_p, seed=params.seed,
                stop=list(params.stop) or None)
            usage = reply.get("usage") or {}
            out.append(Generation(reply["choices"][0]["message"]["content"] or "",
                                  int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))))
        return out
