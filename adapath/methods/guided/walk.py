"""The walk explorer: every walk along every surviving meta-path, weighed by the query
(``adapath.methods.walk_scorer``); a query whose plan kept no meta-path takes the beam's free
BFS instead."""

from __future__ import annotations

from adapath.engine.graph import KnowledgeGraph
from adapath.methods.answer_type import wh_phrase
from adapath.methods.guided.answer import Exploration
from adapath.methods.guided.beam import BeamExplorer
from adapath.methods.guided.config import AdaPathConfig
from adapath.methods.guided.plan import Batch, Plan
from adapath.methods.walk_scorer import WalkOutcome, WalkQuery, WalkScorer
from adapath.retrieval.bm25 import GraphText, minmax_columns


class WalkExplorer:
    def __init__(self, graph: KnowledgeGraph, text: GraphText, encoder, scorer: WalkScorer, config: AdaPathConfig,
                 free: BeamExplorer):
        self.graph, self.text, self.encoder, self.scorer, self.config = graph, text, encoder, scorer, config
        self.free = free

    def explore(self, batch: Batch) -> list[Exploration]:
        g = self.graph
        outcomes = self.outcomes(batch)
        free = [j for j in range(len(batch)) if j not in outcomes]
        found = dict(zip(free, self.free.explore(batch.rows(free)))) if free else {}
        for j, outcome in outcomes.items():
            found[j] = Exploration(outcome.paths + outcome.junction_paths,
                                   g.name(outcome.candidates[0][0]) if outcome.candidates else "",
                                   [g.name(v) for v, _ in outcome.candidates], outcome.explored)
        return [found[j] for j in range(len(batch))]

    def outcomes(self, batch: Batch) -> dict[int, WalkOutcome]:
        """The walk outcome of each query (by position) whose plan kept a meta-path."""
        walked = [j for j, plan in enumerate(batch.plans) if plan.surviving]
        if not walked:
            return {}
        texts = [batch.queries[j].text for j in walked]
        wanted = [self._query(batch.plans[j], batch.queries[j].text) for j in walked]
        bm25 = minmax_columns(self.text.nodes.scores(texts))
        focus = self.encoder.encode([wh_phrase(t) for t in texts]) if self.scorer.config.focus else None
        return dict(zip(walked, self.scorer.score(wanted, bm25, batch.embeddings[walked], focus)))

    def _query(self, plan: Plan, text: str) -> WalkQuery:
        """The plan's surviving meta-paths as lanes, each weighed by its share of the scores; with
        ``shorter``, also each prefix that already ends in the predicted answer type."""
        g, c = self.graph, self.config
        answer_type = plan.control.get("answer_type")
        answer_code = g.type_code(answer_type) if c.shorter and answer_type else -1
        weights: dict[tuple, float] = {}
        for type_codes, relation_codes, score in plan.lanes(g):
            types, rels = tuple(int(t) for t in type_codes), tuple(int(r) for r in relation_codes)
            weights[(rels, types)] = weights.get((rels, types), 0.0) + score
            for k in range(1, len(rels)):  # a prefix that already ends in the answer type
                if types[k] == answer_code:
                    key = (rels[:k], types[:k + 1])
                    weights[key] = weights.get(key, 0.0) + score * c.walk.shorter
        weights = {k: max(w, 1e-9) for k, w in weights.items()}  # a meta-path no query holds as its own
        total = sum(weights.values())
        lanes = [(rels, types, w / total) for (rels, types), w in weights.items()]
        return WalkQuery(plan.topics[0], lanes, tuple(plan.topics), plan.topics[1] if plan.junction else -1,
                         plan.junction, text)
