"""SPEC §12 kernels: station weights, weighted totals, percentile intervals, grid reading of the budget."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

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


def test_dataset_generator_is_seed_then_sha256_bytes_of_the_name():
    # SPEC §12: default_rng([seed, *sha256(name in UTF-8).digest()]), each digest byte an integer 0-255.
    for seed, name in ((0, "ds0"), (7, "Étna"), (2**40, "")):
        entropy = [seed, *hashlib.sha256(name.encode("utf-8")).digest()]
        assert len(entropy) == 33 and all(0 <= b <= 255 for b in entropy[1:])
        want = np.random.default_rng(entropy).multinomial(5, [0.2] * 5, size=50)
        assert np.array_equal(kb.station_weights(5, 50, kb.dataset_generator(seed, name)), want)
    # The name and the seed both matter; nothing else does.
    first = kb.dataset_generator(0, "ds0").integers(0, 2**63, 4)
    assert not np.array_equal(first, kb.dataset_generator(0, "ds1").integers(0, 2**63, 4))
    assert not np.array_equal(first, kb.dataset_generator(1, "ds0").integers(0, 2**63, 4))


def test_dataset_generator_is_the_same_in_every_process():
    # Not Python's hash(), salted per process: two PYTHONHASHSEEDs give the same draws.
    code = ("import numpy as np; from pickscale.metrics.bootstrap import dataset_generator as g; "
            "print(g(3, 'ds1').integers(0, 2**63, 4).tolist())")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env=dict(os.environ, PYTHONHASHSEED=h)).stdout for h in ("1", "2")}
    assert outs == {str(kb.dataset_generator(3, "ds1").integers(0, 2**63, 4).tolist()) + "\n"}


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


def test_a_draw_without_reference_arrivals_of_the_phase_has_no_precision_or_ece():
    # Station A: one arrival, matched by its one pick; station B: no arrival, one unmatched pick (conf 0.5).
    # A draw that takes B twice holds no arrival: precision and ece are NaN there (SPEC §4, left out of the
    # quantiles, §12), not 0 — and the draw that takes each once reads them as usual.
    from pickscale.metrics.bootstrap import detection_draws, ece_draws

    weights = np.array([[0, 2], [1, 1]])
    matched, emitted, n_ref = np.array([1, 0]), np.array([1, 1]), np.array([1, 0])
    det = detection_draws(weights, matched, emitted, n_ref)
    assert np.isnan(det["precision_lb"][0]) and det["precision_lb"][1] == 0.5
    cal_n = np.array([[0, 1], [0, 1]])  # two bins, [0, 0.5) and [0.5, 1]: A's pick (0.9) and B's (0.5) in the upper
    cal_conf = np.array([[0.0, 0.9], [0.0, 0.5]])
    cal_hits = np.array([[0, 1], [0, 0]])
    ece = ece_draws(weights, cal_n, cal_conf, cal_hits, n_ref)
    assert np.isnan(ece[0])
    # Both picks in the upper bin: mean conf 0.7, observed 0.5 -> ece 0.2.
    assert abs(ece[1] - 0.2) < 1e-12
