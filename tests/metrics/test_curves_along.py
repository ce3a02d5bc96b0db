"""SPEC §7's readings of every curve at once equal the one-curve readings, bit for bit.

:func:`~pickscale.metrics.curves.recall_at_budget_along` and
:func:`~pickscale.metrics.curves.best_threshold_along` are what the results use (every model at once); the
scalar :func:`~pickscale.metrics.curves.recall_at_budget` (``np.unique`` + ``np.interp``) and
:func:`~pickscale.metrics.curves.best_threshold` are checked against the brute force elsewhere
(tests/metrics/test_metrics.py, tests/kernel/test_properties.py).  Curves here need not be monotone, and
repeat emitted values, so every case of the interpolation is met (on a point, between two, at either end,
outside, n_reference 0).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pickscale.metrics.curves import best_threshold, best_threshold_along, recall_at_budget, recall_at_budget_along
from tests.helpers.examples import examples


def _bits(values) -> bytes:
    return np.asarray(values, dtype=np.float64).tobytes()


@pytest.mark.slow
@settings(max_examples=examples(300))
@given(data=st.data())
def test_recall_at_budget_along_equals_one_curve_at_a_time(data):
    n_curves, n_points = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 12))
    monotone = data.draw(st.booleans())
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    emitted = rng.integers(0, data.draw(st.integers(1, 40)), (n_curves, n_points))
    if monotone:  # as a fine curve is: non-increasing in θ
        emitted = -np.sort(-emitted, axis=1)
    matched = np.minimum(rng.integers(0, 40, (n_curves, n_points)), emitted)
    n_ref = rng.integers(0, 50, n_curves)
    budget = rng.integers(-2, 45, n_curves).astype(np.float64)
    budget += np.where(rng.random(n_curves) < 0.3, rng.random(n_curves), 0.0)  # between the counts too
    budget[rng.random(n_curves) < 0.1] = np.nan
    got = recall_at_budget_along(emitted, matched, n_ref, budget)
    want = [recall_at_budget(emitted[i], matched[i], n_ref[i], budget[i]) for i in range(n_curves)]
    assert _bits(got) == _bits(want)


@pytest.mark.slow
def test_recall_at_budget_along_broadcasts_and_blocks():
    # Fine curves as the results hold them, (dataset, model, phase, fine_threshold): 1,200 curves, more than one
    # block reads (1,068 of 981 points), n_reference and the budget per (dataset, phase).
    rng = np.random.default_rng(7)
    conf = rng.random((2, 300, 2, 30))
    hit = rng.random(conf.shape) < 0.6
    fine = np.linspace(0.02, 1.0, 981)
    emitted = (conf[..., None, :] >= fine[:, None]).sum(-1)
    matched = ((conf[..., None, :] >= fine[:, None]) & hit[..., None, :]).sum(-1)
    n_ref, budget = np.array([[40, 0], [25, 30]]), np.array([[12, 5], [31, 20]])
    got = recall_at_budget_along(emitted, matched, n_ref[:, None, :], budget[:, None, :])
    assert got.shape == (2, 300, 2)
    want = [[[recall_at_budget(emitted[d, m, p], matched[d, m, p], n_ref[d, p], budget[d, p]) for p in range(2)]
             for m in range(300)] for d in range(2)]
    assert _bits(got) == _bits(want)
    assert np.isnan(got[0, :, 1]).all()  # n_reference 0


@pytest.mark.slow
@settings(max_examples=examples(300))
@given(data=st.data())
def test_best_threshold_along_equals_one_curve_at_a_time(data):
    n_curves, n_thresholds = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 8))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    # Few distinct values: ties (the lowest θ wins), NaN rows and all-NaN curves are common.
    f1 = rng.choice([0.0, 0.25, 0.5, 0.75, np.nan], (n_curves, n_thresholds))
    recall, precision = rng.random((n_curves, n_thresholds)), rng.random((n_curves, n_thresholds))
    grid = np.sort(rng.random(n_thresholds))
    got = best_threshold_along(grid, f1, recall, precision)
    want = np.array([best_threshold(grid, f1[i], recall[i], precision[i]) for i in range(n_curves)]).T
    assert _bits(got) == _bits(want)
