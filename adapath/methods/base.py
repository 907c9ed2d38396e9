"""The contract every answering method follows.

- ``Query``: what inference may read (id, level, question text, topic ids, options);
- ``Result``: one result line, with a JSON round trip;
- ``Method``: ``answer(list[Query]) -> list[Result]``, one result per query, in order;
- ``MethodSpec``: a registered method (name, one-line summary, the paper it follows, the
  parameters it takes and how to build it from a ``MethodContext``);
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

from adapath.errors import InputError
from adapath.llm import GenerationParams, LLMBackend, Usage
from adapath.llm.base import ParamsArg
from adapath.typed import parse_as


@dataclass(frozen=True)
class Query:
    """The only fields inference may read: no answer, path or triplet reaches a method."""

    id: str
    level: str
    text: str
    topic_ids: tuple[int, ...]  # external node ids, first topic first
    options: tuple[str, ...] = ()  # multiple choice (MedDDx); empty otherwise


# Fields every method shares; anything else a method records lives in ``Result.extra`` and
# is written at the top level of the JSON line.
_SHARED = ("id", "level", "method", "answer", "raw", "answer_source", "paths", "explored",
           "metapaths", "control", "fallback", "usage")


@dataclass
class Result:
    id: str
    level: str
    answer: str
    method: str = ""
    raw: str = ""  # the LLM's final reply, verbatim ("" without an LLM)
    # how the answer was read: "braces" ({...} in the reply), "mentioned" (a candidate the
    # reply names), "stated" (an answer stated in words, no braces), "best-path" (the reply was
    # unreadable: the best path's end), "extractive" (no LLM), "none" (nothing to answer with)
    answer_source: str = "extractive"
    paths: list[list[list]] = field(default_factory=list)  # [[head_id, relation, tail_id], ...]
    explored: dict[str, list[int]] = field(default_factory=dict)  # depth -> external ids
    metapaths: list[dict] = field(default_factory=list)  # [{"metapath", "score"}, ...]
    control: dict = field(default_factory=dict)  # predicted answer type and hops, when any
    fallback: str = ""
    usage: dict = field(default_factory=lambda: Usage().as_dict())
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict:
        out = {name: getattr(self, name) for name in _SHARED}
        clash = set(self.extra) & set(out)
        if clash:
            raise ValueError(f"extra fields shadow shared ones: {sorted(clash)}")
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, obj: dict) -> Result:
        """A result from its JSON line; a field of the wrong shape is a ``ResultShapeError``
        naming the field (a missing optional field, or null, takes its default)."""
        check_result_shape(obj)
        known = {k: obj[k] for k in _SHARED if k in obj and obj[k] is not None}
        known["id"] = str(known["id"])
        known.setdefault("level", "explicit")
        known["answer"] = str(known["answer"])
        extra = {k: v for k, v in obj.items() if k not in _SHARED}
        return cls(**known, extra=extra)


class ResultShapeError(ValueError):
    """A result line's field has the wrong shape; ``field`` names it."""

    def __init__(self, field_name: str, message: str):
        super().__init__(f"field '{field_name}': {message}")
        self.field = field_name


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_scalar(value) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _depth_key(field_name: str, key) -> None:
    try:
        int(key)
    except (TypeError, ValueError):
        raise ResultShapeError(field_name, f"depth {key!r}: expected integer depths") from None


def _check_triplets(field_name: str, steps, where: str) -> None:
    if not isinstance(steps, list):
        raise ResultShapeError(field_name, f"{where} must be a list of [head_id, relation, tail_id] steps")
    for step in steps:
        if not (isinstance(step, list) and len(step) == 3 and _is_int(step[0]) and isinstance(step[1], str)
                and _is_int(step[2])):
            raise ResultShapeError(field_name, f"{where}: step {step!r} is not [head_id, relation, tail_id] "
                                   "(two node ids and a relation name)")


def _check_metapaths(field_name: str, entries) -> None:
    if not isinstance(entries, list):
        raise ResultShapeError(field_name, "must be a list of {'metapath': str, 'score': float}")
    for entry in entries:
        if isinstance(entry, str):
            continue
        if not (isinstance(entry, dict) and isinstance(entry.get("metapath"), str)):
            raise ResultShapeError(field_name, f"entry {entry!r} is not {{'metapath': str, 'score': float}}")


def _check_node_ids(field_name: str, ids, where: str) -> None:
    if not isinstance(ids, list) or not all(_is_int(v) for v in ids):
        raise ResultShapeError(field_name, f"{where}: must be a list of node ids (integers)")


def _check_by_depth(obj: dict, field_name: str, shape: str, check_entry) -> None:
    """A ``{depth: entry}`` field (explored nodes or edges): integer depths, each entry checked."""
    value = obj.get(field_name)
    if value is None:
        return
    if not isinstance(value, dict):
        raise ResultShapeError(field_name, f"must be a mapping {{depth: {shape}}}, got {type(value).__name__}")
    for depth, entry in value.items():
        _depth_key(field_name, depth)
        check_entry(field_name, entry, f"depth {depth}")


def check_result_shape(obj: dict) -> None:
    """Every field a reader relies on has the shape ``Result`` documents (see its fields);
    the first that does not raises ``ResultShapeError``."""
    for name in ("id", "answer"):
        if obj.get(name) is None:
            raise ResultShapeError(name, "missing (every result needs an 'id' and an 'answer')")
        if not _is_scalar(obj[name]):
            raise ResultShapeError(name, f"must be a string, got {type(obj[name]).__name__}")
    for name in ("level", "method", "raw", "answer_source", "fallback"):
        if obj.get(name) is not None and not isinstance(obj[name], str):
            raise ResultShapeError(name, f"must be a string, got {type(obj[name]).__name__}")
    paths = obj.get("paths")
    if paths is not None:
        if not isinstance(paths, list):
            raise ResultShapeError("paths", f"must be a list of paths, got {type(paths).__name__}")
        for i, path in enumerate(paths):
            _check_triplets("paths", path, f"path {i}")
    _check_by_depth(obj, "explored", "[node ids]", _check_node_ids)
    for name in ("metapaths", "ranked_metapaths"):
        if obj.get(name) is not None:
            _check_metapaths(name, obj[name])
    _check_by_depth(obj, "explored_edges", "[[head_id, relation, tail_id], ...]", _check_triplets)
    for name in ("control", "usage"):
        if obj.get(name) is not None and not isinstance(obj[name], dict):
            raise ResultShapeError(name, f"must be a mapping, got {type(obj[name]).__name__}")
    for key, value in (obj.get("usage") or {}).items():
        if value is not None and not (isinstance(value, (int, float)) and not isinstance(value, bool)):
            raise ResultShapeError("usage", f"{key!r} must be a number, got {type(value).__name__}")


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


@dataclass
class MethodContext:
    """What a method may be built from; the CLI and benches fill it once per run."""

    graph: Any  # adapath.engine.graph.KnowledgeGraph
    graph_dir: Path | None = None
    llm: LLMBackend | None = None
    encoder_spec: str = "minilm"
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
