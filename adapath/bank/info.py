"""What a bank holds: paths per hop, meta-path frequencies, and the pairs' corridors."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from adapath.bank.store import BankStore
from adapath.errors import InputError


def bank_info(bank: str | Path) -> dict:
    """Counts of a bank, complete or still being built. Corridor sizes and fallbacks are
    counted per (query, pair) that registered at least one path: a query gives one pair,
    or two (chain and direct) when it has two topics."""
    store = BankStore(Path(bank))
    manifest = store.read_manifest()
    if manifest is None:
        raise InputError(f"{bank}: not a Path-Bank (no manifest.json)")
    table = store.read_paths(["query_id", "pair", "hop", "metapath", "corridor_k", "fallback"])
    d = table.to_pydict()
    per_pair = {}
    for qid, pair, k, fb in zip(d["query_id"], d["pair"], d["corridor_k"], d["fallback"]):
        per_pair[(qid, pair)] = (k, fb)
    queries_with_paths = len(set(d["query_id"]))
    return {
        "queries_total": manifest["queries_total"],
        "queries_done": manifest["queries_done"],
        "complete": manifest["complete"],
        "paths": len(d["hop"]),
        "queries_with_paths": queries_with_paths,
        "queries_without_paths": max(0, manifest["queries_done"] - queries_with_paths),
        "pairs_with_paths": len(per_pair),
        "paths_per_hop": {str(h): c for h, c in sorted(Counter(d["hop"]).items())},
        "metapaths": dict(Counter(d["metapath"]).most_common(20)),
        "distinct_metapaths": len(set(d["metapath"])),
        "pairs_by_fallback": {k or "none": v for k, v in Counter(fb for _, fb in per_pair.values()).items()},
        "pairs_by_corridor_k": {str(k): v for k, v in sorted(Counter(k for k, _ in per_pair.values()).items())},
        "stage_seconds": manifest.get("stage_seconds", {}),
    }
