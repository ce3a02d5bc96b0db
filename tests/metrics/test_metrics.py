"""SPEC §4–§7 metric functions by hand: ``pickscale.metrics.*``.

One test per quantity, with the arithmetic in the comments.  Rates computed as
one division of two integers are compared exactly (``==`` / ``assert_array_equal``):
the float64 division is correctly rounded, so any other formula that gives a
different last bit is a different (wrong) formula.  Quantities that are float
sums are compared with ``rtol=1e-12``.
"""

from __future__ import annotations

import math

import numpy as np

from pickscale.kernel import score_station
from pickscale.metrics.calibration import brier, ece, reliability
from pickscale.metrics.curves import average_precision, best_threshold, default_budget, recall_at_budget
from pickscale.metrics.detection import duplicate_rate, extra_rate, f1, precision, recall, swap_rate
from pickscale.metrics.timing import QUANTILE_NAMES, TIMING_NAMES, WITHIN, timing_stats, timing_sweep
from pickscale.options import Options
from tests.helpers.brute import ns

NAN = np.nan
RTOL = 1e-12


def i64(x):
    return np.asarray(x, dtype=np.int64)


def same(a, b):
    """Exact equality, NaN equal to NaN."""
    np.testing.assert_array_equal(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))


# ---------------------------------------------------------------- detection (§4)


def test_recall():
    # 3/4 = 0.75; 0/5 = 0; n_reference 0 -> NaN (never silently 0).
    got = recall(i64([3, 0, 0]), i64([4, 5, 0]))
    assert got.dtype == np.float64
    same(got, [0.75, 0.0, NAN])


def test_precision():
    # 3/6 = 0.5; 0/5 = 0; emitted 0 -> NaN.
    same(precision(i64([3, 0, 0]), i64([6, 5, 0])), [0.5, 0.0, NAN])


def test_f1():
    # matched 3, n_ref 4, emitted 6: 2·3/(4+6) = 0.6
    #   (= harmonic mean of recall 0.75 and precision 0.5: 2·0.375/1.25 = 0.6).
    # matched 0, n_ref 5, emitted 5: 0 (nothing matched).
    # matched 0, n_ref 5, emitted 0: 0 -- nothing matched, even though precision
    #   is NaN (the harmonic-mean formula would give NaN here; SPEC says 0).
    # n_ref 0, emitted 3: NaN.  n_ref 0, emitted 0: NaN.
    # matched 1, n_ref 3, emitted 4: 2/7 (one division, compared exactly).
    got = f1(i64([3, 0, 0, 0, 0, 1]), i64([4, 5, 5, 0, 0, 3]), i64([6, 5, 0, 3, 0, 4]))
    same(got, [0.6, 0.0, 0.0, NAN, NAN, 2 / 7])


def test_f1_ties_are_exact():
    # 2·1/(4+2) = 2/6 and 2·2/(4+8) = 4/12 are both 1/3; as single correctly
    # rounded divisions they are the same float64, which best_threshold's tie
    # rule relies on.
    got = f1(i64([1, 2]), i64([4, 4]), i64([2, 8]))
    assert got[0] == got[1] == 1 / 3


def test_extra_rate():
    # (6-3)/4 = 0.75; (10-1)/2 = 4.5 (may exceed 1); n_ref 0 -> NaN.
    same(extra_rate(i64([6, 10, 2]), i64([3, 1, 0]), i64([4, 2, 0])), [0.75, 4.5, NAN])


def test_duplicate_rate():
    # 1/3; 0/2 = 0; matched 0 -> NaN even with 0 duplicates.
    same(duplicate_rate(i64([1, 0, 0]), i64([3, 2, 0])), [1 / 3, 0.0, NAN])


def test_swap_rate():
    # (1+2)/(4+6) = 0.3; (1+0)/(0+5) = 0.2; no arrivals of either phase -> NaN.
    got = swap_rate(i64([1, 1, 0]), i64([2, 0, 0]), i64([4, 0, 0]), i64([6, 5, 0]))
    same(got, [3 / 10, 1 / 5, NAN])


def test_detection_broadcasts_like_the_kernel_arrays():
    # matched (M=2, P=2, T=2) against n_reference (P,) broadcast as (P, 1).
    matched = i64([[[1, 0], [2, 2]], [[0, 0], [3, 1]]])
    n_ref = i64([2, 4])[:, None]
    same(recall(matched, n_ref), matched / n_ref)


# ---------------------------------------------------------------- timing (§5)


def test_timing_stats_by_hand():
    # e = -0.2, 0.1, 0.3, 0.6 s, given shuffled; tol 0.5.
    # n_pairs = 4
    # mae  = (0.2 + 0.1 + 0.3 + 0.6)/4 = 1.2/4 = 0.3
    # rmse = sqrt((0.04 + 0.01 + 0.09 + 0.36)/4) = sqrt(0.125)
    # medae: |e| sorted 0.1, 0.2, 0.3, 0.6 -> even count: (0.2 + 0.3)/2 = 0.25
    # bias: e sorted -0.2, 0.1, 0.3, 0.6 -> (0.1 + 0.3)/2 = 0.2
    # residual_mean = 0.8/4 = 0.2
    # residual_std (ddof=1): deviations -0.4, -0.1, 0.1, 0.4; squares sum 0.34; /3 -> sqrt(0.34/3)
    # gross_error_rate: |e| > 0.5 -> only 0.6 -> 1/4
    # fraction_within at 0.1: |0.1| <= 0.1 -> 1/4; at 0.25: 0.2, 0.1 -> 2/4; at 0.5: 0.2, 0.1, 0.3 -> 3/4
    e = ns([0.3, -0.2, 0.6, 0.1])
    got = timing_stats(e, tol=0.5)
    assert tuple(TIMING_NAMES) == (
        "n_pairs", "mae", "rmse", "medae", "bias", "residual_mean", "residual_std",
        "gross_error_rate", "fraction_within",
    )  # fmt: skip
    assert WITHIN == (0.1, 0.25, 0.5)
    assert set(got) == set(TIMING_NAMES + QUANTILE_NAMES)
    assert got["n_pairs"] == 4 and isinstance(got["n_pairs"], (int, np.integer))
    expected = {
        "mae": 0.3,
        "rmse": math.sqrt(0.125),
        "medae": 0.25,
        "bias": 0.2,
        "residual_mean": 0.2,
        "residual_std": math.sqrt(0.34 / 3),
    }
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=RTOL, err_msg=name)
    # Fractions of a count: exact.
    assert got["gross_error_rate"] == 1 / 4
    assert got["fraction_within"].tolist() == [1 / 4, 2 / 4, 3 / 4]


def test_timing_odd_count_median():
    # e = 0.4, -0.1, 0.2: bias = middle of -0.1, 0.2, 0.4 = 0.2;
    # medae = middle of 0.1, 0.2, 0.4 = 0.2.
    got = timing_stats(ns([0.4, -0.1, 0.2]), tol=0.5)
    np.testing.assert_allclose([got["bias"], got["medae"]], [0.2, 0.2], rtol=RTOL)


def test_timing_even_count_median_is_mean_of_middle_two():
    # e = -1.0, -0.5, 0.1, 0.9: bias = (-0.5 + 0.1)/2 = -0.2, not -0.5 or 0.1
    # (a lower/upper median); |e| = 0.1, 0.5, 0.9, 1.0 -> medae (0.5 + 0.9)/2 = 0.7.
    got = timing_stats(ns([0.9, -1.0, 0.1, -0.5]), tol=0.5)
    np.testing.assert_allclose(got["bias"], -0.2, rtol=RTOL)
    np.testing.assert_allclose(got["medae"], 0.7, rtol=RTOL)


def test_gross_error_is_strictly_greater_than_tol():
    # tol 0.5: ±0.5 s exactly are not gross; ±(0.5 s + 1 ns) are -> 2/4.
    # The same four are within 0.5 s inclusive: ±0.5 yes, ±(0.5 + 1 ns) no -> 2/4.
    e = i64([500_000_000, -500_000_000, 500_000_001, -500_000_001])
    got = timing_stats(e, tol=0.5)
    assert got["gross_error_rate"] == 0.5
    assert got["fraction_within"][WITHIN.index(0.5)] == 0.5
    # A different tol moves the gross line: with tol 0.25 all four are gross.
    assert timing_stats(e, tol=0.25)["gross_error_rate"] == 1.0


def test_within_is_inclusive():
    # |e| exactly 0.1, 0.25, 0.5 count as within; 1 ns more does not.
    # e (ns): 100_000_000, -100_000_001, 250_000_000, -250_000_001, 500_000_000, 500_000_001
    # within 0.1:  100_000_000 -> 1/6
    # within 0.25: + 100_000_001, 250_000_000 -> 3/6
    # within 0.5:  + 250_000_001, 500_000_000 -> 5/6
    e = i64([100_000_000, -100_000_001, 250_000_000, -250_000_001, 500_000_000, 500_000_001])
    got = timing_stats(e, tol=0.5)
    assert got["fraction_within"].tolist() == [1 / 6, 3 / 6, 5 / 6]
    assert got["gross_error_rate"] == 1 / 6


def test_std_ddof1_and_nan_below_two():
    # Two residuals 0.1, 0.3: mean 0.2; ddof=1 -> sqrt((0.01 + 0.01)/1) = sqrt(0.02)
    # (ddof=0 would give 0.1).
    got = timing_stats(ns([0.1, 0.3]), tol=0.5)
    np.testing.assert_allclose(got["residual_std"], math.sqrt(0.02), rtol=RTOL)
    # n_pairs = 1: residual_std is NaN; every other statistic is that one residual.
    one = timing_stats(ns([-0.3]), tol=0.5)
    assert one["n_pairs"] == 1
    assert math.isnan(one["residual_std"])
    for name in ("rmse", "mae", "medae"):
        np.testing.assert_allclose(one[name], 0.3, rtol=RTOL, err_msg=name)
    for name in ("bias", "residual_mean"):
        np.testing.assert_allclose(one[name], -0.3, rtol=RTOL, err_msg=name)
    assert one["gross_error_rate"] == 0.0
    assert one["fraction_within"].tolist() == [0.0, 0.0, 1.0]


def test_timing_no_pairs_is_nan_not_zero():
    # n_pairs = 0: every statistic is a mean/median/fraction of nothing -> NaN.
    got = timing_stats(i64([]), tol=0.5)
    assert got["n_pairs"] == 0
    for name in TIMING_NAMES[1:]:
        assert np.isnan(got[name]).all(), name
    assert got["fraction_within"].shape == (len(WITHIN),)


def test_timing_sweep_filters_by_conf():
    # Pairs: +0.1 s (conf 0.9), -0.3 s (0.5), +0.6 s (0.2); tol 0.5.
    # θ:        0.1            0.3         0.5 (0.5 >= 0.5)  0.7     0.95
    # pairs:    all three      +0.1,-0.3   +0.1,-0.3         +0.1    none
    # n_pairs:  3              2           2                 1       0
    # r_mean:   0.4/3          -0.1        -0.1              0.1     NaN
    # bias:     0.1 (middle)   -0.1        -0.1              0.1     NaN
    # medae:    0.3            0.2         0.2               0.1     NaN
    # r_std:    -              -           -                 NaN     NaN
    # gross:    1/3            0           0                 0       NaN
    thresholds = np.array([0.1, 0.3, 0.5, 0.7, 0.95])
    res = ns([-0.3, 0.6, 0.1])
    conf = np.array([0.5, 0.2, 0.9])
    got = timing_sweep(res, conf, thresholds, tol=0.5)
    assert set(got) == set(TIMING_NAMES + QUANTILE_NAMES)
    np.testing.assert_array_equal(got["n_pairs"], [3, 2, 2, 1, 0])
    np.testing.assert_allclose(got["residual_mean"], [0.4 / 3, -0.1, -0.1, 0.1, NAN], rtol=RTOL)
    np.testing.assert_allclose(got["bias"], [0.1, -0.1, -0.1, 0.1, NAN], rtol=RTOL)
    np.testing.assert_allclose(got["medae"], [0.3, 0.2, 0.2, 0.1, NAN], rtol=RTOL)
    same(got["gross_error_rate"], [1 / 3, 0.0, 0.0, 0.0, NAN])
    assert np.isnan(got["residual_std"][3:]).all() and np.isfinite(got["residual_std"][:3]).all()
    assert got["fraction_within"].shape == (thresholds.size, len(WITHIN))
    # Each column equals timing_stats on the pairs that survive.
    for t, theta in enumerate(thresholds):
        one = timing_stats(res[conf >= theta], tol=0.5)
        for name in TIMING_NAMES:
            np.testing.assert_allclose(got[name][t], one[name], rtol=RTOL, err_msg=f"{name} at {theta}")


# ---------------------------------------------------------------- calibration (§6)

# Bins from tests/test_kernel.py::test_calibration_counts_and_bins:
#   bin 0: one miss at conf 0.02; bin 3: one hit at 0.3; bin 6: misses at 0.6 and 0.64;
#   bin 7: one hit at 0.7; bin 9: one hit at 1.0.  N = 6.
CAL_N = i64([1, 0, 0, 1, 0, 0, 2, 1, 0, 1])
CAL_CONF = np.array([0.02, 0, 0, 0.3, 0, 0, 0.6 + 0.64, 0.7, 0, 1.0])
CAL_HITS = i64([0, 0, 0, 1, 0, 0, 0, 1, 0, 1])


def test_reliability():
    # mean_conf = cal_conf / n; observed = hits / n; empty bins NaN (n stays 0).
    n, mean_conf, observed = reliability(CAL_N, CAL_CONF, CAL_HITS)
    np.testing.assert_array_equal(n, CAL_N)
    np.testing.assert_allclose(
        mean_conf, [0.02, NAN, NAN, 0.3, NAN, NAN, 0.62, 0.7, NAN, 1.0], rtol=RTOL
    )
    same(observed, [0.0, NAN, NAN, 1.0, NAN, NAN, 0.0, 1.0, NAN, 1.0])


def test_ece_by_hand():
    # ece = Σ (n_b/N)·|mean_conf_b − observed_b|, N = 6:
    #   bin 0: 1/6·|0.02 − 0| = 0.02/6
    #   bin 3: 1/6·|0.3  − 1| = 0.70/6
    #   bin 6: 2/6·|0.62 − 0| = 1.24/6
    #   bin 7: 1/6·|0.7  − 1| = 0.30/6
    #   bin 9: 1/6·|1.0  − 1| = 0
    #   total = 2.26/6 = 0.37666…
    np.testing.assert_allclose(ece(CAL_N, CAL_CONF, CAL_HITS), 2.26 / 6, rtol=RTOL)


def test_ece_reduces_the_bin_axis():
    # Shape (2, 10) -> (2,): the second row is the first with all hits flipped
    # to misses in bins 3, 7, 9 -> |0.3−0| + |0.7−0| + |1.0−0| + 0.02 + 1.24 = 3.26 -> /6.
    stacked_n = np.stack([CAL_N, CAL_N])
    stacked_conf = np.stack([CAL_CONF, CAL_CONF])
    stacked_hits = np.stack([CAL_HITS, np.zeros(10, np.int64)])
    got = ece(stacked_n, stacked_conf, stacked_hits)
    assert got.shape == (2,)
    np.testing.assert_allclose(got, [2.26 / 6, 3.26 / 6], rtol=RTOL)


def test_ece_without_picks_is_nan():
    # N = 0: (n_b / N) has a zero denominator -> NaN, not a perfect 0.
    assert np.isnan(ece(i64([0] * 10), np.zeros(10), i64([0] * 10)))


def test_brier():
    # brier_sum 1.35 over N = 6 picks -> 0.225; N = 0 -> NaN.
    np.testing.assert_allclose(brier(np.float64(1.35), np.int64(6)), 0.225, rtol=RTOL)
    assert np.isnan(brier(np.float64(0.0), np.int64(0)))
    same(brier(np.array([1.35, 0.0]), i64([6, 0])), [1.35 / 6, NAN])


def test_ece_and_brier_from_the_kernel_with_conf_on_bin_edges():
    # conf exactly 0.3, 0.6, 0.7, 1.0 land in bins 3, 6, 7, 9 (float64
    # 0.3*10 = 3.0, 0.6*10 = 6.0, 0.7*10 = 7.0; 1.0*10 = 10 -> capped at 9).
    # P arrivals 10, 20, 30, 40.  Picks: 10.0 (1.0) hit, 20.1 (0.7) hit,
    # 35.0 (0.6) miss (5 s from 30 and 40), 40.2 (0.3) hit.
    # ece = (|1.0−1| + |0.7−1| + |0.6−0| + |0.3−1|)/4 = (0 + 0.3 + 0.6 + 0.7)/4 = 0.4
    # brier = ((1.0−1)² + (0.7−1)² + (0.6−0)² + (0.3−1)²)/4 = (0 + 0.09 + 0.36 + 0.49)/4 = 0.235
    o = Options()
    times = ns([10.0, 20.1, 35.0, 40.2])
    r = score_station(
        np.zeros(4, np.int8),
        ns([10.0, 20.0, 30.0, 40.0]),
        np.zeros(4, np.int32),
        np.zeros(4, np.int8),
        times,
        np.array([1.0, 0.7, 0.6, 0.3]),
        n_models=1,
        options=o,
    )
    assert r.cal_n[0, 0].tolist() == [0, 0, 0, 1, 0, 0, 1, 1, 0, 1]
    assert r.cal_hits[0, 0].tolist() == [0, 0, 0, 1, 0, 0, 0, 1, 0, 1]
    np.testing.assert_allclose(ece(r.cal_n, r.cal_conf, r.cal_hits)[0, 0], 0.4, rtol=RTOL)
    np.testing.assert_allclose(brier(r.brier_sum, r.cal_n.sum(-1))[0, 0], 0.235, rtol=RTOL)
    # S has no picks: ECE and Brier are NaN.
    assert np.isnan(brier(r.brier_sum, r.cal_n.sum(-1))[0, 1])


# ---------------------------------------------------------------- curves (§7)

# A fine curve in threshold-ascending order (so emitted descends).  n_ref = 8.
#   emitted 10  8  8  5  2  0
#   matched  6  5  5  4  2  0
#   recall  .75 .625 .625 .5 .25 0
FE = i64([10, 8, 8, 5, 2, 0])
FM = i64([6, 5, 5, 4, 2, 0])


def test_default_budget_and_its_cap():
    # min(n_ref, smallest emitted at the floor over models):
    #   n_ref 10, models emit 12, 7, 30 -> min(10, 7) = 7
    #   n_ref 5 (fewer arrivals than the least liberal model emits) -> 5
    #   n_ref 10, one model emitting exactly 10 -> 10
    assert default_budget(10, i64([12, 7, 30])) == 7
    assert default_budget(5, i64([12, 7, 30])) == 5
    assert default_budget(10, i64([10])) == 10
    assert isinstance(default_budget(10, i64([12, 7])), (int, np.integer))


def test_recall_at_budget_interpolates():
    # Points (emitted, recall) sorted by emitted, 8 taken once:
    #   (0, 0) (2, .25) (5, .5) (8, .625) (10, .75)
    # budget 7: between (5, .5) and (8, .625): .5 + .125·(7−5)/(8−5) = .5 + .25/3 = 0.58333…
    # budget 3: between (2, .25) and (5, .5):  .25 + .25·(1/3) = 0.33333…
    # budget 8: a point (emitted 8 appears twice, same recall) -> .625
    # budget 10 and 0: the range ends -> .75 and 0.
    for budget, expected in [(7, 0.5 + 0.25 / 3), (3, 0.25 + 0.25 / 3), (8, 0.625), (10, 0.75), (0, 0.0), (5, 0.5)]:
        np.testing.assert_allclose(recall_at_budget(FE, FM, 8, budget), expected, rtol=RTOL, err_msg=str(budget))


def test_recall_at_budget_nan_cases():
    # budget above the largest emitted (10) -> NaN: no extrapolation.
    assert np.isnan(recall_at_budget(FE, FM, 8, 11))
    # n_reference 0 -> NaN.
    assert np.isnan(recall_at_budget(FE, FM, 0, 5))
    # A model whose curve never goes below 4 picks (it has 4 picks at conf 1.0):
    # budget 3 is below its range -> NaN; budget 5 between (4, .4) and (6, .6) -> .5.
    fe, fm = i64([6, 4, 4]), i64([3, 2, 2])
    assert np.isnan(recall_at_budget(fe, fm, 5, 3))
    np.testing.assert_allclose(recall_at_budget(fe, fm, 5, 5), 0.5, rtol=RTOL)


def test_explicit_budget_replaces_the_default():
    # Two models; n_ref 8.  Model A is FE/FM above; model B emits 6 at the floor.
    # Default budget = min(8, min(10, 6)) = 6; A at 6: .5 + .125·(1/3) = 0.541666…
    # With --budget 3 (Options(budget=3)), A is read at 3 instead: 0.33333…
    fe_b = i64([6, 3, 1, 0])
    budget = default_budget(8, i64([FE[0], fe_b[0]]))
    assert budget == 6
    np.testing.assert_allclose(recall_at_budget(FE, FM, 8, budget), 0.5 + 0.125 / 3, rtol=RTOL)
    o = Options(budget=3)
    assert o.budget == 3
    np.testing.assert_allclose(recall_at_budget(FE, FM, 8, o.budget), 0.25 + 0.25 / 3, rtol=RTOL)


def test_best_threshold_ties_and_nan():
    # f1 0.5, 0.6, 0.6, NaN, 0.55: the highest is 0.6, at θ = 0.2 and 0.3 ->
    # the lowest, 0.2; readings there: recall 0.8, precision 0.48.
    th = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    f = np.array([0.5, 0.6, 0.6, NAN, 0.55])
    r = np.array([0.9, 0.8, 0.7, NAN, 0.5])
    p = np.array([0.35, 0.48, 0.52, NAN, 0.6])
    assert tuple(map(float, best_threshold(th, f, r, p))) == (0.2, 0.6, 0.8, 0.48)
    # A leading NaN row is skipped, not treated as a maximum or a zero.
    got = best_threshold(th[:3], np.array([NAN, 0.4, 0.3]), r[:3], p[:3])
    assert tuple(map(float, got)) == (0.2, 0.4, 0.8, 0.48)
    # All NaN -> all four NaN.
    got = best_threshold(th, np.full(5, NAN), r, p)
    assert all(math.isnan(float(x)) for x in got)


def test_best_threshold_tie_from_integer_counts():
    # From counts: n_ref 4; θ=0.1 matched 2 of 8, θ=0.2 matched 1 of 2.
    # f1 = 4/12 and 2/6, both exactly 1/3 -> tie -> θ = 0.1.
    th = np.array([0.1, 0.2])
    m, n_ref, e = i64([2, 1]), i64([4, 4]), i64([8, 2])
    got = best_threshold(th, f1(m, n_ref, e), recall(m, n_ref), precision(m, e))
    assert tuple(map(float, got)) == (0.1, 1 / 3, 0.5, 0.25)


def test_average_precision_by_hand():
    # θ ascending: emitted 4, 3, 1, 0; matched 3, 2, 1, 0; n_ref 4.
    # recall .75, .5, .25, 0 (and recall_5 = 0); precision .75, 2/3, 1, — (emitted 0).
    # ap = (.75−.5)·.75 + (.5−.25)·(2/3) + (.25−0)·1 + 0
    #    = .1875 + .16666… + .25 = 0.6041666…
    got = average_precision(i64([4, 3, 1, 0]), i64([3, 2, 1, 0]), 4)
    np.testing.assert_allclose(got, 0.1875 + 0.25 * 2 / 3 + 0.25, rtol=RTOL)


def test_average_precision_last_point_and_flat_steps():
    # The top threshold's own recall counts in full (recall_{K+1} = 0):
    #   emitted 5, 2; matched 3, 2; n_ref 4 -> (.75−.5)·.6 + (.5−0)·1 = .15 + .5 = .65
    np.testing.assert_allclose(average_precision(i64([5, 2]), i64([3, 2]), 4), 0.65, rtol=RTOL)
    # Flat recall steps add nothing: emitted 6, 4, 4, 2; matched 3, 3, 3, 1; n_ref 3
    #   recall 1, 1, 1, 1/3; precision .5, .75, .75, .5
    #   -> 0 + 0 + (1 − 1/3)·.75 + (1/3)·.5 = .5 + 1/6 = 0.66666…
    np.testing.assert_allclose(average_precision(i64([6, 4, 4, 2]), i64([3, 3, 3, 1]), 3), 2 / 3, rtol=RTOL)


def test_average_precision_zero_emitted_and_nan():
    # A trailing emitted 0 term counts 0 (its precision 0/0 must not make a NaN):
    #   emitted 2, 0; matched 1, 0; n_ref 2 -> (.5 − 0)·.5 + 0 = .25
    np.testing.assert_allclose(average_precision(i64([2, 0]), i64([1, 0]), 2), 0.25, rtol=RTOL)
    # Nothing emitted anywhere, arrivals exist -> 0.
    assert average_precision(i64([0, 0]), i64([0, 0]), 3) == 0.0
    # n_reference 0 -> NaN.
    assert np.isnan(average_precision(i64([3, 1]), i64([0, 0]), 0))


# ---------------------------------------------------------------- brute.py on the same hand numbers


def test_brute_force_agrees_with_the_hand_numbers():
    # tests/brute.py is the oracle of the property tests; pin it to the same
    # hand-worked answers as the real functions above.
    from tests.helpers import brute

    t = brute.timing_stats(ns([0.3, -0.2, 0.6, 0.1]).tolist(), 0.5)
    assert t["n_pairs"] == 4
    np.testing.assert_allclose(
        [t["mae"], t["rmse"], t["medae"], t["bias"], t["residual_mean"], t["residual_std"]],
        [0.3, math.sqrt(0.125), 0.25, 0.2, 0.2, math.sqrt(0.34 / 3)],
        rtol=RTOL,
    )
    assert (t["gross_error_rate"], t["fraction_within_0.1"], t["fraction_within_0.25"],
            t["fraction_within_0.5"]) == (0.25, 0.25, 0.5, 0.75)
    assert math.isnan(brute.timing_stats([300_000_000], 0.5)["residual_std"])
    np.testing.assert_allclose(brute.ece(CAL_N, CAL_CONF, CAL_HITS, n_reference=1), 2.26 / 6, rtol=RTOL)
    np.testing.assert_allclose(brute.recall_at_budget(FE, FM, 8, 7), 0.5 + 0.25 / 3, rtol=RTOL)
    assert math.isnan(brute.recall_at_budget(FE, FM, 8, 11))
    np.testing.assert_allclose(brute.average_precision([4, 3, 1, 0], [3, 2, 1, 0], 4), 0.1875 + 0.25 * 2 / 3 + 0.25,
                               rtol=RTOL)
    np.testing.assert_allclose(brute.average_precision([6, 4, 4, 2], [3, 3, 3, 1], 3), 2 / 3, rtol=RTOL)
    f1s, recalls, precisions = [0.5, 0.6, 0.6, NAN, 0.55], [0.9, 0.8, 0.7, NAN, 0.5], [0.35, 0.48, 0.52, NAN, 0.6]
    assert brute.best_threshold([0.1, 0.2, 0.3, 0.4, 0.5], f1s, recalls, precisions) == (0.2, 0.6, 0.8, 0.48)
    assert brute.f1_lb(0, 5, 0) == 0.0 and math.isnan(brute.f1_lb(0, 0, 3))
    assert brute.default_budget(10, [12, 7, 30]) == 7 and brute.default_budget(5, [12, 7, 30]) == 5
    assert [brute.calibration_bin(c) for c in (0.3, 0.6, 0.7, 1.0)] == [3, 6, 7, 9]
