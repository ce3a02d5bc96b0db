"""A reference predicted from travel times (SPEC §17): for data that no analyst picked.

:func:`predict` gives, per event and station, the first P and the first S arrival of a 1-D Earth model
(ObsPy's TauP, ``iasp91`` by default) as reference rows that :func:`pickscale.score` reads as they are:
``station, phase, time`` (``dataset`` when given) plus ``event`` and the geometry (``taup_phase``,
``travel_time_s``, ``distance_deg``, ``distance_km``, ``depth_km``, and ``magnitude`` when the events have
one), columns the reference readers ignore and ``group_by`` (SPEC §14) may name.

ObsPy is an optional dependency (``pip install 'pickscale[obspy]'``): it is imported when :func:`predict`
runs, never by the core or the workers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError, OptionsError
from .inputs import iso_times, obspy_hint, read_events, read_station_coordinates

__all__ = ["predict", "FIRST_ARRIVAL_PHASES", "EARTH_RADIUS_KM", "iso_times"]

#: The TauP phases whose earliest arrival is the "first P" and the "first S", in the order that breaks a
#: tie of equal times (the named crustal paths first: TauP's ``P`` also holds the ``Pg`` and ``Pn`` paths).
#: ``Pb``/``Sb`` are not TauP phase names; depth phases (``pP``, ``sS``) and reflections (``PcP``) are not
#: first arrivals.
FIRST_ARRIVAL_PHASES: dict[str, tuple[str, ...]] = {
    "P": ("Pn", "Pg", "p", "P", "Pdiff", "PKP", "PKIKP", "PKiKP"),
    "S": ("Sn", "Sg", "s", "S", "Sdiff", "SKS", "SKIKS"),
}
#: The sphere distances are measured on, in km (ObsPy's ``degrees2kilometers`` default; the radius of
#: iasp91, ak135 and PREM).
EARTH_RADIUS_KM = 6371.0


def _phase_kinds(phases: Any) -> tuple[str, ...]:
    items = phases.replace(",", " ").split() if isinstance(phases, str) else list(phases)
    kinds = tuple(dict.fromkeys(str(p).strip() for p in items))
    unknown = [k for k in kinds if k not in FIRST_ARRIVAL_PHASES]
    if not kinds or unknown:
        raise OptionsError(f"phases must name P, S or both (the first P-type and S-type arrivals); got "
                           f"{', '.join(map(repr, unknown)) or 'none'}.", options=("phases",))
    return tuple(k for k in FIRST_ARRIVAL_PHASES if k in kinds)  # P before S, whatever the order given


def _taup_model(model: Any) -> Any:
    """The TauP model, built once (about a second: it is read and split into slowness layers)."""
    try:
        from obspy.taup import TauPyModel
    except ImportError:
        raise InputError(obspy_hint()) from None
    if not isinstance(model, str) or not model.strip():
        raise OptionsError(f"model must name a TauP model (iasp91, ak135, prem …); got {model!r}.",
                           options=("model",))
    try:
        return TauPyModel(model=model.strip())
    except Exception as exc:  # ObsPy raises OSError for an unknown name, others for a bad model file
        why = "" if isinstance(exc, FileNotFoundError) else f" ({type(exc).__name__}: {exc})"
        raise InputError(f"unknown TauP model {model!r}{why}: ObsPy's built-in models are "
                         f"{', '.join(_builtin_models())}; or give the path of a .npz model built with "
                         "obspy.taup.taup_create.build_taup_model.") from None


def _builtin_models() -> list[str]:
    import importlib.resources

    folder = importlib.resources.files("obspy.taup") / "data"
    return sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".npz"))


def _first(arrivals: Sequence[Any], names: tuple[str, ...]) -> Any:
    """The earliest arrival among ``names`` (equal times: the name first in ``names``), or None."""
    rank = {name: i for i, name in enumerate(names)}
    found = [a for a in arrivals if a.name in rank]
    return min(found, key=lambda a: (a.time, rank[a.name])) if found else None


def predict(events: Any, stations: Any, *, model: str = "iasp91", phases: Sequence[str] | str = ("P", "S"),
            dataset: str | None = None, max_distance_deg: float | None = None) -> pd.DataFrame:
    """Reference arrivals predicted from travel times: the first P and first S per event and station.

    Parameters
    ----------
    events
        A CSV/Parquet path or DataFrame with ``time, latitude, longitude, depth_km`` (optional ``event``,
        ``magnitude``), a QuakeML path (any file ``obspy.read_events`` reads) or an ObsPy ``Catalog``
        (each event's preferred origin).
    stations
        The stations table of ``--stations`` (SPEC §14; path or DataFrame) with ``latitude`` and
        ``longitude`` columns, a StationXML path or an ObsPy ``Inventory`` (station = ``NET.STA``).
    model
        A TauP model: a built-in name (``iasp91``, ``ak135``, ``prem`` …) or the path of a ``.npz`` model.
    phases
        ``"P"``, ``"S"`` or both: which first arrivals to predict.
    dataset
        Written in a ``dataset`` column on every row (none by default: SPEC §1's ``all``).  With a stations
        table that has a ``dataset`` column, its stations of that dataset only.
    max_distance_deg
        Leave out (and count) the event–station pairs farther apart than this, in degrees.

    Returns
    -------
    DataFrame
        ``[dataset,] event, station, phase, time`` (``datetime64[ns, UTC]``), ``taup_phase``,
        ``travel_time_s``, ``distance_deg``, ``distance_km``, ``depth_km`` and ``magnitude`` (when some
        event has one), sorted by ``[dataset,] event, station, phase`` (code-point order).
        ``attrs["pickscale_counts"]`` counts the events, stations, rows and pairs left out;
        ``attrs["pickscale_notes"]`` says what was left out or chosen.

    Raises
    ------
    InputError
        ObsPy missing, an unknown TauP model, a bad events or stations input (SPEC §17).
    OptionsError
        ``phases``, ``dataset`` or ``max_distance_deg`` out of range.

    Examples
    --------
    >>> events = pd.DataFrame({"event": ["ev1"], "time": ["2024-01-01T00:00:00Z"], "latitude": [45.0],
    ...                        "longitude": [0.0], "depth_km": [10.0]})
    >>> stations = pd.DataFrame({"station": ["XX.FAR", "XX.NEAR"], "latitude": [45.0, 46.0],
    ...                          "longitude": [90.0, 0.0]})
    >>> ref = predict(events, stations)
    >>> print(ref[["station", "phase", "time", "taup_phase", "travel_time_s", "distance_deg"]].to_string())
       station phase                             time taup_phase  travel_time_s  distance_deg
    0   XX.FAR     P 2024-01-01 00:10:06.671111+00:00          P     606.671111          60.0
    1   XX.FAR     S 2024-01-01 00:18:19.989895+00:00          S    1099.989895          60.0
    2  XX.NEAR     P 2024-01-01 00:00:19.233675+00:00          p      19.233675           1.0
    3  XX.NEAR     S 2024-01-01 00:00:33.200990+00:00          s      33.200990           1.0
    >>> iso_times(ref.time.astype("int64"))[0]
    '2024-01-01T00:10:06.671111000Z'
    """
    kinds = _phase_kinds(phases)
    if dataset is not None and (not isinstance(dataset, str) or not dataset.strip()):
        raise OptionsError(f"dataset must be a non-empty name; got {dataset!r}.", options=("dataset",))
    if max_distance_deg is not None:
        if not (0.0 <= float(max_distance_deg) <= 180.0):
            raise OptionsError(f"max_distance_deg must be in [0, 180] degrees; got {max_distance_deg!r}.",
                               options=("max_distance_deg",))
    try:
        from obspy.geodetics import degrees2kilometers, locations2degrees
    except ImportError:
        raise InputError(obspy_hint()) from None
    taup = _taup_model(model)  # once per call: building it costs more than many travel times
    ev = read_events(events).sort_values("event", kind="stable").reset_index(drop=True)
    st = read_station_coordinates(stations)
    notes = list(st.attrs.get("pickscale_notes", []))
    if dataset is not None and "dataset" in st:
        st = st[st["dataset"] == dataset.strip()]
        if len(st) == 0:
            raise InputError(f"{st.attrs.get('pickscale_source', 'the stations table')}: no station of dataset "
                             f"{dataset!r} (its dataset column).")
    keys = ["dataset", "station"] if "dataset" in st else ["station"]
    st = st.sort_values(keys, kind="stable").reset_index(drop=True)
    phase_list = [name for kind in kinds for name in FIRST_ARRIVAL_PHASES[kind]]
    rows: list[dict[str, Any]] = []
    beyond = no_arrival = 0
    lat, lon = st["latitude"].to_numpy(np.float64), st["longitude"].to_numpy(np.float64)
    for e in ev.itertuples(index=False):
        # Great circle on a sphere, as TauP takes distances: ObsPy's own function, so tests compare exactly.
        distances = np.asarray(locations2degrees(e.latitude, e.longitude, lat, lon), dtype=np.float64)
        for i, distance in enumerate(distances.tolist()):
            if max_distance_deg is not None and distance > float(max_distance_deg):
                beyond += 1
                continue
            try:
                arrivals = taup.get_travel_times(source_depth_in_km=float(e.depth_km), distance_in_degree=distance,
                                                 phase_list=phase_list)
            except Exception as exc:  # e.g. a depth below the model's deepest layer
                raise InputError(f"event {e.event}: TauP ({model}) cannot compute travel times at depth "
                                 f"{e.depth_km:g} km, {distance:.3f}° ({type(exc).__name__}: {exc}).") from None
            for kind in kinds:
                first = _first(arrivals, FIRST_ARRIVAL_PHASES[kind])
                if first is None:
                    no_arrival += 1
                    continue
                # Microseconds: TauP is not accurate beyond a millisecond, and an integer keeps the sum exact.
                travel_us = int(round(float(first.time) * 1e6))
                row: dict[str, Any] = {"dataset": dataset.strip()} if dataset is not None else (
                    {"dataset": st["dataset"].iat[i]} if "dataset" in st else {})
                row.update(event=e.event, station=st["station"].iat[i], phase=kind,
                           time=int(e.time) + travel_us * 1000, taup_phase=first.name,
                           travel_time_s=travel_us / 1e6, distance_deg=distance,
                           distance_km=float(degrees2kilometers(distance, radius=EARTH_RADIUS_KM)),
                           depth_km=float(e.depth_km), magnitude=float(e.magnitude))
                rows.append(row)
    columns = (["dataset"] if (dataset is not None or "dataset" in st) else []) + [
        "event", "station", "phase", "time", "taup_phase", "travel_time_s", "distance_deg", "distance_km",
        "depth_km", "magnitude"]
    frame = pd.DataFrame(rows, columns=columns)
    if not frame["magnitude"].notna().any():
        frame = frame.drop(columns="magnitude")  # no event has one: no column to mislead
    frame["time"] = pd.to_datetime(frame["time"].to_numpy(np.int64), unit="ns", utc=True)
    frame = frame.sort_values([c for c in ("dataset", "event", "station", "phase") if c in frame],
                              kind="stable").reset_index(drop=True)
    if beyond:
        notes.append(f"{beyond} event–station pair(s) farther than max_distance_deg ({max_distance_deg}°) left out.")
    if no_arrival:
        notes.append(f"{no_arrival} first arrival(s) that TauP ({model}) does not give at their distance left out.")
    frame.attrs["pickscale_counts"] = {"events": len(ev), "stations": len(st), "rows": len(frame),
                                       "beyond_max_distance": beyond, "no_arrival": no_arrival}
    frame.attrs["pickscale_notes"] = notes
    return frame
