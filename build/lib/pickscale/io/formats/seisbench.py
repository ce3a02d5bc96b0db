"""Picks as SeisBench returns them, duck-typed (SeisBench itself is never imported).

SeisBench's ``Pick`` (``seisbench.util.annotations``) has ``trace_id``
(``"NET.STA.LOC"``), ``start_time``, ``end_time``, ``peak_time`` (an ObsPy
``UTCDateTime``), ``peak_value`` and ``phase``; a ``PickList`` is a ``list``
of them.  Any object with ``trace_id``, ``peak_time``, ``peak_value`` and
``phase`` is read the same way, so picks from another tool that mimics them
need no conversion.

Rows: ``station`` = ``trace_id`` (SPEC §1's trailing-dot rule makes
``CI.CLC.`` equal ``CI.CLC``), ``phase``, ``time`` = ``peak_time`` (the
``start_time`` when a pick has no peak), ``conf`` = ``peak_value``.
:class:`SeisbenchPicks` is the reader in the table of
:mod:`pickscale.io.formats.registry`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from .reader import SourceReader, with_dataset

__all__ = ["SeisbenchPicks", "PICK_ATTRIBUTES", "is_pick_like", "is_pick_collection", "is_pick_iterator",
           "picks_to_frame"]

#: The attributes an object needs to be read as a pick.
PICK_ATTRIBUTES = ("trace_id", "peak_time", "peak_value", "phase")


def is_pick_like(obj: Any) -> bool:
    """Whether ``obj`` has SeisBench ``Pick``'s attributes (``trace_id, peak_time, peak_value, phase``)."""
    return all(hasattr(obj, a) for a in PICK_ATTRIBUTES)


def _times(values: list[Any]) -> pd.Series:
    """Pick times: UTCDateTime-like (``.ns``) exactly to the ns; anything else left for the normaliser."""
    ns = [getattr(t, "ns", None) for t in values]
    if all(v is not None for v in ns):
        return pd.Series(pd.to_datetime(np.array(ns, dtype=np.int64), unit="ns", utc=True))
    out = [pd.Timestamp(int(n), unit="ns", tz="UTC") if n is not None else t for t, n in zip(values, ns)]
    return pd.Series(out, dtype=object)


def picks_to_frame(picks: Iterable[Any], *, model: str | None = None) -> pd.DataFrame:
    """Pick-like objects as a raw picks frame: ``[model,] station, phase, time, conf``.

    Examples
    --------
    >>> class P:  # the attributes of seisbench.util.annotations.Pick
    ...     def __init__(self, t):
    ...         self.trace_id, self.phase, self.peak_value = "CI.CLC.", "P", 0.9
    ...         self.start_time = self.end_time = self.peak_time = t
    >>> f = picks_to_frame([P(pd.Timestamp("2020-01-01T00:00:01Z"))], model="PhaseNet")
    >>> f.columns.tolist(), f.loc[0, "station"], float(f.loc[0, "conf"])
    (['model', 'station', 'phase', 'time', 'conf'], 'CI.CLC.', 0.9)
    """
    items = list(picks)
    stations = [getattr(p, "trace_id", None) for p in items]
    phases = [getattr(p, "phase", None) for p in items]
    times = [p.peak_time if getattr(p, "peak_time", None) is not None else getattr(p, "start_time", None)
             for p in items]
    confs = [getattr(p, "peak_value", None) for p in items]
    data: dict[str, Any] = {}
    if model is not None:
        data["model"] = [model] * len(items)
    data["station"] = pd.Series(stations, dtype=object)
    data["phase"] = pd.Series(phases, dtype=object)
    data["time"] = _times(times)
    data["conf"] = pd.to_numeric(pd.Series([np.nan if c is None else c for c in confs], dtype=object),
                                 errors="coerce").astype(np.float64)
    return pd.DataFrame(data)


def is_pick_collection(obj: Any) -> bool:
    """A list/tuple (``PickList`` included) whose first item is pick-like (an empty list is not)."""
    if isinstance(obj, (str, bytes, os.PathLike, pd.DataFrame, dict)):
        return False
    if isinstance(obj, (list, tuple)):
        return bool(obj) and is_pick_like(obj[0])
    return False


def is_pick_iterator(obj: Any) -> bool:
    """A one-pass iterator (a generator ...), read as picks: not a path, frame, dict or sequence."""
    # Generators and other one-pass iterables are looked at only if they are iterators of picks;
    # any other iterator is not a source pickscale reads (resolve_sources would refuse it as well).
    return (not isinstance(obj, (str, bytes, os.PathLike, pd.DataFrame, dict, list, tuple))
            and hasattr(obj, "__iter__") and hasattr(obj, "__next__"))


class SeisbenchPicks(SourceReader):
    """A SeisBench ``PickList``, or a list or iterator of pick-like objects (:func:`is_pick_like`), read as picks.

    Examples
    --------
    >>> class Pick:
    ...     trace_id, peak_time, peak_value, phase = "CI.CLC.", 0.0, 0.9, "P"
    >>> reader = SeisbenchPicks()
    >>> reader.guess_can_open([Pick()]), reader.guess_can_open(iter([Pick()])), reader.guess_can_open([])
    (True, True, False)
    """

    name = "seisbench"
    description = "SeisBench PickList or pick-like objects"

    def guess_can_open(self, source: Any) -> bool:
        return is_pick_collection(source) or is_pick_iterator(source)

    def open(self, source: Any, *, role: str, manual_only: bool = False, dataset: str | None = None,
             name: str | None = None) -> pd.DataFrame:
        items = source if isinstance(source, (list, tuple)) else list(source)
        frame = picks_to_frame(items)
        frame.attrs["pickscale_description"] = f"{name or f'the {role} picks'} ({len(items):,} picks)"
        return with_dataset(frame, dataset)
