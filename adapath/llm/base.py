"""The one protocol every LLM backend implements, and usage accounting."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol


class LLMError(RuntimeError):
    """A backend failed after its retries (server down, timeouts, malformed replies)."""


@dataclass(frozen=True)
class GenerationParams:
    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 42
    stop: tuple[str, ...] = ()


# One ``GenerationParams`` for a whole batch, or one per prompt (distinct seeds for
# self-consistency samples, requests of several clients batched by ``adapath llm serve``).
ParamsArg = GenerationParams | Sequence[GenerationParams]


def per_prompt(params: ParamsArg, count: int) -> list[GenerationParams]:
    """The settings of each of ``count`` prompts."""
    if isinstance(params, GenerationParams):
        return [params] * count
    params = list(params)
    if len(params) != count:
        raise ValueError(f"{len(params)} generation settings for {count} prompts")
    return params


def override(params: GenerationParams, **changes) -> GenerationParams:
    """``params`` with the given fields replaced (None values leave a field as it is)."""
    changes = {k: v for k, v in changes.items() if v is not None}
    return replace(params, **changes) if changes else params


@dataclass
class Generation:
    text: str
    prompt_tokens: int
    completion_tokens: int


@dataclass
class Usage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    def add(self, generations: list[Generation], seconds: float, share: float = 1.0) -> None:
        self.calls += len(generations)
        self.prompt_tokens += sum(g.prompt_tokens for g in generations)
        self.completion_tokens += sum(g.completion_tokens for g in generations)
        self.seconds += seconds * share

    def as_dict(self) -> dict:
        return {"calls": self.calls, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "seconds": round(self.seconds, 4)}


class LLMBackend(Protocol):
    name: str

    def generate(self, prompts: list[str], params: ParamsArg) -> list[Generation]:
        """One generation per prompt, in order. Prompts are user messages of a chat; ``params``
        is one setting for all or a list of one per prompt (see ``per_prompt``)."""
        ...


def count_tokens(text: str) -> int:
    """A tokenizer-free estimate (whitespace words x 4/3) for backends that report none."""
    return max(1, round(len(text.split()) * 4 / 3)) if text else 0


@dataclass
class ScriptedBackend:
    """Deterministic replies for tests: the first rule whose key occurs in the prompt wins.

    ``rules`` maps a substring to a reply, to a function of the prompt, or to a function of
    the prompt and its ``GenerationParams`` (to script replies per seed); ``default`` answers
    everything else. Every prompt is kept in ``seen`` (its settings in ``params_seen``) and
    every batch's size in ``batches``, so tests can inspect what was sent.
    """

    rules: dict = field(default_factory=dict)
    default: str = ""
    name: str = "scripted"
    seen: list[str] = field(default_factory=list)
    params_seen: list[GenerationParams] = field(default_factory=list)
    batches: list[int] = field(default_factory=list)

    def generate(self, prompts: list[str], params: ParamsArg) -> list[Generation]:
        settings = per_prompt(params, len(prompts))
        self.batches.append(len(prompts))
        out = []
        for prompt, setting in zip(prompts, settings):
            self.seen.append(prompt)
            self.params_seen.append(setting)
            reply = self.default
            for key, value in self.rules.items():
                if key in prompt:
                    if callable(value):
                        takes_params = len(inspect.signature(value).parameters) >= 2
                        reply = value(prompt, setting) if takes_params else value(prompt)
                    else:
                        reply = value
                    break
            out.append(Generation(reply, count_tokens(prompt), count_tokens(reply)))
        return out
