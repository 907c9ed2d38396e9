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

from adapath.engine.metapath import MetaPath
from adapath.errors import InputError
from adapath.retrieval.bank_index import BankIndex

LEVELS = ("explicit", "implicit", "bare")
MODES = ("same", *LEVELS)


class LevelBanks:
    def __init__(self, bank: str | Path, encoder, mode: str = "same"):
        if mode not in MODES:
            raise InputError(f"--param retrieval_level={mode!r}: choose from {', '.join(MODES)}")
        self.path, self.encoder, self.mode = Path(bank), encoder, mode
        self.default = BankIndex(self.path, encoder)  # the build level; checks the bank is complete
        columns = set(pq.read_schema(self.path / "queries.parquet").names)
        self.levels = tuple(level for level in LEVELS if level in columns)
        self._by_level = {self.default.level: self.default}
        self._chains: dict[str, list[str]] | None = None

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
            self._by_level[level] = BankIndex(self.path, self.encoder, level=level)
        return self._by_level[level]

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
