"""Path-Bank retrieval (AdaPath Eq. 6) and meta-path pooling.

For a test query whose topic has type T, the candidates are the bank's training queries
whose topic type is T (all of them if none has it). Their similarity is

    sim = lambda * minmax(cosine of sentence embeddings) + (1 - lambda) * minmax(BM25, b = 0)

with both min-max normalizations taken over that query's candidates; the top k queries
are retrieved. Their meta-paths (the bank's topic-to-answer paths) are pooled and
deduplicated by typed signature; a meta-path's score is the summed similarity of the
retrieved queries that hold it (support), ties broken by its best rank within a query's hop
bin, then by its text. The meta-path list is deterministic for the same inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from adapath.bank.store import BankStore
from adapath.engine.metapath import MetaPath
from adapath.errors import InputError
from adapath.retrieval.bm25 import TextIndex
from adapath.retrieval.dense import VectorIndex

LAMBDA = 0.5
TOP_K = 5


@dataclass
class Retrieved:
    index: int  # row in the bank's queries table
    similarity: float


@dataclass
class ScoredMetaPath:
    metapath: MetaPath
    score: float
    support: int


def minmax(values: np.ndarray) -> np.ndarray:
    if len(values) == 0:
        return values
    span = values.max() - values.min()
    return (values - values.min()) / span if span > 0 else np.zeros_like(values)


class BankIndex:
    def __init__(self, bank: str | Path, encoder, level: str | None = None,
                 lam: float = LAMBDA, k: int = TOP_K):
        bank = Path(bank)
        store = BankStore(bank)
        meta = store.read_manifest()
        if meta is None or not store.paths_file.is_file():
            raise InputError(f"{bank}: not a complete Path-Bank (run `adapath bank build`)")
        self.level = level or meta["parameters"].get("level", "explicit")
        self.lam, self.k = lam, k
        queries = pq.read_table(store.queries_file).to_pydict()
        self.ids = queries["id"]
        self.texts = queries[self.level]
        self.topic_types = np.array(queries["topic_type"])
        self.answer_types = queries["answer_type"]
        self.hops = queries["hops"]
        paths = store.read_paths(["query_id", "pair", "hop", "rank", "metapath"]).to_pydict()
        row_of = {qid: i for i, qid in enumerate(self.ids)}
        self.metapaths: list[list[tuple[str, int]]] = [[] for _ in self.ids]
        for qid, pair, rank, mp in zip(paths["query_id"], paths["pair"], paths["rank"], paths["metapath"]):
            if pair == "direct" and qid in row_of:
                self.metapaths[row_of[qid]].append((mp, rank))
        self.bm25 = TextIndex.build(self.texts, b=0.0)
        cache = bank / "retrieval" / f"{encoder.name}-{self.level}"
        if cache.with_suffix(".npy").is_file():
            self.vectors = VectorIndex.load(cache)
        else:
            self.vectors = VectorIndex(encoder.encode(self.texts))
            try:
                cache.parent.mkdir(parents=True, exist_ok=True)
                self.vectors.save(cache)
            except OSError:
                pass
        self._parsed: dict[str, MetaPath] = {}

    def retrieve(self, embeddings: np.ndarray, texts: list[str], topic_types: list[str]) -> list[list[Retrieved]]:
        """Eq. 6 for a batch of test queries (embeddings normalized, one row per query)."""
        cosine = self.vectors.all_scores(embeddings)
        bm25 = self.bm25.scores(texts).T  # queries x training queries
        out = []
        for j, topic_type in enumerate(topic_types):
            candidates = np.flatnonzero(self.topic_types == topic_type)
            if len(candidates) == 0:
                candidates = np.arange(len(self.ids))
            sim = self.lam * minmax(cosine[j, candidates].astype(np.float64)) + \
                (1 - self.lam) * minmax(bm25[j, candidates].astype(np.float64))
            order = np.lexsort((candidates, -sim))[: self.k]
            out.append([Retrieved(int(candidates[i]), float(sim[i])) for i in order])
        return out

    def parse(self, text: str) -> MetaPath:
        if text not in self._parsed:
            self._parsed[text] = MetaPath.parse(text)
        return self._parsed[text]

    def pooled_metapaths(self, retrieved: list[Retrieved]) -> list[ScoredMetaPath]:
        score: dict[str, float] = {}
        support: dict[str, int] = {}
        best_rank: dict[str, int] = {}
        for item in retrieved:
            for text in {mp for mp, _ in self.metapaths[item.index]}:
                score[text] = score.get(text, 0.0) + item.similarity
                support[text] = support.get(text, 0) + 1
            for text, rank in self.metapaths[item.index]:
                best_rank[text] = min(best_rank.get(text, rank), rank)
        order = sorted(score, key=lambda t: (-score[t], best_rank[t], t))
        return [ScoredMetaPath(self.parse(t), score[t], support[t]) for t in order]

    def vote(self, retrieved: list[Retrieved]) -> tuple[str | None, int | None]:
        """Answer type and hop count by the similarity-weighted vote of retrieved queries."""
        types: dict[str, float] = {}
        hops: dict[int, float] = {}
        for item in retrieved:
            weight = item.similarity + 1e-6
            types[self.answer_types[item.index]] = types.get(self.answer_types[item.index], 0) + weight
            hops[self.hops[item.index]] = hops.get(self.hops[item.index], 0) + weight
        if not types:
            return None, None
        answer_type = max(sorted(types), key=lambda t: types[t])
        hop = max(sorted(hops), key=lambda h: hops[h])
        return answer_type, int(hop)
