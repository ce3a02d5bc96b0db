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
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

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
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter, NullLocator

from .options import PHASES, Options
from .results import metric_name

__all__ = [
    "FIGURES",
    "model_colors",
    "model_styles",
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
#: How many models each figure draws at most; beyond that, the best by recall at the shared threshold,
#: and the figure says "showing N of M models".
_MAX_MODELS: dict[str, int] = {
    "recall_treatments": 16,
    "operating_curves": 8,
    "timing": 16,
    "residuals": 10,
    "reliability": 8,
    "stations": 24,
}
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


def _footnote(fig: Figure, notes: Sequence[str]) -> None:
    """Small print under the figure (what is left out, what a missing mark means), laid out by
    constrained layout so that it stays on the canvas."""
    notes = [n for n in notes if n]
    if notes:
        fig.supxlabel("\n".join(notes), x=0.005, ha="left", fontsize=7.5, color="#444444")


def _fmt_pct(fraction: float) -> str:
    """A rate as a percentage that never reads 0 or 100 when it is not.

    >>> _fmt_pct(0.0), _fmt_pct(0.0004), _fmt_pct(0.0123), _fmt_pct(0.9996), _fmt_pct(1.0)
    ('0 %', '<0.1 %', '1.2 %', '>99.9 %', '100 %')
    """
    f = float(fraction)
    if not np.isfinite(f):
        return "–"
    if f <= 0:
        return "0 %"
    if f >= 1:
        return "100 %"
    pct = 100 * f
    if pct < 0.05:
        return "<0.1 %"
    if pct >= 99.95:
        return ">99.9 %"
    return f"{pct:.1f} %"


def _fmt_signed_s(seconds: float) -> str:
    """A signed time: ms below 1 s (one decimal below 10 ms), no sign on zero, a true minus sign.

    >>> _fmt_signed_s(0.153), _fmt_signed_s(-0.0025), _fmt_signed_s(-1e-7), _fmt_signed_s(1.25)
    ('+153 ms', '−2.5 ms', '0 ms', '+1.25 s')
    """
    v = float(seconds)
    if not np.isfinite(v):
        return "–"
    if abs(v) >= 0.9995:
        text, unit = f"{abs(v):.2f}", "s"
    else:
        ms = abs(v) * 1000
        text, unit = (f"{ms:.1f}".removesuffix(".0") if ms < 9.95 else f"{ms:.0f}"), "ms"
    if float(text) == 0:
        return f"0 {unit}"
    return f"{'+' if v > 0 else '−'}{text} {unit}"


def _fmt_s(seconds: float) -> str:
    """An unsigned time, in ms below 1 s."""
    return _fmt_signed_s(abs(float(seconds))).lstrip("+")


#: Line styles that tell apart models drawn in similar places (and models that share a colour).
_DASHES: tuple[Any, ...] = ("-", (0, (5.0, 1.6)), (0, (1.2, 1.3)), (0, (6.0, 1.5, 1.5, 1.5)))


def model_styles(models: Iterable[str]) -> dict[str, Any]:
    """One line style per model, like :func:`model_colors` (sorted names), so that models with
    close curves, or the same colour beyond 14 models, stay apart."""
    names = sorted({str(m) for m in models})
    return {name: _DASHES[i % len(_DASHES)] for i, name in enumerate(names)}


def _rank_models(ds: xr.Dataset, dsets: Sequence[str], mods: Sequence[str]) -> list[str]:
    """Models best first: mean recall at the shared threshold over the selected datasets and
    both phases where the model ran (ties and models without a recall: by name)."""
    if not mods:
        return []
    ti = _tidx(ds, _options(ds).threshold)
    rec = ds.recall.isel(threshold=ti).sel(dataset=list(dsets), model=list(mods))
    present = ds.model_present.sel(dataset=list(dsets), model=list(mods))
    vals = np.asarray(rec.where(present).transpose("model", ...).values, dtype=float).reshape(len(mods), -1)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(vals)
        score = np.where(ok.any(1), np.where(ok, vals, 0).sum(1) / np.maximum(ok.sum(1), 1), -np.inf)
    order = sorted(range(len(mods)), key=lambda i: (-score[i], str(mods[i])))
    return [str(mods[i]) for i in order]


def _cap_models(
    ds: xr.Dataset, dsets: Sequence[str], mods: Sequence[str], limit: int
) -> tuple[list[str], str]:
    """At most ``limit`` models, the best by recall at the shared threshold, kept in Dataset order.

    Returns the models to draw and a note ("showing 8 of 300 models: …"), empty when none is left out.
    """
    limit = max(int(limit), 1)
    if len(mods) <= limit:
        return list(mods), ""
    keep = set(_rank_models(ds, dsets, mods)[:limit])
    theta = _fmt_theta(_options(ds).threshold)
    note = (f"showing {limit} of {len(mods)} models: the best {limit} by recall at threshold {theta} "
            "(pass models=[...] to choose)")
    return [m for m in mods if m in keep], note


def _zoom_limits(values: Any, *, top: float = 1.0, step: float = 0.05, floor_below: float = 0.3) -> tuple[float, float]:
    """Axis limits for rates in [0, top] that zoom on the data: from a round value below the
    smallest one to just above ``top``; from 0 when the data reach down to ``floor_below``."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return 0.0, top * 1.04
    lo, hi = float(v.min()), float(v.max())
    pad = max(0.02, 0.1 * (hi - lo))
    start = np.floor((lo - pad) / step) * step
    if start <= floor_below:
        start = 0.0
    return float(start), float(top + 0.04 * (top - start))


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
    recall = ds.recall.isel(threshold=ti).load()
    at_budget = ds.recall_at_budget.load()
    n_ref = _n_ref(ds)
    mods, cap_note = _cap_models(ds, dsets, mods, _MAX_MODELS["recall_treatments"])

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
    # The recall axis zooms on the values drawn (differences between 0.8 and 1.0 are what matter);
    # both panels share it.
    drawn_values = [
        v
        for d, ms in groups.items()
        for m in ms
        for v in (recall.sel(dataset=d, model=m).values, at_budget.sel(dataset=d, model=m).values)
    ]
    y0, y1 = _zoom_limits(np.concatenate([np.ravel(v) for v in drawn_values]) if drawn_values else [])
    missing_dot = False
    for ax, phase in zip(axes, PHASES):
        labels = []
        xtr = ax.get_xaxis_transform()
        for i, d in enumerate(dsets):
            n = int(n_ref.sel(dataset=d, phase=phase))
            b = int(ds.budget.sel(dataset=d, phase=phase))
            labels.append(f"{d}\n{n} arrivals\nbudget {b}" if stacked else f"{d}  ({n} arrivals, budget {b})")
            ms = groups[d]
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
        ax.set_ylim(y0, y1)
        ax.set_yticks([t for t in np.arange(0, 1.0001, 0.05 if y0 >= 0.5 else 0.1 if y0 > 0 else 0.2)
                       if t >= y0 - 1e-9])
        ax.set_ylabel(f"recall of {phase} arrivals" + (f"\n(axis from {y0:.2f})" if y0 > 0 else ""))
        ax.set_title(f"{phase}", fontweight="bold")
        ax.grid(axis="x", visible=False)
    handles = _model_handles([m for m in mods if any(m in g for g in groups.values())], colors)
    handles += [
        Patch(facecolor="#bbbbbb", edgecolor="#888888", label=f"bar: recall at shared\nthreshold {_fmt_theta(opts.threshold)}"),
        Line2D([], [], marker="o", ls="-", lw=0.8, color="#bbbbbb", mec=_REF, label="dot: recall at the\nmatched pick budget"),
    ]
    legend = fig.legend(handles=handles, loc="outside right upper", ncols=_legend_cols(len(handles)))
    _footnote(fig, [
        cap_note,
        "No dot: the budget lies outside that model's range of emitted picks." if missing_dot else "",
    ])
    _caption(
        fig,
        f"Recall at the shared threshold {_fmt_theta(opts.threshold)} (bars) and at the matched pick budget (dots). "
        "A bar far above its dot is recall bought with extra picks.",
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

    For every dataset and phase with arrivals, a row of two panels from the fine curve (SPEC §7):

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
        Two axes (recall–picks, precision–recall) per dataset and phase with arrivals, one row
        each; at most eight models (the best by recall at the shared threshold, stated below
        the figure).  Line style and colour tell the models apart; the marks are hollow, so
        models that meet at the knee stay visible.

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
    mods, cap_note = _cap_models(ds, dsets, mods, _MAX_MODELS["operating_curves"])
    all_models = _names(ds.model.values)
    colors, styles = model_colors(all_models), model_styles(all_models)
    n_ref = _n_ref(ds)
    fe_all = ds.fine_emitted.sel(dataset=dsets, model=mods).load() if mods else None
    fm_all = ds.fine_matched.sel(dataset=dsets, model=mods).load() if mods else None
    fi_shared = _fidx(ds, opts.threshold)
    fine = ds.fine_threshold.values

    # One row per (dataset, phase) with arrivals and a model: two roomy panels side by side.
    rows, skipped = [], []
    for d in dsets:
        ms = [m for m in mods if _present(ds, d, m)]
        for phase in PHASES:
            n = int(n_ref.sel(dataset=d, phase=phase))
            if n == 0:
                skipped.append(f"{d} · {phase} (no arrivals)")
            elif not ms:
                skipped.append(f"{d} · {phase} (no model ran)")
            else:
                rows.append((d, phase, n, ms))
    longest = max([len(m) for m in mods] + [8])
    ap_legend_w = 0.9 + 0.06 * longest
    fig_legend_w = 1.1 + 0.065 * max(longest, 20)
    row_h = 3.1 if len(rows) <= 8 else 2.6
    fig = Figure(figsize=(2 * 4.6 + ap_legend_w + fig_legend_w, 1.2 + row_h * max(len(rows), 1)),
                 layout="constrained")
    axes = fig.subplots(max(len(rows), 1), 2, squeeze=False)
    if not rows:
        for ax in axes[0]:
            _empty_note(ax, "no dataset with arrivals and a model")
    shown: list[str] = []
    mark = dict(mfc="none", mew=1.3, zorder=4, ls="none")
    for r, (d, phase, n, ms) in enumerate(rows):
        ax_r, ax_p = axes[r, 0], axes[r, 1]
        budget = int(ds.budget.sel(dataset=d, phase=phase))
        xmax = 1.0
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
            c, ls = colors[m], styles[m]
            ax_r.plot(fe[ok], rec[ok], color=c, ls=ls, lw=1.4, gid=f"curve:{m}")
            ap = float(ds[ap_name].sel(dataset=d, model=m, phase=phase))
            ax_p.plot(rec[ok], prec[ok], color=c, ls=ls, lw=1.4, label=f"{m}: {ap_name} {ap:.2f}")
            # Hollow marks: where several models meet at the knee, every ring stays visible.
            points = [(fi_shared, "o", 7.0)]
            bt = float(ds.best_threshold.sel(dataset=d, model=m, phase=phase))
            if np.isfinite(bt):
                points.append((int(np.argmin(np.abs(fine - bt))), "*", 11.0))
            for k, marker, size in points:
                if fe[k] > 0:
                    ax_r.plot(fe[k], rec[k], marker=marker, ms=size, mec=c, **mark)
                    ax_p.plot(rec[k], prec[k], marker=marker, ms=size, mec=c, **mark)
        # The ceiling: one true pick per arrival until every arrival is found.
        xs = np.geomspace(1, max(xmax, n) * 1.05, 200) if log_emitted else np.linspace(0, max(xmax, n) * 1.05, 200)
        ax_r.plot(xs, np.minimum(1.0, xs / n), color="#9a9a9a", lw=0.9, ls=":", zorder=1)
        if budget > 0:
            ax_r.axvline(budget, color=_REF, ls="--", lw=0.9, zorder=2)
            ax_r.annotate(f"budget {budget}", (budget, 0.03), xytext=(3, 0), textcoords="offset points",
                          fontsize=7, ha="left", va="bottom", color=_REF)
        if log_emitted:
            ax_r.set_xscale("log")
            ax_r.set_xlim(left=max(0.8, min(budget if budget > 0 else n, n) / 20), right=max(xmax, n) * 1.3)
            # Plain numbers at 1-2-5 steps: readable whether the range spans one decade or four.
            ax_r.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
            ax_r.xaxis.set_major_formatter(FuncFormatter(_count_label))
            ax_r.xaxis.set_minor_formatter(NullFormatter())
        else:
            ax_r.set_xlim(left=0)
        ax_r.set_ylim(-0.02, 1.04)
        ax_r.set_xlabel("picks emitted" + (" (log scale)" if log_emitted else ""))
        ax_r.set_ylabel("recall")
        ax_r.set_title(f"{d} · {phase} · {n} arrivals", fontweight="bold")
        ax_p.set_xlim(-0.02, 1.04)
        ax_p.set_ylim(-0.02, 1.04)
        ax_p.set_xlabel("recall")
        ax_p.set_ylabel(prec_name)
        ax_p.set_title(f"{prec_name} vs recall")
        ax_p.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7, borderaxespad=0.0,
                    handlelength=2.2, labelspacing=0.35, alignment="left")
    handles = [Line2D([], [], color=colors[m], ls=styles[m], lw=1.6, label=m) for m in shown]
    handles += [
        Line2D([], [], marker="o", ms=7, ls="none", mfc="none", mec=_REF, mew=1.3,
               label=f"shared threshold {_fmt_theta(opts.threshold)}"),
        Line2D([], [], marker="*", ms=11, ls="none", mfc="none", mec=_REF, mew=1.3,
               label="own best threshold\n(highest " + metric_name("f1_lb", ex) + ")"),
        Line2D([], [], color=_REF, ls="--", lw=0.9, label="matched pick budget"),
        Line2D([], [], color="#9a9a9a", ls=":", lw=0.9, label="ceiling: every pick\nmatches an arrival"),
    ]
    legend = fig.legend(handles=handles, loc="outside right upper", ncols=_legend_cols(len(handles), 20),
                        handlelength=2.4)
    _footnote(fig, [cap_note, ("not shown: " + "; ".join(skipped)) if skipped else "",
                    _lb_note(ex).lstrip(" —").capitalize()])
    _caption(
        fig,
        f"Operating curves (fine threshold sweep). Left: recall against picks emitted; a lead at the shared "
        f"threshold that vanishes at the budget line was bought with picks. Right: {prec_name} against recall.",
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
    >>> import pickscale, pickscale.plot
    >>> from pickscale.demo import catalogue
    >>> fig = pickscale.plot.timing(pickscale.score(*catalogue()))  # doctest: +SKIP
    """
    opts = _options(ds)
    dsets, mods = _select(ds, datasets, models)
    mods, cap_note = _cap_models(ds, dsets, mods, _MAX_MODELS["timing"])
    colors = model_colors(_names(ds.model.values))
    ti = _tidx(ds, opts.threshold)
    sub = dict(dataset=dsets, model=mods)
    mae, medae = ds.mae.isel(threshold=ti).sel(**sub).load(), ds.medae.isel(threshold=ti).sel(**sub).load()
    bias = ds.bias.isel(threshold=ti).sel(**sub).load()
    gross = ds.gross_error_rate.isel(threshold=ti).sel(**sub).load()
    npairs = ds["n"].isel(threshold=ti).sel(**sub).load()
    n_ref = _n_ref(ds)

    # Row layout shared by both panels: a header per dataset, then its models.
    rows: list[tuple[str, str | None]] = []
    for d in dsets:
        ms = [m for m in mods if _present(ds, d, m)]
        rows.append((d, None))
        rows.extend((d, m) for m in ms)
    y = {row: -i for i, row in enumerate(rows)}

    def finite(a: xr.DataArray) -> np.ndarray:
        v = np.asarray(a.values, dtype=float).ravel()
        return v[np.isfinite(v)]

    pos = np.r_[finite(mae), finite(medae), np.abs(finite(bias))]
    xmax = max(float(pos.max()) if pos.size else opts.tol, 1e-3)
    signed = finite(bias)
    xmin = min(0.0, float(signed.min()) if signed.size else 0.0)
    span = xmax - xmin
    # Bars and marks use the left part of each panel; the right part holds the text of each row.
    left, right = xmin - 0.06 * span, xmin + span / 0.52
    fig = Figure(figsize=(12.5, 1.7 + 0.25 * len(rows)), layout="constrained")
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
            s = float(bias.sel(dataset=d, model=m, phase=phase))
            g = float(gross.sel(dataset=d, model=m, phase=phase))
            ax.barh(yy, a, height=0.72, color=colors[m], alpha=0.85, gid=f"mae:{m}")
            if m not in shown:
                shown.append(m)
            ax.plot(b, yy, "D", ms=4.5, mfc="white", mec=_REF, mew=0.9, zorder=3, clip_on=False)
            # The sign: a model that is late is not only "off by 0.15 s".
            ax.plot(s, yy, "|", ms=11, mew=2.2, color=_REF, zorder=4, gid=f"bias:{m}")
            ax.text(0.995, yy, f"bias {_fmt_signed_s(s)} · {_fmt_pct(g)} gross · n {k}", transform=ytr,
                    va="center", ha="right", fontsize=7, color="#333333")
        ax.axvline(0, color="#777777", lw=0.8, zorder=2)
        ax.set_xlim(left, right)
        # Ticks (and grid lines) only under the bars, not under the text.
        ax.set_xticks([t for t in MaxNLocator(6).tick_values(xmin, xmax) if xmin - 1e-12 <= t <= xmax * 1.1])
        ax.set_xlabel("onset error (s)   bias: early < 0 < late")
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
        Line2D([], [], marker="|", ms=11, mew=2.2, ls="none", color=_REF,
               label="|: bias, the signed\nmedian residual"),
    ]
    legend = fig.legend(handles=handles, loc="outside right upper", ncols=_legend_cols(len(handles), 20))
    _footnote(fig, [cap_note])
    _caption(
        fig,
        f"Onset time at the shared threshold {_fmt_theta(opts.threshold)}. Gross: share of residuals beyond "
        f"the detection tolerance {opts.tol:g} s (pairs matched within {opts.residual_tol:g} s); a MAE far "
        "above the median is that tail, a bias far from 0 a late or early picker.",
        legend,
    )
    return fig


# ---------------------------------------------------------------- residuals

def _residual_bins(
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
    mods, cap_note = _cap_models(ds, dsets, mods, _MAX_MODELS["residuals"])
    colors = model_colors(_names(ds.model.values))
    all_d, all_m = _names(ds.dataset.values), _names(ds.model.values)
    pd_ = ds.pair_dataset.values
    pm, pp = ds.pair_model.values, ds.pair_phase.values
    res, conf = ds.residual.values, ds.pair_conf.values
    keep = (conf >= opts.threshold) & np.isin(pd_, [all_d.index(d) for d in dsets])
    rows = [m for m in mods if np.any(keep & (pm == all_m.index(m)))]
    # Models that ran on a selected dataset but left no pair there still deserve a row.
    rows = [m for m in mods if m in rows or any(_present(ds, d, m) for d in dsets)]
    drawn = keep & np.isin(pm, [all_m.index(m) for m in rows])
    edges, width = _residual_bins(res[drawn], tol=opts.tol, residual_tol=opts.residual_tol, bin_width=bin_width)

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
                # Pairs beyond the view are counted in the end bins (and said so).
                off = int(np.sum((e < edges[0]) | (e > edges[-1])))
                counts, _ = np.histogram(np.clip(e, edges[0], edges[-1]), bins=edges)
                ymax = max(ymax, counts.max())
                ax.stairs(counts, edges, fill=True, color=colors[m], alpha=0.75, gid=f"residuals:{m}")
                ax.stairs(counts, edges, color=colors[m], lw=0.8)
                med = float(np.median(e))
                gross = float(np.mean(np.abs(e) > opts.tol))
                ax.axvline(med, color=_REF, lw=1.1, ls="-")
                off_text = f" · {off} off-scale, in the end bins" if off else ""
                ax.text(0.99, 0.95, f"n {e.size} · median {_fmt_signed_s(med)}\n"
                        f"{_fmt_pct(gross)} beyond ±{opts.tol:g} s{off_text}",
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
    fig.supylabel(f"pairs per {_fmt_s(width)} bin" + (" (log scale)" if log else ""), fontsize=8.5)
    pooled = f"{len(dsets)} datasets pooled" if len(dsets) > 1 else f"dataset {dsets[0]}"
    _footnote(fig, [cap_note])
    _caption(
        fig,
        f"Onset residuals of picks with conf ≥ {_fmt_theta(opts.threshold)}, {pooled}. Dashed: ±{opts.tol:g} s "
        "(detection tolerance; beyond it: gross errors); solid: median (bias, early < 0 < late).",
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
    mods, cap_note = _cap_models(ds, dsets, mods, _MAX_MODELS["reliability"])
    colors = model_colors(_names(ds.model.values))
    cal_n = ds.cal_n.sum("station").sel(dataset=dsets, model=mods).load() if mods else None
    n_ref = _n_ref(ds)
    # Marker area grows with the picks behind the point, on one scale for the whole figure.
    n_max = max(float(cal_n.max()) if mods else 1.0, 1.0)

    def area(count):
        return 6 + 230 * np.sqrt(np.asarray(count, dtype=float) / n_max)

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
                # 95 % Wilson interval of each bin's share: a jump on 3 picks is noise, on 300 it is not.
                k, nn = yv[ok] * nb[ok], nb[ok]
                z = 1.96
                centre = (k + z * z / 2) / (nn + z * z)
                half = z * np.sqrt(k * (nn - k) / nn + z * z / 4) / (nn + z * z)
                ax.vlines(x[ok], centre - half, centre + half, color=c, lw=1.0, alpha=0.45, zorder=2,
                          gid=f"interval:{m}")
                ax.scatter(x[ok], yv[ok], s=area(nb[ok]), color=c, edgecolor=_REF,
                           linewidth=0.4, zorder=3, alpha=0.9)
            ax.set_xlim(-0.04, 1.04)
            ax.set_ylim(-0.04, 1.04)
            ax.set_xticks(np.linspace(0, 1, 6))
            ax.set_yticks(np.linspace(0, 1, 6))
            ax.set_aspect("equal")
            ax.set_xlabel("confidence (mean of the bin)")
            ax.set_ylabel(f"{obs_name}: share of the bin's picks matched")
            ax.set_title(f"{d} · {phase}\n{total:,} picks ≥ floor {opts.floor:g} · {n} arrivals")
            if total:
                ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), title=f"{ece_name}", title_fontsize=7.5,
                          fontsize=7, labelspacing=0.3, handlelength=1.2, borderaxespad=0.0, alignment="left")
    # The key to the marker size: round counts within the figure's range.
    keys = [v for v in (1, 10, 100, 1000, 10_000, 100_000, 1_000_000) if v <= n_max]
    if n_max > keys[-1] * 2:
        keys.append(int(float(f"{n_max:.1g}")))
    keys = keys[-4:]
    size_handles = [
        Line2D([], [], marker="o", ls="none", color="#bbbbbb", mec=_REF, mew=0.4,
               ms=float(np.sqrt(area(v))), label=f"{v:,}")
        for v in keys
    ]
    size_handles.append(Line2D([], [], color="#888888", lw=1.0, label="95 % interval"))
    # The small print goes with the key, below the panels (one bottom block for constrained layout).
    small_print = [
        cap_note,
        "" if ex else f"{obs_name} is a lower bound (unmarked arrivals): curves below the diagonal are expected",
    ]
    title = "picks in the bin (marker area)" + "".join(f"\n{t}" for t in small_print if t)
    fig.legend(handles=size_handles, loc="outside lower center", ncols=len(size_handles),
               title=title, title_fontsize=7.5, fontsize=7.5, columnspacing=1.6)
    _caption(
        fig,
        f"Reliability: do picks of confidence c match an arrival a fraction c of the time? Dashed: perfect "
        f"calibration; dotted: the shared threshold {_fmt_theta(opts.threshold)}.",
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
    mods, cap_note = _cap_models(ds, dsets, mods, _MAX_MODELS["stations"])
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
        _footnote(fig, [cap_note])
        _caption(fig, f"Per-station recall at shared threshold {_fmt_theta(opts.threshold)}: no scored station")
        return fig
    grid = np.array([r[5] for r in shown], dtype=float)
    cmap = mpl.colormaps["viridis"].with_extremes(bad=_NODATA)
    # The colour scale spans the recalls shown (rounded out to 0.05), not 0-1: contrast where the rows differ.
    finite = grid[np.isfinite(grid)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    vmin, vmax = np.floor(lo * 20 + 1e-9) / 20, np.ceil(hi * 20 - 1e-9) / 20
    if vmax - vmin < 0.1:
        vmin, vmax = max(0.0, vmax - 0.1), max(vmax, 0.1)
    norm = mpl.colors.Normalize(vmin=vmin, vmax=vmax)
    im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
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
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6.5, color=_text_color(cmap(norm(v))))
            else:
                ax.text(j, i, "–", ha="center", va="center", fontsize=7, color="#777777")
    cb = fig.colorbar(im, ax=ax, shrink=min(1.0, 6 / max(len(shown), 6) + 0.35), aspect=25, pad=0.02)
    cb.set_label(f"recall at threshold {_fmt_theta(opts.threshold)} (P + S)")
    ax.set_ylabel("station" + (" · dataset" if multi else "") + "  (reference arrivals)")
    nodata = "grey: model not run on that dataset" if np.isnan(grid).any() else ""
    _footnote(fig, [cap_note, "Row label: reference arrivals at the station (a recall on 2 arrivals is not "
                    "a recall on 200)" + (f"; {nodata}" if nodata else "") + "."])
    _caption(
        fig,
        f"Per-station recall at the shared threshold {_fmt_theta(opts.threshold)}, P and S together — {cap}"
        + (" (sorted by the mean over the models that ran)." if total > 1 else "."),
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
