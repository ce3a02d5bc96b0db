"""SPEC §12 kernels: station weights, weighted totals, percentile intervals, grid reading of the budget."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from pickscale.metrics import bootstrap as kb
from pickscale.metrics.curves import recall_at_budget


def test_weights_are_multinomial_counts_seeded():
    w1 = kb.station_weights(5, 100, np.random.default_rng(3))
    w2 = kb.station_weights(5, 100, np.random.default_rng(3))
    assert np.array_equal(w1, w2) and w1.dtype == np.int64
    assert (w1.sum(axis=1) == 5).all() and (w1 >= 0).all()
    assert (kb.station_weights(1, 7, np.random.default_rng(0)) == 1).all()


def test_percentile_interval_by_hand():
    # numpy "linear" at 0.25 and 0.75 (level 0.5) of 0, 1, ..., 40: h = 40 q -> 10 and 30; at 0.9 of
    # 0, 10, 20, 30: h = 3 * 0.05 = 0.15 -> 1.5 and h = 3 * 0.95 = 2.85 -> 28.5.
    lo, hi = kb.percentile_interval(np.arange(41.0), 20.0, 20.0, 0.5)
    assert (float(lo), float(hi)) == (10.0, 30.0)
    lo, hi = kb.percentile_interval(np.array([30.0, 0.0, 20.0, 10.0]), 15.0, 15.0, 0.9)
    np.testing.assert_allclose([lo, hi], [1.5, 28.5], rtol=1e-14)
    # NaN draws are left out; a NaN estimate gives a NaN interval.
    lo, hi = kb.percentile_interval(np.array([np.nan, 1.0, 3.0]), 2.0, 2.0, 0.5)
    assert (float(lo), float(hi)) == (1.5, 2.5)
    lo, hi = kb.percentile_interval(np.array([1.0, 3.0]), np.nan, 2.0, 0.5)
    assert np.isnan(lo) and np.isnan(hi)
    # Moved by estimate - full: a one-station bootstrap sits exactly on the estimate.
    lo, hi = kb.percentile_interval(np.full(10, 0.30000000000000004), 0.3, 0.30000000000000004, 0.95)
    assert float(lo) == float(hi) == 0.3


def test_detection_and_mae_draws_by_hand():
    # Station A: 2 arrivals, 2 matched of 4 emitted; B: 2 arrivals, 0 matched of 0.  Weights (1,1), (2,0), (0,2).
    w = np.array([[1, 1], [2, 0], [0, 2]])
    out = kb.detection_draws(w, np.array([2, 0]), np.array([4, 0]), np.array([2, 2]))
    assert out["recall"].tolist() == [0.5, 1.0, 0.0]
    assert out["precision_lb"][:2].tolist() == [0.5, 0.5] and np.isnan(out["precision_lb"][2])
    assert out["f1_lb"].tolist() == [0.5, 2 * 4 / (4 + 8), 0.0]
    # MAE: A holds |e| 0.1 and 0.3 s, B holds 0.5 s: (1,1) -> 0.3; (2,0) -> 0.2; (0,2) -> 0.5.
    mae = kb.mae_draws(w, np.array([400_000_000, 500_000_000]), np.array([2, 1]))
    np.testing.assert_allclose(mae, [0.3, 0.2, 0.5], rtol=1e-15)


@given(st.lists(st.integers(0, 50), min_size=2, max_size=8).map(lambda v: sorted(v, reverse=True)),
       st.integers(0, 60), st.integers(1, 40))
def test_grid_reading_equals_the_fine_curve_reading(emitted, budget, n_ref):
    # The grid reading is SPEC §7's interpolation on other points: on the same points it is the same number.
    matched = [min(e, n_ref) // 2 for e in emitted]
    got = kb.grid_recall_at_budget(np.array(emitted), np.array(matched), n_ref, budget)
    exp = recall_at_budget(emitted, matched, n_ref, budget)
    assert (np.isnan(got) and np.isnan(exp)) or abs(float(got) - exp) <= 1e-15
