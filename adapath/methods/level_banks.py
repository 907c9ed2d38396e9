"""Path-Bank retrieval matched to the level being answered (AdaPath Appendix G, Table 13).

A bank keeps every level's text of its training queries (``queries.parquet``). Eq. 6
compares a test question with the training texts of the same level by default
(``same``: the paper's same-expression setting); ``explicit``, ``implicit`` or ``bare``
fix the training level whatever the question's level (the cross-level setting). A question
whose level the bank lacks (STaRK-Prime's ``question``) is compared with the bank's build
level. One index per level is built on first use.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from adapath.bank.index import TOP_K, BankIndex
from adapath.engine.metapath import MetaPath
from adapath.errors import InputError

LEVELS = ("explicit", "implicit", "bare")
MODES = ("same", *LEVELS)


class LevelBanks:
    def __init__(self, bank: str | Path, encoder, mode: str = "same", k: int = TOP_K):
        if mode not in MODES:
            raise InputError(f"--param retrieval_level={mode!r}: choose from {', '.join(MODES)}")
        if k < 1:
            raise InputError(f"--param retrieve={k}: retrieve at least one training query")
        self.path, self.encoder, self.mode, self.k = Path(bank), encoder, mode, k
        self.default = BankIndex(self.path, encoder, k=k)  # the build level; checks the bank is complete
        columns = set(pq.read_schema(self.path / "queries.parquet").names)
        self.levels = tuple(level for level in LEVELS if level in columns)
        self._by_level = {self.default.level: self.default}
        self._chains: dict[str, list[str]] | None = None
        self._type_model = None

    def level_for(self, question_level: str) -> str:
        """The training level a question of ``question_level`` is compared with."""
        wanted = question_level if self.mode == "same" else self.mode
        if wanted not in self.levels:
            if self.mode != "same":
                raise InputError(f"{self.path}: the bank has no {wanted!r} texts for retrieval_level={wanted}")
            return self.default.level
        return wanted

    def index(self, question_level: str) -> BankIndex:
        level = self.level_for(question_level)
        if level not in self._by_level:
            self._by_level[level] = BankIndex(self.path, self.encoder, level=level, k=self.k)
        return self._by_level[level]

    def type_model(self):
        """The answer-type model trained on the bank's questions at every level (built once)."""
        if self._type_model is None:
            from adapath.methods.answer_type import AnswerTypeModel

            table = pq.read_table(self.path / "queries.parquet", columns=[*self.levels, "answer_type"]).to_pydict()
            texts = [text for level in self.levels for text in table[level]]
            self._type_model = AnswerTypeModel(self.encoder, texts, table["answer_type"] * len(self.levels))
        return self._type_model

    def chains(self, row: int) -> list[MetaPath]:
        """The meta-paths of a training query's topic-to-topic (chain) paths: a two-topic
        record's path through its answer, the junction shape (empty for one-topic queries)."""
        if self._chains is None:
            table = pq.read_table(self.path / "paths.parquet", columns=["query_id", "pair", "metapath"]).to_pydict()
            self._chains = {}
            for qid, pair, text in zip(table["query_id"], table["pair"], table["metapath"]):
                if pair == "chain" and text not in self._chains.setdefault(qid, []):
                    self._chains[qid].append(text)
        return [self.default.parse(text) for text in self._chains.get(self.default.ids[row], [])]


def own_pooled(index: BankIndex, retrieved) -> list[tuple[MetaPath, float]]:
    """The retrieved queries' meta-paths ranked by the similarity of the queries that hold them
    *as their own*: at the query's own hop count and ending in its answer type (the bank bins
    every path between a query's topic and answer by hop, so most of what a query holds is
    incidental). Meta-paths no query holds as its own follow, by Eq. 6's summed similarity;
    each comes with its own-support score (0 for those)."""
    own: dict[str, float] = {}
    for item in retrieved:
        for text in dict.fromkeys(mp for mp, _ in index.metapaths[item.index]):
            mp = index.parse(text)
            if mp.hops == index.hops[item.index] and mp.types[-1] == index.answer_types[item.index]:
                own[text] = own.get(text, 0.0) + item.similarity
    pooled = index.pooled_metapaths(retrieved)
    place = {str(s.metapath): i for i, s in enumerate(pooled)}
    order = sorted(place, key=lambda text: (text not in own, -own.get(text, 0.0), place[text]))
    return [(index.parse(text), own.get(text, 0.0)) for text in order]


def vote_shares(index: BankIndex, retrieved) -> tuple[dict[str, float], dict[int, float]]:
    """The similarity-weighted vote of the retrieved queries as shares: answer type -> share,
    hop count -> share (``BankIndex.vote`` picks the largest of each)."""
    types: dict[str, float] = {}
    hops: dict[int, float] = {}
    for item in retrieved:
        weight = item.similarity + 1e-6
        types[index.answer_types[item.index]] = types.get(index.answer_types[item.index], 0.0) + weight
        hops[int(index.hops[item.index])] = hops.get(int(index.hops[item.index]), 0.0) + weight
    total = sum(types.values()) or 1.0
    return {t: w / total for t, w in types.items()}, {h: w / total for h, w in hops.items()}
