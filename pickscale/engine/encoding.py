"""The scored arrivals' groups (SPEC §14), events (SPEC §19) and exchange codes, made in the reference's buckets.

The client decides the groups' labels and the events' ids from the buckets' facts (distinct values, the
earliest arrival of each event: the size of the result), then every bucket encodes its arrivals for the
exchange — work unit, phase, time, and the group and event codes the run has — where it is
(:func:`encode_bucket`): the codes travel from there to the work partitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..scope.arrivals import ROW, Arrivals, Bucket
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
                 found_columns: tuple[str, ...]) -> GroupFacts:
    values = group_values(bucket.frame, spec, stations=stations, found_columns=found_columns)
    return group_facts(spec, values, bucket.frame[ROW].to_numpy(np.int64))


def group_labels_of(arrivals: Arrivals, spec: GroupSpec, *, stations: pd.DataFrame | None = None,
                    found_columns: Any = ()) -> Grouping:
    """The groups of the scored arrivals (their labels decided from every bucket's :class:`GroupFacts`)."""
    found = tuple(str(c) for c in found_columns)
    facts = GroupFacts.merged(arrivals.map(_group_facts, spec, stations, found))
    return Grouping(spec, stations, tuple(labels_of(spec, facts)), found)


def _event_facts(bucket: Bucket, column: str, grouping: Grouping | None) -> pd.DataFrame:
    return event_facts(bucket.frame, column, None if grouping is None else grouping.codes(bucket))


def event_names(arrivals: Arrivals, column: str | None, grouping: Grouping | None) -> Events | None:
    """SPEC §19: the events of the scored arrivals (ids per dataset, and with groups each event's group), or
    None without any."""
    if column is None:
        return None
    return events_of(arrivals.map(_event_facts, column, grouping), with_groups=grouping is not None)


def encode_bucket(bucket: Bucket, plan: Any, grouping: Grouping | None, events: Events | None,
                  event_column: str | None) -> pd.DataFrame:
    """The bucket's scored arrivals as the exchange's codes
    (:meth:`pickscale.engine.units.UnitPlan.encode_reference`)."""
    group = None if grouping is None else grouping.codes(bucket)
    event = None
    if events is not None and event_column is not None:
        event = codes_of(bucket.frame, event_column, events.names)
    return plan.encode_reference(bucket.frame, group=group, event=event)
