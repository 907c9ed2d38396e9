"""LLM backends behind one protocol: ``generate(prompts, params) -> generations``.

``make_backend`` turns a spec into a backend: ``none`` (no LLM), ``vllm:MODEL``,
``openai:URL#MODEL`` (or ``openai:URL1,URL2#MODEL`` for several servers of one model),
``hf:PATH``, ``gguf:PATH``, with backend options (``--llm-option
KEY=VALUE``) checked against what that backend takes before anything is loaded. Heavy
packages are imported only by the backend that needs them.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from adapath.errors import InputError
from adapath.llm.base import (
    Generation,
    GenerationParams,
    LLMBackend,
    LLMError,
    ParamsArg,
    ScriptedBackend,
    Usage,
    override,
    per_prompt,
)
from adapath.typed import parse_as

__all__ = ["Generation", "GenerationParams", "LLMBackend", "LLMError", "ScriptedBackend", "Usage",
           "make_backend", "check_backend", "backend_options", "SamplingOverride",
           "ObservedBackend"]

# Sampling settings every backend takes: they replace what a method asks for on every call.
SAMPLING: dict[str, type] = {"temperature": float, "top_p": float, "max_tokens": int}
# Settings that shape how each backend loads its model.
LOADING: dict[str, dict[str, type]] = {
    "vllm": {"max_model_len": int, "gpu_memory_utilization": float, "tensor_parallel_size": int,
             "pipeline_parallel_size": int, "distributed_executor_backend": str,
             "enable_prefix_caching": bool, "dtype": str, "adapter": str},
    "hf": {"device": str, "dtype": str, "adapter": str},
    "gguf": {"n_ctx": int, "n_threads": int, "n_gpu_layers": int},
    "openai": {"timeout": float, "retries": int, "concurrency": int, "api_key": str},
}
# Options that change where or how fast a model runs, not what it replies: a result file may
# be resumed with other values of these.
PLACEMENT = frozenset({"device", "n_threads", "n_gpu_layers", "gpu_memory_utilization", "tensor_parallel_size",
                       "pipeline_parallel_size", "distributed_executor_backend",
                       "enable_prefix_caching", "timeout", "retries", "concurrency",
                       "api_key"})  # api_key: a secret, never written into a settings file
_SPECS = "none, vllm:MODEL, openai:URL#MODEL, hf:PATH or gguf:PATH"


def backend_options(kind: str) -> dict[str, type]:
    """Every option a backend kind takes, with its type."""
    return {**LOADING.get(kind, {}), **SAMPLING}


def _parse_value(key: str, value: Any, kind: type) -> Any:
    return parse_as(value, kind, f"--llm-option {key}") if isinstance(value, str) else value


def _check_options(kind: str, options: dict[str, Any]) -> dict[str, Any]:
    allowed = backend_options(kind)
    parsed = {}
    for key, value in options.items():
        if key not in allowed:
            raise InputError(f"--llm-option {key}: the {kind}: backend takes none such "
                             f"(it takes: {', '.join(sorted(allowed))})")
        parsed[key] = _parse_value(key, value, allowed[key])
    ranges = {"temperature": (0.0, 100.0), "top_p": (1e-9, 1.0), "max_tokens": (1, 10**7),
              "gpu_memory_utilization": (1e-9, 1.0), "max_model_len": (1, 10**8), "tensor_parallel_size": (1, 1024),
              "pipeline_parallel_size": (1, 1024),
              "n_ctx": (1, 10**8), "n_threads": (1, 4096), "n_gpu_layers": (-1, 10**6), "timeout": (1e-3, 1e6),
              "retries": (0, 100), "concurrency": (1, 4096)}
    backend = parsed.get("distributed_executor_backend")
    if backend is not None and backend not in ("ray", "mp"):
        raise InputError(f"--llm-option distributed_executor_backend={backend}: choose ray or mp")
    for key, value in parsed.items():
        if key in ranges and not ranges[key][0] <= value <= ranges[key][1]:
            low, high = ranges[key]
            raise InputError(f"--llm-option {key}={value}: must lie in [{low:g}, {high:g}]")
    return parsed


@dataclass
class SamplingOverride:
    """A backend whose every call uses the user's sampling settings (``--llm-option
    temperature=... top_p=... max_tokens=...``) in place of the method's."""

    backend: Any
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None

    @property
    def name(self) -> str:
        return self.backend.name

    def generate(self, prompts: list[str], params: ParamsArg) -> list[Generation]:
        changed = [override(p, temperature=self.temperature, top_p=self.top_p, max_tokens=self.max_tokens)
                   for p in per_prompt(params, len(prompts))]
        return self.backend.generate(prompts, changed)


@dataclass
class ObservedBackend:
    """A backend that reports each call once it returns: ``on_step(prompts, seconds)``, so a
    long run shows progress per LLM step rather than per batch of questions."""

    backend: Any
    on_step: Any

    @property
    def name(self) -> str:
        return self.backend.name

    def generate(self, prompts: list[str], params: ParamsArg) -> list[Generation]:
        start = time.perf_counter()
        out = self.backend.generate(prompts, params)
        self.on_step(len(prompts), time.perf_counter() - start)
        return out


def check_backend(spec: str, options: dict[str, Any] | None = None) -> tuple[str, str, dict[str, Any]]:
    """(kind, model, parsed options) of a spec, without loading anything: a wrong spec or
    option fails here, before a long run starts."""
    options = dict(options or {})
    if spec in ("none", ""):
        if options:
            raise InputError(f"--llm-option {next(iter(options))}: there is no LLM (--llm none)")
        return "none", "", {}
    kind, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise InputError(f"--llm {spec!r}: expected {_SPECS}")
    if kind not in LOADING:
        raise InputError(f"--llm {spec!r}: unknown backend {kind!r} (expected {_SPECS})")
    if kind == "openai":
        url, hash_, model = rest.rpartition("#")
        if not hash_ or not url or not model:
            raise InputError(f"--llm {spec!r}: expected openai:URL#MODEL")
    return kind, rest, _check_options(kind, options)


def make_backend(spec: str, options: dict[str, Any] | None = None,
                 tensor_parallel_size: int = 1) -> LLMBackend | None:
    """The backend a spec names; ``options`` (strings from the command line, or values) are
    validated for that backend first. A model that is not there or fails to load is an
    ``InputError``."""
    kind, rest, options = check_backend(spec, options)
    if kind == "none":
        return None
    sampling = {k: options.pop(k) for k in list(options) if k in SAMPLING}
    if kind == "vllm":
        options.setdefault("tensor_parallel_size", tensor_parallel_size)
    try:
        backend = _build(kind, rest, options)
    except InputError:
        raise
    except Exception as exc:  # a model that fails to load: one line, not a traceback
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise InputError(f"--llm {spec}: the model failed to load ({type(exc).__name__}: {first})") from None
    return SamplingOverride(backend, **sampling) if sampling else backend


def _build(kind: str, rest: str, options: dict[str, Any]) -> LLMBackend:
    if kind == "openai":
        from adapath.llm.openai_http import OpenAIHTTPBackend

        url, _, model = rest.rpartition("#")
        options.setdefault("api_key", os.environ.get("OPENAI_API_KEY") or None)
        return OpenAIHTTPBackend(url, model, **options)
    if kind == "vllm":
        from adapath.llm.local import VLLMBackend

        return VLLMBackend(rest, **options)
    if kind == "hf":
        from adapath.llm.local import HFBackend

        return HFBackend(rest, **options)
    from adapath.llm.local import GGUFBackend

    return GGUFBackend(rest, **options)
