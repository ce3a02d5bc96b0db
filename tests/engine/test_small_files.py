"""Issue 23: a glob of many tiny CSV files is read in batches (one parse and one normalisation per header).

The tables are those of one file with the same rows, byte for byte; a bad row in one small file is named
by its file and row number, as when that file is read alone; files of different headers in one glob
still read right.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import pickscale
from pickscale.engine import inputs, parts
from pickscale.errors import InputError
from pickscale.report.tables import to_csv_bytes

DATA = Path(__file__).resolve().parents[1] / "data" / "paired_windows"
REFERENCE = str(DATA / "reference.csv")
N_FILES = 2_000


def _rows(n: int = N_FILES) -> pd.DataFrame:
    return pd.read_csv(DATA / "picks.csv", dtype=str, keep_default_na=False).head(n)


def _one_file(folder: Path, rows: pd.DataFrame) -> str:
    path = folder / "one.csv"
    rows.to_csv(path, index=False)
    return str(path)


def _tiny_files(folder: Path, rows: pd.DataFrame, layout=None) -> list[Path]:
    """One file per row (~100 bytes each); ``layout(i, frame)`` may change the i-th file's columns."""
    out = folder / "tiny"
    out.mkdir()
    paths = []
    for i in range(len(rows)):
        frame = rows.iloc[i:i + 1]
        if layout is not None:
            frame = layout(i, frame)
        path = out / f"p{i:05d}.csv"
        frame.to_csv(path, index=False)
        paths.append(path)
    return paths


def _same_tables(a, b) -> bool:
    ta, tb = pickscale.tables(a), pickscale.tables(b)
    return ta.keys() == tb.keys() and all(to_csv_bytes(ta[k]) == to_csv_bytes(tb[k]) for k in ta)


@pytest.fixture
def read_alone(monkeypatch):
    """The files read one by one (each its own read_csv and normalisation)."""
    seen: list[str] = []
    read_part = parts.read_part
    monkeypatch.setattr(parts, "read_part", lambda path, **k: seen.append(str(path)) or read_part(path, **k))
    return seen


@pytest.mark.slow
def test_a_glob_of_tiny_csv_files_gives_the_tables_of_one_file(tmp_path, read_alone):
    rows = _rows()
    files = _tiny_files(tmp_path, rows)
    glob = str(tmp_path / "tiny" / "*.csv")
    src = inputs.load(glob, role="picks")
    assert len(src.parts) <= len(files) // 100  # the plan: a few read tasks, not one per file
    whole = pickscale.score(REFERENCE, _one_file(tmp_path, rows))
    batched = pickscale.score(REFERENCE, glob)
    assert read_alone == []  # every file parsed and normalised with the others of its header
    assert _same_tables(whole, batched)
    assert batched.attrs["inputs"]["picks"]["rows_read"] == len(rows)
    assert batched.attrs["inputs"]["picks"]["files"] == len(files)


@pytest.mark.slow
def test_a_bad_row_in_one_tiny_file_is_named_by_its_file_and_row(tmp_path, read_alone):
    rows = _rows()
    files = _tiny_files(tmp_path, rows)
    bad = files[1234]
    bad.write_text(bad.read_text().replace(rows["conf"].iloc[1234], "1.5"))
    with pytest.raises(InputError) as alone:
        pickscale.score(REFERENCE, str(bad))
    read_alone.clear()
    glob = str(tmp_path / "tiny" / "*.csv")
    with pytest.raises(InputError) as batched:
        pickscale.score(REFERENCE, glob)
    message = str(alone.value).partition(f"{bad}: ")[2]
    assert f"{bad}: " in str(batched.value) and message and message in str(batched.value)
    assert "row 2" in str(batched.value)
    assert read_alone == [str(bad)]  # the clean files were still read together
    # Dropped instead: the same tables as one file without that row.
    kept = rows.drop(index=1234)
    whole = pickscale.score(REFERENCE, _one_file(tmp_path, kept))
    dropped = pickscale.score(REFERENCE, glob, drop_invalid=True)
    assert _same_tables(whole, dropped)
    assert dropped.attrs["inputs"]["picks"]["rows_invalid_dropped"] == 1


@pytest.mark.slow
def test_tiny_files_of_different_headers_in_one_glob(tmp_path, read_alone):
    rows = _rows(900)
    columns = list(rows.columns)

    def layout(i: int, frame: pd.DataFrame) -> pd.DataFrame:
        if i % 3 == 1:  # the columns in another order
            return frame[columns[::-1]]
        if i % 3 == 2:  # an extra column, and ';' as the delimiter every 6th file
            frame = frame.assign(event=f"ev{i}")
        return frame

    files = _tiny_files(tmp_path, rows, layout)
    for f in files[5::6]:  # ';'-separated (the header says so)
        f.write_text(f.read_text().replace(",", ";"))
    glob = str(tmp_path / "tiny" / "*.csv")
    whole = pickscale.score(REFERENCE, _one_file(tmp_path, rows))
    batched = pickscale.score(REFERENCE, glob)
    assert read_alone == []
    assert _same_tables(whole, batched)
    assert batched.attrs["inputs"]["picks"]["rows_read"] == len(rows)
