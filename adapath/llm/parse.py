"""Robust parsing of LLM replies."""

from __future__ import annotations

import json
import re

_BRACES = re.compile(r"\{([^{}]*)\}")
_YES_NO = {"yes", "no", "true", "false"}


def parse_answer(text: str) -> str:
    """The first ``{...}`` in the reply, skipping a leading yes/no brace; none -> ''."""
    for match in _BRACES.finditer(text or ""):
        content = match.group(1).strip().strip("\"'").strip()
        if content.lower() in _YES_NO:
            continue
        return content
    return ""


def parse_choice(text: str, count: int) -> list[int]:
    """0-based candidate indices named in the reply (braces first, else bare numbers)."""
    match = _BRACES.search(text or "")
    body = match.group(1) if match else (text or "")
    seen = []
    for token in re.findall(r"\d+", body):
        index = int(token) - 1
        if 0 <= index < count and index not in seen:
            seen.append(index)
    return seen


def parse_control(text: str, answer_types: list[str], max_hop: int) -> tuple[str | None, int | None]:
    """(answer type, hop count) from a reply; None for what cannot be read."""
    answer_type = hops = None
    match = re.search(r"\{.*\}", text or "", flags=re.S)
    if match:
        try:
            obj = json.loads(match.group(0))
            answer_type, hops = obj.get("answer_type"), obj.get("hops")
        except (json.JSONDecodeError, AttributeError):
            pass
    lowered = (text or "").lower()
    if answer_type not in answer_types:
        answer_type = None
        positions = [(lowered.find(t.lower()), t) for t in answer_types if t.lower() in lowered]
        if positions:
            answer_type = min(positions)[1]
    try:
        hops = int(hops)
    except (TypeError, ValueError):
        found = re.search(r"hops?\D{0,5}(\d)", lowered) or re.search(r"(\d)\s*-?\s*hops?", lowered)
        hops = int(found.group(1)) if found else None
    if hops is not None and not 1 <= hops <= max_hop:
        hops = None
    return answer_type, hops
