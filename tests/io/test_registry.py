"""The table of readers (pickscale.io.formats.registry.READERS) is the one place formats are known.

Each reader's ``guess_can_open`` claims its own real inputs and refuses the others' (a table of the sample
files of tests/data and /work/shared/data, and of objects made from them); a format registered in the table
(monkeypatched) is dispatched to, at each stage, with no dispatcher changed; one taken out of it is not.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from pickscale.engine.inputs import load
from pickscale.engine.parts import read_part
from pickscale.errors import InputError
from pickscale.io import formats, normalise, read_raw
from pickscale.io.formats import registry
from pickscale.io.formats.reader import FileReader, LayoutReader, Probe, SourceReader
from pickscale.io.raw import read_raw_batch
from pickscale.io.sources import SOURCE_SUFFIXES, list_sources

DATA = Path(__file__).parents[1] / "data" / "formats"
SHARED = Path("/work/shared/data")
EQT = DATA / "eqtransformer" / "WBS_outputs" / "X_prediction_results.csv"
NAMES = [r.name for r in registry.READERS]


class Pick:
    """SeisBench ``Pick``'s attributes."""

    def __init__(self, station: str = "CI.CLC.", t: str = "2020-01-01T00:00:01Z", conf: float = 0.9) -> None:
        self.trace_id, self.phase, self.peak_value = station, "P", conf
        self.start_time = self.end_time = self.peak_time = pd.Timestamp(t)


def _copy(tmp: Path, source: Path, name: str, *, compress: bool = False) -> str:
    target = tmp / name
    data = source.read_bytes()
    target.write_bytes(gzip.compress(data) if compress else data)
    return str(target)


def _catalog() -> Any:
    obspy = pytest.importorskip("obspy")
    return obspy.read_events(str(DATA / "bulletin.xml"))


def _dask_frame() -> Any:
    dd = pytest.importorskip("dask.dataframe")
    return dd.from_pandas(pd.read_csv(DATA / "phasenet" / "picks.csv"), npartitions=2)


# (an id, a function of tmp_path making the input, the readers that claim it)
SAMPLES = [
    ("phasenet-csv", lambda tmp: str(DATA / "phasenet" / "picks.csv"), {"csv"}),
    ("seisbench-csv", lambda tmp: str(DATA / "seisbench" / "picks.csv"), {"csv"}),
    ("stead50-reference-csv", lambda tmp: str(SHARED / "stead50_phasenet" / "reference.csv"), {"csv"}),
    ("paired-windows-picks-csv", lambda tmp: str(SHARED / "paired_windows" / "picks.csv"), {"csv"}),
    ("phasenet-csv-gzip-no-suffix", lambda tmp: _copy(tmp, DATA / "phasenet" / "picks.csv", "picks", compress=True),
     {"csv"}),
    ("eqtransformer-csv", lambda tmp: str(EQT), {"csv", "eqtransformer"}),
    ("quakescope-parquet", lambda tmp: str(DATA / "quakescope" / "picks.parquet"), {"parquet"}),
    ("parquet-no-suffix", lambda tmp: _copy(tmp, DATA / "quakescope" / "picks.parquet", "part-0"), {"parquet"}),
    ("quakeml", lambda tmp: str(DATA / "bulletin.xml"), {"bulletin"}),
    ("quakeml-named-dat", lambda tmp: _copy(tmp, DATA / "bulletin.xml", "events.dat"), {"bulletin"}),
    ("hypodd-pha", lambda tmp: str(DATA / "bulletin.pha"), {"bulletin"}),
    ("bulletin-list", lambda tmp: [str(DATA / "bulletin.xml"), str(DATA / "bulletin.pha")], {"bulletin"}),
    ("obspy-catalog", lambda tmp: _catalog(), {"catalog"}),
    ("picklist", lambda tmp: [Pick(), Pick("CI.WBS.")], {"seisbench"}),
    ("pick-iterator", lambda tmp: (p for p in [Pick()]), {"seisbench"}),
    ("dict-of-picklists", lambda tmp: {"PhaseNet": [Pick()], "EQT": [Pick()]}, {"dict"}),
    ("pandas-frame", lambda tmp: pd.read_csv(DATA / "phasenet" / "picks.csv"), {"pandas"}),
    ("pandas-eqtransformer-frame", lambda tmp: read_raw(str(EQT)), {"pandas", "eqtransformer"}),
    ("dask-frame", lambda tmp: _dask_frame(), {"dask"}),
    ("csv-folder", lambda tmp: str(DATA / "phasenet"), set()),  # a folder: listed by the engine, file by file
    ("an-int", lambda tmp: 3, set()),
]


def test_every_reader_is_in_the_sample_table():
    claimed = set().union(*(expected for _, _, expected in SAMPLES))
    assert claimed == set(NAMES) and len(NAMES) == len(set(NAMES))


@pytest.mark.parametrize("make, expected", [pytest.param(m, e, id=i) for i, m, e in SAMPLES])
@pytest.mark.parametrize("name", NAMES)
def test_guess_can_open_claims_its_format_and_refuses_the_others(tmp_path, make, expected, name):
    reader = next(r for r in registry.READERS if r.name == name)
    assert reader.guess_can_open(make(tmp_path)) is (name in expected)


@pytest.mark.parametrize("make, expected", [pytest.param(m, e, id=i) for i, m, e in SAMPLES if i.endswith("csv")
                                            or "parquet" in i or "no-suffix" in i])
def test_a_probe_is_claimed_as_its_path_is(tmp_path, make, expected):
    path = make(tmp_path)
    assert registry.file_reader_for(Probe(path)).name == ({"parquet", "csv"} & expected).pop()


def test_the_dispatchers_open_each_sample_with_its_reader():
    assert formats.as_frame(_catalog(), role="reference")["station"].tolist()
    assert formats.as_frame(pd.read_csv(DATA / "phasenet" / "picks.csv"), role="picks") is None
    assert registry.reader_for(str(DATA / "phasenet" / "picks.csv")) is None  # left to the listing
    assert read_raw(str(DATA / "quakescope" / "picks.parquet")).attrs["format"] == "parquet"
    assert registry.layout_for(read_raw(str(EQT)).columns).name == "eqtransformer"


# ------------------------------------------------------- a format registered in the table

class Bag:
    """A made-up tool's picks object: rows of (station, phase, time, conf)."""

    def __init__(self, rows: list[tuple[str, str, str, float]]) -> None:
        self.rows = rows


class BagReader(SourceReader):
    name = "bag"
    description = "a made-up picks object"

    def guess_can_open(self, source: Any) -> bool:
        return isinstance(source, Bag)

    def open(self, source: Any, *, role: str, manual_only: bool = False, dataset: str | None = None,
             name: str | None = None) -> pd.DataFrame:
        frame = pd.DataFrame(source.rows, columns=["station", "phase", "time", "conf"])
        frame.attrs["pickscale_description"] = f"{name or 'a bag'} ({len(frame)} picks)"
        return frame


PIPE_MAGIC = b"#PIPE\n"


class PipeReader(FileReader):
    """A made-up file format: ``#PIPE`` on the first line, then ``|``-separated cells."""

    name = "pipe"
    description = "pipe-separated"
    suffixes = listed = (".psv",)

    def recognises(self, probe: Probe) -> bool:
        return probe.head.startswith(PIPE_MAGIC)

    def open(self, probe: Probe) -> pd.DataFrame:
        frame = pd.read_csv(probe.path, sep="|", skiprows=1, dtype=str, keep_default_na=False)
        frame.attrs.update(source=probe.path, format="pipe")
        return frame


class Stacked(LayoutReader):
    """A made-up layout: its header has a ``pipe_layout`` column."""

    name = "stacked"

    def guess_can_open(self, source: Any) -> bool:
        return isinstance(source, pd.Index) and "pipe_layout" in source

    def open(self, raw: pd.DataFrame, *, carry: Any = ()) -> pd.DataFrame:
        return raw.drop(columns="pipe_layout")


@pytest.fixture
def registered(monkeypatch):
    """The table with the made-up formats added: a source reader first, a file reader before CSV (the last)."""
    readers = list(registry.READERS)
    readers.insert(0, BagReader())
    readers.insert(readers.index(next(r for r in readers if r.name == "csv")), PipeReader())
    readers.append(Stacked())
    monkeypatch.setattr(registry, "READERS", tuple(readers))


ROWS = [("CI.CLC", "P", "2020-01-01T00:00:01Z", 0.9), ("CI.WBS", "S", "2020-01-01T00:00:05Z", 0.4)]
PIPE_TEXT = "#PIPE\nstation|phase|time|conf\nCI.CLC|P|2020-01-01T00:00:01Z|0.9\nCI.WBS|S|2020-01-01T00:00:05Z|0.4\n"


@pytest.mark.slow
def test_a_registered_source_format_is_dispatched_to(registered):
    frame = formats.as_frame(Bag(ROWS), role="picks")
    assert frame["station"].tolist() == ["CI.CLC", "CI.WBS"]
    both = formats.as_frame({"a": Bag(ROWS), "b": Bag(ROWS[:1])}, role="picks")  # a dict value too
    assert both["model"].tolist() == ["a", "a", "b"]
    source = load(Bag(ROWS), role="picks", floor=0.5)  # the engine's dispatch: no change needed there
    assert source.description == "a bag (2 picks)"
    part = source.parts[0].compute(scheduler="sync")
    assert part.combos["station"].tolist() == ["CI.CLC"] and int(part.combos["n_picks"].sum()) == 1


def test_without_the_table_entry_the_format_is_unknown():
    assert registry.reader_for(Bag(ROWS)) is None and formats.as_frame(Bag(ROWS), role="picks") is None


def test_a_registered_file_format_is_dispatched_to_by_content_and_by_name(registered, tmp_path):
    odd = tmp_path / "picks.dat"  # no suffix of its own: known by its first bytes
    odd.write_text(PIPE_TEXT)
    named = tmp_path / "picks.psv"
    named.write_text(PIPE_TEXT)
    for path in (odd, named):
        raw = read_raw(str(path))
        assert raw.attrs["format"] == "pipe" and raw["station"].tolist() == ["CI.CLC", "CI.WBS"]
    part = read_part(str(odd), drop_invalid=False, floor=0.0)  # as a read task reads it
    assert int(part.combos["n_picks"].sum()) == 2
    tasks = load(str(odd), role="picks").parts  # the engine lists the path; its task reads it by the table
    assert int(tasks[0].compute(scheduler="sync").combos["n_picks"].sum()) == 2
    assert formats.CsvFiles().guess_can_open(str(odd)) is False  # CSV leaves it to the reader that claims it


def test_a_file_format_out_of_the_table_falls_to_csv(tmp_path):
    odd = tmp_path / "picks.dat"
    odd.write_text(PIPE_TEXT)
    assert read_raw(str(odd)).attrs["format"] == "csv"


def test_a_registered_layout_is_read_alone_in_a_batch(registered, tmp_path):
    paths = []
    for i in range(2):
        p = tmp_path / f"p{i}.csv"
        p.write_text("station,phase,time,conf,pipe_layout\nCI.CLC,P,2020-01-01T00:00:01Z,0.9,x\n")
        paths.append(str(p))
    groups, alone = read_raw_batch(paths, role="picks")
    assert groups == [] and alone == [0, 1]
    plain = [str(DATA / "phasenet" / "picks.csv")] * 2
    assert [g.files for g in read_raw_batch(plain, role="picks")[0]] == [[0, 1]]


def test_taking_a_reader_out_of_the_table_stops_its_dispatch(monkeypatch):
    monkeypatch.setattr(registry, "READERS", tuple(r for r in registry.READERS if r.name != "bulletin"))
    assert formats.as_frame(str(DATA / "bulletin.xml"), role="reference") is None


def test_frames_read_as_before():
    frame = pd.read_csv(DATA / "phasenet" / "picks.csv")
    source = load(frame, role="picks")
    assert source.description == f"<pandas DataFrame, {len(frame):,} rows>" and source.files == []
    n = normalise(frame, role="picks", source="x")
    assert int(source.parts[0].compute(scheduler="sync").combos["n_picks"].sum()) == n.n_rows


def test_a_parquet_name_without_parquet_is_refused_by_the_parquet_reader(tmp_path):
    p = tmp_path / "picks.parquet"
    shutil.copy(DATA / "phasenet" / "picks.csv", p)
    assert registry.file_reader_for(Probe(str(p))).name == "parquet"
    with pytest.raises(InputError, match=r"is not a Parquet file \(it does not start with 'PAR1'\)"):
        read_raw(str(p))


def test_a_folder_is_searched_for_what_the_file_readers_list(registered, tmp_path):
    (tmp_path / "a.psv").write_text(PIPE_TEXT)
    (tmp_path / "b.csv").write_text("station,phase,time,conf\nCI.CLC,P,2020-01-01T00:00:09Z,0.9\n")
    (tmp_path / "notes.txt").write_text("not listed\n")
    assert [Path(f.path).name for f in list_sources(tmp_path)] == ["a.psv", "b.csv"]
    source = load(str(tmp_path), role="picks")
    assert sum(int(t.compute(scheduler="sync").combos["n_picks"].sum()) for t in source.parts) == 3


def test_the_shipped_table_searches_folders_as_before():
    assert registry.listed_suffixes() == SOURCE_SUFFIXES
