"""Metrics on hand-worked examples; the bootstrap against a direct computation."""

import numpy as np
import pytest

from adapath.eval.metrics import (
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


def test_triplet_recall_and_micro_average():
    gold = {1: ("Aspirin", "PTGS2"), 2: ("PTGS2", "Liver")}
    retrieved = {1: [("aspirin", "ptgs2"), ("aspirin", "alb")], 2: [("ptgs2", "kidney")]}
    hits = triplet_recall(gold, retrieved)
    assert hits == {1: True, 2: False}
    other = triplet_recall({1: ("A", "B")}, {1: [("a", "b")]})
    overall, by_depth = micro_average([hits, other])
    assert overall == pytest.approx(2 / 3)  # three record x depth pairs, two hits
    assert by_depth == {1: 1.0, 2: 0.0}


def test_triplet_recall_caps_the_pool_with_a_fixed_seed():
    pool = [(f"h{i}", f"t{i}") for i in range(1000)]
    gold = {1: ("h999", "t999")}
    first = triplet_recall(gold, {1: pool}, cap=100, seed=42)
    again = triplet_recall(gold, {1: pool}, cap=100, seed=42)
    assert first == again
    rng = np.random.default_rng(42)
    chosen = set(rng.choice(1000, 100, replace=False).tolist())
    assert first[1] == (999 in chosen)
    assert triplet_recall(gold, {1: pool}, cap=1000)[1]


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
