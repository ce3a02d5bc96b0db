"""FDSN StationXML (or an ObsPy ``Inventory``) as a stations table: ``station`` (``NET.STA``), ``latitude``,
``longitude`` -- for ``--stations`` (SPEC §14, :func:`pickscale.scope.grouping.read_stations`) and for
``pickscale predict`` (SPEC §17, :mod:`pickscale.prediction.inputs`); and the checks of numeric columns both use.

Examples
--------
>>> is_station_source(pd.DataFrame({"station": ["A"]})), is_station_source("no/such/file.csv")
(False, False)
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from .formats.bulletins import _head, xml_root
from .formats.quakeml import _ns
from .messages import N_EXAMPLES

__all__ = ["is_station_source", "read_station_xml", "is_obspy_kind", "checked_numbers", "rows_of"]

#: What a user without ObsPy is told when a stations file is StationXML.
OBSPY_HINT = "reading StationXML needs ObsPy: pip install 'pickscale[obspy]'"


def rows_of(mask: np.ndarray) -> str:
    """The first rows where ``mask`` holds, as a file's rows (the header is row 1)."""
    rows = (np.flatnonzero(mask)[:N_EXAMPLES] + 2).tolist()  # the header is row 1, as the other readers say
    return ", ".join(map(str, rows)) + (" …" if int(mask.sum()) > N_EXAMPLES else "")


def checked_numbers(frame: pd.DataFrame, column: str, low: float, high: float, problems: list[str]) -> np.ndarray:
    """A numeric column in [low, high]; bad rows are added to ``problems``."""
    values = pd.to_numeric(pd.Series(frame[column]).astype(object).replace("", None), errors="coerce")
    out = values.to_numpy(np.float64, na_value=np.nan)
    bad = ~np.isfinite(out) | (out < low) | (out > high)
    if bad.any():
        bounds = f"below {low:g}" if math.isinf(high) else f"outside [{low:g}, {high:g}]"
        problems.append(f"column {column}: {int(bad.sum())} value(s) missing, not a number or {bounds} "
                        f"(rows {rows_of(bad)})")
    return out


def is_obspy_kind(obj: Any, attribute: str) -> bool:
    """Whether ``obj`` is an ObsPy object with a list ``attribute`` (``events``: a Catalog; ``networks``: an
    Inventory), not a path or a table."""
    return not isinstance(obj, (str, bytes, os.PathLike, pd.DataFrame)) and isinstance(getattr(obj, attribute, None),
                                                                                           list)


def is_station_source(source: Any) -> bool:
    """Whether ``source`` is FDSN StationXML (a local path) or an ObsPy ``Inventory`` (not a table).

    Examples
    --------
    >>> is_station_source(pd.DataFrame({"station": ["A"]})), is_station_source("no/such/file.csv")
    (False, False)
    """
    if is_obspy_kind(source, "networks"):
        return True
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        return "://" not in path and os.path.isfile(path) and _is_station_xml(path)
    return False


def read_station_xml(source: Any) -> pd.DataFrame:
    """An ObsPy ``Inventory`` or a StationXML path (:func:`is_station_source`) as one row per ``NET.STA`` with
    its ``latitude`` and ``longitude`` (of its latest epoch; ``attrs["pickscale_notes"]`` says where epochs
    differ)."""
    if is_obspy_kind(source, "networks"):
        return _inventory_stations(source, "the stations Inventory")
    path = os.fspath(source)
    obspy = _obspy()
    try:
        inventory = obspy.read_inventory(path)
    except Exception as exc:  # ObsPy raises many kinds for a file it cannot read
        raise InputError(f"{path}: cannot be read as StationXML by ObsPy ({type(exc).__name__}: "
                         f"{exc}).") from None
    return _inventory_stations(inventory, path)


def _obspy() -> Any:
    try:
        import obspy
    except ImportError:
        raise InputError(OBSPY_HINT + ".") from None
    return obspy


def _is_station_xml(path: str) -> bool:
    """An XML file whose root element is ``FDSNStationXML`` (SEED and other formats come as StationXML)."""
    root = xml_root(_head(path))
    return root is not None and root.casefold() == "fdsnstationxml"


def _inventory_stations(inventory: Any, where: str) -> pd.DataFrame:
    """One row per ``NET.STA``: of a station listed in several epochs, the coordinates of the latest start.

    A station's epochs usually share their coordinates (a new epoch is a new sensor or response); where
    they do not (a redeployed ocean-bottom station), the latest is used and a note says so.
    """
    epochs: dict[str, list[tuple[float, float, float]]] = {}
    for network in getattr(inventory, "networks", []):
        for station in getattr(network, "stations", []):
            key = f"{network.code}.{station.code}"
            start = _ns(getattr(station, "start_date", None))  # a UTCDateTime (or text, when built by hand)
            epochs.setdefault(key, []).append((float(start) if start is not None else -math.inf,
                                               station.latitude, station.longitude))
    if not epochs:
        raise InputError(f"{where}: the inventory lists no station.")
    rows, moved = [], []
    for key in sorted(epochs):
        listed = sorted(epochs[key], key=lambda e: e[0])
        if len({(e[1], e[2]) for e in listed}) > 1:
            moved.append(key)
        rows.append({"station": key, "latitude": listed[-1][1], "longitude": listed[-1][2]})
    frame = pd.DataFrame(rows, columns=["station", "latitude", "longitude"])
    problems: list[str] = []
    frame["latitude"] = checked_numbers(frame, "latitude", -90.0, 90.0, problems)
    frame["longitude"] = checked_numbers(frame, "longitude", -180.0, 360.0, problems)
    if problems:
        raise InputError(f"{where}: stations with bad coordinates (rows of the sorted stations, from 2):\n  - "
                         + "\n  - ".join(problems))
    frame.attrs["pickscale_source"] = where
    frame.attrs["pickscale_notes"] = ([f"{where}: {len(moved)} station(s) have epochs at different coordinates "
                                       f"({', '.join(moved[:N_EXAMPLES])}); the latest epoch's were used."]
                                      if moved else [])
    return frame
