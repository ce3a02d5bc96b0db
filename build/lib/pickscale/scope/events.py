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

__all__ = ["EVENT_COLUMN", "Events", "event_codes", "settle_duplicates", "event_facts", "events_of", "codes_of"]

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


def event_facts(reference: pd.DataFrame, column: str | None, group: np.ndarray | None = None) -> pd.DataFrame:
    """Per (dataset, event id) of the rows of ``reference`` with an event: its earliest arrival (the smallest
    time, then station, then phase, in code-point order) and that arrival's group (−1 without ``group``).

    The events' names and groups are decided from these rows, gathered over any split of the rows by station
    (:func:`events_of`): the earliest of several sets is the earliest of their earliest.
    """
    empty = pd.DataFrame({"dataset": np.zeros(0, object), "event": np.zeros(0, object),
                          "time": np.zeros(0, np.int64), "station": np.zeros(0, object),
                          "phase": np.zeros(0, object), "group": np.zeros(0, np.int64)})
    if column is None or column not in reference or len(reference) == 0:
        return empty
    ids = _ids(reference[column].to_numpy(object))
    rows = np.flatnonzero(ids != "")
    if not rows.size:
        return empty
    frame = pd.DataFrame({"dataset": reference["dataset"].astype(str).to_numpy(object)[rows], "event": ids[rows],
                          "time": reference["time"].to_numpy(np.int64)[rows],
                          "station": reference["station"].astype(str).to_numpy(object)[rows],
                          "phase": reference["phase"].astype(str).to_numpy(object)[rows],
                          "group": (np.asarray(group)[rows].astype(np.int64) if group is not None
                                    else np.full(rows.size, -1, np.int64))})
    return _earliest(frame)


def _earliest(frame: pd.DataFrame) -> pd.DataFrame:
    d, e = frame["dataset"].to_numpy(object), frame["event"].to_numpy(object)
    order = np.lexsort((frame["phase"].to_numpy(object), frame["station"].to_numpy(object),
                        frame["time"].to_numpy(np.int64), e, d))
    d, e = d[order], e[order]
    first = order[np.r_[True, (d[1:] != d[:-1]) | (e[1:] != e[:-1])]] if order.size else order
    return frame.iloc[first].reset_index(drop=True)


def events_of(facts: list[pd.DataFrame], *, with_groups: bool) -> Events | None:
    """The events (names per dataset in code-point order, and with groups each event's group) of the rows whose
    :func:`event_facts` are ``facts``; None without any.  :attr:`Events.codes` is left empty (:func:`codes_of`)."""
    frame = _earliest(pd.concat(facts, ignore_index=True)) if facts else pd.DataFrame()
    if not len(frame):
        return None
    names: dict[str, list[str]] = {}
    groups: dict[str, list[int]] | None = {} if with_groups else None
    for d, rows in frame.groupby("dataset", sort=True):
        rows = rows.iloc[np.argsort(rows["event"].to_numpy(object), kind="stable")]
        names[str(d)] = [str(x) for x in rows["event"].tolist()]
        if groups is not None:
            groups[str(d)] = [int(g) for g in rows["group"].tolist()]
    return Events(codes=np.zeros(0, np.int32), names=names, groups=groups)


def codes_of(reference: pd.DataFrame, column: str, names: dict[str, list[str]]) -> np.ndarray:
    """Each row's event code (int32: its id's index among its dataset's ``names``; −1 without an event)."""
    codes = np.full(len(reference), -1, dtype=np.int32)
    if column not in reference or not len(reference):
        return codes
    ids = _ids(reference[column].to_numpy(object))
    datasets = reference["dataset"].astype(str).to_numpy(object)
    for d, distinct in names.items():
        rows = np.flatnonzero((ids != "") & (datasets == d))
        if rows.size:
            codes[rows] = pd.Index(distinct, dtype=object).get_indexer(ids[rows])
    return codes


def event_codes(reference: pd.DataFrame, column: str, *, group: np.ndarray | None = None) -> Events | None:
    """The events of the scope's ``reference`` (its ``column`` holds the raw event values); None without any.

    ``group``: each row's group code (SPEC §14), for the events' groups.
    """
    events = events_of([event_facts(reference, column, group)], with_groups=group is not None)
    if events is not None:
        events.codes = codes_of(reference, column, events.names)
    return events


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
