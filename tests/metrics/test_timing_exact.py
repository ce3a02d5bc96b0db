"""SPEC §5's means are exact: sums in integer ns, each statistic rounded once; every threshold from one sort."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pickscale.metrics.ranks import nested_order_statistics
from pickscale.metrics.timing import TIMING_NAMES, timing_stats, timing_sweep
from tests.helpers import brute

EXACT = ("n_pairs", "mae", "rmse", "residual_mean", "residual_std", "gross_error_rate", "p10", "p90", "iqr")


def test_ten_residuals_of_a_tenth_of_a_second_by_hand():
    # Σ|e| = 10 · 100_000_000 ns = 10^9 ns exactly; mae = 10^9 / (10 · 10^9) s = 0.1 s, rounded once.
    # (A float sum of ten 0.1 is 0.9999999999999999, and /10 gives 0.09999999999999999.)
    got = timing_stats([100_000_000] * 10, tol=0.5)
    assert sum([0.1] * 10) / 10 != 0.1
    assert got["mae"] == got["rmse"] == got["residual_mean"] == 0.1
    assert got["residual_std"] == 0.0


def test_three_residuals_by_hand():
    # e = -1, 2, 2 ns: Σe = 3, Σ|e| = 5, Σe² = 9; n = 3.
    # residual_mean = 3 / (3·10^9) = 1e-9 s; mae = 5/(3·10^9) s; rmse = sqrt(9/(3·10^18)) = sqrt(3)·1e-9 s;
    # variance = (3·9 − 3²)/(3·2) = 3 ns², residual_std = sqrt(3e-18) s.
    got = timing_stats([-1, 2, 2], tol=0.5)
    assert got["residual_mean"] == 1e-9
    assert got["mae"] == 5 / 3e9 == float(Fraction(5, 3 * 10**9))
    assert got["rmse"] == math.sqrt(3e-18)
    assert got["residual_std"] == math.sqrt(3e-18)


def test_means_do_not_depend_on_the_order_of_the_pairs():
    rng = np.random.default_rng(5)
    e = rng.integers(-2 * 10**9, 2 * 10**9, 1000)
    conf = rng.random(1000)
    grid = np.round(np.arange(0.02, 0.96, 0.02), 2)
    a = timing_sweep(e, conf, grid, tol=0.5)
    order = rng.permutation(1000)
    b = timing_sweep(e[order], conf[order], grid, tol=0.5)
    for name in a:
        assert np.array_equal(a[name], b[name], equal_nan=True), name


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(-2 * 10**9, 2 * 10**9), st.sampled_from([0.05, 0.1, 0.3, 0.31, 0.5, 0.9, 1.0])),
                max_size=60),
       st.lists(st.sampled_from([0.02, 0.1, 0.3, 0.31, 0.5, 0.7, 0.95]), min_size=1, max_size=5, unique=True))
def test_sweep_equals_exact_rationals_at_every_threshold(pairs, thresholds):
    e = np.array([p[0] for p in pairs], dtype=np.int64)
    conf = np.array([p[1] for p in pairs], dtype=np.float64)
    got = timing_sweep(e, conf, thresholds, tol=0.5)
    for j, theta in enumerate(thresholds):
        exp = brute.timing_stats([int(x) for x, c in zip(e, conf) if c >= theta], 0.5)
        for name in EXACT:
            assert got[name][j] == exp[name] or (math.isnan(got[name][j]) and math.isnan(exp[name])), (name, theta)
        for name in ("medae", "bias"):  # the mean of two middle values, as SPEC §5 writes it in seconds
            assert math.isclose(got[name][j], exp[name], rel_tol=1e-15, abs_tol=1e-18) or (
                math.isnan(got[name][j]) and math.isnan(exp[name])), (name, theta)
        for k, (name, _w) in enumerate(brute.WITHIN):
            assert got["fraction_within"][j][k] == exp[name] or math.isnan(exp[name])
    assert set(got) >= set(TIMING_NAMES)


def test_large_residual_tolerance_sums_stay_exact():
    # |e| up to 10^15 ns (residual_tol's bound, 1e6 s): four limbs; the mean square is exact.
    e = np.array([10**15, -(10**15) + 1, 3], dtype=np.int64)
    got = timing_stats(e, tol=0.5)
    assert got["rmse"] == math.sqrt(Fraction(10**30 + (10**15 - 1) ** 2 + 9, 3 * 10**18))
    assert got["residual_mean"] == float(Fraction(4, 3 * 10**9))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=50), st.integers(1, 7), st.data())
def test_nested_order_statistics_against_masking(levels, block, data):
    level = np.array(levels, dtype=np.int64)
    j = data.draw(st.integers(0, 3))
    members = np.flatnonzero(level > j)
    if not members.size:
        return
    k = data.draw(st.lists(st.integers(0, members.size - 1), min_size=1, max_size=5))
    got = nested_order_statistics(level, 4, np.full(len(k), j), np.array(k), block=block)
    assert got.tolist() == members[k].tolist()
