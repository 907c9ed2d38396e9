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
    n: int = 1  # samples from one request (vLLM ``n``, OpenAI ``n``); one call whatever n is


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
    """One request's reply. With ``n`` samples, ``samples`` holds every text (``text`` is the
    first) and ``completion_tokens`` their sum; the prompt is counted once."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    estimated: bool = False  # token counts are ``count_tokens`` estimates (no usage reported)
    failed_attempts: int = 0  # attempts that failed before this reply came (retries)
    samples: tuple[str, ...] = ()

    def texts(self) -> list[str]:
        """Every sample's text (just ``text`` for a one-sample request)."""
        return list(self.samples) if self.samples else [self.text]


def fan_out(prompts: list[str], settings: list[GenerationParams]) -> tuple[list[str], list[GenerationParams]]:
    """For backends without native ``n``: one one-sample request per sample; sample ``i`` of a
    prompt runs with seed ``seed + i`` (as ``adapath llm serve`` does)."""
    flat_prompts, flat_settings = [], []
    for prompt, setting in zip(prompts, settings):
        for i in range(max(1, setting.n)):
            flat_prompts.append(prompt)
            flat_settings.append(replace(setting, n=1, seed=setting.seed + i))
    return flat_prompts, flat_settings


def fold(generations: list[Generation], settings: list[GenerationParams]) -> list[Generation]:
    """The inverse of ``fan_out``: one ``Generation`` per original request, its samples
    gathered (one call: the prompt counted once, the completions summed)."""
    out, at = [], 0
    for setting in settings:
        n = max(1, setting.n)
        part, at = generations[at:at + n], at + n
        if n == 1:
            out.append(part[0])
            continue
        out.append(Generation(part[0].text, part[0].prompt_tokens, sum(g.completion_tokens for g in part),
                              any(g.estimated for g in part), sum(g.failed_attempts for g in part),
                              tuple(g.text for g in part)))
    return out


@dataclass
class Usage:
    """LLM cost charged to one query. A request is one call however many samples it returns;
    ``estimated_calls`` counts calls whose tokens are estimates (the reply reported no usage);
    ``failed_attempts`` counts attempts that failed and were retried, apart from the calls."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    estimated_calls: int = 0
    failed_attempts: int = 0

    def add(self, generations: list[Generation], seconds: float, share: float = 1.0) -> None:
        self.calls += len(generations)
        self.prompt_tokens += sum(g.prompt_tokens for g in generations)
        self.completion_tokens += sum(g.completion_tokens for g in generations)
        self.estimated_calls += sum(bool(g.estimated) for g in generations)
        self.failed_attempts += sum(g.failed_attempts for g in generations)
        self.seconds += seconds * share

    def as_dict(self) -> dict:
        out = {"calls": self.calls, "prompt_tokens": self.prompt_tokens,
               "completion_tokens": self.completion_tokens, "seconds": round(self.seconds, 4)}
        # written only when they happened, so result lines without them read as before
        if self.estimated_calls:
            out["estimated_calls"] = self.estimated_calls
        if self.failed_attempts:
            out["failed_attempts"] = self.failed_attempts
        return out


class LLMBackend(Protocol):
    name: str

    def generate(self, prompts: list[str], params: ParamsArg) -> list[Generation]:
        """One generation per prompt, in order. Prompts are user messages of a chat; ``params``
        is one setting for all or a list of one per prompt (see ``per_prompt``). A setting with
        ``n > 1`` asks for n samples in one request: its ``Generation.samples`` holds them."""
        ...


def count_tokens(text: str) -> int:
    """A tokenizer-free estimate (whitespace words x 4/3) for backends that report none."""
    return max(1, round(len(text.split()) * 4 / 3)) if text else 0


@dataclass
class ScriptedBackend:
    """Deterministic replies for tests: the first rule whose key occurs in the prompt wins.

    A setting with ``n > 1`` is one request whose samples are scripted with seeds
    ``seed + i``; ``batches`` and ``seen`` count requests, ``params_seen`` every sample's
    setting. Token counts are ``count_tokens`` estimates and say so.

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
        self.seen.extend(prompts)
        flat_prompts, flat_settings = fan_out(prompts, settings)
        return fold([self._reply(p, s) for p, s in zip(flat_prompts, flat_settings)], settings)

    def _reply(self, prompt: str, setting: GenerationParams) -> Generation:
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
        return Generation(reply, count_tokens(prompt), count_tokens(reply), estimated=True)
