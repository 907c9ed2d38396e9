"""The contract every answering method follows (``Query`` and ``Result``, the contract with
``datasets`` and ``eval``, live in ``adapath.contract`` and are handed on here):

- ``Method``: ``answer(list[Query]) -> list[Result]``, one result per query, in order;
- ``MethodSpec``: a registered method (name, one-line summary, the paper it follows, the
  parameters it takes and how to build it from a ``MethodContext``); a method with a config
  dataclass lists its parameters with ``params_of`` and builds its config with ``config_from``,
  so each default is written once, in the dataclass;
- ``LLMCaller``: the one helper that sends a step's prompts of a whole batch to the backend
  as one batch and charges each query its share of the usage.

A method module declares ``METHODS = [MethodSpec(...), ...]`` at module level and keeps its
heavy imports inside the builder, so listing methods stays cheap (see ``registry``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from adapath.config import build, settings_of
from adapath.contract import Query, Result
from adapath.contract import ResultShapeError as ResultShapeError  # handed on to the runners
from adapath.contract import check_result_shape as check_result_shape  # handed on to the runners
from adapath.errors import InputError
from adapath.llm import GenerationParams, LLMBackend, Usage
from adapath.llm.base import ParamsArg
from adapath.retrieval import DEFAULT_ENCODER
from adapath.typed import parse_as


class Method(Protocol):
    name: str

    def answer(self, queries: list[Query]) -> list[Result]:
        """One result per query, in the order given."""
        ...


@dataclass(frozen=True)
class Param:
    """A method parameter, set with ``--param NAME=VALUE``; its type is its default's."""

    name: str
    default: Any
    help: str

    def parse(self, text: str) -> Any:
        return parse_as(text, type(self.default), f"--param {self.name}")


def params_of(kind: type, **defaults: Any) -> tuple[Param, ...]:
    """The settings of a config dataclass (``adapath.config.setting`` fields, in field order)
    as method parameters; ``defaults`` are a variant's own (``pog-d3``'s depth)."""
    params = tuple(Param(s.name, defaults.get(s.name, s.default), s.help) for s in settings_of(kind))
    unknown = set(defaults) - {p.name for p in params}
    if unknown:
        raise KeyError(f"{kind.__name__} has no setting {sorted(unknown)[0]!r}")
    return params


def config_from(kind: type, params: dict[str, Any], **defaults: Any) -> Any:
    """The config dataclass a method's resolved ``--param`` values describe (a setting they
    leave out takes the variant's default, else the dataclass's)."""
    return build(kind, {**defaults, **params})


@dataclass
class MethodContext:
    """What a method may be built from; the CLI and benches fill it once per run."""

    graph: Any  # adapath.engine.graph.KnowledgeGraph
    graph_dir: Path | None = None
    llm: LLMBackend | None = None
    encoder_spec: str = DEFAULT_ENCODER
    bank: Path | None = None
    model: Path | None = None
    params: dict[str, Any] = field(default_factory=dict)
    _encoder: Any = field(default=None, repr=False)

    def encoder(self):
        """The sentence encoder, built once."""
        if self._encoder is None:
            from adapath.retrieval.dense import make_encoder

            self._encoder = make_encoder(self.encoder_spec)
        return self._encoder

    def require(self, what: str, method: str) -> Any:
        value = getattr(self, what)
        if value is None:
            flag = {"llm": "--llm", "bank": "--bank", "model": "--model"}.get(what, what)
            raise InputError(f"--method {method} needs {flag}")
        return value


@dataclass(frozen=True)
class MethodSpec:
    name: str
    summary: str  # one line: what it is
    paper: str  # the paper (and code) it follows
    build: Callable[[MethodContext], Method]
    llm: str = "optional"  # "required", "optional" or "none": whether it needs --llm
    needs: tuple[str, ...] = ()  # other context it needs: "bank", "model"
    params: tuple[Param, ...] = ()
    path_finding: bool = True  # its results carry graph paths (Table 4 rows)
    repository: str = ""  # the official code it follows, "owner/name" ("" when there is none)
    calls: str = ""  # LLM calls per question, a short bound ("1", "<= 2D+1 = 7"); "" when not stated
    # Every way it still differs from that code by default, each with its reason.
    deviations: tuple[str, ...] = ()
    config: type | None = None  # the settings dataclass its params are made from (params_of)

    def resolve_params(self, given: dict[str, str]) -> dict[str, Any]:
        """Defaults overridden by ``--param`` values; unknown names are an error."""
        by_name = {p.name: p for p in self.params}
        unknown = sorted(set(given) - set(by_name))
        if unknown:
            known = ", ".join(by_name) or "none"
            raise InputError(f"--method {self.name} takes no parameter {unknown[0]!r} (it takes: {known})")
        out = {p.name: p.default for p in self.params}
        for key, text in given.items():
            out[key] = by_name[key].parse(text) if isinstance(text, str) else text
        return out

    def flags(self) -> str:
        parts = [{"required": "--llm", "optional": "[--llm]", "none": ""}[self.llm]]
        parts += [f"--{need}" for need in self.needs]
        parts += [f"{p.name}={p.default}" for p in self.params]
        return " ".join(p for p in parts if p)

    def make(self, context: MethodContext) -> Method:
        if self.llm == "required":
            context.require("llm", self.name)
        for need in self.needs:
            context.require(need, self.name)
        return self.build(context)


class LLMCaller:
    """Sends one step's prompts, from a whole batch of queries, to the backend as one batch,
    and charges each prompt's usage to the query that owns it (wall time split evenly).
    ``params`` is one setting for the step or one per prompt (e.g. a seed per sample).

    ``samples(prompts, owners, usages, params, n)`` asks for ``n`` samples of each prompt in
    one request each (vLLM ``SamplingParams.n``, the OpenAI ``n``; local backends loop with
    seeds ``seed + i``): one call per prompt, whatever ``n`` is."""

    def __init__(self, llm: LLMBackend | None, params: GenerationParams | None = None):
        self.llm = llm
        self.params = params or GenerationParams(max_tokens=256)

    def __call__(self, prompts: list[str], owners: list[int], usages: list[Usage],
                 params: ParamsArg | None = None) -> list[str]:
        if not prompts:
            return []
        if self.llm is None:
            raise RuntimeError("LLMCaller used without a backend")
        clock = time.perf_counter()
        generations = self.llm.generate(prompts, params or self.params)
        seconds = time.perf_counter() - clock
        for owner, generation in zip(owners, generations):
            usages[owner].add([generation], seconds, share=1.0 / len(generations))
        return [g.text for g in generations]

    def samples(self, prompts: list[str], owners: list[int], usages: list[Usage],
                params: GenerationParams | None = None, n: int = 1) -> list[list[str]]:
        """``n`` sampled replies per prompt, each prompt one request (one call)."""
        if not prompts:
            return []
        if self.llm is None:
            raise RuntimeError("LLMCaller used without a backend")
        setting = replace(params or self.params, n=n)
        clock = time.perf_counter()
        generations = self.llm.generate(prompts, setting)
        seconds = time.perf_counter() - clock
        for owner, generation in zip(owners, generations):
            usages[owner].add([generation], seconds, share=1.0 / len(generations))
        return [g.texts() if n > 1 else [g.text] for g in generations]
