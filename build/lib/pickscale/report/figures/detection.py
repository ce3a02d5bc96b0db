"""Detection figures: recall at the shared threshold against recall at the matched budget, and the
operating curves they are read from.

A shared confidence threshold reads each model at a different operating
point, so recall at the shared threshold measures how liberal a model is as
much as how good it is: :func:`recall_treatments` sets it beside recall at
the matched pick budget, and :func:`operating_curves` shows each model's
whole curve with the points where the treatments read it.  The numbers each
figure draws come from :func:`recall_bars` and :func:`curves`, which draw
nothing.
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
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from ...options import PHASES, SharedThreshold
from ...results import metric_name
from .selection import (
    cap_models,
    fine_index,
    is_present,
    n_reference,
    names_of,
    options_of,
    subsets,
    zoom_limits,
)
from .style import (
    MAX_MODELS,
    REF,
    caption,
    count_label,
    empty_note,
    fmt_theta,
    footnote,
    lb_label,
    lb_note,
    legend_cols,
    model_colors,
    model_handles,
    model_markers,
    model_styles,
    panel_grid,
    styled,
)

__all__ = ["RecallBars", "recall_bars", "recall_treatments", "Curve", "CurveRow", "OperatingCurves", "curves",
           "operating_curves", "precision_label"]


@dataclass(frozen=True)
class RecallBars:
    """The numbers :func:`recall_treatments` draws."""

    threshold: SharedThreshold
    datasets: list[str]
    #: The models shown (at most ``MAX_MODELS["recall_treatments"]``), in Dataset order.
    models: list[str]
    #: "showing 16 of 300 models: …", or "" when every model is shown.
    cap_note: str
    #: dataset -> the shown models that ran on it.
    groups: dict[str, list[str]]
    #: (dataset, phase) -> scored reference arrivals, and the matched pick budget.
    n_reference: dict[tuple[str, str], int]
    budget: dict[tuple[str, str], int]
    #: (dataset, model, phase) -> recall at the shared threshold, and at the matched budget.
    recall: dict[tuple[str, str, str], float]
    at_budget: dict[tuple[str, str, str], float]
    #: The recall axis, zoomed on the values drawn.
    ylim: tuple[float, float]
    #: (dataset, model, phase) -> the bootstrap interval (SPEC §12) of recall at the shared threshold and of
    #: recall at the budget; empty when the results hold no intervals (no error bars are drawn).
    recall_ci: dict[tuple[str, str, str], tuple[float, float]] = field(default_factory=dict)
    at_budget_ci: dict[tuple[str, str, str], tuple[float, float]] = field(default_factory=dict)


def recall_bars(
    ds: xr.Dataset, *, datasets: Sequence[str] | None = None, models: Sequence[str] | None = None
) -> RecallBars:
    """What :func:`recall_treatments` draws: recall at the shared threshold and at the budget, per group.

    Examples
    --------
    >>> bars = recall_bars(ds)  # ds: the demo results (pickscale.score(*pickscale.demo.catalogue()))
    >>> cell = ("aftershocks_south", "liberal", "P")
    >>> round(bars.recall[cell], 3), round(bars.at_budget[cell], 3)  # liberal's lead is bought with picks
    (0.983, 0.857)
    """
    opts = options_of(ds)
    dsets, mods = subsets(ds, datasets, models)
    recall = opts.at_shared(ds.recall).load()  # each phase at its own shared threshold (SPEC §2)
    at_budget = ds.recall_at_budget.load()
    n_ref = n_reference(ds)
    mods, cap_note = cap_models(ds, dsets, mods, MAX_MODELS["recall_treatments"])
    groups = {d: [m for m in mods if is_present(ds, d, m)] for d in dsets}
    # The recall axis zooms on the values drawn (differences between 0.8 and 1.0 are what matter).
    drawn_values = [
        v
        for d, ms in groups.items()
        for m in ms
        for v in (recall.sel(dataset=d, model=m).values, at_budget.sel(dataset=d, model=m).values)
    ]
    ylim = zoom_limits(np.concatenate([np.ravel(v) for v in drawn_values]) if drawn_values else [])
    cells = [(d, m, p) for d, ms in groups.items() for m in ms for p in PHASES]

    def interval(name: str) -> dict[tuple[str, str, str], tuple[float, float]]:
        if f"{name}_lo" not in ds:
            return {}
        lo, hi = ds[f"{name}_lo"].load(), ds[f"{name}_hi"].load()
        return {(d, m, p): (float(lo.sel(dataset=d, model=m, phase=p)), float(hi.sel(dataset=d, model=m, phase=p)))
                for d, m, p in cells}

    return RecallBars(
        threshold=opts.threshold,
        datasets=dsets,
        models=mods,
        cap_note=cap_note,
        groups=groups,
        n_reference={(d, p): int(n_ref.sel(dataset=d, phase=p)) for d in dsets for p in PHASES},
        budget={(d, p): int(ds.matched_budget.sel(dataset=d, phase=p)) for d in dsets for p in PHASES},
        recall={(d, m, p): float(recall.sel(dataset=d, model=m, phase=p)) for d, m, p in cells},
        at_budget={(d, m, p): float(at_budget.sel(dataset=d, model=m, phase=p)) for d, m, p in cells},
        ylim=ylim,
        recall_ci=interval("recall"),
        at_budget_ci=interval("recall_at_budget"),
    )


@styled
def recall_treatments(
    ds: xr.Dataset,
    *,
    datasets: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
) -> Figure:
    """Recall at the shared threshold (bars) beside recall at the matched budget (dots).

    One panel per phase, datasets along x, one colour per model.  The gap
    between a bar and its dot is what a shared threshold hides: a liberal
    model's bar stands tall because it emits more picks; at the matched
    budget (every model read at the same number of picks) that advantage is
    gone.  Each dataset's label gives its reference count and the budget.

    Parameters
    ----------
    ds
        A pickscale results Dataset.
    datasets, models
        Subsets to show (default: all).  Models absent from a dataset
        (``model_present`` False) are left out of that dataset's group.

    Returns
    -------
    matplotlib.figure.Figure
        Two axes (P, S).

    Examples
    --------
    >>> import pickscale.report.figures
    >>> fig = pickscale.report.figures.recall_treatments(ds)  # ds: the demo results
    >>> [ax.get_ylabel().splitlines()[0] for ax in fig.axes]
    ['recall of P arrivals', 'recall of S arrivals']
    >>> fig.savefig(tmp / "recall.png")  # tmp: a temporary folder
    >>> (tmp / "recall.png").read_bytes()[1:4]
    b'PNG'
    """
    data = recall_bars(ds, datasets=datasets, models=models)
    colors = model_colors(names_of(ds.model.values))
    dsets, groups = data.datasets, data.groups
    width_slots = max([len(g) for g in groups.values()] + [1])
    bar_w = min(0.82 / width_slots, 0.3)
    n_bars = sum(len(g) for g in groups.values())
    # About 0.3 in per bar and room between groups; the legend gets its own column.
    axes_w = float(np.clip(0.9 + 0.3 * n_bars + 0.45 * len(dsets), 5.0, 32.0))
    # Tick labels: name, arrivals and budget on separate lines when they fit under
    # the group (8 pt characters are about 0.07 in wide); else one rotated line.
    slot = axes_w / (len(dsets) + 0.2)
    stacked = 0.07 * max([len(d) for d in dsets] + [18]) <= 0.95 * slot
    legend_w = 1.0 + 0.065 * max([len(m) for m in data.models] + [22])
    # Not sharex: the tick labels carry each phase's own arrival count and budget.
    fig, grid = panel_grid(rows=2, sharey=True, width=axes_w + legend_w, height=6.4 + (0.6 if not stacked else 0))
    axes = grid[:, 0]
    bar_pt = 72 * axes_w * bar_w / (len(dsets) + 0.2)  # a bar's width in points
    dot = float(np.clip(0.55 * bar_pt, 3.5, 8.0))
    missing_dot = False
    for ax, phase in zip(axes, PHASES):
        missing_dot |= _recall_panel(ax, phase, data, colors, bar_w=bar_w, dot=dot, stacked=stacked)
    mods = data.models
    handles = model_handles([m for m in mods if any(m in g for g in groups.values())], colors)
    handles += [
        Patch(facecolor="#bbbbbb", edgecolor="#888888",
              label=f"bar: recall at shared\nthreshold {fmt_theta(data.threshold)}"),
        Line2D([], [], marker="o", ls="-", lw=0.8, color="#bbbbbb", mec=REF,
               label="dot: recall at the\nmatched pick budget"),
    ]
    legend = fig.legend(handles=handles, loc="outside right upper", ncols=legend_cols(len(handles)))
    footnote(fig, [
        data.cap_note,
        "No dot: the budget lies outside that model's range of emitted picks." if missing_dot else "",
    ])
    caption(
        fig,
        f"Recall at the shared threshold {fmt_theta(data.threshold)} (bars) and at the matched pick budget (dots). "
        "A bar far above its dot is recall bought with extra picks.",
        legend,
    )
    return fig


def _recall_panel(ax: Axes, phase: str, data: RecallBars, colors: dict[str, str], *, bar_w: float, dot: float,
                  stacked: bool) -> bool:
    """One phase's bars and dots; returns whether a bar has no dot (budget out of the model's range)."""
    dsets, rotate = data.datasets, not stacked
    y0, y1 = data.ylim
    missing_dot = False
    labels = []
    xtr = ax.get_xaxis_transform()
    for i, d in enumerate(dsets):
        n = data.n_reference[d, phase]
        b = data.budget[d, phase]
        labels.append(f"{d}\n{n} arrivals\nbudget {b}" if stacked else f"{d}  ({n} arrivals, budget {b})")
        ms = data.groups[d]
        if n == 0:
            ax.text(i, 0.5, f"no {phase} arrivals\nin the reference", ha="center", va="center",
                    color="#555555", fontsize=7.5, transform=xtr)
            continue
        if not ms:
            ax.text(i, 0.5, "no model ran", ha="center", va="center", color="#555555", fontsize=7.5,
                    transform=xtr)
            continue
        for k, m in enumerate(ms):
            x = i + (k - (len(ms) - 1) / 2) * bar_w
            r = data.recall[d, m, phase]
            rb = data.at_budget[d, m, phase]
            ax.bar(x, r, width=bar_w * 0.92, color=colors[m], alpha=0.45, edgecolor=colors[m], lw=0.6,
                   gid=f"recall:{m}")
            if np.isfinite(rb):
                ax.plot([x, x], [r, rb], color=colors[m], lw=0.8, alpha=0.9)
                ax.plot(x, rb, "o", ms=dot, color=colors[m], mec=REF,
                        mew=0.6, zorder=3)
            elif np.isfinite(r):
                missing_dot = True
            _error_bar(ax, x - bar_w * 0.18, r, data.recall_ci.get((d, m, phase)), gid=f"recall_ci:{m}")
            if np.isfinite(rb):
                _error_bar(ax, x + bar_w * 0.18, rb, data.at_budget_ci.get((d, m, phase)), gid=f"budget_ci:{m}")
    ax.set_xticks(range(len(dsets)))
    ax.set_xticklabels(labels, rotation=30 if rotate else 0, ha="right" if rotate else "center",
                       rotation_mode="anchor" if rotate else "default")
    ax.set_xlim(-0.6, len(dsets) - 0.4)
    ax.set_ylim(y0, y1)
    ax.set_yticks([t for t in np.arange(0, 1.0001, 0.05 if y0 >= 0.5 else 0.1 if y0 > 0 else 0.2)
                   if t >= y0 - 1e-9])
    ax.set_ylabel(f"recall of {phase} arrivals" + (f"\n(axis from {y0:.2f})" if y0 > 0 else ""))
    ax.set_title(f"{phase}", fontweight="bold")
    ax.grid(axis="x", visible=False)
    return missing_dot


def precision_label(*, exhaustive: bool) -> str:
    r"""The precision axis in plain words, with the variable's name (``precision_lb`` unless exhaustive).

    >>> precision_label(exhaustive=False)
    'precision: share of picks matched\n(a lower bound: precision_lb)'
    """
    return lb_label("precision: share of picks matched", "precision_lb", exhaustive=exhaustive)


def _error_bar(ax: Axes, x: float, y: float, interval: tuple[float, float] | None, *, gid: str) -> None:
    """A bootstrap interval (SPEC §12) as an error bar at ``(x, y)``; nothing without one."""
    if interval is None or not (np.isfinite(y) and np.all(np.isfinite(interval))):
        return
    lo, hi = interval
    ax.errorbar([x], [y], yerr=[[max(y - lo, 0.0)], [max(hi - y, 0.0)]], fmt="none", ecolor=REF, elinewidth=0.8,
                capsize=2.0, zorder=4, gid=gid)


@dataclass(frozen=True)
class Curve:
    """One model's fine operating curve at one dataset and phase (only models that emitted picks)."""

    model: str
    #: Picks emitted, recall and precision at each fine threshold (precision NaN where nothing is emitted).
    emitted: np.ndarray
    recall: np.ndarray
    precision: np.ndarray
    #: Average precision (``ap_lb`` unless exhaustive).
    ap: float
    #: Fine-grid positions of the shared threshold and of the model's own best threshold (None: no best).
    shared_index: int
    best_index: int | None


@dataclass(frozen=True)
class CurveRow:
    """One dataset and phase with arrivals and a model: one row of :func:`operating_curves`."""

    dataset: str
    phase: str
    n_reference: int
    budget: int
    curves: list[Curve]


@dataclass(frozen=True)
class OperatingCurves:
    """The numbers :func:`operating_curves` draws."""

    threshold: SharedThreshold
    exhaustive: bool
    precision_name: str
    ap_name: str
    models: list[str]
    cap_note: str
    rows: list[CurveRow]
    #: "dataset · phase (why)" of each dataset and phase without a row.
    skipped: list[str]


def curves(
    ds: xr.Dataset, *, datasets: Sequence[str] | None = None, models: Sequence[str] | None = None
) -> OperatingCurves:
    """What :func:`operating_curves` draws: each shown model's fine curve per dataset and phase.

    Examples
    --------
    >>> data = curves(ds, models=["sharp"])  # ds: the demo results
    >>> [(row.dataset, row.phase, len(row.curves)) for row in data.rows][:2]
    [('aftershocks_north', 'P', 1), ('aftershocks_north', 'S', 1)]
    """
    opts = options_of(ds)
    ex = opts.exhaustive
    prec_name, ap_name = metric_name("precision_lb", ex), metric_name("ap_lb", ex)
    dsets, mods = subsets(ds, datasets, models)
    mods, cap_note = cap_models(ds, dsets, mods, MAX_MODELS["operating_curves"])
    n_ref = n_reference(ds)
    fe_all = ds.fine_emitted.sel(dataset=dsets, model=mods).load() if mods else None
    fm_all = ds.fine_matched.sel(dataset=dsets, model=mods).load() if mods else None
    fine = ds.fine_threshold.values
    rows, skipped = [], []
    for d in dsets:
        ms = [m for m in mods if is_present(ds, d, m)]
        for phase in PHASES:
            n = int(n_ref.sel(dataset=d, phase=phase))
            if n == 0:
                skipped.append(f"{d} · {phase} (no arrivals)")
                continue
            if not ms:
                skipped.append(f"{d} · {phase} (no model ran)")
                continue
            row = []
            for m in ms:
                assert fe_all is not None and fm_all is not None
                fe = fe_all.sel(dataset=d, model=m, phase=phase).values.astype(float)
                fm = fm_all.sel(dataset=d, model=m, phase=phase).values.astype(float)
                ok = fe > 0
                if not ok.any():
                    continue
                bt = float(ds.best_threshold.sel(dataset=d, model=m, phase=phase))
                row.append(Curve(
                    model=m, emitted=fe, recall=fm / n, precision=np.where(ok, fm / np.where(ok, fe, 1), np.nan),
                    ap=float(ds[ap_name].sel(dataset=d, model=m, phase=phase)),
                    shared_index=fine_index(ds, opts.threshold_of(phase)),
                    best_index=int(np.argmin(np.abs(fine - bt))) if np.isfinite(bt) else None,
                ))
            rows.append(CurveRow(d, phase, n, int(ds.matched_budget.sel(dataset=d, phase=phase)), row))
    return OperatingCurves(threshold=opts.threshold, exhaustive=ex, precision_name=prec_name, ap_name=ap_name,
                           models=mods, cap_note=cap_note, rows=rows, skipped=skipped)


@styled
def operating_curves(
    ds: xr.Dataset,
    *,
    datasets: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    log_emitted: bool = True,
) -> Figure:
    """Each model's whole operating curve, and where the treatments read it.

    For every dataset and phase with arrivals, a row of two panels from the fine curve (SPEC §7):

    * recall against picks emitted, one line per model, with a dot where the
      shared threshold reads it, a star at the model's own best threshold
      (``best_threshold``, the highest f1 on the sweep grid), a dashed
      vertical line at the ``matched_budget`` and, in grey, the ceiling
      recall = picks / arrivals that a picker with no false picks would
      reach;
    * precision (``precision_lb`` unless exhaustive) against recall, with the
      average precision (``ap_lb``) in the legend.

    Parameters
    ----------
    ds
        A pickscale results Dataset.
    datasets, models
        Subsets to show (default: all).  Absent models are skipped.
    log_emitted
        Log scale for picks emitted (default), so that a model emitting ten
        times the picks of another does not squeeze the others into a corner.

    Returns
    -------
    matplotlib.figure.Figure
        Two axes (recall–picks, precision–recall) per dataset and phase with arrivals, one row
        each; at most eight models (the best by recall at the shared threshold, stated below
        the figure).  Line style and colour tell the models apart; the marks are hollow, so
        models that meet at the knee stay visible.

    Examples
    --------
    >>> import pickscale.report.figures
    >>> fig = pickscale.report.figures.operating_curves(ds)  # ds: the demo results
    >>> len(fig.axes), fig.axes[0].get_xlabel()  # (dataset, phase) rows × (recall, precision) columns
    (8, 'picks emitted (log scale)')
    """
    data = curves(ds, datasets=datasets, models=models)
    all_models = names_of(ds.model.values)
    colors, styles, markers = model_colors(all_models), model_styles(all_models), model_markers(all_models)
    ex, rows = data.exhaustive, data.rows
    # One row per (dataset, phase) with arrivals and a model: two roomy panels side by side.
    longest = max([len(m) for m in data.models] + [8])
    ap_legend_w = 0.9 + 0.06 * longest
    fig_legend_w = 1.1 + 0.065 * max(longest, 20)
    row_h = 3.1 if len(rows) <= 8 else 2.6
    fig, axes = panel_grid(rows=max(len(rows), 1), cols=2, width=2 * 4.6 + ap_legend_w + fig_legend_w,
                           row_height=row_h, extra=1.2)
    if not rows:
        for ax in axes[0]:
            empty_note(ax, "no dataset with arrivals and a model")
    shown: list[str] = []
    for r, row in enumerate(rows):
        _curve_row(axes[r, 0], axes[r, 1], row, data, colors, styles, markers, log_emitted=log_emitted)
        shown += [c.model for c in row.curves if c.model not in shown]
    # Colour, line style and a mark of its own: ten models stay apart (also in grey print).
    handles = [Line2D([], [], color=colors[m], ls=styles[m], lw=1.6, marker=markers[m], ms=4, label=m)
               for m in shown]
    handles += [
        Line2D([], [], marker="o", ms=7, ls="none", mfc="none", mec=REF, mew=1.3,
               label=f"shared threshold {fmt_theta(data.threshold)}"),
        Line2D([], [], marker="*", ms=11, ls="none", mfc="none", mec=REF, mew=1.3,
               label="own best threshold\n(highest " + metric_name("f1_lb", ex) + ")"),
        Line2D([], [], color=REF, ls="--", lw=0.9, label="matched pick budget"),
        Line2D([], [], color="#9a9a9a", ls=":", lw=0.9, label="ceiling: every pick\nmatches an arrival"),
    ]
    legend = fig.legend(handles=handles, loc="outside right upper", ncols=legend_cols(len(handles), 20),
                        handlelength=2.4)
    footnote(fig, [data.cap_note, ("not shown: " + "; ".join(data.skipped)) if data.skipped else "",
                   lb_note(ex).lstrip(" —").capitalize()])
    caption(
        fig,
        f"Operating curves (fine threshold sweep). Left: recall against picks emitted; a lead at the shared "
        f"threshold that vanishes at the budget line was bought with picks. Right: {data.precision_name} "
        "against recall.",
        legend,
    )
    return fig


def _curve_row(ax_r: Axes, ax_p: Axes, row: CurveRow, data: OperatingCurves, colors: dict[str, str],
               styles: dict[str, Any], markers: dict[str, str], *, log_emitted: bool) -> None:
    """Recall against picks emitted (``ax_r``) and precision against recall (``ax_p``) of one row."""
    d, phase, n, budget = row.dataset, row.phase, row.n_reference, row.budget
    ap_name = data.ap_name
    mark: dict[str, Any] = dict(mfc="none", mew=1.3, zorder=4, ls="none")
    xmax = 1.0
    for i, curve in enumerate(row.curves):
        m, fe, rec, prec = curve.model, curve.emitted, curve.recall, curve.precision
        ok = fe > 0
        xmax = max(xmax, fe.max())
        c, ls = colors[m], styles[m]
        # Small marks along each curve, evenly spaced on screen and staggered per model, so that curves of
        # close colours stay apart where they run together.
        along: dict[str, Any] = dict(marker=markers[m], ms=3.5, markevery=(0.013 * i, 0.12))
        ax_r.plot(fe[ok], rec[ok], color=c, ls=ls, lw=1.4, gid=f"curve:{m}", **along)
        ax_p.plot(rec[ok], prec[ok], color=c, ls=ls, lw=1.4, label=f"{m}: {ap_name} {curve.ap:.2f}", **along)
        # Hollow marks: where several models meet at the knee, every ring stays visible.
        points = [(curve.shared_index, "o", 7.0)]
        if curve.best_index is not None:
            points.append((curve.best_index, "*", 11.0))
        for k, marker, size in points:
            if fe[k] > 0:
                ax_r.plot(fe[k], rec[k], marker=marker, ms=size, mec=c, **mark)
                ax_p.plot(rec[k], prec[k], marker=marker, ms=size, mec=c, **mark)
    # The ceiling: one true pick per arrival until every arrival is found.
    xs = np.geomspace(1, max(xmax, n) * 1.05, 200) if log_emitted else np.linspace(0, max(xmax, n) * 1.05, 200)
    ax_r.plot(xs, np.minimum(1.0, xs / n), color="#9a9a9a", lw=0.9, ls=":", zorder=1)
    if budget > 0:
        ax_r.axvline(budget, color=REF, ls="--", lw=0.9, zorder=2)
        ax_r.annotate(f"budget {budget}", (budget, 0.03), xytext=(3, 0), textcoords="offset points",
                      fontsize=7, ha="left", va="bottom", color=REF)
    if log_emitted:
        ax_r.set_xscale("log")
        # From an eighth of the budget: below it every curve runs along the ceiling, and the knee, where the
        # models differ, gets the room.
        ax_r.set_xlim(left=max(0.8, min(budget if budget > 0 else n, n) / 8), right=max(xmax, n) * 1.3)
        # Plain numbers at 1-2-5 steps: readable whether the range spans one decade or four.
        ax_r.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax_r.xaxis.set_major_formatter(FuncFormatter(count_label))
        ax_r.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax_r.set_xlim(left=0)
    ax_r.set_ylim(-0.02, 1.04)
    ax_r.set_xlabel("picks emitted" + (" (log scale)" if log_emitted else ""))
    ax_r.set_ylabel("recall: share of arrivals found")
    ax_r.set_title(f"{d} · {phase} · {n} arrivals", fontweight="bold")
    ax_p.set_xlim(-0.02, 1.04)
    ax_p.set_ylim(-0.02, 1.04)
    ax_p.set_xlabel("recall: share of arrivals found")
    ax_p.set_ylabel(precision_label(exhaustive=data.exhaustive))
    ax_p.set_title("precision against recall")
    ax_p.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7, borderaxespad=0.0,
                handlelength=2.2, labelspacing=0.35, alignment="left")
