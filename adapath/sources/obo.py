"""OBO flat files (the Human Phenotype Ontology, the Human Disease Ontology): ``[Term]``
stanzas with id, name, definition, ``is_a`` parents and alternative ids; obsolete terms
are left out. Bad bytes or a malformed ``def:`` line raise ``InputError`` with the line."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from adapath.errors import InputError

_DEF = re.compile(r'^def:\s*"((?:[^"\\]|\\.)*)"')


@dataclass
class OboTerm:
    id: str
    name: str
    definition: str
    parents: list[str]
    alt_ids: list[str] = field(default_factory=list)


def text_lines(path: Path):
    """(line number, line without its end) of a UTF-8 file."""
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            try:
                yield lineno, raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                raise InputError(f"{path}:{lineno}: bytes are not valid UTF-8") from None


def parse_obo(path: Path) -> dict[str, OboTerm]:
    """Non-obsolete ``[Term]`` stanzas of an OBO file, by id."""
    terms: dict[str, OboTerm] = {}
    current: dict | None = None

    def close():
        if current and current.get("id") and not current.get("obsolete"):
            terms[current["id"]] = OboTerm(current["id"], current.get("name", ""),
                                           current.get("def", ""), current.get("is_a", []),
                                           current.get("alt_id", []))

    for lineno, line in text_lines(path):
        if line.startswith("["):
            close()
            current = {} if line.strip() == "[Term]" else None
            continue
        if current is None or ":" not in line:
            continue
        key, _, value = line.partition(":")
        value = value.strip()
        if key in ("id", "name"):
            current[key] = value
        elif key == "def":
            match = _DEF.match(line)
            if match is None:
                raise InputError(f"{path}:{lineno}: malformed def line")
            current["def"] = re.sub(r"\\(.)", r"\1", match.group(1))
        elif key in ("is_a", "alt_id"):
            current.setdefault(key, []).append(value.split("!")[0].split("{")[0].strip())
        elif key == "is_obsolete" and value == "true":
            current["obsolete"] = True
    close()
    if not terms:
        raise InputError(f"{path}: no [Term] stanzas; not an OBO file")
    return terms
