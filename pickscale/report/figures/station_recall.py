"""The per-station figure: where a model fails is a question about stations.

:func:`stations` draws a heat map of recall per (station, dataset) and
model, worst stations first; the numbers come from :func:`station_rows`,
which draws nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib as mpl
import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from .selection import cap_models, names_of, options_of, subsets, threshold_index
from .style import MAX_MODELS, NODATA, caption, empty_note, fmt_theta, footnote, styled, text_color

__all__ = ["StationRow", "StationRecall", "station_rows", "stations"]


@dataclass(frozen=True)
class StationRow:
    """One scored (station, dataset): its reference arrivals and each shown model's recall (NaN: not run)."""

    station: str
    dataset: str
    n_reference: int
    recall: np.ndarray


@dataclass(frozen=True)
class StationRecall:
    """The numbers :func:`stations` draws."""

    threshold: float
    models: list[str]
    cap_note: str
    #: The rows shown, worst first (lowest mean recall over the models that ran).
    rows: list[StationRow]
    #: How many rows there are in all, and whether they come from more than one dataset.
    total: int
    multi: bool
    #: "worst 40 of 300 stations", "one station", "all 12 stations, worst first".
    extent: str
    #: The colour scale: the recalls shown, rounded out to 0.05 (at least 0.1 wide).
    vmin: float
    vmax: float

    @property
    def grid(self) -> np.ndarray:
        """Recall, one row per station row, one column per model."""
        return np.array([r.recall for r in self.rows], dtype=float)


def station_rows(
    ds: xr.Dataset,
    *,
    datasets: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    max_stations: int = 40,
) -> StationRecall:
    """What :func:`stations` draws: per-station recall at the shared threshold, P and S together.

    Examples
    --------
    >>> import pickscale
    >>> from pickscale.demo import catalogue
    >>> rows = station_rows(pickscale.score(*catalogue()), max_stations=3)   # doctest: +SKIP
    >>> len(rows.rows), rows.extent                                           # doctest: +SKIP
    (3, 'worst 3 of 12 stations')
    """
    opts = options_of(ds)
    dsets, mods = subsets(ds, datasets, models)
    mods, cap_note = cap_models(ds, dsets, mods, MAX_MODELS["stations"])
    ti = threshold_index(ds, opts.threshold)
    matched = ds.matched.isel(threshold=ti).sum("phase").sel(dataset=dsets, model=mods)  # (d, m, s)
    nref = ds.n_reference.sum("phase").sel(dataset=dsets)  # (d, s)
    scored = ds.station_scored.sel(dataset=dsets)
    present = ds.model_present.sel(dataset=dsets, model=mods)
    rec = (matched / nref.where(nref > 0)).where(scored & present)
    rec = rec.transpose("dataset", "station", "model").values
    stn = names_of(ds.station.values)
    rows = []  # (sort key, dataset, station, n, values)
    sc = scored.values
    nr = nref.values
    for i, d in enumerate(dsets):
        for j in np.flatnonzero(sc[i]):
            v = rec[i, j]
            if not np.isfinite(v).any():
                continue
            rows.append((float(np.nanmean(v)), -int(nr[i, j]), stn[j], d, int(nr[i, j]), v))
    rows.sort(key=lambda t: t[:4])
    total = len(rows)
    shown = rows[: max(int(max_stations), 1)]
    multi = len({r[3] for r in rows}) > 1
    unit = "station × dataset rows" if multi else "stations"
    if len(shown) < total:
        extent = f"worst {len(shown)} of {total} {unit}"
    elif total == 1:
        extent = "one station"
    else:
        extent = f"all {total} {unit}, worst first"
    grid = np.array([r[5] for r in shown], dtype=float)
    # The colour scale spans the recalls shown (rounded out to 0.05), not 0-1: contrast where the rows differ.
    finite = grid[np.isfinite(grid)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    vmin, vmax = np.floor(lo * 20 + 1e-9) / 20, np.ceil(hi * 20 - 1e-9) / 20
    if vmax - vmin < 0.1:
        vmin, vmax = max(0.0, vmax - 0.1), max(vmax, 0.1)
    return StationRecall(
        threshold=opts.threshold, models=mods, cap_note=cap_note,
        rows=[StationRow(station=r[2], dataset=r[3], n_reference=r[4], recall=r[5]) for r in shown],
        total=total, multi=multi, extent=extent, vmin=float(vmin), vmax=float(vmax),
    )


@styled
def stations(
    ds: xr.Dataset,
    *,
    datasets: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    max_stations: int = 40,
    annotate: bool | None = None,
) -> Figure:
    """Per-station recall at the shared threshold, worst stations first.

    A heat map, one row per scored (station, dataset), one column per model:
    the station's matched picks over its reference arrivals, P and S
    together, at the shared threshold.  Rows are sorted by the mean over the
    models that ran (lowest first) and capped at ``max_stations``; the title
    says how many are shown of how many.  Grey cells: the model did not run
    on that dataset.  Each row label gives the station's arrival count.

    Parameters
    ----------
    ds
        A pickscale results Dataset.
    datasets, models
        Subsets to show (default: all).
    max_stations
        How many rows to show at most (default 40).
    annotate
        Write the recall into each cell; default: when at most 600 cells.

    Returns
    -------
    matplotlib.figure.Figure
        The heat map axes and its colour bar.

    Examples
    --------
    >>> import pickscale, pickscale.report.figures
    >>> from pickscale.demo import catalogue
    >>> fig = pickscale.report.figures.stations(pickscale.score(*catalogue()), max_stations=20)  # doctest: +SKIP
    """
    data = station_rows(ds, datasets=datasets, models=models, max_stations=max_stations)
    mods, shown, multi = data.models, data.rows, data.multi
    label_w = max([len(r.station) + (len(r.dataset) + 3 if multi else 0) for r in shown] + [8])
    fig_w = float(np.clip(1.6 + 0.075 * label_w + 0.62 * len(mods) + 1.2, 5.5, 20))
    fig = Figure(figsize=(fig_w, 2.4 + 0.22 * max(len(shown), 6)), layout="constrained")
    ax = fig.subplots()
    ax.grid(False)
    if not shown:
        empty_note(ax, "no scored station")
        footnote(fig, [data.cap_note])
        caption(fig, f"Per-station recall at shared threshold {fmt_theta(data.threshold)}: no scored station")
        return fig
    grid = data.grid
    cmap = mpl.colormaps["viridis"].with_extremes(bad=NODATA)
    norm = mpl.colors.Normalize(vmin=data.vmin, vmax=data.vmax)
    im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(mods)))
    long = max(len(m) for m in mods) > 6 or len(mods) > 6
    ax.set_xticklabels(mods, rotation=40 if long else 0, ha="left" if long else "center",
                       rotation_mode="anchor" if long else "default")
    ax.xaxis.tick_top()
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([f"{r.station}" + (f" · {r.dataset}" if multi else "") + f"  ({r.n_reference})"
                        for r in shown])
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    if annotate is None:
        annotate = grid.size <= 600
    if annotate:
        for (i, j), v in np.ndenumerate(grid):
            if np.isfinite(v):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6.5, color=text_color(cmap(norm(v))))
            else:
                ax.text(j, i, "–", ha="center", va="center", fontsize=7, color="#777777")
    cb = fig.colorbar(im, ax=ax, shrink=min(1.0, 6 / max(len(shown), 6) + 0.35), aspect=25, pad=0.02)
    cb.set_label(f"recall at threshold {fmt_theta(data.threshold)} (P + S)")
    ax.set_ylabel("station" + (" · dataset" if multi else "") + "  (reference arrivals)")
    nodata = "grey: model not run on that dataset" if np.isnan(grid).any() else ""
    footnote(fig, [data.cap_note, "Row label: reference arrivals at the station (a recall on 2 arrivals is not "
                   "a recall on 200)" + (f"; {nodata}" if nodata else "") + "."])
    caption(
        fig,
        f"Per-station recall at the shared threshold {fmt_theta(data.threshold)}, P and S together — "
        f"{data.extent}" + (" (sorted by the mean over the models that ran)." if data.total > 1 else "."),
    )
    return fig
