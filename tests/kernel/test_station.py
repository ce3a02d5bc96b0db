"""SPEC §3–§7 counts of one station by hand: ``pickscale.kernel.score_station``.

Each test builds one small station, works the SPEC out in the comments, and
compares the kernel's ``StationResult`` with those numbers.  Most use the
small grid ``[0.1, 0.3, 0.5, 0.7]`` (floor 0.1) so the expected arrays are
short enough to write out.
"""

from __future__ import annotations

import numpy as np
import pytest

from pickscale.kernel import StationResult, score_station
from pickscale.options import Options
from tests.helpers.brute import ns

P, S = 0, 1
SMALL = dict(thresholds=[0.1, 0.3, 0.5, 0.7])  # floor 0.1, shared threshold 0.3 on the grid


def run(arrivals, picks, *, options, n_models=1) -> StationResult:
    """``arrivals``: [(phase, seconds)]; ``picks``: [(model, phase, seconds, conf)]."""
    a_phase = np.array([a[0] for a in arrivals], dtype=np.int8)
    a_time = ns([a[1] for a in arrivals]).reshape(-1)
    p_model = np.array([p[0] for p in picks], dtype=np.int32)
    p_phase = np.array([p[1] for p in picks], dtype=np.int8)
    p_time = ns([p[2] for p in picks]).reshape(-1)
    p_conf = np.array([p[3] for p in picks], dtype=np.float64)
    return score_station(a_phase, a_time, p_model, p_phase, p_time, p_conf, n_models=n_models, options=options)


def test_shapes_and_dtypes():
    # M = 2 models, P = 2 phases, T = 4 grid values, F = 901 fine points
    # (k/1000 for k = 100…1000), B = 10 bins.
    o = Options(**SMALL)
    r = run([(P, 10.0)], [(0, P, 10.1, 0.9)], options=o, n_models=2)
    M, T, F = 2, 4, 901
    assert len(o.fine) == F
    expect = {
        "n_reference": ((2,), np.int64),
        "emitted": ((M, 2, T), np.int64),
        "matched": ((M, 2, T), np.int64),
        "duplicates": ((M, 2, T), np.int64),
        "swapped": ((M, 2, T), np.int64),
        "fine_emitted": ((M, 2, F), np.int64),
        "fine_matched": ((M, 2, F), np.int64),
        "cal_n": ((M, 2, 10), np.int64),
        "cal_hits": ((M, 2, 10), np.int64),
        "cal_conf": ((M, 2, 10), np.float64),
        "brier_sum": ((M, 2), np.float64),
    }
    for name, (shape, dtype) in expect.items():
        value = getattr(r, name)
        assert value.shape == shape, name
        assert value.dtype == dtype, name
    for name, dtype in [
        ("pair_model", np.int32),
        ("pair_phase", np.int8),
        ("pair_residual_ns", np.int64),
        ("pair_conf", np.float64),
    ]:
        assert getattr(r, name).dtype == dtype, name
        assert getattr(r, name).shape == (1,), name
    # Model 1 never picked: its rows exist and are all zero.
    assert not r.emitted[1].any() and not r.cal_n[1].any()


def test_greedy_counter_example_counts():
    # SPEC §3: arrivals 10.0, 10.7; picks 10.25 (0.9), 9.6 (0.5); tol 0.5.
    # θ = 0.1, 0.3, 0.5 (both picks survive; 0.5 >= 0.5): 10.25 takes 10.0, 9.6
    # finds nothing -> emitted 2, matched 1.  9.6 is extra and 0.4 s from 10.0 ->
    # a duplicate.  θ = 0.7: only 10.25 -> emitted 1, matched 1.
    o = Options(**SMALL)
    r = run([(P, 10.0), (P, 10.7)], [(0, P, 10.25, 0.9), (0, P, 9.6, 0.5)], options=o)
    assert r.n_reference.tolist() == [2, 0]
    assert r.emitted[0, P].tolist() == [2, 2, 2, 1]
    assert r.matched[0, P].tolist() == [1, 1, 1, 1]
    assert r.duplicates[0, P].tolist() == [1, 1, 1, 0]
    assert r.swapped[0, P].tolist() == [0, 0, 0, 0]
    # Nothing at all for S.
    assert not r.emitted[0, S].any() and not r.matched[0, S].any()


def test_confident_farther_pick_wins_and_sets_the_residual():
    # Arrival 5.0; picks 5.1 (0.5), 5.4 (0.9); tol 0.5, residual_tol 2.0.
    # Detection: 5.4 goes first and takes 5.0 (0.4 <= 0.5); 5.1 is extra,
    # within tol of 5.0 -> duplicate at θ <= 0.5.  At 0.7 only 5.4 remains.
    # Residual matching (2.0): same order, same pair -> one residual,
    # +0.4 s = +400_000_000 ns with conf 0.9, not the nearer pick's +0.1 s.
    o = Options(**SMALL)
    r = run([(P, 5.0)], [(0, P, 5.1, 0.5), (0, P, 5.4, 0.9)], options=o)
    assert r.emitted[0, P].tolist() == [2, 2, 2, 1]
    assert r.matched[0, P].tolist() == [1, 1, 1, 1]
    assert r.duplicates[0, P].tolist() == [1, 1, 1, 0]
    assert r.pair_residual_ns.tolist() == [400_000_000]
    assert r.pair_conf.tolist() == [0.9]
    assert r.pair_model.tolist() == [0] and r.pair_phase.tolist() == [P]


def test_duplicates():
    # P arrival 10.0; model 0 P picks 10.1 (0.9), 10.3 (0.6), 12.0 (0.5),
    # 9.7 (0.2) and 10.2 (0.05, below the floor 0.1: takes part in nothing).
    # Confidence order 10.1, 10.3, 12.0, 9.7:
    #   10.1 takes 10.0.  10.3: 10.0 taken -> extra; |10.3-10.0| = 0.3 <= 0.5 -> duplicate.
    #   12.0: extra, 2.0 s from the only arrival -> not a duplicate.
    #   9.7: extra, 0.3 s from 10.0 -> duplicate.
    # θ=0.1: emitted 4, matched 1, duplicates 2 (10.3, 9.7)
    # θ=0.3: emitted 3 (9.7 gone), matched 1, duplicates 1
    # θ=0.5: emitted 3 (12.0 has conf exactly 0.5: survives), matched 1, dup 1
    # θ=0.7: emitted 1, matched 1, duplicates 0
    o = Options(**SMALL)
    picks = [(0, P, 10.1, 0.9), (0, P, 10.3, 0.6), (0, P, 12.0, 0.5), (0, P, 9.7, 0.2), (0, P, 10.2, 0.05)]
    r = run([(P, 10.0)], picks, options=o)
    assert r.emitted[0, P].tolist() == [4, 3, 3, 1]
    assert r.matched[0, P].tolist() == [1, 1, 1, 1]
    assert r.duplicates[0, P].tolist() == [2, 1, 1, 0]
    # Calibration sees the 4 picks >= floor, not the 0.05 one.
    assert int(r.cal_n[0, P].sum()) == 4


def test_swaps_and_a_matched_arrival_is_never_a_swap():
    # Arrivals: P 10.0, S 15.0.  tol 0.5.
    # Model 0: P pick 15.2 (0.8), S pick 15.1 (0.4).
    # Model 1: S pick 10.3 (0.6), no P picks.
    #
    # Model 0, S arrival 15.0: at θ = 0.1, 0.3 the S pick 15.1 (0.4) matches it,
    #   so it is not a swap although the P pick 15.2 (0.8) lies 0.2 s away.
    #   At θ = 0.5, 0.7 the S pick is gone, the arrival is unmatched and the P
    #   pick (0.8 >= θ) is within tol -> swapped S = [0, 0, 1, 1].
    # Model 0, P arrival 10.0: unmatched (15.2 is 5.2 s away); no S pick of
    #   model 0 near 10.0 -> swapped P = 0.  The P pick 15.2 is extra, not a
    #   duplicate (no P arrival within tol).
    # Model 1, P arrival 10.0: no P picks; the S pick 10.3 (0.6) lies 0.3 s away
    #   -> swapped P = 1 at θ = 0.1, 0.3, 0.5, and 0 at 0.7 (0.6 < 0.7).
    # Model 1, S arrival 15.0: the S pick 10.3 is far; model 1 has no P pick
    #   (model 0's P pick at 15.2 does not count: same model only) -> swapped S = 0.
    o = Options(**SMALL)
    picks = [(0, P, 15.2, 0.8), (0, S, 15.1, 0.4), (1, S, 10.3, 0.6)]
    r = run([(P, 10.0), (S, 15.0)], picks, options=o, n_models=2)
    assert r.n_reference.tolist() == [1, 1]
    assert r.swapped[0, S].tolist() == [0, 0, 1, 1]
    assert r.swapped[0, P].tolist() == [0, 0, 0, 0]
    assert r.swapped[1, P].tolist() == [1, 1, 1, 0]
    assert r.swapped[1, S].tolist() == [0, 0, 0, 0]
    assert r.matched[0, S].tolist() == [1, 1, 0, 0]
    assert r.emitted[0, P].tolist() == [1, 1, 1, 1]
    assert r.matched[0, P].tolist() == [0, 0, 0, 0]
    assert r.duplicates[0, P].tolist() == [0, 0, 0, 0]
    assert r.emitted[1, S].tolist() == [1, 1, 1, 0]
    assert r.matched[1, S].tolist() == [0, 0, 0, 0]


def test_residual_matching_is_separate_from_detection():
    # Arrivals P 10.0, S 20.0; tol 0.5, residual_tol 2.0.
    # Model 0 P picks 11.5 (0.9), 10.2 (0.4); S picks 19.0 (0.6), 20.0 (0.35).
    # Model 1 P pick 9.9 (0.2).
    #
    # Detection (tol 0.5), model 0 P: 11.5 is 1.5 s off -> unmatched; 10.2 takes 10.0.
    #   θ: 0.1, 0.3 -> emitted 2, matched 1; 0.5, 0.7 -> emitted 1 (11.5), matched 0.
    # Residual (2.0), model 0 P: 11.5 goes first and takes 10.0 (+1.5 s); 10.2
    #   then finds 10.0 taken.  So the residual pair is 11.5-10.0, not 10.2-10.0.
    # Detection, model 0 S: 19.0 is 1.0 s off -> unmatched; 20.0 (0.35) takes 20.0.
    #   θ: 0.1, 0.3 -> emitted 2, matched 1; 0.5 -> emitted 1, matched 0; 0.7 -> 0, 0.
    # Residual, model 0 S: 19.0 (0.6) takes 20.0 (-1.0 s).
    # Model 1 P: 9.9 takes 10.0 in both matchings (-0.1 s), conf 0.2.
    # Pairs sorted by (model, phase, residual, conf):
    #   (0, P, +1.5 s, 0.9), (0, S, -1.0 s, 0.6), (1, P, -0.1 s, 0.2).
    o = Options(tol=0.5, residual_tol=2.0, **SMALL)
    picks = [
        (1, P, 9.9, 0.2),
        (0, S, 20.0, 0.35),
        (0, P, 10.2, 0.4),
        (0, S, 19.0, 0.6),
        (0, P, 11.5, 0.9),
    ]
    r = run([(S, 20.0), (P, 10.0)], picks, options=o, n_models=2)
    assert r.emitted[0, P].tolist() == [2, 2, 1, 1]
    assert r.matched[0, P].tolist() == [1, 1, 0, 0]
    assert r.emitted[0, S].tolist() == [2, 2, 1, 0]
    assert r.matched[0, S].tolist() == [1, 1, 0, 0]
    assert r.pair_model.tolist() == [0, 0, 1]
    assert r.pair_phase.tolist() == [P, S, P]
    assert r.pair_residual_ns.tolist() == [1_500_000_000, -1_000_000_000, -100_000_000]
    assert r.pair_conf.tolist() == [0.9, 0.6, 0.2]


def test_pairs_sorted_by_residual_then_conf_within_a_stream():
    # Three P arrivals 10, 20, 30 and picks with residuals +0.3 (0.5), -0.2 (0.9),
    # +0.3 (0.4) -> sorted by residual, then conf: (-0.2, 0.9), (+0.3, 0.4), (+0.3, 0.5).
    o = Options(**SMALL)
    picks = [(0, P, 10.3, 0.5), (0, P, 19.8, 0.9), (0, P, 30.3, 0.4)]
    r = run([(P, 10.0), (P, 20.0), (P, 30.0)], picks, options=o)
    assert r.pair_residual_ns.tolist() == [-200_000_000, 300_000_000, 300_000_000]
    assert r.pair_conf.tolist() == [0.9, 0.4, 0.5]


def test_inclusive_tolerance_in_the_kernel():
    # tol 0.5: a pick exactly 0.5 s late matches; one 0.5 s + 1 ns late does not
    # (but lies within residual_tol 2.0, so it still has a residual pair).
    o = Options(**SMALL)
    a = 100 * 10**9
    for delta, matched in [(500_000_000, 1), (500_000_001, 0)]:
        r = score_station(
            np.array([P], np.int8),
            np.array([a], np.int64),
            np.array([0], np.int32),
            np.array([P], np.int8),
            np.array([a + delta], np.int64),
            np.array([0.9]),
            n_models=1,
            options=o,
        )
        assert r.matched[0, P].tolist() == [matched] * 4, delta
        assert r.duplicates[0, P].tolist() == [0] * 4, delta  # extra but not within tol
        assert r.pair_residual_ns.tolist() == [delta]


def test_calibration_counts_and_bins():
    # Default grid (floor 0.02).  P arrivals 10, 20, 30, 40.  Picks (conf order):
    #   10.0 (1.0)  takes 10      hit   bin min(floor(10.0), 9) = 9
    #   20.1 (0.7)  takes 20      hit   bin 7 (0.7*10 = 7.0 in float64)
    #   50.0 (0.64) nothing near  miss  bin 6
    #   35.0 (0.6)  5 s from 30/40 miss bin 6
    #   40.2 (0.3)  takes 40      hit   bin 3
    #   60.0 (0.02) = the floor   miss  bin 0 (>= floor: included)
    #   30.0 (0.01) below floor   ignored (would otherwise have taken 30)
    # cal_n    = bin0 1, bin3 1, bin6 2, bin7 1, bin9 1
    # cal_hits = bin0 0, bin3 1, bin6 0, bin7 1, bin9 1
    # cal_conf = bin0 0.02, bin3 0.3, bin6 1.24, bin7 0.7, bin9 1.0
    # brier_sum = Σ (conf − hit)² = (0.02−0)² + (0.3−1)² + (0.64−0)² + (0.6−0)² + (0.7−1)² + (1−1)²
    #           = 0.0004 + 0.49 + 0.4096 + 0.36 + 0.09 + 0 = 1.35
    o = Options()
    picks = [
        (0, P, 35.0, 0.6),
        (0, P, 10.0, 1.0),
        (0, P, 60.0, 0.02),
        (0, P, 40.2, 0.3),
        (0, P, 30.0, 0.01),
        (0, P, 20.1, 0.7),
        (0, P, 50.0, 0.64),
    ]
    r = run([(P, t) for t in (10.0, 20.0, 30.0, 40.0)], picks, options=o)
    assert r.cal_n[0, P].tolist() == [1, 0, 0, 1, 0, 0, 2, 1, 0, 1]
    assert r.cal_hits[0, P].tolist() == [0, 0, 0, 1, 0, 0, 0, 1, 0, 1]
    np.testing.assert_allclose(
        r.cal_conf[0, P], [0.02, 0, 0, 0.3, 0, 0, 1.24, 0.7, 0, 1.0], rtol=1e-12, atol=0
    )
    np.testing.assert_allclose(r.brier_sum[0, P], 1.35, rtol=1e-12)
    # Hits are the detection matching of all picks >= floor: 3 pairs, which is
    # also matched at the floor.
    assert r.matched[0, P, 0] == 3 and r.emitted[0, P, 0] == 6
    assert not r.cal_n[0, S].any() and r.brier_sum[0, S] == 0.0


def test_below_floor_picks_take_part_in_nothing():
    # Floor 0.1; a single pick of conf 0.05 exactly on the arrival: no emitted,
    # no fine points, no calibration entry, no residual pair.
    o = Options(**SMALL)
    r = run([(P, 10.0), (S, 12.0)], [(0, P, 10.0, 0.05), (0, S, 10.0, 0.05)], options=o)
    assert r.n_reference.tolist() == [1, 1]
    assert not r.emitted.any() and not r.matched.any() and not r.duplicates.any()
    assert not r.swapped.any()
    assert not r.fine_emitted.any() and not r.cal_n.any()
    assert r.brier_sum.tolist() == [[0.0, 0.0]]
    assert r.pair_residual_ns.size == 0


def test_fine_curve():
    # Floor 0.1 -> fine θ_k = k/1000, k = 100…1000 (901 points, index k - 100).
    # P arrival 10.0; picks 10.1 (0.9) takes it; 10.3 (0.45) duplicate; 15.0 (0.123).
    # emitted: 3 for k <= 123 (0.123 >= 0.123: inclusive), 2 for 124…450,
    #          1 for 451…900, 0 for 901…1000.
    # matched: 1 for k <= 900, 0 above.
    o = Options(**SMALL)
    r = run([(P, 10.0)], [(0, P, 10.3, 0.45), (0, P, 15.0, 0.123), (0, P, 10.1, 0.9)], options=o)
    k = np.arange(100, 1001)
    np.testing.assert_array_equal(o.fine, k / 1000)
    expected_emitted = np.select([k <= 123, k <= 450, k <= 900], [3, 2, 1], 0)
    expected_matched = (k <= 900).astype(np.int64)
    np.testing.assert_array_equal(r.fine_emitted[0, P], expected_emitted)
    np.testing.assert_array_equal(r.fine_matched[0, P], expected_matched)
    assert not r.fine_emitted[0, S].any()


def test_no_arrivals_of_a_phase():
    # S picks but no S arrivals: every S pick is extra, none a duplicate, no
    # swaps (there is no S arrival to swap), n_reference[S] = 0.
    o = Options(**SMALL)
    r = run([(P, 10.0)], [(0, S, 10.0, 0.9), (0, S, 10.2, 0.8)], options=o)
    assert r.n_reference.tolist() == [1, 0]
    assert r.emitted[0, S].tolist() == [2, 2, 2, 2]
    assert not r.matched[0, S].any() and not r.duplicates[0, S].any()
    # The P arrival at 10.0 is unmatched and S picks lie within tol -> P swap.
    assert r.swapped[0, P].tolist() == [1, 1, 1, 1]
    assert not r.swapped[0, S].any()


@pytest.mark.parametrize("offset_s", [0, 1_700_000_000])
def test_epoch_scale_times_keep_nanoseconds(offset_s):
    # At 1.7e9 s since 1970 a float64 in ns has a spacing of 256 ns; the kernel
    # must compare int64 ns.  Pick 0.5 s + 1 ns after the arrival: unmatched at
    # tol 0.5; residual exactly 500_000_001 ns.
    o = Options(**SMALL)
    a = offset_s * 10**9 + 3 * 10**9
    r = score_station(
        np.array([P, P], np.int8),
        np.array([a, a + 10 * 10**9], np.int64),
        np.array([0, 0], np.int32),
        np.array([P, P], np.int8),
        np.array([a + 500_000_001, a + 10 * 10**9 - 500_000_000], np.int64),
        np.array([0.9, 0.8]),
        n_models=1,
        options=o,
    )
    # Second pick is exactly 0.5 s early on the second arrival -> matched.
    assert r.matched[0, P].tolist() == [1, 1, 1, 1]
    assert sorted(r.pair_residual_ns.tolist()) == [-500_000_000, 500_000_001]


def test_calibration_bin_is_floor_of_conf_times_ten_in_float64():
    # The float64 just below 0.7 is 0.6999999999999998; times 10 it is
    # 6.999999999999998 -> bin 6 (float32 or decimal rounding would say 7).
    # Likewise just below 0.3 -> 2.999999999999999 -> bin 2; just above 0.3
    # -> 3.0000000000000004 -> bin 3; 0.3 itself -> 3.0 -> bin 3; the float64
    # just below 1.0 -> 9.999999999999998 -> bin 9; 1.0 -> 10 -> capped at 9.
    o = Options()
    confs = [np.nextafter(0.7, 0), np.nextafter(0.3, 0), np.nextafter(0.3, 1), 0.3, np.nextafter(1.0, 0), 1.0]
    picks = [(0, P, 100.0 + i, float(c)) for i, c in enumerate(confs)]  # no arrivals near: all misses
    r = run([(P, 10.0)], picks, options=o)
    #                              bin: 0  1  2  3  4  5  6  7  8  9
    assert r.cal_n[0, P].tolist() == [0, 0, 1, 2, 0, 0, 1, 0, 0, 2]


def test_equal_conf_earlier_pick_goes_first_in_the_kernel():
    # Arrival 5.0; picks 5.1 and 4.6, both conf 0.6.  The earlier (4.6) goes
    # first and takes 5.0 in both matchings, though 5.1 is nearer.  Detection
    # counts cannot tell (1 matched, 1 duplicate either way); the residual can:
    # -0.4 s, not +0.1 s.
    o = Options(**SMALL)
    r = run([(P, 5.0)], [(0, P, 5.1, 0.6), (0, P, 4.6, 0.6)], options=o)
    assert r.matched[0, P].tolist() == [1, 1, 1, 0]
    assert r.duplicates[0, P].tolist() == [1, 1, 1, 0]
    assert r.pair_residual_ns.tolist() == [-400_000_000]
