"""BioStrat-QA records: loading, validation and query specs (``biostrat:PATH``)."""

from __future__ import annotations

from pathlib import Path

from adapath.engine.loaders import iter_jsonl
from adapath.errors import InputError

LEVELS = ("explicit", "implicit", "bare")
REQUIRED = {
    "template_id": str, "num_hops": int, "path_node_ids": list, "triplets": list,
    "topic_entities": dict, "answer_entity": dict, "node_metadata": list,
    "explicit_query": str, "implicit_query": str, "bare_query": str,
    "valid_answer_ids": list, "data_id": (int, str),
}


def validate_record(record: dict, where: str) -> dict:
    for key, kind in REQUIRED.items():
        if key not in record:
            raise InputError(f"{where}: record lacks field {key!r}")
        if not isinstance(record[key], kind):
            raise InputError(f"{where}: field {key!r} has the wrong type")
    try:
        [int(v) for v in record["path_node_ids"]]
        [int(v) for v in record["valid_answer_ids"]]
        [int(k) for k in record["topic_entities"]]
        int(record["answer_entity"]["id"])
    except (KeyError, TypeError, ValueError):
        raise InputError(f"{where}: node ids must be integers") from None
    if not record["topic_entities"]:
        raise InputError(f"{where}: record has no topic entity")
    return record


def load_records(path: str | Path) -> list[dict]:
    """Every record of a BioStrat-QA JSONL file, validated; errors name the line."""
    return [validate_record(r, f"{path}:{n}") for n, r in iter_jsonl(path)]


def parse_spec(spec: str) -> Path:
    """A query spec ``biostrat:PATH`` -> the JSONL path."""
    kind, sep, rest = spec.partition(":")
    if not sep or kind != "biostrat" or not rest:
        raise InputError(f"query spec {spec!r}: expected biostrat:PATH")
    return Path(rest)


def query_text(record: dict, level: str) -> str:
    if level not in LEVELS:
        raise InputError(f"unknown level {level!r}; choose from {', '.join(LEVELS)}")
    return record[f"{level}_query"]


def answer_names(record: dict, graph=None) -> list[str]:
    """The answer's name, then the names of the other valid answers the graph holds."""
    names = [record["answer_entity"]["name"]]
    if graph is not None:
        index = graph.index_of([int(v) for v in record["valid_answer_ids"]], missing="ignore")
        names += [graph.name(i) for i in index if i >= 0]
    return list(dict.fromkeys(names))
