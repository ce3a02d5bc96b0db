"""SPEC §2 "Coverage" and "Models not picking where arrivals are": hand-worked cases and a brute-force property."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pickscale.errors import InputError
from pickscale.io.coverage_file import read_coverage
from pickscale.scope import Coverage, apply_scope

S = 10**9
TOL = 2 * S


def ref(rows) -> pd.DataFrame:
    """rows: (station, time in s)."""
    return pd.DataFrame({"dataset": ["d"] * len(rows), "station": [r[0] for r in rows], "phase": ["P"] * len(rows),
                         "time": np.array([r[1] * S for r in rows], dtype=np.int64)})


def picks(rows) -> pd.DataFrame:
    """rows: (model, station, time in s)."""
    return pd.DataFrame({"dataset": ["d"] * len(rows), "model": [r[0] for r in rows],
                         "station": [r[1] for r in rows], "phase": ["P"] * len(rows),
                         "time": np.array([r[2] * S for r in rows], dtype=np.int64), "conf": [0.9] * len(rows)})


def windows(rows, *, model=True) -> pd.DataFrame:
    """rows: (station, model, start s, end s)."""
    w = pd.DataFrame({"station": [r[0] for r in rows], "model": [r[1] for r in rows],
                      "start": np.array([r[2] for r in rows], dtype=np.int64),  # seconds since 1970
                      "end": np.array([r[3] for r in rows], dtype=np.int64)})
    return w if model else w.drop(columns="model")


def cov(w) -> Coverage:
    return Coverage.from_windows(read_coverage(w))


def test_common_coverage_hand_worked():
    # A: m ran on [0, 10] s, n on [5, 20] s -> common [5, 10]; B: every model (empty model) on [0, 100].
    w = windows([("A", "m", 0, 10), ("A", "n", 5, 20), ("B", "", 0, 100)])
    r = ref([("A", 2), ("A", 7), ("A", 15), ("B", 50)])
    p = picks([("m", "A", 2), ("m", "A", 7), ("n", "A", 7), ("n", "A", 15), ("n", "A", 25),
               ("m", "B", 50), ("n", "B", 50)])
    s = apply_scope(r, p, floor=0.02, residual_tol_ns=TOL, coverage=cov(w))
    # A at 2 s (m only) and 15 s (n only) are not in the common coverage.
    assert sorted(zip(s.reference["station"], s.reference["time"] // S)) == [("A", 7), ("B", 50)]
    # Kept: m A 7, n A 7, m B 50, n B 50; out: m A 2 (not n's), n A 15 (not m's), n A 25 (outside its own).
    assert sorted(zip(s.picks["model"], s.picks["station"], s.picks["time"] // S)) == [
        ("m", "A", 7), ("m", "B", 50), ("n", "A", 7), ("n", "B", 50)]
    assert s.exclusions["reference_outside_coverage"] == 2
    assert s.exclusions["picks_outside_coverage"] == 3
    models = s.report["coverage"]["datasets"]["d"]["models"]
    assert models == {
        "m": {"reference_covered": 3, "reference_lost": 1, "picks_outside_own": 0, "picks_outside_common": 1},
        "n": {"reference_covered": 3, "reference_lost": 1, "picks_outside_own": 1, "picks_outside_common": 1},
    }
    text = "\n".join(s.warnings)
    assert "2 of 4 reference arrival(s) outside the coverage" in text
    assert "common coverage (2 arrival(s)): 'm' covered 3, lost 1; 'n' covered 3, lost 1" in text
    assert "3 pick(s) outside the coverage excluded ('m' 0 outside its own windows, 1 in windows not every" in text


def test_window_ends_are_inclusive_and_without_model_every_model_ran():
    w = windows([("A", "", 10, 20)], model=False)
    r = ref([("A", 10), ("A", 20)])
    r = pd.concat([r, r.assign(time=r["time"] + np.array([-1, 1]))], ignore_index=True)  # 1 ns outside
    p = picks([("m", "A", 10), ("n", "A", 20), ("n", "A", 21)])
    s = apply_scope(r, p, floor=0.02, residual_tol_ns=TOL, coverage=cov(w))
    assert (s.reference["time"] // S).tolist() == [10, 20]
    assert len(s.picks) == 2 and s.exclusions["picks_outside_coverage"] == 1
    assert s.exclusions["reference_outside_coverage"] == 2
    assert not any("different windows" in x for x in s.warnings)  # one coverage for every model


def test_station_without_window_is_outside_and_dataset_column_scopes_windows():
    w = pd.DataFrame({"dataset": ["d", "e"], "station": ["A", "B"], "start": [0, 0], "end": [100, 100]})
    r = ref([("A", 5), ("B", 5)])
    p = picks([("m", "A", 5), ("m", "B", 5)])
    s = apply_scope(r, p, floor=0.02, residual_tol_ns=TOL, coverage=cov(w))
    # B's window is dataset e's: in dataset d, B has no window.
    assert s.stations == {"d": ["A"]}
    assert s.exclusions["reference_outside_coverage"] == 1 and s.exclusions["picks_outside_coverage"] == 1
    assert s.exclusions["reference_at_unpicked_stations"] == 0


def test_model_without_window_is_fatal_and_named():
    w = windows([("A", "m", 0, 10)])
    with pytest.raises(InputError, match=r"model\(s\) 'n' have no window"):
        apply_scope(ref([("A", 5)]), picks([("m", "A", 5), ("n", "A", 5)]), floor=0.02, residual_tol_ns=TOL,
                    coverage=cov(w))


def test_coverage_that_leaves_nothing_is_fatal():
    w = windows([("A", "", 1000, 2000)], model=False)
    with pytest.raises(InputError, match="no reference arrival lies inside a window"):
        apply_scope(ref([("A", 5)]), picks([("m", "A", 1500)]), floor=0.02, residual_tol_ns=TOL, coverage=cov(w))


@pytest.mark.parametrize("frame, needle", [
    (pd.DataFrame({"station": ["A"], "begin": [0], "end": [1]}), "missing start"),
    (pd.DataFrame({"station": ["A", "A"], "start": ["x", "0"], "end": ["1", "1"]}),
     "column start: 1 unreadable time(s) (rows 2)"),
    (pd.DataFrame({"station": ["A", ""], "start": [0, 0], "end": [1, 1]}),
     "column station: 1 empty station(s) (rows 3)"),
    (pd.DataFrame({"station": ["A"], "start": [5], "end": [1]}), "1 window(s) end before they start (rows 2)"),
    (pd.DataFrame({"station": [], "start": [], "end": []}), "no window"),
])
def test_read_coverage_errors_name_column_and_rows(frame, needle):
    with pytest.raises(InputError) as info:
        read_coverage(frame)
    assert needle in str(info.value) and "the coverage DataFrame" in str(info.value)


def test_read_coverage_file_missing(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_coverage(tmp_path / "nope.csv")


def test_model_missing_stations_warned_with_numbers():
    # Issue 12: a model run on 3 of 5 stations is charged with misses at the other two — say so, with numbers.
    stations = ["A", "B", "C", "D", "E"]
    r = ref([(s, 10) for s in stations] + [("E", 11)])
    p = picks([("full", s, 10) for s in stations] + [("part", s, 10) for s in stations[:3]])
    s = apply_scope(r, p, floor=0.02, residual_tol_ns=TOL)
    lines = [x for x in s.warnings if "model 'part'" in x]
    assert len(lines) == 1 and "no pick at 2 of the 5 scored station(s) (e.g. 'D', 'E'), which hold 3 of the 6" \
        in lines[0] and "--coverage" in lines[0]
    assert not any("model 'full'" in x for x in s.warnings)
    assert s.report["unpicked"] == {"d": {"part": {"stations_without_picks": 2, "reference_there": 3,
                                                   "reference_outside_its_span": 0}}}


def test_model_run_over_part_of_the_span_warned():
    r = ref([("A", 10), ("A", 1000), ("A", 2000)])
    p = picks([("full", "A", 10), ("full", "A", 2000), ("early", "A", 10)])
    s = apply_scope(r, p, floor=0.02, residual_tol_ns=TOL)
    assert s.report["unpicked"]["d"]["early"]["reference_outside_its_span"] == 2
    assert any("model 'early' has 2 arrival(s) at its other stations outside its own span" in x for x in s.warnings)


# --------------------------------------------------------------------------- property: against intervals

def _brute(r, p, w):
    """Arrivals and picks kept by the common-coverage rule, by direct interval checks."""
    def own(model, station, t):
        rows = w[(w["station"] == station) & ((w["model"] == model) | (w["model"] == ""))]
        return bool(((rows["start"] * S <= t) & (t <= rows["end"] * S)).any())
    models = sorted({m for m, s_, t in zip(p["model"], p["station"], p["time"]) if own(m, s_, t)})
    common = lambda station, t: bool(models) and all(own(m, station, t) for m in models)  # noqa: E731
    ref_kept = [common(s_, t) for s_, t in zip(r["station"], r["time"])]
    pick_kept = [own(m, s_, t) and common(s_, t) for m, s_, t in zip(p["model"], p["station"], p["time"])]
    return np.array(ref_kept), np.array(pick_kept)


@pytest.mark.slow
@given(st.data())
def test_coverage_matches_interval_checks(data):
    stations, models = ["A", "B"], ["m", "n"]
    t = st.integers(0, 40)
    w_rows = data.draw(st.lists(st.tuples(st.sampled_from(stations), st.sampled_from(models + [""]), t, t),
                                min_size=1, max_size=6))
    w = windows([(s_, m, min(a, b), max(a, b)) for s_, m, a, b in w_rows])
    r = ref(data.draw(st.lists(st.tuples(st.sampled_from(stations), t), min_size=1, max_size=8, unique=True)))
    p = picks(data.draw(st.lists(st.tuples(st.sampled_from(models), st.sampled_from(stations), t),
                                 min_size=1, max_size=10)))
    ref_kept, pick_kept = _brute(r, p, w)
    c = cov(w)
    if not set(p["model"]) <= set(w["model"]) and not (w["model"] == "").any():
        with pytest.raises(InputError):
            apply_scope(r, p, floor=0.02, residual_tol_ns=TOL, coverage=c)
        return
    try:
        s = apply_scope(r, p, floor=0.02, residual_tol_ns=TOL, coverage=c)
    except InputError:  # nothing left on a side, or no shared station: fatal by SPEC §2
        return
    assert s.exclusions["reference_outside_coverage"] == int((~ref_kept).sum())
    assert s.exclusions["picks_outside_coverage"] == int((~pick_kept).sum())
    kept_ref = r[ref_kept]
    got = sorted(zip(s.reference["station"], s.reference["time"]))
    assert set(got) <= set(zip(kept_ref["station"], kept_ref["time"]))
    kept_p = p[pick_kept]
    got_p = sorted(zip(s.picks["model"], s.picks["station"], s.picks["time"]))
    want_p = sorted((m, s_, t_) for m, s_, t_ in zip(kept_p["model"], kept_p["station"], kept_p["time"])
                    if s_ in s.stations.get("d", []))
    assert got_p == want_p
