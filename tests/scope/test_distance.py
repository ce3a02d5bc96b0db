"""SPEC §14, "Epicentral distance" (issue 26, item 2): recall against the event-to-station distance -- the
worked example, the sphere against ObsPy, every source of coordinates (reference columns, a stations table,
StationXML, a QuakeML bulletin) and the errors."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import pickscale
import pickscale.cli
from pickscale.errors import OptionsError
from pickscale.scope.distance import EARTH_RADIUS_KM, epicentral_km

T0 = pd.Timestamp("2024-01-01T00:00:00Z")
EDGES = "distance:0,20,50,100"


def _score(ref, picks, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pickscale.score(ref, picks, group_by=EDGES, progress=False, **kw)


def _by_group(ds, name="n_reference_by_group"):
    v = ds[name]
    if "station" in v.dims:
        v = v.sum("station")
    return dict(zip(ds["group"].values.tolist(), v.sel(phase="P").squeeze().values.tolist()))


def _worked_example():
    ref = pd.DataFrame({"station": ["XX.A", "XX.B", "XX.C", "XX.A"], "phase": "P",
                        "time": [T0 + pd.Timedelta(seconds=10 * i) for i in range(4)],
                        "event_latitude": [0.0, 0.0, 0.0, None], "event_longitude": 0.0})
    stations = pd.DataFrame({"station": ["XX.A", "XX.B", "XX.C"], "latitude": 0.0, "longitude": [0.1, 0.3, 1.0]})
    # Model m picks the arrivals at A (11 km) and C (111 km); 1 s late (beyond tol 0.5 s) at B (33 km) and at
    # the arrival without a latitude: missed.
    late = pd.to_timedelta([0.0, 1.0, 0.0, 1.0], unit="s")
    picks = ref[["station", "phase"]].assign(time=ref["time"] + late, model="m", conf=0.9)
    return ref, stations, picks


@pytest.mark.slow
def test_worked_example_of_spec():
    assert epicentral_km(0, 0, 0, [0.1, 0.3, 1.0]).round(2).tolist() == [11.12, 33.36, 111.19]
    ref, stations, picks = _worked_example()
    ds = _score(ref, picks, stations=stations)
    assert ds["group"].values.tolist() == ["<0", "[0,20)", "[20,50)", "[50,100)", ">=100", "missing"]
    assert _by_group(ds) == {"<0": 0, "[0,20)": 1, "[20,50)": 1, "[50,100)": 0, ">=100": 1, "missing": 1}
    assert _by_group(ds, "matched_by_group") == {"<0": 0, "[0,20)": 1, "[20,50)": 0, "[50,100)": 0, ">=100": 1,
                                                 "missing": 0}


@pytest.mark.slow
def test_coordinates_from_the_reference_itself_steads_names():
    ref, stations, picks = _worked_example()
    merged = ref.merge(stations, on="station").rename(columns={
        "event_latitude": "source_latitude", "event_longitude": "source_longitude",
        "latitude": "receiver_latitude", "longitude": "receiver_longitude"})
    a = _score(ref, picks, stations=stations)
    b = _score(merged, picks)  # no stations table needed
    assert _by_group(a) == _by_group(b) and _by_group(a, "matched_by_group") == _by_group(b, "matched_by_group")


@pytest.mark.slow
def test_a_distance_column_is_used_as_it_is():
    ref, _, picks = _worked_example()
    given_km = ref.drop(columns=["event_latitude", "event_longitude"]).assign(Distance=[5.0, 60.0, 60.0, 150.0])
    ds = _score(given_km, picks)
    assert _by_group(ds) == {"<0": 0, "[0,20)": 1, "[20,50)": 0, "[50,100)": 2, ">=100": 1}


@pytest.mark.slow
def test_what_is_missing_is_said():
    ref, stations, picks = _worked_example()
    with pytest.raises(OptionsError, match="no event coordinates"):
        _score(ref.drop(columns=["event_latitude"]), picks, stations=stations)
    with pytest.raises(OptionsError, match="station coordinates are neither in the reference"):
        _score(ref, picks)
    with pytest.raises(OptionsError, match="not coordinates in"):
        _score(ref.assign(event_latitude=["0", "north", "0", None]), picks, stations=stations)
    with pytest.raises(OptionsError, match="need bin edges"):
        pickscale.score(ref, picks, group_by="distance", stations=stations, progress=False)
    # A station the table does not list: its arrivals are in the group missing.
    ds = _score(ref, picks, stations=stations.iloc[:2])
    assert _by_group(ds)["missing"] == 2


def test_cli_exit_2_without_station_coordinates(tmp_path, capsys):
    ref, _, picks = _worked_example()
    ref.to_csv(tmp_path / "ref.csv", index=False)
    picks.to_csv(tmp_path / "picks.csv", index=False)
    code = pickscale.cli.main(["score", "--reference", str(tmp_path / "ref.csv"), "--picks",
                               str(tmp_path / "picks.csv"), "--group-by", EDGES, "--out", str(tmp_path / "out"),
                               "--quiet", "--no-figures"])
    err = capsys.readouterr().err
    assert code == 2 and "station coordinates" in err and "Traceback" not in err


@pytest.mark.slow
@given(lat1=st.floats(-89.9, 89.9), lon1=st.floats(-180, 180), lat2=st.floats(-89.9, 89.9),
       lon2=st.floats(-180, 180))
@settings(max_examples=200, deadline=None)
def test_the_sphere_is_obspys(lat1, lon1, lat2, lon2):
    """The distance equals ObsPy's locations2degrees on the same sphere, and the WGS84 geodesic to 0.6 % (a
    degree of meridian at the equator: 110.57 km on the ellipsoid, 111.19 on the sphere)."""
    from obspy.geodetics import gps2dist_azimuth, locations2degrees

    km = float(epicentral_km(lat1, lon1, lat2, lon2))
    degrees = float(locations2degrees(lat1, lon1, lat2, lon2))
    assert km == pytest.approx(degrees * np.pi / 180 * EARTH_RADIUS_KM, abs=1e-6)
    assume(1.0 < km < 19_000.0)  # the geodesic's iteration fails near the antipode
    geodesic = gps2dist_azimuth(lat1, lon1, lat2, lon2)[0] / 1000
    assert abs(km - geodesic) <= 0.006 * geodesic


@pytest.mark.slow
def test_a_quakeml_bulletin_and_stationxml(tmp_path):
    """The usual sources: a bulletin's preferred origins and an FDSN StationXML inventory (real ObsPy objects,
    written to files)."""
    from obspy import UTCDateTime
    from obspy.core.event import Arrival, Catalog, Event, Origin, Pick, WaveformStreamID
    from obspy.core.inventory import Inventory, Network, Station

    events, rows = [], []
    for k, (lon, station) in enumerate([(0.1, "A"), (0.3, "B"), (1.0, "C")]):
        t = UTCDateTime(2024, 1, 1, 0, 0, 10 * k)
        pick = Pick(time=t, waveform_id=WaveformStreamID("XX", station), phase_hint="P", evaluation_mode="manual")
        # Event at (0, -lon) and station at (0, 0): the same distances as the worked example.
        origin = Origin(time=t, latitude=0.0, longitude=-lon, depth=10_000.0,
                        arrivals=[Arrival(pick_id=pick.resource_id, phase="P")])
        ev = Event(picks=[pick], origins=[origin])
        ev.preferred_origin_id = origin.resource_id
        events.append(ev)
        rows.append({"station": f"XX.{station}", "phase": "P", "time": pd.Timestamp(t.datetime, tz="UTC"),
                     "model": "m", "conf": 0.9})
    Catalog(events).write(str(tmp_path / "bulletin.xml"), format="QUAKEML")
    inventory = Inventory(networks=[Network("XX", stations=[
        Station(s, latitude=0.0, longitude=0.0, elevation=0.0) for s in ("A", "B", "C")])], source="test")
    inventory.write(str(tmp_path / "stations.xml"), format="STATIONXML")
    picks = pd.DataFrame(rows)
    picks.loc[1, "time"] += pd.Timedelta(seconds=1)  # B's 1 s late: missed
    ds = _score(str(tmp_path / "bulletin.xml"), picks, stations=str(tmp_path / "stations.xml"))
    assert _by_group(ds) == {"<0": 0, "[0,20)": 1, "[20,50)": 1, "[50,100)": 0, ">=100": 1}
    assert _by_group(ds, "matched_by_group") == {"<0": 0, "[0,20)": 1, "[20,50)": 0, "[50,100)": 0, ">=100": 1}
