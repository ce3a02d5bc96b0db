"""Readers' hooks for the input formats: station keys, explicit columns, the model-column warning,
EQTransformer's wide table on the worker path, XML messages, messages of a glob, PickscaleWarning."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pickscale.errors import InputError, OptionsError, PickscaleWarning, emit_warnings
from pickscale.io import formats, join_failures, normalise, read_raw, station_key_of

DATA = Path(__file__).parents[1] / "data" / "formats"
T0 = "2020-01-01T00:00:00Z"


def picks(**cols) -> pd.DataFrame:
    base = {"station": ["CI.CLC..HH", "CI.CLC.00.HHZ", "CI.WBS"], "phase": ["P", "S", "P"],
            "time": [T0] * 3, "conf": [0.5] * 3}
    base.update(cols)
    return pd.DataFrame(base)


# ------------------------------------------------------------------ station key

@pytest.mark.parametrize("categorical", [False, True])
def test_station_key_net_sta(categorical):
    n = normalise(picks(), role="picks", source="p", station_key="net.sta", categorical=categorical)
    assert n.frame["station"].astype(str).tolist() == ["CI.CLC", "CI.CLC", "CI.WBS"]
    n = normalise(picks(), role="picks", source="p", categorical=categorical)
    assert n.frame["station"].astype(str).tolist() == ["CI.CLC..HH", "CI.CLC.00.HHZ", "CI.WBS"]


def test_station_key_values_and_bad_key():
    assert station_key_of(np.array(["CLC", "CI.CLC.", "CI..", "CI.CLC.00.HHZ"], dtype=object),
                          "net.sta").tolist() == ["CLC", "CI.CLC", "CI", "CI.CLC"]
    with pytest.raises(OptionsError, match="station_key must be one of as-is, net.sta"):
        normalise(picks(), role="picks", source="p", station_key="sta")


def test_station_key_phasenet_file():
    raw = read_raw(str(DATA / "phasenet" / "picks.csv"))
    n = normalise(raw, role="picks", source="picks.csv", station_key="net.sta")
    assert sorted(set(n.frame["station"])) == ["CI.CLC", "CI.WBS"]
    assert n.columns["time"] == "phase_time" and n.columns["conf"] == "phase_score"
    assert n.model_candidates == {}  # file_name and phase_index name no model


# -------------------------------------------------------------- explicit columns

def test_explicit_columns_win_and_are_checked():
    raw = pd.DataFrame({"trace": ["CI.CLC"], "weights_name": ["stead"], "phase": ["P"], "time": [T0],
                        "conf": [0.5], "station": ["X"]})
    n = normalise(raw, role="picks", source="p", columns={"model": "weights_name", "station": "trace"})
    assert n.frame.loc[0, "model"] == "stead" and n.frame.loc[0, "station"] == "CI.CLC"
    n = normalise(raw, role="picks", source="p", columns="model=weights_name")
    assert n.columns["model"] == "weights_name"
    with pytest.raises(InputError, match="no column 'rid', which was given as the model column"):
        normalise(raw, role="picks", source="p", columns={"model": "rid"})
    with pytest.raises(OptionsError, match="is not one of"):
        normalise(raw, role="picks", source="p", columns={"modell": "rid"})


def test_parquet_projection_reads_explicit_columns(tmp_path):
    from pickscale.io import read_projected

    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"trace": ["CI.CLC"], "net_name": ["a"], "pha": ["P"], "peak": [T0],
                             "conf": [0.5], "other": [1]}), path)
    frame = read_projected(str(path), role="picks", columns={"model": "net_name", "station": "trace"})
    assert set(frame.columns) == {"trace", "net_name", "pha", "peak", "conf"}


# ------------------------------------------------------- a column that may be the model

def test_model_candidate_warning_frame():
    raw = picks(weights_name=["stead", "instance", "stead"], file_name=["a", "b", "c"])
    n = normalise(raw, role="picks", source="p")
    assert n.model_candidates == {"weights_name": ["instance", "stead"]}
    text = n.warnings()[-1]
    assert "'weights_name' (2 distinct values: 'instance', 'stead')" in text
    assert "columns={'model': 'weights_name'} (CLI: --columns model=weights_name)" in text
    assert normalise(raw, role="picks", source="p", columns={"model": "weights_name"}).model_candidates == {}


def test_model_candidate_warning_parquet_not_hidden_by_projection(tmp_path):
    from pickscale.io import read_projected

    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"tid": ["CI.CLC."] * 4, "pha": ["P"] * 4, "peak": [T0] * 4, "conf": [0.5] * 4,
                             "run_name": ["a", "b", "a", "b"], "event_id": ["e1", "e2", "e1", "e2"]}), path)
    frame = read_projected(str(path), role="picks")
    assert "run_name" not in frame.columns  # projected away ...
    n = normalise(frame, role="picks", source=str(path), categorical=True)
    assert n.model_candidates == {"run_name": ["a", "b"]}  # ... yet named
    assert any("'run_name'" in w for w in n.warnings())


def test_quakescope_rid_is_a_model_alias():
    frame = pd.read_parquet(DATA / "quakescope" / "picks.parquet")
    n = normalise(frame, role="picks", source="qs")
    assert n.columns == {"dataset": None, "model": "rid", "station": "tid", "phase": "pha", "time": "peak",
                         "conf": "conf"}
    assert sorted(set(n.frame["model"])) == ["eqt_original_v2", "phasenet_stead_v1"]


# -------------------------------------------------------------- EQTransformer

def test_eqt_wide_to_long():
    raw = read_raw(str(DATA / "eqtransformer" / "WBS_outputs" / "X_prediction_results.csv"))
    assert formats.is_eqt_wide(raw.columns)
    long = formats.eqt_to_long(raw)
    assert long["station"].unique().tolist() == ["CI.WBS"]  # 'CI', 'WBS ' stripped and joined
    assert long["phase"].tolist() == ["P", "S", "P", "S", "S"]  # P before S; rows without picks skipped
    assert long["time"].iloc[-1] == "2020-01-01 00:03:20"
    n = normalise(raw, role="picks", source="x.csv")
    assert n.n_rows == 5 and n.frame["time"].iloc[0] == pd.Timestamp("2020-01-01T00:00:10.96Z").value


def test_eqt_on_the_worker_path():
    from pickscale.engine.parts import read_files, read_part

    files = sorted(str(p) for p in (DATA / "eqtransformer").glob("*/X_prediction_results.csv"))
    part = read_part(files[0], drop_invalid=False, floor=0.02)
    assert part.combos["station"].tolist() == ["CI.CLC"] and int(part.combos["n_picks"].sum()) == 6
    both = read_files(files, drop_invalid=False, floor=0.02)
    assert both.combos["station"].tolist() == ["CI.CLC", "CI.WBS"]


# ------------------------------------------------------------------- messages

def test_xml_messages(tmp_path):
    q = tmp_path / "bulletin.csv"
    q.write_bytes((DATA / "bulletin.xml").read_bytes())
    with pytest.raises(InputError, match=r"is a bulletin \(XML root <quakeml>\).*pickscale\[obspy\]"):
        read_raw(str(q))
    x = tmp_path / "inventory.csv"
    x.write_text("<?xml version='1.0'?>\n<FDSNStationXML/>\n")
    with pytest.raises(InputError, match=r"is an XML file \(root element <FDSNStationXML>\), neither a bulletin"):
        read_raw(str(x))
    h = tmp_path / "page.csv"
    h.write_text("<!DOCTYPE html>\n<html><body>Sign in</body></html>\n")
    with pytest.raises(InputError, match=r"is an HTML/XML page"):
        read_raw(str(h))


def test_join_failures_once_per_glob():
    msgs = [f"out/{s}/X.csv: the picks table has no column for 'phase'.\n  Columns found: 'a'." for s in "ABC"]
    text = join_failures(msgs + ["other.csv: empty."])
    assert text.count("no column for 'phase'") == 1
    assert text.startswith("out/A/X.csv (and 2 more files with the same problem, 3 in all): the picks table")
    assert text.endswith("other.csv: empty.")


def test_pickscale_warning():
    with pytest.warns(PickscaleWarning, match="dropped 3"):
        emit_warnings(["dropped 3", "dropped 3"])
    assert issubclass(PickscaleWarning, UserWarning)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        emit_warnings(["a", "a", "b"])
    assert [str(w.message) for w in seen] == ["a", "b"]


# ------------------------------------------------------------- ObsPy Catalogs

obspy = pytest.importorskip("obspy")


def _catalog():
    from obspy import UTCDateTime
    from obspy.core.event import Arrival, Catalog, Event, Origin, Pick, WaveformStreamID

    t = UTCDateTime("2020-01-01T00:00:10Z")
    p1 = Pick(time=t, waveform_id=WaveformStreamID("CI", "CLC", "00", "HHZ"), phase_hint="Pn",
              evaluation_mode="manual")
    p2 = Pick(time=t + 5, waveform_id=WaveformStreamID("CI", "WBS", "", "HHN"), phase_hint="S",
              evaluation_mode="automatic")
    first = Origin(time=t - 10, arrivals=[Arrival(pick_id=p1.resource_id, phase=None)])
    second = Origin(time=t - 10, arrivals=[Arrival(pick_id=p2.resource_id, phase="S")])
    two = Event(picks=[p1, p2], origins=[first, second])  # no preferred origin, two origins
    none = Event(picks=[Pick(time=t, waveform_id=WaveformStreamID("CI", "X", "", "HHZ"), phase_hint="P")])
    return Catalog([two, none])


def test_catalog_rules():
    frame = formats.catalog_to_frame(_catalog())
    assert frame["station"].tolist() == ["CI.CLC.00"]  # NET.STA.LOC
    assert frame["phase"].tolist() == ["Pn"]  # the pick's phase_hint when the arrival has no phase
    notes = " ".join(frame.attrs["pickscale_notes"])
    assert "1 event(s) have no origin" in notes
    assert "1 event(s) have several origins and no preferred one; the first origin's arrivals were used" in notes


def test_dict_of_frames_names_the_model():
    frame = formats.as_frame({"a": picks(), "b": picks()}, role="picks")
    assert frame["model"].tolist() == ["a"] * 3 + ["b"] * 3
    assert formats.as_frame(picks(), role="picks") is None
    assert formats.as_frame([str(DATA / "phasenet" / "picks.csv")], role="picks") is None
    with pytest.raises(InputError, match="a dict maps a model name"):
        formats.as_frame({"a": 3}, role="picks")


@pytest.mark.slow
def test_core_does_not_import_obspy():
    import subprocess

    code = ("import pickscale.io, pickscale.io.formats, pickscale.engine.parts, sys; "
            "assert 'obspy' not in sys.modules, 'obspy imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
