"""SPEC §2's rules on the rows of one bucket (:mod:`pickscale.scope.arrivals`): each a function of the bucket and
of what the client decided, returning the bucket with its rows marked and the facts the client decides from.

In the order :func:`pickscale.scope.apply.scope_from_summary` runs them:

1. :func:`start` — duplicates (and, with events, their event settled first), each row's coverage cell;
2. :func:`to_common` — with a coverage, the rows outside their dataset's common coverage;
3. :func:`considered_summary` — per (dataset, station): arrivals, first and last (``plan_scope`` decides on it);
4. :func:`decide` — scored station and span: each row scored or not, with the counts and per-station facts;
5. :func:`outside_own_span` — per model, the scored arrivals at its stations outside its own span (SPEC §2);
   :func:`placement_counts` — with a coverage, the scored arrivals' offsets into their windows, counted.

Imports numpy and pandas only (run on the workers).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .arrivals import ROW, Bucket
from .events import settle_duplicates
from .summaries import ReferenceCodes, _groups

__all__ = ["start", "start_facts", "to_common", "considered_summary", "decide", "decided_facts", "at_station_rows",
           "outside_own_span", "placement_counts", "placement_records"]


def start(bucket: Bucket, event_column: str | None, coverage: Any) -> Bucket:
    """Each row: a later duplicate or not (SPEC §1: kept once), and its coverage cell (with a ``coverage``).

    With events (``event_column``), every row of a duplicate first gets the first event id of its rows
    (:func:`pickscale.scope.events.settle_duplicates`): the bucket's frame is then a copy.
    """
    frame = bucket.frame
    if event_column is not None and event_column in frame:
        frame = frame.copy()
        settle_duplicates(frame, event_column)
    rc = ReferenceCodes(frame)
    considered = ~rc.duplicates() if len(frame) else np.zeros(0, dtype=bool)
    cells = coverage.cells(rc.d_names, rc.s_names, rc.d, rc.s, rc.time) if coverage is not None else None
    return Bucket(frame, considered=considered, cells=cells)


def start_facts(bucket: Bucket) -> tuple[dict[str, int], pd.DataFrame | None]:
    """(duplicates per dataset; with a coverage, the considered rows counted per (dataset, cell))."""
    assert bucket.considered is not None
    rc = ReferenceCodes(bucket.frame)
    dup = rc.count_by_dataset(~bucket.considered)
    if bucket.cells is None:
        return dup, None
    rows = bucket.considered
    key = rc.d[rows].astype(np.int64) * (np.int64(bucket.cells.max(initial=0)) + 2) + bucket.cells[rows] + 1
    distinct, n = np.unique(key, return_counts=True)
    width = np.int64(bucket.cells.max(initial=0)) + 2
    return dup, pd.DataFrame({"dataset": rc.d_names[distinct // width].astype(object),
                              "cell": (distinct % width - 1).astype(np.int64), "n": n.astype(np.int64)})


def to_common(bucket: Bucket, common: dict[str, np.ndarray]) -> Bucket:
    """The considered rows of each dataset with models kept only inside its common coverage (``common``: per
    dataset, per cell plus a trailing False for −1, :meth:`pickscale.scope.Coverage.common`)."""
    assert bucket.considered is not None and bucket.cells is not None
    rc = ReferenceCodes(bucket.frame)
    considered = bucket.considered.copy()
    names = rc.d_names.tolist()
    for d, table in common.items():
        if d not in names:
            continue
        rows = np.flatnonzero(considered & (rc.d == names.index(d)))
        considered[rows] = table[bucket.cells[rows]]
    return Bucket(bucket.frame, considered=considered, cells=bucket.cells)


def considered_summary(bucket: Bucket) -> pd.DataFrame:
    """Per (dataset, station) of the considered rows: ``n_reference, t_min, t_max`` (sorted by both)."""
    assert bucket.considered is not None
    return ReferenceCodes(bucket.frame).summary(bucket.considered)[2]


def _at_station(rc: ReferenceCodes, considered: np.ndarray, stations: dict[str, list[str]]) -> np.ndarray:
    """Per row: considered and at a scored station of its dataset."""
    distinct, group = _groups(rc.ds, rc.nd * rc.ns)
    names = rc.d_names.tolist()
    keys = []
    for d, sts in stations.items():
        if d not in names:
            continue
        at = pd.Index(rc.s_names, dtype=object).get_indexer(np.asarray(sts, dtype=object))
        keys.append(names.index(d) * rc.ns + at[at >= 0].astype(np.int64))
    wanted = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    scored_group = np.isin(distinct, wanted)
    return considered & scored_group[group] if group.size else considered.copy()


def _in_span(rc: ReferenceCodes, spans: dict[str, tuple[int, int]]) -> np.ndarray:
    names = rc.d_names.tolist()
    has = np.zeros(len(names), dtype=bool)
    lo = np.zeros(len(names), dtype=np.int64)
    hi = np.zeros(len(names), dtype=np.int64)
    for i, d in enumerate(names):
        if d in spans:
            has[i] = True
            lo[i], hi[i] = spans[d]
    if not names:
        return np.zeros(rc.time.size, dtype=bool)
    return has[rc.d] & (rc.time >= lo[rc.d]) & (rc.time <= hi[rc.d])


def decide(bucket: Bucket, stations: dict[str, list[str]], spans: dict[str, tuple[int, int]]) -> Bucket:
    """Each row scored (considered, at a scored station of its dataset, inside its dataset's span) or not."""
    assert bucket.considered is not None
    rc = ReferenceCodes(bucket.frame)
    at_station = _at_station(rc, bucket.considered, stations)
    return Bucket(bucket.frame, considered=bucket.considered, cells=bucket.cells,
                  scored=at_station & _in_span(rc, spans))


def decided_facts(bucket: Bucket, stations: dict[str, list[str]]) -> tuple[dict[str, int], dict[str, int],
                                                                          pd.DataFrame]:
    """(arrivals at scored stations outside the span, and scored, per dataset; per (dataset, station) of the
    scored rows: ``n_reference, t_min, t_max``)."""
    assert bucket.considered is not None and bucket.scored is not None
    rc = ReferenceCodes(bucket.frame)
    at_station = _at_station(rc, bucket.considered, stations)
    return (rc.count_by_dataset(at_station & ~bucket.scored), rc.count_by_dataset(bucket.scored),
            rc.summary(bucket.scored)[2])


def at_station_rows(bucket: Bucket, stations: dict[str, list[str]], dataset: str) -> pd.DataFrame:
    """The considered rows of ``dataset`` at its scored stations: ``row, station, time`` (a fatal message's
    evidence, :func:`pickscale.scope.hints.shift_hint`)."""
    assert bucket.considered is not None
    rc = ReferenceCodes(bucket.frame)
    names = rc.d_names.tolist()
    if dataset not in names:
        return pd.DataFrame({ROW: np.zeros(0, np.int64), "station": np.zeros(0, object), "time": np.zeros(0, np.int64)})
    rows = np.flatnonzero(_at_station(rc, bucket.considered, stations) & (rc.d == names.index(dataset)))
    return pd.DataFrame({ROW: bucket.frame[ROW].to_numpy(np.int64)[rows], "station": rc.s_names[rc.s[rows]],
                         "time": rc.time[rows]})


def outside_own_span(bucket: Bucket, models: dict[str, tuple[list[str], np.ndarray, np.ndarray, np.ndarray,
                                                              np.ndarray]]) -> dict[str, np.ndarray]:
    """Per dataset, per model: the scored arrivals at the scored stations where it has picks, outside its own
    span (SPEC §2, "Models not picking where arrivals are").

    ``models``: per dataset, (its scored stations, the (model, station) positions with picks, sorted by model
    then station, and each model's own span ``lo``, ``hi``).  Three searches per (model, station) in the sorted
    keys ``station position · width + rank`` of the bucket's scored rows of the dataset.
    """
    assert bucket.scored is not None
    rc = ReferenceCodes(bucket.frame)
    names = rc.d_names.tolist()
    out = {}
    for d, (sts, pair_m, pair_s, lo, hi) in models.items():
        counts = np.zeros(lo.size, dtype=np.int64)
        if d in names:
            rows = bucket.scored & (rc.d == names.index(d))
            position = pd.Index(np.asarray(sts, dtype=object)).get_indexer(rc.s_names)
            station, time = position[rc.s[rows]], rc.time[rows]
            times = np.sort(time)
            keys = np.sort(station * (times.size + 1) + np.searchsorted(times, time, side="left"))
            base = pair_s * (times.size + 1)
            start = np.searchsorted(keys, base)
            before = np.searchsorted(keys, base + np.searchsorted(times, lo[pair_m], side="left")) - start
            up_to = np.searchsorted(keys, base + np.searchsorted(times, hi[pair_m], side="right")) - start
            total = np.searchsorted(keys, base + times.size + 1) - start
            np.add.at(counts, pair_m, before + total - up_to)
        out[d] = counts
    return out


def placement_counts(bucket: Bucket, coverage: Any) -> pd.DataFrame:
    """The scored arrivals inside a window: their offsets into it to the millisecond, counted per
    (dataset, phase, offset)."""
    from ..metrics.grid import to_ms  # lazy: only runs with a coverage (metrics.grid is numpy alone)

    assert bucket.scored is not None and bucket.cells is not None
    rc = ReferenceCodes(bucket.frame)
    inside = bucket.scored & coverage.held(bucket.cells)
    frame = pd.DataFrame({"dataset": rc.d_names[rc.d[inside]].astype(object),
                          "phase": rc.p_names[rc.p[inside]].astype(object),
                          "offset": to_ms(coverage.offsets(bucket.cells[inside], rc.time[inside]))})
    return frame.groupby(["dataset", "phase", "offset"], sort=True).size().rename("n").reset_index()


def placement_records(*counts: pd.DataFrame) -> list[dict[str, Any]]:
    """:func:`pickscale.scope.placement.reference_placement` of the buckets' :func:`placement_counts`."""
    from .placement import reference_placement  # lazy: only with a coverage

    rows = pd.concat(counts, ignore_index=True).groupby(["dataset", "phase", "offset"], sort=True)["n"].sum()
    rows = rows.reset_index()
    d_codes, d_names = pd.factorize(rows["dataset"].to_numpy(object))
    p_codes, p_names = pd.factorize(rows["phase"].to_numpy(object))
    n = rows["n"].to_numpy(np.int64)
    return reference_placement(np.repeat(rows["offset"].to_numpy(np.int64), n), np.repeat(d_codes, n),
                               np.repeat(p_codes, n), [str(x) for x in d_names], [str(x) for x in p_names])
