"""Recall over time (SPEC §10): station outages, network changes, a model degrading after a mainshock.

:func:`over_time_rows` selects the numbers (per dataset and phase: recall per
model and time bin at the shared threshold, the arrivals per bin, each bin's
start and end, and how much of the first and last bin the scored span
covers); :func:`recall_over_time` draws them, one column per (dataset,
phase): each model's recall as a step spanning each bin ``[start, end)``
above, the reference arrivals per bin as bars of the bin's width beneath.
Only results scored with ``time_bin`` have this figure.

A bin is drawn as the stretch of time it is, not as a point at its start: a
step over ``[start, end)`` for recall and a bar of the same width for the
arrivals.  The first and last bins usually reach beyond the scored span (the
bins are anchored at the calendar or the epoch, the data are not): a bin the
span covers less than :data:`PARTIAL` of is hatched and the footnote says how
much of it was scored, so that a bin of two scored hours does not read as a
day.  Bins with fewer than :data:`~.style.FEW_ARRIVALS` arrivals are drawn
faint, as in :func:`~.by_group.recall_by_group`.  A bin with no value on either
side (a step without risers, a few pixels wide in a long run) also gets a short
dash at its middle, so that it does not vanish.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .recall_axis import bar_style, draw_recall_panels, recall_columns
from .selection import options_of
from .style import FEW_ARRIVALS, few_note, fmt_pct, styled

__all__ = ["OverTimePanel", "over_time_rows", "recall_over_time", "has_time_bins", "bin_ends", "bin_width_words",
           "scored_span", "PARTIAL"]

#: A first or last bin of which the scored span covers less than this share is marked partial (hatched).
PARTIAL = 0.99


def has_time_bins(ds: xr.Dataset) -> bool:
    """Whether ``ds`` was scored with ``time_bin`` (and so has this figure)."""
    return "recall_over_time" in ds


@dataclass(frozen=True)
class OverTimePanel:
    """The numbers of one (dataset, phase) column."""

    dataset: str
    phase: str
    starts: np.ndarray  # datetime64[ns], the bins' starts
    n_reference: np.ndarray  # (G,) arrivals per bin
    recall: dict[str, np.ndarray]  # model -> (G,) recall per bin (NaN: no arrival in the bin)
    #: (G,) datetime64[ns], each bin's end (the next bin's start; for the last, its start plus one bin).
    ends: np.ndarray
    #: (G,) the share of each bin inside the run's scored span (1.0 inside; NaN when the store keeps no span).
    covered: np.ndarray
    #: (G,) whether a bin has fewer than ``min_arrivals`` reference arrivals (drawn faint).
    few: np.ndarray

    @property
    def partial(self) -> np.ndarray:
        """(G,) bins the scored span covers less than :data:`PARTIAL` of (hatched)."""
        return np.asarray(self.covered < PARTIAL)  # NaN compares False: no span, nothing marked


def bin_ends(starts: np.ndarray, time_bin: str) -> np.ndarray:
    """Each bin's end (datetime64[ns]): the next bin's start, and one bin of ``time_bin`` after the last start
    (a calendar month, a year: its own length, not the length of the bin before it).

    >>> bin_ends(np.array(["2024-01-01", "2024-02-01"], dtype="datetime64[ns]"), "MS").astype(str).tolist()
    ['2024-02-01T00:00:00.000000000', '2024-03-01T00:00:00.000000000']
    """
    s = np.asarray(starts, dtype="datetime64[ns]")
    if not s.size:
        return s
    last = pd.Timestamp(s[-1]) + pd.tseries.frequencies.to_offset(time_bin)
    return np.r_[s[1:], np.datetime64(last.as_unit("ns").to_datetime64(), "ns")]


def bin_width_words(time_bin: str) -> str:
    """The bin's width in plain words, for the time axis.

    >>> [bin_width_words(b) for b in ("1h", "7D", "15min", "MS", "YS", "W-MON")]
    ['1 hour', '7 days', '15 minutes', 'a calendar month', 'a calendar year', 'a week (from Monday)']
    """
    offset = pd.tseries.frequencies.to_offset(time_bin)
    try:
        ns = int(pd.Timedelta(offset).value)
    except (TypeError, ValueError):
        ns = 0
    if ns > 0:
        for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60), ("second", 1)):
            count = ns / (size * 10**9)
            if count >= 1 and count == int(count):
                return f"{int(count)} {unit}" + ("s" if count != 1 else "")
        return f"{ns / 1e9:g} s"
    names = {"MonthBegin": "a calendar month", "MonthEnd": "a calendar month", "YearBegin": "a calendar year",
             "YearEnd": "a calendar year", "QuarterBegin": "a calendar quarter", "QuarterEnd": "a calendar quarter"}
    kind = type(offset).__name__
    if kind == "Week":
        day = getattr(offset, "weekday", None)
        days = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
        return "a week" + (f" (from {days[day]})" if day is not None else "")
    return names.get(kind, time_bin)


def scored_span(ds: xr.Dataset) -> tuple[np.datetime64, np.datetime64] | None:
    """The run's scored span (SPEC §2, over every dataset and stretch of ``attrs["extent"]``), or None when
    the store keeps none."""
    extent: Any = ds.attrs.get("extent")
    if isinstance(extent, str):
        extent = json.loads(extent)
    if not isinstance(extent, dict):
        return None
    try:
        spans = [s["scored"] for stretches in extent["datasets"].values() for s in stretches]
    except (TypeError, KeyError):
        return None
    if not spans:
        return None
    lo, hi = min(int(s[0]) for s in spans), max(int(s[1]) for s in spans)
    return np.datetime64(lo, "ns"), np.datetime64(hi, "ns")


def _covered(starts: np.ndarray, ends: np.ndarray, span: tuple[np.datetime64, np.datetime64] | None) -> np.ndarray:
    """The share of each bin inside ``span`` (NaN without one)."""
    if span is None:
        return np.full(starts.size, np.nan)
    s, e = starts.astype("int64"), ends.astype("int64")
    lo, hi = int(span[0].astype("int64")), int(span[1].astype("int64"))
    inside = np.minimum(e, hi) - np.maximum(s, lo)
    return np.clip(inside / np.maximum(e - s, 1), 0.0, 1.0)


def over_time_rows(
    ds: xr.Dataset, *, models: Sequence[str] | None = None, min_arrivals: int = FEW_ARRIVALS
) -> tuple[list[OverTimePanel], str]:
    """One panel per (dataset, phase) with arrivals; models capped to :data:`MAX_MODELS` (and the note).

    Examples
    --------
    >>> panels, note = over_time_rows(ds)  # ds: the demo results, scored with time_bin="2h"
    >>> p = panels[0]
    >>> p.dataset, p.phase, p.starts.astype("datetime64[h]").astype(str).tolist()
    ('aftershocks_north', 'P', ['2024-03-01T00', '2024-03-01T02', '2024-03-01T04', '2024-03-01T06'])
    >>> p.n_reference.tolist(), p.recall["sharp"].round(2).tolist(), p.few.tolist()
    ([67, 34, 35, 0], [0.82, 0.82, 0.86, nan], [False, False, False, True])
    """
    columns, note = recall_columns(ds, n_reference="n_reference_over_time", recall="recall_over_time",
                                   figure="recall_over_time", models=models)
    starts = np.asarray(ds["time_bin"].values, dtype="datetime64[ns]")
    ends = bin_ends(starts, str(options_of(ds).time_bin))
    covered = _covered(starts, ends, scored_span(ds))
    panels = [OverTimePanel(d, ph, starts, n, recall, ends=ends, covered=covered, few=n < int(min_arrivals))
              for d, ph, n, recall in columns]
    return panels, note


def _lone(values: np.ndarray) -> np.ndarray:
    """Bins with a value and none in the bins on either side.

    >>> _lone(np.array([0.5, np.nan, 0.7, 0.8, np.nan])).tolist()
    [True, False, False, False, False]
    """
    ok = np.isfinite(values)
    before = np.r_[False, ok[:-1]]
    after = np.r_[ok[1:], False]
    return ok & ~before & ~after


def _draw_recall(top: Axes, panel: OverTimePanel, x: np.ndarray, *, colors: dict[str, str],
                 styles: dict[str, Any], markers: dict[str, str]) -> dict[str, Artist]:
    """Each model's recall as a step over each bin; faint where the bin has few arrivals; partial bins shaded."""
    edges = np.r_[panel.starts, panel.ends[-1:]]
    middles = panel.starts + (panel.ends - panel.starts) / 2
    handles: dict[str, Artist] = {}
    for model, recall in panel.recall.items():
        c, ls = colors[model], styles[model]
        top.stairs(np.where(panel.few, np.nan, recall), edges, baseline=None, color=c, linestyle=ls,
                   linewidth=1.4, gid=f"recall:{model}")
        if panel.few.any():
            top.stairs(np.where(panel.few, recall, np.nan), edges, baseline=None, color=c, linestyle=ls,
                       linewidth=1.1, alpha=0.4, gid=f"recall_few:{model}")
        # A bin with no value on either side is a step without risers: at a few pixels wide it would vanish,
        # so it also gets a short dash at its middle (the middle, not the start: the dash stands for the bin).
        lone = _lone(recall)
        for few, alpha, suffix in ((False, 1.0, ""), (True, 0.4, "_few")):
            at = np.flatnonzero(lone & (panel.few == few))
            if at.size:
                top.plot(middles[at], recall[at], linestyle="none", marker="_", markersize=7, mew=1.6, color=c,
                         alpha=alpha, gid=f"recall_lone{suffix}:{model}")
        handles[model] = Line2D([], [], color=c, linestyle=ls, linewidth=1.4)
    for i in np.flatnonzero(panel.partial):
        top.axvspan(panel.starts[i], panel.ends[i], facecolor="none", edgecolor="#d4d4d4", hatch="////",
                    linewidth=0, zorder=0, gid=f"partial:{i}")
    return handles


def _draw_bars(bottom: Axes, panel: OverTimePanel, x: np.ndarray) -> None:
    """The arrivals per bin: one bar per bin, as wide as the bin; partial bins hatched."""
    widths = panel.ends - panel.starts
    # One bar call per kind (a year of hourly bins is 8,760 bars): whole bins, then the partial ones hatched.
    for few in (False, True):
        idx = np.flatnonzero(((panel.n_reference > 0) | panel.partial) & (panel.partial == few))
        if not idx.size:
            continue
        bars = bottom.bar(panel.starts[idx], panel.n_reference[idx], width=widths[idx], align="edge",
                          **bar_style(few=few))
        for i, patch in zip(idx, bars.patches):
            patch.set_gid(f"arrivals:{i}")
    bottom.set_xlim(panel.starts[0], panel.ends[-1])


def _partial_note(panels: Sequence[OverTimePanel], span: tuple[np.datetime64, np.datetime64] | None) -> str:
    """What the hatched bins are, with how much of each was scored."""
    if not panels or span is None:
        return ""
    p = panels[0]  # the bins and the span are the run's: the same in every panel
    last = p.starts.size - 1
    parts = []
    for i in sorted({0, last}):
        if p.partial[i]:
            which = "the only" if last == 0 else "first" if i == 0 else "last"
            parts.append(f"{which} bin ({str(p.starts[i])[:16].replace('T', ' ')}) {fmt_pct(p.covered[i])} scored")
    if not parts:
        return ""
    return ("Hatched: bins the scored span covers only in part — " + "; ".join(parts)
            + " (their counts cover less time).")


@styled
def recall_over_time(
    ds: xr.Dataset, *, models: Sequence[str] | None = None, min_arrivals: int = FEW_ARRIVALS
) -> Figure:
    """Recall per time bin at the shared threshold, a step per model over each bin; arrivals per bin beneath.

    Each bin is drawn over ``[start, end)``: recall as a step as wide as the bin, the arrivals as a bar as
    wide as the bin.  A first or last bin the scored span covers only in part is hatched (the footnote says
    how much of it was scored); bins with fewer than ``min_arrivals`` arrivals are faint.  The time axis says
    the bins' width.

    Parameters
    ----------
    ds
        Results scored with ``time_bin``.
    models
        Which models (default: all, capped to the best few).
    min_arrivals
        Bins with fewer reference arrivals are drawn faint (default :data:`~.style.FEW_ARRIVALS`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    panels, note = over_time_rows(ds, models=models, min_arrivals=min_arrivals)
    time_bin = str(options_of(ds).time_bin)
    words = bin_width_words(time_bin)
    any_few = any(bool((p.few & (p.n_reference > 0)).any()) for p in panels)
    partial = _partial_note(panels, scored_span(ds))
    extra: list[Artist] = []
    if any_few:
        extra.append(Line2D([], [], color="#555555", alpha=0.4, linewidth=1.1,
                            label=f"faint: bin of < {min_arrivals}\narrivals"))
    if partial:
        extra.append(Patch(label="partial bin (hatched)", **bar_style(few=True)))
    return draw_recall_panels(
        ds, panels, x_of=lambda panel: panel.starts, recall=_draw_recall, bars=_draw_bars,
        empty="no reference arrival in any time bin", extra_handles=extra,
        xlabel=f"time (UTC), bins of {words} (time_bin {time_bin})",
        describe=lambda theta: (f"Recall over time at the shared threshold {theta}, per bin of {words} of the "
                                "arrivals' times; bars: reference arrivals per bin."),
        notes=[note, partial,
               (f"Faint steps: bins with {few_note(min_arrivals)}." if any_few else ""),
               "A gap in a step line: no arrival in that bin."])
