"""Event detection rate against threshold (SPEC §19): how many events a model would hand an associator.

:func:`event_rows` selects the numbers (per dataset, and per group of events with ``group_by``: the share of
events with at least ``event_min_arrivals`` matched arrivals, per model at each grid threshold);
:func:`event_detection` draws them, one panel per dataset (and group), one line per model.  Only results whose
reference has events have this figure.
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

__all__ = ["EventPanel", "event_rows", "event_detection", "has_events"]


def has_events(ds: xr.Dataset) -> bool:
    """Whether ``ds`` has event detection (SPEC §19), and so this figure."""
    return "event_detection_rate" in ds


@dataclass(frozen=True)
class EventPanel:
    """The numbers of one (dataset[, group]) panel."""

    dataset: str
    group: str | None
    n_events: int
    thresholds: np.ndarray  # (T,) the sweep grid
    rate: dict[str, np.ndarray]  # model -> (T,) event detection rate at each threshold


def event_rows(ds: xr.Dataset, *, models: Sequence[str] | None = None) -> tuple[list[EventPanel], str]:
    """One panel per dataset (and group of events) with events; models capped as the other figures (and the note).

    Examples
    --------
    >>> import pickscale, pandas as pd
    >>> s = [f"2024-01-01T00:00:{t:02d}Z" for t in (10, 20, 30)]
    >>> ref = pd.DataFrame({"station": ["A", "B", "C"], "phase": "P", "time": s, "event": ["e1"] * 3})
    >>> picks = pd.DataFrame({"station": ["A", "B", "C"], "phase": "P", "time": s, "conf": [0.9, 0.5, 0.2]})
    >>> r = pickscale.score(ref, picks, thresholds=[0.1, 0.3, 0.6], event_min_arrivals=2)
    >>> panels, note = event_rows(r)
    >>> [(p.dataset, p.group, p.n_events) for p in panels], panels[0].rate["model"].tolist()
    ([('all', None, 1)], [1.0, 1.0, 0.0])
    """
    dsets = names_of(ds["dataset"].values)
    mods = list(models) if models is not None else names_of(ds["model"].values)
    mods, note = cap_models(ds, dsets, mods, MAX_MODELS.get("event_detection", 8))
    thresholds = np.asarray(ds["threshold"].values, dtype=np.float64)
    rate, n_events = ds["event_detection_rate"], ds["n_events"]
    groups: list[str | None] = [*names_of(ds["group"].values)] if "group" in n_events.dims else [None]
    panels = []
    for d in dsets:
        present = [m for m in mods if bool(ds["model_present"].sel(dataset=d, model=m))]
        for g in groups:
            where = {"dataset": d, **({"group": g} if g is not None else {})}
            n = int(n_events.sel(where))
            if not n:
                continue
            panels.append(EventPanel(d, g, n, thresholds, {
                m: np.asarray(rate.sel(where).sel(model=m).values, dtype=float) for m in present}))
    return panels, note


@styled
def event_detection(ds: xr.Dataset, *, models: Sequence[str] | None = None) -> Figure:
    """Event detection rate against the confidence threshold, one line per model, per dataset (and group).

    Parameters
    ----------
    ds
        Results whose reference has events (SPEC §19).
    models
        Which models (default: all, capped to the best few).

    Returns
    -------
    matplotlib.figure.Figure
    """
    panels, note = event_rows(ds, models=models)
    colors = model_colors(names_of(ds["model"].values))
    styles = model_styles(names_of(ds["model"].values))
    options = options_of(ds)
    fig, axes = panel_grid(panels=len(panels), per_row=4, sharey=True, inner_labels=True, col_width=3.6,
                           row_height=3.4, extra=0.6, empty="no event with a scored arrival")
    cols = axes.shape[1]
    handles: dict[str, Line2D] = {}
    for i, (panel, ax) in enumerate(zip(panels, axes.flat)):
        for model, rate in panel.rate.items():
            (line,) = ax.plot(panel.thresholds, rate, color=colors[model], linestyle=styles[model], linewidth=1.2,
                              label=model)
            handles.setdefault(model, line)
        for theta in sorted(set(options.phase_thresholds)):
            ax.axvline(theta, color="#888888", linewidth=0.6, linestyle=":")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("confidence threshold")
        title = panel.dataset if panel.group is None else f"{panel.dataset} · {panel.group}"
        ax.set_title(f"{title}  ({panel.n_events} event{'' if panel.n_events == 1 else 's'})", fontsize=9)
        ax.grid(True, axis="y")
        if i % cols == 0:
            ax.set_ylabel("share of events detected")
    legend = model_legend(fig, handles)
    caption(fig, f"An event is detected when at least {options.event_min_arrivals} of its scored arrivals are "
                 f"matched at that threshold (both phases at it); dotted: the shared threshold "
                 f"{fmt_theta(options.threshold)}.", legend)
    footnote(fig, [note])
    return fig
