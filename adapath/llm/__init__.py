"""LLM backends behind one protocol: ``generate(prompts, params) -> generations``.

``make_backend`` turns a spec into a backend: ``none`` (no LLM), ``vllm:MODEL``,
``openai:URL#MODEL``, ``hf:PATH``, ``gguf:PATH``. Heavy packages are imported only by the
backend that needs them.
"""

from __future__ import annotations

from adapath.errors import InputError
from adapath.llm.base import (
    Generation,
    GenerationParams,
    LLMBackend,
    LLMError,
    ScriptedBackend,
    Usage,
)

__all__ = ["Generation", "GenerationParams", "LLMBackend", "LLMError", "ScriptedBackend", "Usage",
           "make_backend"]


def make_backend(spec: str, tensor_parallel_size: int = 1) -> LLMBackend | None:
    if spec in ("none", ""):
        return None
    kind, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise InputError(f"--llm {spec!r}: expected none, vllm:MODEL, openai:URL#MODEL, hf:PATH or gguf:PATH")
    if kind == "openai":
        from adapath.llm.openai_http import OpenAIHTTPBackend

        url, hash_, model = rest.rpartition("#")
        if not hash_ or not url or not model:
            raise InputError(f"--llm {spec!r}: expected openai:URL#MODEL")
        return OpenAIHTTPBackend(url, model)
    if kind == "vllm":
        from adapath.llm.local import VLLMBackend

        return VLLMBackend(rest, tensor_parallel_size=tensor_parallel_size)
    if kind == "hf":
        from adapath.llm.local import HFBackend

        if rest.endswith(".gguf"):
            from pathlib import Path

            return HFBackend(str(Path(rest).parent), gguf_file=Path(rest).name)
        return HFBackend(rest)
    if kind == "gguf":
        from adapath.llm.local import GGUFBackend

        return GGUFBackend(rest)
    raise InputError(f"--llm {spec!r}: unknown backend {kind!r}")
