"""StructGPT (Jiang et al., EMNLP 2023; RUCAIBox/StructGPT) on a knowledge graph: iterative
reading-then-reasoning through two reading interfaces, as its KGQA script runs them.

At each step (up to ``max_depth``: 3 by default, the one three-hop limit the AdaPath paper sets
for every method; ``structgpt-d2`` keeps the original's 2, a 2-hop subgraph of one chosen
relation and the hop behind it):

1. Extract_Neighbor_Relations: the relations of the current entities are linearized and the
   LLM picks the relation to follow ("The relevant relation: ..."; every candidate the reply
   names counts), with the relations already chosen in the prompt after the first step;
2. Extract_Triples: the current entities' neighbours through the picked relation, at most
   ``max_triples`` per relation (a seeded sample; StructGPT's max_triples_per_relation);
3. the LLM reads the linearized triples and either answers ("The final answers: ...") or asks
   for more ("Need further information"); then every tail goes on (no narrowing call).

No relation, no pick or no triple to read: the LLM answers from its own knowledge (one call,
as StructGPT's final query); the step limit without an answer: its own knowledge too
(``exhausted=paths``: from every triple read). At most 2D + 1 calls for D steps.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from adapath.config import setting
from adapath.contract import Query, Result
from adapath.engine.graph import KnowledgeGraph
from adapath.errors import InputError
from adapath.llm import GenerationParams, LLMBackend, Usage, prompts
from adapath.methods import _search as s
from adapath.methods.base import LLMCaller, MethodContext, MethodSpec, config_from, params_of


@dataclass
class StructGPTConfig:
    max_depth: int = setting(3, "most reading steps (hops)")
    max_triples: int = setting(60, "triples read per relation per step (a seeded sample beyond)")  # WebQSP's
    seed: int = setting(42, "seed of the triple samples")
    exhausted: str = s.exhausted_setting("StructGPT")
    # StructGPT: temperature 0, 300 new tokens
    params: GenerationParams = field(default_factory=lambda: GenerationParams(max_tokens=300, temperature=0.0))

    def check(self, method: str = "structgpt") -> None:
        s.check_exhausted(self.exhausted, method)
        if self.max_depth < 1 or self.max_triples < 1:
            raise InputError(f"--method {method}: max_depth and max_triples must be at least 1")


@dataclass
class _State(s.SearchState):
    topics: list[str] = field(default_factory=list)
    followed: list[str] = field(default_factory=list)


class StructGPT:
    name = "structgpt"

    def __init__(self, graph: KnowledgeGraph, llm: LLMBackend, config: StructGPTConfig | None = None):
        self.graph, self.config = graph, config or StructGPTConfig()
        self._call = LLMCaller(llm, self.config.params)

    def answer(self, queries: list[Query]) -> list[Result]:
        g, c = self.graph, self.config
        usages = [Usage() for _ in queries]
        states = []
        for q in queries:
            walks = s.topic_walks(g, q)
            states.append(_State(q, walks, topics=[g.name(w.end) for w in walks]))
            if not walks:
                states[-1].finish("knowledge", "no-topic", 0)
        for depth in range(1, c.max_depth + 1):
            active = s.searching(states)
            if not active:
                break
            chosen = self._pick_relations(states, active, depth, usages)
            reading = self._extract(states, chosen, depth)
            self._read(states, reading, depth, usages)
        return s.final_results(g, self._call, states, usages, self.name,
                               lambda st: {"relations_followed": st.followed},
                               knowledge_prompt=prompts.structgpt_knowledge)

    def _pick_relations(self, states, active, depth, usages) -> dict[int, list[int]]:
        g = self.graph
        texts, owners, offered = [], [], []
        for j in active:
            st = states[j]
            relations = sorted({r for w in st.frontier for r in s.relations_of(g, w.end)},
                               key=lambda r: g.relation_names[r])
            if not relations:
                st.finish("knowledge", "no-relations", depth)
                continue
            texts.append(prompts.structgpt_relation(st.query.text, st.topics, st.followed,
                                                    [f'"{g.relation_names[r]}"' for r in relations]))
            owners.append(j)
            offered.append(relations)
        chosen = {}
        for j, relations, reply in zip(owners, offered, self._call(texts, owners, usages)):
            picks = s.read_names(reply, [g.relation_names[r] for r in relations])
            if not picks:
                states[j].finish("knowledge", "no-relation-picked", depth)
                continue
            chosen[j] = [relations[i] for i in sorted(picks)]
            states[j].followed += [g.relation_names[r] for r in chosen[j]]
        return chosen

    def _extract(self, states, chosen, depth) -> dict[int, list[s.Walk]]:
        g, c = self.graph, self.config
        reading = {}
        for j, relations in chosen.items():
            st, walks = states[j], []
            for relation in relations:
                found = [w.extend(v, relation, 1.0) for w in st.frontier for v in s.neighbors_via(g, w, relation)]
                if len(found) > c.max_triples:
                    keep = s.seeded_sample(list(range(len(found))), c.max_triples, c.seed, st.query.id,
                                           depth, relation)
                    found = [found[i] for i in keep]
                walks += found
            if not walks:
                st.finish("knowledge", "no-triples", depth)
                continue
            st.explored.add(depth, [w.end for w in walks])
            st.kept += walks
            reading[j] = walks
        return reading

    def _read(self, states, reading, depth, usages) -> None:
        g, c = self.graph, self.config
        owners = list(reading)
        texts = [prompts.structgpt_read(states[j].query.text, s.last_triplets(g, reading[j]),
                                        states[j].query.options) for j in owners]
        for j, reply in zip(owners, self._call(texts, owners, usages)):
            st, walks = states[j], reading[j]
            if "final answers:" in reply.lower():
                st.finish("reply", "answered", depth, reply)
                continue
            st.frontier = s.distinct_ends(walks)  # every tail goes on: StructGPT does not narrow them
            if depth == c.max_depth:
                st.finish(c.exhausted, "depth-limit", depth)


def _builder(name: str, **defaults):
    def build(context: MethodContext) -> StructGPT:
        config = config_from(StructGPTConfig, context.params, **defaults)
        config.check(name)
        return StructGPT(context.graph, context.llm, config)
    return build


_DEVIATIONS = (
    "prompts are zero-shot as the original's KGQA prompts, in this project's words; the reading prompt asks "
    "for the answer in braces (or an option letter) after 'The final answers:' so that one reader reads "
    "every method",
    "the second and later steps pick a relation again (the original's relation_rerank prompt) where the "
    "original's WebQSP script follows a CVT node: PrimeKG has no CVT nodes, so its constraint step never applies",
    "each step is a fresh prompt; the original keeps a chat history per step and resets it after the "
    "relation choice",
    "a long fact list is cut to a seeded sample of max_triples (60, the original's WebQSP setting)",
    s.READER_DEVIATION,
)

METHODS = [
    MethodSpec(
        "structgpt", "StructGPT: iterative reading interfaces (the entities' relations, then triples through "
                     "the chosen relation); the LLM answers or asks for more; 3 steps",
        "StructGPT (Jiang et al., EMNLP 2023)", _builder("structgpt"), llm="required",
        config=StructGPTConfig, params=params_of(StructGPTConfig),
        repository="RUCAIBox/StructGPT", calls="≤ 2D+1 = 7",
        deviations=("3 reading steps, the one three-hop limit the AdaPath paper sets for every method, where the "
                    "original's WebQSP script reads 2 (so that 3-hop answers can be reached; structgpt-d2 keeps 2)",
                    *_DEVIATIONS)),
    MethodSpec(
        "structgpt-d2", "StructGPT with the original's 2 reading steps (a 2-hop subgraph); otherwise structgpt",
        "StructGPT (Jiang et al., EMNLP 2023)", _builder("structgpt-d2", max_depth=2), llm="required",
        config=StructGPTConfig, params=params_of(StructGPTConfig, max_depth=2),
        repository="RUCAIBox/StructGPT", calls="≤ 2D+1 = 5", deviations=_DEVIATIONS),
]
