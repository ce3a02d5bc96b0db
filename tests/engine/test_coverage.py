"""--coverage through the engine on tests/data/paired_windows (SPEC §2 "Coverage"): picks filtered on the workers.

Scoring with a coverage must equal scoring inputs that were cut to the common coverage beforehand (by plain
interval checks), table for table, with the exclusions counted.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pickscale
from pickscale.report.tables import tables

DATA = Path(__file__).resolve().parents[1] / "data" / "paired_windows"
NS = lambda col: pd.to_datetime(col, utc=True).astype("int64")  # noqa: E731


@pytest.fixture(scope="module")
def inputs():
    ref = pd.read_csv(DATA / "reference.csv")
    picks = pd.read_csv(DATA / "picks.csv")
    win = pd.read_csv(DATA / "windows.csv")
    return ref, picks, win


def _same_tables(a, b, *, rates: bool = True) -> None:
    """Every table equal; without ``rates``, all but ``pick_rates`` (SPEC §20 counts the picks outside the
    coverage too, so inputs cut to the coverage beforehand have fewer)."""
    ta, tb = tables(a), tables(b)
    assert set(ta) == set(tb)
    for name in ta:
        if name != "pick_rates" or rates:
            assert ta[name].to_csv(index=False) == tb[name].to_csv(index=False), name


@pytest.mark.slow
def test_windows_csv_holds_every_pick_and_arrival(inputs):
    # PROVENANCE: no model saw data outside the windows, and every pick lies inside one: nothing is excluded,
    # and no number changes.
    plain = pickscale.score(str(DATA / "reference.csv"), str(DATA / "picks.csv"))
    covered = pickscale.score(str(DATA / "reference.csv"), str(DATA / "picks.csv"),
                              coverage=str(DATA / "windows.csv"))
    assert covered.attrs["exclusions"]["reference_outside_coverage"] == 0
    assert covered.attrs["exclusions"]["picks_outside_coverage"] == 0
    assert covered.attrs["coverage"]["windows"] == 303 and not covered.attrs["coverage"]["by_model"]
    _same_tables(plain, covered)
    # Without a coverage, the models that emit nothing at some windows are named, with numbers.
    assert any("model 'PhaseNet(190703-214543)' has no pick at 2 of the 108 scored station(s)" in w
               and "which hold 4 of the 308" in w for w in plain.attrs["warnings"])
    assert not any("has no pick at" in w for w in covered.attrs["warnings"])


def _cut(ref, picks, win, models):
    """The inputs cut to the common coverage, by interval checks (the brute force)."""
    def inside(frame, rows):
        rows = rows.assign(lo=NS(rows["start"]), hi=NS(rows["end"]))[["dataset", "station", "lo", "hi"]]
        both = frame[["dataset", "station"]].assign(t=NS(frame["time"]), row=np.arange(len(frame)))
        both = both.merge(rows, on=["dataset", "station"])
        out = np.zeros(len(frame), dtype=bool)
        out[both.loc[(both["t"] >= both["lo"]) & (both["t"] <= both["hi"]), "row"].to_numpy()] = True
        return out
    common = np.ones(len(ref), dtype=bool)
    pick_ok = np.ones(len(picks), dtype=bool)
    pick_own = np.zeros(len(picks), dtype=bool)
    for m in models:
        mine = win[win["model"] == m]
        common &= inside(ref, mine)
        pick_ok &= inside(picks, mine)
        pick_own |= (picks["model"] == m).to_numpy() & inside(picks, mine)
    return ref[common], picks[pick_ok & pick_own], int((~common).sum()), int((~(pick_ok & pick_own)).sum())


@pytest.mark.slow
@pytest.mark.parametrize("exchange_method", ["direct", "shuffle"])
def test_per_model_windows_score_the_common_coverage(inputs, tmp_path, exchange_method):
    ref, picks, win = inputs
    models = sorted(picks["model"].unique())
    # GPD was "not run" on the first 10 windows of stead_ta109c: those windows are out for every model.
    per_model = pd.concat([win.assign(model=m) for m in models], ignore_index=True)
    stead = per_model.index[(per_model["model"] == "GPD(model_pol_best)")
                            & (per_model["dataset"] == "stead_ta109c")][:10]
    dropped = per_model.loc[stead]
    per_model = per_model.drop(index=stead)
    path = tmp_path / "windows_per_model.csv"
    per_model.to_csv(path, index=False)
    ds = pickscale.score(ref, picks, coverage=str(path), exchange_method=exchange_method)
    cut_ref, cut_picks, n_ref_out, n_picks_out = _cut(ref, picks, per_model, models)
    lost = int(dropped["n_ref_P"].sum() + dropped["n_ref_S"].sum())  # windows.csv counts each window's arrivals
    assert n_ref_out == lost == 20 and n_picks_out > 0
    assert ds.attrs["exclusions"]["reference_outside_coverage"] == n_ref_out
    assert ds.attrs["exclusions"]["picks_outside_coverage"] == n_picks_out
    gpd = ds.attrs["coverage"]["datasets"]["stead_ta109c"]["models"]["GPD(model_pol_best)"]
    assert gpd["reference_covered"] == 99 - lost and gpd["reference_lost"] == 0 and gpd["picks_outside_own"] > 0
    other = ds.attrs["coverage"]["datasets"]["stead_ta109c"]["models"]["PhaseNet(190703-214543)"]
    assert other["reference_covered"] == 99 and other["reference_lost"] == lost
    assert any(f"common coverage ({99 - lost} arrival(s))" in w for w in ds.attrs["warnings"])
    cut = pickscale.score(cut_ref, cut_picks)
    _same_tables(ds, cut, rates=False)
    # SPEC §20: the pick rates count every pick, also those outside the common coverage.
    at_floor = {name: int(d["rate_picks"].isel(threshold=0).sum()) for name, d in (("all", ds), ("cut", cut))}
    assert at_floor["all"] - at_floor["cut"] == n_picks_out
