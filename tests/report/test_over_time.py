"""SPEC §10 end to end: per-bin counts add up to the unbinned ones, the six tables do not change, and
over_time.csv and figures/recall_over_time read as worked out by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pickscale
from pickscale.cli import main
from pickscale.report.figures import figures
from pickscale.report.tables import TABLE_NAMES, to_csv_bytes

H = "2024-03-01T0{}:{}"


def _inputs():
    # Station A: P arrivals at 00:10 and 01:20 and an S arrival at 01:40; station B: a P arrival at 00:30.
    ref = pd.DataFrame({"station": ["A", "A", "A", "B"], "phase": ["P", "P", "S", "P"],
                        "time": ["2024-03-01T00:10:00Z", "2024-03-01T01:20:00Z", "2024-03-01T01:40:00Z",
                                 "2024-03-01T00:30:00Z"]})
    # m1 finds A's 00:10 P and B's P; m2 finds A's 01:20 P and the S; m2 also emits a P at 01:50 (unmatched),
    # and m1 a P at 01:05 with conf 0.2 (below the shared threshold 0.3: in no count at 0.3).
    picks = pd.DataFrame({
        "model": ["m1", "m1", "m1", "m2", "m2", "m2"],
        "station": ["A", "B", "A", "A", "A", "A"],
        "phase": ["P", "P", "P", "P", "S", "P"],
        "time": ["2024-03-01T00:10:00.1Z", "2024-03-01T00:30:00Z", "2024-03-01T01:05:00Z",
                 "2024-03-01T01:20:00.2Z", "2024-03-01T01:40:00Z", "2024-03-01T01:50:00Z"],
        "conf": [0.9, 0.8, 0.2, 0.7, 0.6, 0.5]})
    return ref, picks


@pytest.fixture(scope="module")
def runs():
    ref, picks = _inputs()
    return pickscale.score(ref, picks), pickscale.score(ref, picks, time_bin="1h")


@pytest.mark.slow
def test_over_time_by_hand(runs):
    _, ds = runs
    t = pickscale.tables(ds)["over_time"]
    assert t.columns.tolist() == ["dataset", "phase", "model", "time_bin", "n_reference", "emitted", "matched",
                                  "recall", "precision_lb"]
    rows = {(r.phase, r.model, r.time_bin): (r.n_reference, r.emitted, r.matched) for r in t.itertuples()}
    # P: 2 arrivals in hour 0 (A 00:10, B 00:30), 1 in hour 1 (A 01:20).
    assert rows[("P", "m1", "2024-03-01T00:00:00Z")] == (2, 2, 2)
    assert rows[("P", "m1", "2024-03-01T01:00:00Z")] == (1, 0, 0)
    assert rows[("P", "m2", "2024-03-01T00:00:00Z")] == (2, 0, 0)
    assert rows[("P", "m2", "2024-03-01T01:00:00Z")] == (1, 2, 1)
    assert rows[("S", "m2", "2024-03-01T01:00:00Z")] == (1, 1, 1)
    rec = t.set_index(["phase", "model", "time_bin"])["recall"]
    assert rec[("P", "m2", "2024-03-01T01:00:00Z")] == 1.0
    assert np.isnan(rec[("S", "m1", "2024-03-01T00:00:00Z")])  # no S arrival in hour 0
    assert len(t) == 2 * 2 * 2  # 2 phases x 2 models x 2 bins


@pytest.mark.slow
def test_bins_add_up_and_six_tables_unchanged(runs):
    plain, binned = runs
    k = float(binned.attrs["options"]["threshold"])
    assert (binned.emitted_over_time.sum("time_bin") == binned.emitted.sel(threshold=k)).all()
    assert (binned.matched_over_time.sum("time_bin") == binned.matched.sel(threshold=k)).all()
    assert (binned.n_reference_over_time.sum("time_bin") == binned.n_reference).all()
    a, b = pickscale.tables(plain), pickscale.tables(binned)
    assert list(a) == [*TABLE_NAMES, "pick_rates"] and list(b) == [*TABLE_NAMES, "over_time", "pick_rates"]
    for name in TABLE_NAMES:
        assert to_csv_bytes(a[name]) == to_csv_bytes(b[name]), name
    # No time bin: no new variable, coordinate or attribute.
    assert not any("over_time" in str(v) for v in plain.data_vars) and "time_bin" not in plain.coords
    assert "time_bin" not in plain.attrs["options"]


@pytest.mark.slow
def test_recall_over_time_slices_in_xarray(runs):
    _, ds = runs
    r = ds.recall_over_time.sel(dataset="all", model="m1", phase="P")
    assert r.sel(time_bin="2024-03-01T00:00").item() == 1.0


@pytest.mark.slow
def test_figure_only_with_time_bins(runs):
    plain, binned = runs
    assert "recall_over_time" not in figures(plain)
    assert "recall_over_time" in figures(binned)


@pytest.mark.slow
def test_cli_time_bin(tmp_path, capsys):
    ref, picks = _inputs()
    ref.to_csv(tmp_path / "ref.csv", index=False)
    picks.to_csv(tmp_path / "picks.csv", index=False)
    args = ["score", "--reference", str(tmp_path / "ref.csv"), "--picks", str(tmp_path / "picks.csv"), "--quiet"]
    assert main([*args, "--out", str(tmp_path / "bad"), "--time-bin", "2MS"]) == 2
    assert "--time-bin" in capsys.readouterr().err and not (tmp_path / "bad").exists()
    assert main([*args, "--out", str(tmp_path / "a"), "--no-figures"]) == 0
    assert main([*args, "--out", str(tmp_path / "b"), "--time-bin", "1h"]) == 0
    assert not (tmp_path / "a" / "over_time.csv").exists()
    assert (tmp_path / "b" / "over_time.csv").exists()
    assert (tmp_path / "b" / "figures" / "recall_over_time.png").exists()
    for name in TABLE_NAMES:
        assert (tmp_path / "a" / f"{name}.csv").read_bytes() == (tmp_path / "b" / f"{name}.csv").read_bytes()
    stored = pickscale.open_results(tmp_path / "b" / "results.zarr")
    assert stored.attrs["options"]["time_bin"] == "1h" and stored.time_bin.dtype == np.dtype("datetime64[ns]")
