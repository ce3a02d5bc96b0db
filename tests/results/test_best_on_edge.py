"""Issue 25, item 1: the own best threshold on the edge of the search is flagged and warned about (SPEC §7).

Worked by hand (SPEC §7's example: grid 0.1, 0.2, 0.3, 0.4; ``tol`` 0.5 s; station A, P arrivals at 10, 20, 30
and 40 s, so n_reference 4 and f1_lb = 2 matched / (4 + emitted)):

- A picks 10 (0.9), 20 (0.8), 30 (0.25), 55 (0.35), 65 (0.15): f1_lb 6/9, 6/8, 4/7, 4/6 -> best 0.2, inside;
- B picks 10 (0.9), 20 (0.8), 55 (0.35), 65 (0.15), 75 (0.25), 85 (0.5): f1_lb 4/10, 4/9, 4/8, 4/7 -> best 0.4,
  the highest searched; on the fine curve 4/6 from 0.501;
- C picks 10 (0.9), 20 (0.8), 30 (0.7), 40 (0.45): f1_lb 1 at every threshold -> best 0.1 (the tie rule), below
  its lowest confidence 0.45;
- D picks 10 (0.9), 20 (0.15), 30 (0.1), 60 (0.5): f1_lb 6/8, 2/6, 2/6, 2/6 -> best 0.1, the lowest searched,
  with a pick at exactly 0.1.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pickscale
from pickscale.errors import PickscaleWarning
from pickscale.metrics.curves import best_on_edge, best_threshold, lowest_conf_bound
from pickscale.report.tables import to_csv_bytes
from tests.helpers import brute

T0 = pd.Timestamp("2024-01-01T00:00:00Z")
GRID = [0.1, 0.2, 0.3, 0.4]
PICKS = {
    "A": [(10, 0.9), (20, 0.8), (30, 0.25), (55, 0.35), (65, 0.15)],
    "B": [(10, 0.9), (20, 0.8), (55, 0.35), (65, 0.15), (75, 0.25), (85, 0.5)],
    "C": [(10, 0.9), (20, 0.8), (30, 0.7), (40, 0.45)],
    "D": [(10, 0.9), (20, 0.15), (30, 0.1), (60, 0.5)],
}


def _t(seconds: float) -> str:
    return (T0 + pd.Timedelta(seconds=seconds)).isoformat()


def _inputs():
    ref = pd.DataFrame({"station": "A", "phase": "P", "time": [_t(s) for s in (10, 20, 30, 40)]})
    picks = pd.DataFrame([(m, "A", "P", _t(t), c) for m, rows in PICKS.items() for t, c in rows],
                         columns=["model", "station", "phase", "time", "conf"])
    return ref, picks


@pytest.fixture(scope="module")
def scored():
    ref, picks = _inputs()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = pickscale.score(ref, picks, thresholds=GRID)
    return ds, [str(w.message) for w in caught if issubclass(w.category, PickscaleWarning)]


def _p(ds, name):
    return {m: ds[name].sel(dataset="all", model=m, phase="P").item() for m in PICKS}


@pytest.mark.slow
def test_hand_worked_best_and_flag(scored):
    ds, _ = scored
    assert _p(ds, "best_threshold") == {"A": 0.2, "B": 0.4, "C": 0.1, "D": 0.1}
    assert _p(ds, "f1_lb_at_best") == {"A": 6 / 8, "B": 4 / 7, "C": 1.0, "D": 6 / 8}
    assert _p(ds, "best_on_edge") == {"A": False, "B": True, "C": True, "D": True}
    assert ds["best_on_edge"].dtype == bool
    # No S arrivals: no best threshold, so nothing on an edge (SPEC §4, §7).
    assert not ds["best_on_edge"].sel(phase="S").any()


@pytest.mark.slow
def test_hand_worked_warnings(scored):
    ds, said = scored
    edge = [w for w in said if "best_threshold on the edge" in w]
    assert [w.split(":")[0] for w in edge] == ["B", "C", "D"]  # one message per model, none for A
    by_model = dict(zip("BCD", edge))
    assert ("0.4, the highest threshold searched, in all P (on the fine curve f1_lb is 0.667 at 0.501, against "
            "0.571 at 0.4): search higher thresholds (--thresholds up to 0.99)") in by_model["B"]
    assert ("0.1, below the lowest confidence the model emitted, in all P (every pick has conf >= 0.45)"
            in by_model["C"])
    assert "never emits below it" in by_model["C"]
    assert "0.1, the lowest threshold searched, in all P, where the model emits picks down to it" in by_model["D"]
    # The run's warnings list (what the CLI prints and the store keeps) holds them too.
    assert all(w in ds.attrs["warnings"] for w in edge)


@pytest.mark.slow
def test_detection_csv_column(scored):
    ds, _ = scored
    det = pickscale.tables(ds)["detection"]
    cols = det.columns.tolist()
    assert cols[cols.index("best_threshold") + 1] == "best_on_edge"
    text = to_csv_bytes(det).decode()
    assert ",0.4,True," in text.splitlines()[2]  # B, P
    assert det.loc[det["phase"] == "P", "best_on_edge"].tolist() == [False, True, True, True]


def test_lowest_conf_bound_hand_worked(scored):
    ds, _ = scored
    emitted = ds["emitted"].sum("station").sel(dataset="all", phase="P")
    fine = ds["fine_emitted"].sel(dataset="all", phase="P")
    got = {m: lowest_conf_bound(GRID, emitted.sel(model=m).values, ds["fine_threshold"].values,
                                fine.sel(model=m).values) for m in PICKS}
    assert got == {"A": 0.15, "B": 0.15, "C": 0.45, "D": 0.1}


@pytest.mark.slow
def test_store_round_trip_and_old_store(scored, tmp_path):
    ds, _ = scored
    want = to_csv_bytes(pickscale.tables(ds)["detection"])
    pickscale.save(ds, tmp_path / "new.zarr")
    back = pickscale.open_results(tmp_path / "new.zarr")
    assert back["best_on_edge"].dtype == bool
    assert (back["best_on_edge"].values == ds["best_on_edge"].values).all()
    assert to_csv_bytes(pickscale.tables(back)["detection"]) == want
    # A store written before best_on_edge existed opens (SPEC §15), and its detection.csv gets the column
    # from best_threshold and the grid, byte for byte.
    pickscale.save(ds.drop_vars("best_on_edge"), tmp_path / "old.zarr")
    old = pickscale.open_results(tmp_path / "old.zarr")
    assert "best_on_edge" not in old
    assert to_csv_bytes(pickscale.tables(old)["detection"]) == want


@pytest.mark.slow
def test_tampered_flag_refused(scored, tmp_path):
    ds, _ = scored
    bad = ds.copy()
    bad["best_on_edge"] = ~bad["best_on_edge"]
    pickscale.save(bad, tmp_path / "bad.zarr")
    with pytest.raises(pickscale.StoreError, match="best_on_edge"):
        pickscale.open_results(tmp_path / "bad.zarr")


# --------------------------------------------------------------------------- property


@st.composite
def _curves(draw):
    """A grid, a model's picks (confidences at or above the floor, matched or not) and n_reference."""
    steps = draw(st.lists(st.integers(1, 999), min_size=1, max_size=8, unique=True))
    grid = sorted(k / 1000 for k in steps)
    conf = draw(st.lists(st.one_of(st.sampled_from(grid), st.floats(grid[0], 1.0)), max_size=12))
    hit = draw(st.lists(st.booleans(), min_size=len(conf), max_size=len(conf)))
    n_ref = sum(hit) + draw(st.integers(0, 4))
    return grid, np.asarray(conf, dtype=np.float64), np.asarray(hit, dtype=bool), n_ref


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(_curves())
def test_best_on_edge_equals_brute_force(case):
    grid, conf, hit, n_ref = case
    emitted = [int((conf >= t).sum()) for t in grid]
    matched = [int((hit & (conf >= t)).sum()) for t in grid]
    f1 = [brute.f1_lb(m, n_ref, e) for m, e in zip(matched, emitted)]
    rec = [brute.recall(m, n_ref) for m in matched]
    prec = [brute.precision_lb(m, e, n_ref) for m, e in zip(matched, emitted)]
    best = brute.best_threshold(grid, f1, rec, prec)[0]
    lowest = float(conf.min()) if conf.size else math.inf
    # SPEC §7 as written (with the lowest confidence, which the store does not keep) equals the grid-only rule.
    assert bool(best_on_edge(grid, best)) == brute.best_on_edge(grid, best, lowest)
    assert best_threshold(grid, np.asarray(f1), np.asarray(rec), np.asarray(prec))[0] == best or math.isnan(best)
    # What the counts say of the lowest confidence: no pick below the bound, one within the next step.
    fine = np.arange(int(round(grid[0] * 1000)), 1001) / 1000
    fine_emitted = [int((conf >= t).sum()) for t in fine]
    bound = lowest_conf_bound(grid, emitted, fine, fine_emitted)
    if not conf.size:
        assert math.isnan(bound)
    else:
        assert bound <= lowest
        above = [t for t in [*grid, *fine] if t > bound]
        assert not above or lowest < min(above)


@pytest.mark.slow
def test_flat_top_and_nothing_matched_are_said_so():
    """E: picks 10 (0.9), 20 (0.85), 55 (0.35): f1_lb 4/7, 4/7, 4/7, 4/6 -> best 0.4, and the fine curve falls
    above it (2/5 from 0.851).  F: one pick at 55 s (0.5), matching nothing: f1_lb 0 everywhere -> best 0.1."""
    ref = pd.DataFrame({"station": "A", "phase": "P", "time": [_t(s) for s in (10, 20, 30, 40)]})
    rows = [("E", 10, 0.9), ("E", 20, 0.85), ("E", 55, 0.35), ("F", 55, 0.5)]
    picks = pd.DataFrame([(m, "A", "P", _t(t), c) for m, t, c in rows],
                         columns=["model", "station", "phase", "time", "conf"])
    ds = pickscale.score(ref, picks, thresholds=GRID)
    assert ds["best_threshold"].sel(phase="P").values.ravel().tolist() == [0.4, 0.1]
    assert ds["best_on_edge"].sel(phase="P").values.ravel().tolist() == [True, True]
    said = [w for w in ds.attrs["warnings"] if "best_threshold on the edge" in w]
    assert len(said) == 2
    assert "0.4, the highest threshold searched, in all P, where the fine curve's f1_lb does not rise above it" \
        in said[0]
    assert "0.1 in all P, where no pick matched at any threshold (f1_lb 0 everywhere)" in said[1]
