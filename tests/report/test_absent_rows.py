"""Issue 20, item 4: a model that never ran on a dataset has no rows in that dataset's tables (SPEC §2),
in over_time.csv (§10) as in every other table.

Worked by hand: dataset d1 has one P and one S arrival at station A (00:10), dataset d2 one P and one S at
station B (07:10); model a picks only in d1, model b only in d2, each finding both of its dataset's arrivals.
With ``time_bin="6h"`` the run's bins are 00:00 and 06:00, so over_time has 2 datasets' own model × 2 phases ×
2 bins = 8 rows — none for (d1, b) or (d2, a), which used to appear with n_reference filled in, emitted =
matched = 0 and recall NaN.
"""

from __future__ import annotations

import pandas as pd
import pytest

import pickscale


def _inputs():
    ref = pd.DataFrame({
        "dataset": ["d1", "d1", "d2", "d2"], "station": ["A", "A", "B", "B"], "phase": ["P", "S", "P", "S"],
        "time": ["2024-03-01T00:10:00Z", "2024-03-01T00:10:05Z", "2024-03-01T07:10:00Z", "2024-03-01T07:10:05Z"],
        "magnitude": [1.0, 1.0, 2.5, 2.5]})
    picks = pd.DataFrame({
        "dataset": ["d1", "d1", "d2", "d2"], "model": ["a", "a", "b", "b"], "station": ["A", "A", "B", "B"],
        "phase": ["P", "S", "P", "S"],
        "time": ["2024-03-01T00:10:00.1Z", "2024-03-01T00:10:05.1Z", "2024-03-01T07:10:00.1Z",
                 "2024-03-01T07:10:05.2Z"],
        "conf": [0.9, 0.8, 0.9, 0.8]})
    return ref, picks


@pytest.fixture(scope="module")
def frames():
    ref, picks = _inputs()
    ds = pickscale.score(ref, picks, time_bin="6h", tols=[0.1, 0.5], group_by="magnitude:2", budget=[1, 2])
    assert ds.model_present.sel(dataset="d1").values.tolist() == [True, False]
    assert ds.model_present.sel(dataset="d2").values.tolist() == [False, True]
    return pickscale.tables(ds)


def _pairs(frame: pd.DataFrame) -> set[tuple[str, str]]:
    return set(zip(frame["dataset"], frame["model"] if "model" in frame else frame["model_a"]))


@pytest.mark.slow
def test_over_time_has_rows_only_for_models_present(frames):
    t = frames["over_time"]
    assert _pairs(t) == {("d1", "a"), ("d2", "b")}
    assert len(t) == 2 * 2 * 2  # (d1, a) and (d2, b) × 2 phases × 2 bins
    rows = {(r.dataset, r.phase, r.model, r.time_bin): (r.n_reference, r.emitted, r.matched)
            for r in t.itertuples()}
    assert rows[("d1", "P", "a", "2024-03-01T00:00:00Z")] == (1, 1, 1)
    assert rows[("d1", "P", "a", "2024-03-01T06:00:00Z")] == (0, 0, 0)
    assert rows[("d2", "S", "b", "2024-03-01T00:00:00Z")] == (0, 0, 0)
    assert rows[("d2", "S", "b", "2024-03-01T06:00:00Z")] == (1, 1, 1)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["detection", "timing", "calibration", "reliability", "phase_quality", "sweep",
                                  "budgets", "tolerance", "by_group"])
def test_every_other_table_has_rows_only_for_models_present(frames, name):
    assert _pairs(frames[name]) == {("d1", "a"), ("d2", "b")}, name
