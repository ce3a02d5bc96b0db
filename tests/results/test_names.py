"""The names before the first release (issue 24 item 4; docs/CHANGELOG.md): one name per concept across the
Dataset's variables, dims and coordinates and the tables' columns, and a store of the old names refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

import pickscale
from pickscale.errors import StoreError
from pickscale.metrics.timing import WITHIN
from pickscale.report.tables import headers
from pickscale.store import SCHEMA_VERSION, open_results, save


@pytest.fixture(scope="module")
def scored():
    from pickscale.demo import catalogue

    return pickscale.score(*catalogue(), progress=False, group_by="magnitude:1,2", budget=[50, 100]).load()


@pytest.mark.slow
def test_the_dataset_names_each_number_once(scored):
    for name in ("n_pairs", "residual_mean", "residual_std", "fraction_within", "matched_budget",
                 "n_pairs_by_group", "residual_mean_by_group", "residual_std_by_group", "fraction_within_by_group"):
        assert name in scored.data_vars, name
    for old in ("n", "mean", "std", "within_0.1", "within_0.25", "within_0.5", "n_by_group", "mean_by_group",
                "std_by_group", "within_0.1_by_group", "budgets"):
        assert old not in scored.variables, old
    # ds.mean and ds.std are the Dataset's methods again, not variables.
    assert callable(scored.mean) and callable(scored.std)


@pytest.mark.slow
def test_fraction_within_is_one_variable_on_dim_within(scored):
    fw = scored["fraction_within"]
    assert fw.dims == ("dataset", "model", "phase", "threshold", "within")
    assert scored["within"].values.tolist() == list(WITHIN) and scored["within"].attrs["units"] == "s"
    assert scored["fraction_within_by_group"].dims == ("dataset", "model", "phase", "group", "within")
    # Each bound reads as the table's column of that name.
    timing = pickscale.tables(scored)["timing"]
    assert headers("fraction_within") == ("fraction_within_0.1", "fraction_within_0.25", "fraction_within_0.5")
    row = timing.iloc[0]
    at = scored.attrs["options"]["threshold"]
    for w, column in zip(WITHIN, headers("fraction_within")):
        one = fw.sel(dataset=row.dataset, model=row.model, phase=row.phase, threshold=at, within=w)
        assert float(one) == row[column]


@pytest.mark.slow
def test_the_budget_dim_is_the_budget_column(scored):
    assert scored["recall_at_budgets"].dims == ("dataset", "model", "phase", "budget")
    assert scored["budget"].values.tolist() == [50, 100]
    assert scored["matched_budget"].dims == ("dataset", "phase")
    assert (scored["matched_budget"] == 50).all()  # the first budget given: detection.csv's
    frames = pickscale.tables(scored)
    assert frames["budgets"].columns.tolist()[:5] == ["dataset", "phase", "model", "budget", "recall_at_budget"]
    assert "matched_budget" in frames["detection"] and "budget" not in frames["detection"]


@pytest.mark.slow
def test_the_table_columns_follow_the_variables(scored):
    frames = pickscale.tables(scored)
    assert frames["timing"].columns.tolist()[3:14] == [
        "n_pairs", "mae", "rmse", "medae", "bias", "residual_mean", "residual_std", "gross_error_rate",
        "fraction_within_0.1", "fraction_within_0.25", "fraction_within_0.5"]
    assert "n_pairs" in frames["sweep"] and "n_pairs" in frames["by_group"]
    # calibration's count is what it counts: the picks (cal_n), not the pairs of timing.
    assert frames["calibration"].columns.tolist()[3] == "n_picks"
    assert frames["reliability"].columns.tolist()[4] == "n_picks"
    assert frames["phase_quality"].columns.tolist()[2:5] == ["P_n_reference", "P_matched_as_S", "S_n_reference"]
    for name, frame in frames.items():
        assert "n" not in frame.columns and not any(c.startswith("within_") for c in frame.columns), name
    n_pairs = scored["n_pairs"].sel(threshold=scored.attrs["options"]["threshold"])
    row = frames["timing"].iloc[0]
    assert int(n_pairs.sel(dataset=row.dataset, model=row.model, phase=row.phase)) == row.n_pairs


@pytest.mark.slow
def test_a_store_of_schema_3_is_refused(scored, tmp_path):
    assert SCHEMA_VERSION == 5
    target = save(scored, tmp_path / "r.zarr")
    meta = json.loads((target / "zarr.json").read_text())
    meta["attributes"]["pickscale_schema"] = 3  # the names before issue 24 item 4
    (target / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(StoreError, match=r"has store schema 3 \(an earlier pickscale wrote it\), but this "
                                         r"pickscale \(.*\) reads schema 5; re-run `pickscale score`"):
        open_results(target)


@pytest.mark.slow
def test_a_stored_store_reads_back_the_new_names(scored, tmp_path):
    back = open_results(save(scored, tmp_path / "r.zarr"))
    np.testing.assert_array_equal(back["fraction_within"].values, scored["fraction_within"].values)
    assert back["within"].values.tolist() == list(WITHIN)
    assert back["budget"].values.tolist() == [50, 100]
