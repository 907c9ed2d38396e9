"""JSON Lines input: one object per line, errors naming the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from adapath.errors import InputError


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line; bad JSON names its line. A byte-order
    mark at the start of the file (some editors write one) is skipped."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    seen = False  # a line holding JSON was read
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError:
                raise InputError(f"{path}:{lineno}: bytes are not valid UTF-8") from None
            if not text.strip():
                continue
            if text.lstrip().startswith("[") and not seen:
                raise InputError(f"{path}:{lineno}: a JSON array, not JSON Lines (one object per line); convert it, "
                                 f"e.g. `jq -c '.[]' {path} > {Path(path).stem}.jsonl`")
            seen = True
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{lineno}: not valid JSON ({exc.msg} column {exc.colno})") from None
            except RecursionError:
                raise InputError(f"{path}:{lineno}: JSON nested too deeply") from None
            if not isinstance(obj, dict):
                raise InputError(f"{path}:{lineno}: expected a JSON object")
            if b"\\u" in raw and _lone_surrogate(obj):
                raise InputError(f"{path}:{lineno}: a \\u escape stands for half a character (a lone "
                                 "surrogate): not valid Unicode")
            yield lineno, obj


def read_json_object(path: str | Path) -> dict:
    """A small JSON file holding one object (a settings file a user may have edited: a
    byte-order mark is skipped); anything else names the file in an ``InputError``."""
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InputError(f"{path}: not a readable JSON file ({type(exc).__name__})") from None
    if not isinstance(value, dict):
        raise InputError(f"{path}: expected a JSON object")
    return value


def _lone_surrogate(obj) -> bool:
    """Does a decoded JSON value hold a lone UTF-16 surrogate (from an escape like \\ud800)?"""
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
