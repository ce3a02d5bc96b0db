"""Issue 25, item 3: the out-of-sample choice (SPEC §16), ``select_on``.

Worked by hand (SPEC §16's example: grid 0.1, 0.2, 0.3, 0.4; ``tol`` 0.5 s; station A, one model; the date
60 s into 2024-01-01, so what is before 60 s selects and the rest reports):

- selection part: P arrivals 10, 20, 30, 40; picks 10 (0.9), 20 (0.8), 30 (0.25), 45 (0.15), 55 (0.35) ->
  emitted, matched 5,3; 4,3; 3,2; 2,2 -> f1_lb 6/9, 6/8, 4/7, 4/6: best 0.2; budget min(4, 5) = 4;
- report part: P arrivals 70, 80; picks 70 (0.9), 80 (0.35), 85 (0.5), 90 (0.25), 95 (0.15) -> at 0.2: emitted
  4, matched 2: recall 1, precision_lb 1/2, f1_lb 4/6; its own best would be 0.3 (4/5);
- matched_budget_oos = floor(4 * 2 / 4 + 1/2) = 2; the report part emits 2 picks (70 and 85) from 0.351 to 0.5:
  recall 1/2.

And a property: the out-of-sample numbers are those of the two parts scored separately (each part cut from the
inputs here, with pandas, and given to ``pickscale.score`` alone).
"""

from __future__ import annotations

import hashlib
import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pickscale
from pickscale.engine.selection import parse_select_on, selected_stations
from pickscale.errors import OptionsError, PickscaleWarning
from pickscale.metrics.curves import recall_at_budget
from pickscale.report.tables import to_csv_bytes
from pickscale.results.selection import SELECTION_VARIABLES, carried_budget

T0 = pd.Timestamp("2024-01-01T00:00:00Z")
GRID = [0.1, 0.2, 0.3, 0.4]
ARRIVALS = (10, 20, 30, 40, 70, 80)
PICKS = [(10, 0.9), (20, 0.8), (30, 0.25), (45, 0.15), (55, 0.35), (70, 0.9), (80, 0.35), (85, 0.5), (90, 0.25),
         (95, 0.15)]
OOS = list(SELECTION_VARIABLES)


def _t(seconds: float) -> str:
    return (T0 + pd.Timedelta(seconds=seconds)).isoformat()


def _inputs():
    ref = pd.DataFrame({"station": "A", "phase": "P", "time": [_t(s) for s in ARRIVALS]})
    picks = pd.DataFrame([("M", "A", "P", _t(s), c) for s, c in PICKS],
                         columns=["model", "station", "phase", "time", "conf"])
    return ref, picks


def _quiet_score(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PickscaleWarning)
        return pickscale.score(*args, **kwargs)


@pytest.fixture(scope="module")
def hand():
    ref, picks = _inputs()
    return _quiet_score(ref, picks, thresholds=GRID, select_on="before:2024-01-01T00:01:00")


@pytest.mark.slow
def test_the_worked_example(hand):
    one = hand.sel(dataset="all", model="M", phase="P")
    assert hand.attrs["select_on"] == "before:2024-01-01T00:01:00Z"
    assert float(one.best_threshold_selected) == 0.2
    assert float(one.recall_at_best_oos) == 1.0
    assert float(one.precision_lb_at_best_oos) == 0.5
    assert float(one.f1_lb_at_best_oos) == 4 / 6
    assert int(hand.matched_budget_oos.sel(dataset="all", phase="P")) == 2
    assert float(one.recall_at_budget_oos) == 0.5
    assert int(hand.n_reference_select.sel(dataset="all", phase="P")) == 4
    assert int(hand.n_reference_report.sel(dataset="all", phase="P")) == 2
    # Over all the inputs, as without select_on: best 0.2, f1_lb 10/14, recall 5/6 there.
    assert float(one.best_threshold) == 0.2 and float(one.f1_lb_at_best) == 10 / 14
    assert float(one.recall_at_best) == 5 / 6
    # No S arrivals in either part: NaN readings, 0 arrivals and budget.
    s = hand.sel(dataset="all", model="M", phase="S")
    assert np.isnan(float(s.best_threshold_selected)) and np.isnan(float(s.recall_at_budget_oos))
    assert int(hand.matched_budget_oos.sel(dataset="all", phase="S")) == 0


@pytest.mark.slow
def test_detection_table_gains_the_columns_and_nothing_else_changes(hand):
    ref, picks = _inputs()
    plain = _quiet_score(ref, picks, thresholds=GRID)
    assert "select_on" not in plain.attrs and not set(OOS) & set(plain.data_vars)
    with_oos, without = pickscale.tables(hand), pickscale.tables(plain)
    assert list(with_oos) == list(without)
    for name in without:
        if name != "detection":
            assert to_csv_bytes(with_oos[name]) == to_csv_bytes(without[name])
    det = with_oos["detection"]
    assert list(det.columns) == list(without["detection"].columns) + OOS
    assert to_csv_bytes(det.drop(columns=OOS)) == to_csv_bytes(without["detection"])
    row = det[det.phase == "P"].iloc[0]
    assert (row.best_threshold_selected, row.matched_budget_oos, row.n_reference_select, row.n_reference_report) == (
        0.2, 2, 4, 2)


@pytest.mark.slow
def test_store_round_trip_keeps_the_readings(hand, tmp_path):
    path = pickscale.save(hand, tmp_path / "results.zarr")
    back = pickscale.open_results(path)
    assert back.attrs["select_on"] == hand.attrs["select_on"]
    assert to_csv_bytes(pickscale.tables(back)["detection"]) == to_csv_bytes(pickscale.tables(hand)["detection"])


@pytest.mark.slow
def test_a_store_scored_with_select_on_is_not_extended(hand, tmp_path):
    ref, picks = _inputs()
    path = pickscale.save(hand, tmp_path / "results.zarr")
    with pytest.raises(OptionsError, match="select_on"):
        pickscale.extend(path, ref, picks)
    plain = pickscale.save(_quiet_score(ref, picks, thresholds=GRID), tmp_path / "plain.zarr")
    with pytest.raises(OptionsError, match="select_on"):
        pickscale.extend(plain, ref, picks, select_on="before:2024-01-01")


@pytest.mark.slow
def test_exhaustive_names_drop_lb():
    ref, picks = _inputs()
    ds = _quiet_score(ref, picks, thresholds=GRID, exhaustive=True, select_on="before:2024-01-01T00:01:00")
    assert float(ds.f1_at_best_oos.sel(dataset="all", model="M", phase="P")) == 4 / 6
    assert "precision_at_best_oos" in pickscale.tables(ds)["detection"].columns


@pytest.mark.slow
def test_an_empty_part_is_an_error_naming_the_option_and_the_date():
    ref, picks = _inputs()
    with pytest.raises(OptionsError, match=r"select_on before:2023-06-01T00:00:00Z.*selection part"):
        _quiet_score(ref, picks, thresholds=GRID, select_on="before:2023-06-01")
    with pytest.raises(OptionsError, match=r"select_on before:2025-01-01T00:00:00Z.*report part"):
        _quiet_score(ref, picks, thresholds=GRID, select_on="before:2025-01-01")
    # One scored station: half of it leaves a part without any.
    with pytest.raises(OptionsError, match=r"select_on stations:0.5:0.*dataset all has 1 scored station"):
        _quiet_score(ref, picks, thresholds=GRID, select_on="stations:0.5")


@pytest.mark.parametrize("value, canonical", [
    ("before:2024-01-01", "before:2024-01-01T00:00:00Z"),
    ("before:2024-03-01T12:00:00+02:00", "before:2024-03-01T10:00:00Z"),
    ("before:2024-01-01T00:00:00.25Z", "before:2024-01-01T00:00:00.25Z"),
    ("stations:0.5", "stations:0.5:0"),
    ("stations:0.25:7", "stations:0.25:7"),
])
def test_forms(value, canonical):
    assert parse_select_on(value).text == canonical


@pytest.mark.parametrize("value", ["after:2024-01-01", "before:", "before:yesterday", "stations:0", "stations:1",
                                   "stations:x", "stations:0.5:-1", "stations:0.5:1:2", "stations:", 0.5])
def test_bad_forms_are_refused_naming_the_option(value):
    with pytest.raises(OptionsError, match="select_on"):
        parse_select_on(value)


def test_the_station_rule_by_hand():
    # SHA-256 of "0:A", "0:B", "0:C", "0:D" (hex), ascending: C (1310…), B (3928…), A (99fd…), D (a188…)
    # -> half: C, B (returned sorted by name).
    digest = {s: hashlib.sha256(f"0:{s}".encode()).hexdigest() for s in "ABCD"}
    assert sorted("ABCD", key=digest.get) == ["C", "B", "A", "D"]
    assert selected_stations(["D", "C", "B", "A"], 0.5, 0) == ["B", "C"]
    assert selected_stations(list("ABCD"), 0.6, 0) == ["B", "C"]  # floor(2.4 + 1/2) = 2
    assert selected_stations(list("ABCD"), 0.65, 0) == ["A", "B", "C"]  # floor(2.6 + 1/2) = 3
    assert selected_stations(list("ABCDE"), 0.5, 0) == selected_stations(list("EDCBA"), 0.5, 0)
    assert len(selected_stations(list("ABCDE"), 0.5, 0)) == 3  # floor(2.5 + 1/2)


def test_carried_budget():
    assert carried_budget(4, 4, 2) == 2
    assert carried_budget(5, 6, 4) == 3  # 20/6 = 3.33
    assert carried_budget(3, 4, 2) == 2  # 1.5 rounds up
    assert carried_budget(7, 0, 3) == carried_budget(7, 3, 0) == 0


# --- the property: the readings are those of the parts scored separately -------------------------------------

PGRID = [0.1, 0.2, 0.3, 0.5, 0.7]
CUT = 1000.0  # seconds into the day: the date of the time split
CONF = st.sampled_from([0.05, 0.1, 0.15, 0.2, 0.3, 0.35, 0.5, 0.6, 0.7, 0.9])


@st.composite
def catalogues(draw):
    ref, picks = [], []
    for dataset in draw(st.sampled_from([["d0"], ["d0", "d1"]])):
        for station in draw(st.lists(st.sampled_from(list("ABCDE")), min_size=2, max_size=4, unique=True)):
            # Each station has an arrival on each side of the cut with a pick of m0: every part can be scored.
            for base in (CUT - 400.0, CUT + 400.0):
                ref.append((dataset, station, "P", base))
                picks.append((dataset, "m0", station, "P", base + 0.1, draw(CONF.filter(lambda c: c >= 0.1))))
            for _ in range(draw(st.integers(0, 4))):
                time = draw(st.integers(1, 1999)) + 0.5
                phase = draw(st.sampled_from("PS"))
                ref.append((dataset, station, phase, time))
                for model in ("m0", "m1"):
                    if draw(st.booleans()):
                        picks.append((dataset, model, station, phase, time + draw(st.sampled_from([-0.6, -0.2, 0.0,
                                                                                                  0.3])),
                                      draw(CONF)))
            for _ in range(draw(st.integers(0, 3))):  # picks that find nothing
                picks.append((dataset, draw(st.sampled_from(["m0", "m1"])), station, draw(st.sampled_from("PS")),
                               draw(st.integers(1, 1999)) + 0.25, draw(CONF)))
    ref = pd.DataFrame(ref, columns=["dataset", "station", "phase", "seconds"]).drop_duplicates()
    picks = pd.DataFrame(picks, columns=["dataset", "model", "station", "phase", "seconds", "conf"])
    return ref, picks


def _timed(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(time=[_t(s) for s in frame["seconds"]]).drop(columns="seconds")


def _check_against_parts(ds, ref, picks, in_select_ref, in_select_picks):
    a = _quiet_score(_timed(ref[in_select_ref]), _timed(picks[in_select_picks]), thresholds=PGRID)
    b = _quiet_score(_timed(ref[~in_select_ref]), _timed(picks[~in_select_picks]), thresholds=PGRID)
    a_models = {str(m) for m in a.model.values}
    b_models = {str(m) for m in b.model.values}
    for d in map(str, ds.dataset.values):
        for p in ("P", "S"):
            na = int(a.n_reference.sel(dataset=d, phase=p).sum())
            nb = int(b.n_reference.sel(dataset=d, phase=p).sum())
            assert int(ds.n_reference_select.sel(dataset=d, phase=p)) == na
            assert int(ds.n_reference_report.sel(dataset=d, phase=p)) == nb
            budget = 0 if na == 0 or nb == 0 else math.floor(
                Fraction(int(a.matched_budget.sel(dataset=d, phase=p)) * nb, na) + Fraction(1, 2))
            assert int(ds.matched_budget_oos.sel(dataset=d, phase=p)) == budget
            for m in map(str, ds.model.values):
                got = ds.sel(dataset=d, model=m, phase=p)
                if not bool(ds.model_present.sel(dataset=d, model=m)):
                    assert all(np.isnan(float(got[n])) for n in OOS if "model" in ds[n].dims)
                    continue
                in_a = m in a_models and bool(a.model_present.sel(dataset=d, model=m))
                best = float(a.best_threshold.sel(dataset=d, model=m, phase=p)) if in_a else math.nan
                np.testing.assert_equal(float(got.best_threshold_selected), best)
                in_b = m in b_models and bool(b.model_present.sel(dataset=d, model=m))
                want = dict.fromkeys(("recall", "precision_lb", "f1_lb"), math.nan)
                if in_b and not math.isnan(best):
                    at = b.sel(dataset=d, model=m, phase=p, threshold=best)
                    want = {n: float(at[n]) for n in want}
                for n, v in want.items():
                    np.testing.assert_equal(float(got[f"{n}_at_best_oos"]), v)
                at_budget = math.nan
                if in_b and na > 0:
                    one = b.sel(dataset=d, model=m, phase=p)
                    at_budget = recall_at_budget(one.fine_emitted.values, one.fine_matched.values, nb, budget)
                np.testing.assert_equal(float(got.recall_at_budget_oos), at_budget)
    # Every other variable is the run's over all the inputs.
    whole = _quiet_score(_timed(ref), _timed(picks), thresholds=PGRID)
    for name in ("recall", "best_threshold", "recall_at_budget", "f1_lb_at_best"):
        np.testing.assert_array_equal(ds[name].values, whole[name].values)


@settings(max_examples=6)
@given(catalogues())
@pytest.mark.slow
def test_time_split_equals_the_parts_scored_alone(data):
    ref, picks = data
    ds = _quiet_score(_timed(ref), _timed(picks), thresholds=PGRID, select_on=f"before:{_t(CUT)}")
    _check_against_parts(ds, ref, picks, (ref.seconds < CUT).to_numpy(), (picks.seconds < CUT).to_numpy())


@settings(max_examples=6)
@given(catalogues(), st.sampled_from([0.3, 0.5, 0.7]), st.integers(0, 3))
@pytest.mark.slow
def test_station_split_equals_the_parts_scored_alone(data, fraction, seed):
    ref, picks = data
    # Independently of pickscale's code: the stations sorted by SHA-256 of "seed:station", the first
    # floor(fraction * n + 1/2) of each dataset's stations (every station here is scored: it has an arrival and
    # a pick on each side of the cut).
    chosen = set()
    for d, names in ref.groupby("dataset")["station"]:
        stations = sorted(set(names))
        k = math.floor(fraction * len(stations) + 0.5)
        if k in (0, len(stations)):
            with pytest.raises(OptionsError, match="select_on"):
                _quiet_score(_timed(ref), _timed(picks), thresholds=PGRID, select_on=f"stations:{fraction}:{seed}")
            return
        ranked = sorted(stations, key=lambda s: (hashlib.sha256(f"{seed}:{s}".encode()).hexdigest(), s))
        chosen |= {(d, s) for s in ranked[:k]}
    ds = _quiet_score(_timed(ref), _timed(picks), thresholds=PGRID, select_on=f"stations:{fraction}:{seed}")
    flag = ds.station_selected
    assert {(str(d), str(s)) for d in flag.dataset.values for s in flag.station.values
            if bool(flag.sel(dataset=d, station=s))} == chosen

    def member(frame):
        return np.array([(d, s) in chosen for d, s in zip(frame.dataset, frame.station)], dtype=bool)

    _check_against_parts(ds, ref, picks, member(ref), member(picks))
