"""SPEC §2, "Per-phase shared thresholds": the rows of a phase are read at its own threshold.

A worked example by hand, the options' rules (one value means both, the store's attributes round-trip,
old stores' single value still opens), and a property: scoring with ``{"P": a, "S": b}`` equals, phase by
phase, scoring with ``a`` (P rows) and with ``b`` (S rows) on every table read at the shared threshold.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pickscale
from pickscale.errors import OptionsError
from pickscale.options import Options, default_grid
from pickscale.report.tables import tables, to_csv_bytes

pytestmark = pytest.mark.filterwarnings("ignore::pickscale.PickscaleWarning")


def _score(ref, picks, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pickscale.score(ref, picks, progress=False, **kw)


def worked_inputs():
    """One station A, one model m; times in seconds.

    P arrivals at 10 s and 30 s; P picks at 10.1 s (conf 0.6) and 30.2 s (conf 0.4).
    S arrivals at 15 s and 35 s; S picks at 15.1 s (conf 0.4), 35.1 s (conf 0.2) and 30.05 s (conf 0.7:
    4.95 s from the nearest S arrival, 0.05 s from the P arrival at 30 s).
    """
    ref = pd.DataFrame({"station": "A", "phase": ["P", "P", "S", "S"], "time": [10.0, 30.0, 15.0, 35.0]})
    picks = pd.DataFrame({"station": "A", "model": "m", "phase": ["P", "P", "S", "S", "S"],
                          "time": [10.1, 30.2, 15.1, 35.1, 30.05], "conf": [0.6, 0.4, 0.4, 0.2, 0.7]})
    return ref, picks


@pytest.mark.slow
def test_worked_example_p_at_half_s_at_three_tenths():
    """By hand, tol 0.5 s:

    threshold 0.3 for both --
      P: both P picks (0.6, 0.4) survive and match: emitted 2, matched 2, recall 2/2 = 1, residuals 0.1 and
         0.2 s, mae 0.15 s; no P arrival is swapped (both matched by their own phase).
      S: 15.1 (0.4) matches 15 s; 35.1 (0.2) is below 0.3; 30.05 (0.7) is 4.95 s from any S arrival: emitted
         2, matched 1, recall 1/2, precision_lb 1/2, mae 0.1 s.
    P = 0.5, S = 0.3 --
      P at 0.5: only 10.1 (0.6) survives: emitted 1, matched 1, recall 1/2, precision_lb 1/1,
         f1_lb 2·1/(2 + 1) = 2/3, mae 0.1 s.  The P arrival at 30 s has no own-phase pick >= 0.5 but the S
         pick 30.05 (0.7 >= 0.5) lies within tol: swapped, P_matched_as_S = 1.
      S at 0.3: exactly as above (recall 1/2, precision_lb 1/2, f1_lb 2·1/(2 + 2) = 1/2); S_matched_as_P 0.
      phase_quality: swap_rate (1 + 0) / (2 + 2) = 0.25; duplicate_rate 0 / (1 + 1) = 0.
    """
    ref, picks = worked_inputs()
    both = tables(_score(ref, picks, threshold=0.3))
    per = tables(_score(ref, picks, threshold={"P": 0.5, "S": 0.3}))

    def row(t, name, phase):
        frame = t[name]
        return frame[frame.phase == phase].iloc[0]

    p03, s03 = row(both, "detection", "P"), row(both, "detection", "S")
    assert (p03.emitted, p03.matched, p03.recall) == (2, 2, 1.0)
    assert (s03.emitted, s03.matched, s03.recall, s03.precision_lb) == (2, 1, 0.5, 0.5)
    assert row(both, "timing", "P").mae == pytest.approx(0.15)
    p, s = row(per, "detection", "P"), row(per, "detection", "S")
    assert (p.n_reference, p.emitted, p.matched, p.recall, p.precision_lb) == (2, 1, 1, 0.5, 1.0)
    assert p.f1_lb == pytest.approx(2 / 3)
    assert (s.n_reference, s.emitted, s.matched, s.recall, s.precision_lb, s.f1_lb) == (2, 2, 1, 0.5, 0.5, 0.5)
    assert row(per, "timing", "P").mae == pytest.approx(0.1)
    assert row(per, "timing", "S").mae == pytest.approx(0.1)
    pq = per["phase_quality"].iloc[0]
    assert (pq.P_n_reference, pq.P_matched_as_S, pq.S_n_reference, pq.S_matched_as_P) == (2, 1, 2, 0)
    assert (pq.swap_rate, pq.duplicate_rate) == (0.25, 0.0)
    assert both["phase_quality"].iloc[0].swap_rate == 0.0
    # The sweep, and every reading over all thresholds, does not depend on the shared threshold.
    assert to_csv_bytes(per["sweep"]) == to_csv_bytes(both["sweep"])


@pytest.mark.slow
def test_one_value_means_both_and_equal_values_are_one():
    assert Options(threshold={"P": 0.25, "S": 0.25}) == Options(threshold=0.25)
    assert Options(threshold={"S": 0.25, "P": 0.25}).to_attrs() == Options(threshold=0.25).to_attrs()
    ref, picks = worked_inputs()
    one, two = _score(ref, picks, threshold=0.25), _score(ref, picks, threshold={"P": 0.25, "S": 0.25})
    assert one.attrs["options"] == two.attrs["options"] and one.attrs["options"]["threshold"] == 0.25
    for name, frame in tables(one).items():
        assert to_csv_bytes(frame) == to_csv_bytes(tables(two)[name]), name


def test_both_thresholds_join_the_grid_and_the_attributes_round_trip():
    o = Options(threshold={"P": 0.55, "S": 0.25})
    assert 0.55 in o.grid and 0.25 in o.grid and o.grid.size == default_grid(0.3).size + 2  # 0.3 is on it already
    assert o.phase_thresholds == (0.55, 0.25) and o.per_phase
    assert o.threshold_of("P") == 0.55 and o.threshold_of(1) == 0.25
    assert o.grid[o.threshold_indices].tolist() == [0.55, 0.25]
    attrs = json.loads(json.dumps(o.to_attrs()))  # plain JSON, as the store keeps it
    assert attrs["threshold"] == {"P": 0.55, "S": 0.25}
    assert Options.from_attrs(attrs) == o
    # A store written before per-phase thresholds holds one number: it still opens as before.
    old = Options.from_attrs({"threshold": 0.3, "tol": 0.5, "residual_tol": 2.0, "thresholds": [0.02, 0.3]})
    assert old.threshold == 0.3 and not old.per_phase and old.threshold_index == 1
    with pytest.raises(ValueError, match="threshold_indices"):
        o.threshold_index  # noqa: B018 (one index for two thresholds would read a phase at the other's)
    # Off a given grid: each phase's threshold joins it.
    assert Options(threshold={"P": 0.55, "S": 0.25}, thresholds=[0.1, 0.5]).grid.tolist() == [0.1, 0.25, 0.5, 0.55]


@pytest.mark.parametrize("value, message", [
    ({"P": 2, "S": 0.3}, r"threshold P must lie in \[0, 1\]; got 2.0"),
    ({"P": 0.5, "X": 0.3}, "threshold names an unknown phase 'X'"),
    ({"P": 0.5}, "threshold gives no value for S"),
    ({"P": 0.5, "S": "high"}, "threshold S must be a number"),
    ({"P": 0.5, "S": float("nan")}, "threshold S must be finite"),
])
def test_bad_per_phase_thresholds_are_refused_naming_the_option(value, message):
    with pytest.raises(OptionsError, match=message) as info:
        Options(threshold=value)
    assert info.value.options == ("threshold",)


@pytest.mark.slow
def test_a_store_keeps_the_per_phase_thresholds_and_its_tables(tmp_path):
    ref, picks = worked_inputs()
    ds = _score(ref, picks, threshold={"P": 0.5, "S": 0.3})
    pickscale.save(ds, tmp_path / "r.zarr")
    back = pickscale.open_results(tmp_path / "r.zarr")  # its consistency checks read each phase at its own
    assert back.attrs["options"]["threshold"] == {"P": 0.5, "S": 0.3}
    for name, frame in tables(ds).items():
        assert to_csv_bytes(tables(back)[name]) == to_csv_bytes(frame), name


@pytest.mark.slow
def test_a_store_whose_phase_threshold_is_off_its_grid_is_refused(tmp_path):
    from pickscale.errors import StoreError
    from pickscale.store.manifest import write_manifest

    ref, picks = worked_inputs()
    store = pickscale.save(_score(ref, picks, threshold={"P": 0.5, "S": 0.3}), tmp_path / "r.zarr")
    meta_file = tmp_path / "r.zarr" / "zarr.json"
    meta = json.loads(meta_file.read_text())
    meta["attributes"]["options"]["threshold"] = {"P": 0.5, "S": 0.33}
    meta_file.write_text(json.dumps(meta))
    write_manifest(tmp_path / "r.zarr")
    with pytest.raises(StoreError, match="does not hold the shared threshold 0.33"):
        pickscale.open_results(store)


@pytest.mark.slow
def test_figures_read_each_phase_at_its_own_and_say_both():
    from pickscale.report import figures
    from pickscale.report.figures.detection import recall_bars
    from pickscale.report.figures.style import fmt_theta

    assert fmt_theta(0.3) == "0.3" and fmt_theta({"P": 0.5, "S": 0.3}) == "P 0.5 / S 0.3"
    ref, picks = worked_inputs()
    ds = _score(ref, picks, threshold={"P": 0.5, "S": 0.3})
    bars = recall_bars(ds)
    assert bars.recall[("all", "m", "P")] == 0.5 and bars.recall[("all", "m", "S")] == 0.5
    assert bars.threshold == {"P": 0.5, "S": 0.3}
    both = recall_bars(_score(ref, picks, threshold=0.3))
    assert both.recall[("all", "m", "P")] == 1.0
    drawn = figures.figures(ds)
    captions = {name: " ".join(t.get_text() for t in fig.texts) for name, fig in drawn.items()}
    for name in ("recall_treatments", "timing", "reliability", "stations"):
        assert "P 0.5 / S 0.3" in captions[name], (name, captions[name])


def test_an_extension_needs_the_store_s_per_phase_thresholds():
    from pickscale.engine.extension_options import check_options

    stored = Options(threshold={"P": 0.5, "S": 0.3}).to_attrs()
    assert check_options(stored, {})["threshold"] == {"P": 0.5, "S": 0.3}
    assert check_options(stored, {"threshold": {"S": 0.3, "P": 0.5}})["threshold"] == {"P": 0.5, "S": 0.3}
    for other in (0.3, 0.5, {"P": 0.3, "S": 0.5}):
        with pytest.raises(OptionsError, match="threshold .* differs from the store's") as info:
            check_options(stored, {"threshold": other})
        assert info.value.options == ("threshold",)
    with pytest.raises(OptionsError, match="differs from the store's"):
        check_options(Options().to_attrs(), {"threshold": {"P": 0.5, "S": 0.3}})


@pytest.mark.slow
def test_extending_a_per_phase_store_equals_one_run():
    """m2's S pick at +20 s has conf 0.35: counted at S 0.3, not at P 0.5 (or at 0.5 for both)."""
    from pickscale.engine.extension import extended
    from tests.helpers.extend import stretches

    ref, picks = stretches(1)
    theta = {"P": 0.5, "S": 0.3}
    stored = _score(ref, picks[picks.model == "m1"], threshold=theta)
    whole = _score(ref, picks, threshold=theta)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = extended(stored, ref, picks[picks.model == "m2"], progress=False)
        with pytest.raises(OptionsError, match="threshold 0.5 differs from the store's"):
            extended(stored, ref, picks[picks.model == "m2"], threshold=0.5, progress=False)
    assert got.attrs["options"]["threshold"] == theta
    for name, frame in tables(whole).items():
        assert to_csv_bytes(tables(got)[name]) == to_csv_bytes(frame), name
    det = tables(got)["detection"].set_index(["phase", "model"])
    assert det.loc[("S", "m2"), "matched"] == 2 and det.loc[("P", "m2"), "matched"] == 4


# ---------------------------------------------------------------------------------------------------------------
# The property: {"P": a, "S": b} is, phase by phase, a run at a (P rows) and a run at b (S rows).

THETAS = [k / 20 for k in range(1, 20)]  # 0.05 … 0.95, on the confidences' lattice: exact ties happen
GRID = [k / 10 for k in range(1, 10)]


@st.composite
def catalogues(draw):
    n_ref = draw(st.integers(1, 14))
    ref = pd.DataFrame({
        "station": draw(st.lists(st.sampled_from(["A", "B", "C"]), min_size=n_ref, max_size=n_ref)),
        "phase": draw(st.lists(st.sampled_from(["P", "S"]), min_size=n_ref, max_size=n_ref)),
        "time": [t * 0.25 for t in draw(st.lists(st.integers(0, 400), min_size=n_ref, max_size=n_ref))],
        "magnitude": [m / 2 for m in draw(st.lists(st.integers(0, 6), min_size=n_ref, max_size=n_ref))],
    })
    # One pick on the first arrival, at full confidence: every catalogue is one the scope accepts (a pick at
    # or above the floor, pick and arrival spans that meet), so every example checks the property.
    rows = [{"station": ref.station[0], "model": "m1", "phase": ref.phase[0], "time": ref.time[0], "conf": 1.0}]
    for _ in range(draw(st.integers(0, 24))):
        near = draw(st.integers(0, n_ref - 1))
        offset = draw(st.sampled_from([0.0, 0.1, -0.2, 0.3, 0.5, -0.6, 1.5, 7.0]))
        rows.append({"station": draw(st.sampled_from([ref.station[near], "A"])),
                     "model": draw(st.sampled_from(["m1", "m2"])),
                     "phase": draw(st.sampled_from([ref.phase[near], "P", "S"])),
                     "time": ref.time[near] + offset, "conf": draw(st.integers(1, 20)) / 20})
    return ref, pd.DataFrame(rows)


def _read_at_shared(frames, name):
    return frames[name] if "phase" in frames[name].columns else None


@given(cat=catalogues(), a=st.sampled_from(THETAS), b=st.sampled_from(THETAS))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@pytest.mark.slow
def test_per_phase_equals_each_phase_scored_at_its_own_threshold(cat, a, b):
    ref, picks = cat
    grid = sorted(set(GRID) | {a, b})
    kw = dict(thresholds=grid, time_bin="30s", tols=[0.25, 0.5], group_by="magnitude:1,2")
    runs = {}
    for key, threshold in (("mixed", {"P": a, "S": b}), ("P", a), ("S", b)):
        ds = _score(ref, picks, threshold=threshold, **kw)
        runs[key] = ds
    frames = {key: tables(pickscale.bootstrap(ds, draws=40)) for key, ds in runs.items()}
    mixed = frames["mixed"]
    checked = set()
    for name, frame in mixed.items():
        if "phase" not in frame.columns:
            continue
        for phase in ("P", "S"):
            got = frame[frame.phase == phase].reset_index(drop=True)
            want = frames[phase][name][frames[phase][name].phase == phase].reset_index(drop=True)
            assert to_csv_bytes(got) == to_csv_bytes(want), (name, phase)
        checked.add(name)
    assert {"detection", "timing", "over_time", "tolerance", "by_group", "model_differences"} <= checked
    # phase_quality: P columns from the run at a, S columns from the run at b; the rates over both so read.
    pq, pa, pb = (frames[k]["phase_quality"] for k in ("mixed", "P", "S"))
    for col, source in (("P_n_reference", pa), ("P_matched_as_S", pa), ("S_n_reference", pb), ("S_matched_as_P", pb)):
        assert pq[col].tolist() == source[col].tolist(), col
    n = pq.P_n_reference + pq.S_n_reference
    want_swap = ((pq.P_matched_as_S + pq.S_matched_as_P) / n).where(n > 0)
    assert np.allclose(pq.swap_rate, want_swap, equal_nan=True, rtol=0, atol=0)

    def at(ds, name, theta, phase):
        return ds[name].sum("station").sel(threshold=theta, phase=phase, drop=True)

    dup = at(runs["P"], "duplicates", a, "P") + at(runs["S"], "duplicates", b, "S")
    matched = at(runs["P"], "matched", a, "P") + at(runs["S"], "matched", b, "S")
    rate = (dup / matched).where(matched > 0).where(runs["mixed"].model_present)
    want = rate.to_dataframe(name="r").reset_index().dropna(subset=["r"])
    got = pq.set_index(["dataset", "model"]).duplicate_rate
    for _, r in want.iterrows():
        assert got[(r.dataset, r.model)] == r.r
    # The store's counts at the shared threshold (per time bin, per group, per tolerance) follow suit.
    for name in ("matched_over_time", "matched_by_group", "matched_at_tol", "emitted_over_time"):
        for phase, key in (("P", "P"), ("S", "S")):
            got_v = runs["mixed"][name].sel(phase=phase)
            want_v = runs[key][name].sel(phase=phase)
            xr.testing.assert_identical(got_v.drop_vars("threshold", errors="ignore"),
                                        want_v.drop_vars("threshold", errors="ignore"))
