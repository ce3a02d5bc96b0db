"""Study files and grids a parser or a run cannot hold (issue 23): exit 2 with a message, no traceback.

Deep nesting made tomllib raise ``RecursionError``; 2,000,000 ``thresholds`` took 3.1 GB and ended in an
``ArrayMemoryError``.  The commands run in a subprocess under a memory limit and a timeout.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pickscale import Options
from pickscale.config import load_config
from pickscale.errors import OptionsError
from pickscale.options import MAX_THRESHOLDS
from tests.helpers.processes import run_limited


@pytest.fixture
def inputs(tmp_path):
    t0 = pd.Timestamp("2024-01-01", tz="UTC")
    iso = list((t0 + pd.to_timedelta(np.arange(5) * 60, unit="s")).strftime("%Y-%m-%dT%H:%M:%SZ"))
    pd.DataFrame({"station": "CI.CLC", "phase": "P", "time": iso}).to_csv(tmp_path / "ref.csv", index=False)
    pd.DataFrame({"station": "CI.CLC", "phase": "P", "time": iso, "conf": 0.9}).to_csv(tmp_path / "picks.csv",
                                                                                        index=False)
    return tmp_path / "ref.csv", tmp_path / "picks.csv"


STUDIES = {
    "a value nested 100,000 deep": "thresholds = " + "[" * 100_000 + "]" * 100_000 + "\n",
    "5,000 nested inline tables": "x = " + "{a = " * 5_000 + "1" + "}" * 5_000 + "\n",
    "2,000,000 thresholds": "thresholds = [" + ", ".join(f"{k / 2_000_001:.9f}" for k in range(1, 2_000_001))
                            + "]\n",
}


@pytest.mark.parametrize("name", list(STUDIES))
@pytest.mark.slow
def test_a_study_file_the_parser_or_the_grid_cannot_hold_is_exit_2(inputs, tmp_path, name):
    ref, picks = inputs
    study = tmp_path / "study.toml"
    study.write_text(f'reference = "{ref}"\npicks = "{picks}"\n' + STUDIES[name], encoding="utf-8")
    proc = run_limited("score", "--config", study, "--out", tmp_path / "out", "--no-figures", "--workers", "1")
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and len(proc.stderr) < 2_000, proc.stderr[-3000:]
    if name == "2,000,000 thresholds":
        assert "thresholds has 2,000,000 values" in proc.stderr and f"at most {MAX_THRESHOLDS:,}" in proc.stderr
    else:
        assert str(study) in proc.stderr and "nests arrays or tables too deeply" in proc.stderr
    assert not (tmp_path / "out" / "results.zarr").exists()


def test_the_parse_function_says_so_in_python(tmp_path):
    study = tmp_path / "deep.toml"
    study.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    with pytest.raises(OptionsError, match="nests arrays or tables too deeply"):
        load_config(study)


@pytest.mark.slow
def test_the_grid_bound_holds_for_the_command_line_and_python(inputs, tmp_path):
    ref, picks = inputs
    grid = np.round(np.arange(1, MAX_THRESHOLDS + 2) / (MAX_THRESHOLDS + 2), 6)
    with pytest.raises(OptionsError, match=f"thresholds has {MAX_THRESHOLDS + 1:,} values") as err:
        Options(thresholds=grid)
    assert err.value.options == ("thresholds",)
    assert len(Options(thresholds=grid[:MAX_THRESHOLDS]).grid) <= MAX_THRESHOLDS + 1  # + the shared threshold
    proc = run_limited("score", "--reference", ref, "--picks", picks, "--out", tmp_path / "out", "--no-figures",
                       "--workers", "1", "--thresholds", ",".join(f"{x:g}" for x in grid))
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert "--thresholds has 10,001 values" in proc.stderr and "at most 10,000" in proc.stderr, proc.stderr[-3000:]
