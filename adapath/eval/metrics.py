"""The papers' metrics as pure functions over plain records (AdaPath §4, Appendices D–F).

- exact match, strict (case- and whitespace-normalized equality with any valid answer name)
  and lenient (substring either way, as the AdaPath reference scores);
- multiple-choice accuracy (a letter or the option's text);
- per-depth triplet recall (lower-cased head and tail names; at most ``cap`` retrieved
  triplets per depth drawn with a fixed seed; micro-average over record x depth pairs);
- per-depth hit rate (the explored set at depth d holds the reference path's d-th node);
- meta-path R@k and MRR of a ranked meta-path list against the gold meta-path;
- paired bootstrap of the difference of two per-record score vectors.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np

_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Lower case, whitespace collapsed, surrounding spaces and final punctuation dropped."""
    return _SPACE.sub(" ", str(text).lower()).strip().rstrip(".")


def em_strict(prediction: str, answers: Iterable[str]) -> bool:
    p = normalize(prediction)
    return bool(p) and any(p == normalize(a) for a in answers)


def em_lenient(prediction: str, answers: Iterable[str]) -> bool:
    p = normalize(prediction)
    if not p:
        return False
    return any((a := normalize(x)) and (a in p or p in a) for x in answers)


_LETTER = re.compile(r"^\(?([A-Da-d])\)?(?:[.):]|\s|$)")


def multiple_choice_correct(prediction: str, options: Sequence[str], correct: int) -> bool:
    """A prediction names the right option by letter (A-D, optionally bracketed) or by text."""
    p = str(prediction).strip()
    match = _LETTER.match(p)
    if match:
        return "ABCD".index(match.group(1).upper()) == correct
    return normalize(p) == normalize(options[correct])


def triplet_recall(gold_by_depth: dict[int, tuple[str, str]],
                   retrieved_by_depth: dict[int, list[tuple[str, str]]],
                   cap: int = 100, seed: int = 42) -> dict[int, bool]:
    """For each gold depth: is the gold (head, tail) among the retrieved pairs at that depth?

    Names are compared lower-cased; when more than ``cap`` pairs were retrieved at a depth, a
    seeded random sample of ``cap`` of them is what counts.
    """
    rng = np.random.default_rng(seed)
    hits = {}
    for depth, (head, tail) in sorted(gold_by_depth.items()):
        pool = retrieved_by_depth.get(depth, [])
        if len(pool) > cap:
            pool = [pool[i] for i in sorted(rng.choice(len(pool), cap, replace=False))]
        gold = (head.lower(), tail.lower())
        hits[depth] = any((h.lower(), t.lower()) == gold for h, t in pool)
    return hits


def micro_average(per_record: Iterable[dict[int, bool]]) -> tuple[float, dict[int, float]]:
    """(overall, by depth) over all record x depth pairs."""
    totals: dict[int, list[int]] = {}
    for hits in per_record:
        for depth, hit in hits.items():
            totals.setdefault(depth, []).append(int(hit))
    flat = [h for values in totals.values() for h in values]
    overall = float(np.mean(flat)) if flat else 0.0
    return overall, {d: float(np.mean(v)) for d, v in sorted(totals.items())}


def hit_rate(explored_by_depth: dict[int, Iterable[int]], reference_path: Sequence[int]) -> dict[int, bool]:
    """Depth d is a hit when the explored set at d holds ``reference_path[d]``."""
    return {d: int(reference_path[d]) in {int(v) for v in explored_by_depth.get(d, ())}
            for d in range(1, len(reference_path))}


def metapath_ranks(retrieved: Sequence[str], gold: str) -> int | None:
    """1-based rank of the gold meta-path in a ranked list, or None."""
    for i, metapath in enumerate(retrieved, start=1):
        if metapath == gold:
            return i
    return None


def recall_at_k(ranks: Iterable[int | None], k: int) -> float:
    ranks = list(ranks)
    return float(np.mean([r is not None and r <= k for r in ranks])) if ranks else 0.0


def mean_reciprocal_rank(ranks: Iterable[int | None]) -> float:
    ranks = list(ranks)
    return float(np.mean([1.0 / r if r else 0.0 for r in ranks])) if ranks else 0.0


def paired_bootstrap(a: Sequence[float], b: Sequence[float], resamples: int = 10_000,
                     seed: int = 42) -> dict[str, float]:
    """Mean of a - b over records and its 2.5/97.5 percentile interval from resampling records."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or len(a) == 0:
        raise ValueError("paired bootstrap needs two score vectors of the same non-zero length")
    diff = a - b
    rng = np.random.default_rng(seed)
    index = rng.integers(0, len(diff), size=(resamples, len(diff)))
    means = diff[index].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return {"diff": float(diff.mean()), "low": float(low), "high": float(high),
            "p_le_zero": float(np.mean(means <= 0))}
