"""Onset-time figures: the error of each model at the shared threshold, and the residuals behind it.

Onset time is a separate question from detection, with its own, wider
tolerance: pairs are matched within ``residual_tol`` so that the share of
residuals beyond the detection tolerance ``tol`` (the gross-error rate) is
not defined away.  :func:`timing` summarises each model (MAE, median
|residual|, bias); :func:`residuals` shows the histograms.  The numbers each
draws come from :func:`onset_errors` and :func:`residual_histograms`, which
draw nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator, NullLocator

from ...options import PHASES, SharedThreshold
from .selection import cap_models, is_present, n_reference, names_of, options_of, subsets
from .style import (
    MAX_MODELS,
    REF,
    caption,
    empty_note,
    fmt_pct,
    fmt_s,
    fmt_signed_s,
    fmt_theta,
    footnote,
    legend_cols,
    model_colors,
    model_handles,
    panel_grid,
    styled,
)

__all__ = ["OnsetErrors", "onset_errors", "timing", "ResidualPanel", "ResidualHistograms", "residual_histograms",
           "residual_bins", "residuals"]

Cell = tuple[str, str, str]  # (dataset, model, phase)


@dataclass(frozen=True)
class OnsetErrors:
    """The numbers :func:`timing` draws."""

    threshold: SharedThreshold
    tol: float
    residual_tol: float
    models: list[str]
    cap_note: str
    #: From top to bottom: ``(dataset, None)`` heads each dataset, then ``(dataset, model)`` per model that ran.
    rows: list[tuple[str, str | None]]
    #: (dataset, phase) -> scored reference arrivals.
    n_reference: dict[tuple[str, str], int]
    #: (dataset, model, phase) -> residual pairs, MAE, median |residual|, bias and gross-error rate.
    pairs: dict[Cell, int]
    mae: dict[Cell, float]
    medae: dict[Cell, float]
    bias: dict[Cell, float]
    gross: dict[Cell, float]
    #: The range of the values drawn (MAE, medae, |bias| and bias), 0 included.
    xmin: float
    xmax: float
    #: (dataset, model, phase) -> the bootstrap interval of MAE (SPEC §12); empty without intervals.
    mae_ci: dict[Cell, tuple[float, float]] = field(default_factory=dict)


def onset_errors(
    ds: xr.Dataset, *, datasets: Sequence[str] | None = None, models: Sequence[str] | None = None
) -> OnsetErrors:
    """What :func:`timing` draws: MAE, median |residual|, bias and gross-error rate per row.

    Examples
    --------
    >>> err = onset_errors(ds, models=["late"])  # ds: the demo results
    >>> round(err.bias[("aftershocks_north", "late", "P")], 2)
    0.15
    """
    opts = options_of(ds)
    dsets, mods = subsets(ds, datasets, models)
    mods, cap_note = cap_models(ds, dsets, mods, MAX_MODELS["timing"])
    sub: dict[str, Any] = dict(dataset=dsets, model=mods)
    mae, medae = opts.at_shared(ds.mae).sel(**sub).load(), opts.at_shared(ds.medae).sel(**sub).load()
    bias = opts.at_shared(ds.bias).sel(**sub).load()
    gross = opts.at_shared(ds.gross_error_rate).sel(**sub).load()
    npairs = opts.at_shared(ds.n_pairs).sel(**sub).load()
    n_ref = n_reference(ds)
    # Row layout shared by both panels: a header per dataset, then its models.
    rows: list[tuple[str, str | None]] = []
    for d in dsets:
        rows.append((d, None))
        rows.extend((d, m) for m in mods if is_present(ds, d, m))

    def finite(a: xr.DataArray) -> np.ndarray:
        v = np.asarray(a.values, dtype=float).ravel()
        return v[np.isfinite(v)]

    pos = np.r_[finite(mae), finite(medae), np.abs(finite(bias))]
    signed = finite(bias)
    cells = [(d, m, p) for d, m in rows if m is not None for p in PHASES]

    def at(a: xr.DataArray) -> dict[Cell, float]:
        return {(d, m, p): float(a.sel(dataset=d, model=m, phase=p)) for d, m, p in cells}

    mae_ci: dict[Cell, tuple[float, float]] = {}
    if "mae_lo" in ds:
        lo, hi = ds.mae_lo.load(), ds.mae_hi.load()
        mae_ci = {c: (float(lo.sel(dataset=c[0], model=c[1], phase=c[2])),
                      float(hi.sel(dataset=c[0], model=c[1], phase=c[2]))) for c in cells}
    return OnsetErrors(
        threshold=opts.threshold, tol=opts.tol, residual_tol=opts.residual_tol, models=mods, cap_note=cap_note,
        rows=rows, n_reference={(d, p): int(n_ref.sel(dataset=d, phase=p)) for d in dsets for p in PHASES},
        pairs={(d, m, p): int(npairs.sel(dataset=d, model=m, phase=p)) for d, m, p in cells},
        mae=at(mae), medae=at(medae), bias=at(bias), gross=at(gross),
        xmin=min(0.0, float(signed.min()) if signed.size else 0.0),
        xmax=max(float(pos.max()) if pos.size else opts.tol, 1e-3),
        mae_ci=mae_ci,
    )


@styled
def timing(
    ds: xr.Dataset,
    *,
    datasets: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
) -> Figure:
    """Onset-time error at the shared threshold: MAE (bars), median |residual| (diamonds) and
    bias, the signed median residual (ticks, early < 0 < late).

    One panel per phase; datasets stacked down the y axis, one row per model
    (at most 16, the best by recall at the shared threshold, stated below the figure).
    Beside each row: the bias, the gross-error rate (the fraction of residuals beyond
    the detection tolerance ``tol``; residuals are matched at the wider
    ``residual_tol`` so that this fraction is not defined away) and the number
    of residual pairs.  A MAE far above the median means a heavy tail; a
    median far from zero on its own is a systematic early or late pick (see
    :func:`residuals`).

    Parameters
    ----------
    ds
        A pickscale results Dataset.
    datasets, models
        Subsets to show (default: all).  Absent models are skipped.

    Returns
    -------
    matplotlib.figure.Figure
        Two axes (P, S), sharing the y axis.

    Examples
    --------
    >>> import pickscale.report.figures
    >>> fig = pickscale.report.figures.timing(ds)  # ds: the demo results
    >>> len(fig.axes), fig.axes[0].get_xlabel()  # one panel per phase
    (2, 'onset error (s)   bias: early < 0 < late')
    """
    data = onset_errors(ds, datasets=datasets, models=models)
    colors = model_colors(names_of(ds.model.values))
    rows = data.rows
    y = {row: -i for i, row in enumerate(rows)}
    fig, grid = panel_grid(cols=2, sharey=True, width=12.5, height=1.7 + 0.25 * len(rows))
    axes = grid[0]
    shown: list[str] = []
    for ax, phase in zip(axes, PHASES):
        _timing_panel(ax, phase, data, y, colors, shown)
    ax0 = axes[0]
    ax0.set_yticks([y[r] for r in rows])
    ax0.set_yticklabels([d if m is None else m for d, m in rows])
    for label, (_, m) in zip(ax0.get_yticklabels(), rows):
        if m is None:
            label.set_fontweight("bold")
    ax0.set_ylim(min(y.values()) - 0.7, 0.7)
    ax0.tick_params(axis="y", length=0)
    handles = model_handles(shown, colors)
    handles += [
        Patch(facecolor="#bbbbbb", label="bar: MAE\n(mean |residual|)"),
        Line2D([], [], marker="D", ls="none", mfc="white", mec=REF, label="◇: median |residual|\n(medae)"),
        Line2D([], [], marker="|", ms=11, mew=2.2, ls="none", color=REF,
               label="|: bias, the signed\nmedian residual"),
    ]
    legend = fig.legend(handles=handles, loc="outside right upper", ncols=legend_cols(len(handles), 20))
    footnote(fig, [data.cap_note])
    caption(
        fig,
        f"Onset time at the shared threshold {fmt_theta(data.threshold)}. Gross: share of residuals beyond "
        f"the detection tolerance {data.tol:g} s (pairs matched within {data.residual_tol:g} s); a MAE far "
        "above the median is that tail, a bias far from 0 a late or early picker.",
        legend,
    )
    return fig


def _timing_panel(ax: Axes, phase: str, data: OnsetErrors, y: dict[tuple[str, str | None], int],
                  colors: dict[str, str], shown: list[str]) -> None:
    """One phase: a bar, a diamond, a tick and a line of text per row; models drawn are added to ``shown``."""
    xmin, xmax = data.xmin, data.xmax
    span = xmax - xmin
    # Bars and marks use the left part of each panel; the right part holds the text of each row.
    left, right = xmin - 0.06 * span, xmin + span / 0.52
    ytr = ax.get_yaxis_transform()
    for (d, m), yy in y.items():
        if m is None:
            ax.axhline(yy + 0.5, color="#cccccc", lw=0.6)
            if data.n_reference[d, phase] == 0:
                ax.text(0.01, yy, f"no {phase} arrivals in the reference", transform=ytr,
                        va="center", ha="left", fontsize=7.5, color="#555555")
            continue
        if data.n_reference[d, phase] == 0:
            continue
        k = data.pairs[d, m, phase]
        if k == 0:
            ax.text(0.01, yy, "no residual pair at the shared threshold", transform=ytr,
                    va="center", ha="left", fontsize=7, color="#555555")
            continue
        s, g = data.bias[d, m, phase], data.gross[d, m, phase]
        ax.barh(yy, data.mae[d, m, phase], height=0.72, color=colors[m], alpha=0.85, gid=f"mae:{m}")
        ci = data.mae_ci.get((d, m, phase))
        if ci is not None and np.all(np.isfinite(ci)):  # the bootstrap interval of MAE (SPEC §12)
            v = data.mae[d, m, phase]
            ax.errorbar([v], [yy], xerr=[[max(v - ci[0], 0.0)], [max(ci[1] - v, 0.0)]], fmt="none", ecolor=REF,
                        elinewidth=0.8, capsize=2.0, zorder=4, gid=f"mae_ci:{m}")
        if m not in shown:
            shown.append(m)
        ax.plot(data.medae[d, m, phase], yy, "D", ms=4.5, mfc="white", mec=REF, mew=0.9, zorder=3, clip_on=False)
        # The sign: a model that is late is not only "off by 0.15 s".
        ax.plot(s, yy, "|", ms=11, mew=2.2, color=REF, zorder=4, gid=f"bias:{m}")
        ax.text(0.995, yy, f"bias {fmt_signed_s(s)} · {fmt_pct(g)} gross · n {k}", transform=ytr,
                va="center", ha="right", fontsize=7, color="#333333")
    ax.axvline(0, color="#777777", lw=0.8, zorder=2)
    ax.set_xlim(left, right)
    # Ticks (and grid lines) only under the bars, not under the text.
    ax.set_xticks([t for t in MaxNLocator(6).tick_values(xmin, xmax) if xmin - 1e-12 <= t <= xmax * 1.1])
    ax.set_xlabel("onset error (s)   bias: early < 0 < late")
    ax.set_title(f"{phase} onsets", fontweight="bold")
    ax.grid(axis="y", visible=False)


def residual_bins(
    e: np.ndarray, *, tol: float, residual_tol: float, bin_width: float | None
) -> tuple[np.ndarray, float]:
    """Histogram edges for residuals ``e`` (s): the view and the bins follow the data.

    The view covers 99 % of the pairs (and ±``tol`` unless that is far beyond them), never more
    than ±``residual_tol``; the default bin width is the Freedman–Diaconis width rounded to
    1-2-5, and a multiple of the residuals' time quantum (pickers write times on a sample grid:
    bins narrower than it, or not aligned with it, make combs).  Bins are centred on multiples
    of the width, so zero is a bin centre.  Nothing divides by ``tol``: ``tol = 0`` works.
    """
    e = np.asarray(e, dtype=float)
    e = e[np.isfinite(e)]
    a = np.abs(e)
    q99 = float(np.quantile(a, 0.99)) if a.size else 0.0
    view = 1.15 * q99
    if tol > 0 and (tol <= 4 * q99 or not a.size):
        view = max(view, 1.1 * tol)
    if residual_tol > 0:
        view = min(view, residual_tol)
    if not (view > 0):
        view = max(residual_tol, tol, float(a.max()) if a.size else 0.0, 0.05)
    quantum = 0.0
    ns = np.round(a * 1e9).astype(np.int64)
    ns = ns[ns > 0]
    if ns.size:
        quantum = float(np.gcd.reduce(ns)) / 1e9
    if bin_width is not None and bin_width > 0:
        width = float(bin_width)
    else:
        inside = e[np.abs(e) <= view]
        width = 0.0
        if inside.size >= 4:
            q1, q3 = np.quantile(inside, [0.25, 0.75])
            width = 2 * (q3 - q1) / inside.size ** (1 / 3)
        width = float(np.clip(width, view / 150, view / 12)) if width > 0 else view / 40
        exp = np.floor(np.log10(width))
        mant = width / 10**exp
        width = float((1 if mant < 1.5 else 2 if mant < 3.5 else 5 if mant < 7.5 else 10) * 10**exp)
        if quantum >= view / 150:
            width = max(1, round(width / quantum)) * quantum
    n = int(np.ceil(view / width - 0.5))
    edges = (np.arange(-n, n + 2) - 0.5) * width
    return edges, width


@dataclass(frozen=True)
class ResidualPanel:
    """The residuals of one model and phase, and their histogram."""

    residuals: np.ndarray
    #: Pairs per bin; pairs beyond the view are counted in the end bins (``off_scale`` of them).
    counts: np.ndarray
    off_scale: int
    median: float
    #: The share of residuals beyond ±tol.
    gross: float


@dataclass(frozen=True)
class ResidualHistograms:
    """The numbers :func:`residuals` draws."""

    threshold: SharedThreshold
    tol: float
    datasets: list[str]
    #: One row per model: those with a pair, and those that ran on a selected dataset without one.
    models: list[str]
    cap_note: str
    edges: np.ndarray
    width: float
    #: (model, phase) -> the panel, None when the model has no pair of that phase.
    panels: dict[tuple[str, str], ResidualPanel | None]
    #: The highest bin count of the figure (at least 1).
    ymax: float


def residual_histograms(
    ds: xr.Dataset,
    *,
    datasets: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    bin_width: float | None = None,
) -> ResidualHistograms:
    """What :func:`residuals` draws: the pairs with ``conf >=`` the shared threshold, binned.

    Examples
    --------
    >>> h = residual_histograms(ds, models=["late"])  # ds: the demo results
    >>> round(h.panels[("late", "P")].median, 2)  # late by 0.15 s
    0.15
    """
    opts = options_of(ds)
    dsets, mods = subsets(ds, datasets, models)
    mods, cap_note = cap_models(ds, dsets, mods, MAX_MODELS["residuals"])
    all_d, all_m = names_of(ds.dataset.values), names_of(ds.model.values)
    pd_ = ds.pair_dataset.values
    pm, pp = ds.pair_model.values, ds.pair_phase.values
    res, conf = ds.residual.values, ds.pair_conf.values
    # Each pair at the shared threshold of its phase (SPEC §2).
    keep = ((conf >= np.asarray(opts.phase_thresholds)[pp.astype(np.int64)])
            & np.isin(pd_, [all_d.index(d) for d in dsets]))
    rows = [m for m in mods if np.any(keep & (pm == all_m.index(m)))]
    # Models that ran on a selected dataset but left no pair there still deserve a row.
    rows = [m for m in mods if m in rows or any(is_present(ds, d, m) for d in dsets)]
    drawn = keep & np.isin(pm, [all_m.index(m) for m in rows])
    edges, width = residual_bins(res[drawn], tol=opts.tol, residual_tol=opts.residual_tol, bin_width=bin_width)
    panels: dict[tuple[str, str], ResidualPanel | None] = {}
    ymax = 1
    for m in rows:
        for p, phase in enumerate(PHASES):
            e = res[keep & (pm == all_m.index(m)) & (pp == p)]
            if e.size == 0:
                panels[m, phase] = None
                continue
            counts, _ = np.histogram(np.clip(e, edges[0], edges[-1]), bins=edges)
            ymax = max(ymax, counts.max())
            panels[m, phase] = ResidualPanel(
                residuals=e, counts=counts, off_scale=int(np.sum((e < edges[0]) | (e > edges[-1]))),
                median=float(np.median(e)), gross=float(np.mean(np.abs(e) > opts.tol)),
            )
    return ResidualHistograms(threshold=opts.threshold, tol=opts.tol, datasets=dsets, models=rows,
                              cap_note=cap_note, edges=edges, width=width, panels=panels, ymax=ymax)


@styled
def residuals(
    ds: xr.Dataset,
    *,
    datasets: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    bin_width: float | None = None,
    log: bool = True,
) -> Figure:
    """Histograms of onset residuals (pick − arrival) per model and phase.

    Pairs of the ``residual_tol`` matching whose pick has ``conf >=`` the
    shared threshold, pooled over the selected datasets.  Dashed lines mark
    ±``tol`` (the detection tolerance): what lies beyond them is the
    gross-error rate.  Each panel states n, the median residual (bias:
    early < 0 < late) and the fraction beyond ±tol.

    Parameters
    ----------
    ds
        A pickscale results Dataset.
    datasets, models
        Subsets to show (default: all).  A model with no pair in the selected
        datasets gets no row.
    bin_width
        Histogram bin width in seconds; default ``tol / 20``.
    log
        Log-scaled count axis (default), so the tails beyond ±tol stay visible
        next to a sharp peak.

    Returns
    -------
    matplotlib.figure.Figure
        One row per model, one column per phase.

    Examples
    --------
    >>> import pickscale.report.figures
    >>> fig = pickscale.report.figures.residuals(ds, bin_width=0.05)  # ds: the demo results
    >>> len(fig.axes), fig.texts[0].get_text()  # models × phases
    (6, 'pairs per 50 ms bin (log scale)')
    """
    data = residual_histograms(ds, datasets=datasets, models=models, bin_width=bin_width)
    colors = model_colors(names_of(ds.model.values))
    rows, edges, tol = data.models, data.edges, data.tol
    n_rows = max(len(rows), 1)
    fig, axes = panel_grid(rows=n_rows, cols=2, sharex=True, width=10.5, row_height=1.6, extra=1.5)
    if not rows:
        for ax in axes[0]:
            empty_note(ax, "no model ran on the selected datasets")
    for r, m in enumerate(rows):
        for p, phase in enumerate(PHASES):
            ax = axes[r, p]
            panel = data.panels[m, phase]
            if panel is None:
                ax.text(0.5, 0.5, f"{m}: no {phase} pairs at the shared threshold", transform=ax.transAxes,
                        ha="center", va="center", color="#555555", fontsize=8)
                ax.set_yticks([])
            else:
                ax.stairs(panel.counts, edges, fill=True, color=colors[m], alpha=0.75, gid=f"residuals:{m}")
                ax.stairs(panel.counts, edges, color=colors[m], lw=0.8)
                ax.axvline(panel.median, color=REF, lw=1.1, ls="-")
                off = panel.off_scale
                off_text = f" · {off} off-scale, in the end bins" if off else ""
                ax.text(0.99, 0.95, f"n {panel.residuals.size} · median {fmt_signed_s(panel.median)}\n"
                        f"{fmt_pct(panel.gross)} beyond ±{tol:g} s{off_text}",
                        transform=ax.transAxes, ha="right", va="top", fontsize=7.5,
                        bbox=dict(facecolor="white", edgecolor="none", alpha=0.8, pad=1.5))
            for s in (-tol, tol):
                ax.axvline(s, color=REF, ls="--", lw=0.8)
            ax.axvline(0, color="#9a9a9a", lw=0.6)
            ax.set_title(f"{m} · {phase}", loc="left", color=colors[m], fontweight="bold")
    for r in range(len(rows)):
        for p in range(2):
            ax = axes[r, p]
            if log:
                ax.set_yscale("log")
                ax.set_ylim(0.7, data.ymax * 2.5)
                ax.yaxis.set_minor_locator(NullLocator())  # minor log ticks: clutter, and slow to lay out
            else:
                ax.set_ylim(0, data.ymax * 1.15)
    for ax in axes[-1]:
        ax.set_xlabel("residual: pick − arrival (s)   early < 0 < late")
        ax.set_xlim(edges[0], edges[-1])
    fig.supylabel(f"pairs per {fmt_s(data.width)} bin" + (" (log scale)" if log else ""), fontsize=8.5)
    dsets = data.datasets
    pooled = f"{len(dsets)} datasets pooled" if len(dsets) > 1 else f"dataset {dsets[0]}"
    footnote(fig, [data.cap_note])
    caption(
        fig,
        f"Onset residuals of picks with conf ≥ {fmt_theta(data.threshold)}, {pooled}. Dashed: ±{tol:g} s "
        "(detection tolerance; beyond it: gross errors); solid: median (bias, early < 0 < late).",
    )
    return fig
