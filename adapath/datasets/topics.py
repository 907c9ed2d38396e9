"""Topic-entity extraction for questions that come with answers but no topic (STaRK-Prime,
MedDDx), as in the AdaPath paper's Appendix C.

1. Typed reverse BFS from the answers over each template whose answer type matches: the
   candidates of a topic slot are the nodes that reach every answer along the slot's chain
   (intersection over answers; the union when the intersection is empty).
2. Template pick: by the LLM among the grounded templates, or without an LLM the template
   whose slots hold the candidates the question mentions most (mean over slots of the best
   BM25 score; ties: fewer hops, then template id).
3. Per topic slot: BM25 top ``bm25_top`` (1,000) candidates by their text against the
   question, re-ranked by sentence embedding to the top ``rerank_top`` (10), each candidate
   scored by its best-matching ``chunk`` (300-character) description chunk; then the LLM
   picks one. Without an LLM the BM25-best of those ten stands in for the LLM's pick.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from adapath.datasets.templates import Template, load_templates
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.traverse import reach


@dataclass
class TopicChoice:
    template_id: str
    topics: list[int]  # internal indices, one per topic slot
    candidates: list[list[tuple[int, float]]]  # per slot: (node, rerank score), best first
    fallback: str  # "" | "union" (no node reached every answer)


class TopicExtractor:
    def __init__(self, graph: KnowledgeGraph, text, encoder, llm=None, templates=None,
                 bm25_top: int = 1000, rerank_top: int = 10, chunk: int = 300):
        self.graph, self.text, self.encoder, self.llm = graph, text, encoder, llm
        self.templates = list(templates or load_templates())
        self.bm25_top, self.rerank_top, self.chunk = bm25_top, rerank_top, chunk

    def slot_candidates(self, template: Template, answers: list[int]) -> tuple[list[np.ndarray], str]:
        slots, fallback = [], ""
        for slot in range(len(template.topic_types)):
            sets = []
            for chain in (c for c in template.chains if c.topic_slot == slot):
                per_answer = [set(reach(self.graph, [a], chain.metapath.reversed()).tolist()) for a in answers]
                meet = set.intersection(*per_answer) if per_answer else set()
                if not meet:
                    meet = set().union(*per_answer)
                    fallback = "union" if meet else fallback
                sets.append(meet)
            found = set.intersection(*sets) if sets else set()
            slots.append(np.array(sorted(found - set(answers)), dtype=np.int64))
        return slots, fallback

    def _chunks(self, node: int) -> list[str]:
        g = self.graph
        description = g.description(node) or ""
        pieces = [description[i:i + self.chunk] for i in range(0, len(description), self.chunk)] or [""]
        return [f"{g.name(node)}: {p}".strip() for p in pieces]

    def rank(self, question: str, nodes: np.ndarray, question_vector: np.ndarray,
             bm25: np.ndarray) -> list[tuple[int, float, str]]:
        """(node, score, best chunk), best first: BM25 cut, then embedding re-rank."""
        if len(nodes) == 0:
            return []
        keep = nodes[np.lexsort((nodes, -bm25[nodes]))[: self.bm25_top]]
        # a cheap first pass on names narrows the chunk encoding to a manageable pool
        ranked = []
        for node in keep[: max(self.rerank_top * 10, 50)].tolist():
            chunks = self._chunks(node)
            scores = self.encoder.encode(chunks) @ question_vector
            best = int(np.argmax(scores))
            ranked.append((node, float(scores[best]), chunks[best]))
        ranked.sort(key=lambda x: (-x[1], x[0]))
        return ranked[: self.rerank_top]

    def extract(self, question: str, answers: list[int]) -> TopicChoice | None:
        from adapath.llm import GenerationParams, prompts
        from adapath.llm.parse import parse_choice

        g = self.graph
        answer_types = {g.type_name(a) for a in answers}
        vector = self.encoder.encode([question])[0]
        bm25 = self.text.nodes.scores([question])[:, 0]
        grounded = []
        for template in self.templates:
            if template.answer_type not in answer_types:
                continue
            slots, fallback = self.slot_candidates(template, answers)
            if all(len(s) for s in slots):
                ranked = [self.rank(question, s, vector, bm25) for s in slots]
                mention = sum(max(bm25[n] for n, _, _ in r) for r in ranked) / len(ranked)
                grounded.append((template, ranked, fallback, mention))
        if not grounded:
            return None
        grounded.sort(key=lambda x: (-x[3], x[0].num_hops, x[0].id))
        params = GenerationParams(max_tokens=16)
        choice = 0
        if self.llm is not None and len(grounded) > 1:
            reply = self.llm.generate([prompts.pick_template(question, [t.query_template or t.notation
                                                                       for t, *_ in grounded])], params)[0].text
            picked = parse_choice(reply, len(grounded))
            choice = picked[0] if picked else 0
        template, ranked, fallback, _ = grounded[choice]
        topics = []
        for slot, candidates in enumerate(ranked):
            pick = int(np.argmax([bm25[n] for n, _, _ in candidates]))  # first of equals
            if self.llm is not None and len(candidates) > 1:
                reply = self.llm.generate([prompts.pick_entity(question, template.topic_types[slot],
                                                               [(g.name(n), c) for n, _, c in candidates])],
                                          params)[0].text
                picked = parse_choice(reply, len(candidates))
                pick = picked[0] if picked else 0
            topics.append(candidates[pick][0])
        return TopicChoice(template.id, topics, [[(n, s) for n, s, _ in c] for c in ranked], fallback)
