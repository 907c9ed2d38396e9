"""One method's rows (``scoring.record_scores``) aggregated into the numbers the tables show.

Percentages carry two decimals. Every exact-match cell has its size ``n`` and a seeded 95%
percentile-bootstrap interval (``*_ci``); a level's Avg is the mean of its hop cells (as the
paper's Table 2) with a stratified interval, and Overall is every record of the cell.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from adapath.eval.metrics import (
    bootstrap_interval,
    bootstrap_mean_of_means,
    mean_reciprocal_rank,
    micro_average,
    recall_at_k,
)

LEVEL_ORDER = ("explicit", "implicit", "bare")
# Table 3's columns: (benchmark kind, group) -> heading; a None group is the benchmark's "All".
GROUP_COLUMNS = (
    (("stark", "synthesized"), "STaRK-Prime synthesized"),
    (("stark", "human"), "STaRK-Prime human"),
    (("medddx", "Basic"), "MedDDx Basic"),
    (("medddx", "Intermediate"), "MedDDx Intermediate"),
    (("medddx", "Expert"), "MedDDx Expert"),
    (("medddx", None), "MedDDx All"),
)
USAGE_KEYS = ("calls", "prompt_tokens", "completion_tokens", "seconds")


def pct(values) -> float:
    values = list(values)
    return round(100.0 * float(np.mean(values)), 2) if values else 0.0


def _interval(low: float, high: float) -> list[float]:
    return [round(100 * low, 2), round(100 * high, 2)]


def em_cell(rows: list[dict], resamples: int, seed: int) -> dict:
    """Strict and lenient EM of some rows, with n and each one's bootstrap interval."""
    cell = {"n": len(rows)}
    for kind in ("strict", "lenient"):
        values = [float(r[f"em_{kind}"]) for r in rows]
        cell[kind] = pct(values)
        cell[f"{kind}_ci"] = _interval(*bootstrap_interval(values, resamples, seed)) if values else None
    return cell


def ordered_levels(rows: list[dict]) -> list[str]:
    present = list(dict.fromkeys(r["level"] for r in rows))
    return [lv for lv in LEVEL_ORDER if lv in present] + [lv for lv in present if lv not in LEVEL_ORDER]


def summarize(rows: list[dict], resamples: int = 1000, seed: int = 42) -> dict:
    """Every aggregate of one method's rows (see the module docstring)."""
    leveled = [r for r in rows if r["hops"] is not None]  # BioStrat-QA style: level x hop
    levels = ordered_levels(leveled)
    hops = sorted({r["hops"] for r in leveled})
    metrics: dict = {"records": len(rows), "em_strict": pct(r["em_strict"] for r in rows),
                     "em_lenient": pct(r["em_lenient"] for r in rows), "cells": {}}
    for level in levels:
        mine = [r for r in leveled if r["level"] == level]
        cell: dict = {}
        by_hop = {}
        for hop in hops:
            sub = [r for r in mine if r["hops"] == hop]
            if sub:
                by_hop[hop] = sub
                for key, value in em_cell(sub, resamples, seed).items():
                    cell[f"hop{hop}_{key}"] = value
        for kind in ("strict", "lenient"):
            cell[f"avg_{kind}"] = round(float(np.mean([cell[f"hop{h}_{kind}"] for h in by_hop])), 2)
            groups = [[float(r[f"em_{kind}"]) for r in sub] for sub in by_hop.values()]
            cell[f"avg_{kind}_ci"] = _interval(*bootstrap_mean_of_means(groups, resamples, seed))
        cell["avg_n"] = len(mine)
        for key, value in em_cell(mine, resamples, seed).items():
            cell[f"overall_{key}"] = value
        metrics["cells"][level] = cell
    metrics["overall"] = em_cell(leveled, resamples, seed) if leveled else None
    metrics["groups"] = {}
    for (kind, group), heading in GROUP_COLUMNS:
        sub = [r for r in rows if r["benchmark"] == kind and (group is None or r["group"] == group)]
        if sub:
            metrics["groups"][heading] = em_cell(sub, resamples, seed)
    for name in ("hits", "recall"):
        _depth_metrics(metrics, rows, levels, name, {"hits": "hit_rate", "recall": "recall"}[name])
    _set_hits(metrics, leveled, levels, hops)
    metrics["has_answer_sets"] = any(r.get("set_size", 0) > 1 for r in rows)
    metrics["control_accuracy"] = {}
    for level in ordered_levels(rows):
        sub = [r for r in rows if r["level"] == level and "control_type" in r]
        if sub:
            metrics["control_accuracy"][level] = {"answer_type": pct(r["control_type"] for r in sub),
                                                  "hops": pct(r["control_hops"] for r in sub), "n": len(sub)}
    _metapath_metrics(metrics, rows, levels)
    metrics["usage"] = {"n": len(rows), **{k: round(float(np.mean([float(r["usage"].get(k, 0) or 0) for r in rows])), 4)
                                           if rows else 0.0 for k in USAGE_KEYS}}
    # calls whose tokens are estimates (no usage in the reply) and failed attempts, when any
    for key in ("estimated_calls", "failed_attempts"):
        total = sum(int(r["usage"].get(key, 0) or 0) for r in rows)
        if total:
            metrics["usage"][key] = total
    if "estimated_calls" in metrics["usage"]:
        calls = sum(float(r["usage"].get("calls", 0) or 0) for r in rows)
        metrics["usage"]["estimated_share"] = round(metrics["usage"]["estimated_calls"] / calls, 4) if calls else 1.0
    metrics["answer_sources"] = dict(Counter(r["answer_source"] for r in rows).most_common())
    metrics["has_paths"] = any(r["has_paths"] for r in rows)
    metrics["has_explored"] = any(r["has_explored"] for r in rows)
    return metrics


def _set_hits(metrics: dict, rows: list[dict], levels: list[str], hops: list[int]) -> None:
    """Answer-set Hits@K (%) by level x hop, by level and overall, with n."""
    scored = [r for r in rows if "set_hits" in r]

    def block(sub: list[dict]) -> dict:
        return {"n": len(sub), **{k: pct(r["set_hits"][k] for r in sub) for k in sub[0]["set_hits"]}}

    out: dict = {"overall": block(scored)} if scored else {}
    for level in levels:
        mine = [r for r in scored if r["level"] == level]
        if mine:
            out[level] = {"all": block(mine)}
            for hop in hops:
                sub = [r for r in mine if r["hops"] == hop]
                if sub:
                    out[level][str(hop)] = block(sub)
    metrics["set_hits"] = out


def _depth_metrics(metrics: dict, rows: list[dict], levels: list[str], field: str, name: str) -> None:
    """``name``: micro-average over record x depth pairs, by depth, by level x depth, by level
    and by level x question hop count; n counts questions (records)."""
    scored = [r for r in rows if field in r]
    overall, by_depth = micro_average(r[field] for r in scored)
    metrics[name] = round(100 * overall, 2) if scored else None
    metrics[f"{name}_by_depth"] = {str(d): round(100 * v, 2) for d, v in by_depth.items()}
    by_level_depth, n_by_level_depth, by_level, by_level_hop = {}, {}, {}, {}
    for level in levels:
        mine = [r for r in scored if r["level"] == level]
        if not mine:
            continue
        value, depths = micro_average(r[field] for r in mine)
        by_level_depth[level] = {str(d): round(100 * v, 2) for d, v in depths.items()}
        n_by_level_depth[level] = {str(d): sum(1 for r in mine if d in r[field]) for d in depths}
        by_level[level] = {"value": round(100 * value, 2), "n": len(mine)}
        by_level_hop[level] = {}
        for hop in sorted({r["hops"] for r in mine}):
            sub = [r for r in mine if r["hops"] == hop]
            by_level_hop[level][str(hop)] = {"value": round(100 * micro_average(r[field] for r in sub)[0], 2),
                                             "n": len(sub)}
    metrics[f"{name}_by_level_depth"] = by_level_depth
    metrics[f"{name}_n_by_level_depth"] = n_by_level_depth
    metrics[f"{name}_by_level"] = by_level
    metrics[f"{name}_by_level_hop"] = by_level_hop


def _metapath_block(rows: list[dict]) -> dict:
    ranks = [r["metapath_rank"] for r in rows]
    flags = [f for r in rows for f in r.get("traversable", [])]
    block = {"n": len(rows), **{f"r{k}": round(100 * recall_at_k(ranks, k), 2) for k in (1, 3, 5)},
             "mrr": round(mean_reciprocal_rank(ranks), 4)}
    checked = any("traversable" in r for r in rows)
    block["traversability"] = pct(flags) if flags else None
    block["traversability_n"] = len(flags) if checked else None
    return block


def _metapath_metrics(metrics: dict, rows: list[dict], levels: list[str]) -> None:
    ranked = [r for r in rows if "metapath_rank" in r]
    if not any(r["metapath_list"] != "none" for r in ranked):
        ranked = []  # a method that never lists meta-paths has no Table 11 row
    block = _metapath_block(ranked) if ranked else None
    for k in (1, 3, 5):
        metrics[f"metapath_r{k}"] = block[f"r{k}"] if block else None
    metrics["metapath_mrr"] = block["mrr"] if block else None
    metrics["traversability"] = block["traversability"] if block else None
    metrics["metapath_list"] = dict(Counter(r["metapath_list"] for r in ranked))
    by_level = {}
    for level in ordered_levels(ranked):
        mine = [r for r in ranked if r["level"] == level]
        by_level[level] = {"all": _metapath_block(mine)}
        for hop in sorted({r["hops"] for r in mine if r["hops"] is not None}):
            by_level[level][str(hop)] = _metapath_block([r for r in mine if r["hops"] == hop])
    metrics["metapath_by_level"] = by_level
