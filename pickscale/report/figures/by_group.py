"""Recall per group of arrivals (SPEC §14): by magnitude bin, network, instrument or site class.

:func:`by_group_rows` selects the numbers (per dataset and phase: recall per
model and group at the shared threshold, and the arrivals per group);
:func:`recall_by_group` draws them, one column per (dataset, phase): recall
lines per model above, the reference arrivals per group as bars beneath.
Only results scored with ``group_by`` have this figure.  There is no
precision per group (a pick that matches nothing has no group).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from .recall_axis import bar_style, draw_recall_panels, recall_columns
from .selection import names_of, options_of
from .style import styled

__all__ = ["ByGroupPanel", "by_group_rows", "recall_by_group", "has_groups"]


def has_groups(ds: xr.Dataset) -> bool:
    """Whether ``ds`` was scored with ``group_by`` (and so has this figure)."""
    return "recall_by_group" in ds


@dataclass(frozen=True)
class ByGroupPanel:
    """The numbers of one (dataset, phase) column."""

    dataset: str
    phase: str
    groups: list[str]  # the group labels, in the run's order
    n_reference: np.ndarray  # (R,) arrivals per group
    recall: dict[str, np.ndarray]  # model -> (R,) recall per group (NaN: no arrival in the group)


def by_group_rows(ds: xr.Dataset, *, models: Sequence[str] | None = None) -> tuple[list[ByGroupPanel], str]:
    """One panel per (dataset, phase) with arrivals; models capped to :data:`MAX_MODELS` (and the note).

    The group ``missing`` is left out when it holds no arrival.

    Examples
    --------
    >>> panels, note = by_group_rows(ds)  # doctest: +SKIP
    >>> panels[0].groups  # doctest: +SKIP
    ['<1', '[1,2)', '[2,3)', '>=3']
    """
    columns, note = recall_columns(ds, n_reference="n_reference_by_group", recall="recall_by_group",
                                   figure="recall_by_group", models=models)
    labels = names_of(ds["group"].values)
    panels = []
    for d, ph, n, recall in columns:
        keep = np.ones(n.size, dtype=bool)
        if labels and labels[-1] == "missing" and n[-1] == 0:
            keep[-1] = False
        panels.append(ByGroupPanel(d, ph, [g for g, k in zip(labels, keep) if k], n[keep],
                                   {m: r[keep] for m, r in recall.items()}))
    return panels, note


@styled
def recall_by_group(ds: xr.Dataset, *, models: Sequence[str] | None = None) -> Figure:
    """Recall per group of arrivals at the shared threshold, one line per model; arrivals per group beneath.

    Parameters
    ----------
    ds
        Results scored with ``group_by``.
    models
        Which models (default: all, capped to the best few).

    Returns
    -------
    matplotlib.figure.Figure
    """
    panels, note = by_group_rows(ds, models=models)

    def bars(axes, panel, x):
        axes.bar(x, panel.n_reference, width=0.8, **bar_style())
        axes.set_xticks(x, panel.groups, fontsize=7.5)

    return draw_recall_panels(
        ds, panels, x_of=lambda panel: np.arange(len(panel.groups)), bars=bars, markersize=3,
        empty="no reference arrival in any group",
        describe=lambda theta: (f"Recall per group of arrivals ({options_of(ds).group_by}) at the shared threshold "
                                f"{theta}; bars: reference arrivals per group."),
        notes=[note, "No precision per group: a pick that matches no arrival has no group."])
