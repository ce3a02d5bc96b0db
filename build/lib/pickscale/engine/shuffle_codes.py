"""The shuffle exchange's ``code``: one integer per (work unit, stream) slot, chosen so that Dask's own hash
partitioning sends it to its unit's work partition, so the code is also the shuffle key (:class:`Codes`,
:func:`codes_for`); past the keyed bounds, the slot number beside a ``label`` per partition
(:func:`labels_for`).  An arrival's SPEC §19 event may ride in its ``conf`` (:func:`carried`).

The codes are a function of the plan alone: pandas hashes numbers with fixed integer arithmetic, so they are
the same on every machine, whatever the worker count, hash seed or Python session.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["Codes", "codes_for", "labels_for", "carried", "KEYED_SLOTS", "partitions_of"]

#: A plan's slots get codes of their own while there are at most this many (:func:`codes_for`) ...
KEYED_SLOTS = 1 << 24
#: ... and while its codes stay below this many per slot (or :data:`_KEYED_FLOOR`): past it, Dask's hash sends
#: so few small numbers to some partition that the decoding table would be too large.
_CODES_PER_SLOT = 8
_KEYED_FLOOR = 1 << 20
# (an arrival's slot is 1 - phase, a pick's 2 + stream: slot = stream + 2 for both)
_ARRIVAL_SLOTS = 2


@dataclass(frozen=True)
class Codes:
    """The shuffle frame's ``code``: one integer per (work unit, stream) *slot*, ``slot = unit * width + stream +
    2`` (a pick's stream ``model index * 2 + phase``, an arrival's ``-1 - phase``), made by :func:`codes_for`.

    Keyed (``code_of_slot`` given): each slot's code is a number that Dask's hash partitioning sends to its unit's
    work partition, so the code is the shuffle key; ``slot_of_code`` decodes it.  Otherwise the code is the slot
    itself and ``labels`` (one shuffle key per work partition, :func:`labels_for`) go in a ``label`` column.

    Examples
    --------
    >>> codes = Codes(width=4, dtype=np.dtype(np.int8), code_of_slot=np.array([5, 0, 2, -1, 1, 3, 4, 6]),
    ...               slot_of_code=np.array([1, 4, 2, 5, 6, 0, 7]))
    >>> unit, stream = np.array([0, 1, 1, 1]), np.array([-1, -2, -1, 1])  # unit 1's stream 1: its slot 4 + 3
    >>> codes.encode(unit, stream).tolist()
    [0, 1, 3, 6]
    >>> [a.tolist() for a in codes.decode(codes.encode(unit, stream))]
    [[0, 1, 1, 1], [-1, -2, -1, 1]]
    """

    width: int  # slots per unit: two arrival phases, two phases per model of the plan's station with most models
    dtype: np.dtype  # of the code column: the narrowest integer dtype holding every code
    code_of_slot: np.ndarray | None = None  # keyed: each slot's code (-1: a slot no row can have)
    slot_of_code: np.ndarray | None = None  # keyed: each code's slot (-1: not a code)
    labels: np.ndarray | None = None  # not keyed: each work partition's shuffle key (int32)
    events_in_conf: bool = False  # an arrival's event (SPEC §19) rides in its conf (:func:`carried`)

    @property
    def keyed(self) -> bool:
        """Whether the code is the shuffle key (else the ``label`` column is)."""
        return self.code_of_slot is not None

    @property
    def key(self) -> str:
        """The column Dask's shuffle hashes: ``code``, or ``label``."""
        return "code" if self.keyed else "label"

    def encode(self, unit: np.ndarray, stream: np.ndarray) -> np.ndarray:
        """The code of each row of work unit ``unit`` and stream ``stream`` (in :attr:`dtype`)."""
        slot = np.asarray(unit, dtype=np.int64) * self.width + np.asarray(stream, dtype=np.int64)
        slot += _ARRIVAL_SLOTS
        if self.code_of_slot is not None:
            return self.code_of_slot[slot].astype(self.dtype, copy=False)
        return slot.astype(self.dtype, copy=False)

    def decode(self, code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(work unit, stream) of each code, both int64: :meth:`encode` undone."""
        slot = (self.slot_of_code[code] if self.slot_of_code is not None else code).astype(np.int64, copy=False)
        unit = slot // self.width
        slot -= unit * self.width
        slot -= _ARRIVAL_SLOTS
        return unit, slot


def codes_for(plan: Any, *, keyed: bool = True) -> Codes:
    """The :class:`Codes` of ``plan``'s slots: keyed while it has at most :data:`KEYED_SLOTS` of them (and
    ``keyed``: False gives the other layout whatever the plan).

    A unit's slots are its station's: two arrival phases and two phases per model.  Work partition p, with n_p
    slots, takes the n_p smallest non-negative integers that Dask's hash partitioning sends to p (it hashes the
    shuffle column's values as float64: ``dask.dataframe.shuffle.partitioning_index``), given to its slots in
    ascending (unit, stream) order.  So the codes are a function of the plan alone — the same on every machine,
    whatever the worker count, hash seed or Python session: pandas hashes numbers with fixed integer arithmetic —
    and the partitions' balance is the plan's.  Past the keyed bounds (a plan whose slots are too many, or whose
    codes grow too sparse), the code is the slot number and a ``label`` column is the key.
    """
    n_parts = plan.n_parts
    most = int(plan.stations["n_models"].max()) if len(plan.stations) else 1
    width = _ARRIVAL_SLOTS + 2 * max(most, 1)
    n_units = int(plan.unit_part.size)
    per_unit = _ARRIVAL_SLOTS + 2 * plan.stations["n_models"].to_numpy(np.int64)[plan.unit_station]
    n_slots = int(per_unit.sum())
    if keyed and n_slots <= KEYED_SLOTS and n_units * width < np.iinfo(np.int32).max:
        found = _hashed_codes(np.bincount(plan.unit_part, weights=per_unit, minlength=n_parts).astype(np.int64),
                              n_parts, budget=max(_KEYED_FLOOR, _CODES_PER_SLOT * n_slots))
        if found is not None:
            _, code = found  # ascending by (partition, code)
            # Every slot a row can have, in (partition, unit, stream) order: the codes' order.
            unit = np.repeat(np.arange(n_units, dtype=np.int64), per_unit)
            offset = np.arange(n_slots, dtype=np.int64) - np.repeat(np.cumsum(per_unit) - per_unit, per_unit)
            slot = unit * width + offset
            slot = slot[np.argsort(plan.unit_part[unit], kind="stable")]
            code_of_slot = np.full(n_units * width, -1, dtype=np.int32)
            code_of_slot[slot] = code
            slot_of_code = np.full(int(code.max()) + 1 if code.size else 0, -1, dtype=np.int32)
            slot_of_code[code] = slot
            return Codes(width=width, dtype=_narrowest(slot_of_code.size - 1, (np.int8, np.int16, np.int32)),
                         code_of_slot=code_of_slot, slot_of_code=slot_of_code)
    return Codes(width=width, dtype=_narrowest(n_units * width - 1, (np.int16, np.int32, np.int64)),
                 labels=labels_for(n_parts).astype(np.int32))


def _narrowest(most: int, dtypes: tuple[type, ...]) -> np.dtype:
    return np.dtype(next((t for t in dtypes if most <= np.iinfo(t).max), dtypes[-1]))


def _hashed_codes(need: np.ndarray, n_parts: int, *, budget: int) -> tuple[np.ndarray, np.ndarray] | None:
    """For each partition p, the ``need[p]`` smallest non-negative integers that Dask's hash partitioning into
    ``n_parts`` sends to p, as (partition, code) sorted by both; None if some are beyond ``budget``.

    Examples
    --------
    >>> part, code = _hashed_codes(np.array([2, 1, 3]), 3, budget=100)
    >>> part.tolist()
    [0, 0, 1, 2, 2, 2]
    >>> partitions_of(code, 3).tolist() == part.tolist()
    True
    """
    left = need.astype(np.int64).copy()
    found: list[tuple[np.ndarray, np.ndarray]] = []
    start, chunk = 0, max(1 << 16, 2 * int(need.sum()))
    while left.any():
        if start >= budget:
            return None
        candidate = np.arange(start, min(start + chunk, budget), dtype=np.int64)
        target = partitions_of(candidate, n_parts)
        # The first left[p] candidates sent to p (candidates ascend: a stable sort by partition keeps them so).
        order = np.argsort(target, kind="stable")
        counts = np.bincount(target, minlength=n_parts)
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size) - np.repeat(np.cumsum(counts) - counts, counts)
        take = rank < left[target]
        found.append((target[take], candidate[take]))
        left -= np.minimum(left, counts)
        start += candidate.size
    part = np.concatenate([f[0] for f in found]) if found else np.zeros(0, np.int64)
    code = np.concatenate([f[1] for f in found]) if found else np.zeros(0, np.int64)
    order = np.lexsort((code, part))
    return part[order], code[order]


def partitions_of(keys: np.ndarray, n_parts: int) -> np.ndarray:
    """The output partition Dask's shuffle sends each of ``keys`` (a numeric shuffle column) to: its hash of the
    values as float64, modulo ``n_parts`` (as ``DataFrame.shuffle`` does)."""
    from dask.dataframe.shuffle import partitioning_index  # (dask.dataframe: on the client, for the shuffle only)

    frame = pd.DataFrame({"key": np.asarray(keys).astype(np.float64)})
    return np.asarray(partitioning_index(frame, n_parts), dtype=np.int64)


def labels_for(n_parts: int) -> np.ndarray:
    """For each work partition i, a shuffle key that Dask's hash partitioning sends to output partition i.

    Examples
    --------
    >>> labels = labels_for(5)
    >>> from dask.dataframe.shuffle import partitioning_index
    >>> partitioning_index(pd.DataFrame({"label": labels.astype(float)}), 5).tolist()
    [0, 1, 2, 3, 4]
    """
    found = _hashed_codes(np.ones(n_parts, dtype=np.int64), n_parts, budget=np.iinfo(np.int32).max)
    if found is None:  # pragma: no cover - needs ~10^8 partitions
        raise RuntimeError("internal error: shuffle labels exceed int32")
    return found[1]  # (one per partition, in partition order)


def carried(codes: Codes, optional: dict[str, Any] | None, conf_dtype: Any) -> tuple[Codes, dict[str, Any]]:
    """(``codes``, ``optional``) with each arrival's event carried in its ``conf`` when the confidences' dtype
    holds every event code exactly (int16 codes, or float64 confidences): an arrival has no confidence (its
    conf is 0 otherwise), and a pick no event, so the frame needs no ``event`` column -- 2 bytes a pick
    (:func:`pickscale.engine.scoring.unpack_shuffled` reads it back, :attr:`Codes.events_in_conf`).

    Examples
    --------
    >>> codes = Codes(width=4, dtype=np.dtype(np.int16))
    >>> codes, optional = carried(codes, {"event": np.dtype(np.int16)}, np.float32)
    >>> codes.events_in_conf, optional
    (True, {})
    >>> carried(Codes(width=4, dtype=np.dtype(np.int16)), {"event": np.dtype(np.int32)}, np.float32)[1]
    {'event': dtype('int32')}
    """
    optional = dict(optional or {})
    event = optional.get("event")
    if event is None or not (np.dtype(event).itemsize <= 2 or np.dtype(conf_dtype) == np.float64):
        return codes, optional  # (int32 codes in float32 confidences: not all exact, a column of their own)
    del optional["event"]
    return dataclasses.replace(codes, events_in_conf=True), optional
