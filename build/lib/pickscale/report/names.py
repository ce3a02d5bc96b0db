"""The names of what a report writes, without importing what writes it (matplotlib, xarray).

The command checks, before any work, which files it would write or replace in ``--out``: it needs the
figures' names, not the figures.

Examples
--------
>>> FIGURES[0]
'recall_treatments'
"""

from __future__ import annotations

__all__ = ["FIGURES", "TIME_BIN_FIGURES", "TOLERANCE_FIGURES", "GROUP_FIGURES", "EVENT_FIGURES", "RATE_FIGURES"]

#: Names of the figures :func:`pickscale.report.figures.figures` builds, in reading order.
FIGURES: tuple[str, ...] = ("recall_treatments", "operating_curves", "timing", "residuals", "reliability", "stations")
#: The figures only results scored with ``time_bin`` have (SPEC §10), drawn after :data:`FIGURES`.
TIME_BIN_FIGURES: tuple[str, ...] = ("recall_over_time",)
#: The figures only results scored with ``tols`` have (SPEC §13), drawn after those.
TOLERANCE_FIGURES: tuple[str, ...] = ("recall_vs_tolerance",)
#: The figures only results scored with ``group_by`` have (SPEC §14), drawn after those.
GROUP_FIGURES: tuple[str, ...] = ("recall_by_group",)
#: The figures only results with events have (SPEC §19), drawn after those.
EVENT_FIGURES: tuple[str, ...] = ("event_detection",)
#: The figures of results with pick rates at two stations or more (SPEC §20: every run's), drawn last.
RATE_FIGURES: tuple[str, ...] = ("pick_rates",)
