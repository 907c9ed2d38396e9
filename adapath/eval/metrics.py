"""The papers' metrics as pure functions over plain records (AdaPath §4, Appendices D–F).

- exact match, strict (case- and whitespace-normalized equality with any valid answer name)
  and lenient (substring either way, as the AdaPath reference scores);
- multiple-choice accuracy (a letter or the option's text);
- per-depth triplet recall (the gold (head, relation, tail) among at most ``cap`` distinct
  triplets retrieved at that depth, drawn with a fixed seed; micro-average over record x depth
  pairs);
- per-depth hit rate (the explored set at depth d holds the reference path's d-th node);
- meta-path R@k and MRR of a ranked meta-path list against the gold meta-path;
- percentile bootstrap intervals of a mean (and of a mean of cell means), and the paired
  bootstrap of the difference of two per-record score vectors.
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


Triplet = tuple  # (head, relation, tail): node ids (or names) and a relation name


def triplet_recall(gold_by_depth: dict[int, Triplet], retrieved_by_depth: dict[int, Iterable[Triplet]],
                   cap: int = 100, seed: int = 42) -> dict[int, bool]:
    """For each gold depth: is the gold (head, relation, tail) among the triplets retrieved at
    that depth?

    The pool at a depth is its distinct triplets in sorted order (so the result does not depend
    on the order a method listed them); when it holds more than ``cap``, a seeded random sample
    of ``cap`` of them is what counts. A triplet matches in either orientation, with the same
    relation: (t, r, h) is the edge (h, r, t) walked the other way. Relations are compared
    lower-cased.
    """
    rng = np.random.default_rng(seed)
    hits = {}
    for depth, gold in sorted(gold_by_depth.items()):
        pool = sorted({_triplet_key(t) for t in retrieved_by_depth.get(depth, ())})
        if len(pool) > cap:
            pool = [pool[i] for i in sorted(rng.choice(len(pool), cap, replace=False))]
        head, relation, tail = _triplet_key(gold)
        hits[depth] = (head, relation, tail) in pool or (tail, relation, head) in pool
    return hits


def _triplet_key(triplet: Triplet) -> tuple[str, str, str]:
    head, relation, tail = triplet
    return str(head).lower(), str(relation).lower(), str(tail).lower()


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


def bootstrap_interval(values: Sequence[float], resamples: int = 1000, seed: int = 42) -> tuple[float, float]:
    """2.5 and 97.5 percentiles of the mean of ``values`` over ``resamples`` resamples of
    them with replacement (a seeded percentile bootstrap); (nan, nan) when empty."""
    return bootstrap_mean_of_means([values], resamples, seed)


def bootstrap_mean_of_means(groups: Sequence[Sequence[float]], resamples: int = 1000,
                            seed: int = 42) -> tuple[float, float]:
    """Percentile interval of the mean of group means, each group resampled on its own (a
    stratified bootstrap: a level's Avg over its hop cells keeps each cell's size)."""
    groups = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if not groups:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = np.zeros(resamples)
    for values in groups:
        index = rng.integers(0, len(values), size=(resamples, len(values)))
        means += values[index].mean(axis=1)
    means /= len(groups)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


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
