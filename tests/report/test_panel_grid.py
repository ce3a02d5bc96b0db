"""Tests of pickscale.report.figures.style.panel_grid, the one helper that makes every figure and its panels.

The layouts are pinned against what matplotlib makes without the helper (the same PNG bytes), so that moving a
figure onto the helper cannot move a pixel; and a scan of the figure modules checks that no other module makes a
``Figure`` or adds axes to a grid of its own.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import ast  # noqa: E402
import io  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from pickscale.report.figures import style  # noqa: E402
from pickscale.report.figures.style import empty_note, panel_grid  # noqa: E402

FIGURES_DIR = Path(style.__file__).parent


def _png(fig: Figure) -> bytes:
    """Something in every axes, by its place in the grid (ticks and labels to lay out), then the PNG bytes."""
    for ax in fig.axes:
        i = ax.get_subplotspec().num1
        ax.plot([0, 1 + i], [i, 10 * (i + 1)])
        ax.set_title(f"panel {i}")
    data = io.BytesIO()
    fig.savefig(data, format="png", dpi=40, metadata={"Software": None})
    return data.getvalue()


@pytest.mark.parametrize("rows, cols, kw", [
    (1, 2, {"sharey": True}),
    (3, 2, {"sharex": True}),
    (2, 1, {"sharey": True}),
    (2, 3, {"sharex": "col", "sharey": "row"}),
    (4, 2, {}),
    (2, 1, {"height_ratios": [7, 2]}),
])
def test_a_full_grid_is_what_figure_subplots_makes(rows, cols, kw):
    fig, axes = panel_grid(rows=rows, cols=cols, width=6.0, height=4.0, **kw)
    ref = Figure(figsize=(6.0, 4.0), layout="constrained")
    kw = dict(kw)
    ratios = kw.pop("height_ratios", None)
    expected = ref.subplots(rows, cols, squeeze=False, gridspec_kw={"height_ratios": ratios} if ratios else None,
                            **kw)
    assert axes.shape == expected.shape == (rows, cols)
    assert fig.get_layout_engine().__class__ is ref.get_layout_engine().__class__
    assert _png(fig) == _png(ref)


@pytest.mark.parametrize("n, per_row", [(1, None), (3, None), (5, 4), (4, 4), (3, 2), (7, 4)])
def test_panels_in_reading_order_are_what_add_subplot_makes(n, per_row):
    fig, axes = panel_grid(panels=n, per_row=per_row, sharey=True, inner_labels=True, col_width=3.6,
                           row_height=3.0, extra=0.6)
    cols = n if per_row is None else min(n, per_row)
    rows = -(-n // cols)
    ref = Figure(figsize=(min(3.6 * cols, 16.0), 3.0 * rows + 0.6), layout="constrained")
    made: list = []
    for i in range(n):
        made.append(ref.add_subplot(rows, cols, i + 1, sharey=made[0] if made else None))
    assert axes.shape == (rows, cols)
    assert [ax is not None for ax in axes.flat] == [i < n for i in range(rows * cols)]
    assert fig.get_size_inches().tolist() == ref.get_size_inches().tolist()
    assert all(ax.get_shared_y_axes().joined(axes[0, 0], ax) for ax in axes.flat[1:n])
    assert _png(fig) == _png(ref)


def test_columns_of_stacked_panels_share_x_down_each_column():
    """recall_by_group and recall_over_time: the recall above, the arrivals beneath, per column."""
    fig, axes = panel_grid(rows=2, cols=3, sharex="col", inner_labels=True, height_ratios=(3, 1), col_width=4.2,
                           height=4.8)
    ref = Figure(figsize=(min(4.2 * 3, 16.0), 4.8), layout="constrained")
    grid = ref.add_gridspec(2, 3, height_ratios=(3, 1))
    for i in range(3):  # as the figures made them before panel_grid: column by column
        ref.add_subplot(grid[1, i], sharex=ref.add_subplot(grid[0, i]))
    for i in range(3):
        top, bottom = axes[:, i]
        assert top.get_shared_x_axes().joined(top, bottom)
        assert not top.get_shared_x_axes().joined(top, axes[0, (i + 1) % 3])
        assert top.xaxis.get_tick_params()["labelbottom"]  # inner_labels: nothing hidden
    assert _png(fig) == _png(ref)


def test_inner_tick_labels_hidden_only_without_inner_labels():
    _, hidden = panel_grid(cols=2, sharey=True, width=6.0, height=3.0)
    _, kept = panel_grid(cols=2, sharey=True, inner_labels=True, width=6.0, height=3.0)
    assert not hidden[0, 1].yaxis.get_tick_params()["labelleft"]
    assert kept[0, 1].yaxis.get_tick_params()["labelleft"]


def test_figure_size_rules():
    def inches(**kw):
        return panel_grid(empty="-", **kw)[0].get_size_inches().tolist()

    assert inches(rows=3, cols=2, width=10.5, row_height=1.6, extra=1.5) == [10.5, 1.6 * 3 + 1.5]
    assert inches(panels=6, col_width=3.6, height=4.0) == [16.0, 4.0]  # at most 16 in wide
    assert inches(panels=6, col_width=3.6, max_width=30.0, height=4.0) == [3.6 * 6, 4.0]
    assert inches(panels=6, per_row=4, col_width=3.6, row_height=3.4, extra=0.6) == [3.6 * 4, 3.4 * 2 + 0.6]
    assert inches(panels=0, col_width=3.6, row_height=3.8) == [3.6, 3.8]  # an empty figure: one place
    assert inches(rows=2, cols=0, col_width=4.2, height=4.8) == [4.2, 4.8]


@pytest.mark.parametrize("kw", [
    {"panels": 0, "col_width": 3.6, "row_height": 3.8},
    {"rows": 0, "width": 5.0, "height": 4.0},
    {"rows": 2, "cols": 0, "height_ratios": (3, 1), "col_width": 4.2, "height": 4.8},
])
def test_without_panels_one_axes_across_the_figure_says_so(kw):
    fig, axes = panel_grid(empty="no reference arrival", **kw)
    assert axes.shape == (0, 0)
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.texts] == ["no reference arrival"]
    spec = ax.get_subplotspec()
    grid = spec.get_gridspec()
    assert (spec.rowspan, spec.colspan) == (range(grid.nrows), range(grid.ncols))
    ref = Figure(figsize=tuple(fig.get_size_inches()), layout="constrained")
    if "height_ratios" in kw:
        empty_note(ref.add_subplot(ref.add_gridspec(2, 1, height_ratios=(3, 1))[:, 0]), "no reference arrival")
    else:
        empty_note(ref.add_subplot(1, 1, 1), "no reference arrival")
    assert _png(fig) == _png(ref)


@pytest.mark.parametrize("kw, match", [
    ({"rows": 2, "panels": 3, "width": 5.0, "height": 4.0}, "not both"),
    ({"rows": 2}, "width or col_width"),
    ({"rows": 2, "width": 5.0, "col_width": 2.0, "height": 4.0}, "width or col_width"),
    ({"rows": 2, "width": 5.0, "height": 4.0, "row_height": 2.0}, "width or col_width"),
    ({"panels": 0, "width": 5.0, "height": 4.0}, "needs empty="),
    ({"rows": 0, "width": 5.0, "height": 4.0}, "needs empty="),
    ({"panels": 3, "per_row": 2, "sharey": True, "width": 5.0, "height": 4.0}, "inner_labels=True"),
])
def test_bad_arguments_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        panel_grid(**kw)


def test_every_option_is_keyword_only():
    with pytest.raises(TypeError):
        panel_grid(2, 2, width=5.0, height=4.0)


def _calls(path: Path) -> list[str]:
    """The names of the calls in ``path`` that make a figure or lay out axes."""
    made = {"Figure", "subplots", "add_subplot", "add_gridspec", "subfigures", "add_axes", "subplot_mosaic"}
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in made:
                found.append(f"{path.name}:{node.lineno} {name}")
    return found


def test_figures_are_made_in_one_place():
    """Every figure module lays its panels out with panel_grid: no Figure(...), subplots or add_subplot elsewhere."""
    modules = sorted(FIGURES_DIR.glob("*.py"))
    assert len(modules) > 10
    elsewhere = [call for path in modules if path.name != "style.py" for call in _calls(path)]
    assert elsewhere == []
    assert {c.split()[1] for c in _calls(FIGURES_DIR / "style.py")} == {"Figure", "add_gridspec", "add_subplot",
                                                                       "subplots"}
    users = {path.stem for path in modules if "panel_grid(" in path.read_text()} - {"style"}
    assert users == {"calibration", "detection", "events", "onsets", "rates", "recall_axis", "station_recall",
                     "tolerance", "build"}  # (build: the figure a helper draws to warm up, build.warm_up)


def test_panels_cells_after_the_last_are_none():
    fig, axes = panel_grid(panels=5, per_row=2, col_width=5.2, row_height=2.0, extra=0.8)
    assert axes.shape == (3, 2) and axes[2, 1] is None and len(fig.axes) == 5
    assert [ax for ax in axes.flat if ax is not None] == fig.axes  # made row by row
    assert isinstance(axes, np.ndarray)
