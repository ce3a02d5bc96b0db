"""The writing stage counts the tables and then every figure as it is written (figures are most of a small
study's time, and were silent)."""

from __future__ import annotations

import io

import pytest

import pickscale
from pickscale.engine.progress import Stage
from pickscale.report.figures.build import figure_names
from pickscale.report.outputs import write_report
from tests.helpers.extend import stretches

pytestmark = pytest.mark.filterwarnings("ignore::pickscale.PickscaleWarning")


class Recording:
    """A stage that records what it is told, and which figures were on disk at each step."""

    def __init__(self, folder):
        self.folder, self.events = folder, []

    def grow(self, n):
        self.events.append(("grow", n))

    def update(self, n=1):
        written = sorted(p.name for p in self.folder.rglob("*.png"))
        self.events.append(("update", len(written)))


@pytest.mark.slow
def test_each_figure_counts_as_it_is_written(tmp_path):
    ref, picks = stretches(1)
    ds = pickscale.score(ref, picks, time_bin="1D")
    stage = Recording(tmp_path)
    write_report(ds, tmp_path, figures=True, quiet=True, stage=stage)
    n = len(figure_names(ds))
    assert n == len(list((tmp_path / "figures").glob("*.png"))) > 5
    # The tables first (no figure yet), then the figures counted, then one step per figure written.
    assert stage.events[:2] == [("update", 0), ("grow", n)]
    assert stage.events[2:] == [("update", k) for k in range(1, n + 1)]


def test_a_stage_can_grow_once_under_way():
    now = [0.0]
    out = io.StringIO()
    stage = Stage("writing (tables and figures)", 1, stream=out, interval=10, clock=lambda: now[0], terminal=False)
    stage.update()
    stage.grow(3)
    now[0] = 11.0
    stage.update()
    stage.close()
    assert "writing (tables and figures): 2/4" in out.getvalue()
