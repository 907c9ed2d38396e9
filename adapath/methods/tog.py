"""Think-on-Graph (Sun et al., ICLR 2024; IDEA-FinAI/ToG): LLM-pruned beam search.

At each depth, for every entity at the end of a kept reasoning path:

1. relation pruning: the LLM picks ``width`` of the entity's relations and scores them (one
   prompt per entity, scores summing to 1);
2. entity pruning: the neighbours through each picked relation are scored by the LLM (one
   prompt per relation with two or more candidates; a lone candidate takes the relation's
   score without a call); a candidate's score is its entity score times its relation score.
   Lists of ``sample_at`` or more candidates are first cut to a seeded sample of
   ``sample_size`` (ToG's ``num_retain_entity``). The ``width`` best candidates over all
   paths, zero scores dropped, extend the reasoning paths;
3. sufficiency (5-shot): the LLM is asked whether the reasoning paths so far are enough;
   a {Yes} stops, and the answer is read from that same reply (no further call).

Relation picks are every scored relation the reply names (the prompt asks for ``width``;
ToG does not cut the reply). When no new candidate is left ("half stop") the answer comes
from the reasoning paths (5-shot); when the depth limit passes without a yes, from the LLM's
own knowledge (6-shot chain of thought; ``exhausted=paths`` answers from the paths instead).
At most 2ND + D + 1 calls when each depth's entity scoring takes at most N calls (the
paper's bound; N width, D depth).

Every step's prompts from the whole batch go to the backend as one batch.
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
class ToGConfig:
    width: int = setting(3, "beam width: relations kept per entity and reasoning paths kept per depth")
    max_depth: int = setting(3, "most hops searched")
    sample_at: int = setting(20, "neighbour lists this long or longer are sampled before the LLM scores them")
    sample_size: int = setting(5, "how many neighbours such a sample keeps (ToG's num_retain_entity)")
    exhausted: str = s.exhausted_setting("ToG")
    seed: int = setting(42, "seed of the neighbour samples")
    # ToG's defaults: exploration at temperature 0.4, reasoning at 0, 256 new tokens
    explore: GenerationParams = field(default_factory=lambda: GenerationParams(max_tokens=256, temperature=0.4))
    reason: GenerationParams = field(default_factory=lambda: GenerationParams(max_tokens=256, temperature=0.0))

    def check(self) -> None:
        s.check_exhausted(self.exhausted, "tog")
        for name in ("width", "max_depth", "sample_at", "sample_size"):
            if getattr(self, name) < 1:
                raise InputError(f"--method tog: --param {name} must be at least 1")


class ThinkOnGraph:
    name = "tog"

    def __init__(self, graph: KnowledgeGraph, llm: LLMBackend, config: ToGConfig | None = None):
        self.graph, self.config = graph, config or ToGConfig()
        self.config.check()
        self._call = LLMCaller(llm)

    def answer(self, queries: list[Query]) -> list[Result]:
        g, c = self.graph, self.config
        usages = [Usage() for _ in queries]
        states = [s.SearchState(q, s.topic_walks(g, q)) for q in queries]
        for st in states:
            if not st.frontier:
                st.finish("knowledge", "no-topic", 0)
        for depth in range(1, c.max_depth + 1):
            active = s.searching(states)
            if not active:
                break
            scored = self._prune_relations(states, active, usages)
            candidates = self._prune_entities(states, active, scored, usages)
            searching = []
            for j in active:
                st = states[j]
                ranked = sorted(candidates[j], key=lambda w: -w.score)[: c.width]
                ranked = [w for w in ranked if w.score > 0]
                if not ranked:
                    st.finish("paths", "no-candidates", depth)
                    continue
                st.kept.extend(ranked)
                st.frontier = s.distinct_ends(ranked)
                searching.append(j)
            replies = self._call([prompts.tog_sufficient(states[j].query.text, s.unique_triplets(g, states[j].kept),
                                                         states[j].query.options)
                                  for j in searching], searching, usages, c.reason)
            for j, reply in zip(searching, replies):
                st = states[j]
                if s.read_verdict(reply):  # ToG keeps this reply: its answer follows the {Yes}
                    st.finish("reply", "sufficient", depth, reply)
                elif depth == c.max_depth:
                    st.finish(c.exhausted, "depth-limit", depth)
        return s.final_results(g, self._call, states, usages, self.name, lambda st: {}, c.reason,
                               paths_prompt=prompts.tog_answer, knowledge_prompt=prompts.few_shot_cot)

    # ------------------------------------------------------------------ steps
    def _prune_relations(self, states, active, usages) -> dict[int, list[tuple[s.Walk, int, float]]]:
        """(walk, relation code, relation score) picked for each frontier walk of each query."""
        g, c = self.graph, self.config
        texts, owners, asked = [], [], []
        for j in active:
            for walk in states[j].frontier:
                relations = s.relations_of(g, walk.end)
                if relations:
                    texts.append(prompts.tog_relations(states[j].query.text, g.name(walk.end),
                                                       [g.relation_names[r] for r in relations], c.width))
                    owners.append(j)
                    asked.append((walk, relations))
        picked: dict[int, list] = {j: [] for j in active}
        for j, (walk, relations), reply in zip(owners, asked, self._call(texts, owners, usages, c.explore)):
            names = [g.relation_names[r] for r in relations]
            # every relation the reply scores, in its order: ToG does not cut the reply to the width
            picked[j] += [(walk, relations[i], score) for i, score in s.read_scored(reply, names)]
        return picked

    def _prune_entities(self, states, active, scored, usages) -> dict[int, list[s.Walk]]:
        """Scored candidate walks per query, in relation order (ToG's order among equal scores)."""
        g, c = self.graph, self.config
        slots: dict[int, list[list[s.Walk]]] = {j: [] for j in active}
        texts, owners, asked = [], [], []
        for j in active:
            query = states[j].query
            for walk, relation, rscore in scored[j]:
                nodes = s.neighbors_via(g, walk, relation)
                if len(nodes) >= c.sample_at:
                    nodes = s.seeded_sample(nodes, c.sample_size, c.seed, query.id, walk.end, relation)
                if not nodes:
                    continue
                states[j].explored.add(walk.hops + 1, nodes)
                nodes = sorted(nodes, key=lambda v: (g.name(v), v))  # ToG lists candidates by name
                slot: list[s.Walk] = []
                slots[j].append(slot)
                if len(nodes) == 1:  # a lone candidate takes its relation's score, no call
                    slot.append(walk.extend(nodes[0], relation, rscore))
                    continue
                texts.append(prompts.tog_entities(query.text, g.relation_names[relation],
                                                  [g.name(v) for v in nodes]))
                owners.append(j)
                asked.append((slot, walk, relation, rscore, nodes))
        for (slot, walk, relation, rscore, nodes), reply in zip(asked, self._call(texts, owners, usages, c.explore)):
            scores = s.read_scores(reply, len(nodes)) or [1.0 / len(nodes)] * len(nodes)
            slot += [walk.extend(v, relation, e * rscore) for v, e in zip(nodes, scores)]
        return {j: [w for slot in slots[j] for w in slot] for j in active}


def _build(context: MethodContext) -> ThinkOnGraph:
    return ThinkOnGraph(context.graph, context.llm, config_from(ToGConfig, context.params))


METHODS = [MethodSpec(
    "tog", "Think-on-Graph: LLM relation then entity pruning in a width-3 beam, a sufficiency check per depth "
           "whose {Yes} reply holds the answer",
    "Think-on-Graph (Sun et al., ICLR 2024)", _build, llm="required", config=ToGConfig,
    params=params_of(ToGConfig),
    repository="IDEA-FinAI/ToG", calls="≤ 40",
    deviations=(
        "worked examples are biomedical and in this project's words (ToG's shots are Freebase questions), "
        "in ToG's format and count: relations 1, entities 1, sufficiency 5, answer 5, no-graph answer 6",
        "the graph is undirected PrimeKG: an entity's relations are listed once, without ToG's head/tail split",
        "every final prompt closes with this project's answer format (the answer in braces, or an option "
        "letter), so that one reader reads every method",
        "ToG's Freebase-only relation filter (abandon_rels) and the removal of relations already followed "
        "have no PrimeKG counterpart; a walk never revisits its own nodes instead",
        s.READER_DEVIATION,
    ),
)]
