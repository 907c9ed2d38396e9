"""Per-record scores: the one place every table, plot and comparison reads its numbers from.

``record_scores`` turns each result line into a row (exact match, per-depth hit rate and
triplet recall, meta-path rank, traversability of the alternatives, control-signal accuracy,
usage); the summaries and tables only aggregate rows. Definitions (AdaPath Appendices D and F,
as the issues restate them; the paper's text was not at hand):

- **Exact match**: the prediction against every valid answer name (``gold_answer_names``);
  multiple choice by option letter or text.
- **Hit rate at depth d**: the nodes a method explored at depth d hold the reference path's
  d-th node.
- **Triplet recall at depth d**: the gold triplet of depth d, (path node d-1, the record's
  relation d, path node d), is among the triplets the method retrieved at depth d: the d-th
  step of every path it returns plus, when its results carry them, ``explored_edges`` (the
  edges it looked at per depth, ``{depth: [[head_id, relation, tail_id], ...]}``). Distinct
  triplets only; above 100 a seeded sample of 100 counts (``metrics.triplet_recall``).
- **Meta-path R@k and MRR**: rank of the gold meta-path in the full ranked list of pooled
  meta-paths before filtering (``ranked_metapaths``), else in ``metapaths`` (the surviving
  list); each row records which (``metapath_list``).
- **Answer-set Hits@K**: a valid answer (strict match) among the first K names of the
  result's answer set (``answer_set``, best first; PathMind's reasoner answers with a set),
  else of the one answer: a new metric beside the paper's, which the depth-wise hit rate is not.
- **Traversability**: of the listed meta-paths other than the gold one, the share that a typed
  walk from the topic entity along the meta-path brings to the answer entity (needs the graph).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from adapath.contract import Result
from adapath.datasets.specs import Gold, Item, QuerySet
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.traverse import WalkChecker
from adapath.errors import InputError
from adapath.eval.metrics import (
    em_lenient,
    em_strict,
    hit_rate,
    metapath_ranks,
    multiple_choice_correct,
    triplet_recall,
)

RECALL_CAP = 100
RECALL_SEED = 42


def gold_answer_names(gold: Gold, graph: KnowledgeGraph | None) -> list[str]:
    """The names a prediction may match: the record's, then the graph's for the ids the record
    leaves unnamed. The same set with or without a graph, or an error where they would differ."""
    names = list(gold.answer_names)
    if gold.unnamed_ids:
        if graph is None:
            raise InputError("these questions have valid answers that only the graph names; "
                             "pass --kg so every valid answer counts")
        index = graph.index_of(list(gold.unnamed_ids), missing="ignore")
        names += [graph.name(i) for i in index if i >= 0]
    return list(dict.fromkeys(names))


def gold_set_line(items: Iterable[Item], graph: KnowledgeGraph | None) -> str:
    """One line saying which answer names a free-text prediction was matched against."""
    free = [item.gold for item in items if item.gold is not None and item.gold.correct_option is None]
    unnamed = sum(1 for gold in free if gold.unnamed_ids)
    if not free:
        return "gold set: multiple-choice options (no answer names involved)"
    if unnamed and graph is not None:
        return (f"gold set: answer names from the records and the graph (--kg): {unnamed} of {len(free)} "
                "questions have valid answers only the graph names")
    return f"gold set: answer names from the records only (every valid answer of the {len(free)} questions is named)"


def answer_marks(answer: str, item: Item, names: list[str]) -> tuple[bool, bool]:
    """(strict, lenient) correctness of an answer: the right option of a multiple-choice
    question (by letter or text), else exact match against the gold answer ``names``."""
    gold = item.gold
    if gold.correct_option is not None:
        correct = multiple_choice_correct(answer, item.options, gold.correct_option)
        return correct, correct
    return em_strict(answer, names), em_lenient(answer, names)


def record_scores(results: list[Result], items: dict[str, Item] | QuerySet, graph: KnowledgeGraph | None,
                  kinds: dict[str, str] | None = None, progress=None) -> list[dict]:
    """One row of scores per result, against a question set (or items by id, with each id's
    benchmark kind); a result without a question, or a question without gold, is an error.
    ``progress`` (an ``adapath.progress.Progress``) is advanced per result."""
    spec = ""
    if isinstance(items, QuerySet):
        spec, kinds, items = items.spec, {item.id: items.kind for item in items.items}, items.by_id()
    kinds = kinds or {}
    walks = Traversability(graph) if graph is not None else None
    rows = []
    for result in results:
        item = items.get(result.id)
        if item is None:
            raise InputError(f"result {result.id!r} has no question in {spec or 'the queries'}")
        gold = item.gold
        if gold is None:
            raise InputError(f"question {result.id!r} has no gold answer; evaluation needs records with answers")
        row = {"id": result.id, "level": result.level, "hops": gold.hops, "group": gold.group,
               "benchmark": kinds.get(result.id, ""), "set": spec, "method": result.method,
               "answer_source": result.answer_source, "usage": result.usage,
               "has_paths": bool(result.paths), "has_explored": bool(result.explored)}
        names = [] if gold.correct_option is not None else gold_answer_names(gold, graph)
        row["em_strict"], row["em_lenient"] = answer_marks(result.answer, item, names)
        if gold.correct_option is None:
            row["set_hits"] = answer_set_hits(result, names)
            row["set_size"] = len(result.extra.get("answer_set") or [result.answer])
        if gold.path_node_ids and gold.hops and len(gold.path_node_ids) > gold.hops:
            path = list(gold.path_node_ids[: gold.hops + 1])
            row["hits"] = hit_rate({int(d): v for d, v in result.explored.items()}, path)
            if len(gold.triplets) >= gold.hops:
                reference = {d: (path[d - 1], gold.triplets[d - 1][1], path[d]) for d in range(1, gold.hops + 1)}
                row["recall"] = triplet_recall(reference, retrieved_triplets(result), RECALL_CAP, RECALL_SEED)
        control = result.control
        if gold.answer_type and (control.get("answer_type") is not None or control.get("hops") is not None):
            row["control_type"] = control.get("answer_type") == gold.answer_type
            row["control_hops"] = control.get("hops") == gold.hops
        if gold.metapath:
            source, listed = listed_metapaths(result)
            row["metapath_list"] = source or "none"  # none: a miss, if the method lists meta-paths at all
            row["metapath_rank"] = metapath_ranks(listed, gold.metapath)
            if listed:
                if graph is not None and gold.path_node_ids:
                    alternatives = list(dict.fromkeys(m for m in listed if m != gold.metapath))
                    answer = gold.answer_ids[0] if gold.answer_ids else gold.path_node_ids[-1]
                    row["traversable"] = [walks.reaches(gold.path_node_ids[0], m, answer) for m in alternatives]
        rows.append(row)
        if progress is not None:
            progress.advance()
    return rows


SET_HITS_AT = (1, 3, 5)


def answer_set_hits(result: Result, names: list[str]) -> dict[str, bool]:
    """{"K": whether a valid answer is among the first K of the result's answer set}."""
    answers = result.extra.get("answer_set")
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        answers = [result.answer] if result.answer else []
    first = next((i for i, a in enumerate(answers) if em_strict(a, names)), None)
    return {str(k): first is not None and first < k for k in SET_HITS_AT}


def listed_metapaths(result: Result) -> tuple[str, list[str]]:
    """(which list, the meta-paths in rank order): the ranked list before filtering when the
    result has one, else the surviving ``metapaths``; ("", []) when it has neither."""
    ranked = result.extra.get("ranked_metapaths")
    if ranked is not None:
        return "ranked_metapaths", [_metapath_text(m, result) for m in ranked]
    if result.metapaths:
        return "metapaths", [_metapath_text(m, result) for m in result.metapaths]
    return "", []


def _metapath_text(entry, result: Result) -> str:
    if isinstance(entry, dict) and isinstance(entry.get("metapath"), str):
        return entry["metapath"]
    if isinstance(entry, str):
        return entry
    raise InputError(f"result {result.id!r}: a meta-path entry must be {{'metapath': str, 'score': float}}, "
                     f"got {entry!r}")


def retrieved_triplets(result: Result) -> dict[int, list[tuple]]:
    """Depth -> the (head_id, relation, tail_id) triplets a result retrieved there: step d of
    each of its paths, and its ``explored_edges`` at depth d when it records them (a step's
    direction mark is dropped: recall matches either orientation)."""
    pools: dict[int, list[tuple]] = defaultdict(list)
    try:
        for path in result.paths:
            for depth, step in enumerate(path, start=1):
                head, relation, tail = step[:3]
                pools[depth].append((head, relation, tail))
        for depth, edges in (result.extra.get("explored_edges") or {}).items():
            for step in edges:
                head, relation, tail = step[:3]
                pools[int(depth)].append((head, relation, tail))
    except (TypeError, ValueError):
        raise InputError(f"result {result.id!r}: paths and explored_edges must hold "
                         "[head_id, relation, tail_id] steps") from None
    return pools


class Traversability:
    """Does a typed walk from the topic along a meta-path end at the answer? (External ids;
    an unparsable meta-path or a topic or answer not in the graph reaches nothing.) One
    ``WalkChecker`` serves every check, and answers are cached by (topic, meta-path, answer):
    the same question at another level asks again."""

    def __init__(self, graph: KnowledgeGraph):
        self.graph, self.checker = graph, WalkChecker(graph)
        self.cache: dict[tuple[int, str, int], bool] = {}
        self._index: dict[int, int] = {}

    def _node(self, external: int) -> int:
        if external not in self._index:
            self._index[external] = int(self.graph.index_of([external], missing="ignore")[0])
        return self._index[external]

    def reaches(self, topic_id: int, metapath: str, answer_id: int) -> bool:
        key = (int(topic_id), metapath, int(answer_id))
        if key not in self.cache:
            topic, answer = self._node(key[0]), self._node(key[2])
            self.cache[key] = topic >= 0 and answer >= 0 and self.checker.reaches(topic, metapath, answer)
        return self.cache[key]
