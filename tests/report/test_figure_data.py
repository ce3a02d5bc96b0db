"""The numbers each figure draws, read from its data-selection function (nothing drawn).

Each figure family of :mod:`pickscale.report.figures` keeps its data selection apart from its drawing;
these tests check those numbers against the Dataset and the demo catalogue's known answers.
"""

from __future__ import annotations

import numpy as np
import pytest

import pickscale
from pickscale.demo import catalogue
from pickscale.report.figures import calibration, detection, onsets, station_recall
from pickscale.report.figures.selection import cap_models, subsets
from tests.helpers.results import figure_catalogue


@pytest.fixture(scope="module")
def demo():
    return pickscale.score(*catalogue()).load()


@pytest.fixture(scope="module")
def many():
    return pickscale.score(*figure_catalogue(n_models=30, n_stations=3, seed=5)).load()


@pytest.mark.slow
def test_recall_bars_are_the_datasets_values(demo):
    bars = detection.recall_bars(demo)
    ti = int(np.argmin(np.abs(demo.threshold.values - bars.threshold)))
    for (d, m, p), r in bars.recall.items():
        assert r == float(demo.recall.isel(threshold=ti).sel(dataset=d, model=m, phase=p))
        assert bars.at_budget[d, m, p] == float(demo.recall_at_budget.sel(dataset=d, model=m, phase=p))
    # The liberal model's lead at the shared threshold is bought with picks: it shrinks at the budget.
    lead = [bars.recall[d, "liberal", p] - bars.recall[d, "sharp", p] for d in bars.datasets for p in ("P", "S")]
    at_budget = [bars.at_budget[d, "liberal", p] - bars.at_budget[d, "sharp", p]
                 for d in bars.datasets for p in ("P", "S")]
    assert np.mean(lead) > np.mean(at_budget)
    lo, hi = bars.ylim
    assert 0 <= lo < min(bars.recall.values()) and hi > 1


@pytest.mark.slow
def test_curves_rows_and_marks(demo):
    data = detection.curves(demo, models=["sharp", "late"])
    assert data.models == ["late", "sharp"] and not data.skipped
    assert [(r.dataset, r.phase) for r in data.rows] == [
        ("aftershocks_north", "P"), ("aftershocks_north", "S"), ("aftershocks_south", "P"), ("aftershocks_south", "S")]
    for row in data.rows:
        assert [c.model for c in row.curves] == ["late", "sharp"]
        for c in row.curves:
            assert np.all((c.recall >= 0) & (c.recall <= 1))
            assert c.best_index is None or 0 <= c.best_index < c.emitted.size


def test_onset_errors_see_the_late_model(demo):
    err = onsets.onset_errors(demo)
    for d in ("aftershocks_north", "aftershocks_south"):
        for p in ("P", "S"):
            assert err.bias[d, "late", p] == pytest.approx(0.15, abs=0.03)
            assert abs(err.bias[d, "sharp", p]) < 0.03
    assert err.xmin <= 0 < err.xmax
    assert err.rows[0] == ("aftershocks_north", None)


def test_residual_histograms_count_every_pair(demo):
    h = onsets.residual_histograms(demo)
    for panel in h.panels.values():
        assert panel is not None
        assert panel.counts.sum() == panel.residuals.size  # off-scale pairs are in the end bins
        assert h.ymax >= panel.counts.max()
    assert h.panels["late", "P"].median == pytest.approx(0.15, abs=0.03)
    assert np.allclose(np.diff(h.edges), h.width)


def test_calibration_curves_and_wilson_interval(demo):
    cal = calibration.calibration_curves(demo)
    for panel in cal.panels.values():
        for line in panel.lines:
            assert np.all(line.low <= line.observed + 1e-12) and np.all(line.observed <= line.high + 1e-12)
            assert np.all(line.n > 0)
    assert cal.size_keys == sorted(cal.size_keys) and cal.size_keys[-1] <= cal.n_max * 2
    low, high = calibration.wilson_interval(np.array([0.0, 10.0]), np.array([10.0, 10.0]))
    assert low[0] == 0 and high[1] == pytest.approx(1)


def test_station_rows_worst_first(demo):
    rows = station_recall.station_rows(demo, max_stations=5)
    means = [float(np.nanmean(r.recall)) for r in rows.rows]
    assert means == sorted(means) and len(rows.rows) == 5 < rows.total
    assert rows.extent.startswith("worst 5 of") and rows.vmin < rows.vmax
    assert rows.grid.shape == (5, 3)


@pytest.mark.slow
def test_model_cap_keeps_the_best_in_dataset_order(many):
    dsets, mods = subsets(many, None, None)
    kept, note = cap_models(many, dsets, mods, 8)
    assert len(kept) == 8 and kept == [m for m in mods if m in kept]
    assert note.startswith("showing 8 of 30 models")
    assert detection.recall_bars(many).models == cap_models(many, dsets, mods, 16)[0]
