"""How the figures look: their layout, colours, line styles, the rc style, number formats, captions and footnotes.

Every figure is made, with its panels, by :func:`panel_grid` (the one place a
``Figure`` is created), draws under :data:`STYLE` (through :func:`styled`), gives each
model the colour of :func:`model_colors` and the line style of
:func:`model_styles` (the same in every figure), shows at most
:data:`MAX_MODELS` models, writes rates with :func:`fmt_pct` and times with
:func:`fmt_signed_s`, and says what it shows in a :func:`caption` (above)
and a :func:`footnote` (below).

Examples
--------
>>> fmt_pct(0.0004), fmt_signed_s(-0.0025)
('<0.1 %', '−2.5 ms')
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, ParamSpec, TypeVar

import matplotlib as mpl
import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.textpath import TextToPath

from ..verdict import FEW_ARRIVALS as _FEW_ARRIVALS

__all__ = [
    "PALETTE",
    "MAX_MODELS",
    "FEW_ARRIVALS",
    "few_note",
    "MARKERS",
    "model_markers",
    "lb_label",
    "REF",
    "NODATA",
    "STYLE",
    "DASHES",
    "model_colors",
    "model_styles",
    "styled",
    "caption",
    "footnote",
    "fmt_pct",
    "fmt_signed_s",
    "fmt_s",
    "fmt_theta",
    "lb_note",
    "model_handles",
    "legend_cols",
    "text_color",
    "panel_grid",
    "model_legend",
    "count_label",
    "empty_note",
]

P = ParamSpec("P")
R = TypeVar("R")

# A qualitative palette of 14 colours that stay apart on white.  Grey is left
# out on purpose: grey and black are kept for reference lines (the diagonal,
# the budget, ±tol) and for "no data".
PALETTE: tuple[str, ...] = (
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
MAX_MODELS: dict[str, int] = {
    "recall_treatments": 16,
    "operating_curves": 10,
    "timing": 16,
    "residuals": 10,
    "reliability": 8,
    "stations": 24,
}
#: Fewer reference arrivals than this and a recall is drawn de-emphasised (hollow marks, lighter bars) or set
#: apart (the stations figure pools such stations), as the verdict warns (declared there: printing needs no
#: matplotlib).
FEW_ARRIVALS = _FEW_ARRIVALS
REF = "#222222"  # reference lines
NODATA = "#d9d9d9"  # cells / notes for "not scored"
_TEXT2PATH = TextToPath()

STYLE: dict[Any, Any] = {  # (keys: rcParams names)
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
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


#: Line styles that tell apart models drawn in similar places (and models that share a colour).
DASHES: tuple[Any, ...] = ("-", (0, (5.0, 1.6)), (0, (1.2, 1.3)), (0, (6.0, 1.5, 1.5, 1.5)))


def model_styles(models: Iterable[str]) -> dict[str, Any]:
    """One line style per model, like :func:`model_colors` (sorted names), so that models with
    close curves, or the same colour beyond 14 models, stay apart.

    >>> model_styles(["b", "a"])["a"]
    '-'
    """
    names = sorted({str(m) for m in models})
    return {name: DASHES[i % len(DASHES)] for i, name in enumerate(names)}


#: Marks that tell models apart where colour and line style are not enough (10 models, print in grey): one per
#: model, like :func:`model_styles`.  ``o`` and ``*`` are left out: the operating curves mark the shared and the
#: best threshold with them.
MARKERS: tuple[str, ...] = ("s", "^", "D", "v", "P", "X", "<", ">", "h", "p")


def model_markers(models: Iterable[str]) -> dict[str, str]:
    """One marker per model, like :func:`model_colors` (sorted names, repeating beyond 10 models).

    >>> model_markers(["b", "a"])
    {'a': 's', 'b': '^'}
    """
    names = sorted({str(m) for m in models})
    return {name: MARKERS[i % len(MARKERS)] for i, name in enumerate(names)}


def few_note(k: int = FEW_ARRIVALS) -> str:
    """How a figure says what "few arrivals" means."""
    return f"fewer than {k} reference arrivals: one arrival moves recall by more than {1 / k:.1f}"


def lb_label(words: str, name: str, *, exhaustive: bool) -> str:
    r"""An axis label in plain words; with a non-exhaustive reference it says it is a lower bound, with the
    variable's name (SPEC §4), on a second line.

    >>> lb_label("observed share matched", "observed_lb", exhaustive=False)
    'observed share matched\n(a lower bound: observed_lb)'
    >>> lb_label("observed share matched", "observed", exhaustive=True)
    'observed share matched'
    """
    return words if exhaustive else f"{words}\n(a lower bound: {name})"


def styled(func: Callable[P, R]) -> Callable[P, R]:
    """Build the figure under the package style without touching global rcParams."""

    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with mpl.rc_context(STYLE):
            return func(*args, **kwargs)

    wrapper.__name__ = func.__name__
    wrapper.__qualname__ = func.__qualname__
    wrapper.__doc__ = func.__doc__
    wrapper.__module__ = func.__module__
    wrapper.__wrapped__ = func  # type: ignore[attr-defined]
    return wrapper


def caption(fig: Figure, text: str, legend: Any = None) -> None:
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


def footnote(fig: Figure, notes: Sequence[str]) -> None:
    """Small print under the figure (what is left out, what a missing mark means), laid out by
    constrained layout so that it stays on the canvas."""
    notes = [n for n in notes if n]
    if notes:
        fig.supxlabel("\n".join(notes), x=0.005, ha="left", fontsize=7.5, color="#444444")


def fmt_pct(fraction: float) -> str:
    """A rate as a percentage that never reads 0 or 100 when it is not.

    >>> fmt_pct(0.0), fmt_pct(0.0004), fmt_pct(0.0123), fmt_pct(0.9996), fmt_pct(1.0)
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


def fmt_signed_s(seconds: float) -> str:
    """A signed time: ms below 1 s (one decimal below 10 ms), no sign on zero, a true minus sign.

    >>> fmt_signed_s(0.153), fmt_signed_s(-0.0025), fmt_signed_s(-1e-7), fmt_signed_s(1.25)
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


def fmt_s(seconds: float) -> str:
    """An unsigned time, in ms below 1 s."""
    return fmt_signed_s(abs(float(seconds))).lstrip("+")


def fmt_theta(theta: float | Mapping[str, float]) -> str:
    """A threshold as written in captions and legends: ``0.3``; one per phase (SPEC §2): ``P 0.5 / S 0.3``."""
    if isinstance(theta, Mapping):
        return " / ".join(f"{phase} {float(value):g}" for phase, value in theta.items())
    return f"{theta:g}"


def lb_note(exhaustive: bool) -> str:
    """What ``_lb`` means, unless the Dataset was scored with ``exhaustive=True``."""
    return "" if exhaustive else " — _lb: lower bound (the reference does not mark every arrival)"


def model_handles(models: Sequence[str], colors: Mapping[str, str], *, kind: str = "patch") -> list[Artist]:
    """Legend handles, one per model: a patch (bars) or a line."""
    if kind == "line":
        return [Line2D([], [], color=colors[m], lw=2, label=m) for m in models]
    return [Patch(facecolor=colors[m], edgecolor="none", label=m) for m in models]


def legend_cols(n: int, per_col: int = 16) -> int:
    """Columns of a legend of ``n`` entries, at most ``per_col`` a column."""
    return max(1, int(np.ceil(n / per_col)))


def text_color(rgba: Any) -> str:
    """Black or white, whichever reads better on the colour ``rgba``."""
    r, g, b = to_rgb(rgba)
    return "black" if (0.299 * r + 0.587 * g + 0.114 * b) > 0.55 else "white"


def count_label(value: float, _pos: Any = None) -> str:
    """Tick label for a count axis: 1, 20, 500, 2k, 10k."""
    if value >= 1000:
        return f"{value / 1000:g}k"
    return f"{value:g}"


def empty_note(ax: Axes, text: str) -> None:
    """An axes that only says ``text`` (no ticks, no spines)."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="#555555", fontsize=8.5)
    ax.set_xticks([])
    ax.set_yticks([])
    for side in ("left", "bottom"):
        ax.spines[side].set_visible(False)


Share = bool | Literal["all", "row", "col"]


def panel_grid(
    *,
    rows: int | None = None,
    cols: int | None = None,
    panels: int | None = None,
    per_row: int | None = None,
    sharex: Share = False,
    sharey: Share = False,
    inner_labels: bool = False,
    height_ratios: Sequence[float] | None = None,
    width: float | None = None,
    col_width: float | None = None,
    max_width: float = 16.0,
    height: float | None = None,
    row_height: float | None = None,
    extra: float = 0.0,
    empty: str | None = None,
) -> tuple[Figure, np.ndarray]:
    """The figure and its panels' axes: every figure of the package is made here.

    A grid of ``rows`` × ``cols`` axes, or ``panels`` axes in reading order, ``per_row`` a row (default: one
    row), the cells after the last panel left empty.  The figure is a plain
    :class:`~matplotlib.figure.Figure` (no pyplot) with constrained layout.

    Parameters
    ----------
    rows, cols : int, optional
        The grid (default 1 each); not with ``panels``.  0 makes a figure without panels (see ``empty``).
    panels : int, optional
        How many axes, laid out in reading order, ``per_row`` a row at most.
    per_row : int, optional
        Panels per row, at most (default: all in one row).
    sharex, sharey : bool or {"all", "row", "col"}
        Which axes share an axis, as in :meth:`matplotlib.figure.Figure.subplots`: True or ``"all"`` with the
        first axes, ``"row"`` with the first of its row, ``"col"`` with the first of its column.
    inner_labels : bool
        Keep the tick labels of every shared axis.  By default, as :meth:`~matplotlib.figure.Figure.subplots`
        does (a full grid is made by it), they are only on the outer panels; ``panels`` that leave cells empty
        and share an axis need ``inner_labels=True``.
    height_ratios : sequence of float, optional
        The rows' relative heights.
    width : float, optional
        The figure's width in inches; or
    col_width : float, optional
        inches per column, the figure at most ``max_width`` (16 in) wide.
    height : float, optional
        The figure's height in inches; or
    row_height : float, optional
        inches per row, plus ``extra``.
    extra : float
        Inches added to ``rows * row_height`` (the caption's and footnote's room).
    empty : str, optional
        Without a panel (``panels``, ``rows`` or ``cols`` 0), one axes across the figure says this.

    Returns
    -------
    (Figure, numpy.ndarray)
        The figure and its panels' axes, ``rows × cols`` (with ``panels``: None in the cells after the last
        panel; without a panel, shape ``(0, 0)``).  The axes are made row by row.

    Examples
    --------
    >>> fig, axes = panel_grid(rows=2, cols=2, sharex=True, col_width=3.0, row_height=2.5, extra=0.5)
    >>> axes.shape, fig.get_size_inches().tolist(), axes[1, 0].get_shared_x_axes().joined(axes[0, 0], axes[1, 0])
    ((2, 2), [6.0, 5.5], True)
    >>> fig, axes = panel_grid(panels=5, per_row=4, sharey=True, inner_labels=True, col_width=4.0, row_height=3.0)
    >>> axes.shape, [ax is None for ax in axes.flat], fig.get_size_inches().tolist()  # at most 16 in wide
    ((2, 4), [False, False, False, False, False, True, True, True], [16.0, 6.0])
    >>> fig, axes = panel_grid(panels=0, col_width=3.6, height=4.0, empty="no reference arrival")
    >>> axes.shape, [t.get_text() for t in fig.axes[0].texts]
    ((0, 0), ['no reference arrival'])
    """
    if panels is not None:
        if rows is not None or cols is not None:
            raise ValueError("panel_grid: give rows and cols, or panels (and per_row), not both")
        places = max(panels, 1)
        cols = places if per_row is None else min(places, per_row)
        rows = -(-places // cols)
    else:
        rows = 1 if rows is None else rows
        cols = 1 if cols is None else cols
    none = panels == 0 if panels is not None else rows == 0 or cols == 0
    if none and empty is None:
        raise ValueError("panel_grid: a figure without panels needs empty= (what it says instead)")
    n_rows, n_cols = max(rows, 1), max(cols, 1)
    fig_w = min(col_width * n_cols, max_width) if col_width is not None else width
    fig_h = row_height * n_rows + extra if row_height is not None else height
    if fig_w is None or fig_h is None or None not in (width, col_width) or None not in (height, row_height):
        raise ValueError("panel_grid: give width or col_width, and height or row_height")
    fig = Figure(figsize=(fig_w, fig_h), layout="constrained")
    grid = fig.add_gridspec(n_rows, n_cols, height_ratios=height_ratios)
    if none:
        empty_note(fig.add_subplot(grid[:, :]), str(empty))
        return fig, np.empty((0, 0), dtype=object)
    n = rows * cols if panels is None else panels
    if n == rows * cols and not inner_labels:
        return fig, grid.subplots(sharex=sharex, sharey=sharey, squeeze=False)  # what Figure.subplots does
    if not inner_labels and (sharex or sharey):
        raise ValueError("panel_grid: panels that leave cells empty and share an axis need inner_labels=True")
    axes = np.full((rows, cols), None, dtype=object)

    def partner(share: Share, r: int, c: int) -> Axes | None:
        """The axes that the one at (r, c) shares with, as Figure.subplots pairs them."""
        mode = "all" if share is True else share
        return {"all": axes[0, 0], "row": axes[r, 0], "col": axes[0, c]}[mode] if mode else None

    for i in range(n):
        r, c = divmod(i, cols)
        axes[r, c] = fig.add_subplot(grid[r, c], sharex=partner(sharex, r, c), sharey=partner(sharey, r, c))
    return fig, axes


def model_legend(fig: Figure, handles: Mapping[str, Artist], extra: Sequence[Artist] = ()) -> Any:
    """The legend of the models drawn (one handle each, in the order drawn) and ``extra`` handles after them,
    right of the panels; None when nothing was drawn."""
    if not handles:
        return None
    return fig.legend([*handles.values(), *extra], [*handles, *(str(h.get_label()) for h in extra)],
                      loc="outside right upper", fontsize=7.5)
