"""Recall over time (SPEC §10): station outages, network changes, a model degrading after a mainshock.

:func:`over_time_rows` selects the numbers (per dataset and phase: recall per
model and time bin at the shared threshold, and the arrivals per bin);
:func:`recall_over_time` draws them, one column per (dataset, phase): recall
lines per model above, the reference arrivals per bin as bars beneath.
Only results scored with ``time_bin`` have this figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from .recall_axis import bar_style, draw_recall_panels, recall_columns
from .selection import options_of
from .style import styled

__all__ = ["OverTimePanel", "over_time_rows", "recall_over_time", "has_time_bins"]


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


def over_time_rows(ds: xr.Dataset, *, models: Sequence[str] | None = None) -> tuple[list[OverTimePanel], str]:
    """One panel per (dataset, phase) with arrivals; models capped to :data:`MAX_MODELS` (and the note).

    Examples
    --------
    >>> panels, note = over_time_rows(ds)  # doctest: +SKIP
    >>> panels[0].recall["sharp"][:3]  # doctest: +SKIP
    """
    columns, note = recall_columns(ds, n_reference="n_reference_over_time", recall="recall_over_time",
                                   figure="recall_over_time", models=models)
    starts = np.asarray(ds["time_bin"].values)
    panels = [OverTimePanel(d, ph, starts, n, recall) for d, ph, n, recall in columns]
    return panels, note


@styled
def recall_over_time(ds: xr.Dataset, *, models: Sequence[str] | None = None) -> Figure:
    """Recall per time bin at the shared threshold, one line per model; arrivals per bin beneath.

    Parameters
    ----------
    ds
        Results scored with ``time_bin``.
    models
        Which models (default: all, capped to the best few).

    Returns
    -------
    matplotlib.figure.Figure
    """
    panels, note = over_time_rows(ds, models=models)

    def bars(axes, panel, x):
        widths = np.diff(np.r_[x.astype("int64"), _end(x)]).astype("timedelta64[ns]") * 0.9
        axes.bar(x, panel.n_reference, width=widths, align="edge", **bar_style())

    return draw_recall_panels(
        ds, panels, x_of=lambda panel: panel.starts, bars=bars, markersize=2.5,
        empty="no reference arrival in any time bin",
        describe=lambda theta: (f"Recall over time at the shared threshold {theta}, per time bin of the arrivals "
                                f"({options_of(ds).time_bin}); bars: reference arrivals per bin."),
        notes=[note, "A gap in a line: no arrival in that bin."])

def _end(starts: np.ndarray) -> int:
    """The end of the last bin, as int64 ns: one more step of the bins before it (one day for a single bin)."""
    s = starts.astype("int64")
    return int(s[-1] + (s[-1] - s[-2] if s.size > 1 else 86_400 * 10**9))
