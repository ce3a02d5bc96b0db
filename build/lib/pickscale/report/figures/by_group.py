"""Recall per group of arrivals (SPEC §14): by magnitude bin, network, instrument or site class.

:func:`by_group_rows` selects the numbers (per dataset and phase: recall per
model and group at the shared threshold, and the arrivals per group);
:func:`recall_by_group` draws them, one column per (dataset, phase): recall
per model above, the reference arrivals per group as bars beneath, each with
its count.  Only results scored with ``group_by`` have this figure.  There is
no precision per group (a pick that matches nothing has no group).

How a group is drawn follows what it is:

* the groups of a text column (network, site class) have no order, so each
  model's recall is a point per group, the models side by side, and no line
  joins them (a line would draw a trend between unrelated networks);
* the bins of a numeric column (``magnitude:1,2,3``) are ordered, so a line
  joins each model's points through them; the group ``missing`` is not one
  of the bins and stands apart, a point without a line;
* a group with fewer than :data:`~.style.FEW_ARRIVALS` reference arrivals is
  drawn with hollow marks and a light, hatched bar: its recall moves by more
  than 0.1 with one arrival, and should not look as firm as a group of 500.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ...scope.grouping import MISSING, parse_group_by
from .recall_axis import bar_style, draw_recall_panels, recall_columns
from .selection import names_of, options_of
from .style import FEW_ARRIVALS, REF, few_note, styled

__all__ = ["ByGroupPanel", "by_group_rows", "recall_by_group", "has_groups", "is_ordered"]


def has_groups(ds: xr.Dataset) -> bool:
    """Whether ``ds`` was scored with ``group_by`` (and so has this figure)."""
    return "recall_by_group" in ds


def is_ordered(ds: xr.Dataset) -> bool:
    """Whether the groups are bins of a numeric column (ordered), not the values of a text column."""
    return parse_group_by(options_of(ds).group_by).edges is not None


@dataclass(frozen=True)
class ByGroupPanel:
    """The numbers of one (dataset, phase) column."""

    dataset: str
    phase: str
    groups: list[str]  # the group labels, in the run's order
    n_reference: np.ndarray  # (R,) arrivals per group
    recall: dict[str, np.ndarray]  # model -> (R,) recall per group (NaN: no arrival in the group)
    #: (R,) whether each group is one of an ordered sequence (a numeric column's bins; never ``missing``):
    #: the groups a line may join.
    ordered: np.ndarray
    #: (R,) whether a group has fewer than ``min_arrivals`` reference arrivals (drawn de-emphasised).
    few: np.ndarray


def by_group_rows(
    ds: xr.Dataset, *, models: Sequence[str] | None = None, min_arrivals: int = FEW_ARRIVALS
) -> tuple[list[ByGroupPanel], str]:
    """One panel per (dataset, phase) with arrivals; models capped to :data:`MAX_MODELS` (and the note).

    The group ``missing`` is left out when it holds no arrival, and so is every group of a text column without
    an arrival in that dataset and phase (the bins of a numeric column are all kept: their places are the
    scale).  ``few`` marks the groups with fewer than
    ``min_arrivals`` reference arrivals, ``ordered`` the groups a line may join.

    Examples
    --------
    >>> panels, note = by_group_rows(ds)  # ds: the demo results, scored with group_by="magnitude:1,2,3"
    >>> panels[0].groups, panels[0].ordered.tolist()
    (['<1', '[1,2)', '[2,3)', '>=3'], [True, True, True, True])
    >>> panels[0].n_reference.tolist(), panels[0].recall["sharp"].round(2).tolist()  # recall rises with magnitude
    ([35, 33, 29, 39], [0.49, 0.85, 1.0, 1.0])
    """
    columns, note = recall_columns(ds, n_reference="n_reference_by_group", recall="recall_by_group",
                                   figure="recall_by_group", models=models)
    labels = names_of(ds["group"].values)
    numeric = is_ordered(ds)
    panels = []
    for d, ph, n, recall in columns:
        keep = np.ones(n.size, dtype=bool)
        if not numeric:
            # Text groups have no order and no fixed place: a network without arrivals in this (dataset,
            # phase) is left out of its panel rather than drawn as an empty slot.
            keep = n > 0
        elif labels and labels[-1] == MISSING and n[-1] == 0:
            keep[-1] = False
        groups = [g for g, k in zip(labels, keep) if k]
        ordered = np.array([numeric and g != MISSING for g in groups], dtype=bool)
        panels.append(ByGroupPanel(d, ph, groups, n[keep], {m: r[keep] for m, r in recall.items()},
                                   ordered=ordered, few=n[keep] < int(min_arrivals)))
    return panels, note


def _offsets(k: int) -> np.ndarray:
    """Where each of ``k`` models sits within a group's slot: side by side, so that points at the same
    recall (1.0 is common) do not hide one another."""
    width = min(0.7 / max(k, 1), 0.16)
    return (np.arange(k) - (k - 1) / 2) * width


def _draw_recall(top: Axes, panel: ByGroupPanel, x: np.ndarray, *, colors: dict[str, str],
                 styles: dict[str, Any], markers: dict[str, str]) -> dict[str, Artist]:
    """Each model's recall per group: points side by side (a line only through ordered bins); hollow where
    the group has few arrivals."""
    handles: dict[str, Artist] = {}
    ordered = panel.ordered
    for (model, recall), dx in zip(panel.recall.items(), _offsets(len(panel.recall))):
        c, mk = colors[model], markers[model]
        xs = x + dx
        if ordered.sum() >= 2:
            # Only ordered bins are joined; `missing` (and nothing else) is left off the line.
            top.plot(xs[ordered], np.where(ordered, recall, np.nan)[ordered], color=c, linestyle=styles[model],
                     linewidth=1.1, alpha=0.8, gid=f"recall_line:{model}")
        firm = ~panel.few
        top.plot(xs[firm], recall[firm], linestyle="none", marker=mk, markersize=5, color=c, mec=c,
                 gid=f"recall:{model}")
        if panel.few.any():
            top.plot(xs[panel.few], recall[panel.few], linestyle="none", marker=mk, markersize=5, mfc="white",
                     mec=c, mew=1.0, alpha=0.75, gid=f"recall_few:{model}")
        handles[model] = Line2D([], [], color=c, marker=mk, markersize=5,
                                linestyle=styles[model] if ordered.sum() >= 2 else "none", linewidth=1.1)
    # Light separators between unordered slots (every text group; `missing` after the bins), so that each
    # model's point reads as its group's.
    for i in range(len(panel.groups) - 1):
        if not (ordered[i] and ordered[i + 1]):
            top.axvline(i + 0.5, color="#e3e3e3", linewidth=0.6, zorder=0)
    return handles


def _draw_bars(bottom: Axes, panel: ByGroupPanel, x: np.ndarray) -> None:
    """The reference arrivals per group, each bar labelled with its count (light and hatched when few)."""
    for xi, n, few, group in zip(x, panel.n_reference, panel.few, panel.groups):
        bottom.bar(xi, n, width=0.8, gid=f"arrivals:{group}", **bar_style(few=bool(few)))
        bottom.annotate(f"{int(n):,}", (xi, n), xytext=(0, 1.5), textcoords="offset points", ha="center",
                        va="bottom", fontsize=6.5, color=REF, gid=f"count:{group}")
    bottom.set_ylim(0, max(float(panel.n_reference.max()), 1.0) * 1.35)  # room for the counts
    bottom.set_xticks(x, panel.groups, fontsize=7.5)
    bottom.set_xlim(-0.6, len(panel.groups) - 0.4)


@styled
def recall_by_group(
    ds: xr.Dataset, *, models: Sequence[str] | None = None, min_arrivals: int = FEW_ARRIVALS
) -> Figure:
    """Recall per group of arrivals at the shared threshold, per model; arrivals per group beneath.

    Groups of a text column (no order) are points, the models side by side; bins of a numeric column are
    joined by a line per model (``missing`` apart).  Each bar beneath gives its group's arrival count; a
    group with fewer than ``min_arrivals`` arrivals has hollow marks and a light, hatched bar.

    Parameters
    ----------
    ds
        Results scored with ``group_by``.
    models
        Which models (default: all, capped to the best few).
    min_arrivals
        Groups with fewer reference arrivals are drawn de-emphasised (default :data:`~.style.FEW_ARRIVALS`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    panels, note = by_group_rows(ds, models=models, min_arrivals=min_arrivals)
    by = options_of(ds).group_by
    numeric = is_ordered(ds)
    any_few = any(p.few.any() for p in panels)
    extra: list[Artist] = []
    if any_few:
        extra = [Line2D([], [], marker="o", linestyle="none", mfc="white", mec="#555555", markersize=5,
                        label=f"hollow: < {min_arrivals} arrivals"),
                 Patch(label=f"group of < {min_arrivals}\narrivals", **bar_style(few=True))]
    kind = ("bins of a numeric column, joined in order" if numeric
            else "groups without an order: points, not lines")
    return draw_recall_panels(
        ds, panels, x_of=lambda panel: np.arange(len(panel.groups), dtype=float), recall=_draw_recall,
        bars=_draw_bars, empty="no reference arrival in any group", extra_handles=extra,
        xlabel=f"group of arrivals ({by})",
        describe=lambda theta: (f"Recall per group of arrivals ({by}; {kind}) at the shared threshold {theta}; "
                                "bars: reference arrivals per group."),
        notes=[note,
               (f"Hollow marks, hatched bars: groups with {few_note(min_arrivals)}." if any_few else ""),
               ("" if numeric else "Each panel shows the groups with arrivals in its dataset and phase. ")
               + "No precision per group: a pick that matches no arrival has no group."])
