"""``--ci [LEVEL]`` and ``--budget 50,100,200`` on the command line (SPEC §7, §12)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from pickscale.cli import main
from pickscale.cli.parser import build_parser
from tests.helpers.catalogues import plain_catalogue


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> tuple[Path, Path]:
    cat = plain_catalogue(seed=8, n_datasets=1, n_stations=4, n_events=8)
    folder = tmp_path_factory.mktemp("inputs")
    ref, picks = folder / "reference.csv", folder / "picks.csv"
    cat.reference.to_csv(ref, index=False, lineterminator="\n")
    cat.picks.to_csv(picks, index=False, lineterminator="\n")
    return ref, picks


def run(argv, capsys) -> tuple[int, str]:
    code = main([str(a) for a in argv] + ["--no-figures", "--quiet"])
    return code, capsys.readouterr().err


def test_flags_parse():
    p = build_parser()
    args = p.parse_args(["demo", "--out", "x", "--ci"])
    assert args.ci == 0.95 and args.budget is None
    args = p.parse_args(["demo", "--out", "x", "--ci", "0.9", "--budget", "50,100,200"])
    assert args.ci == 0.9 and args.budget == [50, 100, 200]
    assert p.parse_args(["demo", "--out", "x", "--budget", "80"]).budget == 80  # one N: as before
    assert p.parse_args(["report", "store", "--ci"]).ci == 0.95


@pytest.mark.slow
def test_score_with_ci_and_budgets_then_report(inputs, tmp_path, capsys):
    ref, picks = inputs
    out = tmp_path / "run"
    code, err = run(["score", "--reference", ref, "--picks", picks, "--out", out, "--ci", "--budget", "3,6"], capsys)
    assert code == 0, err
    det = pd.read_csv(out / "detection.csv")
    assert {"recall_lo", "recall_hi", "recall_at_budget_lo"} <= set(det.columns)
    assert set(pd.read_csv(out / "budgets.csv").budget) == {3, 6}
    assert (out / "model_differences.csv").is_file()
    # The intervals are stored: report writes the same tables from the store alone.
    code, err = run(["report", out / "results.zarr", "--out", tmp_path / "again"], capsys)
    assert code == 0, err
    for name in ("detection", "timing", "calibration", "budgets", "model_differences"):
        assert (out / f"{name}.csv").read_bytes() == (tmp_path / "again" / f"{name}.csv").read_bytes(), name


@pytest.mark.slow
def test_score_without_ci_writes_no_interval(inputs, tmp_path, capsys):
    ref, picks = inputs
    out = tmp_path / "run"
    code, err = run(["score", "--reference", ref, "--picks", picks, "--out", out], capsys)
    assert code == 0, err
    assert not any(c.endswith(("_lo", "_hi")) for c in pd.read_csv(out / "detection.csv").columns)
    assert not (out / "model_differences.csv").exists() and not (out / "budgets.csv").exists()
    # report --ci adds them from the store.
    code, err = run(["report", out / "results.zarr", "--out", tmp_path / "ci", "--ci", "0.9"], capsys)
    assert code == 0, err
    assert "mae_lo" in pd.read_csv(tmp_path / "ci" / "timing.csv").columns


def _rows_of(folder: Path, dataset: str) -> dict[str, list[str]]:
    """The lines of ``dataset`` (first column) in the tables that carry intervals, byte for byte."""
    out = {}
    for name in ("detection", "timing", "calibration", "model_differences"):
        lines = (folder / f"{name}.csv").read_bytes().decode("utf-8").splitlines()
        assert lines[0].startswith("dataset,"), name
        out[name] = [lines[0]] + [line for line in lines[1:] if line.split(",", 1)[0] == dataset]
        assert len(out[name]) > 1, name
    return out


@pytest.mark.slow
def test_a_datasets_intervals_do_not_change_with_other_datasets(tmp_path, capsys):
    # Issue 20 item 6: ds1 scored alone, beside ds2 (sorting after), beside ds0 (sorting first), and in a
    # store of ds1, ds2 extended by ds0 and reported with --ci: ds1's rows, intervals included, are the same
    # bytes every time.
    cat = plain_catalogue(seed=8, n_datasets=3, n_stations=4, n_events=6, models=("alpha", "beta"))

    def inputs(names, tag):
        ref, picks = tmp_path / f"{tag}_reference.csv", tmp_path / f"{tag}_picks.csv"
        cat.reference[cat.reference.dataset.isin(names)].to_csv(ref, index=False, lineterminator="\n")
        cat.picks[cat.picks.dataset.isin(names)].to_csv(picks, index=False, lineterminator="\n")
        return ref, picks

    def score(names, tag, *flags):
        ref, picks = inputs(names, tag)
        code, err = run(["score", "--reference", ref, "--picks", picks, "--out", tmp_path / tag, *flags], capsys)
        assert code == 0, err
        return tmp_path / tag

    alone = _rows_of(score(["ds1"], "alone", "--ci"), "ds1")
    assert alone == _rows_of(score(["ds1", "ds2"], "after", "--ci"), "ds1")
    assert alone == _rows_of(score(["ds0", "ds1", "ds2"], "first", "--ci"), "ds1")
    stored = score(["ds1", "ds2"], "stored")
    ref, picks = inputs(["ds0"], "added")
    code, err = run(["extend", stored, "--reference", ref, "--picks", picks], capsys)
    assert code == 0, err
    code, err = run(["report", stored / "results.zarr", "--out", tmp_path / "extended", "--ci"], capsys)
    assert code == 0, err
    assert alone == _rows_of(tmp_path / "extended", "ds1")


@pytest.mark.parametrize("flags, said", [(["--ci", "1.5"], "--ci"), (["--budget", "5,5"], "--budget")])
def test_bad_ci_or_budget_exit_2_nothing_written(inputs, tmp_path, capsys, flags, said):
    ref, picks = inputs
    out = tmp_path / "run"
    code, err = run(["score", "--reference", ref, "--picks", picks, "--out", out, *flags], capsys)
    assert code == 2 and said in err
    assert not (out / "results.zarr").exists()
