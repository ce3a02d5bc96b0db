"""Drawing recall along one axis (time bins, groups of arrivals) with the reference arrivals beneath.

``recall_over_time`` and ``recall_by_group`` select their numbers differently (:mod:`.over_time`,
:mod:`.by_group`) and lay them out the same way: one column per (dataset, phase), recall per model above
(colours, line styles and marks shared with every figure; each figure draws its own kind of mark: steps
spanning each time bin, points per unordered group), the arrivals per position as bars below, one legend, a
caption and a footnote.  That layout is here, once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import xarray as xr
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .selection import cap_models, names_of, options_of
from .style import (
    MAX_MODELS,
    caption,
    fmt_theta,
    footnote,
    model_colors,
    model_legend,
    model_markers,
    model_styles,
    panel_grid,
)

__all__ = ["recall_columns", "draw_recall_panels", "bar_style"]


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
    recall: Callable[..., dict[str, Artist]],
    bars: Callable[[Axes, Any, np.ndarray], None],
    empty: str,
    describe: Callable[[str], str],
    notes: Sequence[str],
    xlabel: str = "",
    extra_handles: Sequence[Artist] = (),
) -> Figure:
    """The figure of ``panels`` (each with ``dataset``, ``phase``, ``n_reference`` and ``recall`` by model).

    ``x_of(panel)`` gives the positions; ``recall(axes, panel, x, colors=, styles=, markers=)`` draws the
    models' recall above and returns one legend handle per model drawn; ``bars(axes, panel, x)`` draws the
    arrivals beneath; ``empty`` is said when there is no panel, ``describe(theta)`` is the caption, ``notes``
    the footnote's lines, ``xlabel`` the label under the first column and ``extra_handles`` end the legend
    (what a hollow mark or a hatched bar means).
    """
    models = names_of(ds["model"].values)
    colors, styles, markers = model_colors(models), model_styles(models), model_markers(models)
    # One column per panel: the recall above, the arrivals beneath on the same x.
    fig, axes = panel_grid(rows=2, cols=len(panels), sharex="col", inner_labels=True, height_ratios=(3, 1),
                           col_width=4.2, height=4.8, empty=empty)
    theta = fmt_theta(options_of(ds).threshold)
    handles: dict[str, Artist] = {}
    for i, panel in enumerate(panels):
        top, bottom = axes[:, i]
        x = x_of(panel)
        for model, handle in recall(top, panel, x, colors=colors, styles=styles, markers=markers).items():
            handles.setdefault(model, handle)
        top.set_ylim(-0.02, 1.02)
        top.set_title(f"{panel.dataset} · {panel.phase}", fontsize=9)
        top.grid(True, axis="y")
        top.grid(False, axis="x")
        if i == 0:
            top.set_ylabel(f"recall: share of arrivals found\n(at threshold {theta})")
            bottom.set_ylabel("reference\narrivals")
            if xlabel:
                bottom.set_xlabel(xlabel, loc="left")
        top.tick_params(labelbottom=False)
        bars(bottom, panel, x)
        bottom.grid(False, axis="x")
        for label in bottom.get_xticklabels():
            label.set_rotation(30)
            label.set_horizontalalignment("right")
    legend = model_legend(fig, handles, extra_handles)
    caption(fig, describe(theta), legend)
    footnote(fig, list(notes))
    return fig


def bar_style(*, few: bool = False) -> dict[str, Any]:
    """How the arrivals' bars look in both figures: ``few`` (fewer than :data:`FEW_ARRIVALS` arrivals, or a
    partial time bin) lighter and hatched, so that a bar that carries little weight looks it."""
    if few:
        return {"facecolor": "#f2f2f2", "edgecolor": "#9a9a9a", "linewidth": 0.4, "hatch": "////"}
    return {"facecolor": "#bdbdbd", "edgecolor": "#888888", "linewidth": 0.3}
