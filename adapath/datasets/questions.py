"""Question-only input (``questions:PATH``): what ``answer`` needs and nothing more.

One JSON object a line::

    {"id": "q1", "question": "Which drug ...?", "topic_ids": [15057]}

``topic_entities`` (``{id: name}``, BioStrat-QA's field) may stand in for ``topic_ids``;
``options`` (a list of strings) makes the question multiple choice. No gold is read, so
such a file can be answered but not evaluated.
"""

from __future__ import annotations

from adapath.errors import InputError
from adapath.jsonl import iter_jsonl


def load_query_set(path: str, spec: str):
    from adapath.datasets.specs import SINGLE_LEVEL, Item, QuerySet

    items = []
    for lineno, obj in iter_jsonl(path):
        where = f"{path}:{lineno}"
        if "id" not in obj:
            raise InputError(f"{where}: a question needs 'id'")
        text = obj.get("question")
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{where}: 'question' must be a non-empty string")
        topics = obj.get("topic_ids", list(obj.get("topic_entities") or {}))
        try:
            topics = tuple(int(v) for v in topics)
        except (TypeError, ValueError):
            raise InputError(f"{where}: 'topic_ids' must be a list of integer node ids") from None
        if not topics:
            raise InputError(f"{where}: a question needs at least one topic id")
        options = obj.get("options") or ()
        if not isinstance(options, (list, tuple)) or not all(isinstance(o, str) for o in options):
            raise InputError(f"{where}: 'options' must be a list of strings")
        items.append(Item(str(obj["id"]), {"question": text.strip()}, topics, tuple(options)))
    return QuerySet(spec, "questions", SINGLE_LEVEL, items)
