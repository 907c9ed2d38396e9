"""BioStrat-QA records: loading, validation and query specs (``biostrat:PATH``)."""

from __future__ import annotations

from pathlib import Path

from adapath.bank.query import TrainingQuery
from adapath.datasets.specs import Gold, Item, QuerySet, refused_under
from adapath.errors import InputError
from adapath.jsonl import iter_jsonl

LEVELS = ("explicit", "implicit", "bare")
TEXTS = ("explicit_query", "implicit_query", "bare_query")
FIELDS = ("template_id", "num_hops", "path_node_ids", "triplets", "topic_entities", "answer_entity",
          "node_metadata", *TEXTS, "valid_answer_ids", "data_id")
INT64 = 2**63


def is_node_id(value) -> bool:
    """A node id as records write it: an integer (not a bool), or its digits as text (the keys
    of ``topic_entities``), within int64."""
    if isinstance(value, str):
        text = value.strip()
        value = int(text) if text.lstrip("-").isdigit() and text.isascii() else None
    return isinstance(value, int) and not isinstance(value, bool) and -INT64 <= value < INT64


def _field_problem(record: dict) -> str | None:
    """What is wrong with the first field of a record that is not what BioStrat-QA writes (and
    every reader of a record relies on), or None."""
    for key in FIELDS:
        if key not in record:
            return f"record lacks field {key!r}"
        if record[key] is None:
            return f"field {key!r} is null"
    for key in ("template_id", *TEXTS):
        if not isinstance(record[key], str):
            return f"field {key!r} must be a string"
    hops, data_id = record["num_hops"], record["data_id"]
    if not (isinstance(hops, int) and not isinstance(hops, bool) and hops >= 1):
        return "field 'num_hops' must be a positive integer"
    if isinstance(data_id, bool) or not isinstance(data_id, (int, str)):
        return "field 'data_id' must be an integer or a string"
    for key in ("path_node_ids", "valid_answer_ids"):
        if not isinstance(record[key], list) or not all(is_node_id(v) for v in record[key]):
            return f"field {key!r} must be a list of node ids (integers)"
    topics = record["topic_entities"]
    if not isinstance(topics, dict) or not all(is_node_id(k) and isinstance(v, str) for k, v in topics.items()):
        return "field 'topic_entities' must map node ids to names"
    if not topics:
        return "record has no topic entity"
    answer = record["answer_entity"]
    if not (isinstance(answer, dict) and is_node_id(answer.get("id")) and isinstance(answer.get("name"), str)
            and isinstance(answer.get("type", ""), str)):
        return "field 'answer_entity' must be {'id': node id, 'name': string, 'type': string}"
    nodes = record["node_metadata"]
    if not isinstance(nodes, list) or not all(
            isinstance(m, dict) and is_node_id(m.get("id")) and isinstance(m.get("name"), str)
            and isinstance(m.get("type"), str) and isinstance(m.get("description", ""), (str, type(None)))
            for m in nodes):
        return "field 'node_metadata' must be a list of {'id': node id, 'name', 'type', 'description': strings}"
    triplets = record["triplets"]
    if not isinstance(triplets, list) or not all(
            isinstance(t, list) and len(t) == 3 and all(isinstance(x, str) for x in t) for t in triplets):
        return "field 'triplets' must be a list of [head, relation, tail] names"
    if len(record["path_node_ids"]) <= min(hops, len(triplets)):
        return (f"field 'path_node_ids' holds {len(record['path_node_ids'])} nodes: too few for "
                f"{min(hops, len(triplets))} hops")
    names = record.get("valid_answer_names")
    if names is not None and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        return "field 'valid_answer_names' must be a list of names"
    return None


def validate_record(record: dict, where: str) -> dict:
    """``record`` when every field has the shape BioStrat-QA writes; else an ``InputError``
    naming ``where`` and the field."""
    problem = _field_problem(record)
    if problem:
        raise InputError(f"{where}: {problem}")
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
    from adapath.contract import Query

    return Query(str(record["data_id"]), level, record[f"{level}_query"],
                 tuple(int(k) for k in record["topic_entities"]))


def load_query_set(path: str, spec: str):
    """``biostrat:PATH``: the three question levels, topics in the order the record lists
    them (what inference reads), and the record's gold."""
    return records_query_set(load_records(path), spec)


def records_query_set(records: list[dict], spec: str = "biostrat:(in memory)"):
    """BioStrat-QA records already in memory as a query set."""
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


def load_training_queries(spec: str) -> list[TrainingQuery]:
    """The training queries (``TrainingQuery``) of ``biostrat:PATH``, what a Path-Bank is built
    from; a file without a record is an error."""
    path = parse_spec(spec)
    try:
        training = training_queries(load_records(path))
    except InputError as exc:
        raise refused_under("biostrat", path, exc) from None
    if not training:
        raise InputError(f"{spec}: no records")
    return training
