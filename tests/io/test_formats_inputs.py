"""Every input format of docs/usage.md "Input formats", scored end to end and compared with the canonical tables.

Each file of tests/data/formats is in its tool's own layout (made by
``tests/helpers/make_format_data.py``, with ObsPy for the bulletin); scoring it must give exactly
the tables of scoring the canonical SPEC §1 frames of the same rows
(``tests/helpers/scenario.py``).
"""

from __future__ import annotations

import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pickscale
from pickscale.errors import InputError
from tests.helpers import scenario

DATA = Path(__file__).parents[1] / "data" / "formats"

obspy = pytest.importorskip("obspy")
from obspy import UTCDateTime  # noqa: E402


def same_tables(a, b) -> None:
    ta, tb = pickscale.tables(a), pickscale.tables(b)
    # A bulletin names each arrival's event (SPEC §19): its side alone has events.csv; every other table equal.
    assert set(ta.keys()) ^ set(tb.keys()) <= {"events"}
    for name in set(ta) & set(tb):
        pd.testing.assert_frame_equal(ta[name].reset_index(drop=True), tb[name].reset_index(drop=True),
                                      check_exact=True, obj=name)
    for var in ("n_reference", "emitted", "matched"):
        np.testing.assert_array_equal(a[var].values, b[var].values)


def score(ref, picks, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pickscale.score(ref, picks, progress=False, **kw)


@pytest.fixture(scope="module")
def canonical():
    return score(scenario.reference_frame(), scenario.picks_frame())


# ----------------------------------------------------------------- bulletins

@pytest.mark.slow
def test_quakeml_file_equals_canonical(canonical):
    ds = score(str(DATA / "bulletin.xml"), scenario.picks_frame())
    same_tables(ds, canonical)
    # The arrival whose pick is missing is reported, not a crash.
    assert any("1 arrival(s) point to a pick the event does not hold" in w for w in ds.attrs["warnings"])
    assert ds.attrs["inputs"]["reference"]["files"] == 1


@pytest.mark.slow
def test_catalog_object_equals_canonical(canonical):
    catalog = obspy.read_events(str(DATA / "bulletin.xml"))
    ds = score(catalog, scenario.picks_frame())
    same_tables(ds, canonical)
    assert int(ds.n_reference.sum()) == len(scenario.reference_frame())


@pytest.mark.slow
def test_bulletin_glob_and_folder(tmp_path, canonical):
    shutil.copy(DATA / "bulletin.xml", tmp_path / "bulletin.qml")
    same_tables(score(str(tmp_path / "*.qml"), scenario.picks_frame()), canonical)
    same_tables(score(str(tmp_path), scenario.picks_frame()), canonical)


@pytest.mark.slow
def test_quakeml_manual_only():
    from pickscale.io import formats, normalise

    frame = formats.as_frame(str(DATA / "bulletin.xml"), role="reference", manual_only=True)
    expected = scenario.reference_frame(manual_only=True)
    got = normalise(frame, role="reference", source="x").frame
    want = normalise(expected, role="reference", source="x").frame
    pd.testing.assert_frame_equal(got, want)
    assert any("not manual" in n for n in frame.attrs["pickscale_notes"])
    same_tables(score(str(DATA / "bulletin.xml"), scenario.picks_frame(), manual_only=True),
                score(expected, scenario.picks_frame()))


@pytest.mark.slow
def test_bulletin_dict_names_the_dataset():
    catalog = obspy.read_events(str(DATA / "bulletin.xml"))
    ds = score({"ridgecrest": catalog}, scenario.picks_frame().assign(dataset="ridgecrest"))
    assert list(ds.dataset.values) == ["ridgecrest"]
    same_tables(ds, score(scenario.reference_frame().assign(dataset="ridgecrest"),
                          scenario.picks_frame().assign(dataset="ridgecrest")))


@pytest.mark.slow
def test_hypodd_phase_file():
    ref = scenario.reference_frame().iloc[[0, 1, 2]].assign(station=["CLC", "CLC", "WBS"])
    picks = scenario.picks_frame().assign(station=lambda f: f["station"].str.split(".").str[1])
    same_tables(score(str(DATA / "bulletin.pha"), picks), score(ref, picks))


# -------------------------------------------------------------- picker outputs

class Pick:
    """The attributes of SeisBench 0.12's ``seisbench.util.annotations.Pick``."""

    def __init__(self, trace_id, start_time, end_time=None, peak_time=None, peak_value=None, phase=None):
        self.trace_id = trace_id
        self.start_time = start_time
        self.end_time = end_time
        self.peak_time = peak_time
        self.peak_value = peak_value
        self.phase = phase
        self.polarity = self.polarity_value = None


class PickList(list):
    """SeisBench's PickList: a list of Picks."""

    def to_dataframe(self):  # pragma: no cover - not used by pickscale
        raise AssertionError("pickscale reads the picks' attributes, not to_dataframe()")


def picklist(model: str) -> PickList:
    out = PickList()
    for p in scenario.PICKS:
        if p["model"] != model:
            continue
        t = UTCDateTime(scenario.iso(p["t"]))
        out.append(Pick(p["station"] + ".", t - 0.1, t + 0.1, t, p["conf"], p["phase"]))
    return out


@pytest.mark.slow
def test_seisbench_picklists_by_model(canonical):
    picks = {"PhaseNet": picklist("PhaseNet"), "EQTransformer": picklist("EQTransformer")}
    same_tables(score(scenario.reference_frame(), picks), canonical)


@pytest.mark.slow
def test_seisbench_single_picklist_and_iterator():
    expected = score(scenario.reference_frame(), scenario.picks_frame(("PhaseNet",), with_model=False))
    same_tables(score(scenario.reference_frame(), picklist("PhaseNet")), expected)
    same_tables(score(scenario.reference_frame(), iter(list(picklist("PhaseNet")))), expected)


@pytest.mark.slow
def test_seisbench_to_dataframe_csv():
    expected = score(scenario.reference_frame(), scenario.picks_frame(("PhaseNet",), with_model=False))
    same_tables(score(scenario.reference_frame(), str(DATA / "seisbench" / "picks.csv")), expected)


@pytest.mark.slow
def test_eqtransformer_station_folders(canonical):
    expected = score(scenario.reference_frame(), scenario.picks_frame(("EQTransformer",), with_model=False))
    ds = score(scenario.reference_frame(), str(DATA / "eqtransformer" / "*" / "X_prediction_results.csv"))
    same_tables(ds, expected)
    # Both files in one batch, and one file alone, read the same way.
    one = score(scenario.reference_frame().iloc[[0, 1, 4, 5, 8, 10]],
                str(DATA / "eqtransformer" / "CLC_outputs" / "X_prediction_results.csv"))
    assert list(one.station.values) == ["CI.CLC"]


@pytest.mark.slow
def test_phasenet_picks_csv():
    ref = scenario.reference_frame().assign(station=lambda f: f["station"] + "..HH")
    expected = score(ref, scenario.picks_frame(("PhaseNet",), with_model=False).assign(
        station=lambda f: f["station"] + "..HH"))
    same_tables(score(ref, str(DATA / "phasenet" / "picks.csv")), expected)


@pytest.mark.slow
def test_phasenet_against_net_sta_bulletin():
    expected = score(scenario.reference_frame(), scenario.picks_frame(("PhaseNet",), with_model=False))
    same_tables(score(str(DATA / "bulletin.xml"), str(DATA / "phasenet" / "picks.csv"), station_key="net.sta"),
                expected)


@pytest.mark.slow
def test_quakescope_parquet_rid_is_the_model(canonical):
    ds = score(scenario.reference_frame(), str(DATA / "quakescope" / "picks.parquet"))
    assert sorted(ds.model.values) == ["eqt_original_v2", "phasenet_stead_v1"]
    renamed = scenario.picks_frame().assign(model=lambda f: f["model"].map(
        {"PhaseNet": "phasenet_stead_v1", "EQTransformer": "eqt_original_v2"}))
    # conf is float32 in the file: compare with the same values
    renamed["conf"] = renamed["conf"].astype(np.float32)
    same_tables(ds, score(scenario.reference_frame(), renamed))


# ------------------------------------------------------------------- messages

def test_catalog_as_picks_is_refused():
    catalog = obspy.read_events(str(DATA / "bulletin.xml"))
    with pytest.raises(InputError, match="pass it as the reference"):
        score(scenario.reference_frame(), catalog)
    with pytest.raises(InputError, match="is a bulletin"):
        score(scenario.reference_frame(), str(DATA / "bulletin.xml"))


def test_xml_that_is_not_a_bulletin(tmp_path):
    p = tmp_path / "stations.xml"
    p.write_text("<?xml version='1.0'?>\n<FDSNStationXML xmlns='http://www.fdsn.org/xml/station/1'/>\n")
    with pytest.raises(InputError, match=r"root element is <FDSNStationXML>, not a bulletin"):
        score(str(p), scenario.picks_frame())


def test_quakeml_without_obspy(monkeypatch):
    monkeypatch.setitem(sys.modules, "obspy", None)  # import obspy -> ImportError
    with pytest.raises(InputError, match=r"pip install 'pickscale\[obspy\]'"):
        score(str(DATA / "bulletin.xml"), scenario.picks_frame())
