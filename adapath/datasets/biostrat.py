"""BioStrat-QA records: loading, validation and query specs (``biostrat:PATH``)."""

from __future__ import annotations

from pathlib import Path

from adapath.bank.query import TrainingQuery
from adapath.errors import InputError
from adapath.jsonl import iter_jsonl

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


def gold_metapath(record: dict) -> str:
    """The record's main-chain meta-path from its path nodes' types and triplet relations."""
    from adapath.engine.metapath import MetaPath

    types = {int(m["id"]): m["type"] for m in record["node_metadata"]}
    path = [int(v) for v in record["path_node_ids"]]
    relations = [t[1] for t in record["triplets"]][: int(record["num_hops"])]
    node_types = [types.get(v, "") for v in path[: len(relations) + 1]]
    return str(MetaPath(tuple(node_types), tuple(relations)))


def record_gold(record: dict):
    """A record's gold: answer names it gives, every valid answer id, the reference path."""
    from adapath.datasets.specs import Gold

    answer = record["answer_entity"]
    names_by_id = {int(m["id"]): m["name"] for m in record["node_metadata"]}
    names_by_id[int(answer["id"])] = answer["name"]
    ids = list(dict.fromkeys([int(answer["id"]), *(int(v) for v in record["valid_answer_ids"])]))
    extra = record.get("valid_answer_names") or []  # generated records name every valid answer
    named = [answer["name"], *extra, *(names_by_id[i] for i in ids if i in names_by_id)]
    unnamed = () if extra else tuple(i for i in ids if i not in names_by_id)
    return Gold(
        answer_names=tuple(dict.fromkeys(named)), answer_ids=tuple(ids), unnamed_ids=unnamed,
        answer_type=answer.get("type", ""), hops=int(record["num_hops"]),
        template_id=str(record.get("template_id", "")),
        path_node_ids=tuple(int(v) for v in record["path_node_ids"]),
        triplets=tuple((str(h), str(r), str(t)) for h, r, t in record["triplets"]),
        metapath=gold_metapath(record),
    )


def query_from_record(record: dict, level: str):
    """The only fields inference may read: id, the question at ``level``, the topic ids in
    the order the record lists them."""
    from adapath.methods.base import Query

    return Query(str(record["data_id"]), level, record[f"{level}_query"],
                 tuple(int(k) for k in record["topic_entities"]))


def load_query_set(path: str, spec: str):
    """``biostrat:PATH``: the three question levels, topics in the order the record lists
    them (what inference reads), and the record's gold."""
    return records_query_set(load_records(path), spec)


def records_query_set(records: list[dict], spec: str = "biostrat:(in memory)"):
    """BioStrat-QA records already in memory as a query set."""
    from adapath.datasets.specs import Item, QuerySet

    items = []
    for record in records:
        query = query_from_record(record, LEVELS[0])
        texts = {level: record[f"{level}_query"] for level in LEVELS}
        items.append(Item(query.id, texts, query.topic_ids, gold=record_gold(record), record=record))
    return QuerySet(spec, "biostrat", LEVELS, items)


def topic_ids_in_path_order(record: dict) -> list[int]:
    """A record's topic ids, ordered by where its path meets them (first topic first)."""
    ids = [int(k) for k in record["topic_entities"]]
    path = [int(v) for v in record["path_node_ids"]]
    return sorted(ids, key=lambda i: path.index(i) if i in path else len(path))


def training_queries(records: list[dict]) -> list[TrainingQuery]:
    """BioStrat-QA records as the Path-Bank's input."""
    out = []
    for record in records:
        types = {int(m["id"]): m.get("type", "") for m in record["node_metadata"]}
        topics = topic_ids_in_path_order(record)
        out.append(TrainingQuery(
            id=str(record["data_id"]),
            texts={level: record[f"{level}_query"] for level in LEVELS},
            topic_ids=tuple(topics), answer_id=int(record["answer_entity"]["id"]),
            topic_type=types.get(topics[0], ""), answer_type=record["answer_entity"].get("type", ""),
            hops=int(record["num_hops"]), template_id=str(record.get("template_id", "")),
            path_ids=tuple(int(v) for v in record["path_node_ids"]),
        ))
    return out
