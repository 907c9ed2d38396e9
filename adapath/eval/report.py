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

from adapath.datasets.specs import Gold, Item, QuerySet
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
    multiple_choice_correct,
    recall_at_k,
    triplet_recall,
)
from adapath.methods.base import Result

LEVEL_ORDER = ("explicit", "implicit", "bare")


def load_results(path: str | Path) -> list[Result]:
    from adapath.methods.run import load_results as load

    return load(path)


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


def record_scores(results: list[Result], items: dict[str, Item], graph: KnowledgeGraph | None) -> list[dict]:
    """Per (question, level) scores; results without a question, or a question without gold,
    are an error."""
    rows = []
    for result in results:
        item = items.get(result.id)
        if item is None:
            raise InputError(f"result {result.id!r} has no question in the queries")
        gold = item.gold
        if gold is None:
            raise InputError(f"question {result.id!r} has no gold answer; evaluation needs records with answers")
        row = {"id": result.id, "level": result.level, "hops": gold.hops, "group": gold.group,
               "method": result.method, "answer_source": result.answer_source}
        if gold.correct_option is not None:
            correct = multiple_choice_correct(result.answer, item.options, gold.correct_option)
            row["em_strict"] = row["em_lenient"] = correct
        else:
            answers = gold_answer_names(gold, graph)
            row["em_strict"] = em_strict(result.answer, answers)
            row["em_lenient"] = em_lenient(result.answer, answers)
        row["usage"] = result.usage
        if gold.path_node_ids and gold.hops:
            path = list(gold.path_node_ids[: gold.hops + 1])
            explored = {int(d): v for d, v in result.explored.items()}
            row["hits"] = hit_rate(explored, path)
            if graph is not None and gold.triplets:
                retrieved = defaultdict(list)
                for p in result.paths:
                    for depth, triplet in enumerate(graph.named_triplets(p), start=1):
                        if triplet is not None:
                            retrieved[depth].append((triplet[0], triplet[2]))
                reference = {d: (gold.triplets[d - 1][0], gold.triplets[d - 1][2])
                             for d in range(1, gold.hops + 1)}
                row["recall"] = triplet_recall(reference, retrieved)
        control = result.control
        if gold.answer_type and (control.get("answer_type") is not None or control.get("hops") is not None):
            row["control_type"] = control.get("answer_type") == gold.answer_type
            row["control_hops"] = control.get("hops") == gold.hops
        if gold.metapath:
            listed = [m["metapath"] for m in result.metapaths]
            row["metapath_rank"] = metapath_ranks(listed, gold.metapath)
            if graph is not None and gold.path_node_ids:
                topic = graph.index_of([gold.path_node_ids[0]], missing="ignore")[0]
                alternatives = [m for m in listed if m != gold.metapath]
                if topic >= 0 and alternatives:
                    row["traversable"] = [len(reach(graph, [topic], MetaPath.parse(m))) > 0 for m in alternatives]
        rows.append(row)
    return rows


def _pct(values) -> float:
    values = list(values)
    return round(100.0 * float(np.mean(values)), 2) if values else 0.0


def summarize(rows: list[dict]) -> dict:
    present = list(dict.fromkeys(r["level"] for r in rows))
    levels = [lv for lv in LEVEL_ORDER if lv in present] + [lv for lv in present if lv not in LEVEL_ORDER]
    hops = sorted({r["hops"] for r in rows if r["hops"] is not None})
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
    overall, by_depth = micro_average(r["hits"] for r in rows if "hits" in r)
    metrics["hit_rate"] = round(100 * overall, 2)
    metrics["hit_rate_by_depth"] = {str(d): round(100 * v, 2) for d, v in by_depth.items()}
    metrics["hit_rate_by_level_depth"] = {
        level: {str(d): round(100 * v, 2) for d, v in
                micro_average(r["hits"] for r in rows if r["level"] == level and "hits" in r)[1].items()}
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
    ranks = [r["metapath_rank"] for r in rows if "metapath_rank" in r]
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


def judge_items(results: list[Result], items: dict[str, Item], graph: KnowledgeGraph) -> list[tuple]:
    """(question at the result's level, named triplets of its paths) per result."""
    out = []
    for result in results:
        item = items[result.id]
        triplets = []
        for path in result.paths:
            for triplet in graph.named_triplets(path):
                if triplet is not None and triplet not in triplets:
                    triplets.append(triplet)
        out.append((item.texts.get(result.level) or next(iter(item.texts.values())), triplets))
    return out


def write_report(results: list[Result], query_set: QuerySet, graph: KnowledgeGraph | None, out: str | Path,
                 ablations: dict[str, list[Result]] | None = None, judge=None) -> dict:
    from adapath.fsutil import atomic_dir

    items = query_set.by_id()
    rows = record_scores(results, items, graph)
    metrics = summarize(rows)
    if judge is not None:
        if graph is None:
            raise InputError("the relevance judge needs --kg (triplet names)")
        from adapath.eval.judge import context_relevance

        judged = context_relevance(judge, judge_items(results, items, graph))
        metrics["context_relevance"] = judged["context_relevance"]
        metrics["judge_unparsed"] = judged["unparsed"]
    ablation_metrics = None
    if ablations:
        ablation_metrics = {name: summarize(record_scores(res, items, graph)) for name, res in ablations.items()}
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
