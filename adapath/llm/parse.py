"""Robust parsing of LLM replies."""

from __future__ import annotations

import json
import re

_BRACES = re.compile(r"\{([^{}]*)\}")
_YES_NO = {"yes", "no", "true", "false"}


# A JSON "Answer" field (PoG replies {"A": {"Sufficient": "Yes", "Answer": "X"}, "R": ...})
_JSON_ANSWER = re.compile(r'"Answer"\s*:\s*"([^"]*)"')


def parse_answer(text: str) -> str:
    """The first ``{...}`` in the reply, skipping a leading yes/no brace; a JSON ``"Answer"``
    field first when the reply has one (``Null``/``None`` count as no answer); none -> ''."""
    field = _JSON_ANSWER.search(text or "")
    if field:
        value = field.group(1).strip()
        return "" if value.lower() in ("null", "none", "") else value
    for match in _BRACES.finditer(text or ""):
        content = match.group(1).strip().strip("\"'").strip()
        if content.lower() in _YES_NO:
            continue
        return content
    return ""


def parse_answer_set(text: str) -> list[str]:
    """Every ``{...}`` in the reply, in order, yes/no braces and repeats skipped: an answer set."""
    out: list[str] = []
    for match in _BRACES.finditer(text or ""):
        content = match.group(1).strip().strip("\"'").strip()
        if content and content.lower() not in _YES_NO and content not in out:
            out.append(content)
    return out


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


def read_answer(reply: str, candidates: list[str], best: str = "") -> tuple[str, str]:
    """The answer in a reply and how it was read.

    ``braces``: the ``{...}`` the prompt asked for; ``mentioned``: no braces, but the reply
    names one of ``candidates`` (the longest such name, earliest on ties); ``stated``: the
    reply states an answer in words ("The answer is: X", "Answer: X"); ``best-path``: the
    reply is unreadable, so ``best`` (the best path's end) stands in; ``none``: nothing at all.
    """
    braced = parse_answer(reply)
    if braced:
        return braced, "braces"
    lowered = (reply or "").lower()
    mentioned = [(-len(c), lowered.find(c.lower()), c) for c in candidates if c and c.lower() in lowered]
    if mentioned:
        return min(mentioned)[2], "mentioned"
    stated = _STATED.search(reply or "")
    if stated:
        answer = stated.group(1).strip().strip("\"'*`").strip()
        if answer:
            return answer[:120], "stated"
    return (best, "best-path") if best else ("", "none")


def lenient_reading(named: str, stand_in: str = "") -> str:
    """The deviation every method that reads its final reply through ``read_answer`` or
    ``read_option`` lists: ``named`` says what a reply may name instead of bracing it ('a
    candidate entity'), ``stand_in`` what answers for an unreadable reply ('' for nothing)."""
    text = ("a final reply with no answer in braces is still read, by the shared reader's fall-backs, which no "
            f"official code has: {named} the reply names ('mentioned'), else an answer stated in words "
            "('stated')")
    if stand_in:
        text += f", else {stand_in} ('best-path')"
    return text + "; eval's answer-sources table counts how often each fires"


# "The answer is: X", "Answer: X", "the best answer entity's name is X": the phrase up to the
# end of its sentence or line
_STATED = re.compile(r"\b(?:answer|name)\b[^:\n.]{0,24}?(?:\bis\b\s*:?|:)\s*([^\n.;]+)", re.IGNORECASE)


def read_option(reply: str, options: list[str]) -> tuple[str, str]:
    """A multiple-choice reply as an option letter (A-D) and how it was read."""
    letters = "ABCDEFGH"[: len(options)]
    text = parse_answer(reply) or (reply or "")
    match = re.search(r"\b([A-H])\b", text.strip()[:3]) if text.strip() else None
    if match and match.group(1) in letters:
        return match.group(1), "braces" if parse_answer(reply) else "mentioned"
    lowered = text.lower()
    named = [(-len(o), lowered.find(o.lower()), i) for i, o in enumerate(options) if o and o.lower() in lowered]
    if named:
        return letters[min(named)[2]], "mentioned"
    return "", "none"


def read_reply(reply: str, options: tuple[str, ...] | list[str], candidates: list[str] = (),
               best: str = "") -> tuple[str, str]:
    """A final reply read the way its prompt asked: an option letter for multiple choice,
    else ``read_answer``'s free-text answer and fall-backs."""
    if options:
        return read_option(reply, list(options))
    return read_answer(reply, list(candidates), best)


_GROUP = re.compile(r"[\[(]([^\[\]()]*)[\])]")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'')


def parse_triplets(text: str) -> list[tuple[str, str, str]]:
    """Every ``(head, relation, tail)`` or ``[head, relation, tail]`` in a reply (JSON lists
    or bare tuples; quoted names may hold commas), in order, duplicates dropped."""
    out: list[tuple[str, str, str]] = []
    for match in _GROUP.finditer(text or ""):
        body = match.group(1)
        quoted = [a if a else b for a, b in _QUOTED.findall(body)]
        parts = quoted if len(quoted) == 3 else [p for p in body.split(",")]
        parts = [p.strip().strip("\"'").strip() for p in parts]
        if len(parts) == 3 and all(parts):
            triplet = (parts[0], parts[1], parts[2])
            if triplet not in out:
                out.append(triplet)
    return out
