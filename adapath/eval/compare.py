"""Paired comparison of two methods' rows: A - B per level x hop, strict and lenient."""

from __future__ import annotations

from adapath.errors import InputError
from adapath.eval.metrics import paired_bootstrap
from adapath.eval.summary import ordered_levels


def compare_rows(rows_a: list[dict], rows_b: list[dict], resamples: int = 10_000, seed: int = 42) -> list[dict]:
    """Over the (set, id, level) triples both answered: each level's hop cells and its "all" row,
    then every pair ("all", "all"); each with n, the two EM values and the paired bootstrap
    of A - B (percentage points, 95% interval)."""
    by_a = {(r.get("set", ""), r["id"], r["level"]): r for r in rows_a}
    by_b = {(r.get("set", ""), r["id"], r["level"]): r for r in rows_b}
    shared = [key for key in by_a if key in by_b]
    if not shared:
        raise InputError("the two result files share no (id, level)")
    pairs = [(by_a[k], by_b[k]) for k in shared]
    cells = []
    levels = ordered_levels([a for a, _ in pairs])
    for level in levels:
        mine = [(a, b) for a, b in pairs if a["level"] == level]
        for hop in sorted({a["hops"] for a, _ in mine if a["hops"] is not None}):
            cells.append((level, f"{hop}-hop", [(a, b) for a, b in mine if a["hops"] == hop]))
        cells.append((level, "all", mine))
    if len(levels) > 1:
        cells.append(("all", "all", pairs))
    out = []
    for level, hops, sub in cells:
        row = {"level": level, "hops": hops, "n": len(sub)}
        for kind in ("strict", "lenient"):
            a = [float(x[f"em_{kind}"]) for x, _ in sub]
            b = [float(y[f"em_{kind}"]) for _, y in sub]
            boot = paired_bootstrap(a, b, resamples=resamples, seed=seed)
            row[kind] = {"a": 100 * sum(a) / len(a), "b": 100 * sum(b) / len(b), "diff": 100 * boot["diff"],
                         "low": 100 * boot["low"], "high": 100 * boot["high"]}
        out.append(row)
    return out


def lenient_differs(rows_a: list[dict], rows_b: list[dict]) -> bool:
    return any(r["em_strict"] != r["em_lenient"] for r in (*rows_a, *rows_b))
