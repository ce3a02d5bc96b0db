"""SPEC §14 end to end: per-group counts add up to the ungrouped ones, the six tables do not change, and
by_group.csv and figures/recall_by_group read as worked out by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pickscale
from pickscale.cli import main
from pickscale.report.figures import figures
from pickscale.report.tables import TABLE_NAMES, to_csv_bytes

T = "2024-03-01T00:00:{:06.3f}Z"


def _inputs():
    # SPEC §14's worked example on station A, and station B (network YY) with one S arrival of magnitude 3.5.
    ref = pd.DataFrame({"station": ["XX.A", "XX.A", "XX.A", "XX.A", "YY.B"], "phase": ["P", "P", "P", "P", "S"],
                        "time": [T.format(s) for s in (10, 20, 30, 40, 15)],
                        "Magnitude": [0.5, 1.5, 2.0, None, 3.5]})
    picks = pd.DataFrame({"model": ["m1"] * 4 + ["m2", "m2"], "station": ["XX.A"] * 4 + ["XX.A", "YY.B"],
                          "phase": ["P", "P", "P", "P", "P", "S"],
                          "time": [T.format(s) for s in (10.1, 20.3, 31.0, 55.0, 40.0, 15.2)],
                          "conf": [0.9, 0.8, 0.7, 0.9, 0.6, 0.5]})
    return ref, picks


@pytest.fixture(scope="module")
def runs():
    ref, picks = _inputs()
    return pickscale.score(ref, picks, progress=False), pickscale.score(ref, picks, group_by="magnitude:1,2",
                                                                        progress=False)


@pytest.mark.slow
def test_by_group_by_hand(runs):
    _, ds = runs
    t = pickscale.tables(ds)["by_group"]
    assert t.columns.tolist()[:7] == ["dataset", "phase", "model", "group", "n_reference", "matched", "recall"]
    assert "emitted" not in t and "precision_lb" not in t  # SPEC §14: no precision per group
    p1 = t[(t.phase == "P") & (t.model == "m1")]
    assert p1.group.tolist() == ["<1", "[1,2)", ">=2", "missing"]  # the run's order, not the labels' text order
    assert p1.n_reference.tolist() == [1, 1, 1, 1] and p1.matched.tolist() == [1, 1, 0, 0]
    assert p1.recall.tolist() == [1.0, 1.0, 0.0, 0.0]
    assert np.allclose(p1.mae.to_numpy()[:3], [0.1, 0.3, 1.0]) and np.isnan(p1.mae.to_numpy()[3])
    p2 = t[(t.phase == "P") & (t.model == "m2")]
    assert p2.matched.tolist() == [0, 0, 0, 1]  # m2's pick at 40 s took the arrival without a magnitude
    s2 = t[(t.phase == "S") & (t.model == "m2")]
    assert s2.n_reference.tolist() == [0, 0, 1, 0] and s2.matched.tolist() == [0, 0, 1, 0]
    assert len(t) == 2 * 2 * 4


@pytest.mark.slow
def test_groups_add_up_and_six_tables_unchanged(runs):
    plain, grouped = runs
    k = float(grouped.attrs["options"]["threshold"])
    assert (grouped.matched_by_group.sum("group") == grouped.matched.sel(threshold=k)).all()
    assert (grouped.n_reference_by_group.sum("group") == grouped.n_reference).all()
    assert int(grouped.n_pairs_by_group.sum()) == int(grouped.n_pairs.sel(threshold=k).sum())
    a, b = pickscale.tables(plain), pickscale.tables(grouped)
    assert list(a) == [*TABLE_NAMES, "pick_rates"] and list(b) == [*TABLE_NAMES, "by_group", "pick_rates"]
    for name in TABLE_NAMES:
        assert to_csv_bytes(a[name]) == to_csv_bytes(b[name]), name
    # Without group_by: no new variable, coordinate or attribute.
    assert not any("group" in str(v) for v in plain.data_vars) and "group" not in plain.coords
    assert "group_by" not in plain.attrs["options"]
    assert grouped.attrs["options"]["group_by"] == "magnitude:1,2"
    assert grouped.attrs["options"]["group_labels"] == ["<1", "[1,2)", ">=2", "missing"]


@pytest.mark.slow
def test_text_column_groups_and_stations_table(tmp_path):
    ref, picks = _inputs()
    stations = pd.DataFrame({"station": ["XX.A", "YY.B"], "site_class": ["rock", "soil"]})
    ds = pickscale.score(ref, picks, group_by="site_class", stations=stations, progress=False)
    assert ds.group.values.tolist() == ["rock", "soil"]
    assert ds.n_reference_by_group.sum("station").sel(dataset="all").values.tolist() == [[4, 0], [0, 1]]
    # A station the table does not list: its arrivals are "missing"; a CSV file works the same.
    stations.iloc[:1].to_csv(tmp_path / "st.csv", index=False)
    ds = pickscale.score(ref, picks, group_by="site_class", stations=str(tmp_path / "st.csv"), progress=False)
    assert ds.group.values.tolist() == ["rock", "missing"]
    # A reference column wins: "station" is not needed in the stations table then.
    ref2 = ref.assign(network=ref.station.str[:2])
    ds = pickscale.score(ref2, picks, group_by="network", progress=False)
    assert ds.group.values.tolist() == ["XX", "YY"]


def test_bad_group_by_names_the_option():
    ref, picks = _inputs()
    with pytest.raises(pickscale.errors.OptionsError, match="group_by") as info:
        pickscale.score(ref, picks, group_by="depth:1,2", progress=False)
    assert "group_by" in info.value.options
    with pytest.raises(pickscale.errors.InputError, match="column 'magnitude'.*must hold numbers.*'x'"):
        pickscale.score(ref.assign(Magnitude=["1", "x", "2", "", "3"]), picks, group_by="magnitude:1", progress=False)
    with pytest.raises(pickscale.errors.OptionsError, match="stations is used with group_by"):
        pickscale.score(ref, picks, stations=pd.DataFrame({"station": ["XX.A"]}), progress=False)


@pytest.mark.slow
def test_figure_only_with_groups(runs):
    plain, grouped = runs
    assert "recall_by_group" not in figures(plain)
    assert "recall_by_group" in figures(grouped)


@pytest.mark.slow
def test_cli_group_by(tmp_path, capsys):
    ref, picks = _inputs()
    ref.to_csv(tmp_path / "ref.csv", index=False)
    picks.to_csv(tmp_path / "picks.csv", index=False)
    args = ["score", "--reference", str(tmp_path / "ref.csv"), "--picks", str(tmp_path / "picks.csv"), "--quiet"]
    for bad in ("magnitude:2,1", "magnitude:a,b", ":1,2", "depth:1,2"):
        assert main([*args, "--out", str(tmp_path / "bad"), "--no-figures", "--group-by", bad]) == 2, bad
        err = capsys.readouterr().err
        assert "--group-by" in err and not (tmp_path / "bad" / "detection.csv").exists(), (bad, err)
    assert main([*args, "--out", str(tmp_path / "bad"), "--stations", str(tmp_path / "ref.csv")]) == 2
    assert "--group-by" in capsys.readouterr().err
    assert main([*args, "--out", str(tmp_path / "a"), "--no-figures"]) == 0
    assert main([*args, "--out", str(tmp_path / "b"), "--group-by", "magnitude:1,2"]) == 0
    assert not (tmp_path / "a" / "by_group.csv").exists()
    assert (tmp_path / "b" / "figures" / "recall_by_group.png").exists()
    for name in TABLE_NAMES:  # the default run's tables, byte for byte
        assert (tmp_path / "a" / f"{name}.csv").read_bytes() == (tmp_path / "b" / f"{name}.csv").read_bytes()
    table = pd.read_csv(tmp_path / "b" / "by_group.csv")
    assert table[table.model == "m1"].matched.sum() == pd.read_csv(tmp_path / "b" / "detection.csv").query(
        "model == 'm1'").matched.sum()
    stored = pickscale.open_results(tmp_path / "b" / "results.zarr")
    assert stored.group.values.tolist() == ["<1", "[1,2)", ">=2", "missing"]
    assert "pair_group" in stored and "pair_group" not in pickscale.open_results(tmp_path / "a" / "results.zarr")
    # The report from the store alone writes the same table.
    assert main(["report", str(tmp_path / "b" / "results.zarr"), "--out", str(tmp_path / "c"), "--no-figures",
                 "--quiet"]) == 0
    assert (tmp_path / "c" / "by_group.csv").read_bytes() == (tmp_path / "b" / "by_group.csv").read_bytes()
