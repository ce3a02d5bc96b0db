"""Hostile inputs (issue 23): a clear answer in bounded time and memory.

- a Parquet footer that claims more rows than the file can hold is refused before anything is read;
- what messages and the store's attributes quote from the input is capped: a million distinct unknown
  phases or a megabyte-long station name cost a few lines, not megabytes.

The command runs in a subprocess under a memory limit (``RLIMIT_AS``) and a timeout, so a regression is a
failed test, not a machine out of memory.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pickscale.errors import InputError
from pickscale.io.parquet import MAX_ROWS_PER_BYTE, check_claims, read_projected
from tests.helpers.processes import run_limited

# --------------------------------------------------------------------------- a Parquet footer, rewritten
# Thrift compact protocol, enough to read and write a Parquet footer (FileMetaData) field by field.

def _varint(b: bytes, i: int) -> tuple[int, int]:
    shift = out = 0
    while True:
        byte = b[i]
        i += 1
        out |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return out, i


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read(b: bytes, i: int, t: int):
    if t in (1, 2):
        return t == 1, i
    if t == 3:
        return b[i], i + 1
    if t in (4, 5, 6):
        n, i = _varint(b, i)
        return (n >> 1) ^ -(n & 1), i
    if t == 7:
        return b[i:i + 8], i + 8
    if t == 8:
        n, i = _varint(b, i)
        return b[i:i + n], i + n
    if t in (9, 10):
        size, et = b[i] >> 4, b[i] & 0x0F
        i += 1
        if size == 15:
            size, i = _varint(b, i)
        items = []
        for _ in range(size):
            v, i = _read(b, i, et)
            items.append(v)
        return (et, items), i
    if t == 12:
        fields: dict[int, list] = {}
        last = 0
        while b[i]:
            delta, ft = b[i] >> 4, b[i] & 0x0F
            i += 1
            if delta:
                fid = last + delta
            else:
                n, i = _varint(b, i)
                fid = (n >> 1) ^ -(n & 1)
            v, i = _read(b, i, ft)
            fields[fid] = [ft, v]
            last = fid
        return fields, i + 1
    raise ValueError(f"thrift type {t} (not in a Parquet footer)")


def _write(t: int, v) -> bytes:
    if t in (1, 2):
        return b""
    if t == 3:
        return bytes([v])
    if t in (4, 5, 6):
        return _uvarint(((v << 1) ^ (v >> 63)) & (2**64 - 1))
    if t in (7,):
        return v
    if t == 8:
        return _uvarint(len(v)) + v
    if t in (9, 10):
        et, items = v
        head = bytes([len(items) << 4 | et]) if len(items) < 15 else bytes([0xF0 | et]) + _uvarint(len(items))
        return head + b"".join(bytes([1 if x else 2]) if et in (1, 2) else _write(et, x) for x in items)
    out, last = bytearray(), 0
    for fid in sorted(v):
        ft, val = v[fid]
        ft = (1 if val else 2) if ft in (1, 2) else ft
        out += bytes([(fid - last) << 4 | ft]) if 0 < fid - last <= 15 else bytes([ft]) + _uvarint(fid << 1)
        out += _write(ft, val)
        last = fid
    return bytes(out) + b"\x00"


def forged(path: Path, *, rows: int, groups: bool = True, values: bool = True) -> Path:
    """The Parquet file at ``path`` with a footer that claims ``rows`` rows: the file's (field 3 of
    FileMetaData), each row group's (``groups``: RowGroup.num_rows) and each column chunk's
    (``values``: ColumnMetaData.num_values).  The data pages are untouched."""
    data = path.read_bytes()
    n = struct.unpack("<i", data[-8:-4])[0]
    meta, _ = _read(data[-8 - n:-8], 0, 12)
    assert _write(12, meta) == data[-8 - n:-8]  # the round trip is exact
    meta[3][1] = rows
    for group in meta[4][1][1]:
        if groups:
            group[3][1] = rows
        for chunk in group[1][1][1]:
            if values:
                chunk[3][1][5][1] = rows
    footer = _write(12, meta)
    out = path.with_name(f"forged-{rows}-{int(groups)}{int(values)}.parquet")
    out.write_bytes(data[:-8 - n] + footer + struct.pack("<i", len(footer)) + b"PAR1")
    return out


@pytest.fixture
def small_files(tmp_path):
    n = 300
    t = pd.Timestamp("2024-01-01", tz="UTC") + pd.to_timedelta(np.arange(n), unit="s")
    picks = pa.table({"station": ["CI.CLC"] * n, "phase": ["P", "S"] * (n // 2), "time": t,
                      "conf": np.linspace(0.1, 0.9, n)})
    pq.write_table(picks, tmp_path / "picks.parquet")
    pd.DataFrame({"station": ["CI.CLC"] * 3, "phase": ["P"] * 3,
                  "time": t[:3].strftime("%Y-%m-%dT%H:%M:%SZ")}).to_csv(tmp_path / "ref.csv", index=False)
    return tmp_path / "ref.csv", tmp_path / "picks.parquet"


@pytest.mark.slow
def test_a_footer_claiming_a_trillion_rows_is_refused_before_reading(small_files, tmp_path):
    """A 6 kB file whose footer claims 10^12 rows (every count patched, the pages untouched): exit 2 with
    what the footer claims and what the file can hold, not terabytes of allocation."""
    ref, picks = small_files
    hostile = forged(picks, rows=10**12)
    assert hostile.stat().st_size < 10_000 and pq.ParquetFile(hostile).metadata.num_rows == 10**12
    proc = run_limited("score", "--reference", ref, "--picks", hostile, "--out", tmp_path / "out", "--no-figures",
                       "--workers", "1")
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert str(hostile.name) in proc.stderr
    assert "claims 1,000,000,000,000 rows" in proc.stderr and "hold at most" in proc.stderr, proc.stderr[-3000:]
    assert not (tmp_path / "out" / "results.zarr").exists()


@pytest.mark.parametrize(("groups", "values", "said"), [
    (True, False, "holds 300 values"),  # the row groups claim rows their columns do not hold
    (False, False, "row group(s) hold 300"),  # the file claims rows its row groups do not hold
])
def test_footers_that_contradict_themselves_are_refused(small_files, groups, values, said):
    _, picks = small_files
    hostile = forged(picks, rows=10**12, groups=groups, values=values)
    meta = pq.ParquetFile(hostile).metadata  # the footer only: nothing is allocated for the rows
    with pytest.raises(InputError, match="damaged or forged") as err:
        check_claims(meta, hostile.stat().st_size, str(hostile))
    assert said in str(err.value) and "1,000,000,000,000" in str(err.value)
    if not groups:  # safe to read (pyarrow reads the row groups): refused all the same
        with pytest.raises(InputError, match="row group\\(s\\) hold 300"):
            read_projected(str(hostile), role="picks")


def test_a_column_chunk_beyond_the_end_of_the_file_is_refused(small_files):
    _, picks = small_files
    meta = pq.ParquetFile(picks).metadata
    with pytest.raises(InputError, match="beyond the end of the 1,000-byte file"):
        check_claims(meta, 1_000, "picks.parquet")


def test_dense_real_files_pass(tmp_path):
    """The densest real-like layout (constant columns, regular times, delta encoding, zstd) stays far below
    the bound: it holds tens of rows a byte, the bound is thousands."""
    n = 200_000
    table = pa.table({"station": pa.array(["CI.CLC"] * n).dictionary_encode(), "phase": ["P"] * n,
                      "time": pa.array(np.arange(n, dtype=np.int64) * 10**9, pa.timestamp("ns", "UTC")),
                      "conf": np.full(n, 0.5)})
    path = tmp_path / "dense.parquet"
    pq.write_table(table, path, compression="zstd", compression_level=22,
                   use_dictionary=["station", "phase", "conf"], column_encoding={"time": "DELTA_BINARY_PACKED"})
    meta = pq.ParquetFile(path).metadata
    check_claims(meta, path.stat().st_size, str(path))
    assert n / path.stat().st_size < MAX_ROWS_PER_BYTE / 10
    assert len(read_projected(str(path), role="picks")) == n


# --------------------------------------------------------------------------- what messages quote

@pytest.mark.slow
def test_many_unknown_phases_and_a_huge_station_name_are_quoted_capped(tmp_path):
    """5,000 distinct unknown phases and a 1 MB station name (on both sides, unscored): the warnings list
    the first few names with counts, each cut short, and so do the store's attributes (today's code wrote
    every name to stderr and twice into zarr.json: 2 MB each)."""
    n = 400
    t0 = pd.Timestamp("2024-01-01", tz="UTC")
    times = (t0 + pd.to_timedelta(np.arange(n) * 10, unit="s")).strftime("%Y-%m-%dT%H:%M:%SZ")
    long = "X" * 1_000_000
    picks = pd.concat([
        pd.DataFrame({"station": "CI.CLC", "phase": "P", "time": times, "conf": 0.9}),
        pd.DataFrame({"station": "CI.CLC", "phase": [f"Q{i:05d}" for i in range(5000)], "time": times[0],
                      "conf": 0.5}),
        pd.DataFrame({"station": [long], "phase": ["P"], "time": [times[0]], "conf": [0.9]}),
    ])
    picks.to_csv(tmp_path / "picks.csv", index=False)
    pd.DataFrame({"station": ["CI.CLC"] * 40 + [long + "Y"], "phase": "P",
                  "time": list(times[::10]) + [times[0]]}).to_csv(tmp_path / "ref.csv", index=False)
    out = tmp_path / "out"
    proc = run_limited("score", "--reference", tmp_path / "ref.csv", "--picks", tmp_path / "picks.csv", "--out", out,
                       "--no-figures", "--workers", "1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(proc.stderr) < 5_000, proc.stderr[:3000]
    assert "'Q00000': 1" in proc.stderr and "4,990 more names (4,990 rows)" in proc.stderr
    assert "Q04999" not in proc.stderr
    assert "X" * 59 + "…" in proc.stderr and "X" * 61 not in proc.stderr
    root = (out / "results.zarr" / "zarr.json").read_text(encoding="utf-8")
    assert len(root) < 200_000 and "Q04999" not in root and "X" * 61 not in root
    attrs = json.loads(root)["attributes"]
    dropped = attrs["inputs"]["picks"]["phases_dropped"]
    assert len(dropped) == 11 and dropped["…"] == {"names": 4990, "rows": 4990}
