"""STaRK-Prime questions: ``stark_qa.csv`` (id, query, answer_ids), the human-generated set,
and the split index files (one question id per line). Answers are PrimeKG node ids."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from adapath.errors import InputError

SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class StarkQuestion:
    id: int
    query: str
    answer_ids: tuple[int, ...]


def _parse_ids(text: str, where: str) -> tuple[int, ...]:
    try:
        values = json.loads(text)
        if not isinstance(values, list) or not values:
            raise ValueError
        return tuple(int(v) for v in values)
    except (ValueError, TypeError):
        raise InputError(f"{where}: answer_ids must be a non-empty list of integers, got {text!r}") from None


def load_questions(path: str | Path) -> list[StarkQuestion]:
    """Questions of a STaRK-Prime CSV; bad rows are reported by line number."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    out = []
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:  # a byte-order mark is skipped
            reader = csv.DictReader(handle)
            missing = {"id", "query", "answer_ids"} - set(reader.fieldnames or [])
            if missing:
                raise InputError(f"{path}:1: missing column(s) {', '.join(sorted(missing))}")
            for row in reader:
                where = f"{path}:{reader.line_num}"
                try:
                    qid = int(row["id"])
                except (TypeError, ValueError):
                    raise InputError(f"{where}: id is not an integer: {row['id']!r}") from None
                if not (row["query"] or "").strip():
                    raise InputError(f"{where}: empty query")
                out.append(StarkQuestion(qid, row["query"].strip(), _parse_ids(row["answer_ids"], where)))
    except UnicodeDecodeError:
        raise InputError(f"{path}: bytes are not valid UTF-8") from None
    return out


def load_split(directory: str | Path, split: str, csv_name: str = "stark_qa.csv") -> list[StarkQuestion]:
    """The questions of one split, in the order of its index file."""
    if split not in SPLITS:
        raise InputError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}")
    directory = Path(directory)
    index_path = directory / f"{split}.index"
    if not index_path.is_file():
        raise InputError(f"{index_path}: no such file")
    by_id = {q.id: q for q in load_questions(directory / csv_name)}
    out = []
    for lineno, line in enumerate(index_path.read_text(encoding="utf-8-sig").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            qid = int(line)
        except ValueError:
            raise InputError(f"{index_path}:{lineno}: not a question id: {line!r}") from None
        if qid not in by_id:
            raise InputError(f"{index_path}:{lineno}: question {qid} is not in {csv_name}")
        out.append(by_id[qid])
    return out


HUMAN_CSV = "stark_qa_human_generated_eval.csv"


def load_query_set(rest: str, spec: str):
    """``stark:PATH[#split]``: PATH is a STaRK-Prime CSV or a folder holding ``stark_qa.csv``
    and the split index files; split is train, val, test or human (the human-generated CSV).
    Answers are PrimeKG node ids that only the graph names; topics come from ``--topics``."""
    from adapath.datasets.specs import SINGLE_LEVEL, Gold, Item, QuerySet

    path_text, _, split = rest.partition("#")
    path = Path(path_text)
    folder = path if path.is_dir() else path.parent
    if split == "human":
        questions, group = load_questions(folder / HUMAN_CSV if path.is_dir() else path), "human"
    elif split:
        csv_name = "stark_qa.csv" if path.is_dir() else path.name
        questions, group = load_split(folder, split, csv_name), "synthesized"
    else:
        csv = path / "stark_qa.csv" if path.is_dir() else path
        questions = load_questions(csv)
        group = "human" if csv.name == HUMAN_CSV else "synthesized"
    items = [Item(str(q.id), {"question": q.query}, (),
                  gold=Gold(answer_ids=q.answer_ids, unnamed_ids=q.answer_ids, group=group))
             for q in questions]
    return QuerySet(spec, "stark", SINGLE_LEVEL, items)
