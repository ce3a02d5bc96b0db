"""SPEC §13 end to end: tolerance.csv worked out by hand, its row at the run's own tol equal to detection.csv,
every other table and variable unchanged by ``tols``, and the figure's data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pickscale
from pickscale.report.figures import figures
from pickscale.report.figures.tolerance import has_tols, tolerance_rows
from pickscale.report.tables import TABLE_NAMES, to_csv_bytes

TOLS = [0.1, 0.25, 0.5, 1.0]
NEW = ("matched_at_tol", "recall_at_tol", "precision_lb_at_tol")


def _inputs():
    # Station A: a P arrival at 10:00 and an S arrival at 10:05; station B: a P arrival at 30:00.
    ref = pd.DataFrame({"station": ["A", "A", "B"], "phase": ["P", "S", "P"],
                        "time": ["2024-03-01T00:10:00Z", "2024-03-01T00:10:05Z", "2024-03-01T00:30:00Z"]})
    # m1: P picks 0.05 s and 0.3 s late; m2: a P pick 0.2 s late and an S pick 0.9 s late (beyond tol 0.5).
    picks = pd.DataFrame({
        "model": ["m1", "m1", "m2", "m2"], "station": ["A", "B", "A", "A"], "phase": ["P", "P", "P", "S"],
        "time": ["2024-03-01T00:10:00.05Z", "2024-03-01T00:30:00.3Z", "2024-03-01T00:10:00.2Z",
                 "2024-03-01T00:10:05.9Z"],
        "conf": [0.9, 0.8, 0.7, 0.6]})
    return ref, picks


@pytest.fixture(scope="module")
def runs():
    ref, picks = _inputs()
    return pickscale.score(ref, picks, progress=False), pickscale.score(ref, picks, tols=TOLS, progress=False)


@pytest.mark.slow
def test_tolerance_table_by_hand(runs):
    _, ds = runs
    t = pickscale.tables(ds)["tolerance"]
    assert t.columns.tolist() == ["dataset", "phase", "model", "tol", "n_reference", "emitted", "matched", "recall",
                                  "precision_lb"]
    rows = {(r.phase, r.model, r.tol): (r.n_reference, r.emitted, r.matched) for r in t.itertuples()}
    assert [rows[("P", "m1", x)] for x in TOLS] == [(2, 2, 1), (2, 2, 1), (2, 2, 2), (2, 2, 2)]
    assert [rows[("P", "m2", x)] for x in TOLS] == [(2, 1, 0), (2, 1, 1), (2, 1, 1), (2, 1, 1)]
    assert [rows[("S", "m2", x)] for x in TOLS] == [(1, 1, 0), (1, 1, 0), (1, 1, 0), (1, 1, 1)]
    rec = t.set_index(["phase", "model", "tol"])["recall"]
    assert rec[("P", "m1", 0.1)] == 0.5 and rec[("P", "m1", 0.5)] == 1.0 and rec[("S", "m2", 1.0)] == 1.0
    assert np.isnan(t.set_index(["phase", "model", "tol"])["precision_lb"][("S", "m1", 0.5)])  # m1 emits no S
    assert len(t) == 2 * 2 * len(TOLS)


@pytest.mark.slow
def test_row_at_the_runs_own_tol_equals_detection(runs):
    _, ds = runs
    t = pickscale.tables(ds)
    cols = ["dataset", "phase", "model", "n_reference", "emitted", "matched", "recall", "precision_lb"]
    at_tol = t["tolerance"][t["tolerance"]["tol"] == 0.5].drop(columns="tol").reset_index(drop=True)[cols]
    assert to_csv_bytes(at_tol) == to_csv_bytes(t["detection"][cols])


@pytest.mark.slow
def test_other_tables_and_variables_unchanged(runs):
    plain, toled = runs
    a, b = pickscale.tables(plain), pickscale.tables(toled)
    assert list(a) == [*TABLE_NAMES, "pick_rates"] and list(b) == [*TABLE_NAMES, "tolerance", "pick_rates"]
    for name in TABLE_NAMES:
        assert to_csv_bytes(a[name]) == to_csv_bytes(b[name]), name
    assert set(toled.data_vars) - set(plain.data_vars) == set(NEW)
    for name in plain.variables:
        x, y = plain[name], toled[name]
        assert x.dims == y.dims and x.dtype == y.dtype and x.attrs == y.attrs, name
        text = x.dtype.kind in "OT"
        same = x.values.tolist() == y.values.tolist() if text else x.values.tobytes() == y.values.tobytes()
        assert same, name
    # No tols: no new variable, dimension or attribute.
    assert "tol" not in plain.dims and "tol" not in plain.coords and "tols" not in plain.attrs["options"]
    assert toled.attrs["options"]["tols"] == TOLS and toled.tol.values.tolist() == TOLS


@pytest.mark.slow
def test_exhaustive_drops_lb(runs):
    ref, picks = _inputs()
    ds = pickscale.score(ref, picks, tols=[0.5], exhaustive=True, progress=False)
    assert "precision_at_tol" in ds and pickscale.tables(ds)["tolerance"].columns[-1] == "precision"


@pytest.mark.slow
def test_figure_only_with_tols_and_its_data(runs):
    plain, toled = runs
    assert not has_tols(plain) and "recall_vs_tolerance" not in figures(plain)
    assert "recall_vs_tolerance" in figures(toled, names=["recall_vs_tolerance"])
    panels, _ = tolerance_rows(toled)
    assert [(p.dataset, p.phase) for p in panels] == [("all", "P"), ("all", "S")]
    assert panels[0].tols.tolist() == TOLS
    assert panels[0].recall["m1"].tolist() == [0.5, 0.5, 1.0, 1.0]
    assert panels[1].recall["m2"].tolist() == [0.0, 0.0, 0.0, 1.0]


def test_declared_dims_and_attrs(runs):
    from pickscale.results import VARIABLES
    from pickscale.results.variables import OPTIONAL_COORDINATES

    _, ds = runs
    for name in NEW:
        assert ds[name].dims == VARIABLES[name].dims and ds[name].attrs["units"] == VARIABLES[name].units, name
        assert ds[name].attrs["description"] == VARIABLES[name].description, name
    assert ds["tol"].attrs == OPTIONAL_COORDINATES["tol"].attrs and ds["tol"].dtype == np.float64
    assert ds["matched_at_tol"].dtype == np.int64
