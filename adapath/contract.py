"""The contract between the rooms that make questions, answer them and score the answers.

- ``Query``: what inference may read (id, level, question text, topic ids, options);
  ``datasets`` makes them, every method answers them;
- ``Result``: one result line, with a JSON round trip and a shape check
  (``check_result_shape``); methods write them, ``eval`` and ``view`` read them.

It sits below ``datasets`` and ``methods`` so that neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from adapath.llm import Usage


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
    paths: list[list[list]] = field(default_factory=list)  # [[head_id, relation, tail_id(, "reversed")], ...]
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


# A path step is [head_id, relation, tail_id] in the order the path walks it; a step that walks
# its edge against the stored direction (the graph stores tail -relation-> head) carries this
# fourth element. A step without it was walked along its edge, or by a method (or a file
# older than the marker) that does not record directions.
REVERSED = "reversed"


def path_step(head_id: int, relation: str, tail_id: int, forward: bool = True) -> list:
    """One step of a result path, walked head -> tail; ``forward``: the edge is stored head -> tail."""
    return [head_id, relation, tail_id] if forward else [head_id, relation, tail_id, REVERSED]


def step_reversed(step) -> bool:
    """Whether a path step is marked as walked against its edge's stored direction."""
    return len(step) == 4 and step[3] == REVERSED


def _check_triplets(field_name: str, steps, where: str) -> None:
    if not isinstance(steps, list):
        raise ResultShapeError(field_name, f"{where} must be a list of [head_id, relation, tail_id] steps")
    for step in steps:
        if not (isinstance(step, list) and len(step) in (3, 4) and _is_int(step[0]) and isinstance(step[1], str)
                and _is_int(step[2]) and (len(step) == 3 or step[3] == REVERSED)):
            raise ResultShapeError(field_name, f"{where}: step {step!r} is not [head_id, relation, tail_id] "
                                   f"(two node ids and a relation name; {REVERSED!r} fourth for a step walked "
                                   "against its edge's stored direction)")


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
    if not _is_scalar(obj["id"]):  # a question id may be written as a number
        raise ResultShapeError("id", f"must be a string, got {type(obj['id']).__name__}")
    if not isinstance(obj["answer"], str):  # an answer is text: 5 is a wrong line, not the name "5"
        raise ResultShapeError("answer", f"must be a string, got {type(obj['answer']).__name__}")
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
