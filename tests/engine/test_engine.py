"""Issue 3 (Engine), end to end: files → ``pickscale.score`` → Dataset → tables, against brute force.

The expected numbers never come from pickscale: the synthetic catalogues of
``tests/catalogues.py`` carry their canonical rows by construction, SPEC §2 is
applied again by ``conftest_engine.expected_scope`` (pandas, row by row) and
SPEC §3–§7 by ``tests/brute.py`` station by station, summed over stations.
The real data sets are read with plain pandas (``conftest_engine.read_plain``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import pickscale
from pickscale.results.variables import RATE_VARIABLES
from pickscale.store import sanitise
from tests.helpers.catalogues import DATASETS, MODELS, trap_catalogue
from tests.helpers.checks import (
    EXCLUSION_KEYS,
    TABLE_NAMES,
    assert_same_csv,
    assert_store_matches,
    assert_tables_equal,
    csv_bytes,
    expected_results,
    nan_equal_json,
    no_default_client,
    read_plain,
)

# The real data sets: the copies in tests/data, else the shared originals.
DATA = next((p for p in (Path(__file__).parents[1] / "data", Path("/work/shared/data"))
             if (p / "stead50_phasenet" / "picks.csv").is_file()), None)
needs_data = pytest.mark.skipif(DATA is None, reason="the real data sets are not available")


# --------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def trap():
    return trap_catalogue()


@pytest.fixture(scope="module")
def trap_expected(trap):
    return expected_results(trap.ref_canonical, trap.picks_canonical)


@pytest.fixture(scope="module")
def trap_run(trap, tmp_path_factory):
    """The trap catalogue as CSV files, scored on Dask's local scheduler."""
    assert no_default_client(), "a distributed Client leaked from another test: this would not be the local scheduler"
    folder = tmp_path_factory.mktemp("trap_csv")
    ref_path, picks_path = trap.write_csv(folder)
    ds = pickscale.score(str(ref_path), str(picks_path))
    return ds, pickscale.tables(ds)


# --------------------------------------------------------------------------- 1. end to end vs brute force

@pytest.mark.slow
def test_catalogue_has_every_trap(trap, trap_expected):
    """The traps are really in the inputs (so the comparisons below exercise them)."""
    ref, picks = trap.reference, trap.picks
    assert list(ref.columns[:5]) == ["sequence", "event", "sta", "pha", "arrival_time"]
    assert {"weights", "trace_id", "phase_hint", "peak_time", "probability"} <= set(picks.columns)
    assert {"Pg", "Pn", "P*", "Sn", "pP", "sS"} <= set(ref["pha"])
    assert {"pP", "PKP", "p"} <= set(picks["phase_hint"])
    assert picks["trace_id"].str.endswith(".").any() and picks["trace_id"].str.endswith("..").any()
    assert (picks["trace_id"].str.rstrip(".").str.strip() == "CI.CLC").any()
    assert ref["arrival_time"].str.endswith("Z").any() and (~ref["arrival_time"].str.contains(r"Z|\+")).any()
    assert picks["peak_time"].str.endswith("+02:00").any()
    scope = trap_expected.scope
    # Known by construction: 3 Pg/P pairs per dataset + 1 exact copy; 3 + 2 arrivals at unpicked stations;
    # 8 + 3 picks at unreferenced stations; 4 arrivals outside the span per dataset.
    assert scope.exclusions["reference_duplicates"] == 10
    assert scope.exclusions["reference_at_unpicked_stations"] == 5
    assert scope.exclusions["picks_at_unreferenced_stations"] == 11
    assert scope.exclusions["reference_outside_span"] == 12
    assert scope.exclusions["picks_below_floor"] > 0
    assert scope.models["Ñuble"] == ["EQT", "PhaseNet", "eqt-lite"]  # GPD ran elsewhere only
    assert scope.models["Ridgecrest"] == list(MODELS)
    assert "CI.WBM" in scope.stations["Ridgecrest"]
    # Edge arrivals: kept exactly at first pick - residual_tol / last pick + residual_tol, excluded 1 ns beyond.
    for d in DATASETS:
        first, last, edges = trap.notes["span"][d]
        kept = set(scope.reference.loc[scope.reference["dataset"] == d, "time"])
        assert edges["kept_low"] in kept and edges["kept_high"] in kept
        assert not {edges["out_low"], edges["out_high"], edges["out_far"], edges["out_early"]} & kept


@pytest.mark.slow
def test_end_to_end_csv_matches_brute_force(trap_run, trap_expected):
    ds, got = trap_run
    assert_tables_equal(got, trap_expected.tables)
    assert_store_matches(ds, trap_expected)


@pytest.mark.slow
def test_end_to_end_parquet_matches_brute_force(trap, trap_expected, trap_run, tmp_path):
    """Typed Parquet columns (naive and UTC datetimes, float conf) give the same tables, byte for byte."""
    ref_path, picks_path = trap.write_parquet(tmp_path)
    ds = pickscale.score(str(ref_path), str(picks_path))
    got = pickscale.tables(ds)
    assert_tables_equal(got, trap_expected.tables)
    assert_same_csv(csv_bytes(got), csv_bytes(trap_run[1]))
    assert ds.attrs["exclusions"] == trap_expected.scope.exclusions


@pytest.mark.slow
@pytest.mark.parametrize("options", [
    dict(threshold=0.25, tol=0.3, residual_tol=1.0),  # shared threshold added to the default grid
    dict(threshold=0.5, thresholds=[0.05, 0.1, 0.2, 0.4, 0.6, 0.8], tol=0.5, residual_tol=0.5, budget=12),
], ids=["off-grid-threshold", "custom-grid-budget"])
def test_other_options_match_brute_force(trap, tmp_path, options):
    ref_path, picks_path = trap.write_csv(tmp_path)
    ds = pickscale.score(str(ref_path), str(picks_path), **options)
    exp = expected_results(trap.ref_canonical, trap.picks_canonical, **options)
    assert_tables_equal(pickscale.tables(ds), exp.tables)
    assert_store_matches(ds, exp)
    assert ds.attrs["exclusions"] == exp.scope.exclusions


@pytest.mark.slow
def test_exclusions_counted_and_warned(trap_run, trap_expected, trap):
    ds, _ = trap_run
    scope = trap_expected.scope
    assert ds.attrs["exclusions"] == scope.exclusions
    assert set(ds.attrs["exclusions"]) == set(EXCLUSION_KEYS)
    by_ds = {d: c for d, c in ds.attrs["exclusions_by_dataset"].items() if any(c.values())}
    want = {d: c for d, c in scope.exclusions_by_dataset.items() if any(c.values())}
    assert by_ds == want
    warnings = ds.attrs["warnings"]
    # Every warning case is reported with its count.
    phrases = {
        "picks_below_floor": "below the floor",
        "reference_duplicates": "duplicate",
        "reference_at_unpicked_stations": "without any pick",
        "picks_at_unreferenced_stations": "without reference",
        "reference_outside_span": "outside the picks' span",
    }
    for key, phrase in phrases.items():
        if key in ("picks_below_floor", "reference_duplicates"):  # warned once, with the total
            total = scope.exclusions[key]
            assert total and any(phrase in w and f" {total} " in w for w in warnings), (key, total, warnings)
            continue
        for d, counts in scope.exclusions_by_dataset.items():  # warned per dataset
            n = counts[key]
            if n:
                assert any(phrase in w and f" {n} " in w and repr(d) in w for w in warnings), (key, d, n, warnings)
    # Phases dropped, per original name, on each side.
    inputs = ds.attrs["inputs"]
    assert inputs["reference"]["phases_dropped"] == trap.ref_dropped_phases
    assert inputs["picks"]["phases_dropped"] == trap.picks_dropped_phases
    for side, dropped in (("reference", trap.ref_dropped_phases), ("picks", trap.picks_dropped_phases)):
        n = sum(dropped.values())
        assert any("neither P- nor S-like" in w and str(n) in w for w in warnings), side
    # The aliases that won (first hit in SPEC order), and the ignored look-alikes.
    assert inputs["reference"]["columns_used"] == {
        "dataset": "sequence", "station": "sta", "phase": "pha", "time": "arrival_time"}
    assert inputs["picks"]["columns_used"] == {
        "dataset": "Sequence", "model": "weights", "station": "trace_id", "phase": "phase_hint",
        "time": "peak_time", "conf": "probability"}
    assert inputs["reference"]["rows_read"] == len(trap.reference)
    assert inputs["picks"]["rows_read"] == len(trap.picks)


@pytest.mark.slow
def test_store_station_counts_sum_to_table_totals(trap_run):
    ds, t = trap_run
    theta = ds.attrs["options"]["threshold"]
    present = ds["model_present"]
    det = t["detection"].set_index(["dataset", "phase", "model"])
    for (d, ph, m), row in det.iterrows():
        assert bool(present.sel(dataset=d, model=m))
        sel = dict(dataset=d, phase=ph, model=m)
        assert int(ds["n_reference"].sel(dataset=d, phase=ph).sum("station")) == row["n_reference"]
        assert int(ds["emitted"].sel(**sel, threshold=theta).sum("station")) == row["emitted"]
        assert int(ds["matched"].sel(**sel, threshold=theta).sum("station")) == row["matched"]
    cal = t["calibration"].set_index(["dataset", "phase", "model"])
    for (d, ph, m), row in cal.iterrows():
        assert int(ds["cal_n"].sel(dataset=d, phase=ph, model=m).sum()) == row["n_picks"]
    rel = t["reliability"]
    got = ds["cal_n"].sum("station")
    for r in rel.itertuples(index=False):
        assert int(got.sel(dataset=r.dataset, phase=r.phase, model=r.model, bin=r.bin)) == r.n_picks
    sw = t["sweep"]
    tot = xr.Dataset({k: ds[k].sum("station") for k in ("emitted", "matched", "duplicates", "swapped")})
    tot_frame = tot.to_dataframe().reset_index()
    merged = sw.merge(tot_frame, on=["dataset", "phase", "model", "threshold"], how="left",
                      suffixes=("", "_store"), validate="one_to_one")
    for k in ("emitted", "matched", "duplicates", "swapped"):
        np.testing.assert_array_equal(merged[k].to_numpy(), merged[f"{k}_store"].to_numpy(), err_msg=k)
    n_ref = ds["n_reference"].sum("station").to_dataframe().reset_index()
    merged = sw.merge(n_ref, on=["dataset", "phase"], how="left", suffixes=("", "_store"))
    np.testing.assert_array_equal(merged["n_reference"].to_numpy(), merged["n_reference_store"].to_numpy())
    pq = t["phase_quality"]
    for r in pq.itertuples(index=False):
        sel = dict(dataset=r.dataset, model=r.model, threshold=theta)
        assert int(tot["swapped"].sel(**sel, phase="P")) == r.P_matched_as_S
        assert int(tot["swapped"].sel(**sel, phase="S")) == r.S_matched_as_P
    # Timing n_pairs at the shared threshold is the number of stored pairs with conf >= θ.
    tim = t["timing"]
    names = {k: ds[k].values.tolist() for k in ("dataset", "model")}
    for r in tim.itertuples(index=False):
        mask = ((ds["pair_dataset"].values == names["dataset"].index(r.dataset))
                & (ds["pair_model"].values == names["model"].index(r.model))
                & (ds["pair_phase"].values == ("P", "S").index(r.phase))
                & (ds["pair_conf"].values >= theta))
        assert int(mask.sum()) == r.n_pairs


@pytest.mark.slow
def test_absent_models(trap_run):
    """A model absent from a dataset: no rows, NaN metrics, model_present False.  Absent from stations: missed."""
    ds, t = trap_run
    assert not bool(ds["model_present"].sel(dataset="Ñuble", model="GPD"))
    assert bool(ds["model_present"].sel(dataset="Ridgecrest", model="eqt-lite"))
    for name in TABLE_NAMES:
        if "model" in t[name]:
            rows = t[name][(t[name]["dataset"] == "Ñuble") & (t[name]["model"] == "GPD")]
            assert rows.empty, name
    n_float = 0
    for name, var in ds.data_vars.items():
        if name in RATE_VARIABLES:  # SPEC §20: every pick counts, also where the model is absent from the scores
            continue
        if {"dataset", "model"} <= set(var.dims):
            v = var.sel(dataset="Ñuble", model="GPD").values
            if v.dtype.kind == "f" and name not in ("cal_conf", "brier_sum"):
                assert np.isnan(v).all(), name
                n_float += 1
            elif v.dtype.kind in "iuf":
                assert (v == 0).all(), name  # counts of a model that was not there
    assert n_float >= 20
    # eqt-lite has no pick at two Ridgecrest stations: their arrivals count as missed.
    det = t["detection"].set_index(["dataset", "phase", "model"])
    for ph in ("P", "S"):
        assert det.loc[("Ridgecrest", ph, "eqt-lite"), "n_reference"] == det.loc[("Ridgecrest", ph, "EQT"),
                                                                                  "n_reference"]
    at = ds["n_reference"].sel(dataset="Ridgecrest", station=["CI.WBM", "CI.LRL"]).sum()
    assert int(at) > 0
    assert int(ds["emitted"].sel(dataset="Ridgecrest", model="eqt-lite", station=["CI.WBM", "CI.LRL"]).sum()) == 0
    # A model that ran but emitted nothing for S has S rows: recall 0, precision NaN.
    row = det.loc[("amatrice", "S", "eqt-lite")]
    assert row["emitted"] == 0 and row["recall"] == 0.0 and np.isnan(row["precision_lb"])
    # A dataset with P arrivals only: S rows with n_reference 0 and NaN rates.
    row = det.loc[("Ñuble", "S", "EQT")]
    assert row["n_reference"] == 0 and np.isnan(row["recall"]) and np.isnan(row["ap_lb"])


@pytest.mark.slow
def test_exhaustive_drops_lb_everywhere(trap_run, trap, tmp_path):
    ds_lb, t_lb = trap_run
    ref_path, picks_path = trap.write_csv(tmp_path)
    ds = pickscale.score(str(ref_path), str(picks_path), exhaustive=True)
    t = pickscale.tables(ds)
    assert not [v for v in ds.variables if "_lb" in v]
    for v in ("precision", "f1", "ap", "ece", "observed", "brier", "f1_at_best", "precision_at_best"):
        assert v in ds.variables, v
    for name in TABLE_NAMES:
        assert not [c for c in t[name].columns if "_lb" in c], name
        renamed = t_lb[name].rename(columns=lambda c: c.replace("_lb", ""))
        pd.testing.assert_frame_equal(t[name], renamed)


# --------------------------------------------------------------------------- 3. store round trip

@pytest.fixture(scope="module")
def saved(trap_run, tmp_path_factory):
    target = tmp_path_factory.mktemp("store") / "results.zarr"
    pickscale.save(trap_run[0], target)
    return target


@pytest.mark.slow
def test_store_round_trip(trap_run, saved):
    ds, frames = trap_run
    target = saved
    reopened = pickscale.open_results(target).load()
    # Tables from the store, byte for byte.
    assert_same_csv(csv_bytes(pickscale.tables(reopened)), csv_bytes(frames))
    # Every variable and coordinate: dtype and values.
    assert sorted(reopened.variables) == sorted(ds.variables)
    for name in ds.variables:
        a, b = ds[name].values, reopened[name].values
        assert reopened[name].dims == ds[name].dims, name
        assert a.dtype == b.dtype, (name, a.dtype, b.dtype)
        if a.dtype.kind == "f":
            assert a.tobytes() == b.tobytes(), name
        elif a.dtype.kind in "OT":
            assert all(type(x) is str for x in b.ravel()), name
            same = a.tolist() == b.tolist()
            assert same, name
        else:
            same = bool(np.array_equal(a, b))
            assert same, name
        assert reopened[name].attrs == json.loads(json.dumps(sanitise(ds)[name].attrs)), name
    for coord in ("dataset", "model", "station", "phase"):
        assert reopened[coord].values.tolist() == ds[coord].values.tolist()
        assert "Ñuble" in reopened["dataset"].values.tolist()
    # Attributes: those of the in-memory Dataset after JSON sanitising, plus the completeness markers.
    want = sanitise(ds).attrs
    got = {k: v for k, v in reopened.attrs.items() if k not in ("pickscale_complete", "pickscale_schema")}
    same = nan_equal_json(got, json.loads(json.dumps(want)))
    assert same, sorted(k for k in set(got) | set(want) if not nan_equal_json(got.get(k), want.get(k)))
    assert reopened.attrs["pickscale_complete"] is True
    assert reopened.attrs["options"] == ds.attrs["options"]
    assert reopened.attrs["exclusions"] == ds.attrs["exclusions"]
    # Plain xarray opens it too.
    plain = xr.open_zarr(target)
    np.testing.assert_array_equal(plain["matched"].values, ds["matched"].values)
    assert plain["recall"].values.tobytes() == ds["recall"].values.tobytes()
    assert [str(x) for x in plain["model"].values] == ds["model"].values.tolist()


@pytest.mark.slow
def test_tables_of_lazily_reopened_store(trap_run, saved):
    """The documented ``pickscale.tables(pickscale.open_results(path))``, on the lazy (Dask-backed) store.

    Regression: tables._phase_quality used xr.apply_ufunc without dask=..., which raised
    'apply_ufunc encountered a chunked array' on a reopened store (fixed in 60dad02).
    """
    assert_same_csv(csv_bytes(pickscale.tables(pickscale.open_results(saved))), csv_bytes(trap_run[1]))


# --------------------------------------------------------------------------- 6. real data

@pytest.fixture(scope="module")
def stead50():
    folder = DATA / "stead50_phasenet"
    ds = pickscale.score(str(folder / "reference.csv"), str(folder / "picks.csv"))
    return folder, ds


@pytest.mark.slow
@needs_data
def test_stead50_matches_brute_force(stead50):
    folder, ds = stead50
    ref, picks = read_plain(folder / "reference.csv", "reference"), read_plain(folder / "picks.csv", "picks")
    exp = expected_results(ref, picks)
    assert_tables_equal(pickscale.tables(ds), exp.tables)
    assert_store_matches(ds, exp)


@pytest.mark.slow
@needs_data
def test_stead50_provenance_numbers(stead50):
    """PROVENANCE: at conf >= 0.3, tol 0.5: P 46/50, S 49/49; 23 of 118 picks unmatched; median |dt| 0.06 s."""
    folder, ds = stead50
    det = pickscale.tables(ds)["detection"].set_index("phase")
    assert ds.attrs["options"]["threshold"] == 0.3 and ds.attrs["options"]["tol"] == 0.5
    assert (det.loc["P", "matched"], det.loc["P", "n_reference"]) == (46, 50)
    assert (det.loc["S", "matched"], det.loc["S", "n_reference"]) == (49, 49)
    assert det["emitted"].sum() == 118 and det["emitted"].sum() - det["matched"].sum() == 23
    # The quick check's median |dt| is over its own pairs (|dt| <= 0.5 s): residual_tol = tol = 0.5.
    ds05 = pickscale.score(str(folder / "reference.csv"), str(folder / "picks.csv"), residual_tol=0.5)
    keep = ds05["pair_conf"].values >= 0.3
    assert keep.sum() == 95
    assert round(float(np.median(np.abs(ds05["residual"].values[keep]))), 2) == 0.06


@needs_data
@pytest.mark.slow
def test_paired_windows_matches_brute_force():
    folder = DATA / "paired_windows"
    ds = pickscale.score(str(folder / "reference.csv"), str(folder / "picks.csv"))
    ref, picks = read_plain(folder / "reference.csv", "reference"), read_plain(folder / "picks.csv", "picks")
    exp = expected_results(ref, picks)
    got = pickscale.tables(ds)
    assert_tables_equal(got, exp.tables)
    assert_store_matches(ds, exp)
    # PROVENANCE quick check, over all 506 arrivals: recall at conf >= 0.3, tol 0.5.
    det = got["detection"]
    assert det.groupby(["dataset", "phase"])["n_reference"].first().sum() == 506
    recall = det.groupby("model")["matched"].sum() / det.groupby("model")["n_reference"].sum()
    assert recall.round(3).to_dict() == {
        "PhaseNet(190703-214543)": 0.949, "EQTransformer(original)": 0.951,
        "EQTransformer(conservative)": 0.917, "GPD(model_pol_best)": 0.955,
    }


@pytest.mark.slow
def test_warnings_reach_python_users(tmp_path):
    """Issue 12: every exclusion warning is issued through `warnings.warn` (and kept in the attributes)."""
    ref = pd.DataFrame({"station": ["CI.CLC", "CI.CLC", "CI.SRT"], "phase": ["P", "S", "P"],
                        "time": ["2019-07-06T03:19:53Z", "2019-07-06T03:19:58Z", "2019-07-06T03:19:55Z"]})
    picks = pd.DataFrame({"station": ["CI.CLC..HH", "CI.CLC.", "CI.SRT.00.HH"], "phase": ["P", "S", "P"],
                          "time": ["2019-07-06T03:19:53.1Z", "2019-07-06T03:19:58.2Z", "2019-07-06T03:19:55Z"],
                          "conf": [0.9, 0.8, 0.7]})
    with pytest.warns(pickscale.PickscaleWarning) as caught:
        ds = pickscale.score(ref, picks)
    messages = [str(w.message) for w in caught]
    assert messages == list(dict.fromkeys(ds.attrs["warnings"])) and messages
    # A partial station mismatch that NET.STA would mend names the option, as a total one does.
    assert any("station_key=\"net.sta\"" in m and "CI.SRT" in m for m in messages), messages
    whole = pickscale.score(ref, picks, station_key="net.sta")
    assert sorted(whole.station.values) == ["CI.CLC", "CI.SRT"]
    assert float(whole.recall.sel(dataset="all", model="model", phase="P", threshold=0.3)) == 1.0
