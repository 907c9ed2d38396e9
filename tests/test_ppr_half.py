"""PPR with its dense terms stored in half precision (``dense_precision="float16"``): the
binary16 conversions against NumPy's, the solve against a dense SciPy solve within the
error half storage allows, and the same bits for a column in any batch."""

import numpy as np
import pytest
from numba import njit

from adapath.engine.ppr import PPREngine
from adapath.engine.weights import QueryWeights
from adapath.errors import InputError
from adapath.kernels.half import decoded, encoded, half_scales
from adapath.kernels.series import series_terms
from tests.helpers import random_graph
from tests.test_ppr import dense_ppr, random_weights
from tests.test_ppr_certified import LADDER, pairs_of, top_k

ETA = 0.85


@njit
def _round_trip(values, bits, back):
    for i in range(values.shape[0]):
        bits[i] = encoded(values[i], bits)
        back[i] = decoded(bits[i])


def half_error_bound(tol: float) -> float:
    """L1 error of a column with half-precision dense terms: the terms from the third on
    carry at most (1 - eta)^3 of the mass, and each term's stored xt and the b it reads
    may be 2^-11 off (relative), compounding over the terms; plus the series' own tol."""
    terms = series_terms(ETA, tol)
    return (1 - ETA) ** 3 * ((1 + 2.0 ** -10) ** terms - 1) + tol + 1e-9


def test_conversions_round_to_nearest_as_numpy_does():
    """float32 -> binary16 bits -> float32 over normal, subnormal, overflowing and zero
    values gives NumPy's float16 rounding (to nearest, ties to even) bit for bit."""
    rng = np.random.default_rng(0)
    values = np.concatenate([
        rng.uniform(-1, 1, 2000) * np.exp2(rng.integers(-30, 17, 2000)),  # across the range and past it
        np.float32([0.0, 1.0, 65504.0, 65520.0, 2.0 ** -24, 2.0 ** -25, 2.0 ** -14, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11]),
    ]).astype(np.float32)
    bits, back = np.zeros(len(values), np.uint16), np.zeros(len(values), np.float32)
    _round_trip(values, bits, back)
    with np.errstate(over="ignore"):  # past 65504 rounds to infinity, as it should
        reference = values.astype(np.float16)
    np.testing.assert_array_equal(bits, reference.view(np.uint16))
    np.testing.assert_array_equal(back, reference.astype(np.float32))


def test_scales_are_powers_of_two_that_bring_the_peak_under_two_to_the_fourteen():
    peaks = np.array([1e-12, 3e-5, 0.75, 1.0, 9e3, 2.0 ** 13, 0.0])
    scales = half_scales(peaks)
    np.testing.assert_array_equal(np.frexp(scales)[0], 0.5)  # exact powers of two
    scaled = peaks[:-1] * scales[:-1]
    assert np.all((scaled >= 2.0 ** 13) & (scaled < 2.0 ** 14))
    assert scales[-1] == 1.0  # a column without mass keeps scale 1


@pytest.mark.parametrize("seed", range(4))
def test_half_solve_matches_the_dense_solve_within_half_rounding(seed):
    graph = random_graph(seed, n=150, m=1200)
    _, _, weights = random_weights(graph, 5, seed)
    topics, answers = pairs_of(graph, 5, seed)
    tol = 1e-10
    half = PPREngine(graph, tol=tol, dense_precision="float16").bidirectional(weights, topics, answers)
    single = PPREngine(graph, tol=tol).bidirectional(weights, topics, answers)
    for j in range(5):
        for pi, s in ((half.forward[:, j], topics[j]), (half.backward[:, j], answers[j])):
            assert np.abs(pi - dense_ppr(graph, weights, j, s)).sum() <= half_error_bound(tol)
    # the option takes effect: half storage moves the result past float32's rounding
    assert not np.array_equal(half.forward, single.forward)


@pytest.mark.parametrize("power", [-40, 0, 40])
def test_weights_far_from_one_stay_in_half_range(power):
    """Scaling every weight by 2^power leaves P, and so PPR, unchanged, while xt = x / out
    moves by 2^-power: the per-column scale must keep it inside binary16's range (without
    it, 2^-40 underflows to zero and 2^40 overflows). ``a`` carries the scale; ``b`` is zero
    (b is stored in half without a scale, and BM25 keeps it within [0, 1])."""
    graph = random_graph(3, n=120, m=900)
    _, _, base = random_weights(graph, 3, 3)
    weights = QueryWeights(base.a * 2.0 ** power, np.zeros_like(base.b))
    topics, answers = pairs_of(graph, 3, 3)
    result = PPREngine(graph, tol=1e-10, dense_precision="float16").bidirectional(weights, topics, answers)
    for j in range(3):
        for pi, s in ((result.forward[:, j], topics[j]), (result.backward[:, j], answers[j])):
            assert np.all(np.isfinite(pi))
            assert np.abs(pi - dense_ppr(graph, weights, j, s)).sum() <= half_error_bound(1e-10)


def test_half_columns_do_not_depend_on_their_batch_or_lane():
    """90 columns fill two half-precision blocks of 64 lanes; each column alone (one block,
    lane 0) gives the same bits: its scale is its own, and every lane sums in one order."""
    graph = random_graph(12, n=300, m=3000, isolated=2)
    _, _, weights = random_weights(graph, 90, 12)
    rng = np.random.default_rng(12)
    seeds = rng.integers(0, graph.num_nodes, 90)
    seeds[7] = 299  # isolated: its PPR is its indicator
    engine = PPREngine(graph, dense_precision="float16")
    together, _, _ = engine.personalized(weights, seeds)
    for c in (0, 7, 45, 70, 89):
        alone, _, _ = engine.personalized(weights.columns(slice(c, c + 1)), seeds[c:c + 1])
        assert np.array_equal(together[:, c], alone[:, 0])
    assert together[299, 7] == 1.0 and together[:, 7].sum() == 1.0


@pytest.mark.parametrize("seed", range(3))
def test_certified_half_solve_keeps_the_full_half_solves_top_k(seed):
    """The certificate (its remainder widened for half rounding) stops pairs early, and each
    stopped pair's top K at every rung is that of the same solve run to the end, and of the
    dense solve."""
    graph = random_graph(seed, n=120, m=700)
    _, _, weights = random_weights(graph, 6, seed)
    topics, answers = pairs_of(graph, 6, seed)
    engine = PPREngine(graph, tol=1e-14, certify_from=3, dense_precision="float16")
    certified = engine.bidirectional(weights, topics, answers, ladder=LADDER)
    full = engine.bidirectional(weights, topics, answers)
    assert np.any(certified.stopped < series_terms(ETA, 1e-14))
    for j in range(6):
        ours = certified.forward[:, j] * certified.backward[:, j]
        to_the_end = full.forward[:, j] * full.backward[:, j]
        dense = dense_ppr(graph, weights, j, topics[j]) * dense_ppr(graph, weights, j, answers[j])
        for k in LADDER:
            assert top_k(ours, k) == top_k(to_the_end, k) == top_k(dense, k), (j, k)


def test_half_precision_is_refused_off_the_numba_solve():
    graph = random_graph(1)
    with pytest.raises(InputError, match="float16"):
        PPREngine(graph, backend="scipy", dense_precision="float16")
    with pytest.raises(InputError, match="dense precision"):
        PPREngine(graph, dense_precision="float8")


def test_bank_config_checks_and_records_dense_precision():
    """A float16 bank records its precision (so it never resumes a float32 one); a float32
    bank's parameters are those banks had before the option existed."""
    from adapath.bank.build import BankConfig

    assert "dense_precision" not in BankConfig().signature()
    assert BankConfig(dense_precision="float16").signature()["dense_precision"] == "float16"
    with pytest.raises(InputError, match="dense precision 'float64'"):
        BankConfig(dense_precision="float64").check()
    with pytest.raises(InputError, match="CPU only"):
        BankConfig(dense_precision="float16", device="cuda").check()

