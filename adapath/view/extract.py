"""What the HTML viewer shows, as JSON-ready dicts built from result files, records and banks.

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

from adapath.errors import InputError

# Fields of a result line the page draws in their own way; any other field is listed as is.
DRAWN_FIELDS = ("answer", "raw", "paths", "explored", "metapaths", "retrieved", "control",
                "fallback", "usage", "prioritized")
EXPLORED_CAP = 200     # entities embedded per depth (the page shows the total beside them)
PATHS_CAP = 60         # paths embedded per result
TEXT_CAP = 4000        # characters of raw LLM output and of any other field's JSON
VALID_NAMES_CAP = 30   # valid-answer names embedded per question


def load_query_records(spec: str) -> list[dict]:
    """The records a query spec names; the one place the viewer reads a spec."""
    from adapath.datasets.biostrat import load_records, parse_spec

    return load_records(parse_spec(spec))


class NodeTable:
    """Names and types of the nodes a page mentions: from the graph, else from the records."""

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
        """A name from a record's own metadata, used when the graph lacks the node."""
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


def _record_id(record: dict) -> str:
    return str(record.get("data_id", record.get("id")))


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
    """``[[head, relation, tail], ...]`` -> ``{"n": node ids, "r": relations}`` along the walk.

    A step given tail-first is turned round; a step that does not touch the previous one
    starts after a gap drawn as relation "?".
    """
    if not isinstance(path, list) or not path:
        raise InputError(f"{where}: a path must be a non-empty list of [head, relation, tail]")
    nodes: list[int] = []
    relations: list[str] = []
    for step in path:
        if not (isinstance(step, list) and len(step) == 3):
            raise InputError(f"{where}: path step {step!r} is not [head, relation, tail]")
        try:
            head, tail = int(step[0]), int(step[2])
        except (TypeError, ValueError):
            raise InputError(f"{where}: path step {step!r} has a non-integer node id") from None
        relation = str(step[1])
        if not nodes:
            nodes.append(head)
        elif head != nodes[-1]:
            if tail == nodes[-1]:
                head, tail = tail, head
            else:
                relations.append("?")
                nodes.append(head)
        relations.append(relation)
        nodes.append(tail)
    return {"n": nodes, "r": relations}


def _gold(record: dict) -> tuple[dict | None, list]:
    """The record's gold chain (node ids and relations) and its triplets as names."""
    triplets = [list(map(str, t)) for t in record.get("triplets") or [] if len(t) == 3]
    path = record.get("path_node_ids")
    hops = record.get("num_hops")
    if not path or hops is None:
        return None, triplets
    hops = int(hops)
    nodes = [int(v) for v in path][: hops + 1]
    relations = [t[1] for t in triplets][:hops]
    if len(nodes) != len(relations) + 1:
        return None, triplets
    return {"n": nodes, "r": relations}, triplets


def _question(record: dict, table: NodeTable, graph) -> dict:
    from adapath.datasets.biostrat import LEVELS, answer_names

    for meta in record.get("node_metadata") or []:
        if "id" in meta:
            table.know(meta["id"], meta.get("name", f"#{meta['id']}"), meta.get("type", ""))
    texts = {lv: record[f"{lv}_query"] for lv in LEVELS if record.get(f"{lv}_query")}
    if not texts and record.get("question"):
        texts["question"] = str(record["question"])
    answer = record.get("answer_entity") or None
    if answer and "id" in answer:
        table.know(answer["id"], answer.get("name", ""), answer.get("type", ""))
        table.add([answer["id"]])
    topics = table.add((record.get("topic_entities") or {}).keys())
    for node_id, name in (record.get("topic_entities") or {}).items():
        table.know(node_id, name, "")
    gold, triplets = _gold(record)
    if gold:
        table.add(gold["n"])
    valid = []
    if answer and "name" in answer:
        valid = answer_names(record, graph) if "valid_answer_ids" in record else [str(answer["name"])]
    gold_metapath = None
    if gold and record.get("node_metadata"):
        from adapath.eval.report import gold_metapath as metapath_of

        try:
            gold_metapath = metapath_of(record)
        except (KeyError, ValueError):
            gold_metapath = None
    return {
        "id": _record_id(record),
        "hops": None if record.get("num_hops") is None else int(record["num_hops"]),
        "template": record.get("template_id"),
        "texts": texts,
        "topics": topics,
        "answer": {"id": int(answer["id"]), "name": str(answer.get("name", "")),
                   "type": str(answer.get("type", ""))} if answer and "id" in answer else None,
        "valid": valid[:VALID_NAMES_CAP],
        "validCount": len(valid),
        "gold": gold,
        "goldMetapath": gold_metapath,
        "triplets": triplets,
        "_answers": valid,
        "_scored": {},
    }


def _result(result: dict, question: dict | None, table: NodeTable, where: str) -> dict:
    from adapath.eval.metrics import em_strict

    answer = "" if result.get("answer") is None else str(result["answer"])
    correct = None
    if question and question["_answers"]:
        # Methods and levels often give the same answer: score each answer text once.
        memo = question["_scored"]
        if answer not in memo:
            memo[answer] = em_strict(answer, question["_answers"])
        correct = memo[answer]
    paths = result.get("paths") or []
    if not isinstance(paths, list):
        raise InputError(f"{where}: 'paths' must be a list of paths")
    chains = [_chain(p, where) for p in paths[:PATHS_CAP]]
    for chain in chains:
        table.add(chain["n"])
    explored = []
    raw_explored = result.get("explored") or {}
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
        "correct": correct,
        "raw": _clip(result.get("raw")),
        "paths": chains,
        "pathCount": len(paths),
        "explored": explored,
        "metapaths": [[str(m.get("metapath", "")), _finite(m.get("score"))] if isinstance(m, dict)
                      else [str(m), None] for m in result.get("metapaths") or []],
        "usage": _finite(result.get("usage") or {}),
    }
    for key in ("retrieved", "control", "fallback"):
        if result.get(key) not in (None, "", [], {}):
            out[key] = _finite(result[key])
    if result.get("prioritized"):
        out["prioritized"] = table.add(result["prioritized"])
    extra = {k: v for k, v in result.items() if k not in DRAWN_FIELDS and k not in ("id", "level")}
    if extra:
        out["extra"] = {k: _finite(v) if len(json.dumps(v, default=str)) <= TEXT_CAP
                        else _clip(json.dumps(v, default=str)) for k, v in extra.items()}
    return out


def question_page_data(runs: dict[str, list[dict]], records: list[dict], graph=None) -> dict:
    """Questions, per-method results and the node table for the question viewer.

    ``runs`` maps a method name to the lines of its result file. Every result must name a
    record of ``records``; a record no method answered is left out.
    """
    if not runs:
        raise InputError("no result files given")
    by_id = {_record_id(r): r for r in records}
    table = NodeTable(graph)
    questions: list[dict] = []
    question_index: dict[str, int] = {}
    rows: dict[tuple[int, str], dict[str, int]] = {}
    results: dict[str, list[dict]] = {}
    for method, lines in runs.items():
        results[method] = []
        for line in lines:
            rid = str(line.get("id"))
            level = str(line.get("level", "explicit"))
            where = f"{method}: result {rid!r} ({level})"
            if rid not in by_id:
                raise InputError(f"{method}: result {rid!r} has no record in the queries")
            if rid not in question_index:
                question_index[rid] = len(questions)
                questions.append(_question(by_id[rid], table, graph))
            q = question_index[rid]
            slot = rows.setdefault((q, level), {})
            slot[method] = len(results[method])  # a repeated (id, level): the last line wins
            results[method].append(_result(line, questions[q], table, where))
    for question in questions:
        del question["_answers"], question["_scored"]
    level_rank = {"explicit": 0, "implicit": 1, "bare": 2}
    order = sorted(rows, key=lambda k: (k[0], level_rank.get(k[1], 3), k[1]))
    return {
        "kind": "questions",
        "methods": list(runs),
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
