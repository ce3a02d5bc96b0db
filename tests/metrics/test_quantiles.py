"""SPEC §5 residual quantiles p10, p90, iqr: hand-worked cases and a property against exact rationals."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from pickscale.metrics.timing import QUANTILE_NAMES, residual_quantile, timing_stats, timing_sweep
from tests.helpers import brute


def ns(seconds):
    return np.round(np.asarray(seconds, dtype=np.float64) * 1e9).astype(np.int64)


def test_quantiles_by_hand():
    # e sorted: -0.3, -0.1, 0.0, 0.2, 0.9 (n = 5, so h = 4 q)
    # p10: h = 0.4 -> -0.3 + 0.4 * (-0.1 - -0.3) = -0.22
    # p90: h = 3.6 ->  0.2 + 0.6 * (0.9 - 0.2)   =  0.62
    # p25: h = 1.0 -> -0.1 ; p75: h = 3.0 -> 0.2 ; iqr = 0.3
    got = timing_stats(ns([0.9, -0.1, 0.2, -0.3, 0.0]), tol=0.5)
    assert (got["p10"], got["p90"], got["iqr"]) == (-0.22, 0.62, 0.3)


def test_quantiles_even_count_and_median_convention():
    # n = 4: e = -0.2, 0.1, 0.3, 0.6; h = 3 q.
    # p10: h = 0.3 -> -0.2 + 0.3 * 0.3 = -0.11 ; p90: h = 2.7 -> 0.3 + 0.7 * 0.3 = 0.51
    # p25: h = 0.75 -> -0.2 + 0.75 * 0.3 = 0.025 ; p75: h = 2.25 -> 0.3 + 0.25 * 0.3 = 0.375 ; iqr = 0.35
    got = timing_stats(ns([0.3, -0.2, 0.6, 0.1]), tol=0.5)
    assert (got["p10"], got["p90"], got["iqr"]) == (-0.11, 0.51, 0.35)
    # At 50 the rule is the median of SPEC §5: the mean of the two middle values.
    assert residual_quantile(ns([0.3, -0.2, 0.6, 0.1]), 50) == 0.2 == got["bias"]


def test_quantiles_one_and_none():
    one = timing_stats(ns([-0.3]), tol=0.5)
    assert (one["p10"], one["p90"], one["iqr"]) == (-0.3, -0.3, 0.0)
    none = timing_stats(np.zeros(0, dtype=np.int64), tol=0.5)
    assert all(math.isnan(none[k]) for k in QUANTILE_NAMES)


def test_quantiles_per_threshold():
    # Pairs +0.1 (conf 0.9), -0.3 (0.5), +0.6 (0.2): at 0.1 all three, at 0.3 two, at 0.95 none.
    got = timing_sweep(ns([0.1, -0.3, 0.6]), [0.9, 0.5, 0.2], [0.1, 0.3, 0.95], tol=0.5)
    # three: h = 2 q: p10 = -0.3 + 0.2 * 0.4 = -0.22; p90 = 0.1 + 0.8 * 0.5 = 0.5; iqr = 0.35 - -0.1 = 0.45
    # two (-0.3, 0.1): p10 = -0.3 + 0.1 * 0.4 = -0.26; p90 = -0.3 + 0.9 * 0.4 = 0.06; iqr = 0.5 * 0.4 = 0.2
    assert got["p10"][:2].tolist() == [-0.22, -0.26]
    assert got["p90"][:2].tolist() == [0.5, 0.06]
    assert got["iqr"][:2].tolist() == [0.45, 0.2]
    assert all(math.isnan(got[k][2]) for k in QUANTILE_NAMES)


@given(st.lists(st.integers(-2 * 10**9, 2 * 10**9), min_size=1, max_size=40))
def test_quantiles_exact_against_rationals(values):
    # Computed on integer ns and rounded once: bit for bit the exact rational, rounded.
    got = timing_stats(np.array(values, dtype=np.int64), tol=0.5)
    exp = brute.timing_stats(values, 0.5)
    for k in QUANTILE_NAMES:
        assert got[k] == exp[k], k
    # and numpy's "linear" method up to rounding.
    e = np.sort(np.array(values)) / 1e9
    assert math.isclose(got["p10"], float(np.quantile(e, 0.1)), rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(got["p90"], float(np.quantile(e, 0.9)), rel_tol=1e-9, abs_tol=1e-12)
