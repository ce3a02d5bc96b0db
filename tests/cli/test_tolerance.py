"""``--tols`` (SPEC §13) on the command line and in a study file: tolerance.csv and its figure, every other
table byte-identical, the same tables again from the store, and bad values refused with status 2."""

from __future__ import annotations

import pandas as pd
import pytest

import pickscale
from pickscale.cli import main
from pickscale.report.tables import TABLE_NAMES


def _write_inputs(folder):
    ref = pd.DataFrame({"station": ["A", "B"], "phase": ["P", "P"],
                        "time": ["2024-03-01T00:10:00Z", "2024-03-01T00:30:00Z"]})
    picks = pd.DataFrame({"station": ["A", "B"], "phase": ["P", "P"],
                          "time": ["2024-03-01T00:10:00.05Z", "2024-03-01T00:30:00.3Z"], "conf": [0.9, 0.8]})
    ref.to_csv(folder / "ref.csv", index=False)
    picks.to_csv(folder / "picks.csv", index=False)
    return ["score", "--reference", str(folder / "ref.csv"), "--picks", str(folder / "picks.csv"), "--quiet"]


@pytest.mark.slow
def test_cli_tols(tmp_path):
    args = _write_inputs(tmp_path)
    assert main([*args, "--out", str(tmp_path / "a"), "--no-figures"]) == 0
    assert main([*args, "--out", str(tmp_path / "b"), "--tols", "0.1,0.25,0.5,1.0"]) == 0
    assert not (tmp_path / "a" / "tolerance.csv").exists()
    assert (tmp_path / "b" / "figures" / "recall_vs_tolerance.png").exists()
    for name in TABLE_NAMES:
        assert (tmp_path / "a" / f"{name}.csv").read_bytes() == (tmp_path / "b" / f"{name}.csv").read_bytes()
    table = (tmp_path / "b" / "tolerance.csv").read_text().splitlines()
    assert table[:6] == ["dataset,phase,model,tol,n_reference,emitted,matched,recall,precision_lb",
                         "all,P,model,0.1,2,2,1,0.5,0.5", "all,P,model,0.25,2,2,1,0.5,0.5",
                         "all,P,model,0.5,2,2,2,1.0,1.0", "all,P,model,1.0,2,2,2,1.0,1.0",
                         "all,S,model,0.1,0,0,0,NaN,NaN"]  # S: no arrival, no pick (as in detection.csv)
    assert len(table) == 9
    stored = pickscale.open_results(tmp_path / "b" / "results.zarr")
    assert stored.attrs["options"]["tols"] == [0.1, 0.25, 0.5, 1.0]
    assert "tols" not in pickscale.open_results(tmp_path / "a" / "results.zarr").attrs["options"]
    # pickscale report writes the same table again from the store.
    assert main(["report", str(tmp_path / "b" / "results.zarr"), "--out", str(tmp_path / "c"), "--no-figures",
                 "--quiet"]) == 0
    assert (tmp_path / "c" / "tolerance.csv").read_bytes() == (tmp_path / "b" / "tolerance.csv").read_bytes()


@pytest.mark.slow
def test_study_file_tols(tmp_path):
    _write_inputs(tmp_path)
    (tmp_path / "s.toml").write_text('reference = "ref.csv"\npicks = "picks.csv"\nout = "o"\n'
                                     '[options]\ntols = [0.1, 0.5]\n', encoding="utf-8")
    assert main(["score", "--config", str(tmp_path / "s.toml"), "--quiet", "--no-figures"]) == 0
    assert (tmp_path / "o" / "tolerance.csv").read_text().count("\n") == 1 + 2 * 2


@pytest.mark.parametrize("value, words", [
    ("0.5,0.1", "ascending"), ("0,0.5", "> 0"), ("0.1,3", "--residual-tol"), ("x", "--tols"),
])
def test_bad_tols_exit_2_and_write_nothing(tmp_path, capsys, value, words):
    args = _write_inputs(tmp_path)
    assert main([*args, "--out", str(tmp_path / "bad"), "--tols", value]) == 2
    err = capsys.readouterr().err
    assert "--tols" in err and words in err and not (tmp_path / "bad").exists()
