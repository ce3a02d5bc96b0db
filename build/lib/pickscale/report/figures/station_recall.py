"""The per-station figure: where a model fails is a question about stations.

:func:`stations` draws a heat map of recall per (station, dataset) and
model, worst stations first; the numbers come from :func:`station_rows`,
which draws nothing.

A station's recall on 2 arrivals is 0, 0.5 or 1 whatever the model: ranked
among stations of 200 arrivals, such rows fill the "worst" end with noise
(a real catalogue of short windows has mostly such stations).  So stations
with fewer than ``min_arrivals`` reference arrivals (default
:data:`~.style.FEW_ARRIVALS`, 10; P and S together) are set apart: they get
no row of their own but one pooled row per dataset beneath the heat map —
"126 stations with < 10 arrivals", their matched picks over their arrivals —
and the rows above rank only the stations with enough arrivals to rank.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import matplotlib as mpl
import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.image import AxesImage

from ...options import SharedThreshold
from .selection import cap_models, names_of, options_of, subsets
from .style import FEW_ARRIVALS, MAX_MODELS, NODATA, caption, fmt_theta, footnote, panel_grid, styled, text_color

__all__ = ["StationRow", "FewStations", "StationRecall", "station_rows", "stations"]


@dataclass(frozen=True)
class StationRow:
    """One scored (station, dataset): its reference arrivals and each shown model's recall (NaN: not run)."""

    station: str
    dataset: str
    n_reference: int
    recall: np.ndarray


@dataclass(frozen=True)
class FewStations:
    """The stations of one dataset with too few arrivals to rank, pooled: their matched picks over their
    arrivals, per shown model (NaN: the model did not run on the dataset)."""

    dataset: str
    n_stations: int
    n_reference: int
    recall: np.ndarray


@dataclass(frozen=True)
class StationRecall:
    """The numbers :func:`stations` draws."""

    threshold: SharedThreshold
    models: list[str]
    cap_note: str
    #: The rows shown, worst first (lowest mean recall over the models that ran), each with at least
    #: ``min_arrivals`` reference arrivals.
    rows: list[StationRow]
    #: How many such rows there are in all, and whether the stations come from more than one dataset.
    total: int
    multi: bool
    #: "worst 40 of 300 stations", "one station", "all 12 stations, worst first".
    extent: str
    #: The colour scale: the recalls shown, rounded out to 0.05 (at least 0.1 wide).
    vmin: float
    vmax: float
    #: Stations with fewer reference arrivals than this are pooled into :attr:`few` (0: none is).
    min_arrivals: int = FEW_ARRIVALS
    #: One pooled row per dataset that has such stations, in dataset order.
    few: list[FewStations] = field(default_factory=list)

    @property
    def grid(self) -> np.ndarray:
        """Recall, one row per station row, one column per model."""
        return np.array([r.recall for r in self.rows], dtype=float).reshape(len(self.rows), len(self.models))

    @property
    def few_grid(self) -> np.ndarray:
        """Pooled recall, one row per dataset with few-arrival stations, one column per model."""
        return np.array([f.recall for f in self.few], dtype=float).reshape(len(self.few), len(self.models))


def station_rows(
    ds: xr.Dataset,
    *,
    datasets: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    max_stations: int = 40,
    min_arrivals: int = FEW_ARRIVALS,
) -> StationRecall:
    """What :func:`stations` draws: per-station recall at the shared threshold, P and S together.

    Stations with fewer than ``min_arrivals`` reference arrivals (P and S together) are not ranked: they are
    pooled, one :class:`FewStations` per dataset (their matched picks over their arrivals).  ``min_arrivals=0``
    ranks every station.

    Examples
    --------
    >>> rows = station_rows(ds, max_stations=3)  # ds: the demo results
    >>> len(rows.rows), rows.extent, rows.rows[0].station
    (3, 'worst 3 of 8 station × dataset rows', 'XX.SO02')
    """
    opts = options_of(ds)
    dsets, mods = subsets(ds, datasets, models)
    mods, cap_note = cap_models(ds, dsets, mods, MAX_MODELS["stations"])
    k = max(int(min_arrivals), 0)
    matched = opts.at_shared(ds.matched).sum("phase").sel(dataset=dsets, model=mods)  # (d, m, s)
    nref = ds.n_reference.sum("phase").sel(dataset=dsets)  # (d, s)
    scored = ds.station_scored.sel(dataset=dsets)
    present = ds.model_present.sel(dataset=dsets, model=mods)
    rec = (matched / nref.where(nref > 0)).where(scored & present)
    rec = rec.transpose("dataset", "station", "model").values
    mt = matched.transpose("dataset", "station", "model").values
    pres = present.transpose("dataset", "model").values
    stn = names_of(ds.station.values)
    rows = []  # (sort key, dataset, station, n, values)
    few = []
    sc = scored.values
    nr = nref.values
    for i, d in enumerate(dsets):
        small = []
        for j in np.flatnonzero(sc[i]):
            v = rec[i, j]
            if not np.isfinite(v).any():
                continue
            if nr[i, j] < k:
                small.append(j)
                continue
            rows.append((float(np.nanmean(v)), -int(nr[i, j]), stn[j], d, int(nr[i, j]), v))
        if small:
            # Pooled, not averaged: every arrival counts once, as in the dataset's own recall.
            n_small = int(nr[i, small].sum())
            pooled = np.where(pres[i], mt[i, small].sum(axis=0) / n_small, np.nan)
            few.append(FewStations(dataset=d, n_stations=len(small), n_reference=n_small, recall=pooled))
    rows.sort(key=lambda t: t[:4])
    total = len(rows)
    shown = rows[: max(int(max_stations), 1)]
    multi = len({r[3] for r in rows} | {f.dataset for f in few}) > 1
    unit = "station × dataset rows" if multi else "stations"
    enough = f" with ≥ {k} arrivals" if few else ""
    if not total:
        extent = f"no station with ≥ {k} arrivals" if few else "no scored station"
    elif len(shown) < total:
        extent = f"worst {len(shown)} of {total} {unit}{enough}"
    elif total == 1:
        extent = f"one station{enough}"
    else:
        extent = f"all {total} {unit}{enough}, worst first"
    grid = np.array([r[5] for r in shown] + [f.recall for f in few], dtype=float)
    # The colour scale spans the recalls shown (rounded out to 0.05), not 0-1: contrast where the rows differ.
    finite = grid[np.isfinite(grid)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    vmin, vmax = np.floor(lo * 20 + 1e-9) / 20, np.ceil(hi * 20 - 1e-9) / 20
    if vmax - vmin < 0.1:
        vmin, vmax = max(0.0, vmax - 0.1), max(vmax, 0.1)
    return StationRecall(
        threshold=opts.threshold, models=mods, cap_note=cap_note,
        rows=[StationRow(station=r[2], dataset=r[3], n_reference=r[4], recall=r[5]) for r in shown],
        total=total, multi=multi, extent=extent, vmin=float(vmin), vmax=float(vmax), min_arrivals=k, few=few,
    )


def _heat(ax: Axes, grid: np.ndarray, labels: list[str], cmap: Any, norm: Any, *, annotate: bool,
          gid: str) -> AxesImage:
    """One heat map of recall (rows × models), with the value in each cell when ``annotate``."""
    ax.grid(False)
    im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
    im.set_gid(gid)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    if annotate:
        for (i, j), v in np.ndenumerate(grid):
            if np.isfinite(v):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6.5, color=text_color(cmap(norm(v))))
            else:
                ax.text(j, i, "–", ha="center", va="center", fontsize=7, color="#777777")
    return im


@styled
def stations(
    ds: xr.Dataset,
    *,
    datasets: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    max_stations: int = 40,
    min_arrivals: int = FEW_ARRIVALS,
    annotate: bool | None = None,
) -> Figure:
    """Per-station recall at the shared threshold, worst stations first; stations with few arrivals pooled.

    A heat map, one row per scored (station, dataset) with at least
    ``min_arrivals`` reference arrivals, one column per model: the station's
    matched picks over its reference arrivals, P and S together, at the
    shared threshold.  Rows are sorted by the mean over the models that ran
    (lowest first) and capped at ``max_stations``; the title says how many
    are shown of how many.  Stations with fewer arrivals are not ranked (a
    recall on 2 arrivals is 0, 0.5 or 1 whatever the model): beneath, one
    pooled row per dataset says how many there are and their recall
    together.  Grey cells: the model did not run on that dataset.  Each row
    label gives its arrival count.

    Parameters
    ----------
    ds
        A pickscale results Dataset.
    datasets, models
        Subsets to show (default: all).
    max_stations
        How many rows to show at most (default 40).
    min_arrivals
        Stations with fewer reference arrivals are pooled (default :data:`~.style.FEW_ARRIVALS`; 0 ranks
        every station).
    annotate
        Write the recall into each cell; default: when at most 600 cells.

    Returns
    -------
    matplotlib.figure.Figure
        The heat map axes (and the pooled rows' axes beneath, when there are such stations) and the colour
        bar.

    Examples
    --------
    >>> import pickscale.report.figures
    >>> fig = pickscale.report.figures.stations(ds, max_stations=20)  # ds: the demo results
    >>> [label.get_text() for label in fig.axes[0].get_yticklabels()][:2]  # worst first
    ['XX.SO02 · aftershocks_south  (58)', 'XX.NO04 · aftershocks_north  (62)']
    """
    data = station_rows(ds, datasets=datasets, models=models, max_stations=max_stations,
                        min_arrivals=min_arrivals)
    mods, shown, multi, few = data.models, data.rows, data.multi, data.few
    k = data.min_arrivals
    few_labels = [f"{f.n_stations} station{'s' if f.n_stations != 1 else ''} with < {k} arrivals"
                  + (f" · {f.dataset}" if multi else "") + f"  ({f.n_reference} pooled)" for f in few]
    labels = [f"{r.station}" + (f" · {r.dataset}" if multi else "") + f"  ({r.n_reference})" for r in shown]
    label_w = max([len(t) for t in labels + few_labels] + [8])
    fig_w = float(np.clip(1.6 + 0.075 * label_w + 0.62 * len(mods) + 1.2, 5.5, 20))
    n_rows = len(shown) + len(few) + (0.8 if few and shown else 0)
    parts = [(labels, data.grid, "stations")] if shown else []
    parts += [(few_labels, data.few_grid, "few")] if few else []
    # Not sharex: that would hide the top axes' model names (they sit on top); the columns line up anyway.
    fig, grid = panel_grid(rows=len(parts), height_ratios=[len(p[0]) for p in parts] or None, width=fig_w,
                           height=2.4 + 0.22 * max(n_rows, 6), empty="no scored station")
    theta = fmt_theta(data.threshold)
    if not parts:
        footnote(fig, [data.cap_note])
        caption(fig, f"Per-station recall at shared threshold {theta}: no scored station")
        return fig
    axes = grid[:, 0]
    cmap = mpl.colormaps["viridis"].with_extremes(bad=NODATA)
    norm = mpl.colors.Normalize(vmin=data.vmin, vmax=data.vmax)
    if annotate is None:
        annotate = (len(shown) + len(few)) * len(mods) <= 600
    images = [_heat(ax, grid, lab, cmap, norm, annotate=annotate, gid=gid) for ax, (lab, grid, gid) in zip(axes, parts)]
    top = axes[0]
    top.set_xticks(range(len(mods)))
    long = max(len(m) for m in mods) > 6 or len(mods) > 6
    top.set_xticklabels(mods, rotation=40 if long else 0, ha="left" if long else "center",
                        rotation_mode="anchor" if long else "default")
    top.xaxis.tick_top()
    for ax in axes[1:]:
        ax.set_xticks(range(len(mods)))
        ax.tick_params(labelbottom=False, labeltop=False)
    cb = fig.colorbar(images[0], ax=list(axes), shrink=min(1.0, 6 / max(n_rows, 6) + 0.35), aspect=25, pad=0.02)
    cb.set_label(f"recall: share of arrivals found\n(P + S, at threshold {theta})")
    if len(shown) >= 12 or (shown and not few):
        # Not over a short heat map with pooled rows beneath: the label would run down into their row labels.
        top.set_ylabel("station" + (" · dataset" if multi else "") + "  (reference arrivals)")
    drawn = np.r_[data.grid.ravel(), data.few_grid.ravel()]
    nodata = "grey: model not run on that dataset" if np.isnan(drawn).any() else ""
    rule = (f"Stations with fewer than {k} reference arrivals (P + S) are not ranked: one arrival moves their "
            f"recall by more than {1 / k:.1f}.\nEach dataset's are pooled in the last rows (their matched picks over "
            "their arrivals); min_arrivals=0 ranks every station." if few else "")
    footnote(fig, [data.cap_note, rule, "Row label: reference arrivals at the station (a recall on 2 arrivals is not "
                   "a recall on 200)" + (f"; {nodata}" if nodata else "") + "."])
    caption(
        fig,
        f"Per-station recall at the shared threshold {theta}, P and S together — "
        f"{data.extent}" + (" (sorted by the mean over the models that ran)." if data.total > 1 else ".")
        + (f" Beneath: stations with < {k} arrivals, pooled." if few else ""),
    )
    return fig
