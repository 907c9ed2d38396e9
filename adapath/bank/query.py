"""What a Path-Bank is built from: one training query, independent of any dataset's format.

A dataset turns its records into ``TrainingQuery`` objects (for BioStrat-QA:
``adapath.datasets.biostrat.training_queries``); the bank reads nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TrainingQuery:
    id: str
    texts: dict[str, str]  # the question at each level ("explicit", "implicit", "bare", ...)
    topic_ids: tuple[int, ...]  # external node ids, in the order the query's path meets them
    answer_id: int
    topic_type: str
    answer_type: str
    hops: int
    template_id: str = ""
    # The query's own path, end to end (external ids). With two or more topics its ends give
    # the "chain" pair (topic to topic through the answer); empty when unknown.
    path_ids: tuple[int, ...] = ()

    def text(self, level: str) -> str | None:
        return self.texts.get(level)
