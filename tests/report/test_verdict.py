"""The verdict ``score`` and ``report`` print (issue 25, item 5): hand-worked catalogues, and the CLI with and
without ``--verbose``."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pickscale
from pickscale.cli import main
from pickscale.report.verdict import FEW_ARRIVALS, verdict_lines, verdict_rows

DATA = Path(__file__).resolve().parents[1] / "data"
TITLES = ("DETECTION at the shared threshold", "ONSET TIME at the shared threshold", "CALIBRATION",
          "PHASE QUALITY at the shared threshold")
VERDICT = "VERDICT per dataset and phase"


def _quiet_score(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pickscale.score(*args, **kwargs)


def _catalogue(n_stations: int = 4, per_station: int = 10):
    """P arrivals only (no S arrival anywhere), every 60 s at each station.

    ``A`` picks every arrival (conf 0.9, 1–31 ms late, all different) and emits a few S picks (the
    reference has none); ``B`` picks every second arrival (conf 0.9) and, for each arrival it misses, a
    pick 20 s later where there is none (conf 0.8).  Both emit 40 P picks at the floor: the matched budget
    is min(40 arrivals, 40, 40) = 40.  At that budget A has matched 40 (recall_at_budget 1.0), B its 20
    correct picks (0.5): A leads by +0.5 at every station, so the lead's interval is [0.5, 0.5], which
    excludes 0.  Own best thresholds: A emits only conf 0.9, so every threshold up to 0.9 ties and the
    lowest, 0.02, is taken -- below the lowest confidence A emitted: on the edge; B's f1_lb is 2·20/(40+40)
    = 0.5 up to 0.8 and 2·20/(40+20) = 0.667 above: its best lies in (0.8, 0.9], not on an edge.
    """
    t0 = pd.Timestamp("2024-01-01T00:00:00Z")
    ref, picks = [], []
    for s in range(n_stations):
        station = f"XX.S{s}"
        for i in range(per_station):
            t = t0 + pd.Timedelta(seconds=60 * (s * per_station + i))
            k = s * per_station + i
            ref.append({"station": station, "phase": "P", "time": t})
            picks.append({"model": "A", "station": station, "phase": "P",
                          "time": t + pd.Timedelta(milliseconds=1 + 7 * k % 31), "conf": 0.9})
            if i % 2 == 0:
                picks.append({"model": "B", "station": station, "phase": "P",
                              "time": t + pd.Timedelta(milliseconds=2 + 5 * k % 29), "conf": 0.9})
            else:
                picks.append({"model": "B", "station": station, "phase": "P", "time": t + pd.Timedelta(seconds=20),
                              "conf": 0.8})
            if i < 3:
                picks.append({"model": "A", "station": station, "phase": "S", "time": t + pd.Timedelta(seconds=5),
                              "conf": 0.7})
    return pd.DataFrame(ref), pd.DataFrame(picks)


@pytest.fixture(scope="module")
def clear():
    ref, picks = _catalogue()
    return _quiet_score(ref, picks)


@pytest.mark.slow
def test_the_verdict_names_the_clear_winner_by_hand(clear):
    rows = verdict_rows(clear)
    assert [(r["dataset"], r["phase"]) for r in rows] == [("all", "P")]  # no S arrival: no S row
    (row,) = rows
    assert row["n_reference"] == 40 and row["matched_budget"] == 40
    assert row["best"] == ["A"] and row["recall"] == 1.0 and row["runner_up"] == "B"
    assert row["lead"] == pytest.approx(0.5)
    assert row["excludes_0"] is None and np.isnan(row["lo"])  # no intervals without --ci
    lines = verdict_lines(clear)
    text = "\n".join(lines)
    assert ("best at matched budget (40 picks): A, recall_at_budget 1.000 (no interval: run with --ci); "
            "lead over B +0.500") in " ".join(text.split())
    assert "all S" not in text
    assert all(len(line) <= 120 for line in lines)


def test_the_lead_excludes_zero_with_intervals(clear):
    ds = pickscale.bootstrap(clear, draws=200, seed=1)
    (row,) = verdict_rows(ds)
    assert row["best"] == ["A"] and (row["lo"], row["hi"]) == (1.0, 1.0)
    assert (row["lead_lo"], row["lead_hi"]) == pytest.approx((0.5, 0.5)) and row["excludes_0"] is True
    text = " ".join("\n".join(verdict_lines(ds)).split())
    assert ("A, recall_at_budget 1.000 [1.000, 1.000]; lead over B +0.500 [+0.500, +0.500] excludes 0 at 95%"
            in text)


@pytest.mark.slow
def test_one_station_claims_no_interval():
    """Resampling one station gives zero-width intervals (SPEC §12): the verdict shows none and claims no lead."""
    ref, picks = _catalogue(n_stations=1, per_station=40)
    ds = pickscale.bootstrap(_quiet_score(ref, picks), draws=100)
    (row,) = verdict_rows(ds)
    assert row["stations"] == 1 and row["intervals"] is False and row["excludes_0"] is None
    text = " ".join("\n".join(verdict_lines(ds)).split())
    assert "A, recall_at_budget 1.000 (one scored station: no interval); lead over B +0.500" in text
    assert "excludes 0" not in text


def test_the_edge_threshold_is_flagged(clear):
    (row,) = verdict_rows(clear)
    own = {model: (theta, f1, edge) for model, theta, f1, edge in row["models"]}
    assert own["A"] == (0.02, 1.0, True)
    assert 0.8 < own["B"][0] <= 0.9 and own["B"][1] == pytest.approx(2 / 3) and own["B"][2] is False
    text = " ".join("\n".join(verdict_lines(clear)).split())
    assert "own best threshold: A 0.02 (f1_lb 1.000, ON THE EDGE of the thresholds searched); B " in text
    assert f"B {own['B'][0]:g} (f1_lb 0.667)" in text


@pytest.mark.slow
def test_a_tie_and_few_arrivals():
    ref, picks = _catalogue(n_stations=1, per_station=6)
    picks = pd.concat([picks, picks[picks["model"] == "A"].assign(model="C")], ignore_index=True)
    ds = _quiet_score(ref, picks)
    (row,) = verdict_rows(ds)
    assert row["best"] == ["A", "C"] and row["runner_up"] is None
    text = " ".join("\n".join(verdict_lines(ds)).split())
    assert "tie between A and C, recall_at_budget 1.000" in text
    assert f"warning: few arrivals: 6 reference arrival(s) (< {FEW_ARRIVALS})" in text


def test_few_arrivals_is_the_figures_threshold():
    from pickscale.report.figures.style import FEW_ARRIVALS as FIGURES

    assert FEW_ARRIVALS == FIGURES == 10


def _run(argv, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_cli_verbose_prints_the_tables_and_the_verdict_always(tmp_path, capsys):
    """paired_windows: the verdict without the tables, then ``report --verbose`` with them; the store keeps the
    data-quality flags the verdict reads."""
    folder = DATA / "paired_windows"
    out = tmp_path / "run"
    code, stdout, stderr = _run(["score", "--reference", folder / "reference.csv", "--picks",
                                 folder / "picks.csv", "--out", out, "--no-figures"], capsys)
    assert code == 0, stderr
    assert not any(title in stdout for title in TITLES)
    assert VERDICT in stdout
    flat = " ".join(stdout.split())
    assert "ncedc_phasenet P: 154 reference arrivals" in flat
    assert "ncedc_deepdenoiser_ponly S" not in flat  # a phase without reference arrivals: no row
    assert "warning: picks at a fixed grid: GPD(model_pol_best)" in flat
    assert "GPD(model_pol_best) 0.94 (f1_lb 0.797, ON THE EDGE of the thresholds searched)" in flat
    assert "(no interval: run with --ci)" in flat
    assert all(len(line) <= 120 for line in stdout[stdout.index(VERDICT):].splitlines())
    code, again, stderr = _run(["report", out / "results.zarr", "--out", tmp_path / "report", "--no-figures",
                                "--verbose"], capsys)
    assert code == 0, stderr
    positions = [again.index(title) for title in TITLES]
    assert positions == sorted(positions) and again.index(VERDICT) > positions[-1]
    # From the store, the same verdict (score then names the store it wrote).
    assert again[again.index(VERDICT):] == stdout[stdout.index(VERDICT):].split("results store: ")[0]
    code, quiet, _ = _run(["report", out / "results.zarr", "--out", tmp_path / "report", "--no-figures",
                           "--quiet", "--overwrite"], capsys)
    assert code == 0 and quiet == ""
