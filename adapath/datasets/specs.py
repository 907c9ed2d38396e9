"""Query specs: one table from ``KIND:PATH`` to a loaded ``QuerySet``.

A ``QuerySet`` is what every command consumes: items with their question text per level and
topic ids (what inference may read, as ``Query`` objects) and, apart, their gold (what only
evaluation reads). Records are parsed here and in the dataset modules the table names, and
nowhere else.

| spec | what | levels |
|---|---|---|
| ``biostrat:PATH`` | BioStrat-QA JSONL (real or generated) | explicit, implicit, bare |
| ``stark:PATH[#split]`` | STaRK-Prime CSV, or a folder with ``stark_qa.csv`` and the split index files; split ``train``, ``val``, ``test`` or ``human`` | question |
| ``medddx:PATH`` | MedDDx multiple choice JSONL | question |
| ``questions:PATH`` | question-only JSONL: ``id``, ``question``, ``topic_ids`` (or ``topic_entities``), optional ``options`` | question |

STaRK-Prime and MedDDx questions come without topic entities: ``adapath dataset topics``
links them, and its output is given with ``topics=`` (``--topics`` on the command line).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path

from adapath.contract import Query
from adapath.errors import InputError

SINGLE_LEVEL = ("question",)

# kind -> (module, loader function, one-line description)
KINDS = {
    "biostrat": ("adapath.datasets.biostrat", "load_query_set", "BioStrat-QA JSONL"),
    "stark": ("adapath.datasets.stark_prime", "load_query_set", "STaRK-Prime CSV or folder, #split"),
    "medddx": ("adapath.datasets.medddx", "load_query_set", "MedDDx multiple-choice JSONL"),
    "questions": ("adapath.datasets.questions", "load_query_set", "question-only JSONL"),
}


@dataclass(frozen=True)
class Gold:
    """What evaluation compares against; inference never sees it."""

    answer_names: tuple[str, ...] = ()  # names the records give, main answer first
    answer_ids: tuple[int, ...] = ()  # external ids of every valid answer
    unnamed_ids: tuple[int, ...] = ()  # valid answers the records do not name (a graph can)
    answer_type: str = ""
    hops: int | None = None
    template_id: str = ""
    path_node_ids: tuple[int, ...] = ()  # the reference path, topic first
    triplets: tuple[tuple[str, str, str], ...] = ()  # named (head, relation, tail), path order
    metapath: str = ""  # the reference path's typed signature
    correct_option: int | None = None  # multiple choice: 0-based index
    group: str = ""  # the benchmark's own split (STaRK: synthesized | human; MedDDx: tier)


@dataclass(frozen=True)
class Item:
    id: str
    texts: dict[str, str]  # level -> question text
    topic_ids: tuple[int, ...] = ()  # external ids, first topic first
    options: tuple[str, ...] = ()
    gold: Gold | None = None
    record: dict | None = field(default=None, compare=False, repr=False)  # the source record

    def query(self, level: str) -> Query:
        return Query(self.id, level, self.texts[level], self.topic_ids, self.options)


@dataclass
class QuerySet:
    spec: str
    kind: str
    levels: tuple[str, ...]
    items: list[Item]

    def resolve_levels(self, level: str | None) -> list[str]:
        """``None`` -> the first level; ``all`` -> every level; else that level, checked."""
        if level is None:
            return [self.levels[0]]
        if level == "all":
            return list(self.levels)
        if level not in self.levels:
            raise InputError(f"--level {level!r}: {self.spec} has levels {', '.join(self.levels)} (or all)")
        return [level]

    def queries(self, levels: list[str]) -> list[Query]:
        """Queries level by level; items without topic ids cannot be answered and are left out."""
        return [item.query(level) for level in levels for item in self.items if item.topic_ids]

    def unanswerable(self) -> int:
        return sum(1 for item in self.items if not item.topic_ids)

    def gold(self) -> dict[str, Gold]:
        missing = [item.id for item in self.items if item.gold is None]
        if missing:
            raise InputError(f"{self.spec}: question {missing[0]!r} has no gold answer; "
                             "evaluation needs records with answers")
        return {item.id: item.gold for item in self.items}

    def by_id(self) -> dict[str, Item]:
        return {item.id: item for item in self.items}

    def path(self) -> Path:
        """The questions file (or folder) the spec names, resolved."""
        return Path(self.spec.partition(":")[2].partition("#")[0]).resolve()

    def checksum(self) -> str:
        """The content checksum of the questions file (see ``source_checksum``)."""
        if not hasattr(self, "_checksum"):
            self._checksum = source_checksum(self.path())
        return self._checksum


def source_checksum(path: str | Path) -> str:
    """blake2b of a questions file's bytes; of a folder (STaRK-Prime's), of its files' names and
    bytes in name order. Results record it, so evaluation can tell the file they answered."""
    import hashlib

    path = Path(path)
    digest = hashlib.blake2b(digest_size=16)
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    for file in files:
        if path.is_dir():
            digest.update(file.name.encode() + b"\0")
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def parse_spec(spec: str) -> tuple[str, str]:
    kind, sep, rest = spec.partition(":")
    if not sep or kind not in KINDS or not rest:
        kinds = ", ".join(f"{k}:PATH" for k in KINDS)
        raise InputError(f"query spec {spec!r}: expected one of {kinds}")
    return kind, rest


# Each kind's file, and what its first line holds, as a message names them.
_FILES = {"biostrat": "a BioStrat-QA JSONL", "stark": "a STaRK-Prime CSV", "medddx": "a MedDDx JSONL",
          "questions": "a question-only JSONL"}
_FIRST_LINES = {"biostrat": "a BioStrat-QA record", "stark": "a STaRK-Prime CSV header",
                "medddx": "a MedDDx question", "questions": "a question-only record"}


def fitting_kind(path: str | Path) -> str | None:
    """The kind of query file whose first line ``path``'s first line looks like (None: no kind,
    or not a readable file); a hint for a file given under the wrong prefix."""
    import json

    try:
        with open(path, encoding="utf-8-sig") as handle:
            first = next((line for line in handle if line.strip()), "")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        record = json.loads(first)
    except RecursionError:
        return None
    except ValueError:
        header = {name.strip() for name in first.strip().split(",")}
        return "stark" if {"id", "query", "answer_ids"} <= header else None
    if not isinstance(record, dict):
        return None
    if "explicit_query" in record:
        return "biostrat"
    if "options" in record and "tier" in record:
        return "medddx"
    if "question" in record and ("topic_ids" in record or "topic_entities" in record):
        return "questions"
    return None


def refused_under(kind: str, path: str | Path, error: InputError) -> InputError:
    """``error`` (the ``kind`` loader refusing ``path``), with the prefix that fits when the
    file is plainly another kind of query file."""
    fits = fitting_kind(path) if Path(path).is_file() else None
    if fits is None or fits == kind:
        return error
    return InputError(f"{path}: not {_FILES[kind]} (its first line is {_FIRST_LINES[fits]}); "
                      f"give it as {fits}:{path}")


def load_query_set(spec: str, topics: str | Path | None = None) -> QuerySet:
    """Load a spec; ``topics`` is a topic-link JSONL from ``adapath dataset topics``."""
    kind, rest = parse_spec(spec)
    module, function, _ = KINDS[kind]
    loader = getattr(importlib.import_module(module), function)
    try:
        query_set = loader(rest, spec)
    except InputError as exc:
        raise refused_under(kind, rest.partition("#")[0], exc) from None
    if topics is not None:
        apply_topics(query_set, topics)
    ids = [item.id for item in query_set.items]
    if len(set(ids)) != len(ids):
        seen = set()
        duplicate = next(i for i in ids if i in seen or seen.add(i))
        raise InputError(f"{spec}: question id {duplicate!r} occurs twice")
    return query_set


def apply_topics(query_set: QuerySet, path: str | Path) -> None:
    """Give each item the topic ids that ``adapath dataset topics`` chose for it."""
    from adapath.jsonl import iter_jsonl

    links = {}
    for lineno, row in iter_jsonl(path):
        if "id" not in row:
            raise InputError(f"{path}:{lineno}: a topic link needs 'id'")
        ids = row.get("topic_ids")
        if ids is None:
            continue  # the extractor found no topic for this question
        try:
            links[str(row["id"])] = tuple(int(v) for v in ids)
        except (TypeError, ValueError):
            raise InputError(f"{path}:{lineno}: topic_ids must be a list of integers") from None
    query_set.items = [Item(item.id, item.texts, links.get(item.id, item.topic_ids), item.options, item.gold,
                            item.record) for item in query_set.items]
