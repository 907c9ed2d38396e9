"""BioStrat-QA's 60 meta-path templates (shipped as package data) and their structure.

Template notation: ``(drug → [indication] → disease)`` is a chain from the topic to the
answer; ``(A → [r] → B ← [s] ← C)`` is a junction with two topics A and C meeting at the
answer B; ``(chain) & (topic → [r] → answer)`` adds a direct constraint between the topic
and the answer. Every template becomes a list of chains, each a meta-path from a topic slot
to the answer.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from adapath.engine.metapath import MetaPath
from adapath.errors import InputError


@dataclass(frozen=True)
class Chain:
    topic_slot: int  # index into Template.topic_types
    metapath: MetaPath  # from the topic to the answer


@dataclass(frozen=True)
class Template:
    id: str
    num_hops: int
    notation: str
    query_template: str
    topic_types: tuple[str, ...]
    answer_type: str
    chains: tuple[Chain, ...]

    @property
    def main(self) -> Chain:
        return self.chains[0]

    @property
    def kind(self) -> str:
        if len(self.topic_types) > 1:
            return "junction"
        return "constrained" if len(self.chains) > 1 else "chain"


_TOKEN = re.compile(r"\s*(→|←)\s*")


def parse_notation(notation: str) -> list[tuple[list[str], list[str], list[str]]]:
    """Each parenthesised group as (types, relations, arrows)."""
    groups = []
    for group in re.findall(r"\(([^()]*)\)", notation):
        items = _TOKEN.split(group.strip())
        types = items[0::4]
        arrows = items[1::4]
        relations = [r.strip().strip("[]") for r in items[2::4]]
        if len(types) != len(relations) + 1 or len(arrows) != len(relations):
            raise InputError(f"cannot parse template notation {notation!r}")
        groups.append((types, relations, arrows))
    if not groups:
        raise InputError(f"cannot parse template notation {notation!r}")
    return groups


def build_template(row: dict) -> Template:
    groups = parse_notation(row["metapath"])
    types, relations, arrows = groups[0]
    if "←" in arrows:
        cut = arrows.index("←")  # the answer is the node where the arrows meet
        first = MetaPath(tuple(types[: cut + 1]), tuple(relations[:cut]))
        second = MetaPath(tuple(types[cut:]), tuple(relations[cut:])).reversed()
        chains = [Chain(0, first), Chain(1, second)]
    else:
        chains = [Chain(0, MetaPath(tuple(types), tuple(relations)))]
    for extra_types, extra_relations, _ in groups[1:]:
        chains.append(Chain(0, MetaPath(tuple(extra_types), tuple(extra_relations))))
    # topic slots follow the notation (the release lists some junction topics the other way)
    topic_types = tuple(dict.fromkeys((c.topic_slot, c.metapath.types[0]) for c in chains))
    if sorted(t for _, t in topic_types) != sorted(row["topic_entity_types"]):
        raise InputError(f"template {row['id']}: topic types disagree with the notation")
    template = Template(
        id=row["id"], num_hops=int(row["num_hops"]), notation=row["metapath"],
        query_template=row.get("query_template", ""),
        topic_types=tuple(t for _, t in topic_types), answer_type=row["answer_type"],
        chains=tuple(chains),
    )
    if chains[0].metapath.types[-1] != template.answer_type:
        raise InputError(f"template {template.id}: chain does not end at the answer type")
    return template


@lru_cache(maxsize=4)
def load_templates(path: str | None = None) -> tuple[Template, ...]:
    """The shipped templates, or those of a templates.jsonl / .json file."""
    if path is None:
        text = resources.files("adapath.data").joinpath("templates.json").read_text("utf-8")
        rows = json.loads(text)
    else:
        p = Path(path)
        if not p.is_file():
            raise InputError(f"{p}: no such file")
        text = p.read_text("utf-8")
        rows = json.loads(text) if p.suffix == ".json" else [json.loads(x) for x in text.splitlines() if x.strip()]
    return tuple(build_template(r) for r in rows)


def template_by_id() -> dict[str, Template]:
    return {t.id: t for t in load_templates()}
