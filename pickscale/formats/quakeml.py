"""Bulletins through ObsPy: QuakeML (and every format ``obspy.read_events`` reads) as reference arrivals.

ObsPy is an optional dependency (``pip install 'pickscale[obspy]'``): it is
imported only when a bulletin is read, never by the core or the workers.

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
``evaluation_mode`` is ``"manual"``.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..readers import NOTES_ATTR

__all__ = [
    "BULLETIN_SUFFIXES",
    "OBSPY_HINT",
    "is_catalog",
    "catalog_to_frame",
    "bulletin_files",
    "read_bulletins",
    "xml_root",
]

#: File name endings read as bulletins (through ``obspy.read_events``, format detected by ObsPy):
#: QuakeML, SC3ML/SCML, NonLinLoc ``.hyp``, hypoDD ``.pha``, Nordic, IMS1.0.
BULLETIN_SUFFIXES = (".xml", ".qml", ".quakeml", ".sc3ml", ".scml", ".hyp", ".pha", ".nordic", ".ims")
#: What a user without ObsPy is told.
OBSPY_HINT = "reading a bulletin (QuakeML, SC3ML, NonLinLoc, hypoDD ...) needs ObsPy: pip install 'pickscale[obspy]'"

_BULLETIN_ROOTS = ("quakeml", "seiscomp", "eventparameters")
_SNIFF = 4096


def _obspy() -> Any:
    try:
        import obspy  # noqa: F401
        from obspy.core.event import read_events
    except ImportError:
        raise InputError(OBSPY_HINT + ".") from None
    return read_events


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
    """The reference arrivals of an ObsPy ``Catalog`` as a raw frame (``station, phase, time``).

    What was left out is counted in ``frame.attrs["pickscale_notes"]`` (the
    engine reports those lines with the other warnings): arrivals whose pick is
    missing, events without an origin or without a preferred one among
    several, and, with ``manual_only``, picks that are not manual.

    Examples
    --------
    >>> from obspy.core.event import Catalog, Event, Origin, Arrival, Pick, WaveformStreamID  # doctest: +SKIP
    >>> pick = Pick(time="2020-01-01T00:00:00Z", waveform_id=WaveformStreamID("CI", "CLC"), phase_hint="P")  # doctest: +SKIP
    >>> o = Origin(time="2020-01-01T00:00:00Z", arrivals=[Arrival(pick_id=pick.resource_id, phase="Pg")])  # doctest: +SKIP
    >>> catalog_to_frame(Catalog([Event(picks=[pick], origins=[o])]))  # doctest: +SKIP
      station phase                      time
    0     CI.CLC    Pg 2020-01-01 00:00:00+00:00
    """
    stations: list[str] = []
    phases: list[Any] = []
    times: list[Any] = []
    n_events = 0
    missing: list[str] = []
    no_origin = first_origin = not_manual = 0
    for event in getattr(catalog, "events", catalog):
        n_events += 1
        origin, why = _origin_of(event)
        if why == "no_origin":
            no_origin += 1
            continue
        if why == "first_origin":
            first_origin += 1
        by_id = {str(p.resource_id): p for p in (getattr(event, "picks", None) or [])}
        for arrival in getattr(origin, "arrivals", None) or []:
            pid = getattr(arrival, "pick_id", None)
            pick = by_id.get(str(pid)) if pid is not None else None
            if pick is None and pid is not None and hasattr(pid, "get_referred_object"):
                found = pid.get_referred_object()
                pick = found if found is not None and hasattr(found, "waveform_id") else None
            if pick is None:
                missing.append(str(pid) if pid is not None else "(no pick id)")
                continue
            if manual_only and getattr(pick, "evaluation_mode", None) != "manual":
                not_manual += 1
                continue
            stations.append(_station(pick))
            phases.append(getattr(arrival, "phase", None) or getattr(pick, "phase_hint", None) or "")
            times.append(_ns(getattr(pick, "time", None)))
    ns = np.array([t if t is not None else np.iinfo(np.int64).min for t in times], dtype=np.int64)
    data: dict[str, Any] = {}
    if dataset is not None:
        data["dataset"] = [dataset] * len(ns)
    data["station"] = stations
    data["phase"] = phases
    data["time"] = pd.to_datetime(ns, unit="ns", utc=True)  # int64 min = NaT: an invalid row, reported
    frame = pd.DataFrame(data)
    notes: list[str] = []
    if missing:
        shown = ", ".join(repr(m) for m in missing[:3])
        notes.append(f"{source}: {len(missing)} arrival(s) point to a pick the event does not hold "
                     f"(e.g. {shown}); they are left out of the reference.")
    if no_origin:
        notes.append(f"{source}: {no_origin} event(s) have no origin; their picks are not reference arrivals.")
    if first_origin:
        notes.append(f"{source}: {first_origin} event(s) have several origins and no preferred one; "
                     "the first origin's arrivals were used.")
    if not_manual:
        notes.append(f"{source}: {not_manual} arrival(s) whose pick is not manual (evaluation_mode) "
                     "left out (manual only).")
    frame.attrs[NOTES_ATTR] = notes
    frame.attrs["pickscale_description"] = f"{source} ({n_events} event(s), {len(frame)} arrival(s))"
    frame.attrs["pickscale_counts"] = {"events": n_events, "arrivals": len(frame),
                                       "arrivals_without_pick": len(missing), "events_without_origin": no_origin,
                                       "events_first_origin": first_origin, "not_manual": not_manual}
    return frame


# --------------------------------------------------------------------- files

def xml_root(head: bytes) -> str | None:
    """The local name of the root element of an XML document's first bytes, or None if not XML.

    Examples
    --------
    >>> xml_root(b"<?xml version='1.0'?>\\n<!-- c -->\\n<q:quakeml xmlns:q='x'>")
    'quakeml'
    >>> xml_root(b"station,phase") is None
    True
    """
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text.startswith(b"<"):
        return None
    i = 0
    while True:
        j = text.find(b"<", i)
        if j < 0 or j + 1 >= len(text):
            return ""
        nxt = text[j + 1:j + 2]
        if nxt in (b"?", b"!"):
            end = text.find(b">", j)
            if end < 0:
                return ""
            i = end + 1
            continue
        name = text[j + 1:].split(None, 1)[0].split(b">", 1)[0].split(b"/", 1)[0]
        return name.split(b":")[-1].decode("utf-8", "replace")


def is_bulletin_root(root: str | None) -> bool:
    return bool(root) and root.casefold() in _BULLETIN_ROOTS


def _head(path: str) -> bytes:
    import fsspec

    try:
        with fsspec.open(path, "rb", compression="infer") as f:
            return f.read(_SNIFF)
    except (OSError, ValueError):
        return b""


def _is_bulletin_name(path: str) -> bool:
    low = path.lower()
    if low.endswith(".gz"):
        low = low[:-3]
    return low.endswith(BULLETIN_SUFFIXES)


def bulletin_files(source: Any) -> list[str] | None:
    """The bulletin files that ``source`` names, or None when it is not a bulletin.

    A file whose name ends in one of :data:`BULLETIN_SUFFIXES`, or that is
    XML with another name (not CSV/Parquet); a glob or folder whose files are
    all of that kind (a folder holding CSV or Parquet files is not a
    bulletin folder).  A list of sources is a bulletin when all its items are.
    """
    if isinstance(source, (list, tuple)):
        if not source or not all(isinstance(s, (str, os.PathLike)) for s in source):
            return None
        found: list[str] = []
        for item in source:
            files = bulletin_files(item)
            if files is None:
                return None
            found.extend(files)
        return list(dict.fromkeys(found))
    if not isinstance(source, (str, os.PathLike)):
        return None
    import fsspec

    from ..readers import _SOURCE_SUFFIXES, _has_magic

    text = os.fspath(source)
    try:
        fs, path = fsspec.core.url_to_fs(text)
        if _has_magic(path):
            matched = [p for p in sorted(fs.glob(path)) if not fs.isdir(p)]
        elif fs.isdir(path):
            matched = sorted(p for p in fs.find(path)
                             if _is_bulletin_name(p) or p.lower().endswith(_SOURCE_SUFFIXES))
        elif fs.exists(path):
            matched = [path]
        else:
            return None
    except (OSError, ValueError):
        return None
    if not matched:
        return None
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    local = protocol in ("file", "local")
    out = []
    for p in matched:
        name = p if local else fs.unstrip_protocol(p)
        if _is_bulletin_name(p):
            out.append(name)
        elif not p.lower().endswith(_SOURCE_SUFFIXES) and xml_root(_head(name)) is not None:
            out.append(name)  # XML under another name: read (or refused) as a bulletin
        else:
            return None
    return out


def _read_one(path: str) -> Any:
    import fsspec

    head = _head(path)
    root = xml_root(head)
    if root is not None and not is_bulletin_root(root):
        raise InputError(
            f"{path}: is an XML file whose root element is <{root or '?'}>, not a bulletin "
            "(QuakeML <quakeml>, SC3ML <seiscomp>); pickscale reads reference arrivals from a bulletin, "
            "a CSV or a Parquet file."
        )
    read_events = _obspy()
    try:
        with fsspec.open(path, "rb", compression="infer") as f:
            data = io.BytesIO(f.read())
        return read_events(data)
    except InputError:
        raise
    except Exception as exc:  # ObsPy raises TypeError / ValueError / lxml errors for what it cannot read
        raise InputError(f"{path}: cannot be read as a bulletin by ObsPy ({type(exc).__name__}: {exc}).") from None


def read_bulletins(paths: Sequence[str], *, manual_only: bool = False, dataset: str | None = None,
                   description: str | None = None) -> pd.DataFrame:
    """Read bulletin files with ``obspy.read_events`` into one raw reference frame (see :func:`catalog_to_frame`)."""
    frames = []
    for path in paths:
        frames.append(catalog_to_frame(_read_one(path), manual_only=manual_only, dataset=dataset, source=path))
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    notes = [n for f in frames for n in f.attrs.get(NOTES_ATTR, [])]
    counts: dict[str, int] = {}
    for f in frames:
        for k, v in f.attrs.get("pickscale_counts", {}).items():
            counts[k] = counts.get(k, 0) + v
    frame.attrs = {}
    frame.attrs[NOTES_ATTR] = notes
    frame.attrs["pickscale_counts"] = counts
    what = description or (paths[0] if len(paths) == 1 else f"{len(paths)} bulletin files")
    frame.attrs["pickscale_description"] = (f"{what} ({counts.get('events', 0)} event(s), "
                                            f"{counts.get('arrivals', 0)} arrival(s))")
    frame.attrs["pickscale_files"] = list(paths)
    return frame

