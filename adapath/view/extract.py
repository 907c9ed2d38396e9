"""What the HTML viewer shows, as JSON-ready dicts built from result files, questions and banks.

Only what a page draws is embedded: the questions, the results, and the names and types of
the nodes those mention (never the whole graph). Node ids stay external ids throughout; the
page looks names up in one ``nodes`` table (id -> [name, type index]).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from adapath.contract import REVERSED
from adapath.errors import InputError

# Result fields the page draws in their own way; any other field is listed as it is.
DRAWN_FIELDS = ("id", "level", "method", "answer", "raw", "answer_source", "paths", "explored",
                "metapaths", "control", "fallback", "usage", "retrieved", "prioritized")
EXPLORED_CAP = 200     # entities embedded per depth (the page shows the total beside them)
PATHS_CAP = 60         # paths embedded per result
TEXT_CAP = 4000        # characters of raw LLM output and of any other field's JSON
VALID_NAMES_CAP = 30   # valid-answer names embedded per question


def load_questions(spec: str):
    """The question set a query spec names (any kind the spec table knows)."""
    from adapath.datasets.specs import load_query_set

    return load_query_set(spec)


class NodeTable:
    """Names and types of the nodes a page mentions: from the graph, else from the questions."""

    def __init__(self, graph=None):
        self.graph = graph
        self.types: list[str] = []
        self.nodes: dict[str, list] = {}
        self._pending: set[int] = set()
        self._fallback: dict[int, tuple[str, str]] = {}

    def add(self, ids: Iterable) -> list[int]:
        ids = [int(v) for v in ids]
        self._pending.update(ids)
        return ids

    def know(self, node_id: int, name: str, type_name: str) -> None:
        """A name from a question's own data, used when the graph lacks the node."""
        self._fallback.setdefault(int(node_id), (str(name), str(type_name or "")))

    def _type_index(self, name: str) -> int:
        if name not in self.types:
            self.types.append(name)
        return self.types.index(name)

    def resolve(self) -> dict[str, list]:
        pending = sorted(self._pending)
        index = (self.graph.index_of(pending, missing="ignore") if self.graph is not None and pending
                 else np.full(len(pending), -1))
        for node_id, i in zip(pending, index):
            if i >= 0:
                name, type_name = self.graph.name(i), self.graph.type_name(i)
            else:
                name, type_name = self._fallback.get(node_id, (f"#{node_id}", ""))
            self.nodes[str(node_id)] = [name, self._type_index(type_name)]
        self._pending.clear()
        return self.nodes


def _clip(text, cap: int = TEXT_CAP) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= cap else text[:cap] + f"… [{len(text) - cap:,} more characters]"


def _finite(value):
    """A result's own JSON with NaN and infinities as null (the browser's JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _chain(path, where: str) -> dict:
    """``[[head, relation, tail], ...]`` -> ``{"n": node ids, "r": relations}`` along the walk,
    with ``"b"``: the steps (0-based, along the drawing) whose edge is stored the other way,
    when the path marks any step ``"reversed"`` (see ``adapath.contract.path_step``).

    A step given tail-first is turned round; a step that does not touch the previous one
    starts after a gap drawn as relation "?".
    """
    if not isinstance(path, list) or not path:
        raise InputError(f"{where}: a path must be a non-empty list of [head, relation, tail]")
    nodes: list[int] = []
    relations: list[str] = []
    backward: list[int] = []
    for step in path:
        if not (isinstance(step, list) and (len(step) == 3 or (len(step) == 4 and step[3] == REVERSED))):
            raise InputError(f"{where}: path step {step!r} is not [head, relation, tail]")
        try:
            head, tail = int(step[0]), int(step[2])
        except (TypeError, ValueError):
            raise InputError(f"{where}: path step {step!r} has a non-integer node id") from None
        relation = str(step[1])
        turned = False
        if not nodes:
            nodes.append(head)
        elif head != nodes[-1]:
            if tail == nodes[-1]:
                head, tail, turned = tail, head, True
            else:
                relations.append("?")
                nodes.append(head)
        if len(step) == 4 and not turned:  # stored tail -> head, drawn head -> tail
            backward.append(len(relations))
        relations.append(relation)
        nodes.append(tail)
    return {"n": nodes, "r": relations, "b": backward} if backward else {"n": nodes, "r": relations}


def _gold_chain(gold) -> dict | None:
    """The gold reference path as node ids and relations, when the question has one."""
    if gold is None or not gold.path_node_ids or not gold.hops:
        return None
    nodes = list(gold.path_node_ids[: gold.hops + 1])
    relations = [t[1] for t in gold.triplets][: gold.hops]
    return {"n": nodes, "r": relations} if len(nodes) == len(relations) + 1 else None


def _question(item, table: NodeTable, graph) -> dict:
    """One question: texts per level, topics, gold answer, valid names, gold path."""
    from adapath.eval.report import gold_answer_names

    record = item.record if isinstance(item.record, dict) else {}
    for meta in record.get("node_metadata") or []:
        if isinstance(meta, dict) and "id" in meta:
            table.know(meta["id"], meta.get("name", f"#{meta['id']}"), meta.get("type", ""))
    for node_id, name in (record.get("topic_entities") or {}).items():
        table.know(node_id, name, "")
    gold = item.gold
    chain = _gold_chain(gold)
    if chain:
        table.add(chain["n"])
        for k, (head, _, tail) in enumerate(gold.triplets[: len(chain["r"])]):
            table.know(chain["n"][k], head, "")
            table.know(chain["n"][k + 1], tail, "")
    answer = None
    names: list[str] = []
    if gold is not None:
        if gold.answer_ids and gold.answer_names:
            table.know(gold.answer_ids[0], gold.answer_names[0], gold.answer_type)
            answer = {"id": table.add(gold.answer_ids[:1])[0], "name": gold.answer_names[0],
                      "type": gold.answer_type}
        elif gold.answer_names:
            answer = {"id": None, "name": gold.answer_names[0], "type": gold.answer_type}
        names = gold_answer_names(gold, graph)
    options = list(item.options)
    return {
        "id": item.id,
        "hops": gold.hops if gold is not None else None,
        "template": (gold.template_id or None) if gold is not None else None,
        "group": (gold.group or None) if gold is not None else None,
        "texts": dict(item.texts),
        "topics": table.add(item.topic_ids),
        "options": options,
        "correctOption": gold.correct_option if gold is not None else None,
        "answer": answer,
        "valid": names[:VALID_NAMES_CAP],
        "validCount": max(len(names), len(gold.answer_ids) if gold is not None else 0),
        "gold": chain,
        "goldMetapath": (gold.metapath or None) if gold is not None else None,
        "triplets": [list(t) for t in gold.triplets] if gold is not None else [],
        "_names": names, "_scored": {},
    }


def _correct(answer: str, item, question: dict) -> bool | None:
    """The evaluation's strict mark: the right option of a multiple-choice question, else
    strict exact match against the gold answer names (None without gold)."""
    from adapath.eval.scoring import answer_marks

    gold = item.gold
    if gold is None or (gold.correct_option is None and not question["_names"]):
        return None
    memo = question["_scored"]  # methods and levels often give the same answer: score it once
    if answer not in memo:
        memo[answer] = answer_marks(answer, item, question["_names"])[0]
    return memo[answer]


def _result(result, item, question: dict, table: NodeTable, where: str) -> dict:
    """One result line (a ``Result``) as the page draws it."""
    line = result.to_json()
    answer = "" if line.get("answer") is None else str(line["answer"])
    paths = line.get("paths") or []
    if not isinstance(paths, list):
        raise InputError(f"{where}: 'paths' must be a list of paths")
    chains = [_chain(p, where) for p in paths[:PATHS_CAP]]
    for chain in chains:
        table.add(chain["n"])
    explored = []
    raw_explored = line.get("explored") or {}
    if not isinstance(raw_explored, dict):
        raise InputError(f"{where}: 'explored' must map depth -> node ids")
    try:
        depths = sorted((int(depth), list(ids or [])) for depth, ids in raw_explored.items())
        for depth, ids in depths:
            explored.append([depth, table.add(ids[:EXPLORED_CAP]), len(ids)])
    except (TypeError, ValueError):
        raise InputError(f"{where}: 'explored' must map integer depths to lists of node ids") from None
    out = {
        "answer": answer,
        "correct": _correct(answer, item, question),
        "raw": _clip(line.get("raw")),
        "paths": chains,
        "pathCount": len(paths),
        "explored": explored,
        "metapaths": [[str(m.get("metapath", "")), _finite(m.get("score"))] if isinstance(m, dict)
                      else [str(m), None] for m in line.get("metapaths") or []],
        "usage": _finite(line.get("usage") or {}),
    }
    for key in ("retrieved", "control", "fallback", "answer_source"):
        if line.get(key) not in (None, "", [], {}):
            out[key] = _finite(line[key])
    if line.get("prioritized"):
        try:
            out["prioritized"] = table.add(line["prioritized"])
        except (TypeError, ValueError):
            raise InputError(f"{where}: 'prioritized' must be a list of node ids") from None
    extra = {k: v for k, v in line.items() if k not in DRAWN_FIELDS}
    if extra:
        out["extra"] = {k: _finite(v) if len(json.dumps(v, default=str)) <= TEXT_CAP
                        else _clip(json.dumps(v, default=str)) for k, v in extra.items()}
    return out


def question_page_data(runs: dict[str, list], items: list, graph=None,
                       settings: dict[str, dict] | None = None) -> dict:
    """Questions, per-method results and the node table for the question viewer.

    ``runs`` maps a method name to its ``Result`` list, ``items`` are the questions (a
    ``QuerySet``'s items) and ``settings`` each run's settings file, when there is one.
    Every result must name a question; a question no method answered is left out.
    """
    if not runs:
        raise InputError("no result files given")
    by_id = {item.id: item for item in items}
    table = NodeTable(graph)
    questions: list[dict] = []
    question_index: dict[str, int] = {}
    rows: dict[tuple[int, str], dict[str, int]] = {}
    results: dict[str, list[dict]] = {}
    for method, lines in runs.items():
        results[method] = []
        for result in lines:
            where = f"{method}: result {result.id!r} ({result.level})"
            item = by_id.get(result.id)
            if item is None:
                raise InputError(f"{method}: result {result.id!r} has no question in the queries")
            if result.id not in question_index:
                question_index[result.id] = len(questions)
                questions.append(_question(item, table, graph))
            q = question_index[result.id]
            slot = rows.setdefault((q, result.level), {})
            slot[method] = len(results[method])  # a repeated (id, level): the last line wins
            results[method].append(_result(result, item, questions[q], table, where))
    for question in questions:
        del question["_names"], question["_scored"]
    level_rank = {"explicit": 0, "implicit": 1, "bare": 2}
    order = sorted(rows, key=lambda k: (k[0], level_rank.get(k[1], 3), k[1]))
    return {
        "kind": "questions",
        "methods": list(runs),
        "settings": {m: _finite(s) for m, s in (settings or {}).items() if s},
        "nodes": table.resolve(),
        "types": table.types,
        "questions": questions,
        "rows": [[q, level, rows[(q, level)]] for q, level in order],
        "results": results,
    }


# ---------------------------------------------------------------------------------- banks
_BANK_COLUMNS = ["query_id", "pair", "hop", "rank", "cost", "node_ids", "relations",
                 "node_types", "metapath", "corridor_k", "fallback"]


def _bank_paths(bank: Path) -> pa.Table:
    """The bank's paths: ``paths.parquet``, or the finished parts of a bank still building."""
    try:
        if (bank / "paths.parquet").is_file():
            return pq.read_table(bank / "paths.parquet", columns=_BANK_COLUMNS)
        parts = sorted((bank / "parts").glob("part-*.parquet"))
        if not parts:
            raise InputError(f"{bank}: the bank holds no paths yet (no paths.parquet, no parts)")
        return pa.concat_tables([pq.read_table(p, columns=_BANK_COLUMNS) for p in parts])
    except (pa.ArrowInvalid, KeyError) as exc:
        raise InputError(f"{bank}: not a readable Path-Bank ({exc})") from None


def _group_counts(table: pa.Table, keys: list[str]) -> list[list]:
    """Rows ``[*keys, paths, distinct queries]``, most paths first."""
    grouped = table.group_by(keys).aggregate([("query_id", "count"),
                                             ("query_id", "count_distinct")])
    rows = [[*(grouped.column(k)[i].as_py() for k in keys),
             grouped.column("query_id_count")[i].as_py(),
             grouped.column("query_id_count_distinct")[i].as_py()]
            for i in range(grouped.num_rows)]
    return sorted(rows, key=lambda r: (-r[-2], [str(v) for v in r[:-2]]))


def bank_page_data(bank: str | Path, graph=None, sample: int = 40, seed: int = 0) -> dict:
    """Meta-path counts by hop and topic type, and a seeded sample of queries with their paths."""
    bank = Path(bank)
    manifest_path = bank / "manifest.json"
    if not manifest_path.is_file():
        raise InputError(f"{bank}: not a Path-Bank (no manifest.json)")
    try:
        manifest = json.loads(manifest_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{manifest_path}: not valid JSON ({exc})") from None
    if sample < 0:
        raise InputError("--sample must be 0 or more")
    paths = _bank_paths(bank)
    paths = paths.append_column("topic_type", pc.list_element(paths.column("node_types"), 0))
    counts = paths.select(["query_id", "metapath", "hop", "topic_type"])
    query_ids = sorted(set(paths.column("query_id").to_pylist()))
    rng = np.random.default_rng(seed)
    chosen = sorted(rng.choice(len(query_ids), size=min(sample, len(query_ids)), replace=False))
    sampled = [query_ids[i] for i in chosen]
    queries_info: dict[str, dict] = {}
    if (bank / "queries.parquet").is_file():
        queries = pq.read_table(bank / "queries.parquet")
        queries = queries.filter(pc.is_in(queries.column("id"), pa.array(sampled, pa.string())))
        queries_info = {str(r["id"]): r for r in queries.to_pylist()}
    picked = paths.filter(pc.is_in(paths.column("query_id"), pa.array(sampled, pa.string())))
    picked = picked.sort_by([("query_id", "ascending"), ("pair", "ascending"),
                             ("hop", "ascending"), ("rank", "ascending")]).to_pylist()
    table = NodeTable(graph)
    per_query: dict[str, list[dict]] = {q: [] for q in sampled}
    for row in picked:
        for node_id, type_name in zip(row["node_ids"], row["node_types"]):
            table.know(node_id, f"#{node_id}", type_name)
        per_query[row["query_id"]].append({
            "n": table.add(row["node_ids"]), "r": list(row["relations"]),
            "pair": row["pair"], "hop": row["hop"], "rank": row["rank"],
            "cost": round(float(row["cost"]), 4), "k": row["corridor_k"],
            "fallback": row["fallback"], "metapath": row["metapath"],
        })
    samples = []
    for qid in sampled:
        info = queries_info.get(qid, {})
        ends = [info[k] for k in ("topic_id", "answer_id") if info.get(k) is not None]
        samples.append({
            "id": qid, "texts": {lv: info[lv] for lv in ("explicit", "implicit", "bare") if info.get(lv)},
            "topic": table.add(ends[:1])[0] if ends else None,
            "answer": table.add(ends[1:])[0] if len(ends) > 1 else None,
            "topicType": info.get("topic_type"), "answerType": info.get("answer_type"),
            "hops": info.get("hops"), "template": info.get("template_id"),
            "paths": per_query[qid],
        })
    return {
        "kind": "bank",
        "manifest": {k: manifest.get(k) for k in ("queries_total", "queries_done", "complete",
                                                 "parameters", "device", "stage_seconds")},
        "totals": {"paths": paths.num_rows, "queries": len(query_ids),
                   "metapaths": len(set(paths.column("metapath").to_pylist()))},
        "byMetapath": _group_counts(counts, ["metapath", "hop", "topic_type"]),
        "byHop": _group_counts(counts, ["hop"]),
        "byTopicHop": _group_counts(counts, ["topic_type", "hop"]),
        "samples": samples,
        "nodes": table.resolve(),
        "types": table.types,
        "named": graph is not None,
    }
