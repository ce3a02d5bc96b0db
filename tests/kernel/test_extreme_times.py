"""Times anywhere in int64 nanoseconds (pandas' 1677-09-21 … 2262-04-11), and options int64 can hold (issues 15, 16).

* A stray placeholder pick far from a station's other rows (``1800-01-01`` among picks of 2020) used to
  overflow the kernel's shifted keys: picks paired with arrivals of the other phase, real matches vanished.
  Here such a pick changes nothing but the counts of one more emitted, unmatched pick.
* The kernel equals the brute force of ``tests/helpers/brute.py`` (Python integers throughout) with times spread
  over the *whole* int64 range, ``-2**63 … 2**63 - 1``: the kernel accepts any int64 time.
* Tolerances beyond 1e6 s and budgets beyond 2**53 are refused as :class:`OptionsError` naming the option
  (the CLI: exit 2, no traceback) instead of an ``OverflowError``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pickscale
from pickscale.cli import main
from pickscale.errors import OptionsError
from pickscale.kernel import candidate_cuts, cut_points, greedy_match, merge_results, score_station, windows
from pickscale.options import Options
from tests.helpers import brute
from tests.helpers.against_brute import check_against_brute
from tests.helpers.examples import examples
from tests.helpers.strategies import JITTER_NS, STEPS_NS, Case, options_st

S = 10**9
I64 = np.iinfo(np.int64)
PD_MIN, PD_MAX = pd.Timestamp.min.value, pd.Timestamp.max.value  # -2**63 + 1, 2**63 - 1

# --------------------------------------------------------------------------- public API


def _frames(extra_picks=()):
    ref = pd.DataFrame({"station": ["A", "A"], "phase": ["P", "S"],
                        "time": ["2020-01-01T00:00:10Z", "2020-01-01T00:00:20Z"]})
    rows = [("m", "A", "P", "2020-01-01T00:00:10.1Z", 0.9), ("m", "A", "S", "2020-01-01T00:00:20.3Z", 0.5)]
    rows += list(extra_picks)
    picks = pd.DataFrame(rows, columns=["model", "station", "phase", "time", "conf"])
    return ref, picks


def _tables(extra_picks=()):
    return pickscale.tables(pickscale.score(*_frames(extra_picks)))


def _row(table, phase):
    rows = table[table["phase"] == phase]
    assert len(rows) == 1
    return rows.iloc[0]


@pytest.mark.slow
def test_stray_early_pick_changes_only_its_own_counts():
    # Issue 16's reproducer.  Default options: tol 0.5 s, residual_tol 2 s, threshold 0.3.
    # Without the stray pick: P 10.1 takes the P arrival at 10.0 (residual +0.1 s), S 20.3 takes the S
    # arrival at 20.0 (+0.3 s): both phases recall 1/1, precision 1/1, one residual each.
    # The stray P pick (1800-01-01, conf 0.5 >= 0.3) is 220 years from every arrival: it is emitted and
    # unmatched, nothing else.  P: emitted 2, matched 1, recall 1/1 = 1.0, precision_lb 1/2 = 0.5,
    # f1_lb 2·1/(1 + 2) = 2/3, extra_rate (2 − 1)/1 = 1.0, duplicate_rate 0/1 = 0 (it is near no arrival);
    # timing P: n 1, mae 0.1 s; S untouched: mae 0.3 s.
    # (Before the fix: P recall 0.0 and an S residual of 10.3 s.)
    base = _tables()
    got = _tables([("m", "A", "P", "1800-01-01T00:00:00Z", 0.5)])

    p, p0 = _row(got["detection"], "P"), _row(base["detection"], "P")
    assert (p["n_reference"], p["emitted"], p["matched"]) == (1, 2, 1)
    assert p["recall"] == 1.0 and p["precision_lb"] == 0.5 and p["extra_rate"] == 1.0
    assert p["f1_lb"] == pytest.approx(2 / 3, rel=1e-15) and p["duplicate_rate"] == 0.0
    assert (p0["emitted"], p0["matched"], p0["recall"], p0["precision_lb"]) == (1, 1, 1.0, 1.0)
    for name in ("n_reference", "matched", "recall"):
        assert p[name] == p0[name], name
    assert p["emitted"] == p0["emitted"] + 1
    pd.testing.assert_series_equal(_row(got["detection"], "S"), _row(base["detection"], "S"))

    # Onset times: identical to the run without the stray pick, and as worked out by hand.
    pd.testing.assert_frame_equal(got["timing"], base["timing"])
    tp, ts = _row(got["timing"], "P"), _row(got["timing"], "S")
    assert tp["n_pairs"] == 1 and tp["mae"] == pytest.approx(0.1, rel=1e-12) and tp["gross_error_rate"] == 0.0
    assert ts["n_pairs"] == 1 and ts["mae"] == pytest.approx(0.3, rel=1e-12) and ts["gross_error_rate"] == 0.0


@pytest.mark.slow
def test_picks_in_1678_and_2261_leave_timing_alone():
    # Two placeholder picks near both ends of pandas' range, on the scored station, both phases.
    # They are emitted and unmatched; every residual and timing statistic equals the run without them
    # (before the fix: MAE 4.9e7 s at a 2 s residual tolerance).
    extra = [("m", "A", "P", "1678-01-01T00:00:00Z", 0.8), ("m", "A", "S", "2261-12-31T00:00:00Z", 0.8)]
    base, got = _tables(), _tables(extra)
    pd.testing.assert_frame_equal(got["timing"], base["timing"])
    for phase in ("P", "S"):
        g, b = _row(got["detection"], phase), _row(base["detection"], phase)
        assert (g["matched"], g["recall"], g["emitted"]) == (b["matched"], b["recall"], b["emitted"] + 1)


# Origins putting the reproducer's rows at the ends of pandas' range (-2**63 + 1 … 2**63 - 1 ns,
# 1677-09-21T00:12:43.145224193 … 2262-04-11T23:47:16.854775807): at the low end the P arrival falls on
# 00:12:44 and its pick 0.1 s later, at the high end the S pick on 23:47:16.8, each less than residual_tol
# (2 s) from the end.
ENDS = {"1677": -(PD_MAX // S) * S - 10 * S, "2262": (PD_MAX // S) * S - 20 * S + S // 2}


@pytest.mark.slow
@pytest.mark.parametrize("end", sorted(ENDS))
def test_times_at_the_ends_of_pandas_range_score(end):
    # The same rows must score exactly like in 2020: every number of SPEC §4–§7 depends only on
    # differences of times.
    iso = lambda ns: pd.Timestamp(ns).isoformat() + "Z"  # noqa: E731
    origin = ENDS[end]
    ref = pd.DataFrame({"station": ["A", "A"], "phase": ["P", "S"],
                        "time": [iso(origin + 10 * S), iso(origin + 20 * S)]})
    picks = pd.DataFrame({"model": ["m", "m"], "station": ["A", "A"], "phase": ["P", "S"], "conf": [0.9, 0.5],
                          "time": [iso(origin + 10_100_000_000), iso(origin + 20_300_000_000)]})
    got, base = pickscale.tables(pickscale.score(ref, picks)), _tables()
    for name in ("detection", "timing", "calibration"):
        pd.testing.assert_frame_equal(got[name], base[name], check_exact=True)


# --------------------------------------------------------------------------- kernel = brute force, any int64

# Centres of the clusters of rows: the int64 limits, pandas' limits, the epoch, 2020, 1800, and anywhere; clusters
# 2**59 … 2**61 apart make the kernel shift its streams apart in several batches, wider spans stream by stream.
EDGES = [I64.min, I64.max, PD_MIN, PD_MAX, 0, 1_577_836_800 * S, pd.Timestamp("1800-01-01").value,
         -(2**62), 2**62]
GAPS = [2**59 + 2**58, 2**60, 2**61 - 2**40, 2**61, 2**62, 2**63, 2**64 - 1, 220 * 365 * 86_400 * S]


@st.composite
def extreme_stations(draw):
    """Like ``test_properties.stations`` (lattice times, ties, duplicates), in up to three clusters anywhere in int64.

    Times are clipped to int64, so rows pile up exactly on ``-2**63`` and ``2**63 - 1``.
    """
    options = draw(options_st())
    step = draw(st.sampled_from(STEPS_NS))
    # A first centre, and up to two more at a drawn distance from it (towards the other end of int64).
    base = draw(st.one_of(st.sampled_from(EDGES), st.integers(I64.min, I64.max)))
    gap = st.one_of(st.sampled_from(GAPS), st.integers(0, 2**64 - 1))
    gaps = [draw(gap) for _ in range(draw(st.sampled_from([1, 2, 0])))]
    centres = [base] + [min(max(base - g if base > 0 else base + g, I64.min), I64.max) for g in gaps]
    n_slots = draw(st.integers(2, 10))
    n_models = draw(st.integers(1, 3))
    conf_den = draw(st.sampled_from([10, 20]))

    def at(c, slot, jitter):
        return min(max(centres[c] + (slot - n_slots // 2) * step + jitter, I64.min), I64.max)

    n_c = len(centres)
    arrivals = draw(st.lists(st.tuples(st.integers(0, 1), st.integers(0, n_c - 1), st.integers(0, n_slots),
                                       st.sampled_from(JITTER_NS)), min_size=1, max_size=8))
    picks = draw(st.lists(st.tuples(st.integers(0, n_models - 1), st.integers(0, 1), st.integers(0, n_c - 1),
                                    st.integers(-2, n_slots + 2), st.sampled_from(JITTER_NS),
                                    st.integers(0, conf_den)), min_size=1, max_size=14))
    # SPEC §1: duplicate reference rows are kept once before scoring; duplicate pick rows are kept.
    # Row i goes to cluster (drawn + i) mod n_c, so that every cluster has rows (hypothesis favours small draws).
    arrival_rows = sorted({(ph, at((c + i) % n_c, s, j)) for i, (ph, c, s, j) in enumerate(arrivals)})
    return Case(
        options=options,
        n_models=n_models,
        arrival_phase=np.array([a[0] for a in arrival_rows], dtype=np.int8),
        arrival_time=np.array([a[1] for a in arrival_rows], dtype=np.int64),
        pick_model=np.array([p[0] for p in picks], dtype=np.int32),
        pick_phase=np.array([p[1] for p in picks], dtype=np.int8),
        pick_time=np.array([at((c + i) % n_c, s, j) for i, (_m, _p, c, s, j, _c) in enumerate(picks)], dtype=np.int64),
        pick_conf=np.array([p[5] / conf_den for p in picks], dtype=np.float64),
    )


@pytest.mark.slow
@settings(max_examples=examples(100))
@given(case=extreme_stations())
def test_kernel_equals_brute_force_over_all_of_int64(case):
    check_against_brute(case)


@pytest.mark.slow
@settings(max_examples=100)
@given(data=st.data())
def test_greedy_match_at_the_int64_limits(data):
    # Arrivals and picks on a lattice hugging one end of int64 (clipped there): windows must saturate.
    edge = data.draw(st.sampled_from([I64.min, I64.max]))
    sign = 1 if edge == I64.min else -1
    step = data.draw(st.sampled_from(STEPS_NS))
    clip = lambda t: min(max(t, I64.min), I64.max)  # noqa: E731
    arrivals = sorted(clip(edge + sign * s * step + j) for s, j in data.draw(
        st.lists(st.tuples(st.integers(0, 8), st.sampled_from(JITTER_NS)), max_size=6)))
    picks = data.draw(st.lists(st.tuples(st.integers(-1, 9), st.sampled_from(JITTER_NS), st.integers(0, 20)),
                               max_size=10))
    times = np.array([clip(edge + sign * s * step + j) for s, j, _ in picks], dtype=np.int64)
    conf = np.array([c / 20 for *_, c in picks], dtype=np.float64)
    tol_ns = data.draw(st.sampled_from([0, step // 2, step, 2 * S, 10**6 * S]))
    got = greedy_match(np.array(arrivals, dtype=np.int64), times, conf, tol_ns=tol_ns)
    ref = brute.walk(arrivals, list(zip(times.tolist(), conf.tolist())), tol_ns)
    assert sorted(zip(times.tolist(), conf.tolist(), got.tolist())) == sorted(zip(times.tolist(), conf.tolist(), ref))


def test_windows_saturate_at_the_int64_limits():
    times = np.array([I64.min, I64.min + 5, 0, I64.max - 5, I64.max], dtype=np.int64)
    lo, hi = windows(times, np.array([I64.min, I64.max, 0], dtype=np.int64), 10)
    assert lo.tolist() == [0, 3, 2] and hi.tolist() == [2, 5, 3]


def test_stray_pick_hand_worked_kernel():
    # The reproducer on the kernel: arrivals P 10 s, S 20 s of 2020; picks P 10.1 (0.9), S 20.3 (0.5) and a
    # P placeholder at 1800-01-01 (0.5).  Pairs: P +0.1 s, S +0.3 s; P emitted 2 / matched 1 at θ = 0.3.
    t2020, t1800 = pd.Timestamp("2020-01-01").value, pd.Timestamp("1800-01-01").value
    r = score_station([0, 1], [t2020 + 10 * S, t2020 + 20 * S], [0, 0, 0], [0, 1, 0],
                      [t2020 + 10_100_000_000, t2020 + 20_300_000_000, t1800], [0.9, 0.5, 0.5],
                      n_models=1, options=Options(thresholds=[0.3]))
    assert r.emitted[0, :, 0].tolist() == [2, 1] and r.matched[0, :, 0].tolist() == [1, 1]
    assert r.swapped.sum() == 0 and r.duplicates.sum() == 0
    assert r.pair_phase.tolist() == [0, 1] and r.pair_residual_ns.tolist() == [100_000_000, 300_000_000]


def test_blocks_over_the_whole_range_add_up():
    # Arrivals at both ends of int64 and in 2020: every gap is a cut candidate, no cut wraps around, and
    # blocks cut there add up to the whole station.
    t2020 = pd.Timestamp("2020-01-01").value
    arrivals = np.array([I64.min, t2020, I64.max], dtype=np.int64)
    rtol = 2 * S
    cand = candidate_cuts(arrivals, rtol)
    # One candidate per quiet gap (a_i + rtol + 1); none before -2**63 or after 2**63 - 1 (no time lies there).
    assert cand.tolist() == [I64.min + rtol + 1, t2020 + rtol + 1]
    # Even split of the whole range: -2**62 is nearest the first candidate, 0 and 2**62 the second.
    cuts = cut_points(arrivals, residual_tol_ns=rtol, span=(I64.min, I64.max), n_blocks=4)
    assert cuts.tolist() == cand.tolist()
    a_phase = np.array([0, 1, 0], dtype=np.int8)
    p_time = np.array([I64.min, I64.min + S, t2020 - S // 10, t2020 + S // 5, I64.max - S, I64.max], dtype=np.int64)
    p_phase = np.array([0, 1, 1, 1, 0, 0], dtype=np.int8)
    p_conf = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    opts = Options(thresholds=[0.1, 0.5])
    whole = score_station(a_phase, arrivals, np.zeros(6, np.int32), p_phase, p_time, p_conf, n_models=1, options=opts)
    a_block, p_block = np.searchsorted(cuts, arrivals, side="right"), np.searchsorted(cuts, p_time, side="right")
    parts = [score_station(a_phase[a_block == b], arrivals[a_block == b], np.zeros(int((p_block == b).sum()), np.int32),
                           p_phase[p_block == b], p_time[p_block == b], p_conf[p_block == b], n_models=1, options=opts)
             for b in range(cuts.size + 1)]
    assert merge_results(parts).equals(whole)
    # By hand (tol 0.5 s, residual_tol 2 s, θ = 0.1): P -2**63 takes its arrival (0 s); near 2**63 - 1 the pick
    # 1 s early (0.5) is out of tol but takes the arrival in the residual matching (−1 s), the pick on it (0.4)
    # takes it at tol.  S: 2020 − 0.1 s (0.7) takes the S arrival, 2020 + 0.2 s (0.6) is a duplicate; the S pick
    # 1 s after -2**63 is 1 s from the P arrival there (no swap).
    assert whole.matched[0, :, 0].tolist() == [2, 1] and whole.emitted[0, :, 0].tolist() == [3, 3]
    assert whole.duplicates[0, :, 0].tolist() == [0, 1] and whole.swapped.sum() == 0
    assert whole.pair_phase.tolist() == [0, 0, 1] and whole.pair_residual_ns.tolist() == [-S, 0, -S // 10]


# --------------------------------------------------------------------------- option bounds (issue 15)


@pytest.mark.parametrize("kwargs, name", [
    (dict(tol=1e10, residual_tol=1e10), "tol"),
    (dict(tol=1e6 + 1, residual_tol=2e6), "tol"),
    (dict(residual_tol=5e9), "residual_tol"),
    (dict(residual_tol=3.5e9), "residual_tol"),
    (dict(residual_tol=1e6 + 0.5), "residual_tol"),
    (dict(budget=10**20), "budget"),
    (dict(budget=2**53 + 1), "budget"),
    (dict(budget=float("inf")), "budget"),
    (dict(budget=1e30), "budget"),
])
def test_out_of_range_options_are_refused(kwargs, name):
    with pytest.raises(OptionsError) as info:
        Options(**kwargs)
    # The library names the option as the API does; the CLI maps ``options`` to its flags.
    assert str(info.value).startswith(f"{name} "), str(info.value)
    assert name in info.value.options


def test_option_bounds_are_exact():
    # At the bounds: accepted; one step beyond: refused.  tol = 0 stays legal (SPEC §3: exact times only).
    o = Options(tol=1e6, residual_tol=1e6, budget=2**53)
    assert o.tol_ns == o.residual_tol_ns == 10**15 and o.budget == 2**53
    assert Options(tol=0.0).tol_ns == 0
    for kwargs in (dict(residual_tol=np.nextafter(1e6, 2e6)), dict(budget=2**53 + 1)):
        with pytest.raises(OptionsError):
            Options(**kwargs)


def test_cli_refuses_a_huge_tolerance_with_exit_2(tmp_path, capsys):
    ref, picks = _frames()
    ref.to_csv(tmp_path / "ref.csv", index=False)
    picks.to_csv(tmp_path / "picks.csv", index=False)
    cases = ((["--tol", "1e10", "--residual-tol", "1e10"], "--tol"), (["--residual-tol", "5e9"], "--residual-tol"),
             (["--budget", str(10**20)], "--budget"))
    for flags, name in cases:
        code = main(["score", "--reference", str(tmp_path / "ref.csv"), "--picks", str(tmp_path / "picks.csv"),
                     "--out", str(tmp_path / "out"), "--workers", "1", *flags])
        _, err = capsys.readouterr()
        assert code == 2, err
        assert name in err and "Traceback" not in err and "OverflowError" not in err
        assert not (tmp_path / "out").exists()
