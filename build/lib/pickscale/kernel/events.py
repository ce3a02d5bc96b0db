"""Event detection (SPEC §19): per (event, model, phase), the K highest detection levels of its arrivals.

An arrival's *level* is the grid level of the pick that took it in the detection matching (``tol``): the
number of grid thresholds at or below that pick's conf, 0 when no pick took it.  By SPEC §3 one matching
serves every threshold, so the arrival is matched at grid threshold ``k`` exactly when its level is
``> k``: matched arrivals are monotone in θ.  An event with at least K matched arrivals at ``k`` is then
one whose K-th highest level is ``> k``, and the K highest levels of its arrivals are all that is needed at
every threshold.  They combine exactly: the K highest of a union are the K highest of the parts' K highest
(an associative, commutative merge), so stations, time blocks and partitions can be merged in any order and
grouping.  The levels are kept per phase so that a per-phase shared threshold (SPEC §2) can read each phase
at its own θ (:func:`pickscale.metrics.events`).

Rows: ``event_code`` (E,) int64 ascending (the event codes the client assigned, per dataset),
``event_n_reference`` (E, 2) int64 (scored arrivals per phase, summed) and ``event_levels`` (E, M, 2, K)
int16 (per model and phase, the K highest levels, descending, zero-padded).

Examples
--------
Two stations of one event (code 7), one model, K = 2: P levels 5 and 3 at one, 4 at the other:

>>> a = rows_of(np.array([7]), np.array([[2, 0]]), np.array([[[[5, 3], [0, 0]]]]))
>>> b = rows_of(np.array([7]), np.array([[1, 0]]), np.array([[[[4, 0], [0, 0]]]]))
>>> m = merge_events([a, b])
>>> m["event_code"].tolist(), m["event_n_reference"].tolist(), m["event_levels"][0, 0, 0].tolist()
([7], [[3, 0]], [5, 4])

Numpy only: the workers import this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["EVENT_ROWS", "LEVEL_DTYPE", "rows_of", "empty_rows", "top_levels", "station_events", "merge_events"]

#: The fields of event rows, ``event_code`` first.
EVENT_ROWS = ("event_code", "event_n_reference", "event_levels")
#: Levels are grid levels (at most 10,001 grid values, SPEC §2): int16 holds them, 2 bytes each.
LEVEL_DTYPE = np.int16


def rows_of(codes: np.ndarray, n_reference: np.ndarray, levels: np.ndarray) -> dict[str, np.ndarray]:
    """Event rows from their three arrays (as the module describes them)."""
    return {"event_code": np.asarray(codes, np.int64), "event_n_reference": np.asarray(n_reference, np.int64),
            "event_levels": np.asarray(levels, LEVEL_DTYPE)}


def empty_rows() -> dict[str, np.ndarray]:
    """No event: zero rows, of one shape whatever the models and K (so that results without events are equal
    however they were merged)."""
    return rows_of(np.zeros(0, np.int64), np.zeros((0, 2), np.int64), np.zeros((0, 0, 2, 0), LEVEL_DTYPE))


def top_levels(universe: np.ndarray, event: np.ndarray, slot: np.ndarray, level: np.ndarray, *,
               n_slots: int, k: int) -> np.ndarray:
    """(len(universe), n_slots, k): per event of ``universe`` (ascending) and slot, the ``k`` highest levels.

    ``event`` (each a member of ``universe``), ``slot`` (0 … n_slots − 1) and ``level`` are one row per
    arrival (or per kept level); the result is descending along the last axis, padded with zeros (a zero
    level is no match, so padding changes nothing).

    Examples
    --------
    >>> top_levels(np.array([3, 9]), np.array([9, 9, 9, 3]), np.array([0, 0, 0, 1]), np.array([2, 6, 4, 1]),
    ...            n_slots=2, k=2).tolist()
    [[[0, 0], [1, 0]], [[6, 4], [0, 0]]]
    """
    out = np.zeros((universe.size * n_slots, k), LEVEL_DTYPE)
    keep = np.asarray(level) > 0  # zeros are the padding: leaving them out changes nothing
    if not keep.any() or k == 0:
        return out.reshape(universe.size, n_slots, k)
    key = np.searchsorted(universe, np.asarray(event)[keep]).astype(np.int64) * n_slots + np.asarray(slot)[keep]
    lev = np.asarray(level)[keep].astype(np.int64)
    order = np.lexsort((-lev, key))
    key, lev = key[order], lev[order]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    start = np.repeat(first, np.diff(np.r_[first, key.size]))
    pos = np.arange(key.size) - start
    top = pos < k
    out[key[top], pos[top]] = lev[top]
    return out.reshape(universe.size, n_slots, k)


def station_events(a_event: np.ndarray, a_phase: np.ndarray, r_event: np.ndarray, r_stream: np.ndarray,
                   r_level: np.ndarray, *, n_models: int, k: int) -> dict[str, np.ndarray]:
    """One station's event rows.

    ``a_event``, ``a_phase``: each arrival's event code (−1: no event) and phase; ``r_event``, ``r_stream``,
    ``r_level``: per arrival repeated per model (the kernel's ``r`` arrays), its event, (model, phase) stream
    and detection level.  Every event with an arrival here gets a row, matched or not (so an event counts
    wherever it has a scored arrival).
    """
    has = a_event >= 0
    universe = np.unique(a_event[has])
    if universe.size == 0:
        return empty_rows()
    e_rank = np.searchsorted(universe, a_event[has])
    n_ref = np.bincount(e_rank * 2 + a_phase[has], minlength=universe.size * 2).reshape(universe.size, 2)
    r_has = r_event >= 0
    levels = top_levels(universe, r_event[r_has], r_stream[r_has], r_level[r_has], n_slots=n_models * 2, k=k)
    return rows_of(universe, n_ref, levels.reshape(universe.size, n_models, 2, k))


def merge_events(parts: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Event rows of several pieces (time blocks, stations, partitions) in one: exact, in any order.

    Arrivals are summed per event; the levels of each (event, model, phase) are the K highest of the
    pieces' K highest (:func:`top_levels` on their union).
    """
    parts = [p for p in parts if p["event_code"].size]
    if not parts:
        return empty_rows()
    if len(parts) == 1:
        return dict(parts[0])
    _, n_models, _, k = parts[0]["event_levels"].shape
    codes = np.concatenate([p["event_code"] for p in parts])
    universe, rank = np.unique(codes, return_inverse=True)
    n_ref = np.zeros((universe.size, 2), np.int64)
    np.add.at(n_ref, rank.reshape(-1), np.concatenate([p["event_n_reference"] for p in parts]))
    levels = np.concatenate([p["event_levels"] for p in parts]).reshape(codes.size, n_models * 2 * k)
    slots = n_models * 2
    event = np.repeat(codes, slots * k)
    slot = np.tile(np.repeat(np.arange(slots), k), codes.size)
    top = top_levels(universe, event, slot, levels.ravel(), n_slots=slots, k=k)
    return rows_of(universe, n_ref, top.reshape(universe.size, n_models, 2, k))
