"""SPEC §14, "Epicentral distance": ``group_by = "distance:E0,E1,…"`` (km), computed per arrival.

The distance from the arrival's event (its latitude and longitude: reference columns, e.g. a bulletin's
preferred origin) to its station (the reference's station coordinates, else the ``stations`` table's
``latitude``, ``longitude``) is the great circle on a sphere of radius :data:`EARTH_RADIUS_KM` -- the sphere
TauP's distances are on (ObsPy's ``locations2degrees``), so a reference predicted from travel times
(:func:`pickscale.predict`) and the groups agree.  The WGS84 geodesic differs by at most ~0.6 %.

Numpy and pandas only.

Examples
--------
>>> round(float(epicentral_km(0.0, 0.0, 0.0, 1.0)), 3)  # one degree of a great circle
111.195
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ..errors import OptionsError

__all__ = ["EARTH_RADIUS_KM", "DISTANCE", "COORDINATES", "kept_columns", "epicentral_km", "arrival_distances"]

#: The sphere's radius (km): the mean Earth radius, as ``obspy.geodetics`` takes it.
EARTH_RADIUS_KM = 6371.0
#: The group column computed here (any case); a reference column of that name is used as it is instead.
DISTANCE = "distance"
#: Each coordinate and the reference columns that may hold it, in the order they are tried (exact name,
#: else ignoring case): ours, STEAD's (``source_*``, ``receiver_*``) and SAC's.
COORDINATES: dict[str, tuple[str, ...]] = {
    "event_latitude": ("event_latitude", "source_latitude", "evla"),
    "event_longitude": ("event_longitude", "source_longitude", "evlo"),
    "station_latitude": ("station_latitude", "receiver_latitude", "stla"),
    "station_longitude": ("station_longitude", "receiver_longitude", "stlo"),
}


def kept_columns() -> tuple[str, ...]:
    """What the reader keeps of the reference for distance groups: ``distance`` itself, then every
    coordinate's candidates (:data:`COORDINATES`), in that order."""
    return (DISTANCE, *(name for names in COORDINATES.values() for name in names))


def epicentral_km(lat1: ArrayLike, lon1: ArrayLike, lat2: ArrayLike, lon2: ArrayLike) -> np.ndarray:
    """Great-circle distance (km) on the sphere of :data:`EARTH_RADIUS_KM`, by the haversine formula (exact
    at short range, where the law of cosines loses digits).

    Examples
    --------
    >>> epicentral_km([0.0, 90.0], [0.0, 0.0], [0.0, -90.0], [180.0, 0.0]).round(1).tolist()  # half a circle
    [20015.1, 20015.1]
    """
    p1, l1, p2, l2 = (np.radians(np.asarray(v, dtype=np.float64)) for v in (lat1, lon1, lat2, lon2))
    h = np.sin((p2 - p1) / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin((l2 - l1) / 2) ** 2
    return 2 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.clip(h, 0.0, 1.0)))


class CoordinateError(OptionsError):
    """Values of a coordinate that are no coordinates: which (``order``: its place among the four checked, in
    the order they are checked), the rows (``bad``: positions among the values given) and the values."""

    def __init__(self, order: int, what: str, low: float, high: float, bad: np.ndarray, values: np.ndarray) -> None:
        self.order, self.what, self.low, self.high = order, what, low, high
        self.bad, self.values = bad, values
        shown = ", ".join(repr(v) for v in pd.unique(pd.Series(values[bad], dtype=object))[:3])
        super().__init__(coordinate_message(what, low, high, int(bad.size), shown), options=("group_by",))


def coordinate_message(what: str, low: float, high: float, n_bad: int, shown: str) -> str:
    """The message of :class:`CoordinateError` (``shown``: the first three distinct values, as ``repr``)."""
    return (f"group_by distance: {n_bad} value(s) of {what} are not coordinates in [{low:g}, {high:g}] degrees "
            f"({shown}).")


def _numbers(values: np.ndarray, what: str, low: float, high: float, order: int = 0) -> np.ndarray:
    """Values as floats (NaN where missing); a value that is no number, or out of range, is an error."""
    as_float = pd.to_numeric(pd.Series(values, dtype=object).replace("", np.nan), errors="coerce").to_numpy(float)
    given = pd.notna(pd.Series(values, dtype=object).replace("", np.nan)).to_numpy()
    bad = (given & np.isnan(as_float)) | (np.abs(as_float) > max(abs(low), abs(high)))
    if bad.any():
        raise CoordinateError(order, what, low, high, np.flatnonzero(bad), values)
    return as_float


def arrival_distances(kept: Callable[[str], np.ndarray | None], n: int,
                      station_coordinates: Callable[[], tuple[np.ndarray, np.ndarray] | None]) -> np.ndarray:
    """Per arrival: the epicentral distance (km; NaN where a coordinate is missing: the group ``missing``).

    Parameters
    ----------
    kept : callable
        A reference column's values by name (:func:`kept_columns`), or None when the reference has none.
    n : int
        Arrivals.
    station_coordinates : callable
        The stations table's (latitude, longitude) per arrival, or None without a table; asked only when the
        reference has no station coordinates.

    Raises
    ------
    OptionsError
        No event coordinates; no station coordinates in the reference nor a stations table.

    Examples
    --------
    >>> cols = {"source_latitude": np.array([0.0, None], object), "source_longitude": np.array([0.0, 1.0], object),
    ...         "stla": np.array([0.0, 0.0], object), "stlo": np.array([1.0, 1.0], object)}
    >>> arrival_distances(cols.get, 2, lambda: None).round(3).tolist()
    [111.195, nan]
    """
    def first(name: str) -> np.ndarray | None:
        for candidate in COORDINATES[name]:
            values = kept(candidate)
            if values is not None:
                return values
        return None

    ev_lat, ev_lon = first("event_latitude"), first("event_longitude")
    if ev_lat is None or ev_lon is None:
        raise OptionsError("group_by distance: the reference has no event coordinates (a column "
                           f"{' or '.join(COORDINATES['event_latitude'])} and one "
                           f"{' or '.join(COORDINATES['event_longitude'])}; a QuakeML bulletin's preferred origin "
                           "gives them), and no column distance.", options=("group_by",))
    st_lat, st_lon = first("station_latitude"), first("station_longitude")
    if st_lat is None or st_lon is None:
        from_table = station_coordinates()
        if from_table is None:
            raise OptionsError("group_by distance: the station coordinates are neither in the reference (a column "
                               f"{' or '.join(COORDINATES['station_latitude'])}) nor given as a stations table "
                               "with latitude and longitude (stations, --stations FILE: CSV or StationXML).",
                               options=("group_by", "stations"))
        st_lat, st_lon = from_table
    lat1 = _numbers(np.asarray(ev_lat, dtype=object), "the event latitude", -90, 90, 0)
    lon1 = _numbers(np.asarray(ev_lon, dtype=object), "the event longitude", -360, 360, 1)
    lat2 = _numbers(np.asarray(st_lat, dtype=object), "the station latitude", -90, 90, 2)
    lon2 = _numbers(np.asarray(st_lon, dtype=object), "the station longitude", -360, 360, 3)
    assert lat1.size == n
    return epicentral_km(lat1, lon1, lat2, lon2)
