"""``pickscale score --select-on`` (SPEC §16): the out-of-sample columns in detection.csv, every other table as
without the flag, the study file's ``select_on`` the same as the flag, and usage errors (exit 2) naming it."""

from __future__ import annotations

import pandas as pd
import pytest

from pickscale.cli import main
from pickscale.results.selection import SELECTION_VARIABLES
from tests.results.test_select_on import GRID, _inputs

OOS = list(SELECTION_VARIABLES)
GRID_FLAG = ",".join(map(str, GRID))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inputs")
    ref, picks = _inputs()
    ref.to_csv(folder / "reference.csv", index=False)
    picks.to_csv(folder / "picks.csv", index=False)
    return folder


def _score(inputs, out, *extra):
    return main(["score", "--reference", str(inputs / "reference.csv"), "--picks", str(inputs / "picks.csv"),
                 "--out", str(out), "--thresholds", GRID_FLAG, "--no-figures", "--quiet", *extra])


@pytest.fixture(scope="module")
def runs(inputs, tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    assert _score(inputs, root / "plain") == 0
    assert _score(inputs, root / "oos", "--select-on", "before:2024-01-01T00:01:00") == 0
    return root


@pytest.mark.slow
def test_detection_csv_gains_the_columns_and_the_other_tables_are_unchanged(runs):
    plain, oos = runs / "plain", runs / "oos"
    det = pd.read_csv(oos / "detection.csv")
    base = pd.read_csv(plain / "detection.csv")
    assert list(det.columns) == list(base.columns) + OOS
    p = det[det.phase == "P"].iloc[0]
    assert (p.best_threshold_selected, p.recall_at_best_oos, p.precision_lb_at_best_oos, p.matched_budget_oos,
            p.recall_at_budget_oos, p.n_reference_select, p.n_reference_report) == (0.2, 1.0, 0.5, 2, 0.5, 4, 2)
    assert abs(p.f1_lb_at_best_oos - 4 / 6) < 1e-15
    for name in ("timing", "calibration", "reliability", "phase_quality", "sweep"):
        assert (oos / f"{name}.csv").read_bytes() == (plain / f"{name}.csv").read_bytes()
    # The normal columns of detection.csv are byte for byte those of the run without the flag.
    assert det.drop(columns=OOS).to_csv(index=False) == base.to_csv(index=False)


@pytest.mark.slow
def test_report_on_the_store_writes_the_same_detection_csv(runs, tmp_path):
    assert main(["report", str(runs / "oos" / "results.zarr"), "--out", str(tmp_path), "--no-figures",
                 "--quiet"]) == 0
    assert (tmp_path / "detection.csv").read_bytes() == (runs / "oos" / "detection.csv").read_bytes()


@pytest.mark.slow
def test_study_file_key_equals_the_flag(inputs, runs, tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(f'reference = "{inputs / "reference.csv"}"\npicks = "{inputs / "picks.csv"}"\n'
                     f'out = "{tmp_path / "by_file"}"\n[options]\nthresholds = [{GRID_FLAG}]\n'
                     'select_on = "before:2024-01-01T00:01:00Z"\n')
    assert main(["score", "--config", str(study), "--no-figures", "--quiet"]) == 0
    assert (tmp_path / "by_file" / "detection.csv").read_bytes() == (runs / "oos" / "detection.csv").read_bytes()


@pytest.mark.parametrize("value, said", [
    ("after:2024-01-01", "--select-on 'after:2024-01-01': unknown form"),
    ("stations:2", "the fraction must lie strictly between 0 and 1"),
])
def test_a_bad_form_exits_2_before_anything_is_written(inputs, tmp_path, capsys, value, said):
    assert _score(inputs, tmp_path / "out", "--select-on", value) == 2
    err = capsys.readouterr().err
    assert said in err and "--select-on" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_an_empty_part_exits_2_naming_the_flag_and_the_date(inputs, tmp_path, capsys):
    assert _score(inputs, tmp_path / "out", "--select-on", "before:2023-06-01") == 2
    err = capsys.readouterr().err
    assert "--select-on before:2023-06-01T00:00:00Z" in err and "selection part" in err
    assert not (tmp_path / "out" / "results.zarr").exists()
