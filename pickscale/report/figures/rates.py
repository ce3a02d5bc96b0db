"""Picks per day per station and model (SPEC §20): where a picker fires, with or without reference arrivals.

:func:`rate_rows` selects the numbers (per dataset and phase: each station's picks per day at the phase's shared
threshold, per model; the busiest stations first, at most :data:`MAX_STATIONS`); :func:`pick_rates` draws them,
one panel per (dataset, phase), one marker per model, a station without a scored reference arrival of the
phase marked.  Drawn for results with pick rates at two stations or more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ...options import PHASES
from .selection import cap_models, names_of, options_of
from .style import MAX_MODELS, caption, fmt_theta, footnote, model_colors, model_markers, panel_grid, styled

__all__ = ["RatePanel", "rate_rows", "pick_rates", "has_rates", "MAX_STATIONS"]

#: The most stations a panel shows (the busiest by their highest rate over the models); the figure says so.
MAX_STATIONS = 40
#: How a station without a scored reference arrival of the phase is labelled.
UNSCORED = " (no arrivals)"


def has_rates(ds: xr.Dataset) -> bool:
    """Whether ``ds`` has pick rates at two stations or more (SPEC §20), and so this figure."""
    return "picks_per_day" in ds and ds.sizes.get("rate_station", 0) >= 2


@dataclass(frozen=True)
class RatePanel:
    """The numbers of one (dataset, phase) panel, stations from the busiest down."""

    dataset: str
    phase: str
    threshold: float
    stations: list[str]
    scored: list[bool]  # the station has a scored reference arrival of the phase
    rate: dict[str, np.ndarray]  # model -> picks per day at each station (NaN: no pick of the model there)
    n_stations: int  # stations with picks (before the cap)


def rate_rows(ds: xr.Dataset, *, models: Sequence[str] | None = None) -> tuple[list[RatePanel], str]:
    """One panel per (dataset, phase) with picks; models capped as the other figures (and the note).

    Examples
    --------
    >>> import pickscale, pandas as pd
    >>> ref = pd.DataFrame({"station": ["A"], "phase": "P", "time": ["2024-01-01T00:00:10Z"]})
    >>> picks = pd.DataFrame({"station": ["A", "B", "B"], "phase": "P", "conf": 0.9,
    ...                       "time": ["2024-01-01T00:00:10Z", "2024-01-01T05:00:00Z", "2024-01-02T05:00:00Z"]})
    >>> panels, note = rate_rows(pickscale.score(ref, picks))
    >>> [(p.phase, p.stations, p.scored, p.rate["model"].tolist()) for p in panels]
    [('P', ['A', 'B'], [True, False], [1.0, 1.0])]
    """
    options = options_of(ds)
    dsets = names_of(ds["dataset"].values)
    mods = list(models) if models is not None else names_of(ds["model"].values)
    mods, note = cap_models(ds, dsets, mods, MAX_MODELS.get("pick_rates", 8))
    stations = np.array(names_of(ds["rate_station"].values), dtype=object)
    station_names = set(names_of(ds["station"].values))
    panels = []
    for d in dsets:
        # A model with picks in the dataset, scored there or not (SPEC §20: its picks count whatever the scope).
        present = [m for m in mods if int(ds["rate_days"].sel(dataset=d, model=m).sum()) > 0]
        for phase in PHASES:
            theta = options.threshold_of(phase)
            per_day = ds["picks_per_day"].sel(dataset=d, phase=phase, threshold=theta)
            rate = {m: np.asarray(per_day.sel(model=m).values, dtype=float) for m in present}
            if not rate:
                continue
            table = np.vstack(list(rate.values()))
            picked = np.flatnonzero(np.isfinite(table).any(axis=0))  # the model picked there (any phase)
            if not (np.nan_to_num(table) > 0).any():  # no pick of the phase at θ: no panel
                continue
            busiest = np.nanmax(np.where(np.isfinite(table[:, picked]), table[:, picked], -1.0), axis=0)
            # Busiest first; equal rates in station order (stable on the code-point-sorted coordinate).
            order = picked[np.argsort(-busiest, kind="stable")][:MAX_STATIONS]
            names = [str(s) for s in stations[order]]
            scored = [_scored(ds, d, s, phase) if s in station_names else False for s in names]
            panels.append(RatePanel(d, phase, float(theta), names, scored, {m: r[order] for m, r in rate.items()},
                                    int(picked.size)))
    return panels, note


def _scored(ds: xr.Dataset, dataset: str, station: str, phase: str) -> bool:
    # (the two variables selected, not the Dataset: a station of a large run is ~2 ms of xarray per variable)
    at = {"dataset": dataset, "station": station}
    return bool(ds["station_scored"].sel(at)) and int(ds["n_reference"].sel(at).sel(phase=phase)) > 0


@styled
def pick_rates(ds: xr.Dataset, *, models: Sequence[str] | None = None) -> Figure:
    """Picks per day at each station, one marker per model, per dataset and phase (SPEC §20).

    Parameters
    ----------
    ds
        Results with pick rates.
    models
        Which models (default: all, capped to the best few).

    Returns
    -------
    matplotlib.figure.Figure
    """
    panels, note = rate_rows(ds, models=models)
    names = names_of(ds["model"].values)
    colors, markers = model_colors(names), model_markers(names)
    options = options_of(ds)
    tallest = max([len(p.stations) for p in panels] or [1])
    fig, axes = panel_grid(panels=len(panels), per_row=2, col_width=5.2, row_height=0.18 * tallest + 1.2, extra=0.8,
                           empty="no picks")
    handles: dict[str, Line2D] = {}
    notes = [note]
    for panel, ax in zip(panels, axes.flat):
        y = np.arange(len(panel.stations))[::-1]  # the busiest at the top
        for model, rate in panel.rate.items():
            (mark,) = ax.plot(rate, y, linestyle="none", marker=markers[model], markersize=4.5, color=colors[model],
                              label=model)
            handles.setdefault(model, mark)
        ax.set_yticks(y, [s + ("" if ok else UNSCORED) for s, ok in zip(panel.stations, panel.scored)])
        for tick, ok in zip(ax.get_yticklabels(), panel.scored):
            if not ok:
                tick.set_color("#aa3300")
        finite = np.concatenate([r[np.isfinite(r)] for r in panel.rate.values()])
        if finite.size and finite.min() > 0 and finite.max() / finite.min() > 50:
            ax.set_xscale("log")  # rates spread over decades: a noisy station would flatten the rest
        ax.set_xlabel(f"picks per day at conf >= {panel.threshold:g}")
        ax.set_title(f"{panel.dataset} · {panel.phase}", fontsize=9)
        ax.grid(True, axis="x")
        if panel.n_stations > len(panel.stations):
            notes.append(f"{panel.dataset} {panel.phase}: the {len(panel.stations)} busiest of "
                         f"{panel.n_stations} stations with picks.")
    legend = None
    if handles:
        legend = fig.legend(list(handles.values()), list(handles), loc="outside right upper", fontsize=7.5)
    caption(fig, f"Picks per day (days with a pick of the model at the station) at the shared threshold "
                 f"{fmt_theta(options.threshold)}; stations marked '{UNSCORED.strip()}' have no scored reference "
                 "arrival of the phase: their picks are what the detection tables do not see.", legend)
    footnote(fig, notes)
    return fig
