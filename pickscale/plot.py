"""Figures of a pickscale results Dataset.

Every figure is a function of the results Dataset alone (what
:func:`pickscale.score` returns or :func:`pickscale.open_results` reads back)
and returns a :class:`matplotlib.figure.Figure`.  Nothing here touches pyplot's
global state: figures are plain ``Figure`` objects, so building many of them
does not accumulate open windows, and the caller decides how to show or save
them (``fig.savefig(...)``, or :func:`save_figures`).

The figures make one argument between them.  A shared confidence threshold
reads each model at a different operating point, because each model's
confidence sits on its own scale (:func:`reliability`); so recall at the
shared threshold measures how liberal a model is as much as how good it is
(:func:`recall_treatments`, :func:`operating_curves`).  Onset time is a
separate question with its own, wider tolerance (:func:`timing`,
:func:`residuals`), and where a model fails is a question about stations
(:func:`stations`).

Naming follows SPEC §4: quantities that depend on a false-positive count carry
``_lb`` (a lower bound, because the analyst did not mark every arrival) unless
the Dataset was scored with ``exhaustive=True``.

Example
-------
>>> import pickscale, pickscale.plot
>>> from pickscale.demo import catalogue
>>> ds = pickscale.score(*catalogue())                        # doctest: +SKIP
>>> figs = pickscale.plot.figures(ds)                          # doctest: +SKIP
>>> pickscale.plot.save_figures(ds, "figures", format="svg")   # doctest: +SKIP
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import matplotlib as mpl
import numpy as np
import xarray as xr
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.textpath import TextToPath
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator

from .options import PHASES, Options
from .results import metric_name

__all__ = [
    "FIGURES",
    "model_colors",
    "recall_treatments",
    "operating_curves",
    "timing",
    "residuals",
    "reliability",
    "stations",
    "figures",
    "save_figures",
]

#: Names of the figures :func:`figures` builds, in reading order.
FIGURES: tuple[str, ...] = ("recall_treatments", "operating_curves", "timing", "residuals", "reliability", "stations")

# A qualitative palette of 14 colours that stay apart on white.  Grey is left
# out on purpose: grey and black are kept for reference lines (the diagonal,
# the budget, ±tol) and for "no data".
_PALETTE: tuple[str, ...] = (
    "#1f77b4",  # blue
    "#ff7f0e",  # orange
    "#2ca02c",  # green
    "#d62728",  # red
    "#9467bd",  # purple
    "#8c564b",  # brown
    "#e377c2",  # pink
    "#bcbd22",  # olive
    "#17becf",  # cyan
    "#000075",  # navy
    "#469990",  # teal
    "#800000",  # maroon
    "#f032e6",  # magenta
    "#9a6324",  # ochre
)
_REF = "#222222"  # reference lines
_NODATA = "#d9d9d9"  # cells / notes for "not scored"
_TEXT2PATH = TextToPath()

_STYLE: dict[str, Any] = {
    "font.size": 8.5,
    "axes.titlesize": 9,
    "axes.titlelocation": "left",
    "axes.labelsize": 8.5,
    "axes.grid": True,
    "axes.axisbelow": True,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "grid.color": "#b0b0b0",
    "grid.alpha": 0.35,
    "grid.linewidth": 0.5,
    "legend.frameon": False,
    "legend.fontsize": 7.5,
    "legend.handlelength": 1.6,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "figure.titlesize": 10,
    "figure.dpi": 100,
}


# ------------------------------------------------------------------ helpers

def model_colors(models: Iterable[str]) -> dict[str, str]:
    """One colour per model, the same in every figure.

    Colours are handed out in sorted model-name order from a qualitative
    palette of 14 colours (beyond 14 models they repeat), so a model keeps
    its colour whatever order the models come in.  The figures call this with
    every model of the Dataset, so a model's colour does not change when a
    figure shows a subset.

    Parameters
    ----------
    models
        Model names (duplicates are ignored).

    Returns
    -------
    dict
        ``{model: hex colour}``.

    Examples
    --------
    >>> c = model_colors(["sharp", "late", "liberal"])
    >>> c["late"], c["liberal"], c["sharp"]
    ('#1f77b4', '#ff7f0e', '#2ca02c')
    >>> model_colors(["sharp", "late"])["late"] == c["late"]
    True
    """
    names = sorted({str(m) for m in models})
    return {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(names)}


def _options(ds: xr.Dataset) -> Options:
    attrs = ds.attrs.get("options")
    if attrs is None:
        raise ValueError(
            "ds.attrs['options'] is missing: pass a Dataset made by pickscale.score or read by "
            "pickscale.open_results."
        )
    if isinstance(attrs, str):
        attrs = json.loads(attrs)
    return Options.from_attrs(attrs)


def _names(values: Any) -> list[str]:
    return [str(v) for v in np.asarray(values).tolist()]


def _select(ds: xr.Dataset, datasets: Sequence[str] | None, models: Sequence[str] | None) -> tuple[list[str], list[str]]:
    all_d, all_m = _names(ds.dataset.values), _names(ds.model.values)
    out = []
    for kind, given, known in (("dataset", datasets, all_d), ("model", models, all_m)):
        if given is None:
            out.append(known)
            continue
        given = [given] if isinstance(given, str) else [str(g) for g in given]
        missing = [g for g in given if g not in known]
        if missing:
            raise ValueError(f"unknown {kind}(s) {missing}; the Dataset has {known}")
        out.append([k for k in known if k in given])
    return out[0], out[1]


def _tidx(ds: xr.Dataset, theta: float) -> int:
    """Position of ``theta`` on the Dataset's threshold grid."""
    return int(np.argmin(np.abs(ds.threshold.values - theta)))


def _fidx(ds: xr.Dataset, theta: float) -> int:
    return int(np.argmin(np.abs(ds.fine_threshold.values - theta)))


def _present(ds: xr.Dataset, dataset: str, model: str) -> bool:
    return bool(ds.model_present.sel(dataset=dataset, model=model).values)


def _n_ref(ds: xr.Dataset) -> xr.DataArray:
    """Scored reference arrivals per (dataset, phase)."""
    return ds.n_reference.sum("station")


def _fmt_theta(theta: float) -> str:
    return f"{theta:g}"


def _lb_note(exhaustive: bool) -> str:
    return "" if exhaustive else " — _lb: lower bound (the reference does not mark every arrival)"


def _model_handles(models: Sequence[str], colors: Mapping[str, str], *, kind: str = "patch") -> list:
    if kind == "line":
        return [Line2D([], [], color=colors[m], lw=2, label=m) for m in models]
    return [Patch(facecolor=colors[m], edgecolor="none", label=m) for m in models]


def _legend_cols(n: int, per_col: int = 16) -> int:
    return max(1, int(np.ceil(n / per_col)))


def _text_color(rgba) -> str:
    r, g, b = to_rgb(rgba)
    return "black" if (0.299 * r + 0.587 * g + 0.114 * b) > 0.55 else "white"


def _styled(func: Callable) -> Callable:
    """Build the figure under the package style without touching global rcParams."""

    def wrapper(*args, **kwargs):
        with mpl.rc_context(_STYLE):
            return func(*args, **kwargs)

    wrapper.__name__ = func.__name__
    wrapper.__qualname__ = func.__qualname__
    wrapper.__doc__ = func.__doc__
    wrapper.__module__ = func.__module__
    wrapper.__wrapped__ = func  # type: ignore[attr-defined]
    return wrapper


def _caption(fig: Figure, text: str, legend: Any = None) -> None:
    """A caption-like, left-aligned figure title, wrapped so that it clears ``legend``.

    Constrained layout neither wraps a title nor keeps an "outside" legend
    clear of it, so the title is wrapped here to the width left of the legend.
    """
    size = 10.0
    avail = fig.get_figwidth() - 0.25
    if legend is not None:
        # The legend's width does not depend on where the layout puts it: measure it off-screen.
        legend_w = legend.get_window_extent(RendererAgg(1, 1, fig.dpi)).width / fig.dpi
        avail = min(avail, fig.get_figwidth() - legend_w - 0.6)
    avail = max(avail, 2.0) * 72.0  # points
    prop = FontProperties(size=size)

    def width(line: str) -> float:
        return _TEXT2PATH.get_text_width_height_descent(line, prop, ismath=False)[0]

    lines: list[str] = []
    for part in text.split("\n"):
        chars = max(20, int(avail / (0.5 * size)))
        wrapped = textwrap.wrap(part, chars) or [""]
        while chars > 20 and max(width(w) for w in wrapped) > avail:
            chars -= 3
            wrapped = textwrap.wrap(part, chars)
        lines.extend(wrapped)
    fig.suptitle("\n".join(lines), x=0.005, ha="left", fontsize=size)


def _count_label(value: float, _pos: Any = None) -> str:
    """Tick label for a count axis: 1, 20, 500, 2k, 10k."""
    if value >= 1000:
        return f"{value / 1000:g}k"
    return f"{value:g}"


def _empty_note(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="#555555", fontsize=8.5)
    ax.set_xticks([])
    ax.set_yticks([])
    for side in ("left", "bottom"):
        ax.spines[side].set_visible(False)


# -------------------------------------------------------- recall_treatments

@_styled
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
    >>> import pickscale, pickscale.plot
    >>> from pickscale.demo import catalogue
    >>> fig = pickscale.plot.recall_treatments(pickscale.score(*catalogue()))  # doctest: +SKIP
    >>> fig.savefig("recall.png")                                             # doctest: +SKIP
    """
    opts = _options(ds)
    dsets, mods = _select(ds, datasets, models)
    colors = model_colors(_names(ds.model.values))
    ti = _tidx(ds, opts.threshold)
    recall = ds.recall.isel(threshold=ti)
    at_budget = ds.recall_at_budget
    n_ref = _n_ref(ds)

    groups = {d: [m for m in mods if _present(ds, d, m)] for d in dsets}
    width_slots = max([len(g) for g in groups.values()] + [1])
    bar_w = min(0.82 / width_slots, 0.3)
    n_bars = sum(len(g) for g in groups.values())
    # About 0.3 in per bar and room between groups; the legend gets its own column.
    axes_w = float(np.clip(0.9 + 0.3 * n_bars + 0.45 * len(dsets), 5.0, 32.0))
    # Tick labels: name, arrivals and budget on separate lines when they fit under
    # the group (8 pt characters are about 0.07 in wide); else one rotated line.
    slot = axes_w / (len(dsets) + 0.2)
    stacked = 0.07 * max([len(d) for d in dsets] + [18]) <= 0.95 * slot
    rotate = not stacked
    legend_w = 1.0 + 0.065 * max([len(m) for m in mods] + [22])
    fig = Figure(figsize=(axes_w + legend_w, 6.4 + (0.6 if rotate else 0)), layout="constrained")
    bar_pt = 72 * axes_w * bar_w / (len(dsets) + 0.2)  # a bar's width in points
    dot = float(np.clip(0.55 * bar_pt, 3.5, 8.0))
    # Not sharex: the tick labels carry each phase's own arrival count and budget.
    axes = fig.subplots(2, 1, sharey=True)
    missing_dot = False
    for ax, phase in zip(axes, PHASES):
        labels = []
        for i, d in enumerate(dsets):
            n = int(n_ref.sel(dataset=d, phase=phase))
            b = int(ds.budget.sel(dataset=d, phase=phase))
            labels.append(f"{d}\n{n} arrivals\nbudget {b}" if stacked else f"{d}  ({n} arrivals, budget {b})")
            ms = groups[d]
            if n == 0:
                ax.text(i, 0.5, f"no {phase} arrivals\nin the reference", ha="center", va="center",
                        color="#555555", fontsize=7.5)
                continue
            if not ms:
                ax.text(i, 0.5, "no model ran", ha="center", va="center", color="#555555", fontsize=7.5)
                continue
            for k, m in enumerate(ms):
                x = i + (k - (len(ms) - 1) / 2) * bar_w
                r = float(recall.sel(dataset=d, model=m, phase=phase))
                rb = float(at_budget.sel(dataset=d, model=m, phase=phase))
                ax.bar(x, r, width=bar_w * 0.92, color=colors[m], alpha=0.45, edgecolor=colors[m], lw=0.6,
                       gid=f"recall:{m}")
                if np.isfinite(rb):
                    ax.plot([x, x], [r, rb], color=colors[m], lw=0.8, alpha=0.9)
                    ax.plot(x, rb, "o", ms=dot, color=colors[m], mec=_REF,
                            mew=0.6, zorder=3)
                elif np.isfinite(r):
                    missing_dot = True
        ax.set_xticks(range(len(dsets)))
        ax.set_xticklabels(labels, rotation=30 if rotate else 0, ha="right" if rotate else "center",
                           rotation_mode="anchor" if rotate else "default")
        ax.set_xlim(-0.6, len(dsets) - 0.4)
        ax.set_ylim(0, 1.04)
        ax.set_ylabel(f"recall of {phase} arrivals")
        ax.set_title(f"{phase}", fontweight="bold")
        ax.grid(axis="x", visible=False)
    handles = _model_handles([m for m in mods if any(m in g for g in groups.values())], colors)
    handles += [
        Patch(facecolor="#bbbbbb", edgecolor="#888888", label=f"bar: recall at shared\nthreshold {_fmt_theta(opts.threshold)}"),
        Line2D([], [], marker="o", ls="-", lw=0.8, color="#bbbbbb", mec=_REF, label="dot: recall at the\nmatched pick budget"),
    ]
    legend = fig.legend(handles=handles, loc="outside right upper", ncols=_legend_cols(len(handles)))
    note = "\nNo dot: the budget lies outside that model's range of emitted picks." if missing_dot else ""
    _caption(
        fig,
        f"Recall, two treatments — bars: at the shared threshold {_fmt_theta(opts.threshold)} · dots: at the matched "
        "pick budget (every model read at the same number of picks). A bar far above its dot is recall bought "
        f"with extra picks.{note}",
        legend,
    )
    return fig


# --------------------------------------------------------- operating_curves

@_styled
def operating_curves(
    ds: xr.Dataset,
    *,
    datasets: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    log_emitted: bool = True,
) -> Figure:
    """Each model's whole operating curve, and where the treatments read it.

    For every dataset and phase, two panels from the fine curve (SPEC §7):

    * recall against picks emitted, one line per model, with a dot where the
      shared threshold reads it, a star at the model's own best threshold
      (``best_threshold``, the highest f1 on the sweep grid), a dashed
      vertical line at the matched ``budget`` and, in grey, the ceiling
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
        Four axes per dataset (P: recall–picks and precision–recall; S: the same).

    Examples
    --------
    >>> import pickscale, pickscale.plot
    >>> from pickscale.demo import catalogue
    >>> fig = pickscale.plot.operating_curves(pickscale.score(*catalogue()))  # doctest: +SKIP
    """
    opts = _options(ds)
    ex = opts.exhaustive
    prec_name, ap_name = metric_name("precision_lb", ex), metric_name("ap_lb", ex)
    dsets, mods = _select(ds, datasets, models)
    colors = model_colors(_names(ds.model.values))
    n_ref = _n_ref(ds)
    fe_all, fm_all = ds.fine_emitted, ds.fine_matched
    fi_shared = _fidx(ds, opts.threshold)
    fine = ds.fine_threshold.values

    shown: list[str] = []
    fig = Figure(figsize=(15.5, 0.9 + 3.0 * len(dsets)), layout="constrained")
    axes = np.atleast_2d(fig.subplots(len(dsets), 4, squeeze=False))
    many = len(mods) > 6
    for r, d in enumerate(dsets):
        ms = [m for m in mods if _present(ds, d, m)]
        for p, phase in enumerate(PHASES):
            ax_r, ax_p = axes[r, 2 * p], axes[r, 2 * p + 1]
            n = int(n_ref.sel(dataset=d, phase=phase))
            title = f"{d} · {phase} · {n} arrivals"
            if n == 0 or not ms:
                msg = f"no {phase} arrivals in the reference" if n == 0 else "no model ran on this dataset"
                for ax in (ax_r, ax_p):
                    ax.set_title(title)
                    _empty_note(ax, msg)
                continue
            budget = int(ds.budget.sel(dataset=d, phase=phase))
            xmax = 1
            for m in ms:
                fe = fe_all.sel(dataset=d, model=m, phase=phase).values.astype(float)
                fm = fm_all.sel(dataset=d, model=m, phase=phase).values.astype(float)
                ok = fe > 0
                if not ok.any():
                    continue
                if m not in shown:
                    shown.append(m)
                xmax = max(xmax, fe.max())
                rec = fm / n
                prec = np.where(ok, fm / np.where(ok, fe, 1), np.nan)
                c = colors[m]
                ax_r.plot(fe[ok], rec[ok], color=c, lw=1.3)
                ap = float(ds[ap_name].sel(dataset=d, model=m, phase=phase))
                ax_p.plot(rec[ok], prec[ok], color=c, lw=1.3, label=f"{m}  {ap:.2f}" if many else f"{m}: {ap_name} {ap:.2f}")
                points = [(fi_shared, "o", 5.5)]
                bt = float(ds.best_threshold.sel(dataset=d, model=m, phase=phase))
                if np.isfinite(bt):
                    points.append((int(np.argmin(np.abs(fine - bt))), "*", 10.0))
                for k, marker, size in points:
                    if fe[k] > 0:
                        ax_r.plot(fe[k], rec[k], marker, ms=size, color=c, mec=_REF, mew=0.6, zorder=4)
                        ax_p.plot(rec[k], prec[k], marker, ms=size, color=c, mec=_REF, mew=0.6, zorder=4)
            # The ceiling: one true pick per arrival until every arrival is found.
            xs = np.geomspace(1, max(xmax, n) * 1.05, 200) if log_emitted else np.linspace(0, max(xmax, n) * 1.05, 200)
            ax_r.plot(xs, np.minimum(1.0, xs / n), color="#9a9a9a", lw=0.9, ls=":", zorder=1)
            if budget > 0:
                ax_r.axvline(budget, color=_REF, ls="--", lw=0.9, zorder=2)
                ax_r.annotate(f"budget\n{budget}", (budget, 0.03), xytext=(3, 0), textcoords="offset points",
                              fontsize=7, ha="left", va="bottom", color=_REF)
            if log_emitted:
                ax_r.set_xscale("log")
                ax_r.set_xlim(left=max(0.8, min(budget if budget > 0 else n, n) / 20))
                # Plain numbers at 1-2-5 steps: readable whether the range spans one decade or four.
                ax_r.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
                ax_r.xaxis.set_major_formatter(FuncFormatter(_count_label))
                ax_r.xaxis.set_minor_formatter(NullFormatter())
            else:
                ax_r.set_xlim(left=0)
            ax_r.set_ylim(0, 1.03)
            ax_r.set_xlabel("picks emitted" + (" (log scale)" if log_emitted else ""))
            ax_r.set_ylabel("recall")
            ax_r.set_title(title)
            ax_p.set_xlim(0, 1.03)
            ax_p.set_ylim(0, 1.03)
            ax_p.set_xlabel("recall")
            ax_p.set_ylabel(prec_name)
            ax_p.set_title(f"{d} · {phase} · {prec_name} vs recall")
            ax_p.legend(loc="best", fontsize=6.5 if many else 7, ncols=2 if len(ms) > 6 else 1,
                        title=ap_name if many else None, title_fontsize=6.5, handlelength=1.2,
                        borderaxespad=0.3, labelspacing=0.25, columnspacing=0.8)
    handles = _model_handles(shown, colors, kind="line")
    handles += [
        Line2D([], [], marker="o", ls="none", color="#bbbbbb", mec=_REF, label=f"shared threshold {_fmt_theta(opts.threshold)}"),
        Line2D([], [], marker="*", ms=10, ls="none", color="#bbbbbb", mec=_REF, label="own best threshold\n(highest " + metric_name("f1_lb", ex) + ")"),
        Line2D([], [], color=_REF, ls="--", lw=0.9, label="matched pick budget"),
        Line2D([], [], color="#9a9a9a", ls=":", lw=0.9, label="ceiling: every pick\nmatches an arrival"),
    ]
    legend = fig.legend(handles=handles, loc="outside right upper", ncols=_legend_cols(len(handles), 20))
    _caption(
        fig,
        "Operating curves from the fine threshold sweep (conf ≥ k/1000). Left of each pair: recall against picks "
        f"emitted — dot: shared threshold {_fmt_theta(opts.threshold)}, star: own best threshold, dashed: matched "
        f"budget; a model's lead at the shared threshold that vanishes at the budget line was bought with picks. "
        f"Right: {prec_name} against recall, {ap_name} in the legend{_lb_note(ex)}.",
        legend,
    )
    return fig


# ------------------------------------------------------------------- timing

@_styled
def timing(
    ds: xr.Dataset,
    *,
    datasets: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
) -> Figure:
    """Onset-time error at the shared threshold: MAE (bars) and median |residual| (diamonds).

    One panel per phase; datasets stacked down the y axis, one row per model.
    Beside each row: the gross-error rate (the fraction of residuals beyond
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
    >>> import pickscale, pickscale.plot
    >>> from pickscale.demo import catalogue
    >>> fig = pickscale.plot.timing(pickscale.score(*catalogue()))  # doctest: +SKIP
    """
    opts = _options(ds)
    dsets, mods = _select(ds, datasets, models)
    colors = model_colors(_names(ds.model.values))
    ti = _tidx(ds, opts.threshold)
    mae, medae = ds.mae.isel(threshold=ti), ds.medae.isel(threshold=ti)
    gross, npairs = ds.gross_error_rate.isel(threshold=ti), ds["n"].isel(threshold=ti)
    n_ref = _n_ref(ds)

    # Row layout shared by both panels: a header per dataset, then its models.
    rows: list[tuple[str, str | None]] = []
    for d in dsets:
        ms = [m for m in mods if _present(ds, d, m)]
        rows.append((d, None))
        rows.extend((d, m) for m in ms)
    y = {row: -i for i, row in enumerate(rows)}
    vals = np.r_[mae.sel(dataset=dsets, model=mods).values.ravel(), medae.sel(dataset=dsets, model=mods).values.ravel()]
    xmax = float(np.nanmax(vals)) if np.isfinite(vals).any() else opts.tol
    xmax = max(xmax, 1e-3)
    fig = Figure(figsize=(11.0, 1.6 + 0.24 * len(rows)), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    shown: list[str] = []
    for ax, phase in zip(axes, PHASES):
        ytr = ax.get_yaxis_transform()
        for (d, m), yy in y.items():
            if m is None:
                ax.axhline(yy + 0.5, color="#cccccc", lw=0.6)
                if int(n_ref.sel(dataset=d, phase=phase)) == 0:
                    ax.text(0.01, yy, f"no {phase} arrivals in the reference", transform=ytr,
                            va="center", ha="left", fontsize=7.5, color="#555555")
                continue
            if int(n_ref.sel(dataset=d, phase=phase)) == 0:
                continue
            k = int(npairs.sel(dataset=d, model=m, phase=phase))
            if k == 0:
                ax.text(0.01, yy, "no residual pair at the shared threshold", transform=ytr,
                        va="center", ha="left", fontsize=7, color="#555555")
                continue
            a = float(mae.sel(dataset=d, model=m, phase=phase))
            b = float(medae.sel(dataset=d, model=m, phase=phase))
            g = float(gross.sel(dataset=d, model=m, phase=phase))
            ax.barh(yy, a, height=0.72, color=colors[m], alpha=0.85, gid=f"mae:{m}")
            if m not in shown:
                shown.append(m)
            ax.plot(b, yy, "D", ms=4.5, mfc="white", mec=_REF, mew=0.9, zorder=3, clip_on=False)
            ax.annotate(f"{100 * g:.1f}% gross · n {k}", (max(a, b), yy), xytext=(6, 0), textcoords="offset points",
                        va="center", ha="left", fontsize=7, color="#333333")
        # Room on the right for the annotations.
        ax.set_xlim(0, xmax * 1.55)
        ax.set_xlabel("onset error (s)")
        ax.set_title(f"{phase} onsets", fontweight="bold")
        ax.grid(axis="y", visible=False)
    ax0 = axes[0]
    ax0.set_yticks([y[r] for r in rows])
    ax0.set_yticklabels([d if m is None else m for d, m in rows])
    for label, (d, m) in zip(ax0.get_yticklabels(), rows):
        if m is None:
            label.set_fontweight("bold")
    ax0.set_ylim(min(y.values()) - 0.7, 0.7)
    ax0.tick_params(axis="y", length=0)
    handles = _model_handles(shown, colors)
    handles += [
        Patch(facecolor="#bbbbbb", label="bar: MAE\n(mean |residual|)"),
        Line2D([], [], marker="D", ls="none", mfc="white", mec=_REF, label="◇: median |residual|\n(medae)"),
    ]
    legend = fig.legend(handles=handles, loc="outside right upper", ncols=_legend_cols(len(handles), 20))
    _caption(
        fig,
        f"Onset time at the shared threshold {_fmt_theta(opts.threshold)} — bar: MAE, ◇: median |residual|, "
        f"text: gross-error rate (share of residuals beyond the detection tolerance {opts.tol:g} s) and number "
        f"of pairs. Residuals are matched within {opts.residual_tol:g} s, so the tail beyond {opts.tol:g} s is "
        "counted, not cut off; a MAE far above the median is that tail.",
        legend,
    )
    return fig


# ---------------------------------------------------------------- residuals

@_styled
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
    >>> import pickscale, pickscale.plot
    >>> from pickscale.demo import catalogue
    >>> fig = pickscale.plot.residuals(pickscale.score(*catalogue()), bin_width=0.05)  # doctest: +SKIP
    """
    opts = _options(ds)
    dsets, mods = _select(ds, datasets, models)
    colors = model_colors(_names(ds.model.values))
    all_d, all_m = _names(ds.dataset.values), _names(ds.model.values)
    pd_ = ds.pair_dataset.values
    pm, pp = ds.pair_model.values, ds.pair_phase.values
    res, conf = ds.residual.values, ds.pair_conf.values
    keep = (conf >= opts.threshold) & np.isin(pd_, [all_d.index(d) for d in dsets])
    rows = [m for m in mods if np.any(keep & (pm == all_m.index(m)))]
    # Models that ran on a selected dataset but left no pair there still deserve a row.
    rows = [m for m in mods if m in rows or any(_present(ds, d, m) for d in dsets)]
    width = bin_width or opts.tol / 20
    half = opts.residual_tol
    edges = np.arange(-half, half + width / 2, width)
    if edges.size < 2:
        edges = np.array([-half, half])

    n_rows = max(len(rows), 1)
    fig = Figure(figsize=(10.5, 1.5 + 1.6 * n_rows), layout="constrained")
    axes = fig.subplots(n_rows, 2, sharex=True, squeeze=False)
    if not rows:
        for ax in axes[0]:
            _empty_note(ax, "no model ran on the selected datasets")
    ymax = 1
    for r, m in enumerate(rows):
        for p, phase in enumerate(PHASES):
            ax = axes[r, p]
            sel = keep & (pm == all_m.index(m)) & (pp == p)
            e = res[sel]
            if e.size == 0:
                ax.text(0.5, 0.5, f"{m}: no {phase} pairs at the shared threshold", transform=ax.transAxes,
                        ha="center", va="center", color="#555555", fontsize=8)
                ax.set_yticks([])
            else:
                counts, _ = np.histogram(np.clip(e, edges[0], edges[-1]), bins=edges)
                ymax = max(ymax, counts.max())
                ax.stairs(counts, edges, fill=True, color=colors[m], alpha=0.75, gid=f"residuals:{m}")
                ax.stairs(counts, edges, color=colors[m], lw=0.8)
                med = float(np.median(e))
                gross = float(np.mean(np.abs(e) > opts.tol))
                ax.axvline(med, color=_REF, lw=1.1, ls="-")
                ax.text(0.99, 0.95, f"n {e.size} · median {med:+.3f} s\n{100 * gross:.1f}% beyond ±{opts.tol:g} s",
                        transform=ax.transAxes, ha="right", va="top", fontsize=7.5,
                        bbox=dict(facecolor="white", edgecolor="none", alpha=0.8, pad=1.5))
            for s in (-opts.tol, opts.tol):
                ax.axvline(s, color=_REF, ls="--", lw=0.8)
            ax.axvline(0, color="#9a9a9a", lw=0.6)
            ax.set_title(f"{m} · {phase}", loc="left", color=colors[m], fontweight="bold")
    for r in range(len(rows)):
        for p in range(2):
            ax = axes[r, p]
            if log:
                ax.set_yscale("log")
                ax.set_ylim(0.7, ymax * 2.5)
                ax.yaxis.set_minor_locator(NullLocator())  # minor log ticks: clutter, and slow to lay out
            else:
                ax.set_ylim(0, ymax * 1.15)
    for ax in axes[-1]:
        ax.set_xlabel("residual: pick − arrival (s)   early < 0 < late")
        ax.set_xlim(edges[0], edges[-1])
    fig.supylabel(f"pairs per {width:g} s bin" + (" (log scale)" if log else ""), fontsize=8.5)
    pooled = f"{len(dsets)} datasets pooled" if len(dsets) > 1 else f"dataset {dsets[0]}"
    _caption(
        fig,
        f"Onset residuals (pick − arrival) of picks with conf ≥ {_fmt_theta(opts.threshold)} (the shared threshold), "
        f"matched within {opts.residual_tol:g} s, {pooled}. Dashed: ±{opts.tol:g} s, the detection tolerance — "
        "what lies beyond it is the gross-error rate; solid line: median residual (bias: early < 0 < late); grey: zero.",
    )
    return fig


# -------------------------------------------------------------- reliability

@_styled
def reliability(
    ds: xr.Dataset,
    *,
    datasets: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
) -> Figure:
    """Reliability diagrams: does a confidence of 0.7 mean 70 % of picks match?

    One panel per dataset and phase, one line per model through the
    non-empty calibration bins (``mean_conf`` against ``observed_lb``; marker
    area proportional to the share of the model's picks in the bin, from
    ``cal_n``), the diagonal of perfect calibration, and the expected
    calibration error (``ece_lb``) in the legend.  Different curves are why a
    shared threshold reads each model at a different operating point.  With a
    non-exhaustive reference the observed frequency is a lower bound: curves
    below the diagonal are expected.

    Parameters
    ----------
    ds
        A pickscale results Dataset.
    datasets, models
        Subsets to show (default: all).  Absent models are skipped.

    Returns
    -------
    matplotlib.figure.Figure
        One axes per dataset and phase (rows: datasets, columns: P, S).

    Examples
    --------
    >>> import pickscale, pickscale.plot
    >>> from pickscale.demo import catalogue
    >>> fig = pickscale.plot.reliability(pickscale.score(*catalogue()))  # doctest: +SKIP
    """
    opts = _options(ds)
    ex = opts.exhaustive
    obs_name, ece_name = metric_name("observed_lb", ex), metric_name("ece_lb", ex)
    dsets, mods = _select(ds, datasets, models)
    colors = model_colors(_names(ds.model.values))
    cal_n = ds.cal_n.sum("station")
    n_ref = _n_ref(ds)
    longest = max([len(m) for m in mods] + [4])
    legend_w = 0.7 + 0.055 * longest
    fig = Figure(figsize=(2 * (3.5 + legend_w) + 0.4, 1.2 + 3.6 * len(dsets)), layout="constrained")
    axes = fig.subplots(len(dsets), 2, squeeze=False)
    for r, d in enumerate(dsets):
        ms = [m for m in mods if _present(ds, d, m)]
        for p, phase in enumerate(PHASES):
            ax = axes[r, p]
            n = int(n_ref.sel(dataset=d, phase=phase))
            if n == 0 or not ms:
                # Without reference arrivals every pick is "unmatched": a calibration of nothing.
                ax.set_title(f"{d} · {phase}\n{n} arrivals")
                _empty_note(ax, f"no {phase} arrivals in the reference" if n == 0 else "no model ran on this dataset")
                continue
            ax.plot([0, 1], [0, 1], color="#9a9a9a", ls="--", lw=0.9, zorder=1)
            ax.axvline(opts.threshold, color="#9a9a9a", ls=":", lw=0.9, zorder=1)
            total = 0
            for m in ms:
                nb = cal_n.sel(dataset=d, model=m, phase=phase).values.astype(float)
                if nb.sum() == 0:
                    continue
                total += int(nb.sum())
                x = ds.mean_conf.sel(dataset=d, model=m, phase=phase).values
                yv = ds[obs_name].sel(dataset=d, model=m, phase=phase).values
                ok = nb > 0
                e = float(ds[ece_name].sel(dataset=d, model=m, phase=phase))
                c = colors[m]
                ax.plot(x[ok], yv[ok], "-", color=c, lw=1.2, alpha=0.9, label=f"{m}  {e:.3f}")
                ax.scatter(x[ok], yv[ok], s=5 + 260 * nb[ok] / nb.sum(), color=c, edgecolor=_REF,
                           linewidth=0.4, zorder=3, clip_on=False)
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1)
            ax.set_aspect("equal")
            ax.set_xlabel("confidence (mean of the bin)")
            ax.set_ylabel(f"{obs_name}: share of the bin's picks matched")
            ax.set_title(f"{d} · {phase}\n{total:,} picks ≥ floor {opts.floor:g} · {n} arrivals")
            if total:
                ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), title=f"{ece_name}", title_fontsize=7.5,
                          fontsize=7, labelspacing=0.3, handlelength=1.2, borderaxespad=0.0, alignment="left")
    note = (
        "" if ex else
        f" {obs_name} is a lower bound (an unmatched pick may be an arrival the analyst did not mark), so "
        "curves below the diagonal are expected; what matters is that they differ between models."
    )
    _caption(
        fig,
        f"Reliability per model: do picks of confidence c match an arrival a fraction c of the time? Ten "
        f"confidence bins; marker area ∝ share of the model's picks in the bin; dashed: perfect calibration; "
        f"dotted: the shared threshold {_fmt_theta(opts.threshold)}, which reads differently calibrated models at "
        f"different operating points.{note}",
    )
    return fig


# ----------------------------------------------------------------- stations

@_styled
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
    >>> import pickscale, pickscale.plot
    >>> from pickscale.demo import catalogue
    >>> fig = pickscale.plot.stations(pickscale.score(*catalogue()), max_stations=20)  # doctest: +SKIP
    """
    opts = _options(ds)
    dsets, mods = _select(ds, datasets, models)
    ti = _tidx(ds, opts.threshold)
    matched = ds.matched.isel(threshold=ti).sum("phase").sel(dataset=dsets, model=mods)  # (d, m, s)
    nref = ds.n_reference.sum("phase").sel(dataset=dsets)  # (d, s)
    scored = ds.station_scored.sel(dataset=dsets)
    present = ds.model_present.sel(dataset=dsets, model=mods)
    rec = (matched / nref.where(nref > 0)).where(scored & present)
    rec = rec.transpose("dataset", "station", "model").values
    stn = _names(ds.station.values)
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
        cap = f"worst {len(shown)} of {total} {unit}"
    elif total == 1:
        cap = "one station"
    else:
        cap = f"all {total} {unit}, worst first"

    label_w = max([len(r[2]) + (len(r[3]) + 3 if multi else 0) for r in shown] + [8])
    fig_w = float(np.clip(1.6 + 0.075 * label_w + 0.62 * len(mods) + 1.2, 5.5, 20))
    fig = Figure(figsize=(fig_w, 2.4 + 0.22 * max(len(shown), 6)), layout="constrained")
    ax = fig.subplots()
    ax.grid(False)
    if not shown:
        _empty_note(ax, "no scored station")
        _caption(fig, f"Per-station recall at shared threshold {_fmt_theta(opts.threshold)}: no scored station")
        return fig
    grid = np.array([r[5] for r in shown], dtype=float)
    cmap = mpl.colormaps["viridis"].with_extremes(bad=_NODATA)
    im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0, vmax=1, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(mods)))
    long = max(len(m) for m in mods) > 6 or len(mods) > 6
    ax.set_xticklabels(mods, rotation=40 if long else 0, ha="left" if long else "center",
                       rotation_mode="anchor" if long else "default")
    ax.xaxis.tick_top()
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([f"{r[2]}" + (f" · {r[3]}" if multi else "") + f"  ({r[4]})" for r in shown])
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    if annotate is None:
        annotate = grid.size <= 600
    if annotate:
        for (i, j), v in np.ndenumerate(grid):
            if np.isfinite(v):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6.5, color=_text_color(cmap(v)))
            else:
                ax.text(j, i, "–", ha="center", va="center", fontsize=7, color="#777777")
    cb = fig.colorbar(im, ax=ax, shrink=min(1.0, 6 / max(len(shown), 6) + 0.35), aspect=25, pad=0.02)
    cb.set_label(f"recall at threshold {_fmt_theta(opts.threshold)} (P + S)")
    ax.set_ylabel("station" + (" · dataset" if multi else "") + "  (reference arrivals)")
    nodata = " · grey: model not run on that dataset" if np.isnan(grid).any() else ""
    _caption(
        fig,
        f"Per-station recall at the shared threshold {_fmt_theta(opts.threshold)}, P and S together — {cap}, "
        f"sorted by the mean over the models that ran. Row label: reference arrivals at the station; a recall "
        f"on 2 arrivals is not a recall on 200.{nodata}",
    )
    return fig


# ---------------------------------------------------------------- all of it

_BUILDERS: dict[str, Callable[..., Figure]] = {
    "recall_treatments": recall_treatments,
    "operating_curves": operating_curves,
    "timing": timing,
    "residuals": residuals,
    "reliability": reliability,
    "stations": stations,
}


def figures(ds: xr.Dataset, *, names: Sequence[str] | None = None) -> dict[str, Figure]:
    """Every figure of a results Dataset, by name.

    Parameters
    ----------
    ds
        A pickscale results Dataset.
    names
        Which figures (default: all of :data:`FIGURES`, in that order).

    Returns
    -------
    dict
        ``{name: Figure}``.

    Examples
    --------
    >>> import pickscale, pickscale.plot
    >>> ds = pickscale.open_results("run/results.zarr")      # doctest: +SKIP
    >>> sorted(pickscale.plot.figures(ds))                    # doctest: +SKIP
    ['operating_curves', 'recall_treatments', 'reliability', 'residuals', 'stations', 'timing']
    """
    chosen = list(FIGURES if names is None else names)
    unknown = [n for n in chosen if n not in _BUILDERS]
    if unknown:
        raise ValueError(f"unknown figure(s) {unknown}; choose from {list(FIGURES)}")
    return {name: _BUILDERS[name](ds) for name in chosen}


def save_figures(
    ds: xr.Dataset,
    out_dir: str | Path,
    *,
    format: str = "png",
    dpi: float = 150,
    names: Sequence[str] | None = None,
) -> list[Path]:
    """Write every figure to ``out_dir/<name>.<format>``; return the paths.

    Figures are built, written and released one at a time, so memory does not
    grow with the number of figures.

    Parameters
    ----------
    ds
        A pickscale results Dataset.
    out_dir
        Folder to write into (created if missing).
    format
        ``"png"``, ``"svg"`` or ``"pdf"``.
    dpi
        Resolution of PNG output.
    names
        Which figures (default: all of :data:`FIGURES`).

    Returns
    -------
    list of pathlib.Path
        The files written, in :data:`FIGURES` order.

    Examples
    --------
    >>> import pickscale, pickscale.plot
    >>> ds = pickscale.open_results("run/results.zarr")                  # doctest: +SKIP
    >>> pickscale.plot.save_figures(ds, "run/figures", format="pdf")      # doctest: +SKIP
    [PosixPath('run/figures/recall_treatments.pdf'), ...]
    """
    fmt = format.lower().lstrip(".")
    if fmt not in ("png", "svg", "pdf"):
        raise ValueError(f"format must be 'png', 'svg' or 'pdf'; got {format!r}")
    chosen = list(FIGURES if names is None else names)
    unknown = [n for n in chosen if n not in _BUILDERS]
    if unknown:
        raise ValueError(f"unknown figure(s) {unknown}; choose from {list(FIGURES)}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in chosen:
        fig = _BUILDERS[name](ds)
        path = out / f"{name}.{fmt}"
        with mpl.rc_context(_STYLE):
            fig.savefig(path, format=fmt, dpi=dpi, metadata=_metadata(fmt, name))
        fig.clear()  # a plain Figure is not registered with pyplot: clearing it releases it
        paths.append(path)
    return paths


def _metadata(fmt: str, name: str) -> dict[str, str]:
    title = f"pickscale: {name}"
    if fmt == "png":
        return {"Title": title, "Software": "pickscale"}
    if fmt == "pdf":
        return {"Title": title, "Creator": "pickscale"}
    return {"Title": title}
