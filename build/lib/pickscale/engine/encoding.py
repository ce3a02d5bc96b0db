"""The scored arrivals' groups (SPEC §14), events (SPEC §19) and exchange codes, made in the reference's buckets.

The client decides the groups' labels and the events' ids from the buckets' facts (distinct values, the
earliest arrival of each event: the size of the result), then every bucket encodes its arrivals for the
exchange — work unit, phase, time, and the group and event codes the run has — where it is
(:func:`encode_bucket`): the codes travel from there to the work partitions.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import OptionsError
from ..scope.arrivals import ROW, Arrivals, Bucket
from ..scope.distance import CoordinateError, coordinate_message
from ..scope.events import Events, codes_of, event_facts, events_of
from ..scope.grouping import GroupFacts, GroupSpec, group_facts, group_values, labels_of
from ..scope.grouping import codes_of as group_codes_of

__all__ = ["Grouping", "group_labels_of", "event_names", "encode_bucket"]


@dataclass(frozen=True)
class Grouping:
    """SPEC §14's groups of a run: the parsed ``group_by``, the stations table (or None) and the labels."""

    spec: GroupSpec
    stations: pd.DataFrame | None
    labels: tuple[str, ...]
    found_columns: tuple[str, ...] = ()

    def codes(self, bucket: Bucket) -> np.ndarray:
        """Each of the bucket's rows' group code (int32)."""
        values = group_values(bucket.frame, self.spec, stations=self.stations, found_columns=self.found_columns)
        return group_codes_of(self.spec, values, self.labels)


def _group_facts(bucket: Bucket, spec: GroupSpec, stations: pd.DataFrame | None,
                 found_columns: tuple[str, ...]) -> GroupFacts | tuple[Any, ...]:
    rows = bucket.frame[ROW].to_numpy(np.int64)
    try:
        values = group_values(bucket.frame, spec, stations=stations, found_columns=found_columns)
    except CoordinateError as exc:  # said for the whole reference by the client: (order, what, …, rows, values)
        first = pd.Series(exc.values[exc.bad], dtype=object).drop_duplicates().head(3)
        return (exc.order, exc.what, exc.low, exc.high, int(exc.bad.size),
                [(int(rows[exc.bad[i]]), v) for i, v in zip(first.index.tolist(), first.tolist())])
    return group_facts(spec, values, rows)


def _coordinate_error(found: list[tuple[Any, ...]]) -> OptionsError:
    """The bad coordinates of the buckets as one error: the first coordinate (in the order they are checked) with a
    bad value anywhere, how many there are, and its first three distinct values in input order."""
    order = min(f[0] for f in found)
    same = [f for f in found if f[0] == order]
    seen = pd.Series([v for _, v in sorted((p for f in same for p in f[5]), key=lambda p: p[0])], dtype=object)
    shown = ", ".join(repr(v) for v in pd.unique(seen)[:3])
    _, what, low, high, _, _ = same[0]
    return OptionsError(coordinate_message(what, low, high, sum(f[4] for f in same), shown), options=("group_by",))


def group_labels_of(arrivals: Arrivals, spec: GroupSpec, *, stations: pd.DataFrame | None = None,
                    found_columns: Any = ()) -> Grouping:
    """The groups of the scored arrivals (their labels decided from every bucket's :class:`GroupFacts`)."""
    found = tuple(str(c) for c in found_columns)
    every = arrivals.map(_group_facts, spec, stations, found)
    bad = [f for f in every if not isinstance(f, GroupFacts)]
    if bad:
        raise _coordinate_error(bad)
    facts = GroupFacts.merged([f for f in every if isinstance(f, GroupFacts)])
    return Grouping(spec, stations, tuple(labels_of(spec, facts)), found)


def _event_facts(bucket: Bucket, column: str, grouping: Grouping | None) -> pd.DataFrame:
    return event_facts(bucket.frame, column, None if grouping is None else grouping.codes(bucket))


def event_names(arrivals: Arrivals, column: str | None, grouping: Grouping | None) -> Events | None:
    """SPEC §19: the events of the scored arrivals (ids per dataset, and with groups each event's group), or
    None without any."""
    if column is None:
        return None
    # Each bucket's facts hold every event seen at its stations (most events, in every bucket): merged where
    # the buckets are, so that the client receives each event once (issue 22: the client's largest step).
    return arrivals.reduce(_event_facts, functools.partial(_events, with_groups=grouping is not None), column,
                           grouping)


def _events(*facts: pd.DataFrame, with_groups: bool) -> Events | None:
    return events_of(list(facts), with_groups=with_groups)


def encode_bucket(bucket: Bucket, plan: Any, grouping: Grouping | None, events: Events | None,
                  event_column: str | None) -> pd.DataFrame:
    """The bucket's scored arrivals as the exchange's codes
    (:meth:`pickscale.engine.units.UnitPlan.encode_reference`)."""
    group = None if grouping is None else grouping.codes(bucket)
    event = None
    if events is not None and event_column is not None:
        event = codes_of(bucket.frame, event_column, events.names)
    return plan.encode_reference(bucket.frame, group=group, event=event)
