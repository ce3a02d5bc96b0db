"""Issue 20, item 5: a (dataset, phase) without reference arrivals has nothing to score against (SPEC §4).

Every metric that reads the reference is NaN there — ``precision_lb``, ``f1_lb``, ``ap_lb``, ``ece_lb``,
``brier_lb``, ``observed_lb``, recall and its kin, the best threshold and its readings, the budget readings and
timing — while the counts that are facts about the model (``emitted``, calibration ``n``, ``mean_conf``) are
kept; the printed tables leave those rows out and say why.

Worked by hand (shared threshold 0.3, ``tol`` 0.5 s).  Dataset ``ponly``, station A: P arrivals at 10 s and
70 s, no S arrival; model m picks P at 10.1 s (conf 0.9) and 70.2 s (0.8), S at 15 s (0.7), 75 s (0.4) and
200 s (0.1, below the shared threshold).  The S picks are 5 s from every P arrival, so no swap.  Dataset
``both``, station B: P at 10 s and S at 15 s, picked by m at 10.1 s (0.9) and 15.1 s (0.6).

Before the fix, (ponly, S, m) read precision_lb 0.0 (0 matched of 2 emitted), ece_lb 0.4
((0.1 + 0.4 + 0.7) / 3: three picks in bins 1, 4, 7, none a hit), brier_lb 0.22 ((0.01 + 0.16 + 0.49) / 3) and
observed_lb 0.0 in those bins — numbers that look like results of a model that S-picks nothing right.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pickscale
from pickscale.report.outputs import print_tables

T0 = pd.Timestamp("2024-01-01T00:00:00Z")
DATA = Path(__file__).resolve().parents[1] / "data" / "paired_windows"


def _t(seconds: float) -> str:
    return (T0 + pd.Timedelta(seconds=seconds)).isoformat()


def _inputs():
    ref = pd.DataFrame({"dataset": ["ponly", "ponly", "both", "both"], "station": ["A", "A", "B", "B"],
                        "phase": ["P", "P", "P", "S"], "time": [_t(10), _t(70), _t(10), _t(15)]})
    rows = [("ponly", "A", "P", 10.1, 0.9), ("ponly", "A", "P", 70.2, 0.8), ("ponly", "A", "S", 15.0, 0.7),
            ("ponly", "A", "S", 75.0, 0.4), ("ponly", "A", "S", 200.0, 0.1),
            ("both", "B", "P", 10.1, 0.9), ("both", "B", "S", 15.1, 0.6)]
    picks = pd.DataFrame([(d, "m", s, p, _t(t), c) for d, s, p, t, c in rows],
                         columns=["dataset", "model", "station", "phase", "time", "conf"])
    return ref, picks


@pytest.fixture(scope="module")
def ds():
    ref, picks = _inputs()
    return pickscale.score(ref, picks, time_bin="1h", tols=[0.25, 0.5], budget=[1, 2])


@pytest.fixture(scope="module")
def frames(ds):
    return pickscale.tables(ds)


def _row(frame: pd.DataFrame, dataset: str, phase: str, **keys) -> pd.DataFrame:
    sel = (frame["dataset"] == dataset) & (frame["phase"] == phase) & (frame["model"] == "m")
    for k, v in keys.items():
        sel &= frame[k] == v
    return frame[sel]


NAN_DETECTION = ["recall", "precision_lb", "f1_lb", "extra_rate", "duplicate_rate", "recall_at_budget",
                 "best_threshold", "f1_lb_at_best", "recall_at_best", "ap_lb"]


@pytest.mark.slow
def test_detection_reads_nothing_without_s_arrivals(frames):
    row = _row(frames["detection"], "ponly", "S").iloc[0]
    assert (row.n_reference, row.emitted, row.matched) == (0, 2, 0)  # emitted is a fact about the model: kept
    for name in NAN_DETECTION:
        assert math.isnan(row[name]), name
    # The other phase, and the same phase in a dataset with S arrivals, are results as before.
    p = _row(frames["detection"], "ponly", "P").iloc[0]
    assert (p.recall, p.precision_lb, p.f1_lb, p.ap_lb) == (1.0, 1.0, 1.0, 1.0)
    s = _row(frames["detection"], "both", "S").iloc[0]
    assert (s.n_reference, s.emitted, s.recall, s.precision_lb) == (1, 1, 1.0, 1.0)


@pytest.mark.slow
def test_calibration_and_reliability_without_s_arrivals(frames):
    cal = _row(frames["calibration"], "ponly", "S").iloc[0]
    assert cal.n_picks == 3  # every pick at or above the floor: kept
    assert math.isnan(cal.ece_lb) and math.isnan(cal.brier_lb)  # were 0.4 and 0.22
    rel = _row(frames["reliability"], "ponly", "S").set_index("bin")
    assert rel["n_picks"].tolist() == [0, 1, 0, 0, 1, 0, 0, 1, 0, 0]
    np.testing.assert_allclose(rel.loc[[1, 4, 7], "mean_conf"], [0.1, 0.4, 0.7])  # the model's own: kept
    assert rel["observed_lb"].isna().all()  # was 0.0 in bins 1, 4, 7
    # With S arrivals the calibration is a result: one pick of conf 0.6, a hit.
    both = _row(frames["calibration"], "both", "S").iloc[0]
    assert both.n_picks == 1 and both.ece_lb == pytest.approx(0.4) and both.brier_lb == pytest.approx(0.16)


def test_timing_sweep_and_readings_without_s_arrivals(frames, ds):
    assert _row(frames["timing"], "ponly", "S").iloc[0]["n_pairs"] == 0
    assert _row(frames["timing"], "ponly", "S").drop(columns=["dataset", "phase", "model", "n_pairs"]).isna().all(
        axis=None)
    sweep = _row(frames["sweep"], "ponly", "S")
    assert sweep["emitted"].iloc[0] == 3 and sweep["extra"].iloc[0] == 3  # at the floor: counts kept
    for name in ("recall", "precision_lb", "f1_lb", "extra_rate", "duplicate_rate", "mae"):
        assert sweep[name].isna().all(), name
    assert _row(frames["budgets"], "ponly", "S")["recall_at_budget"].isna().all()
    tol = _row(frames["tolerance"], "ponly", "S")
    assert tol["emitted"].tolist() == [2, 2] and tol[["recall", "precision_lb"]].isna().all(axis=None)
    over = _row(frames["over_time"], "ponly", "S")
    assert over["emitted"].sum() == 2 and over[["recall", "precision_lb"]].isna().all(axis=None)
    # In the store too (the tables read it): NaN, not 0.
    cell = ds.sel(dataset="ponly", phase="S", model="m")
    assert np.isnan(cell["precision_lb"].values).all() and np.isnan(cell["observed_lb"].values).all()
    assert int(cell["emitted"].sum("station").sel(threshold=0.3)) == 2


def test_phase_quality_keeps_its_rows(frames):
    # Over both phases: the P arrivals are there, so the swap rate is a result (no S pick near a P arrival).
    pq = frames["phase_quality"].set_index(["dataset", "model"]).loc[("ponly", "m")]
    assert (pq.P_n_reference, pq.S_n_reference, pq.S_matched_as_P, pq.swap_rate) == (2, 0, 0, 0.0)


def test_intervals_are_nan_without_s_arrivals(ds):
    boot = pickscale.bootstrap(ds, draws=20)
    cell = boot.sel(dataset="ponly", phase="S", model="m")
    for name in ("precision_lb_lo", "precision_lb_hi", "ece_lb_lo", "ece_lb_hi", "recall_lo"):
        assert np.isnan(cell[name].values).all(), name


def test_printed_tables_leave_the_rows_out_and_say_why(frames, capsys):
    print_tables(frames, False)
    out = capsys.readouterr().out
    assert out.count("dataset ponly has no reference S arrivals: S rows not printed "
                     "(emitted counts in detection.csv)") == 1
    assert "dataset both has no reference" not in out
    blocks = {}
    for block in out.split("\ndataset: ")[1:]:
        name, _, body = block.partition("\n")
        blocks.setdefault(name, []).append(body)
    # detection, timing and calibration print a block per dataset; ponly's show P rows only, both's P and S.
    for body in blocks["ponly"][:3]:
        rows = [line.split()[0] for line in body.splitlines()[1:] if line.strip() and line.split()[0] in "PS"]
        assert rows == ["P"], body
    for body in blocks["both"][:3]:
        rows = [line.split()[0] for line in body.splitlines()[1:] if line.strip() and line.split()[0] in "PS"]
        assert rows == ["P", "S"], body


@pytest.mark.slow
def test_the_p_only_reference_of_paired_windows():
    """The real case: ncedc_deepdenoiser_ponly labels P only (PROVENANCE.md); its S rows are not results."""
    ref = pd.read_csv(DATA / "reference.csv")
    picks = pd.read_csv(DATA / "picks.csv")
    name = "ncedc_deepdenoiser_ponly"
    ds = pickscale.score(ref[ref["dataset"] == name], picks[picks["dataset"] == name])
    t = pickscale.tables(ds)
    det = t["detection"][t["detection"]["phase"] == "S"]
    assert len(det) == 4 and (det["n_reference"] == 0).all() and (det["emitted"] > 0).all()
    assert det[["precision_lb", "f1_lb", "ap_lb", "recall_at_budget", "best_threshold"]].isna().all(axis=None)
    cal = t["calibration"][t["calibration"]["phase"] == "S"]
    assert (cal["n_picks"] > 0).all() and cal[["ece_lb", "brier_lb"]].isna().all(axis=None)
    assert t["detection"][t["detection"]["phase"] == "P"]["precision_lb"].notna().all()
