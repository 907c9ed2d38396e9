"""The answer step: one result per query from what its explorer found, and, with an LLM, the
answer prompts of the whole batch as one backend batch, each reply read by ``read_reply``.
Every result also records the plan (meta-paths, retrieval, control signals) and the edges the
exploration looked at."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from adapath.contract import Query, Result
from adapath.engine.graph import KnowledgeGraph
from adapath.llm import prompts
from adapath.llm.parse import read_reply
from adapath.methods.base import LLMCaller
from adapath.methods.guided.plan import Batch


@dataclass
class Exploration:
    """What an explorer found for one query."""

    walked: list[tuple[list[int], list[int]]]  # (nodes, relation codes), best first; junction steps last
    best: str  # the extractive answer: the best end's name ("" when nothing was found)
    candidates: list[str]  # names an LLM's reply may name instead of bracing one
    explored: dict[int, list[int]]  # depth -> nodes considered there


class AnswerStep:
    def __init__(self, graph: KnowledgeGraph, call: LLMCaller, max_triplets: int, method: str):
        self.graph, self.call, self.max_triplets, self.method = graph, call, max_triplets, method

    def __call__(self, batch: Batch, found: list[Exploration]) -> list[Result]:
        g = self.graph
        results = [Result(q.id, q.level, e.best, method=self.method, answer_source="extractive" if e.best else "none",
                          paths=self._external(e.walked)) for q, e in zip(batch.queries, found)]
        if self.call.llm is not None:  # every answer prompt of the batch as one backend batch
            owners = list(range(len(batch)))
            replies = self.call([self.prompt(q, e.walked) for q, e in zip(batch.queries, found)], owners,
                                batch.usages)
            for result, query, e, reply in zip(results, batch.queries, found, replies):
                result.raw = reply
                result.answer, result.answer_source = read_reply(reply, query.options, e.candidates, result.answer)
        for result, plan, e, usage in zip(results, batch.plans, found, batch.usages):
            result.metapaths = _scored(plan.surviving)
            result.extra["ranked_metapaths"] = _scored(plan.ranked)
            result.extra["retrieved"] = [{"id": plan.index.ids[r.index], "similarity": round(r.similarity, 6)}
                                         for r in plan.retrieved]
            result.control, result.fallback, result.usage = plan.control, plan.fallback, usage.as_dict()
            result.explored = {str(d): [int(g.node_id[v]) for v in nodes] for d, nodes in sorted(e.explored.items())}
            result.extra["explored_edges"] = explored_edges(g, plan.topics[0], e.explored)
        return results

    def prompt(self, query: Query, walked) -> str:
        g = self.graph
        triples = _triples(walked, self.max_triplets)
        return prompts.answer(query.text, [(g.name(a), g.relation_names[r], g.name(b)) for a, r, b in triples],
                              query.options)

    def _external(self, walked) -> list[list[list]]:
        """Paths given as (nodes, relation codes) as ``[head_id, relation, tail_id]`` steps."""
        g = self.graph
        return [[[int(g.node_id[a]), g.relation_names[r], int(g.node_id[b])]
                 for a, r, b in zip(nodes[:-1], relations, nodes[1:])] for nodes, relations in walked]


def explored_edges(graph: KnowledgeGraph, topic: int, explored: dict[int, list[int]]) -> dict[str, list[list]]:
    """Per depth d, every edge of the graph from a node explored at d - 1 (``topic`` at d = 1)
    to a node explored at d, as ``[head_id, relation, tail_id]``: the triplets the traversal
    looked at there (Appendix D's retrieved triplets, which eval samples)."""
    g = graph
    out: dict[str, list[list]] = {}
    previous = np.array([topic], dtype=np.int64)
    for depth in sorted(explored):
        here = np.asarray(sorted(explored[depth]), dtype=np.int64)
        edges = []
        for u in previous.tolist():
            nbrs, rels = g.neighbors(u)
            keep = np.isin(nbrs, here)
            head = int(g.node_id[u])
            edges += [[head, g.relation_names[r], int(g.node_id[v])]
                      for v, r in zip(nbrs[keep].tolist(), rels[keep].tolist())]
        out[str(depth)] = edges
        previous = here
    return out


def _scored(metapaths) -> list[dict]:
    return [{"metapath": str(mp), "score": round(float(s), 6)} for mp, s in metapaths]


def _triples(paths, cap: int) -> list[tuple[int, int, int]]:
    """The distinct (head, relation, tail) steps of paths given as (nodes, relations), in order."""
    triples, seen = [], set()
    for nodes, relations in paths:
        for step in zip(nodes[:-1], relations, nodes[1:]):
            if step not in seen and len(triples) < cap:
                seen.add(step)
                triples.append(step)
    return triples
