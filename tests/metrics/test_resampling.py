"""SPEC §12 kernels: station weights, weighted totals, percentile intervals, grid reading of the budget."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pickscale.metrics import resampling as kb
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


@pytest.mark.slow
def test_dataset_generator_is_the_same_in_every_process():
    # Not Python's hash(), salted per process: two PYTHONHASHSEEDs give the same draws.
    code = ("import numpy as np; from pickscale.metrics.resampling import dataset_generator as g; "
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


@pytest.mark.slow
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
    from pickscale.metrics.resampling import detection_draws, ece_draws

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


# --- SPEC §12: the symmetric bootstrap-t interval of a ratio of station sums ----------------------------------

HAND_WEIGHTS = np.array([[1, 1, 1, 1], [2, 1, 0, 1], [0, 1, 2, 1], [1, 0, 1, 2]])
HAND_MATCHED = np.array([3, 1, 0, 2])  # stations A, B, C, D
HAND_ARRIVALS = np.array([4, 2, 1, 3])


def test_symmetric_t_worked_example_of_the_spec():
    # SPEC §12's worked example, by hand.  R = 6/10 = 0.6; residuals m - 0.6 n = 0.6, -0.2, -0.6, 0.2;
    # se = sqrt(0.8) / 10.  Draws: (1,1,1,1): R = 0.6, t = 0.  (2,1,0,1): R = 9/13, residuals 3/13, -5/13, -1/13,
    # sum of w r^2 = 44/169, se(w) = sqrt(44)/169, t = (1.2/13) / (sqrt(44)/169) = 15.6/sqrt(44).  (0,1,2,1):
    # R = 3/7, t = -8.4/sqrt(44).  (1,0,1,2): R = 7/11, t = 4.4/sqrt(76).
    t = kb.ratio_t_draws(HAND_WEIGHTS, HAND_MATCHED, HAND_ARRIVALS)
    np.testing.assert_allclose(t["t"], [0.0, 15.6 / np.sqrt(44), -8.4 / np.sqrt(44), 4.4 / np.sqrt(76)], rtol=1e-12)
    assert t["t"][0] == 0.0 and float(t["ratio"]) == 0.6
    np.testing.assert_allclose(t["se"], np.sqrt(0.8) / 10, rtol=1e-14)
    assert (float(t["low"]), float(t["high"])) == (0.0, 0.75)
    # |t| sorted: 0, 0.504715, 1.266348, 2.351788.  Level 0.5: h = 3 * 0.5 = 1.5, q = 0.885531; half-width
    # q * se = 0.079204: [0.520796, 0.679204].
    q = 4.4 / np.sqrt(76) + 0.5 * (8.4 / np.sqrt(44) - 4.4 / np.sqrt(76))
    lo, hi = kb.studentized_interval(HAND_WEIGHTS, HAND_MATCHED, HAND_ARRIVALS, 0.6, 0.5)
    np.testing.assert_allclose([lo, hi], [0.6 - q * np.sqrt(0.8) / 10, 0.6 + q * np.sqrt(0.8) / 10], rtol=1e-12)
    assert (round(float(lo), 6), round(float(hi), 6)) == (0.520796, 0.679204)
    # Level 0.95: h = 2.85, q = 1.266348 + 0.85 (2.351788 - 1.266348) = 2.188972, half-width 0.195788:
    # [0.404212, 0.75] — the upper end 0.795788 clipped to the largest station recall, A's 3/4.
    lo, hi = kb.studentized_interval(HAND_WEIGHTS, HAND_MATCHED, HAND_ARRIVALS, 0.6, 0.95)
    q = 8.4 / np.sqrt(44) + 0.85 * (15.6 / np.sqrt(44) - 8.4 / np.sqrt(44))
    np.testing.assert_allclose(lo, 0.6 - q * np.sqrt(0.8) / 10, rtol=1e-12)
    assert round(float(lo), 6) == 0.404212 and float(hi) == 0.75


def test_linear_quantile_by_hand():
    # h = (n - 1) q: 0, 10, 20, 30 at 0.5 -> h = 1.5 -> 15; at 0.9 -> h = 2.7 -> 27 (NaN left out).
    x = np.array([30.0, np.nan, 0.0, 20.0, 10.0])
    assert float(kb.linear_quantile(x, 0.5)) == 15.0
    np.testing.assert_allclose(kb.linear_quantile(x, 0.9), 27.0, rtol=1e-15)
    # +inf next to the point: inf; two infs: inf (not NaN); nothing defined: NaN.
    assert float(kb.linear_quantile(np.array([0.0, 1.0, np.inf]), 0.75)) == np.inf
    assert float(kb.linear_quantile(np.array([0.0, np.inf, np.inf]), 0.75)) == np.inf
    assert float(kb.linear_quantile(np.array([0.0, 1.0, np.inf]), 0.25)) == 0.5
    assert np.isnan(kb.linear_quantile(np.array([np.nan, np.nan]), 0.5))
    # Per cell (columns), as numpy's "linear" where it is defined.
    rng = np.random.default_rng(0)
    y = rng.normal(size=(101, 3))
    np.testing.assert_allclose(kb.linear_quantile(y, 0.95), np.quantile(y, 0.95, axis=0), rtol=1e-14)


def test_symmetric_t_degenerate_cells():
    w = kb.station_weights(3, 50, np.random.default_rng(1))
    # Every station the same recall: se = 0, a zero-width interval on the estimate.
    lo, hi = kb.studentized_interval(w, np.array([1, 2, 3]), np.array([2, 4, 6]), 0.5, 0.95)
    assert float(lo) == float(hi) == 0.5
    # One station: every draw takes it S times, t = 0.
    lo, hi = kb.studentized_interval(np.ones((5, 1), dtype=np.int64), np.array([2]), np.array([3]), 2 / 3, 0.95)
    assert float(lo) == float(hi) == 2 / 3
    # No arrival: NaN; a NaN estimate: NaN; no defined draw: NaN.
    lo, hi = kb.studentized_interval(w, np.array([0, 0, 0]), np.array([0, 0, 0]), np.nan, 0.95)
    assert np.isnan(lo) and np.isnan(hi)
    lo, hi = kb.studentized_interval(w, np.array([1, 0, 2]), np.array([2, 1, 3]), np.nan, 0.95)
    assert np.isnan(lo) and np.isnan(hi)
    lo, hi = kb.studentized_interval(w, np.array([1, 0, 2]), np.array([2, 1, 3]), 0.5, 0.95,
                                     defined=np.zeros((50,), dtype=bool))
    assert np.isnan(lo) and np.isnan(hi)
    # Moved by estimate - scale * ratio (MAE: ns summed, seconds reported) and within the station ratios' range.
    # Station MAEs 0.15, 0.1, 0.2 s; the estimate 1/6 s, given as a rounding apart from the ratio's own.
    est = 1 / 6 + 1e-17
    lo, hi = kb.studentized_interval(w, np.array([3e8, 1e8, 6e8]), np.array([2, 1, 3]), est, 0.95, scale=1e-9)
    assert 0.1 - 1e-12 <= float(lo) < est < float(hi) <= 0.2 + 1e-12


def brute_symmetric_t(weights, a, b, level):
    """SPEC §12's definition, one draw at a time, from the drawn multiset of stations (plain Python sums)."""
    a, b = [float(v) for v in a], [float(v) for v in b]
    if sum(b) == 0:
        return np.nan, np.nan
    r_hat = sum(a) / sum(b)
    se = np.sqrt(sum((x - r_hat * y) ** 2 for x, y in zip(a, b))) / sum(b)
    ts = []
    for w in weights:
        drawn = [s for s, k in enumerate(w) for _ in range(k)]
        sb = sum(b[s] for s in drawn)
        if sb == 0:
            continue
        r = sum(a[s] for s in drawn) / sb
        se_w = np.sqrt(sum((a[s] - r * b[s]) ** 2 for s in drawn)) / sb
        ts.append((abs(r - r_hat), se_w))
    return r_hat, se, ts


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), min_size=1, max_size=6),
       st.integers(1, 40), st.integers(0, 2**32 - 1), st.sampled_from([0.5, 0.8, 0.9, 0.95]))
def test_symmetric_t_equals_brute_force(stations, n_draws, seed, level):
    # counts per station: (matched, missed); arrivals = matched + missed.
    a = np.array([m for m, _ in stations])
    b = np.array([m + x for m, x in stations])
    w = kb.station_weights(a.size, n_draws, np.random.default_rng(seed))
    got = kb.studentized_interval(w, a, b, a.sum() / b.sum() if b.sum() else np.nan, level)
    if b.sum() == 0:
        assert np.isnan(got[0]) and np.isnan(got[1])
        return
    r_hat, se, ts = brute_symmetric_t(w, a, b, level)
    if not ts:
        assert np.isnan(got[0]) and np.isnan(got[1])
        return
    # |t| of each draw; the brute force decides 0 / inf from exact rationals (an exact tie of R(w) with R,
    # or a draw whose stations all share one ratio), where the kernel's floats may disagree by rounding.
    exact = []
    for (delta, se_w) in ts:
        if delta <= 1e-12:
            exact.append(0.0)
        elif se_w <= 1e-12:
            exact.append(np.inf)
        else:
            exact.append(delta / se_w)
    exact.sort()
    h = (len(exact) - 1) * level
    j = int(np.floor(h))
    q = exact[j] if h == j or exact[min(j + 1, len(exact) - 1)] == exact[j] else \
        exact[j] + (h - j) * (exact[j + 1] - exact[j])
    ratios = [x / y for x, y in zip(a, b) if y > 0]
    half = 0.0 if se == 0 else q * se
    want = (min(max(r_hat - half, min(ratios)), max(ratios)), max(min(r_hat + half, max(ratios)), min(ratios)))
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert min(ratios) <= got[0] <= got[1] <= max(ratios)
