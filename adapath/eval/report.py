"""Evaluation reports: metrics.json, Markdown tables shaped like the AdaPath paper's, plots.

- Table 2: exact match (strict and lenient) by level x hop count, with Avg (mean of the hop
  cells) and Overall (all records of the level);
- Table 4: per-depth triplet recall and hit rate by level;
- Table 11: meta-path retrieval R@1/3/5, MRR and traversability of the retrieved alternatives;
- Figure 4: per-depth hit rate for each level (PNG); Figure 5: ablation bars (PNG) when
  several result files are given.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from adapath.datasets.biostrat import answer_names
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.metapath import MetaPath
from adapath.engine.traverse import reach
from adapath.errors import InputError
from adapath.eval.metrics import (
    em_lenient,
    em_strict,
    hit_rate,
    mean_reciprocal_rank,
    metapath_ranks,
    micro_average,
    recall_at_k,
    triplet_recall,
)

LEVEL_ORDER = ("explicit", "implicit", "bare")


def load_results(path: str | Path) -> list[dict]:
    from adapath.engine.loaders import iter_jsonl

    out = []
    for lineno, obj in iter_jsonl(path):
        if "id" not in obj or "answer" not in obj:
            raise InputError(f"{path}:{lineno}: a result needs at least 'id' and 'answer'")
        out.append(obj)
    return out


def gold_metapath(record: dict) -> str:
    """The record's main-chain meta-path from its path nodes' types and triplet relations."""
    types = {int(m["id"]): m["type"] for m in record["node_metadata"]}
    path = [int(v) for v in record["path_node_ids"]]
    relations = [t[1] for t in record["triplets"]][: int(record["num_hops"])]
    node_types = [types[v] for v in path[: len(relations) + 1]]
    return str(MetaPath(tuple(node_types), tuple(relations)))


def record_scores(results: list[dict], records: list[dict], graph: KnowledgeGraph | None) -> list[dict]:
    """Per (record, level) scores; results without a record are an error."""
    by_id = {str(r["data_id"]): r for r in records}
    rows = []
    for result in results:
        record = by_id.get(str(result["id"]))
        if record is None:
            raise InputError(f"result {result['id']!r} has no record in the queries")
        answers = answer_names(record, graph)
        row = {
            "id": str(result["id"]), "level": result.get("level", "explicit"),
            "hops": int(record["num_hops"]),
            "em_strict": em_strict(result["answer"], answers),
            "em_lenient": em_lenient(result["answer"], answers),
        }
        path = [int(v) for v in record["path_node_ids"]][: row["hops"] + 1]
        explored = {int(d): v for d, v in (result.get("explored") or {}).items()}
        row["hits"] = hit_rate(explored, path)
        if graph is not None:
            retrieved = defaultdict(list)
            for p in result.get("paths") or []:
                for depth, triplet in enumerate(graph.named_triplets(p), start=1):
                    if triplet is not None:
                        retrieved[depth].append((triplet[0], triplet[2]))
            gold = {d: (record["triplets"][d - 1][0], record["triplets"][d - 1][2])
                    for d in range(1, row["hops"] + 1)}
            row["recall"] = triplet_recall(gold, retrieved)
        control = result.get("control") or {}
        if control.get("answer_type") is not None or control.get("hops") is not None:
            row["control_type"] = control.get("answer_type") == record["answer_entity"].get("type")
            row["control_hops"] = control.get("hops") == int(record["num_hops"])
        listed = [m["metapath"] for m in result.get("metapaths") or []]
        gold_mp = gold_metapath(record)
        row["metapath_rank"] = metapath_ranks(listed, gold_mp)
        if graph is not None:
            topic = graph.index_of([path[0]], missing="ignore")[0]
            alternatives = [m for m in listed if m != gold_mp]
            if topic >= 0 and alternatives:
                row["traversable"] = [len(reach(graph, [topic], MetaPath.parse(m))) > 0 for m in alternatives]
        rows.append(row)
    return rows


def _pct(values) -> float:
    values = list(values)
    return round(100.0 * float(np.mean(values)), 2) if values else 0.0


def summarize(rows: list[dict]) -> dict:
    levels = [lv for lv in LEVEL_ORDER if any(r["level"] == lv for r in rows)]
    hops = sorted({r["hops"] for r in rows})
    metrics = {"records": len(rows), "em_strict": _pct(r["em_strict"] for r in rows),
               "em_lenient": _pct(r["em_lenient"] for r in rows), "cells": {}}
    for level in levels:
        mine = [r for r in rows if r["level"] == level]
        cell = {"overall_strict": _pct(r["em_strict"] for r in mine),
                "overall_lenient": _pct(r["em_lenient"] for r in mine)}
        for hop in hops:
            sub = [r for r in mine if r["hops"] == hop]
            if sub:
                cell[f"hop{hop}_strict"] = _pct(r["em_strict"] for r in sub)
                cell[f"hop{hop}_lenient"] = _pct(r["em_lenient"] for r in sub)
        hop_cells = [cell[f"hop{h}_strict"] for h in hops if f"hop{h}_strict" in cell]
        cell["avg_strict"] = round(float(np.mean(hop_cells)), 2) if hop_cells else 0.0
        hop_cells = [cell[f"hop{h}_lenient"] for h in hops if f"hop{h}_lenient" in cell]
        cell["avg_lenient"] = round(float(np.mean(hop_cells)), 2) if hop_cells else 0.0
        metrics["cells"][level] = cell
    overall, by_depth = micro_average(r["hits"] for r in rows)
    metrics["hit_rate"] = round(100 * overall, 2)
    metrics["hit_rate_by_depth"] = {str(d): round(100 * v, 2) for d, v in by_depth.items()}
    metrics["hit_rate_by_level_depth"] = {
        level: {str(d): round(100 * v, 2) for d, v in
                micro_average(r["hits"] for r in rows if r["level"] == level)[1].items()}
        for level in levels}
    if any("recall" in r for r in rows):
        overall, by_depth = micro_average(r["recall"] for r in rows if "recall" in r)
        metrics["recall"] = round(100 * overall, 2)
        metrics["recall_by_depth"] = {str(d): round(100 * v, 2) for d, v in by_depth.items()}
        metrics["recall_by_level_depth"] = {
            level: {str(d): round(100 * v, 2) for d, v in
                    micro_average(r["recall"] for r in rows if r["level"] == level and "recall" in r)[1].items()}
            for level in levels}
    else:
        metrics["recall_by_depth"] = {}
    metrics["control_accuracy"] = {
        level: {"answer_type": _pct(r["control_type"] for r in rows if r["level"] == level and "control_type" in r),
                "hops": _pct(r["control_hops"] for r in rows if r["level"] == level and "control_hops" in r)}
        for level in levels if any("control_type" in r for r in rows if r["level"] == level)}
    ranks = [r["metapath_rank"] for r in rows]
    for k in (1, 3, 5):
        metrics[f"metapath_r{k}"] = round(100 * recall_at_k(ranks, k), 2)
    metrics["metapath_mrr"] = round(mean_reciprocal_rank(ranks), 4)
    flags = [f for r in rows for f in r.get("traversable", [])]
    metrics["traversability"] = _pct(flags) if flags else None
    return metrics


def table2(metrics: dict, kind: str = "strict") -> str:
    hops = sorted({int(k[3:-len(kind) - 1]) for cell in metrics["cells"].values() for k in cell
                   if k.startswith("hop") and k.endswith(kind)})
    head = "| Level | " + " | ".join(f"{h}-hop" for h in hops) + " | Avg | Overall |"
    lines = [f"Exact match ({kind}), %", "", head, "|" + "---|" * (len(hops) + 3)]
    for level, cell in metrics["cells"].items():
        values = [f"{cell.get(f'hop{h}_{kind}', float('nan')):.2f}" for h in hops]
        lines.append(f"| {level} | " + " | ".join(values) +
                     f" | {cell[f'avg_{kind}']:.2f} | {cell[f'overall_{kind}']:.2f} |")
    return "\n".join(lines) + "\n"


def table4(metrics: dict) -> str:
    depths = sorted({d for v in metrics.get("hit_rate_by_level_depth", {}).values() for d in v}, key=int)
    lines = ["Per-depth triplet recall and hit rate, %", "",
             "| Level | Metric | " + " | ".join(f"depth {d}" for d in depths) + " |",
             "|" + "---|" * (len(depths) + 2)]
    for level in metrics["cells"]:
        for name, key in (("recall", "recall_by_level_depth"), ("hit rate", "hit_rate_by_level_depth")):
            values = metrics.get(key, {}).get(level, {})
            lines.append(f"| {level} | {name} | " + " | ".join(
                f"{values[d]:.2f}" if d in values else "-" for d in depths) + " |")
    return "\n".join(lines) + "\n"


def table11(metrics: dict) -> str:
    trav = metrics["traversability"]
    return ("Meta-path retrieval\n\n| R@1 | R@3 | R@5 | MRR | Traversability of alternatives |\n"
            "|---|---|---|---|---|\n"
            f"| {metrics['metapath_r1']:.2f} | {metrics['metapath_r3']:.2f} | {metrics['metapath_r5']:.2f} | "
            f"{metrics['metapath_mrr']:.4f} | {'-' if trav is None else f'{trav:.2f}'} |\n")


def table24(metrics: dict) -> str:
    lines = ["Control-signal accuracy, %", "", "| Level | Answer type | Hop count |", "|---|---|---|"]
    for level, acc in metrics.get("control_accuracy", {}).items():
        lines.append(f"| {level} | {acc['answer_type']:.2f} | {acc['hops']:.2f} |")
    return "\n".join(lines) + "\n"


def plots(metrics: dict, out: Path, ablations: dict[str, dict] | None = None) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for level, values in metrics.get("hit_rate_by_level_depth", {}).items():
        depths = sorted(values, key=int)
        ax.plot([int(d) for d in depths], [values[d] for d in depths], marker="o", label=level)
    ax.set_xticks(sorted({int(d) for v in metrics.get("hit_rate_by_level_depth", {}).values() for d in v}))
    ax.set_xlabel("depth")
    ax.set_ylabel("hit rate (%)")
    ax.set_ylim(0, 100)
    ax.set_title("Per-depth hit rate")
    ax.legend()
    written.append(_save(fig, out / "hit_rate_by_depth.png"))
    if ablations:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        names = list(ablations)
        ax.bar(names, [ablations[n]["em_strict"] for n in names], color="#4477aa", label="strict")
        ax.bar(names, [ablations[n]["em_lenient"] - ablations[n]["em_strict"] for n in names],
               bottom=[ablations[n]["em_strict"] for n in names], color="#aaccee", label="lenient")
        ax.set_ylabel("exact match (%)")
        ax.set_title("Ablations")
        ax.legend()
        written.append(_save(fig, out / "ablations.png"))
    return written


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def judge_items(results: list[dict], records: list[dict], graph: KnowledgeGraph) -> list[tuple]:
    """(question at the result's level, named triplets of its paths) per result."""
    by_id = {str(r["data_id"]): r for r in records}
    items = []
    for result in results:
        record = by_id[str(result["id"])]
        triplets = []
        for path in result.get("paths") or []:
            for triplet in graph.named_triplets(path):
                if triplet is not None and triplet not in triplets:
                    triplets.append(triplet)
        items.append((record[f"{result.get('level', 'explicit')}_query"], triplets))
    return items


def write_report(results: list[dict], records: list[dict], graph: KnowledgeGraph | None, out: str | Path,
                 ablations: dict[str, list[dict]] | None = None, judge=None) -> dict:
    from adapath.fsutil import atomic_dir

    rows = record_scores(results, records, graph)
    metrics = summarize(rows)
    if judge is not None:
        if graph is None:
            raise InputError("the relevance judge needs --kg (triplet names)")
        from adapath.eval.judge import context_relevance

        judged = context_relevance(judge, judge_items(results, records, graph))
        metrics["context_relevance"] = judged["context_relevance"]
        metrics["judge_unparsed"] = judged["unparsed"]
    ablation_metrics = None
    if ablations:
        ablation_metrics = {name: summarize(record_scores(res, records, graph)) for name, res in ablations.items()}
        metrics["ablations"] = {n: {"em_strict": m["em_strict"], "em_lenient": m["em_lenient"]}
                                for n, m in ablation_metrics.items()}
    with atomic_dir(out, overwrite=True) as tmp:
        (tmp / "metrics.json").write_text(json.dumps(metrics, indent=2))
        (tmp / "table2.md").write_text(table2(metrics, "strict") + "\n" + table2(metrics, "lenient"))
        (tmp / "table4.md").write_text(table4(metrics))
        (tmp / "table11.md").write_text(table11(metrics))
        (tmp / "table24.md").write_text(table24(metrics))
        plots(metrics, tmp, ablation_metrics)
    return metrics
