"""The events and the stations a predicted reference is computed from (SPEC §17).

Events: a CSV/Parquet file or a DataFrame with ``time, latitude, longitude, depth_km`` (optional ``event``,
``magnitude``), or a bulletin (QuakeML or any file ``obspy.read_events`` reads, found as
:func:`~pickscale.io.formats.bulletins.bulletin_files` finds them) or an ObsPy ``Catalog``: each event's
preferred origin (as for a reference read from a bulletin, SPEC §1).

Stations: the stations table of ``--stations`` (:func:`~pickscale.scope.grouping.read_stations`, SPEC §14)
with ``latitude`` and ``longitude`` columns, or FDSN StationXML (``obspy.read_inventory``) or an ObsPy
``Inventory``: one row per ``NET.STA``.

Every bad value is an :class:`~pickscale.errors.InputError` naming the file, the column and the first rows
(or events): a predicted reference is only as good as its coordinates, so nothing is guessed or dropped.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..io import read_raw
from ..io.formats.bulletins import _read_one, bulletin_files
from ..io.formats.quakeml import _ns, _origin_of
from ..io.messages import N_EXAMPLES
from ..io.stationxml import checked_numbers, is_obspy_kind, is_station_source, read_station_xml, rows_of
from ..io.times import parse_time
from ..scope.grouping import read_stations

__all__ = ["read_events", "read_station_coordinates", "is_station_source", "obspy_hint", "iso_times"]

#: What a user without ObsPy is told (TauP, QuakeML and StationXML all come with it).
OBSPY_HINT = "predicting arrival times needs ObsPy (TauP): pip install 'pickscale[obspy]'"

_EVENT_COLUMNS = ("time", "latitude", "longitude", "depth_km")


def obspy_hint() -> str:
    """The message for a missing ObsPy.

    Examples
    --------
    >>> "pickscale[obspy]" in obspy_hint()
    True
    """
    return OBSPY_HINT + "."


def _lookup(frame: pd.DataFrame) -> dict[str, Any]:
    """Column names matched stripped and case-insensitively; the first hit wins (as SPEC §1's aliases)."""
    return {str(c).strip().lower(): c for c in reversed(list(frame.columns))}


def read_events(source: Any) -> pd.DataFrame:
    """The events as a frame: ``event`` (text), ``time`` (int64 ns UTC), ``latitude``, ``longitude``,
    ``depth_km`` and ``magnitude`` (float64, NaN where not given).

    Parameters
    ----------
    source
        A CSV/Parquet path or a DataFrame (``time, latitude, longitude, depth_km``, optional ``event`` and
        ``magnitude``), a bulletin path (QuakeML …) or an ObsPy ``Catalog``.

    Raises
    ------
    InputError
        A missing file or column, a bad value (a time that does not parse, a latitude outside [-90, 90], a
        longitude outside [-180, 360], a depth below 0 or missing), an event id given twice, no event.

    Examples
    --------
    >>> ev = read_events(pd.DataFrame({"time": ["2024-01-01T00:00:00Z"], "latitude": [45.0], "longitude": [0.0],
    ...                                "depth_km": [10.0]}))
    >>> ev[["event", "time", "depth_km"]].to_dict("records")
    [{'event': '2024-01-01T00:00:00.000000000Z', 'time': 1704067200000000000, 'depth_km': 10.0}]
    """
    if is_obspy_kind(source, "events"):
        return _check_events(_catalog_events(source, "the events Catalog"), "the events Catalog")
    if isinstance(source, pd.DataFrame):
        return _table_events(source, "the events DataFrame")
    if not isinstance(source, (str, os.PathLike)):
        raise InputError(f"events must be a CSV/Parquet or QuakeML path, a DataFrame or an ObsPy Catalog; got "
                         f"{type(source).__name__}.")
    path = os.fspath(source)
    if "://" not in path and not os.path.exists(path):
        raise InputError(f"events file {path} does not exist.")
    files = bulletin_files(path)
    if files:
        frames = [_catalog_events(_read_one(f), f) for f in files]
        return _check_events(pd.concat(frames, ignore_index=True), path)
    try:
        raw = read_raw(path)
    except InputError:
        raise
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot be read as an events table ({exc}).") from None
    return _table_events(raw, path)


def _table_events(raw: pd.DataFrame, where: str) -> pd.DataFrame:
    found = _lookup(raw)
    missing = [c for c in _EVENT_COLUMNS if c not in found]
    if missing:
        raise InputError(f"{where}: the events table needs the columns {', '.join(_EVENT_COLUMNS)} (event and "
                         f"magnitude optional); missing {', '.join(missing)} (columns found: "
                         f"{', '.join(map(str, raw.columns)) or 'none'}).")
    frame = raw.rename(columns={found[c]: c for c in (*_EVENT_COLUMNS, "event", "magnitude") if c in found})
    problems: list[str] = []
    ns, valid = parse_time(frame["time"].reset_index(drop=True))
    if not valid.all():
        problems.append(f"column time: {int((~valid).sum())} unreadable time(s) (rows {rows_of(~valid)}); expected "
                        "ISO-8601 or seconds since 1970, as in the inputs")
    out: dict[str, Any] = {"time": ns.astype(np.int64)}
    out["latitude"] = checked_numbers(frame, "latitude", -90.0, 90.0, problems)
    out["longitude"] = checked_numbers(frame, "longitude", -180.0, 360.0, problems)
    out["depth_km"] = checked_numbers(frame, "depth_km", 0.0, math.inf, problems)
    if "magnitude" in frame:
        magnitude = pd.to_numeric(pd.Series(frame["magnitude"]).astype(object).replace("", None), errors="coerce")
        out["magnitude"] = magnitude.to_numpy(np.float64, na_value=np.nan)
    else:
        out["magnitude"] = np.full(len(frame), np.nan)
    if "event" in frame:
        text = frame["event"].astype(object).where(frame["event"].notna(), "").astype(str).str.strip()
        empty = (text == "").to_numpy(bool)
        if empty.any():
            problems.append(f"column event: {int(empty.sum())} empty event id(s) (rows {rows_of(empty)})")
        out["event"] = text.to_numpy(object)
    elif valid.all():
        out["event"] = iso_times(ns)  # the origin time names the event: unique in practice, and sorts in time
    if problems:
        raise InputError(f"{where}: the events table has bad rows (counting the header as row 1):\n  - "
                         + "\n  - ".join(problems))
    return _check_events(pd.DataFrame(out), where)


def _check_events(frame: pd.DataFrame, where: str) -> pd.DataFrame:
    if len(frame) == 0:
        raise InputError(f"{where}: no event to predict arrivals of.")
    twice = frame.duplicated("event", keep=False).to_numpy(bool)
    if twice.any():
        shown = ", ".join(sorted({str(e) for e in frame.loc[twice, "event"]})[:N_EXAMPLES])
        raise InputError(f"{where}: {int(twice.sum())} rows share an event id ({shown}); give each event its own "
                         "id (an event column).")
    frame = frame[["event", "time", "latitude", "longitude", "depth_km", "magnitude"]].reset_index(drop=True)
    frame.attrs["pickscale_source"] = where
    return frame


def iso_times(ns: Any) -> np.ndarray:
    """int64 nanoseconds as ISO-8601 UTC text with nine decimals and ``Z``: exact, and what the readers parse.

    Examples
    --------
    >>> iso_times([1704067233826644000]).tolist()
    ['2024-01-01T00:00:33.826644000Z']
    """
    text = np.datetime_as_string(np.asarray(ns, dtype=np.int64).view("M8[ns]"), unit="ns")
    return np.asarray([t + "Z" for t in text], dtype=object)


def _catalog_events(catalog: Any, where: str) -> pd.DataFrame:
    """One row per event of an ObsPy ``Catalog``: its preferred origin (else its only, else its first origin)."""
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    for k, event in enumerate(getattr(catalog, "events", [])):
        name = str(getattr(event, "resource_id", "") or f"event {k + 1}")
        origin, _ = _origin_of(event)  # SPEC §1's rule for a bulletin: the preferred origin
        if origin is None:
            problems.append(f"{name}: no origin")
            continue
        depth_m = getattr(origin, "depth", None)  # QuakeML depths are in metres
        values = {"time": _ns(getattr(origin, "time", None)), "latitude": getattr(origin, "latitude", None),
                  "longitude": getattr(origin, "longitude", None),
                  "depth_km": None if depth_m is None else float(depth_m) / 1000.0}
        absent = [k for k, v in values.items() if v is None]
        if absent:
            problems.append(f"{name}: no {', '.join(absent)} in its origin")
            continue
        magnitude = event.preferred_magnitude() if hasattr(event, "preferred_magnitude") else None
        if magnitude is None and getattr(event, "magnitudes", None):
            magnitude = event.magnitudes[0]
        mag = getattr(magnitude, "mag", None)
        rows.append({"event": name, **values, "magnitude": np.nan if mag is None else float(mag)})
    frame = pd.DataFrame(rows, columns=["event", "time", "latitude", "longitude", "depth_km", "magnitude"])
    for column, low, high in (("latitude", -90.0, 90.0), ("longitude", -180.0, 360.0), ("depth_km", 0.0, math.inf)):
        bad = ~((frame[column] >= low) & (frame[column] <= high)).to_numpy(bool)
        for name in frame.loc[bad, "event"].head(N_EXAMPLES):
            bounds = f"below {low:g}" if math.isinf(high) else f"outside [{low:g}, {high:g}]"
            problems.append(f"{name}: {column} {frame.loc[frame.event == name, column].iat[0]:g} {bounds}")
    if problems:
        raise InputError(f"{where}: {len(problems)} event(s) cannot be predicted:\n  - "
                         + "\n  - ".join(problems[:N_EXAMPLES]) + ("\n  - …" if len(problems) > N_EXAMPLES else ""))
    return frame.astype({"time": np.int64, "latitude": np.float64, "longitude": np.float64,
                         "depth_km": np.float64, "magnitude": np.float64})


def read_station_coordinates(source: Any) -> pd.DataFrame:
    """The stations as a frame: ``station`` (as SPEC §1 normalises it), ``latitude``, ``longitude`` and, when
    the table has one, ``dataset``.

    Parameters
    ----------
    source
        The stations table of SPEC §14 (CSV/Parquet path or DataFrame) with ``latitude`` and ``longitude``
        columns, a StationXML path or an ObsPy ``Inventory`` (station = ``NET.STA``).

    Raises
    ------
    InputError
        A missing file or column, a coordinate missing or out of range, a station listed twice (in a table).

    Examples
    --------
    >>> st = read_station_coordinates(pd.DataFrame({"station": ["OO.AXAS1."], "latitude": ["45.9"],
    ...                                             "longitude": ["-129.8"], "site_class": ["obs"]}))
    >>> st.to_dict("records")
    [{'station': 'OO.AXAS1', 'latitude': 45.9, 'longitude': -129.8}]
    """
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if "://" not in path and not os.path.exists(path):
            raise InputError(f"stations file {path} does not exist.")
    if is_station_source(source):  # StationXML or an ObsPy Inventory
        return read_station_xml(source)
    table = read_stations(source)  # the --stations file of SPEC §14: its checks and station names
    where = table.attrs.get("pickscale_source", "the stations table")
    found = _lookup(table)
    missing = [c for c in ("latitude", "longitude") if c not in found]
    if missing:
        raise InputError(f"{where}: predicting arrivals needs the station coordinates: columns latitude and "
                         f"longitude (decimal degrees); missing {', '.join(missing)} (columns found: "
                         f"{', '.join(map(str, table.columns))}).")
    table = table.rename(columns={found["latitude"]: "latitude", found["longitude"]: "longitude"})
    problems: list[str] = []
    out: dict[str, Any] = {}
    if "dataset" in table:
        out["dataset"] = table["dataset"].astype(str).str.strip().to_numpy(object)
    out["station"] = table["station"].to_numpy(object)
    out["latitude"] = checked_numbers(table, "latitude", -90.0, 90.0, problems)
    out["longitude"] = checked_numbers(table, "longitude", -180.0, 360.0, problems)
    if problems:
        raise InputError(f"{where}: the stations table has bad rows (counting the header as row 1):\n  - "
                         + "\n  - ".join(problems))
    frame = pd.DataFrame(out)
    frame.attrs["pickscale_source"] = where
    return frame
