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
        with open(path, newline="", encoding="utf-8") as handle:
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
    for lineno, line in enumerate(index_path.read_text().splitlines(), start=1):
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
