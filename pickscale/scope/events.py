"""Events of the reference (SPEC §19): codes decided once on the client, from the scored reference.

Each arrival's event is the value of the reference's ``event`` column (stripped; a missing or empty value:
no event, code −1).  Events are per dataset: the same id in two datasets is two events.  Within a dataset
the codes number the event ids in code-point order, so they travel to the workers as small integers with
each arrival (like SPEC §14's group codes) and the results lay them out in that order.

Of duplicate reference rows (SPEC §1: kept once), the arrival's event is the first of their event ids in
code-point order (none only when none has one), whichever row is kept: the events do not depend on row order.

An event's group (with ``group_by``) is the group of its **earliest scored arrival** (the smallest time;
of equal times, the first station, then P before S, in code-point order): a property of the event such
as its magnitude is the same on every arrival, and a per-arrival group (an epicentral distance) then names
the event by its nearest-in-time station.

Examples
--------
>>> ref = pd.DataFrame({"dataset": ["all"] * 4, "station": ["A", "B", "A", "B"], "phase": ["P"] * 4,
...                     "time": [30, 10, 20, 5], "event_value": ["e2", "e2", " e1", None]})
>>> ev = event_codes(ref, "event_value", group=np.array([0, 1, 2, 3]))
>>> ev.codes.tolist(), ev.names, ev.groups
([1, 1, 0, -1], {'all': ['e1', 'e2']}, {'all': [2, 1]})
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["EVENT_COLUMN", "Events", "event_codes", "settle_duplicates"]

#: The reference column that names each arrival's event (SPEC §19).
EVENT_COLUMN = "event"


@dataclass
class Events:
    """Each reference row's event code (−1: none), and per dataset the event ids (in code order) and groups."""

    codes: np.ndarray  # (rows,) int32
    names: dict[str, list[str]]
    groups: dict[str, list[int]] | None  # per dataset, each event's group code; None without group_by


def _ids(values: np.ndarray) -> np.ndarray:
    """Event ids as stripped text, ``""`` for a missing value (no event)."""
    out = np.empty(values.size, dtype=object)
    for i, v in enumerate(values.tolist()):
        missing = v is None or (isinstance(v, float) and v != v) or v is pd.NA or v is pd.NaT
        out[i] = "" if missing else str(v).strip()
    return out


def event_codes(reference: pd.DataFrame, column: str, *, group: np.ndarray | None = None) -> Events | None:
    """The events of the scope's ``reference`` (its ``column`` holds the raw event values); None without any.

    ``group``: each row's group code (SPEC §14), for the events' groups.
    """
    if column not in reference or len(reference) == 0:
        return None
    ids = _ids(reference[column].to_numpy(object))
    has = ids != ""
    if not has.any():
        return None
    datasets = reference["dataset"].astype(str).to_numpy(object)
    codes = np.full(ids.size, -1, dtype=np.int32)
    names: dict[str, list[str]] = {}
    groups: dict[str, list[int]] | None = {} if group is not None else None
    stations = reference["station"].astype(str).to_numpy(object)
    phases = reference["phase"].astype(str).to_numpy(object)
    times = reference["time"].to_numpy(np.int64)
    for d in sorted(set(datasets[has].tolist())):
        rows = np.flatnonzero(has & (datasets == d))
        distinct = sorted(set(ids[rows].tolist()))  # code-point order, as every label
        index = {e: i for i, e in enumerate(distinct)}
        codes[rows] = [index[e] for e in ids[rows].tolist()]
        names[d] = distinct
        if groups is not None and group is not None:
            # The earliest arrival of each event: sorted by (code, time, station, phase), its first row.
            order = rows[np.lexsort((phases[rows], stations[rows], times[rows], codes[rows]))]
            first = order[np.r_[True, codes[order][1:] != codes[order][:-1]]]
            groups[d] = [int(g) for g in np.asarray(group)[first]]
    return Events(codes=codes, names=names, groups=groups)


def settle_duplicates(reference: pd.DataFrame, column: str) -> None:
    """Give every row of a duplicate (dataset, station, phase, time) the first event id of its rows (in place).

    Examples
    --------
    >>> ref = pd.DataFrame({"dataset": ["d"] * 3, "station": ["A"] * 3, "phase": ["P"] * 3, "time": [1, 1, 2],
    ...                     "ev": ["b", "a", "c"]})
    >>> settle_duplicates(ref, "ev"); ref["ev"].tolist()
    ['a', 'a', 'c']
    """
    if column not in reference or len(reference) < 2:
        return
    keys = ["dataset", "station", "phase", "time"]
    dup = reference.duplicated(subset=keys, keep=False).to_numpy()
    if not dup.any():
        return
    rows = np.flatnonzero(dup)
    ids = _ids(reference[column].to_numpy(object)[rows])
    sub = reference.iloc[rows][keys].astype(str).agg("\x1f".join, axis=1).to_numpy(object)
    first: dict[str, str] = {}
    for key, e in zip(sub.tolist(), ids.tolist()):
        if e and (key not in first or e < first[key]):
            first[key] = e
    values = reference[column].to_numpy(object).copy()
    for r, key in zip(rows.tolist(), sub.tolist()):
        if key in first:
            values[r] = first[key]
    reference[column] = pd.Series(values, index=reference.index, dtype=object)
