"""Pieces the LLM-driven graph-search baselines share (StructGPT, ToG, ToG-2, PoG).

- ``Walk``: a path from a topic entity, every step a real graph edge;
- candidate reading: an entity's relations, its neighbours through one relation, and the
  seeded cap the papers put on long neighbour lists;
- reply readers of the search steps: scored relations (``{name (Score: 0.4)}``), names picked
  from a list, a yes/no verdict (the final answer is read by ``read_reply``, as every method's);
- what every result carries: maximal paths as ``[head_id, relation, tail_id]`` edges and the
  entities considered at each path depth.

Nothing here reads gold data: only the question, the topic ids and the graph.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field

import numpy as np

from adapath.config import setting
from adapath.contract import Query, Result
from adapath.engine.graph import KnowledgeGraph
from adapath.errors import InputError
from adapath.llm import GenerationParams, Usage, prompts
from adapath.llm.parse import lenient_reading, read_reply
from adapath.methods.base import LLMCaller


@dataclass(frozen=True)
class Walk:
    """Internal node indices and the relation code of each step; ``score`` ranks walks."""

    nodes: tuple[int, ...]
    relations: tuple[int, ...] = ()
    score: float = 1.0

    @property
    def end(self) -> int:
        return self.nodes[-1]

    @property
    def hops(self) -> int:
        return len(self.relations)

    def extend(self, node: int, relation: int, score: float) -> Walk:
        return Walk(self.nodes + (int(node),), self.relations + (int(relation),), float(score))


def distinct_ends(walks: list[Walk]) -> list[Walk]:
    """The first walk to each end entity, in order: the entities the next depth expands."""
    seen, out = set(), []
    for walk in walks:
        if walk.end not in seen:
            seen.add(walk.end)
            out.append(walk)
    return out


def relations_of(graph: KnowledgeGraph, node: int) -> list[int]:
    """Distinct relation codes of ``node``'s edges, sorted by name (the papers list them sorted
    so that a prompt does not depend on storage order)."""
    _, rels = graph.neighbors(node)
    codes = {int(r) for r in np.unique(rels)}
    return sorted(codes, key=lambda r: graph.relation_names[r])


def neighbors_via(graph: KnowledgeGraph, walk: Walk, relation: int) -> list[int]:
    """Neighbours of the walk's end through ``relation``, skipping nodes already on the walk."""
    nodes, _ = graph.neighbors(walk.end, relation=relation)
    seen = set(walk.nodes)
    return [v for v in dict.fromkeys(int(x) for x in nodes) if v not in seen]


def seeded_sample(nodes: list[int], size: int, seed: int, query_id: str, *key: int) -> list[int]:
    """``size`` of ``nodes`` drawn without replacement, the same for the same query and key
    whatever else is in the batch; returned in their original order."""
    if len(nodes) <= size:
        return list(nodes)
    rng = np.random.default_rng([seed, zlib.crc32(query_id.encode()), *(int(k) for k in key)])
    keep = np.sort(rng.choice(len(nodes), size, replace=False))
    return [nodes[i] for i in keep]


# ---------------------------------------------------------------- reading replies
_SCORED = re.compile(r"\{?\s*([^{}()\n]+?)\s*\(\s*score\s*:\s*([0-9]*\.?[0-9]+)\s*\)\s*\}?", re.I)
_NUMBER = re.compile(r"\d+\.\d+")
_ITEM_SPLIT = re.compile(r"[,;\n|]")


def _norm(text: str) -> str:
    text = re.sub(r"^\s*(?:\d+[.)]|[-*•])\s*", "", text.strip())
    return re.sub(r"\s+", " ", text.strip().strip("\"'`[]{}().:").strip()).lower()


def read_scored(reply: str, names: list[str]) -> list[tuple[int, float]]:
    """(index into ``names``, score) for each ``name (Score: x)`` the reply gives, in reply
    order, first mention of a name only; names not among ``names`` are ignored."""
    lookup = {_norm(n): i for i, n in enumerate(names)}
    out, seen = [], set()
    for match in _SCORED.finditer(reply or ""):
        index = lookup.get(_norm(match.group(1)))
        if index is None or index in seen:
            continue
        seen.add(index)
        out.append((index, float(match.group(2))))
    return out


def read_scores(reply: str, count: int) -> list[float] | None:
    """ToG's entity scores: the decimal numbers of the reply when there is one per candidate,
    else None (the caller then treats the candidates as equal)."""
    numbers = [float(x) for x in _NUMBER.findall(reply or "")]
    return numbers if len(numbers) == count and count else None


def read_names(reply: str, names: list[str]) -> list[int]:
    """Indices of ``names`` the reply picks, in reply order.

    The reply's list (inside ``[...]`` or ``{...}`` when it has one, else the whole reply)
    is split at commas, semicolons and new lines and each item matched exactly (case and
    quotes aside); when no item matches, names the reply mentions as whole words count,
    longest first so that a name inside a longer picked name is not picked too.
    """
    text = reply or ""
    lookup: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        lookup.setdefault(_norm(name), []).append(i)
    bodies = re.findall(r"\[([^\[\]]*)\]", text) + re.findall(r"\{([^{}]*)\}", text) or [text]
    picked: list[int] = []
    for body in bodies:
        for item in _ITEM_SPLIT.split(body):
            for index in lookup.get(_norm(item), ()):
                if index not in picked:
                    picked.append(index)
    if picked:
        return picked
    lowered = text.lower()
    spans: list[tuple[int, int]] = []
    found = []
    for key in sorted(lookup, key=len, reverse=True):
        if not key:
            continue
        for match in re.finditer(r"(?<![\w-])" + re.escape(key) + r"(?![\w-])", lowered):
            a, b = match.span()
            if any(a < y and x < b for x, y in spans):
                continue
            spans.append((a, b))
            found.append((a, key))
            break
    for _, key in sorted(found):
        for index in lookup[key]:
            if index not in picked:
                picked.append(index)
    return picked


def read_verdict(reply: str) -> bool:
    """True when the reply's verdict is yes: the first ``{Yes}``/``{No}`` in braces, else the
    first bare yes or no word (an unreadable reply counts as no)."""
    for content in re.findall(r"\{([^{}]*)\}", reply or ""):
        word = content.strip().strip("\"'").strip().lower()
        if word in ("yes", "no"):
            return word == "yes"
    match = re.search(r"\b(yes|no)\b", (reply or "").lower())
    return bool(match) and match.group(1) == "yes"


def braced_text(reply: str) -> str:
    """The last ``{...}`` of a reply that is not a bare yes or no ('' when there is none)."""
    for content in reversed(re.findall(r"\{([^{}]*)\}", reply or "")):
        text = content.strip()
        if text and text.lower().strip("\"'") not in ("yes", "no"):
            return text
    return ""


# The deviation of every search whose final reply ``final_results`` reads (with ``read_reply``).
READER_DEVIATION = lenient_reading("an entity its search reached (or an option)", "the best path's end")


# ---------------------------------------------------------------- what results carry
def named_edges(graph: KnowledgeGraph, walk: Walk) -> list[tuple[str, str, str]]:
    return [(graph.name(a), graph.relation_names[r], graph.name(b))
            for a, r, b in zip(walk.nodes[:-1], walk.relations, walk.nodes[1:])]


def unique_triplets(graph: KnowledgeGraph, walks: list[Walk]) -> list[tuple[str, str, str]]:
    """Every edge of the walks once, in walk order, as (head name, relation, tail name)."""
    seen, out = set(), []
    for walk in walks:
        for a, r, b in zip(walk.nodes[:-1], walk.relations, walk.nodes[1:]):
            if (a, r, b) not in seen:
                seen.add((a, r, b))
                out.append((graph.name(a), graph.relation_names[r], graph.name(b)))
    return out


def last_triplets(graph: KnowledgeGraph, walks: list[Walk]) -> list[tuple[str, str, str]]:
    """The last edge of each walk once: the triples one reading step brought in."""
    return unique_triplets(graph, [Walk(w.nodes[-2:], w.relations[-1:]) for w in walks if w.relations])


def maximal(walks: list[Walk]) -> list[Walk]:
    """The walks that are no prefix of another walk, first occurrence kept, order kept."""
    keys = [(w.nodes, w.relations) for w in walks]
    out, seen = [], set()
    for walk, (nodes, rels) in zip(walks, keys):
        if (nodes, rels) in seen or not rels:
            continue
        longer = any(len(r2) > len(rels) and n2[: len(nodes)] == nodes and r2[: len(rels)] == rels
                     for n2, r2 in keys)
        if not longer:
            seen.add((nodes, rels))
            out.append(walk)
    return out


def path_edges(graph: KnowledgeGraph, walks: list[Walk]) -> list[list[list]]:
    return [[[int(graph.node_id[a]), graph.relation_names[r], int(graph.node_id[b])]
             for a, r, b in zip(w.nodes[:-1], w.relations, w.nodes[1:])] for w in walks]


@dataclass
class Explored:
    """Entities considered at each path depth (depth = hops from the topic entity)."""

    by_depth: dict[int, set[int]] = field(default_factory=dict)

    def add(self, depth: int, nodes) -> None:
        self.by_depth.setdefault(int(depth), set()).update(int(v) for v in nodes)

    def as_ids(self, graph: KnowledgeGraph) -> dict[str, list[int]]:
        return {str(d): sorted(int(graph.node_id[v]) for v in nodes)
                for d, nodes in sorted(self.by_depth.items()) if nodes}


@dataclass
class SearchState:
    """One question's search: what every baseline tracks."""

    query: Query
    frontier: list[Walk]
    kept: list[Walk] = field(default_factory=list)  # every walk whose triplets the LLM was shown
    explored: Explored = field(default_factory=Explored)
    # once the search is over: "paths" (answer from the triplets), "knowledge" (the LLM's own),
    # or "reply" (a search step's reply already holds the answer)
    answer_from: str = ""
    reply: str = ""
    stopped_at: int = 0
    stop: str = ""

    def finish(self, answer_from: str, stop: str, depth: int, reply: str | None = None) -> None:
        self.answer_from, self.stop, self.stopped_at = answer_from, stop, depth
        if reply is not None:
            self.reply = reply


def searching(states: list[SearchState]) -> list[int]:
    return [j for j, st in enumerate(states) if not st.answer_from]


def final_results(graph: KnowledgeGraph, call: LLMCaller, states: list[SearchState], usages: list[Usage],
                  method: str, extra, params: GenerationParams | None = None,
                  paths_prompt=None, knowledge_prompt=None) -> list[Result]:
    """The answer prompts still owed (one batch), then one result per state.

    ``extra(state)`` gives the method's own fields. Paths are the maximal kept walks, deepest
    (then best scored) first; the first one's end stands in for an unreadable answer.
    ``paths_prompt(question, triplets, options)`` and ``knowledge_prompt(question, options)``
    are a method's own answer prompts (default: ``prompts.answer`` and zero-shot CoT).
    """
    paths_prompt = paths_prompt or prompts.answer
    knowledge_prompt = knowledge_prompt or prompts.chain_of_thought
    texts, owners = [], []
    for j, st in enumerate(states):
        q = st.query
        if st.answer_from == "paths":
            texts.append(paths_prompt(q.text, unique_triplets(graph, st.kept), q.options))
        elif st.answer_from == "knowledge":
            texts.append(knowledge_prompt(q.text, q.options))
        else:
            continue
        owners.append(j)
    for j, reply in zip(owners, call(texts, owners, usages, params)):
        states[j].reply = reply
    results = []
    for j, st in enumerate(states):
        paths = sorted(maximal(st.kept), key=lambda w: (-w.hops, -w.score))
        best = graph.name(paths[0].end) if paths else ""
        ends = list(dict.fromkeys(graph.name(w.end) for w in st.kept))
        answer, source = read_reply(st.reply, st.query.options, ends, best)
        results.append(Result(
            st.query.id, st.query.level, answer, method=method, raw=st.reply, answer_source=source,
            paths=path_edges(graph, paths), explored=st.explored.as_ids(graph),
            fallback="llm-knowledge" if st.answer_from == "knowledge" else "", usage=usages[j].as_dict(),
            extra={"stopped_at": st.stopped_at, "stop": st.stop, **extra(st)}))
    return results


def topic_walks(graph: KnowledgeGraph, query: Query) -> list[Walk]:
    """One empty walk per topic entity, in the order the query lists them (no duplicates)."""
    nodes = graph.index_of(list(query.topic_ids), missing="ignore")
    return [Walk((int(v),)) for v in dict.fromkeys(int(x) for x in nodes) if v >= 0]


EXHAUSTED = ("knowledge", "paths")


def exhausted_setting(paper: str) -> str:
    """A search config's ``exhausted`` field: the LLM's own knowledge (the paper's) by default."""
    return setting("knowledge", f"no answer by the depth limit: answer from the LLM's own knowledge ({paper}) "
                                "or from the triplets (paths)")


def check_exhausted(value: str, method: str) -> str:
    if value not in EXHAUSTED:
        raise InputError(f"--method {method}: --param exhausted={value!r}: choose knowledge or paths")
    return value
