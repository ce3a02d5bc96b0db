"""Time blocks (issue 5): cuts only where nothing interacts, and blocks add up to the whole station bit for bit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pickscale
from pickscale.engine.units import plan_units
from pickscale.kernel import (
    Partial,
    block_of,
    candidate_cuts,
    combine_partials,
    cut_points,
    merge_results,
    score_station,
)
from pickscale.options import Options
from pickscale.report.tables import to_csv_bytes
from tests.helpers.examples import examples

S = 1_000_000_000


def test_candidate_cuts_by_hand():
    # rtol = 10: arrivals 100 and 105 are closer than 2·rtol + 2 = 22, so no cut between them;
    # 105 → 200 is a quiet gap: cut at 105 + 11 = 116; before the first: 89; after the last: 211.
    assert candidate_cuts(np.array([105, 100, 200, 100]), 10).tolist() == [89, 116, 211]
    # A gap of exactly 2·rtol + 1 = 21 is too short: its middle would be within rtol of one side.
    assert candidate_cuts(np.array([0, 21]), 10).tolist() == [-11, 32]
    assert candidate_cuts(np.array([0, 22]), 10).tolist() == [-11, 11, 33]


def test_cut_points_pick_the_nearest_admissible_time():
    # Even split of (0, 400) in 4 wants 100, 200, 300; nearest candidates 89, 211, 311.
    cuts = cut_points(np.array([100, 105, 200, 300]), residual_tol_ns=10, span=(0, 400), n_blocks=4)
    assert cuts.tolist() == [89, 211, 311]
    # A burst with no quiet gap inside the span cannot be cut.
    burst = np.arange(0, 1000, 15)
    assert cut_points(burst, residual_tol_ns=10, span=(0, 990), n_blocks=8).tolist() == []


def test_block_of_is_right_closed():
    assert block_of(np.array([88, 89, 90]), np.array([89])).tolist() == [0, 1, 1]


@pytest.mark.slow
@settings(max_examples=200)
@given(
    arrivals=st.lists(st.integers(0, 400), min_size=1, max_size=30),
    rtol=st.integers(0, 20),
    n_blocks=st.integers(2, 12),
)
def test_no_arrival_within_rtol_of_a_cut(arrivals, rtol, n_blocks):
    a = np.array(arrivals, dtype=np.int64)
    cuts = cut_points(a, residual_tol_ns=rtol, span=(int(a.min()) - 50, int(a.max()) + 50), n_blocks=n_blocks)
    for c in cuts:
        assert np.all(np.abs(a - c) > rtol)


@pytest.mark.slow
@settings(max_examples=examples(75))
@given(
    data=st.data(),
    n_models=st.integers(1, 3),
    step=st.sampled_from([S // 10, S // 4]),
)
def test_blocks_merge_to_the_whole_station_bit_for_bit(data, n_models, step):
    # Quantised times so arrivals are often closer than 2·residual_tol (no cut possible there)
    # and picks sit exactly on tolerances; conf quantised so ties happen.
    options = Options(tol=0.5, residual_tol=1.0, thresholds=[0.1, 0.3, 0.5, 0.7])
    n_arr = data.draw(st.integers(1, 25))
    n_pick = data.draw(st.integers(0, 60))
    a_t = np.array(data.draw(st.lists(st.integers(0, 400), min_size=n_arr, max_size=n_arr))) * step
    a_p = np.array(data.draw(st.lists(st.integers(0, 1), min_size=n_arr, max_size=n_arr)), dtype=np.int8)
    p_t = np.array(data.draw(st.lists(st.integers(-10, 410), min_size=n_pick, max_size=n_pick)), dtype=np.int64) * step
    p_p = np.array(data.draw(st.lists(st.integers(0, 1), min_size=n_pick, max_size=n_pick)), dtype=np.int8)
    p_m = np.array(data.draw(st.lists(st.integers(0, n_models - 1), min_size=n_pick, max_size=n_pick)), dtype=np.int32)
    p_c = np.array(data.draw(st.lists(st.integers(0, 20), min_size=n_pick, max_size=n_pick))) / 20.0
    whole = score_station(a_p, a_t, p_m, p_p, p_t, p_c, n_models=n_models, options=options)
    n_blocks = data.draw(st.integers(2, 10))
    span = (int(p_t.min(initial=0)), int(p_t.max(initial=1)))
    cuts = cut_points(a_t, residual_tol_ns=options.residual_tol_ns, span=span, n_blocks=n_blocks)
    a_b, p_b = block_of(a_t, cuts), block_of(p_t, cuts)
    parts = [
        score_station(a_p[a_b == b], a_t[a_b == b], p_m[p_b == b], p_p[p_b == b], p_t[p_b == b], p_c[p_b == b],
                      n_models=n_models, options=options)
        for b in range(cuts.size + 1)
    ]
    assert merge_results(parts).equals(whole)
    # The engine's reduction tree: blocks scattered over partials (beside another station), combined in
    # any grouping, come out as the whole station — and the other station as it went in.
    n_partials = data.draw(st.integers(1, 4))
    where = data.draw(st.lists(st.integers(0, n_partials - 1), min_size=len(parts), max_size=len(parts)))
    partials = [Partial.of([(0, 5, r) for r, w in zip(parts, where) if w == i]
                           + ([(0, 2, whole)] if i == 0 else []), fine={}) for i in range(n_partials)]
    split = data.draw(st.integers(1, n_partials))
    combined = combine_partials(combine_partials(*partials[:split]), *partials[split:])
    stack = combined.stacks[0]
    assert stack.keys.tolist() == [2, 5]
    for row in (0, 1):
        got = stack.result(row)
        got.fine_emitted, got.fine_matched = whole.fine_emitted, whole.fine_matched
        assert got.equals(whole)


def _busy_catalogue(seed=3):
    """One quiet station and one busy one: bursts of arrivals 1 s apart (no quiet gap for a
    long stretch at residual_tol = 2 s) between quiet stretches, and many noise picks."""
    rng = np.random.default_rng(seed)
    rows_ref, rows_picks = [], []
    t0 = 1_600_000_000 * S
    for station, n_bursts in (("XX.BUSY", 12), ("XX.QUIET", 2)):
        starts = t0 + np.sort(rng.choice(np.arange(200), n_bursts, replace=False)) * 600 * S
        for start in starts:
            n = int(rng.integers(5, 40))
            times = start + np.arange(n) * S + rng.integers(-100, 100, n) * 1_000_000
            for t in times:
                phase = "P" if rng.random() < 0.5 else "S"
                rows_ref.append(("d", station, phase, t))
                for model in ("a", "b"):
                    if rng.random() < 0.85:
                        rows_picks.append(("d", model, station, phase, t + int(rng.normal(0, 0.3) * S),
                                           round(float(rng.random()), 2)))
        for model in ("a", "b"):
            noise = t0 + rng.integers(0, 200 * 600, 300) * S + rng.integers(0, S, 300)
            for t in noise:
                rows_picks.append(("d", model, station, "P" if rng.random() < 0.5 else "S", int(t),
                                   round(float(rng.random()) * 0.5, 2)))
    ref = pd.DataFrame(rows_ref, columns=["dataset", "station", "phase", "time"])
    picks = pd.DataFrame(rows_picks, columns=["dataset", "model", "station", "phase", "time", "conf"])
    ref["time"] = pd.to_datetime(ref["time"], utc=True)
    picks["time"] = pd.to_datetime(picks["time"], utc=True)
    return ref, picks


@pytest.mark.slow
def test_engine_with_tiny_blocks_equals_whole_stations():
    ref, picks = _busy_catalogue()
    whole = pickscale.score(ref, picks, residual_tol=2.0, block_picks=10**9)
    blocked = pickscale.score(ref, picks, residual_tol=2.0, block_picks=25)
    for name in whole.variables:
        assert whole[name].dtype == blocked[name].dtype, name
        if whole[name].dtype.kind in "OT":  # strings: compare values, not object pointers
            assert whole[name].values.tolist() == blocked[name].values.tolist(), name
        else:
            assert whole[name].values.tobytes() == blocked[name].values.tobytes(), name
    tw, tb = pickscale.tables(whole), pickscale.tables(blocked)
    assert all(to_csv_bytes(tw[k]) == to_csv_bytes(tb[k]) for k in tw)


@pytest.mark.slow
def test_busy_station_is_cut_and_units_stay_small():
    ref, picks = _busy_catalogue()
    from pickscale.engine import load  # noqa: F401  (the engine's own reading path)
    from pickscale.engine.parts import report_of  # noqa: F401
    from pickscale.io import normalise
    from pickscale.scope import apply_scope

    options = Options(residual_tol=2.0)
    n_ref = normalise(ref, role="reference", source="ref").frame
    n_picks = normalise(picks, role="picks", source="picks").frame
    scope = apply_scope(n_ref, n_picks, floor=options.floor, residual_tol_ns=options.residual_tol_ns)
    from pickscale.scope import summarise_picks

    scope.pick_summary = summarise_picks(scope.picks)
    plan = plan_units(scope, options, block_picks=60)
    busy = int(plan.stations.index[plan.stations["station"] == "XX.BUSY"][0])
    assert busy in plan.cuts and plan.cuts[busy].size >= 5
    # Every cut is admissible: no arrival of the station within residual_tol.
    a = n_ref[n_ref.station == "XX.BUSY"]["time"].to_numpy(np.int64)
    for c in plan.cuts[busy]:
        assert np.all(np.abs(a - c) > options.residual_tol_ns)
    # Units are bounded by the bursts, not by the station: far below the station's total.
    skey = np.full(len(scope.picks), busy)
    units = plan.units_of(skey[scope.picks.station.to_numpy() == "XX.BUSY"],
                          scope.picks[scope.picks.station == "XX.BUSY"]["time"].to_numpy(np.int64))
    sizes = np.bincount(units - units.min())
    assert sizes.max() < 0.5 * sizes.sum()
