"""Write the small input files of tests/data/formats in each tool's own layout.

Run from the repository root: ``python -m tests.helpers.make_format_data`` (needs ObsPy).
The rows are those of ``tests/helpers/scenario.py``; the tests compare every format with them.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from tests.helpers.scenario import PICKS, T0, bulletin_events

HERE = Path(__file__).resolve().parents[1] / "data" / "formats"


def _naive(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def write_quakeml() -> None:
    from obspy import UTCDateTime
    from obspy.core.event import Arrival, Catalog, Event, Origin, Pick, ResourceIdentifier, WaveformStreamID

    events = []
    for ev in bulletin_events():
        picks = []
        for p in ev["picks"]:
            net, sta, loc, cha = p["seed"].split(".")
            picks.append(Pick(resource_id=ResourceIdentifier(p["id"]), time=UTCDateTime(_naive(p["t"])),
                              waveform_id=WaveformStreamID(net, sta, loc, cha), phase_hint=p["hint"],
                              evaluation_mode=p["mode"]))
        origins = []
        for o in ev["origins"]:
            arrivals = [Arrival(resource_id=ResourceIdentifier(f"{o['id']}/arrival/{i}"),
                                pick_id=ResourceIdentifier(a["pick"]), phase=a["phase"])
                        for i, a in enumerate(o["arrivals"])]
            origins.append(Origin(resource_id=ResourceIdentifier(o["id"]), time=UTCDateTime(_naive(o["t"])),
                                  latitude=35.8, longitude=-117.6, depth=8000.0, arrivals=arrivals))
        event = Event(resource_id=ResourceIdentifier(ev["id"]), picks=picks, origins=origins)
        if ev["preferred"] is not None:
            event.preferred_origin_id = ResourceIdentifier(ev["preferred"])
        events.append(event)
    Catalog(events, resource_id=ResourceIdentifier("smi:pickscale/test/catalog")).write(
        str(HERE / "bulletin.xml"), format="QUAKEML")


def write_hypodd() -> None:
    """hypoDD's phase format (ph2dt input), read by ObsPy's HYPODDPHA plugin: station codes only."""
    lines = ["# 2020  1  1  0  0  0.00  35.8000 -117.6000   8.00  2.50  0.00  0.00  0.00        1",
             "CLC     10.500  1.000   P", "CLC     15.250  0.500   S", "WBS     11.000  1.000   P"]
    (HERE / "bulletin.pha").write_text("\n".join(lines) + "\n")


def write_eqtransformer() -> None:
    """X_prediction_results.csv per station folder, as EQTransformer's _output_writter_prediction writes it."""
    header = ["file_name", "network", "station", "instrument_type", "station_lat", "station_lon", "station_elv",
              "event_start_time", "event_end_time", "detection_probability", "detection_uncertainty",
              "p_arrival_time", "p_probability", "p_uncertainty", "p_snr",
              "s_arrival_time", "s_probability", "s_uncertainty", "s_snr"]
    for sta in ("CLC", "WBS"):
        rows = [p for p in PICKS if p["station"] == f"CI.{sta}" and p["model"] == "EQTransformer"]
        folder = HERE / "eqtransformer" / f"{sta}_outputs"
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "X_prediction_results.csv", "w", newline="") as f:
            w = csv.writer(f, delimiter=",", quotechar='"', quoting=csv.QUOTE_MINIMAL)
            w.writerow(header)
            detections: dict[int, dict] = {}
            for p in rows:
                detections.setdefault(p["event"], {})[p["phase"]] = p
            for ev in sorted(detections):
                d = detections[ev]
                start = _naive(min(x["t"] for x in d.values()) - 1.0) if d else None
                P, S = d.get("P"), d.get("S")
                w.writerow([f"CI.{sta}..HH__20200101T000000Z__20200102T000000Z.mseed", "{:<2}".format("CI"),
                            f"{sta:<4}", "{:<2}".format("HH"), 35.8, -117.6, 775.0,
                            start, start + timedelta(seconds=20), 0.98, None,
                            _naive(P["t"]) if P else None, P["conf"] if P else None, None, 12.3 if P else None,
                            _naive(S["t"]) if S else None, S["conf"] if S else None, None, 8.1 if S else None])
            # A detection without any pick: EQTransformer writes it; it is no pick.
            start = _naive(300.0)
            w.writerow([f"CI.{sta}..HH__x.mseed", "CI", f"{sta:<4}", "HH", 35.8, -117.6, 775.0,
                        start, start + timedelta(seconds=20), 0.31, None, None, None, None, None,
                        None, None, None, None])


def write_phasenet() -> None:
    """picks.csv as PhaseNet's predict.py writes it (base_columns, ISO times, station_id NET.STA.LOC.CH)."""
    rows = []
    for p in PICKS:
        if p["model"] != "PhaseNet":
            continue
        begin = datetime(2020, 1, 1, tzinfo=UTC)
        t = begin + timedelta(seconds=p["t"])
        rows.append({"station_id": p["station"] + "..HH", "begin_time": begin.isoformat(timespec="milliseconds"),
                     "phase_index": int(round(p["t"] * 100)), "phase_time": t.isoformat(timespec="milliseconds"),
                     "phase_score": p["conf"], "phase_type": p["phase"],
                     "file_name": p["station"] + "..HH.mseed"})
    pd.DataFrame(rows).to_csv(HERE / "phasenet" / "picks.csv", index=False)


def write_quakescope() -> None:
    """QuakeScope's Parquet picks: tid (trace id NET.STA.LOC), pha, peak (UTC timestamp), conf, rid (run id)."""
    rows = [p for p in PICKS]
    table = pa.table({
        "tid": pa.array([p["station"] + "." for p in rows]),
        "pha": pa.array([p["phase"] for p in rows]),
        "peak": pa.array(pd.to_datetime([T0 + timedelta(seconds=p["t"]) for p in rows]).tz_localize("UTC")
                         .as_unit("ns"), type=pa.timestamp("ns", tz="UTC")),
        "conf": pa.array([p["conf"] for p in rows], type=pa.float32()),
        "rid": pa.array([{"PhaseNet": "phasenet_stead_v1", "EQTransformer": "eqt_original_v2"}[p["model"]]
                         for p in rows]),
    })
    pq.write_table(table, HERE / "quakescope" / "picks.parquet")


def write_seisbench_csv() -> None:
    """``PickList.to_dataframe().to_csv("picks.csv")`` (SeisBench 0.12's to_dataframe, reproduced)."""
    rows = []
    for p in PICKS:
        if p["model"] != "PhaseNet":
            continue
        t = _naive(p["t"])
        rows.append({"station": p["station"] + ".", "time": t, "start_time": t - timedelta(seconds=0.1),
                     "end_time": t + timedelta(seconds=0.1), "probability": p["conf"], "phase": p["phase"],
                     "polarity": None, "polarity_probability": None})
    df = pd.DataFrame(rows)
    df.sort_values("time", inplace=True)
    df.reset_index(inplace=True)
    df.to_csv(HERE / "seisbench" / "picks.csv")


if __name__ == "__main__":
    for folder in ("phasenet", "quakescope", "seisbench"):
        (HERE / folder).mkdir(exist_ok=True)
    write_quakeml()
    write_hypodd()
    write_eqtransformer()
    write_phasenet()
    write_quakescope()
    write_seisbench_csv()
    _ = io  # (kept for interactive use)
