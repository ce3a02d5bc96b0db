"""SPEC §5, "Residuals on a grid" (issue 25, item 7): picks at a fixed grid and a reference at a fixed offset
into windows -- the worked example, the rule's edges, random times that never flag, and the real data."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pickscale
from pickscale.metrics.grid import on_grid, residual_grid

MS = 1_000_000
DATA = Path(__file__).resolve().parents[1] / "data"


def test_worked_example_of_spec():
    # 25 pairs: 23 at -0.1, 0, +0.1 or +0.2 s, and 2 at +0.013 and -0.047 s.
    residuals = [-100 * MS] * 5 + [0] * 9 + [100 * MS] * 6 + [200 * MS] * 3 + [13 * MS, -47 * MS]
    grid = residual_grid(residuals)
    # 0.5 s: residues 0 (9 pairs), 0.4 (5), 0.1 (6), 0.2 (3), …: 9 < 22.5.  0.25 s and 0.2 s: no residue holds
    # 22.5 either; 0.1 s: 23 at residue 0 >= 0.9 · 25 = 22.5, 4 distinct values >= 3: on a 0.1 s grid.
    assert grid == {"n": 25, "step_ns": 100 * MS, "offset_ns": 0, "count": 23, "values": 4}
    assert on_grid(grid)
    # One more pair off the grid: 23 of 26 = 88 % < 90 %: not on 0.1 s -- and not on 0.05 s either.
    assert residual_grid([*residuals, 31 * MS])["step_ns"] == 0


def test_the_rule_at_its_edges():
    on = [-100 * MS, 0, 100 * MS] * 7  # 21 pairs, 3 values on 0.1 s (and on no coarser step)
    assert residual_grid(on)["step_ns"] == 100 * MS and on_grid(residual_grid(on))
    # 19 pairs: too few, however regular.
    assert not on_grid(residual_grid(on[:19]))
    # Two values only: §5's concentration (a spike), not a grid.
    assert residual_grid([0, 100 * MS] * 15)["step_ns"] == 0
    # Every residual a multiple of 0.01 s (100 Hz samples): not a grid of the picker.
    assert residual_grid(list(range(-250 * MS, 250 * MS, 10 * MS)))["step_ns"] == 0
    # A grid at an offset: the reference sits 0.03 s past a point of the 0.1 s grid.
    shifted = residual_grid([r + 30 * MS for r in on])
    assert (shifted["step_ns"], shifted["offset_ns"]) == (100 * MS, 30 * MS)
    assert residual_grid([r - 30 * MS for r in on])["offset_ns"] == -30 * MS
    # The coarsest step that holds: multiples of 0.2 s are on 0.2 s (and on 0.1 s).
    assert residual_grid([-200 * MS, 0, 200 * MS, 400 * MS] * 6)["step_ns"] == 200 * MS
    assert residual_grid([])["step_ns"] == 0


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(20, 400), sampled=st.booleans())
@settings(max_examples=60, deadline=None)
def test_random_continuous_times_never_flag(seed, n, sampled):
    """Picks and arrivals at random times (ns, or on the samples of 100 Hz data): never on a grid."""
    rng = np.random.default_rng(seed)
    arrivals = rng.integers(0, 10**9 * 86_400, n)
    picks = arrivals + rng.normal(0, 0.15e9, n).astype(np.int64)
    if sampled:
        arrivals, picks = (t // (10 * MS) * (10 * MS) for t in (arrivals, picks))
    assert residual_grid(picks - arrivals)["step_ns"] == 0


def _score(folder: Path):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ds = pickscale.score(str(folder / "reference.csv"), str(folder / "picks.csv"))
    return ds, [str(w.message) for w in seen]


@pytest.mark.slow
def test_a_run_warns_once_per_model_and_per_reference():
    """One station, 30 arrivals: ``stepped`` picks on a 0.1 s grid anchored where each arrival's window starts
    (labels at a fixed offset into the window), ``free`` 3–40 ms off, all different."""
    t0 = pd.Timestamp("2024-01-01T00:00:00.013Z")
    times = [t0 + pd.Timedelta(seconds=60 * i) for i in range(30)]
    ref = pd.DataFrame({"station": "XX.A", "phase": "P", "time": times})
    steps = [pd.Timedelta(milliseconds=100 * (i % 5 - 2)) for i in range(30)]
    jitter = [pd.Timedelta(milliseconds=3 + i * 37 % 38) for i in range(30)]
    picks = pd.concat([
        pd.DataFrame({"model": "stepped", "station": "XX.A", "phase": "P",
                      "time": [t + d for t, d in zip(times, steps)], "conf": 0.9}),
        pd.DataFrame({"model": "free", "station": "XX.A", "phase": "P",
                      "time": [t + j for t, j in zip(times, jitter)], "conf": 0.9}),
    ], ignore_index=True)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ds = pickscale.score(ref, picks, tol=0.5)
    said = [str(w.message) for w in seen]
    grid = [m for m in said if "picks at a fixed grid" in m]
    offset = [m for m in said if "reference at a fixed offset into windows" in m]
    assert len(grid) == 1 and grid[0].startswith("stepped:") and "on a 0.1 s grid in all P (100% of 30" in grid[0]
    assert len(offset) == 1 and offset[0].startswith("dataset 'all' P:") and "stepped (0.1 s)" in offset[0]
    assert grid[0] in ds.attrs["warnings"] and offset[0] in ds.attrs["warnings"]
    assert [(f["flag"], f["model"]) for f in ds.attrs["data_quality"]] == [("pick_grid", "stepped"),
                                                                          ("reference_offset", "")]


@pytest.mark.slow
def test_paired_windows_flags_gpd_and_its_labels():
    """GPD steps its 4 s windows by 0.1 s from each window's start; the P labels sit at whole hundredths of a
    second on that grid (exactly 30.00 s into the NCEDC windows): every P residual of GPD is a multiple of
    0.1 s in all three datasets.  The S labels are read off the waveform: no grid there, and no other
    model is on one."""
    ds, said = _score(DATA / "paired_windows")
    flags = {(f["flag"], f["dataset"], f["phase"], f["model"]) for f in ds.attrs["data_quality"]
             if f["flag"] != "concentrated"}
    datasets = ("ncedc_deepdenoiser_ponly", "ncedc_phasenet", "stead_ta109c")
    assert flags == ({("pick_grid", d, "P", "GPD(model_pol_best)") for d in datasets}
                     | {("reference_offset", d, "P", "") for d in datasets})
    assert all(f["step"] == 0.1 for f in ds.attrs["data_quality"] if f["flag"] == "pick_grid")
    assert sum("picks at a fixed grid" in m for m in said) == 1
    assert sum("reference at a fixed offset into windows" in m for m in said) == 3


@pytest.mark.slow
def test_stead50_phasenet_does_not_flag():
    ds, said = _score(DATA / "stead50_phasenet")
    assert ds.attrs["data_quality"] == []
    assert not any("fixed grid" in m or "fixed offset" in m for m in said)
