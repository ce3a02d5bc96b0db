"""Recall against detection tolerance (SPEC §13): how much of a model's recall is onset precision.

:func:`tolerance_rows` selects the numbers (per dataset and phase: recall per model at each tolerance of the
run's ``tols``, at the shared threshold); :func:`recall_vs_tolerance` draws them, one panel per (dataset,
phase), one line per model.  Only results scored with ``tols`` have this figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .selection import cap_models, names_of, options_of
from .style import (
    MAX_MODELS,
    caption,
    fmt_theta,
    footnote,
    model_colors,
    model_legend,
    model_styles,
    panel_grid,
    styled,
)

__all__ = ["TolerancePanel", "tolerance_rows", "recall_vs_tolerance", "has_tols"]


def has_tols(ds: xr.Dataset) -> bool:
    """Whether ``ds`` was scored with ``tols`` (and so has this figure)."""
    return "recall_at_tol" in ds


@dataclass(frozen=True)
class TolerancePanel:
    """The numbers of one (dataset, phase) panel."""

    dataset: str
    phase: str
    tols: np.ndarray  # (L,) tolerances in seconds, ascending
    recall: dict[str, np.ndarray]  # model -> (L,) recall at each tolerance


def tolerance_rows(ds: xr.Dataset, *, models: Sequence[str] | None = None) -> tuple[list[TolerancePanel], str]:
    """One panel per (dataset, phase) with arrivals; models capped to :data:`MAX_MODELS` (and the note).

    Examples
    --------
    >>> panels, note = tolerance_rows(ds)  # ds: the demo results, scored with tols=[0.1, 0.2, 0.5]
    >>> [(p.dataset, p.phase) for p in panels][:2], note
    ([('aftershocks_north', 'P'), ('aftershocks_north', 'S')], '')
    >>> panels[0].tols.tolist(), {m: r.round(2).tolist() for m, r in panels[0].recall.items()}
    ([0.1, 0.2, 0.5], {'late': [0.01, 0.8, 0.83], 'liberal': [0.9, 0.95, 0.95], 'sharp': [0.83, 0.83, 0.83]})
    """
    dsets = names_of(ds["dataset"].values)
    mods = list(models) if models is not None else names_of(ds["model"].values)
    mods, note = cap_models(ds, dsets, mods, MAX_MODELS.get("recall_vs_tolerance", 8))
    n_ref = ds["n_reference"].sum("station")
    tols = np.asarray(ds["tol"].values, dtype=np.float64)
    panels = []
    for d in dsets:
        present = [m for m in mods if bool(ds["model_present"].sel(dataset=d, model=m))]
        for ph in names_of(ds["phase"].values):
            if not int(n_ref.sel(dataset=d, phase=ph)):
                continue
            recall = {m: np.asarray(ds["recall_at_tol"].sel(dataset=d, model=m, phase=ph).values, dtype=float)
                      for m in present}
            panels.append(TolerancePanel(d, ph, tols, recall))
    return panels, note


@styled
def recall_vs_tolerance(ds: xr.Dataset, *, models: Sequence[str] | None = None) -> Figure:
    """Recall at the shared threshold against detection tolerance, one line per model.

    Parameters
    ----------
    ds
        Results scored with ``tols``.
    models
        Which models (default: all, capped to the best few).

    Returns
    -------
    matplotlib.figure.Figure
    """
    panels, note = tolerance_rows(ds, models=models)
    colors = model_colors(names_of(ds["model"].values))
    styles = model_styles(names_of(ds["model"].values))
    options = options_of(ds)
    fig, axes = panel_grid(panels=len(panels), sharey=True, inner_labels=True, col_width=3.6, row_height=3.8,
                           empty="no reference arrival")
    theta = fmt_theta(options.threshold)
    handles: dict[str, Line2D] = {}
    for i, (panel, ax) in enumerate(zip(panels, axes.flat)):
        for model, recall in panel.recall.items():
            (line,) = ax.plot(panel.tols, recall, color=colors[model], linestyle=styles[model], marker="o",
                              markersize=3, linewidth=1.2, label=model)
            handles.setdefault(model, line)
        if panel.tols.min() <= options.tol <= panel.tols.max():
            ax.axvline(options.tol, color="#888888", linewidth=0.6, linestyle=":")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("detection tolerance (s)")
        ax.set_title(f"{panel.dataset} · {panel.phase}", fontsize=9)
        ax.grid(True, axis="y")
        if i == 0:
            ax.set_ylabel(f"recall: share of arrivals found\n(at threshold {theta})")
    legend = model_legend(fig, handles)
    caption(fig, f"Recall at the shared threshold {theta} against the detection tolerance (one matching per "
                 f"tolerance); dotted: the run's tol {options.tol:g} s.", legend)
    footnote(fig, [note])
    return fig
