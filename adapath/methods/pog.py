"""Plan-on-Graph (Chen et al., NeurIPS 2024; liyichen-cly/PoG): sub-objectives, guided
exploration, memory and reflection that adds entities.

1. Task decomposition: the LLM breaks the question into sub-objectives (one call).
2. At each depth, for the entities to explore:
   - relation exploration: the LLM picks as few relations as it needs, given the question and
     the sub-objectives (one prompt per entity);
   - entity exploration: the neighbours through each picked relation; a list of two or more
     goes to the LLM, which keeps as few as answer the question (one prompt per relation; a
     list longer than ``entity_cap`` first keeps the ``entity_cap`` names most similar to the
     question, as PoG's 70 with its sentence encoder);
   - memory: the explored subgraph and reasoning paths are kept here; the LLM rewrites the
     sub-objectives' status from the new triplets (one call);
   - evaluation (5-shot, JSON): from memory and the new triplets the LLM says whether this
     is sufficient and gives the answer; sufficient with an answer (not Null) stops;
   - reflection (while fewer than ``max_reflections`` additions were made): the LLM says
     whether entities must be added to those explored next (2-shot, JSON "Add": Yes/No); on
     a yes a second call (1-shot) picks them from the explored subgraph (entities expanded
     before and candidates left aside), and the search goes on from the current entities
     and the added ones, each along its own path.
3. Nothing kept at a depth: answer from the triplets (5-shot); the depth limit without a
   yes: the LLM's own knowledge (1-shot, JSON; ``exhausted=paths``: the triplets).

Defaults are PoG's: depth 4, temperature 0.3, replies up to 4,096 tokens. ``pog-d3`` is the
same method at depth 3 with 512-token replies, the shared setting of like-for-like tables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from adapath.config import setting
from adapath.contract import Query, Result
from adapath.engine.graph import KnowledgeGraph
from adapath.errors import InputError
from adapath.llm import GenerationParams, LLMBackend, Usage, prompts
from adapath.llm.parse import parse_answer
from adapath.methods import _search as s
from adapath.methods.base import LLMCaller, MethodContext, MethodSpec, config_from, params_of


@dataclass
class PoGConfig:
    max_depth: int = setting(4, "most exploration rounds")
    max_tokens: int = setting(4096, "most tokens in each reply")
    entity_cap: int = setting(70, "longer entity lists keep the names most similar to the question (--encoder)")
    max_reflections: int = setting(5, "most additions of entities by reflection per question")
    exhausted: str = s.exhausted_setting("PoG")
    temperature: float = 0.3  # PoG's

    @property
    def params(self) -> GenerationParams:
        return GenerationParams(max_tokens=self.max_tokens, temperature=self.temperature)

    def check(self) -> None:
        s.check_exhausted(self.exhausted, "pog")
        if self.max_depth < 1 or self.entity_cap < 1 or self.max_tokens < 1:
            raise InputError("--method pog: max_depth, entity_cap and max_tokens must be at least 1")


@dataclass
class _State(s.SearchState):
    subobjectives: list[str] = field(default_factory=list)
    memory: str = ""
    discovered: dict[int, s.Walk] = field(default_factory=dict)  # explored subgraph: entity -> its path
    expanded: list[int] = field(default_factory=list)  # entities whose relations were explored
    revisited: set[int] = field(default_factory=set)  # entities reflection brought back
    reflections: list[dict] = field(default_factory=list)
    groups: list[tuple[str, str, list[str]]] = field(default_factory=list)  # this depth's triplets


class PlanOnGraph:
    name = "pog"

    def __init__(self, graph: KnowledgeGraph, llm: LLMBackend, encoder_factory=None,
                 config: PoGConfig | None = None):
        self.graph, self.config = graph, config or PoGConfig()
        self.config.check()
        self._call = LLMCaller(llm, self.config.params)
        self._encoder_factory, self._encoder = encoder_factory, None

    def answer(self, queries: list[Query]) -> list[Result]:
        g, c = self.graph, self.config
        usages = [Usage() for _ in queries]
        states = [_State(q, s.topic_walks(g, q)) for q in queries]
        everyone = list(range(len(states)))
        for j, reply in zip(everyone, self._call([prompts.pog_decompose(q.text) for q in queries], everyone, usages)):
            states[j].subobjectives = read_list(reply) or [queries[j].text]
        for st in states:
            if not st.frontier:
                st.finish("knowledge", "no-topic", 0)
            for walk in st.frontier:
                st.discovered.setdefault(walk.end, walk)
        for depth in range(1, c.max_depth + 1):
            active = s.searching(states)
            if not active:
                break
            picked = self._explore_relations(states, active, usages)
            selected = self._explore_entities(states, active, picked, usages)
            going = []
            for j in active:
                st = states[j]
                if not selected[j]:
                    st.finish("paths", "no-candidates", depth)
                    continue
                st.kept.extend(selected[j])
                going.append(j)
            self._update_memory(states, going, usages)
            unanswered = self._evaluate(states, going, depth, usages)
            self._reflect(states, unanswered, selected, usages)
        return s.final_results(g, self._call, states, usages, self.name, lambda st: {
            "subobjectives": st.subobjectives, "memory": st.memory, "reflections": st.reflections},
            paths_prompt=prompts.tog_answer, knowledge_prompt=prompts.pog_knowledge)

    # ------------------------------------------------------------------ steps
    def _explore_relations(self, states, active, usages) -> dict[int, list[tuple[s.Walk, int]]]:
        g = self.graph
        texts, owners, asked = [], [], []
        for j in active:
            st = states[j]
            for walk in st.frontier:
                st.expanded.append(walk.end)
                relations = s.relations_of(g, walk.end)
                if relations:
                    texts.append(prompts.pog_relations(st.query.text, st.subobjectives, g.name(walk.end),
                                                       [g.relation_names[r] for r in relations]))
                    owners.append(j)
                    asked.append((walk, relations))
        picked: dict[int, list] = {j: [] for j in active}
        for j, (walk, relations), reply in zip(owners, asked, self._call(texts, owners, usages)):
            chosen = s.read_names(reply, [g.relation_names[r] for r in relations])
            picked[j] += [(walk, relations[i]) for i in chosen]
        return picked

    def _explore_entities(self, states, active, picked, usages) -> dict[int, list[s.Walk]]:
        g, c = self.graph, self.config
        selected: dict[int, list[s.Walk]] = {j: [] for j in active}
        texts, owners, asked = [], [], []
        for j in active:
            st = states[j]
            st.groups = []
            for walk, relation in picked[j]:
                nodes = s.neighbors_via(g, walk, relation)
                if not nodes:
                    continue
                st.explored.add(walk.hops + 1, nodes)
                if len(nodes) > c.entity_cap:
                    nodes = self._most_similar(st.query.text, nodes, c.entity_cap)
                nodes = sorted(nodes, key=lambda v: (g.name(v), v))
                for v in nodes:
                    st.discovered.setdefault(v, walk.extend(v, relation, 1.0))
                if len(nodes) == 1:
                    self._keep(st, selected[j], walk, relation, nodes)
                    continue
                texts.append(prompts.pog_entities(st.query.text, g.name(walk.end), g.relation_names[relation],
                                                  [g.name(v) for v in nodes]))
                owners.append(j)
                asked.append((walk, relation, nodes))
        for j, (walk, relation, nodes), reply in zip(owners, asked, self._call(texts, owners, usages)):
            chosen = s.read_names(reply, [g.name(v) for v in nodes])
            if chosen:  # nothing readable: PoG drops the group
                self._keep(states[j], selected[j], walk, relation, [nodes[i] for i in sorted(chosen)])
        return selected

    def _keep(self, st: _State, out: list[s.Walk], walk: s.Walk, relation: int, nodes: list[int]) -> None:
        g = self.graph
        out += [walk.extend(v, relation, 1.0) for v in nodes]
        st.groups.append((g.name(walk.end), g.relation_names[relation], [g.name(v) for v in nodes]))

    def _update_memory(self, states, going, usages) -> None:
        texts = [prompts.pog_memory(states[j].query.text, states[j].subobjectives, states[j].memory,
                                    states[j].groups) for j in going]
        for j, reply in zip(going, self._call(texts, going, usages)):
            states[j].memory = read_memory(reply) or states[j].memory

    def _evaluate(self, states, going, depth, usages) -> list[int]:
        c = self.config
        texts = [prompts.pog_reason(states[j].query.text, states[j].memory, states[j].groups,
                                    states[j].query.options) for j in going]
        unanswered = []
        for j, reply in zip(going, self._call(texts, going, usages)):
            st = states[j]
            answer = parse_answer(reply).strip().lower()
            if read_flag(reply, "Sufficient") and answer and answer not in ("null", "none"):
                st.finish("reply", "sufficient", depth, reply)
            elif depth == c.max_depth:
                st.finish(c.exhausted, "depth-limit", depth)
            else:
                unanswered.append(j)
        return unanswered

    def _reflect(self, states, unanswered, selected, usages) -> None:
        g, c = self.graph, self.config
        for j in unanswered:
            states[j].frontier = s.distinct_ends(selected[j])
        asking = [j for j in unanswered if len(states[j].reflections) < c.max_reflections]
        texts = [prompts.pog_reflect(states[j].query.text, sorted({g.name(w.end) for w in states[j].frontier}),
                                     states[j].memory, s.unique_triplets(g, states[j].kept)) for j in asking]
        picking, pick_texts, offered = [], [], []
        for j, reply in zip(asking, self._call(texts, asking, usages)):
            st = states[j]
            if not read_flag(reply, "Add"):
                continue
            candidates = self._earlier(st)
            if candidates:
                picking.append(j)
                offered.append(candidates)
                pick_texts.append(prompts.pog_pick(st.query.text, read_reason(reply),
                                                   sorted(g.name(v) for v in candidates), st.memory))
        for j, candidates, reply in zip(picking, offered, self._call(pick_texts, picking, usages)):
            st = states[j]
            chosen = [candidates[i] for i in s.read_names(reply, [g.name(v) for v in candidates])]
            if not chosen:
                continue
            st.revisited.update(chosen)
            st.reflections.append({"decision": "add", "entities": [int(g.node_id[v]) for v in chosen]})
            st.frontier = s.distinct_ends(st.frontier + [st.discovered[v] for v in chosen])

    def _earlier(self, st: _State) -> list[int]:
        """Entities of the explored subgraph reflection may go back to: those expanded before,
        then candidates left aside; never the current ones or one already brought back."""
        g, c = self.graph, self.config
        current = {w.end for w in st.frontier}
        expanded = [v for v in dict.fromkeys(st.expanded) if v not in current and v not in st.revisited]
        aside = [v for v in st.discovered if v not in current and v not in st.revisited and v not in set(expanded)]
        room = max(c.entity_cap - len(expanded), 0)
        if len(aside) > room:
            aside = self._most_similar(st.query.text, aside, room) if room else []
        return sorted(expanded, key=lambda v: (g.name(v), v)) + sorted(aside, key=lambda v: (g.name(v), v))

    def _most_similar(self, question: str, nodes: list[int], cap: int) -> list[int]:
        """The ``cap`` nodes whose names are most similar to the question (encoder cosine)."""
        if self._encoder is None:
            if self._encoder_factory is None:
                raise InputError("--method pog needs a sentence encoder (--encoder) to cap long entity lists")
            self._encoder = self._encoder_factory()
        g = self.graph
        vectors = self._encoder.encode([question] + [g.name(v) for v in nodes])
        scores = vectors[1:] @ vectors[0]
        order = np.lexsort((np.asarray(nodes), -scores))[:cap]
        return [nodes[i] for i in sorted(order)]


def read_list(reply: str) -> list[str]:
    """A list the reply writes as ["a", "b"] (or with single quotes, or one item per line)."""
    text = reply or ""
    bracketed = re.findall(r"\[([^\[\]]*)\]", text)
    body = bracketed[-1] if bracketed else text
    items = re.findall(r'"([^"]+)"', body) or re.findall(r"'([^']+)'", body)
    if not items:
        items = [line.strip().lstrip("-*•0123456789.) ").strip() for line in body.splitlines()]
    return [item.strip() for item in items if item.strip()][:10]


def read_memory(reply: str) -> str:
    """The JSON object of a memory reply (first ``{`` to last ``}``), else the reply itself."""
    text = (reply or "").strip()
    a, b = text.find("{"), text.rfind("}")
    return (text[a:b + 1] if 0 <= a < b else text)[:2000]


def read_flag(reply: str, key: str) -> bool:
    """A JSON yes/no field (``"Sufficient": "Yes"``, ``"Add": "No"``); without the field, the
    reply's first yes or no (unreadable: no)."""
    match = re.search(r'"' + key + r'"\s*:\s*"?\s*(yes|no|true|false)', reply or "", re.I)
    if match:
        return match.group(1).lower() in ("yes", "true")
    return s.read_verdict(reply)


def read_reason(reply: str) -> str:
    """The JSON ``"Reason"`` of a reflection reply, else the reply without its braces."""
    match = re.search(r'"Reason"\s*:\s*"([^"]*)"', reply or "")
    text = match.group(1) if match else re.sub(r"\{[^{}]*\}", "", reply or "")
    return text.strip(" .:\n")[:300]


# pog-d3: the depth every path baseline shares in like-for-like tables, with 512-token replies
LIKE_FOR_LIKE = {"max_depth": 3, "max_tokens": 512}


def _builder(**defaults):
    def build(context: MethodContext) -> PlanOnGraph:
        config = config_from(PoGConfig, context.params, **defaults)
        return PlanOnGraph(context.graph, context.llm, context.encoder, config)
    return build


# 1 decomposition; per depth one call per entity (relations) and per relation with 2+ tails
# (entities), memory, evaluation and up to 2 reflection calls (at least 3); 1 answer
POG_CALLS = "≥ 3D+2"

_DEVIATIONS = (
    "worked examples are biomedical and in this project's words (PoG's are Freebase questions), in PoG's "
    "format and count: decomposition 1, relations 1, entities 1, memory 1, evaluation 5, reflection 2, "
    "added entities 1, answer 5, no-graph answer 1",
    "memory is kept in the result, not in a file per question; the graph is undirected PrimeKG (no head/tail "
    "split of relations)",
    "reflection's candidates are every entity of the explored subgraph not explored now (the original's "
    "loop, by its indentation, offers the expanded entities and only the members of lists longer than 70)",
    "the final answer prompts close with this project's answer format (braces, or an option letter)",
    "a long entity list keeps the names most similar to the question under this project's --encoder "
    "(minilm by default) where the official code uses msmarco-distilbert-base-tas-b",
    s.READER_DEVIATION,
)

METHODS = [
    MethodSpec(
        "pog", "Plan-on-Graph: sub-objectives guide relation and entity exploration; memory; reflection adds "
               "entities; depth 4",
        "Plan-on-Graph (Chen et al., NeurIPS 2024)", _builder(), llm="required",
        config=PoGConfig, params=params_of(PoGConfig), repository="liyichen-cly/PoG", deviations=_DEVIATIONS, calls=POG_CALLS),
    MethodSpec(
        "pog-d3", "Plan-on-Graph at the shared depth 3 with 512-token replies (like-for-like tables); "
                  "otherwise pog",
        "Plan-on-Graph (Chen et al., NeurIPS 2024)", _builder(**LIKE_FOR_LIKE), llm="required",
        config=PoGConfig, params=params_of(PoGConfig, **LIKE_FOR_LIKE), repository="liyichen-cly/PoG", calls=POG_CALLS,
        deviations=("depth 3 instead of PoG's 4 and replies capped at 512 tokens instead of 4,096, on purpose: "
                    "the depth every path baseline shares in like-for-like tables", *_DEVIATIONS)),
]
