"""Knowledge-graph facts for the fact-retrieval baselines (Chain-of-Knowledge, KGARevion):
the one-hop triplets around entities, their ranking by relevance to a question, and
resolving names an LLM writes to nodes and relations.

A fact is ``(a, relation code, b)`` over internal node indices, read from ``a``'s side (so
a topic's facts start at the topic, as a walk from it would).
"""

from __future__ import annotations

import difflib
import re

import numpy as np

from adapath.engine.graph import KnowledgeGraph
from adapath.retrieval.bm25 import TextIndex, minmax_columns

Fact = tuple[int, int, int]


def facts_of(graph: KnowledgeGraph, nodes: list[int]) -> list[Fact]:
    """Every fact touching ``nodes``, read from each node's side, in CSR order, no repeats."""
    seen: dict[Fact, None] = {}
    for a in nodes:
        neighbours, relations = graph.neighbors(a)
        for b, r in zip(neighbours.tolist(), relations.tolist()):
            seen.setdefault((a, r, b), None)
    return list(seen)


def fact_names(graph: KnowledgeGraph, fact: Fact) -> tuple[str, str, str]:
    a, r, b = fact
    return graph.name(a), graph.relation_names[r], graph.name(b)


def fact_edge(graph: KnowledgeGraph, fact: Fact) -> list:
    """A fact as a result path step: ``[head_id, relation, tail_id]`` with external ids."""
    a, r, b = fact
    return [int(graph.node_id[a]), graph.relation_names[r], int(graph.node_id[b])]


def rank_facts(graph: KnowledgeGraph, question: str, question_vector: np.ndarray, facts: list[Fact],
               encoder, alpha: float = 0.5, prefilter: int = 200) -> list[int]:
    """Positions of ``facts`` from most to least relevant to the question.

    Relevance mixes BM25 over the fact text ``head relation tail`` and the encoder's cosine,
    each min-max normalized over the candidates: ``alpha * cos + (1 - alpha) * bm25`` (as
    AdaPath's Eq. 6 mixes them). Only the ``prefilter`` best by BM25 are embedded; ties go
    to the earlier fact.
    """
    if not facts:
        return []
    texts = [" ".join(fact_names(graph, f)) for f in facts]
    bm25 = bm25_scores(texts, question)
    pool = np.argsort(-bm25, kind="stable")[:prefilter]
    cosine = encoder.encode([texts[i] for i in pool]) @ np.asarray(question_vector, dtype=np.float32)
    mixed = (alpha * minmax_columns(cosine.astype(np.float64)[:, None])[:, 0] +
             (1 - alpha) * minmax_columns(bm25[pool][:, None])[:, 0])
    order = np.lexsort((pool, -mixed))
    return [int(pool[i]) for i in order]


def bm25_scores(texts: list[str], query: str) -> np.ndarray:
    """BM25 of each text for the query; all zero when the texts hold no indexable word."""
    try:
        return TextIndex.build(texts).scores([query])[:, 0].astype(np.float64)
    except ValueError:  # bm25s cannot index a corpus of stop words only
        return np.zeros(len(texts))


def _normal(text: str) -> str:
    return re.sub(r"[\s_\-]+", " ", text.lower()).strip()


def _similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


def _grams(name: str) -> str:
    """A name as its character 3-grams (letters and digits only), for fuzzy candidates."""
    compact = re.sub(r"[^0-9a-z]", "", name.lower())
    return " ".join(compact[i:i + 3] for i in range(len(compact) - 2)) or compact


class Resolver:
    """Names an LLM writes, resolved to the graph: an entity to the nodes of that name (case,
    spaces, hyphens and underscores aside), else to the most similar of the names BM25 over
    character 3-grams ranks highest (KGARevion links names with a character 3-gram linker
    too), if similar enough (``threshold``, difflib's ratio); a relation to the closest
    relation name (as KGARevion links every relation to the nearest of the KG's)."""

    def __init__(self, graph: KnowledgeGraph, threshold: float = 0.85, candidates: int = 10):
        self.graph, self.threshold, self.candidates = graph, threshold, candidates
        self.names = graph.names.to_pylist()
        self.by_name: dict[str, list[int]] = {}
        for i, name in enumerate(self.names):
            self.by_name.setdefault(_normal(name), []).append(i)
        self.relations = {_normal(r): code for code, r in enumerate(graph.relation_names)}
        self._index: TextIndex | None = None
        self._unindexable = False

    def _name_index(self) -> TextIndex | None:
        """BM25 over the names' 3-grams, built on first use (None when nothing is indexable)."""
        if self._index is None and not self._unindexable:
            try:
                self._index = TextIndex.build([_grams(n) for n in self.names])
            except ValueError:
                self._unindexable = True
        return self._index

    def entity(self, name: str) -> list[int]:
        """Nodes a name stands for (several when names repeat across types); [] if none."""
        key = _normal(name)
        if not key:
            return []
        if key in self.by_name:
            return self.by_name[key]
        index = self._name_index()
        if index is None:
            return []
        scores = index.scores([_grams(name)])[:, 0]
        if not scores.any():
            return []
        top = [int(i) for i in np.argsort(-scores, kind="stable")[: self.candidates] if scores[i] > 0]
        # the most similar candidate name; the higher BM25 rank wins a tie
        similarity = {i: _similarity(key, _normal(self.names[i])) for i in top}
        best = max(top, key=similarity.__getitem__)
        return self.by_name[_normal(self.names[best])] if similarity[best] >= self.threshold else []

    def relation(self, name: str) -> int:
        """The code of the graph's relation closest to ``name`` (the first on a tie)."""
        key = _normal(name)
        if key in self.relations:
            return self.relations[key]
        return max(self.relations.items(), key=lambda item: (_similarity(key, item[0]), -item[1]))[1]

    def holds(self, heads: list[int], relation: int, tails: list[int]) -> Fact | None:
        """The first fact ``(h, relation, t)`` the graph holds for h in heads, t in tails."""
        wanted = set(tails)
        for h in heads:
            neighbours, _ = self.graph.neighbors(h, relation=relation)
            for t in neighbours.tolist():
                if t in wanted:
                    return h, relation, t
        return None
