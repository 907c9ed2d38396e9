"""Settings dataclasses keep each setting's default and its help in one place.

A field made with ``setting(default, help)`` carries its help in its metadata; a method's
``--param`` list (``adapath.methods.base.params_of``), the command line's options
(``adapath.cli.common.setting_option``) and the reference pages built from both are read from
it, so a default is written once, in its dataclass. A field made with ``nested(Kind)`` holds
another settings dataclass whose settings count as its holder's, in its place. A field
without help is a setting of the code, not of the user.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any


def setting(default: Any, help: str) -> Any:
    """A dataclass field with its default and its help (one line, in the words its place
    shows: a ``--param`` list, or an option's sentence)."""
    return dataclasses.field(default=default, metadata={"help": help})


def nested(kind: type) -> Any:
    """A field holding another settings dataclass (its defaults), whose settings are listed in
    this field's place."""
    return dataclasses.field(default_factory=kind, metadata={"nested": kind})


@dataclasses.dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    help: str
    within: str = ""  # the nested field that holds it ("" at the top)


def settings_of(kind: type) -> Iterator[Setting]:
    """The settings of a dataclass, in field order, a nested dataclass's in its place."""
    for f in dataclasses.fields(kind):
        if "nested" in f.metadata:
            for inner in settings_of(f.metadata["nested"]):
                yield dataclasses.replace(inner, within=f.name)
        elif "help" in f.metadata:
            yield Setting(f.name, f.default, f.metadata["help"])


def setting_named(kind: type, name: str) -> Setting:
    for s in settings_of(kind):
        if s.name == name:
            return s
    raise KeyError(f"{kind.__name__} has no setting {name!r}")


def build(kind: type, values: dict[str, Any]) -> Any:
    """``kind`` with the settings ``values`` names (nested ones into their holder); what it
    does not name keeps its default."""
    top: dict[str, Any] = {}
    inner: dict[str, dict[str, Any]] = {}
    for s in settings_of(kind):
        if s.name in values:
            (inner.setdefault(s.within, {}) if s.within else top)[s.name] = values[s.name]
    for f in dataclasses.fields(kind):
        if f.name in inner:
            top[f.name] = f.metadata["nested"](**inner[f.name])
    return kind(**top)


def without_later(settings: dict[str, Any], later: dict[str, Any]) -> dict[str, Any]:
    """``settings`` without each one added later (``later``: its name -> the value everything
    made before it had) that still holds that value: so they read as what was made before."""
    return {k: v for k, v in settings.items() if not (k in later and v == later[k])}
