"""Parquet at scale (issue 5): hive-partitioned folders, column projection, the CSV converter."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pickscale
from pickscale.errors import InputError
from pickscale.io import csv_to_parquet, hive_columns, read_projected
from pickscale.report.tables import to_csv_bytes

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "paired_windows"


def _tables_bytes(ds):
    return {k: to_csv_bytes(v) for k, v in pickscale.tables(ds).items()}


def test_hive_columns_from_folder_names():
    assert hive_columns("a/station=CI.CLC/model=PhaseNet%28x%29/part.parquet") == {
        "station": "CI.CLC", "model": "PhaseNet(x)"}
    assert hive_columns("plain/file.parquet") == {}


def test_projection_reads_only_columns_pickscale_uses(tmp_path):
    frame = pd.DataFrame({
        "station": ["CI.CLC"], "phase": ["P"], "time": pd.to_datetime(["2020-01-01T00:00:00Z"]),
        "probability": [0.9], "amplitude": [1e-6], "trace_id": ["CI.CLC..HHZ"], "notes": ["x"],
    })
    path = tmp_path / "station=CI.CLC" / "p.parquet"
    path.parent.mkdir()
    frame.drop(columns="station").to_parquet(path)
    got = read_projected(str(path), role="picks")
    # amplitude and notes are never read; the station comes from the folder name only when the
    # file has no station column of its own (here trace_id is one: a station alias, so it wins).
    assert "amplitude" not in got.columns and "notes" not in got.columns
    assert set(got.columns) == {"phase", "time", "probability", "trace_id"}  # no folder station
    frame.drop(columns=["station", "trace_id"]).to_parquet(path)
    got = read_projected(str(path), role="picks")
    assert got["station"].tolist() == ["CI.CLC"]


def test_a_parquet_file_with_no_known_column_gets_the_normal_message(tmp_path):
    path = tmp_path / "x.parquet"
    pd.DataFrame({"a": [1], "b": [2]}).to_parquet(path)
    with pytest.raises(InputError, match="Columns found: 'a', 'b'"):
        pickscale.score(str(DATA / "reference.csv"), str(path))


@pytest.mark.slow
@pytest.mark.parametrize("partition_by", [("station",), ("dataset", "year", "month")])
def test_converted_parquet_scores_like_the_csv(tmp_path, partition_by):
    out = csv_to_parquet(DATA / "picks.csv", tmp_path / "picks", partition_by=partition_by, chunk_rows=7_000)
    files = sorted(out.rglob("*.parquet"))
    assert len(files) > 5  # several chunks and partitions
    first = pq.read_table(files[0])
    assert first.schema.field("time").type == pa.timestamp("ns", tz="UTC")
    from_csv = pickscale.score(str(DATA / "reference.csv"), str(DATA / "picks.csv"))
    from_parquet = pickscale.score(str(DATA / "reference.csv"), str(out))
    assert _tables_bytes(from_parquet) == _tables_bytes(from_csv)


def test_converter_refuses_a_non_empty_folder_and_reports_bad_rows(tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("x")
    with pytest.raises(InputError, match="not empty"):
        csv_to_parquet(DATA / "picks.csv", tmp_path / "busy")
    bad = tmp_path / "bad.csv"
    bad.write_text("station,phase,time,conf\nA,P,2020-01-01T00:00:00Z,0.5\nA,P,not a time,0.5\n")
    with pytest.raises(InputError, match="row 3"):
        csv_to_parquet(bad, tmp_path / "out")
