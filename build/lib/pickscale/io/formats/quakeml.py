"""An ObsPy ``Catalog`` (QuakeML or any bulletin ``obspy.read_events`` reads) as reference arrivals.

The catalog is duck-typed: ObsPy itself is not imported here (bulletin
files are found and read in :mod:`.bulletins`).

The reference arrivals of an event are the picks that the arrivals of its
**preferred origin** point to (an event without a preferred origin: its only
origin, or the first one, with a warning).  Picks that no arrival points to,
and the arrivals of the other origins, are not reference arrivals: a bulletin
holds automatic picks the analyst rejected and the arrivals of origins that
were superseded.  An arrival whose pick is missing from the event is counted
and reported, never a crash.

Rows: ``station`` = ``NET.STA.LOC`` of the pick's waveform id (SPEC §1's
trailing-dot rule makes it ``NET.STA`` when the location is empty), ``phase``
= ``Arrival.phase``, else ``Pick.phase_hint``, ``time`` = ``Pick.time`` (UTC,
as ``datetime64[ns, UTC]``).  ``manual_only`` keeps the picks whose
``evaluation_mode`` is ``"manual"``.  :class:`ObspyCatalog` is the reader
in the table of :mod:`pickscale.io.formats.registry`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InputError
from ..table import NOTES_ATTR
from .reader import SourceReader, with_dataset

__all__ = ["ObspyCatalog", "is_catalog", "catalog_to_frame"]


def is_catalog(obj: Any) -> bool:
    """An ObsPy ``Catalog`` (duck-typed: an ``events`` list whose items have ``origins`` and ``picks``)."""
    if isinstance(obj, (str, bytes, os.PathLike, pd.DataFrame)):
        return False
    events = getattr(obj, "events", None)
    return isinstance(events, list) and all(hasattr(e, "origins") and hasattr(e, "picks") for e in events[:5])


def _ns(t: Any) -> int | None:
    if t is None:
        return None
    ns = getattr(t, "ns", None)  # obspy UTCDateTime: integer nanoseconds
    if ns is not None:
        return int(ns)
    return int(pd.Timestamp(t).as_unit("ns").value)


def _station(pick: Any) -> str:
    wid = getattr(pick, "waveform_id", None)
    if wid is None:
        return ""
    codes = [getattr(wid, name, None) or "" for name in ("network_code", "station_code", "location_code")]
    # NET.STA.LOC; an empty location leaves a trailing '.', which SPEC §1 strips ('CI.CLC.' = 'CI.CLC').
    return ".".join(codes) if codes[0] else ".".join(codes[1:])


def _origin_of(event: Any) -> tuple[Any, str | None]:
    """(the origin whose arrivals count, or None; a warning key or None)."""
    origin = event.preferred_origin() if hasattr(event, "preferred_origin") else None
    if origin is not None:
        return origin, None
    origins = list(getattr(event, "origins", []) or [])
    if not origins:
        return None, "no_origin"
    if len(origins) == 1:
        return origins[0], None
    return origins[0], "first_origin"


def catalog_to_frame(catalog: Any, *, manual_only: bool = False, dataset: str | None = None,
                     source: str = "the Catalog") -> pd.DataFrame:
    """The reference arrivals of an ObsPy ``Catalog`` as a raw frame: ``station, phase, time`` and the facts of
    the arrival's event (:data:`EVENT_COLUMNS`: its id, its origin's latitude, longitude and depth in km, its
    preferred magnitude; NaN where the bulletin has none), which ``group_by`` may name (SPEC §14).

    What was left out is counted in ``frame.attrs["pickscale_notes"]`` (the
    engine reports those lines with the other warnings): arrivals whose pick is
    missing, events without an origin or without a preferred one among
    several, and, with ``manual_only``, picks that are not manual.

    Examples
    --------
    >>> from obspy.core.event import Arrival, Catalog, Event, Origin, Pick, WaveformStreamID
    >>> pick = Pick(time="2020-01-01T00:00:00Z", waveform_id=WaveformStreamID("CI", "CLC"), phase_hint="P")
    >>> o = Origin(time="2020-01-01T00:00:00Z", arrivals=[Arrival(pick_id=pick.resource_id, phase="Pg")])
    >>> frame = catalog_to_frame(Catalog([Event(picks=[pick], origins=[o])]))
    >>> frame[["station", "phase", "time"]]
       station phase                      time
    0  CI.CLC.    Pg 2020-01-01 00:00:00+00:00
    >>> frame.columns[3:].tolist()
    ['event', 'event_latitude', 'event_longitude', 'event_depth_km', 'magnitude']
    """
    rows, skipped = _arrivals(catalog, manual_only)
    stations, phases, times = [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
    ns = np.array([t if t is not None else np.iinfo(np.int64).min for t in times], dtype=np.int64)
    data: dict[str, Any] = {}
    if dataset is not None:
        data["dataset"] = [dataset] * len(ns)
    data["station"] = stations
    data["phase"] = phases
    data["time"] = pd.to_datetime(ns, unit="ns", utc=True)  # int64 min = NaT: an invalid row, reported
    for i, name in enumerate(EVENT_COLUMNS):
        data[name] = np.array([r[3 + i] for r in rows], dtype=object if i == 0 else np.float64)
    frame = pd.DataFrame(data)
    frame.attrs[NOTES_ATTR] = _notes(source, skipped)
    frame.attrs["pickscale_description"] = f"{source} ({skipped.events} event(s), {len(frame)} arrival(s))"
    frame.attrs["pickscale_counts"] = {"events": skipped.events, "arrivals": len(frame),
                                       "arrivals_without_pick": len(skipped.missing),
                                       "events_without_origin": skipped.no_origin,
                                       "events_first_origin": skipped.first_origin, "not_manual": skipped.not_manual}
    return frame


@dataclass
class _Skipped:
    """What a catalog's conversion counted or left out."""

    events: int = 0
    #: Pick ids of arrivals whose pick the event does not hold.
    missing: list[str] = field(default_factory=list)
    no_origin: int = 0
    first_origin: int = 0
    not_manual: int = 0


def _event_facts(event: Any, origin: Any) -> tuple[str, float, float, float, float]:
    """(event id, the origin's latitude, longitude, depth in km, the preferred magnitude): NaN where absent.

    QuakeML gives depth in metres; the reference gives it in km, as the bulletins and TauP do.
    """
    def number(obj: Any, name: str, scale: float = 1.0) -> float:
        value = getattr(obj, name, None) if obj is not None else None
        return float(value) / scale if value is not None else float("nan")

    magnitude = event.preferred_magnitude() if hasattr(event, "preferred_magnitude") else None
    if magnitude is None and getattr(event, "magnitudes", None):
        magnitude = event.magnitudes[0]
    rid = getattr(event, "resource_id", None)
    return (str(rid) if rid is not None else "", number(origin, "latitude"), number(origin, "longitude"),
            number(origin, "depth", 1000.0), number(magnitude, "mag"))


#: The event columns a Catalog's arrivals carry (SPEC §14: ``group_by`` magnitude or distance).
EVENT_COLUMNS = ("event", "event_latitude", "event_longitude", "event_depth_km", "magnitude")


def _arrivals(catalog: Any, manual_only: bool) -> tuple[list[tuple[Any, ...]], _Skipped]:
    """``(station, phase, time ns, *event facts)`` of each reference arrival, in catalog order, and what was
    left out."""
    rows: list[tuple[Any, ...]] = []
    skipped = _Skipped()
    for event in getattr(catalog, "events", catalog):
        skipped.events += 1
        origin, why = _origin_of(event)
        if why == "no_origin":
            skipped.no_origin += 1
            continue
        if why == "first_origin":
            skipped.first_origin += 1
        facts = _event_facts(event, origin)
        by_id = {str(p.resource_id): p for p in (getattr(event, "picks", None) or [])}
        for arrival in getattr(origin, "arrivals", None) or []:
            pid = getattr(arrival, "pick_id", None)
            pick = by_id.get(str(pid)) if pid is not None else None
            if pick is None and pid is not None and hasattr(pid, "get_referred_object"):
                found = pid.get_referred_object()
                pick = found if found is not None and hasattr(found, "waveform_id") else None
            if pick is None:
                skipped.missing.append(str(pid) if pid is not None else "(no pick id)")
                continue
            if manual_only and getattr(pick, "evaluation_mode", None) != "manual":
                skipped.not_manual += 1
                continue
            rows.append((_station(pick), getattr(arrival, "phase", None) or getattr(pick, "phase_hint", None) or "",
                         _ns(getattr(pick, "time", None)), *facts))
    return rows, skipped


def _notes(source: str, skipped: _Skipped) -> list[str]:
    """The lines reported with the warnings about what the conversion left out."""
    notes: list[str] = []
    if skipped.missing:
        shown = ", ".join(repr(m) for m in skipped.missing[:3])
        notes.append(f"{source}: {len(skipped.missing)} arrival(s) point to a pick the event does not hold "
                     f"(e.g. {shown}); they are left out of the reference.")
    if skipped.no_origin:
        notes.append(f"{source}: {skipped.no_origin} event(s) have no origin; their picks are not reference arrivals.")
    if skipped.first_origin:
        notes.append(f"{source}: {skipped.first_origin} event(s) have several origins and no preferred one; "
                     "the first origin's arrivals were used.")
    if skipped.not_manual:
        notes.append(f"{source}: {skipped.not_manual} arrival(s) whose pick is not manual (evaluation_mode) "
                     "left out (manual only).")
    return notes


class ObspyCatalog(SourceReader):
    """An ObsPy ``Catalog`` (duck-typed, :func:`is_catalog`), read as reference arrivals.

    Examples
    --------
    >>> class Event:
    ...     origins, picks = [], []
    >>> class Catalog:
    ...     events = [Event()]
    >>> ObspyCatalog().guess_can_open(Catalog()), ObspyCatalog().guess_can_open([Event()])
    (True, False)
    """

    name = "catalog"
    description = "ObsPy Catalog"

    def guess_can_open(self, source: Any) -> bool:
        return is_catalog(source)

    def open(self, source: Any, *, role: str, manual_only: bool = False, dataset: str | None = None,
             name: str | None = None) -> pd.DataFrame:
        name = name or f"the {role} Catalog"
        frame = catalog_to_frame(source, manual_only=manual_only, dataset=dataset, source=name)
        if role == "picks":
            raise InputError(f"{name}: an ObsPy Catalog holds no pick confidence; pass it as the reference.")
        return with_dataset(frame, dataset)
