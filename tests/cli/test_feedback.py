"""Issue 12, items 5 and 7 on the command line: --coverage (flag and study key), the closing summary,
progress lines when stderr is not a terminal, and a closed pipe that ends quietly."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pickscale.cli import main
from pickscale.engine.progress import Stage
from tests.helpers.checks import cli_flags

DATA = Path(__file__).resolve().parents[1] / "data" / "paired_windows"


def _score(tmp_path, *extra) -> list[str]:
    return ["score", "--reference", str(DATA / "reference.csv"), "--picks", str(DATA / "picks.csv"),
            "--out", str(tmp_path / "out"), *extra, *cli_flags("score", "--no-figures")]


@pytest.mark.slow
def test_coverage_flag_summary_and_quiet(tmp_path, capsys):
    cut = pd.read_csv(DATA / "windows.csv").iloc[10:]  # 10 windows fewer: their arrivals are not covered
    cut.to_csv(tmp_path / "w.csv", index=False)
    assert main(_score(tmp_path, "--coverage", str(tmp_path / "w.csv"))) == 0
    out, err = capsys.readouterr()
    lost = int(pd.read_csv(DATA / "windows.csv").iloc[:10][["n_ref_P", "n_ref_S"]].to_numpy().sum())
    assert f"dataset 'ncedc_deepdenoiser_ponly': {lost} of 99 reference arrival(s) outside the coverage" in err
    assert "summary: read 506 reference row(s) and 28,991 pick row(s); excluded: " in err
    assert f"{lost} reference outside coverage" in err and "4 model(s)" in err and "wall" not in out
    assert main(_score(tmp_path, "--coverage", str(tmp_path / "w.csv"), "--overwrite", "--quiet")) == 0
    assert "summary:" not in capsys.readouterr().err


def test_coverage_in_a_study_file_and_missing_file(tmp_path, capsys):
    (tmp_path / "s.toml").write_text(f'[inputs]\ncoverage = "nope.csv"\nreference = "{DATA / "reference.csv"}"\n'
                                     f'picks = "{DATA / "picks.csv"}"\n[output]\nout = "o"\n')
    assert main(["score", "--config", str(tmp_path / "s.toml"), *cli_flags("score", "--no-figures")]) == 2
    err = capsys.readouterr().err
    assert "--coverage" in err and str(tmp_path / "nope.csv") in err and not (tmp_path / "o").exists()


def test_progress_lines_when_not_a_terminal():
    now = [0.0]
    out = io.StringIO()
    stage = Stage("reading picks", 30, stream=out, interval=10, clock=lambda: now[0])
    for i in range(30):  # one item a second: a line at 10 s and at 20 s, then the closing line
        now[0] = float(i + 1)
        stage.update()
    stage.close()
    lines = out.getvalue().splitlines()
    assert lines == ["reading picks: 10/30 (33%), 00:10 elapsed, 00:20 to go",
                     "reading picks: 20/30 (67%), 00:20 elapsed, 00:10 to go",
                     "reading picks: 30/30 (100%), 00:30 elapsed, 00:00 to go; done"]
    quick = io.StringIO()
    with Stage("scoring partitions", 3, stream=quick, interval=10, clock=lambda: 0.0) as s:
        s.update(3)
    assert quick.getvalue() == ""  # a short stage prints nothing in a log


@pytest.mark.slow
def test_closed_pipe_ends_quietly(tmp_path):
    exe = Path(sys.executable).with_name("pickscale")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "pickscale.cli"]
    proc = subprocess.Popen(cmd + _score(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()  # `| head -1`
    proc.stdout.close()
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=120)
    assert code in (0, 141), err
    assert "Traceback" not in err and "cannot write" not in err and "Broken pipe" not in err, err
    assert (tmp_path / "out" / "results.zarr").is_dir() and (tmp_path / "out" / "detection.csv").is_file()


@pytest.mark.slow
def test_writing_is_a_labelled_stage(tmp_path, capsys, monkeypatch):
    """Issue 12 item 7: the last stage, writing the store and the tables and figures, has its own display."""
    import pickscale.engine.progress as progress

    made: list = []
    real = progress.Stage

    def recording(label, total, **kwargs):
        stage = real(label, total, interval=0.0, **{k: v for k, v in kwargs.items() if k != "interval"})
        made.append(stage)
        return stage

    monkeypatch.setattr(progress, "Stage", recording)
    assert main(_score(tmp_path)) == 0
    writing = [s for s in made if s.label.startswith("writing")]
    assert len(writing) == 1 and writing[0].done == writing[0].total == 2
    assert "writing (store, tables and figures): 1/2" in capsys.readouterr().err
