"""Text given on the command line (``--param``, ``--llm-option``) parsed by the type of the
value it replaces, with the type named in words when it does not fit."""

from __future__ import annotations

from typing import Any

from adapath.errors import InputError

_PHRASES = {bool: "true or false", int: "an integer", float: "a number", str: "text"}
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


def type_phrase(kind: type) -> str:
    """How a message names a type: "an integer", "a number", "true or false"."""
    return _PHRASES.get(kind, f"a {kind.__name__}")


def parse_as(text: str, kind: type, what: str) -> Any:
    """``text`` as a ``kind`` (bool takes true/false, 1/0, yes/no); else an ``InputError``
    "WHAT='TEXT': expected an integer"."""
    try:
        if kind is bool:
            lowered = text.strip().lower()
            if lowered not in _TRUE + _FALSE:
                raise ValueError
            return lowered in _TRUE
        return kind(text.strip())
    except ValueError:
        raise InputError(f"{what}={text!r}: expected {type_phrase(kind)}") from None
