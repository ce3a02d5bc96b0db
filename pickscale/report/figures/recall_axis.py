"""Drawing recall along one axis (time bins, groups of arrivals) with the reference arrivals beneath.

``recall_over_time`` and ``recall_by_group`` select their numbers differently (:mod:`.over_time`,
:mod:`.by_group`) and draw them the same way: one column per (dataset, phase), recall per model above (one
line each, colours and line styles shared with every figure), the arrivals per position as bars below, one
legend, a caption and a footnote.  That drawing is here, once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .selection import cap_models, names_of, options_of
from .style import MAX_MODELS, NODATA, caption, empty_note, fmt_theta, footnote, model_colors, model_styles

__all__ = ["recall_columns", "draw_recall_panels"]


#: One column of a figure: dataset, phase, arrivals per position, {model: recall per position}.
Column = tuple[str, str, np.ndarray, dict[str, np.ndarray]]


def recall_columns(ds: xr.Dataset, *, n_reference: str, recall: str, figure: str,
                   models: Sequence[str] | None) -> tuple[list[Column], str]:
    """The numbers of each (dataset, phase) column that holds arrivals, and the note on capped models.

    Each column is ``(dataset, phase, arrivals per position, {model: recall per position})`` from the
    variables ``n_reference`` (summed over stations) and ``recall``; models are capped to
    ``MAX_MODELS[figure]`` and only those present in the dataset are kept.
    """
    dsets = names_of(ds["dataset"].values)
    mods = list(models) if models is not None else names_of(ds["model"].values)
    mods, note = cap_models(ds, dsets, mods, MAX_MODELS.get(figure, 8))
    n_ref = ds[n_reference].sum("station")
    columns = []
    for d in dsets:
        present = {m for m in mods if bool(ds["model_present"].sel(dataset=d, model=m))}
        for ph in names_of(ds["phase"].values):
            n = np.asarray(n_ref.sel(dataset=d, phase=ph).values, dtype=np.int64)
            if not n.sum():
                continue
            values = {m: np.asarray(ds[recall].sel(dataset=d, model=m, phase=ph).values, dtype=float)
                      for m in mods if m in present}
            columns.append((d, ph, n, values))
    return columns, note


def draw_recall_panels(
    ds: xr.Dataset,
    panels: Sequence[Any],
    *,
    x_of: Callable[[Any], np.ndarray],
    bars: Callable[[Axes, Any, np.ndarray], None],
    markersize: float,
    empty: str,
    describe: Callable[[str], str],
    notes: Sequence[str],
) -> Figure:
    """The figure of ``panels`` (each with ``dataset``, ``phase``, ``n_reference`` and ``recall`` by model).

    ``x_of(panel)`` gives the positions, ``bars(axes, panel, x)`` draws the arrivals beneath, ``empty`` is
    said when there is no panel, ``describe(theta)`` is the caption and ``notes`` the footnote's lines.
    """
    colors = model_colors(names_of(ds["model"].values))
    styles = model_styles(names_of(ds["model"].values))
    n = max(len(panels), 1)
    fig = Figure(figsize=(min(4.2 * n, 16.0), 4.6), layout="constrained")
    grid = fig.add_gridspec(2, n, height_ratios=(3, 1))
    theta = fmt_theta(options_of(ds).threshold)
    if not panels:
        empty_note(fig.add_subplot(grid[:, 0]), empty)
    handles: dict[str, Line2D] = {}
    for i, panel in enumerate(panels):
        top = fig.add_subplot(grid[0, i])
        bottom = fig.add_subplot(grid[1, i], sharex=top)
        x = x_of(panel)
        for model, recall in panel.recall.items():
            (line,) = top.plot(x, recall, color=colors[model], linestyle=styles[model], marker="o",
                               markersize=markersize, linewidth=1.2, label=model)
            handles.setdefault(model, line)
        top.set_ylim(-0.02, 1.02)
        top.set_title(f"{panel.dataset} · {panel.phase}", fontsize=9)
        top.grid(True, axis="y")
        if i == 0:
            top.set_ylabel(f"recall at {theta}")
            bottom.set_ylabel("arrivals")
        top.tick_params(labelbottom=False)
        bars(bottom, panel, x)
        for label in bottom.get_xticklabels():
            label.set_rotation(30)
            label.set_horizontalalignment("right")
    legend = None
    if handles:
        legend = fig.legend(list(handles.values()), list(handles), loc="outside right upper", fontsize=7.5)
    caption(fig, describe(theta), legend)
    footnote(fig, list(notes))
    return fig


def bar_style() -> dict[str, Any]:
    """How the arrivals' bars look in both figures."""
    return {"color": NODATA, "edgecolor": "#888888", "linewidth": 0.3}
