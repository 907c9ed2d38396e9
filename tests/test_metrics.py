"""Metrics on hand-worked examples; the bootstrap against a direct computation."""

import numpy as np
import pytest

from adapath.eval.metrics import (
    bootstrap_interval,
    bootstrap_mean_of_means,
    em_lenient,
    em_strict,
    hit_rate,
    mean_reciprocal_rank,
    metapath_ranks,
    micro_average,
    multiple_choice_correct,
    paired_bootstrap,
    recall_at_k,
    triplet_recall,
)


def test_exact_match_strict_and_lenient():
    answers = ["Ovarian  Adenocarcinoma", "ovarian cancer"]
    assert em_strict("ovarian adenocarcinoma", answers)
    assert em_strict("  OVARIAN cancer. ", answers)
    assert not em_strict("adenocarcinoma", answers)
    assert em_lenient("adenocarcinoma", answers)  # prediction inside an answer
    assert em_lenient("the answer is ovarian cancer of the ovary", answers)  # answer inside
    assert not em_lenient("", answers) and not em_strict("", answers)
    assert not em_lenient("lung", answers)


def test_multiple_choice():
    options = ["Asthma", "Gout", "Lupus", "Migraine"]
    assert multiple_choice_correct("B", options, 1)
    assert multiple_choice_correct("(b) Gout", options, 1)
    assert multiple_choice_correct("gout", options, 1)
    assert not multiple_choice_correct("A", options, 1)
    assert not multiple_choice_correct("Lupus", options, 1)


def test_triplet_recall_matches_the_relation_and_averages_micro():
    gold = {1: (1, "target", 2), 2: (2, "expression present", 3), 3: (3, "ppi", 4)}
    retrieved = {
        1: [(1, "target", 2), (1, "target", 9)],  # the gold edge
        2: [(2, "expression absent", 3), (2, "expression present", 8)],  # same ends, wrong relation; right relation, wrong tail
        3: [(4, "PPI", 3)],  # the gold edge walked the other way (relation case-folded)
    }
    hits = triplet_recall(gold, retrieved)
    assert hits == {1: True, 2: False, 3: True}
    other = triplet_recall({1: ("A", "r", "B"), 2: ("B", "r", "C")}, {1: [("a", "r", "b")]})
    assert other == {1: True, 2: False}  # names compare case-folded; nothing retrieved at depth 2
    overall, by_depth = micro_average([hits, other])
    assert overall == pytest.approx(3 / 5)  # five record x depth pairs, three hits
    assert by_depth == {1: 1.0, 2: 0.0, 3: 1.0}


def test_triplet_recall_samples_100_distinct_triplets_with_a_fixed_seed():
    # 150 distinct triplets, each listed twice and in shuffled order: the pool is the 150
    # distinct ones, sorted; 100 of them are drawn by the seeded generator
    distinct = [(f"h{i:03d}", "r", f"t{i:03d}") for i in range(150)]
    listed = distinct + distinct[::-1]
    np.random.default_rng(3).shuffle(listed)
    chosen = set(np.random.default_rng(42).choice(150, 100, replace=False).tolist())
    inside, outside = min(chosen), min(set(range(150)) - chosen)
    assert triplet_recall({1: distinct[inside]}, {1: listed}, cap=100, seed=42) == {1: True}
    assert triplet_recall({1: distinct[outside]}, {1: listed}, cap=100, seed=42) == {1: False}
    # over many gold triplets the share found is the cap's share of the pool, 100 / 150
    found = [triplet_recall({1: t}, {1: listed}, cap=100, seed=42)[1] for t in distinct]
    assert sum(found) == 100
    # under the cap every triplet counts
    assert triplet_recall({1: distinct[outside]}, {1: listed[:150] + [distinct[outside]]}, cap=200)[1]


def test_bootstrap_interval_against_direct_computation():
    values = np.array([1, 0, 1, 1, 0, 1, 0, 1, 1, 1], dtype=float)
    low, high = bootstrap_interval(values, resamples=500, seed=5)
    draw = np.random.default_rng(5).integers(0, 10, size=(500, 10))
    means = [values[row].mean() for row in draw]
    assert (low, high) == (pytest.approx(np.percentile(means, 2.5)), pytest.approx(np.percentile(means, 97.5)))
    assert 0 < low < 0.7 < high
    # a mean of cell means: each cell resampled on its own, in order, from one generator
    cells = [np.array([1.0, 0.0, 0.0]), np.array([1.0, 1.0, 0.0, 1.0])]
    low, high = bootstrap_mean_of_means(cells, resamples=400, seed=9)
    rng = np.random.default_rng(9)
    first = cells[0][rng.integers(0, 3, size=(400, 3))].mean(axis=1)
    second = cells[1][rng.integers(0, 4, size=(400, 4))].mean(axis=1)
    expected = np.percentile((first + second) / 2, [2.5, 97.5])
    assert (low, high) == (pytest.approx(expected[0]), pytest.approx(expected[1]))
    assert np.isnan(bootstrap_interval([], 10)[0])


def test_hit_rate():
    assert hit_rate({1: [5, 6], 2: [9]}, [1, 6, 7]) == {1: True, 2: False}


def test_metapath_rank_metrics():
    ranks = [metapath_ranks(["x", "g", "y"], "g"), metapath_ranks(["g"], "g"), metapath_ranks(["x"], "g")]
    assert ranks == [2, 1, None]
    assert recall_at_k(ranks, 1) == pytest.approx(1 / 3)
    assert recall_at_k(ranks, 3) == pytest.approx(2 / 3)
    assert mean_reciprocal_rank(ranks) == pytest.approx((0.5 + 1.0) / 3)


def test_paired_bootstrap_against_direct_computation():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, 50).astype(float)
    b = rng.integers(0, 2, 50).astype(float)
    result = paired_bootstrap(a, b, resamples=2000, seed=7)
    # the same resampling written out loop by loop
    draw = np.random.default_rng(7).integers(0, 50, size=(2000, 50))
    means = [np.mean(a[row] - b[row]) for row in draw]
    assert result["diff"] == pytest.approx(np.mean(a - b))
    assert result["low"] == pytest.approx(np.percentile(means, 2.5))
    assert result["high"] == pytest.approx(np.percentile(means, 97.5))
    assert result["low"] <= result["diff"] <= result["high"]
    with pytest.raises(ValueError):
        paired_bootstrap([1.0], [1.0, 2.0])
