"""Study files (configs/*.toml): parsed as data only, and equivalent to the command line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pickscale
from pickscale.cli import main
from pickscale.config import load_config
from pickscale.demo import catalogue
from pickscale.errors import OptionsError

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_demo_inputs_are_the_demo_catalogue():
    # configs/demo/*.csv must not drift from what `pickscale demo` generates.
    ref, picks = catalogue()
    shipped_ref = pd.read_csv(ROOT / "configs/demo/reference.csv", dtype=str, keep_default_na=False)
    shipped_picks = pd.read_csv(ROOT / "configs/demo/picks.csv", dtype=str, keep_default_na=False)
    assert shipped_ref.equals(ref.astype(str))
    assert shipped_picks.equals(picks.astype(str))


@pytest.mark.parametrize("name", ["demo.toml", "example_study.toml"])
def test_shipped_configs_parse_and_point_at_files(name):
    settings, base = load_config(ROOT / "configs" / name)
    assert (base / settings["reference"]).exists()
    assert (base / settings["picks"]).exists()


def test_unknown_key_is_an_error_naming_it(tmp_path):
    cfg = tmp_path / "s.toml"
    cfg.write_text('reference = "r.csv"\ntoll = 0.5\n')
    with pytest.raises(OptionsError, match="unknown key 'toll'"):
        load_config(cfg)
    cfg.write_text('[options]\nresidual = 2.0\n')
    with pytest.raises(OptionsError, match=r"unknown key \[options\] 'residual'"):
        load_config(cfg)


def test_wrong_type_and_bad_toml_are_errors(tmp_path):
    cfg = tmp_path / "s.toml"
    cfg.write_text('tol = "half a second"\n')
    with pytest.raises(OptionsError, match="tol should be a float"):
        load_config(cfg)
    cfg.write_text('tol = \n')
    with pytest.raises(OptionsError, match="not valid TOML"):
        load_config(cfg)


def test_cli_unknown_config_key_exits_2_and_writes_nothing(tmp_path, capsys):
    cfg = tmp_path / "s.toml"
    cfg.write_text(f'reference = "r.csv"\npicks = "p.csv"\nout = "{tmp_path / "out"}"\ncolour = "red"\n')
    assert main(["score", "--config", str(cfg)]) == 2
    assert "unknown key 'colour'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_config_and_command_line_give_identical_stores(tmp_path):
    data = ROOT / "tests/data/stead50_phasenet"
    cfg = tmp_path / "study.toml"
    # Paths relative to the config file; command-line options override the file.
    (tmp_path / "in").mkdir()
    for f in ("reference.csv", "picks.csv"):
        (tmp_path / "in" / f).write_bytes((data / f).read_bytes())
    cfg.write_text(
        'reference = "in/reference.csv"\npicks = "in/picks.csv"\nout = "by_config"\n'
        "[options]\ntol = 0.25\nthreshold = 0.4\nresidual_tol = 1.5\n"
    )
    assert main(["score", "--config", str(cfg), "--threshold", "0.5", "--workers", "1",
                 "--no-figures", "--quiet"]) == 0
    assert main(["score", "--reference", str(tmp_path / "in/reference.csv"),
                 "--picks", str(tmp_path / "in/picks.csv"), "--out", str(tmp_path / "by_cli"),
                 "--tol", "0.25", "--threshold", "0.5", "--residual-tol", "1.5", "--workers", "1",
                 "--no-figures", "--quiet"]) == 0
    a = pickscale.open_results(tmp_path / "by_config/results.zarr").load()
    b = pickscale.open_results(tmp_path / "by_cli/results.zarr").load()
    assert a.attrs["options"] == b.attrs["options"]
    assert a.attrs["options"]["threshold"] == 0.5  # the command line won
    assert a.attrs["options"]["tol"] == 0.25
    assert set(a.variables) == set(b.variables)
    for name in a.variables:
        assert a[name].dtype == b[name].dtype, name
        assert np.array_equal(a[name].values, b[name].values, equal_nan=a[name].dtype.kind == "f"), name
    for f in ("detection.csv", "timing.csv", "sweep.csv"):
        assert (tmp_path / "by_config" / f).read_bytes() == (tmp_path / "by_cli" / f).read_bytes()


def test_study_file_takes_several_budgets_and_a_ci_level(tmp_path):
    """Issue 14 through a study file: `budget` may be a list (one row per budget in budgets.csv) and `ci`
    the bootstrap level; a budget of another type is refused naming both accepted types."""
    from pickscale.config import load_config
    from pickscale.errors import OptionsError

    study = tmp_path / "study.toml"
    study.write_text('reference = "r.csv"\n[options]\nbudget = [50, 100]\nci = 0.9\n')
    config, _ = load_config(study)
    assert config["budget"] == [50, 100] and config["ci"] == 0.9
    study.write_text('reference = "r.csv"\n[options]\nbudget = "many"\n')
    with pytest.raises(OptionsError, match="budget should be a int or list"):
        load_config(study)
