"""SPEC §2's per-phase shared thresholds on the command line and in a study file: ``--threshold P=0.5,S=0.3``,
``threshold = {P = 0.5, S = 0.3}``; what cannot be a threshold is a usage error (exit 2) naming the flag."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import pickscale
from pickscale.cli import main
from pickscale.config import load_config
from pickscale.errors import OptionsError
from pickscale.report.tables import tables, to_csv_bytes

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests/data/stead50_phasenet"


@pytest.mark.parametrize("value, message", [
    ("P=2,S=0.3", "--threshold P must lie in [0, 1]; got 2.0"),
    ("P=2", "--threshold P must lie in [0, 1]; got 2.0"),
    ("X=0.3", "--threshold names an unknown phase 'X'"),
    ("P=0.5,X=0.3", "--threshold names an unknown phase 'X'"),
    ("P=0.5", "--threshold gives no value for S"),
    ("P=high,S=0.3", "argument --threshold: expected a number after P=, got 'high'"),
    ("P=0.5,P=0.3", "argument --threshold: P is given twice"),
    ("0.5,0.3", "argument --threshold: expected a number in [0, 1], or one per phase as P=0.5,S=0.3"),
    ("P=0.5,,S=0.3", "argument --threshold: expected PHASE=VALUE pairs"),
    ("1.5", "--threshold must lie in [0, 1]; got 1.5"),
])
def test_bad_thresholds_exit_2_naming_the_flag_before_anything_is_written(tmp_path, capsys, value, message):
    out = tmp_path / "out"
    code = main(["score", "--reference", str(DATA / "reference.csv"), "--picks", str(DATA / "picks.csv"),
                 "--out", str(out), "--threshold", value])
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert "Traceback" not in err and not out.exists()


def test_study_file_takes_a_table_per_phase_and_refuses_other_types(tmp_path):
    study = tmp_path / "s.toml"
    study.write_text('[options]\nthreshold = {P = 0.5, S = 0.3}\n')
    assert load_config(study)[0] == {"threshold": {"P": 0.5, "S": 0.3}}
    study.write_text('[threshold]\nP = 0.5\nS = 0.25\n')  # a table at the top is the same setting
    assert load_config(study)[0] == {"threshold": {"P": 0.5, "S": 0.25}}
    study.write_text('threshold = "P=0.5,S=0.3"\n')
    with pytest.raises(OptionsError, match="threshold should be a float or dict"):
        load_config(study)


def test_a_bad_phase_in_a_study_file_exits_2(tmp_path, capsys):
    study = tmp_path / "s.toml"
    study.write_text(f'reference = "{DATA / "reference.csv"}"\npicks = "{DATA / "picks.csv"}"\n'
                     f'out = "{tmp_path / "out"}"\n[options]\nthreshold = {{P = 0.5, Pn = 0.3}}\n')
    assert main(["score", "--config", str(study)]) == 2
    err = capsys.readouterr().err
    assert "threshold names an unknown phase 'Pn'" in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_command_line_study_file_and_python_give_the_same_per_phase_results(tmp_path):
    (tmp_path / "in").mkdir()
    for f in ("reference.csv", "picks.csv"):
        (tmp_path / "in" / f).write_bytes((DATA / f).read_bytes())
    study = tmp_path / "study.toml"
    study.write_text('reference = "in/reference.csv"\npicks = "in/picks.csv"\nout = "by_config"\n'
                     "[options]\nthreshold = {P = 0.6, S = 0.45}\n")
    assert main(["score", "--config", str(study), "--workers", "1", "--no-figures", "--quiet"]) == 0
    assert main(["score", "--reference", str(tmp_path / "in/reference.csv"),
                 "--picks", str(tmp_path / "in/picks.csv"), "--out", str(tmp_path / "by_cli"),
                 "--threshold", "P=0.6,S=0.45", "--workers", "1", "--no-figures", "--quiet"]) == 0
    a = pickscale.open_results(tmp_path / "by_config/results.zarr").load()
    b = pickscale.open_results(tmp_path / "by_cli/results.zarr").load()
    assert a.attrs["options"] == b.attrs["options"]
    assert a.attrs["options"]["threshold"] == {"P": 0.6, "S": 0.45}
    for name in a.variables:
        assert np.array_equal(a[name].values, b[name].values, equal_nan=a[name].dtype.kind == "f"), name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = pickscale.score(str(DATA / "reference.csv"), str(DATA / "picks.csv"),
                             threshold={"P": 0.6, "S": 0.45}, progress=False)
    frames = tables(ds)
    for name in ("detection", "timing", "phase_quality", "sweep"):
        written = (tmp_path / "by_cli" / f"{name}.csv").read_bytes()
        assert written == (tmp_path / "by_config" / f"{name}.csv").read_bytes(), name
        assert written == to_csv_bytes(frames[name]), name
    # Each phase as a run at its own threshold (SPEC §2).
    det = frames["detection"]
    for phase, theta in (("P", 0.6), ("S", 0.45)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            one = tables(pickscale.score(str(DATA / "reference.csv"), str(DATA / "picks.csv"), threshold=theta,
                                         thresholds=ds["threshold"].values.tolist(), progress=False))["detection"]
        assert to_csv_bytes(det[det.phase == phase]) == to_csv_bytes(one[one.phase == phase])
