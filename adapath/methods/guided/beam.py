"""The paper's frontier beam (AdaPath §3.2): from the topic, depth by depth, the neighbours
that match a surviving meta-path (every neighbour in a free BFS) are grouped, cut by BM25 and
then by cosine to the question, and the next frontier is picked by an LLM (one prompt per
query and depth, the batch's prompts as one backend batch) or, without one, by cosine with
the slots shared among the meta-paths by retrieval score. The paths that complete a meta-path
(or reach the predicted answer type early) are ranked by their end's cosine to the question.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from adapath.engine.graph import KnowledgeGraph
from adapath.engine.traverse import Candidate, Group, TraversalState, typed_neighbors
from adapath.llm import prompts
from adapath.llm.parse import parse_choice
from adapath.methods.base import LLMCaller
from adapath.methods.guided.answer import Exploration
from adapath.methods.guided.config import AdaPathConfig
from adapath.methods.guided.plan import Batch, Plan
from adapath.retrieval.bm25 import GraphText
from adapath.retrieval.dense import NodeEmbeddings


@dataclass
class _Search:
    """One query's beam search."""

    state: TraversalState
    weights: list[float]  # retrieval score of each meta-path the state follows
    meet: dict[int, int]  # nodes one junction step from the second topic -> that step's relation


class BeamExplorer:
    def __init__(self, graph: KnowledgeGraph, text: GraphText, nodes: NodeEmbeddings, config: AdaPathConfig,
                 call: LLMCaller):
        self.graph, self.text, self.nodes, self.config, self.call = graph, text, nodes, config, call

    def explore(self, batch: Batch) -> list[Exploration]:
        searches = [self._search(plan) for plan in batch.plans]
        node_scores = self.text.nodes.scores(batch.texts)  # BM25 prefilter for wide groups
        while True:
            active = [j for j, s in enumerate(searches) if not s.state.finished]
            if not active:
                break
            narrowed = {}
            for j in active:
                state, meet = searches[j].state, searches[j].meet
                groups = state.groups(prefilter=lambda nodes, j=j: node_scores[nodes, j], limit=self.config.prefilter)
                if meet:
                    groups = _meet_groups(state, groups, meet)
                narrowed[j] = self._narrow(groups, batch.embeddings[j])
            choices = self._choose(narrowed, batch, searches)
            for j in active:
                considered = [cand.node for group in narrowed[j] for cand, _ in group]
                searches[j].state.advance(choices[j], considered)
        return [self._found(s, plan, vector) for s, plan, vector in zip(searches, batch.plans, batch.embeddings)]

    def _search(self, plan: Plan) -> _Search:
        g, c = self.graph, self.config
        lanes = plan.lanes(g)
        # the surviving meta-paths' lengths (the predicted hops when they were filtered by it)
        depth = max((mp.hops for mp, _ in plan.surviving), default=min(c.max_depth, int(plan.control["hops"]
                                                                                       or c.max_depth)))
        answer_type = plan.control.get("answer_type")
        state = TraversalState(g, plan.topics[0], [(types, rels) for types, rels, _ in lanes], depth,
                               answer_type=g.type_code(answer_type) if c.shorter and answer_type else -1)
        return _Search(state, [w for *_, w in lanes], self._meet(plan) if plan.junction else {})

    def _meet(self, plan: Plan) -> dict[int, int]:
        """Nodes one junction step from the second topic (where the beam's paths should end),
        each with the relation of that step."""
        meet: dict[int, int] = {}
        for relation, _, answer_type, _ in plan.junction:
            for v in typed_neighbors(self.graph, plan.topics[1], relation, answer_type).tolist():
                meet.setdefault(v, relation)
        return meet

    def _narrow(self, groups: list[Group], query_vector: np.ndarray) -> list[list[tuple[Candidate, float]]]:
        """Each group cut to the top M candidates by cosine to the query."""
        out = []
        for group in groups:
            nodes = np.array([cand.node for cand in group.candidates], dtype=np.int64)
            if len(nodes) == 0:
                continue
            cosine = self.nodes.get(nodes) @ query_vector
            order = np.lexsort((nodes, -cosine))[: self.config.narrow]
            out.append([(group.candidates[i], float(cosine[i])) for i in order])
        return out

    def _choose(self, narrowed, batch: Batch, searches: list[_Search]) -> dict[int, list[tuple[Candidate, float]]]:
        """The next frontier of each active query: LLM picks (one prompt per query), else cosine
        (with ``share``: the slots shared among the meta-paths by retrieval score)."""
        g, beam = self.graph, self.config.beam
        chosen = {}
        for j, groups in narrowed.items():
            flat = [item for group in groups for item in group]
            if self.config.share and searches[j].weights and not searches[j].state.free:
                chosen[j] = shared_beam(flat, searches[j].weights, beam)
            else:
                order = sorted(range(len(flat)), key=lambda i: (-flat[i][1], flat[i][0].node))
                chosen[j] = [flat[i] for i in order[:beam]]
        if self.call.llm is None:
            return chosen
        owners, prompt_list, flats = [], [], {}
        for j, groups in narrowed.items():
            flat = [item for group in groups for item in group]
            if len(flat) <= beam:
                continue  # nothing to choose
            state = searches[j].state
            labels = []
            for group in groups:
                cand = group[0][0]
                parent = state.beams[cand.beam].nodes[-1]
                labels.append((f"{g.name(parent)} -[{g.relation_names[cand.relation]}]-> "
                               f"{g.type_name(cand.node)}", [g.name(c.node) for c, _ in group]))
            relation = g.relation_names[flat[0][0].relation]
            sub = prompts.sub_query(batch.queries[j].text, state.depth + 1, state.target_depth, relation,
                                    g.type_name(flat[0][0].node))
            owners.append(j)
            prompt_list.append(prompts.frontier(sub, labels, beam))
            flats[j] = flat
        for j, reply in zip(owners, self.call(prompt_list, owners, batch.usages)):
            picks = parse_choice(reply, len(flats[j]))[:beam]
            if picks:
                chosen[j] = [flats[j][i] for i in picks]
        return chosen

    def _found(self, search: _Search, plan: Plan, query_vector: np.ndarray) -> Exploration:
        """The completed paths, those ending in the predicted answer type (then at a junction
        node) first when there are any, ranked by their end's cosine to the query."""
        g, state, meet = self.graph, search.state, search.meet
        paths = state.complete
        wanted = plan.control.get("answer_type")
        typed = [p for p in paths if wanted and g.type_name(p.nodes[-1]) == wanted]
        paths = typed or paths
        met = [p for p in paths if p.nodes[-1] in meet]
        paths = met or paths
        if paths:
            ends = np.array([p.nodes[-1] for p in paths])
            final = self.nodes.get(ends) @ query_vector
            order = sorted(range(len(paths)), key=lambda i: (-final[i], -paths[i].score, paths[i].nodes))
            paths = [paths[i] for i in order]
        walked = [(p.nodes, p.relations) for p in paths]
        # the second topic's step into each met end
        walked += [([plan.topics[1], v], [meet[v]]) for v in dict.fromkeys(p.nodes[-1] for p in paths) if v in meet]
        return Exploration(walked, g.name(paths[0].nodes[-1]) if paths else "",
                           list(dict.fromkeys(g.name(p.nodes[-1]) for p in state.complete)), state.explored)


def shared_beam(flat: list[tuple[Candidate, float]], weights: list[float], beam: int) -> list[tuple[Candidate, float]]:
    """The beam's slots shared among meta-paths in proportion to their retrieval scores
    (largest remainder), each meta-path's slots taken by its best candidates by cosine; slots a
    meta-path cannot fill go to the candidates whose meta-paths weigh most, then by cosine."""
    total = sum(weights) or 1.0
    share = [beam * w / total for w in weights]
    slots = [int(x) for x in share]
    for m in sorted(range(len(share)), key=lambda m: (-(share[m] - slots[m]), m))[: beam - sum(slots)]:
        slots[m] += 1
    by_cosine = sorted(range(len(flat)), key=lambda i: (-flat[i][1], flat[i][0].node))
    taken: list[int] = []
    for m in sorted(range(len(weights)), key=lambda m: (-weights[m], m)):
        mine = [i for i in by_cosine if m in flat[i][0].metapaths and i not in taken]
        taken += mine[: slots[m]]
    weight_of = [sum(weights[m] for m in flat[i][0].metapaths) for i in range(len(flat))]
    rest = sorted((i for i in range(len(flat)) if i not in taken), key=lambda i: (-weight_of[i], -flat[i][1],
                                                                                   flat[i][0].node))
    taken += rest[: beam - len(taken)]
    return [flat[i] for i in taken]


def _meet_groups(state: TraversalState, groups: list[Group], meet: set[int]) -> list[Group]:
    """Candidates that complete a meta-path here kept only where the second topic's junction
    step reaches them (when any does); candidates that go on are kept."""
    depth = state.depth + 1

    def completes(cand: Candidate) -> bool:
        return any(len(state.metapaths[m][1]) == depth for m in cand.metapaths)

    if not any(completes(cand) and cand.node in meet for group in groups for cand in group.candidates):
        return groups
    out = []
    for group in groups:
        kept = [cand for cand in group.candidates if not completes(cand) or cand.node in meet]
        if kept:
            out.append(Group(group.relation, group.node_type, group.parent, kept))
    return out
