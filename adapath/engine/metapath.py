"""Meta-paths: typed relation sequences ``type0 -[rel1]- type1 ... typeH``.

The graph is undirected, so a meta-path fixes only the order of traversal, not edge
direction. A meta-path's string form is its typed signature, used for deduplication.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from adapath.errors import InputError


@dataclass(frozen=True)
class MetaPath:
    types: tuple[str, ...]
    relations: tuple[str, ...]

    def __post_init__(self):
        if len(self.types) != len(self.relations) + 1:
            raise ValueError("a meta-path has one more type than relations")

    @property
    def hops(self) -> int:
        return len(self.relations)

    def reversed(self) -> MetaPath:
        return MetaPath(self.types[::-1], self.relations[::-1])

    def __str__(self) -> str:
        parts = [self.types[0]]
        for relation, node_type in zip(self.relations, self.types[1:]):
            parts.append(f"-[{relation}]- {node_type}")
        return " ".join(parts)

    @classmethod
    def parse(cls, text: str) -> MetaPath:
        """Parse the string form ``type0 -[rel1]- type1 ...``."""
        pieces = re.split(r"\s*-\[(.*?)\]-\s*", text.strip())
        if len(pieces) < 1 or any(not p for p in pieces[::2]):
            raise InputError(f"not a meta-path: {text!r}")
        return cls(tuple(pieces[::2]), tuple(pieces[1::2]))
