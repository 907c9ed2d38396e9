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
3. sufficiency: the LLM is asked whether the reasoning paths so far are enough; yes stops.

The answer is generated from the reasoning paths when the check says yes or when no new
candidate is left ("half stop"); when the depth limit passes without a yes, ToG answers
from the LLM's own knowledge (``exhausted=paths`` answers from the paths instead).

Every step's prompts from the whole batch go to the backend as one batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from adapath.engine.graph import KnowledgeGraph
from adapath.llm import GenerationParams, LLMBackend, Usage, prompts
from adapath.methods import _search as s
from adapath.methods.base import LLMCaller, MethodContext, MethodSpec, Param, Query, Result


@dataclass
class ToGConfig:
    width: int = 3
    max_depth: int = 3
    sample_at: int = 20  # candidate lists this long or longer are sampled down ...
    sample_size: int = 5  # ... to this many (ToG's num_retain_entity)
    exhausted: str = "knowledge"  # no yes by the depth limit: answer from "knowledge" or "paths"
    seed: int = 42
    # ToG's defaults: exploration at temperature 0.4, reasoning at 0, 256 new tokens
    explore: GenerationParams = field(default_factory=lambda: GenerationParams(max_tokens=256, temperature=0.4))
    reason: GenerationParams = field(default_factory=lambda: GenerationParams(max_tokens=256, temperature=0.0))


@dataclass
class _State:
    query: Query
    frontier: list[s.Walk]
    kept: list[s.Walk] = field(default_factory=list)
    explored: s.Explored = field(default_factory=s.Explored)
    answer_from: str = ""  # "paths" or "knowledge" once the search is over
    stopped_at: int = 0
    stop: str = ""  # sufficient | no-candidates | depth-limit | no-topic


class ThinkOnGraph:
    name = "tog"

    def __init__(self, graph: KnowledgeGraph, llm: LLMBackend, config: ToGConfig | None = None):
        self.graph, self.config = graph, config or ToGConfig()
        self._call = LLMCaller(llm)

    def answer(self, queries: list[Query]) -> list[Result]:
        g, c = self.graph, self.config
        usages = [Usage() for _ in queries]
        states = [_State(q, s.topic_walks(g, q)) for q in queries]
        for state in states:
            if not state.frontier:
                state.answer_from, state.stop = "knowledge", "no-topic"
        for depth in range(1, c.max_depth + 1):
            active = [j for j, st in enumerate(states) if not st.answer_from]
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
                    st.answer_from, st.stop, st.stopped_at = "paths", "no-candidates", depth
                    continue
                st.kept.extend(ranked)
                st.frontier = s.distinct_ends(ranked)
                searching.append(j)
            replies = self._call([prompts.tog_sufficient(states[j].query.text, s.unique_triplets(g, states[j].kept))
                                  for j in searching], searching, usages, c.reason)
            for j, reply in zip(searching, replies):
                st = states[j]
                if s.read_verdict(reply):
                    st.answer_from, st.stop, st.stopped_at = "paths", "sufficient", depth
                elif depth == c.max_depth:
                    st.answer_from, st.stop, st.stopped_at = c.exhausted, "depth-limit", depth
        return self._answers(states, usages)

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
            best = sorted(s.read_scored(reply, names), key=lambda x: -x[1])[: c.width]
            picked[j] += [(walk, relations[i], score) for i, score in best]
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

    def _answers(self, states: list[_State], usages: list[Usage]) -> list[Result]:
        g = self.graph
        texts, owners = [], []
        for j, st in enumerate(states):
            q = st.query
            if st.answer_from == "paths":
                texts.append(prompts.answer(q.text, s.unique_triplets(g, st.kept), q.options))
            else:
                texts.append(prompts.graph_free_answer(q.text, q.options))
            owners.append(j)
        replies = self._call(texts, owners, usages, self.config.reason)
        results = []
        for j, (st, reply) in enumerate(zip(states, replies)):
            paths = s.maximal(st.kept)
            ranked = sorted(paths, key=lambda w: (-w.hops, -w.score))
            best = g.name(ranked[0].end) if ranked else ""
            ends = list(dict.fromkeys(g.name(w.end) for w in st.kept))
            answer, source = s.read_final(reply, st.query, ends, best)
            results.append(Result(
                st.query.id, st.query.level, answer, method=self.name, raw=reply, answer_source=source,
                paths=s.path_edges(g, ranked), explored=st.explored.as_ids(g),
                fallback="llm-knowledge" if st.answer_from == "knowledge" else "",
                usage=usages[j].as_dict(),
                extra={"stopped_at": st.stopped_at, "stop": st.stop}))
        return results


def _build(context: MethodContext) -> ThinkOnGraph:
    p = context.params
    config = ToGConfig(width=p.get("width", 3), max_depth=p.get("max_depth", 3),
                       sample_at=p.get("sample_at", 20), sample_size=p.get("sample_size", 5),
                       exhausted=s.check_exhausted(p.get("exhausted", "knowledge"), "tog"),
                       seed=p.get("seed", 42))
    return ThinkOnGraph(context.graph, context.llm, config)


TOG_PARAMS = (
    Param("width", 3, "beam width: relations kept per entity and reasoning paths kept per depth"),
    Param("max_depth", 3, "most hops searched"),
    Param("sample_at", 20, "neighbour lists this long or longer are sampled before the LLM scores them"),
    Param("sample_size", 5, "how many neighbours such a sample keeps (ToG's num_retain_entity)"),
    Param("exhausted", "knowledge", "no sufficient paths by the depth limit: answer from the LLM's "
                                    "own knowledge (ToG) or from the paths"),
    Param("seed", 42, "seed of the neighbour samples"),
)

METHODS = [MethodSpec(
    "tog", "Think-on-Graph: LLM relation then entity pruning in a width-3 beam, a sufficiency check per depth",
    "Think-on-Graph (Sun et al., ICLR 2024; IDEA-FinAI/ToG)", _build, llm="required", params=TOG_PARAMS,
)]
