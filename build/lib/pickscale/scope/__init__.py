"""What is scored (SPEC §2): floor, duplicates, scored stations, scored span.

One entry point, :func:`scope_from_summary`: the normalised reference of every
dataset and a summary of the picks in, a :class:`Scope` out — the rows that
are scored, the models and stations of each dataset, and every exclusion with
its count.  Mismatches that make scoring meaningless (no shared station,
disjoint time spans, no dataset in common) are fatal :class:`~pickscale.errors.InputError` s
with the evidence and a likely cause.  :func:`apply_scope` is a thin
convenience over it for picks in memory.

- :mod:`~pickscale.scope.summaries`: per-row codes and per-key summaries (additive across partitions);
- :mod:`~pickscale.scope.plan`: the station- and dataset-level decisions, taken on summaries;
- :mod:`~pickscale.scope.apply`: the entry point — the plan applied to the reference rows, exclusions, warnings;
- :mod:`~pickscale.scope.coverage`: the windows each model was run on, as cells; the common coverage;
- :mod:`~pickscale.scope.hints`: messages and likely causes of a fatal mismatch.

A Dask engine builds the summaries per partition, combines them (counts add,
``t_min``/``t_max`` take min/max), calls :func:`scope_from_summary` once and
filters every partition of picks with :meth:`ScopePlan.picks_mask`.
"""

from __future__ import annotations

from .apply import EXCLUSION_KEYS, Scope, apply_scope, scope_from_summary
from .coverage import COVERAGE_KEYS, Coverage, apply_coverage
from .hints import nothing_left, shift_hint, span_hint, station_hint
from .plan import ScopePlan, plan_scope
from .summaries import (
    dedupe_reference,
    drop_below_floor,
    pick_cells,
    scored_stations,
    summarise_picks,
    summarise_reference,
    text_codes,
)

__all__ = [
    "scope_from_summary",
    "apply_scope",
    "Scope",
    "ScopePlan",
    "EXCLUSION_KEYS",
    "Coverage",
    "COVERAGE_KEYS",
    "apply_coverage",
    "pick_cells",
    "plan_scope",
    "dedupe_reference",
    "text_codes",
    "drop_below_floor",
    "summarise_reference",
    "summarise_picks",
    "scored_stations",
    "nothing_left",
    "station_hint",
    "span_hint",
    "shift_hint",
]
