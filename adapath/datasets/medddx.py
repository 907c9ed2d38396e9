"""MedDDx: multiple-choice differential diagnosis over four options, three tiers.

No copy ships here, so adapath defines the JSONL schema it reads, one object a line:

    {"id": "q1", "question": "...", "options": ["A text", "B text", "C text", "D text"],
     "answer": "B", "tier": "Basic"}

``answer`` is a letter A-D or a 0-based index; ``tier`` is Basic, Intermediate or Expert.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from adapath.errors import InputError
from adapath.jsonl import iter_jsonl

TIERS = ("Basic", "Intermediate", "Expert")


@dataclass(frozen=True)
class MedDDxQuestion:
    id: str
    question: str
    options: tuple[str, str, str, str]
    answer: int  # 0-based index of the correct option
    tier: str


def load_questions(path: str | Path) -> list[MedDDxQuestion]:
    out = []
    for lineno, obj in iter_jsonl(path):
        where = f"{path}:{lineno}"
        question, options = obj.get("question"), obj.get("options")
        if not isinstance(question, str) or not question.strip():
            raise InputError(f"{where}: 'question' must be a non-empty string")
        if not isinstance(options, list) or len(options) != 4 or not all(isinstance(o, str) for o in options):
            raise InputError(f"{where}: 'options' must be a list of four strings")
        answer = obj.get("answer")
        if isinstance(answer, str) and answer.strip().upper() in ("A", "B", "C", "D"):
            index = "ABCD".index(answer.strip().upper())
        elif isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < 4:
            index = answer
        else:
            raise InputError(f"{where}: 'answer' must be a letter A-D or an index 0-3, got {answer!r}")
        tier = obj.get("tier")
        if tier not in TIERS:
            raise InputError(f"{where}: 'tier' must be one of {', '.join(TIERS)}, got {tier!r}")
        out.append(MedDDxQuestion(str(obj.get("id", lineno)), question.strip(), tuple(options), index, tier))
    return out


def load_query_set(path: str, spec: str):
    """``medddx:PATH``: four options per question, the correct one as gold, tier as group;
    topics come from ``--topics`` (``adapath dataset topics --medddx``)."""
    from adapath.datasets.specs import SINGLE_LEVEL, Gold, Item, QuerySet

    items = [Item(q.id, {"question": q.question}, (), q.options,
                  Gold(answer_names=(q.options[q.answer],), correct_option=q.answer, group=q.tier))
             for q in load_questions(path)]
    return QuerySet(spec, "medddx", SINGLE_LEVEL, items)
