"""Parquet at scale: read only the columns pickscale uses, and convert large CSV files once.

A picker's Parquet output often carries more than pickscale needs (amplitudes,
trace ids, event ids).  :func:`read_projected` reads only the columns that
resolve to SPEC §1 names, and adds the values of hive-style folders
(``station=CI.CLC/``, ``model=PhaseNet/``, ``year=2020/``) as columns, so a
folder partitioned by station or by year/month is read as one table.

CSV is the slow path: text must be parsed on every run.  :func:`csv_to_parquet`
converts picks (or arrivals) once into a hive-partitioned Parquet dataset with
canonical columns and types (``time`` as timestamp[ns, UTC]).
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import InputError
from .candidates import MODEL_CANDIDATES_MAX, unused_text_candidates
from .columns import ALIASES, COLUMNS, column_key
from .messages import quote
from .normalise import normalise
from .storage import open_input

if TYPE_CHECKING:
    import pyarrow.parquet as pq

__all__ = ["hive_columns", "folder_values", "with_folder_columns", "is_parquet", "read_projected",
           "read_projected_many", "row_group_ranges", "csv_to_parquet", "check_claims", "MAX_ROWS_PER_BYTE"]


def hive_columns(path: str) -> dict[str, str]:
    """``key=value`` folder names in ``path`` as a mapping (values URL-decoded).

    Examples
    --------
    >>> hive_columns("picks/station=CI.CLC/year=2020/part-0.parquet")
    {'station': 'CI.CLC', 'year': '2020'}
    """
    return dict(_segments(path))


def _wanted(names: Iterable[str], role: str, columns: dict[str, str] | None = None) -> list[str]:
    """The file's columns that some SPEC §1 name or alias, or an explicit column name, could resolve to."""
    accepted = {column_key(a) for canonical in COLUMNS[role] for a in ALIASES[canonical]}
    accepted |= {column_key(v) for v in (columns or {}).values()}
    return [n for n in names if column_key(n) in accepted]


def _unused_text(pf: pq.ParquetFile, schema: pa.Schema, wanted: set[str], role: str,
                 columns: dict[str, str] | None) -> dict[str, list[str]]:
    """Picks without a model column: text columns the projection leaves out that hold a few values.

    Cheap: only the first row group of those columns is read (as dictionaries).
    """
    if role != "picks" or pf.metadata.num_row_groups == 0:
        return {}
    model_names = {column_key(a) for a in ALIASES["model"]}
    if columns and "model" in columns:
        model_names.add(column_key(columns["model"]))
    if any(column_key(n) in model_names for n in schema.names):
        return {}
    # Names that occur once only: a duplicated name cannot be read by name (and names no model anyway).
    others = [f.name for f in schema if f.name not in wanted and _is_text(f.type) and schema.names.count(f.name) == 1]
    if not others:
        return {}
    try:
        table = pf.read_row_group(0, columns=others)
    except (OSError, ValueError, KeyError, pa.ArrowException):
        return {}

    def distinct(name: str) -> list | None:
        col = table.column(name)
        values = col.unique() if not pa.types.is_dictionary(col.type) else col.combine_chunks().dictionary
        return None if len(values) > MODEL_CANDIDATES_MAX else values.to_pylist()

    return unused_text_candidates(others, distinct)


def _canonical(name: str, role: str) -> str | None:
    k = column_key(name)
    return next((c for c in COLUMNS[role] if k in {column_key(a) for a in ALIASES[c]}), None)


def is_parquet(path: str) -> bool:
    """True when the file starts with Parquet's magic bytes (whatever its extension)."""
    try:
        with open_input(path, "rb") as f:
            return f.read(4) == b"PAR1"
    except (OSError, ValueError):
        return False  # the reader says what is wrong with it


#: The most rows a byte of column data can hold in a real file.  Writers cut column data into pages of at
#: most ~1 MB or 20,000 rows (pyarrow, parquet-mr), each with a header of tens of bytes; the densest
#: picks file made for this bound (constant station, phase and conf, times one second apart, delta encoding,
#: zstd level 22) holds ~60 rows a byte.  4,096 is ~70 times that: a footer claiming more rows than its row
#: groups' bytes hold at this rate is damaged or forged, and reading it would allocate memory for rows that
#: are not there.  What passes is bounded by the file: at most ~32 kB of int64 column per byte read.
MAX_ROWS_PER_BYTE = 2**12


def _file_size(f: Any) -> int | None:
    try:
        size = getattr(f, "size", None)
        if isinstance(size, int):
            return size
        here = f.tell()
        end = f.seek(0, os.SEEK_END)
        f.seek(here)
        return int(end)
    except (OSError, ValueError, AttributeError, TypeError):
        return None


def check_claims(meta: pq.FileMetaData, size: int | None, path: str) -> None:
    """Refuse a Parquet footer whose row counts cannot be true for a file of ``size`` bytes (before any read).

    The rows are what pickscale allocates memory for; a forged or damaged footer (a 12 kB file that claims
    10^12 rows) is refused here with what it claims and what the file can hold: the row groups' rows must add
    up to the file's, each column chunk must lie inside the file and hold a value for every row, and a row
    group's column data must be at least one byte per :data:`MAX_ROWS_PER_BYTE` rows.

    Examples
    --------
    >>> import io, pyarrow as pa
    >>> import pyarrow.parquet as pq
    >>> buf = io.BytesIO(); pq.write_table(pa.table({"time": [1, 2, 3]}), buf)
    >>> meta = pq.ParquetFile(io.BytesIO(buf.getvalue())).metadata
    >>> check_claims(meta, len(buf.getvalue()), "picks.parquet")  # true claims: nothing to say
    >>> check_claims(meta, 100, "picks.parquet")
    Traceback (most recent call last):
    ...
    pickscale.errors.InputError: picks.parquet: the Parquet footer is damaged or forged: column 'time' of ...
    """
    def refuse(what: str) -> InputError:
        return InputError(f"{path}: the Parquet footer is damaged or forged: {what}.")

    total = 0
    for i in range(meta.num_row_groups):
        group = meta.row_group(i)
        rows = int(group.num_rows)
        if rows < 0:
            raise refuse(f"row group {i} claims {rows:,} rows")
        total += rows
        data = 0
        for j in range(group.num_columns):
            col = group.column(j)
            name = quote(col.path_in_schema)
            start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
            start = int(start if start is not None else col.file_offset)
            length = int(col.total_compressed_size)
            if start < 0 or length < 0 or (size is not None and start + length > size):
                raise refuse(f"column {name} of row group {i} claims bytes {start:,} to {start + length:,}, "
                             f"beyond the end of the {size:,}-byte file")
            if int(col.num_values) < rows:
                raise refuse(f"row group {i} claims {rows:,} rows but its column {name} holds "
                             f"{int(col.num_values):,} values")
            data += length
        if rows > MAX_ROWS_PER_BYTE * max(data, 1):
            of = "" if size is None else f" (of a {size:,}-byte file)"
            raise refuse(f"row group {i} claims {rows:,} rows, but its column data take {data:,} bytes{of}, "
                         f"which hold at most {MAX_ROWS_PER_BYTE * max(data, 1):,} rows "
                         f"({MAX_ROWS_PER_BYTE:,} rows a byte)")
    if total != int(meta.num_rows):
        raise refuse(f"it claims {int(meta.num_rows):,} rows but its {meta.num_row_groups:,} row group(s) "
                     f"hold {total:,}")


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_dictionary(t)


def _read_table(path: str, *, role: str, row_groups: tuple[int, int] | None = None,
                explicit: dict[str, str] | None = None) -> tuple[pa.Table, list[str], dict[str, list[str]]]:
    """The projected Arrow table of one file (text as dictionaries), the file's own column names, and
    the text columns left out that may name the model (picks without a model column; see ``_unused_text``).
    """
    import pyarrow.parquet as pq  # (here: a study of CSV files need not load Parquet's reader)

    with open_input(path, "rb") as f:
        pf = pq.ParquetFile(f)
        check_claims(pf.metadata, _file_size(f), path)
        schema = pf.schema_arrow
        columns = _wanted(schema.names, role, explicit) or None
        wanted = set(columns or schema.names)
        unused = _unused_text(pf, schema, wanted, role, explicit) if row_groups is None or row_groups[0] == 0 else {}
        # By field, not by name: a file may hold two columns of one name (the normaliser says so).
        text = list(dict.fromkeys(f.name for f in schema if f.name in wanted and _is_text(f.type)))
        pf = pq.ParquetFile(f, read_dictionary=text)
        if row_groups is None:
            table = pf.read(columns=columns)
        else:
            table = pf.read_row_groups(range(*row_groups), columns=columns)
    return table, list(schema.names), unused


def folder_values(path: str, role: str, names: Iterable[str]) -> dict[str, str]:
    """The hive folder values of ``path`` that become columns of a file with columns ``names`` (SPEC §1).

    A ``key=value`` folder counts when its key is a SPEC §1 name or alias of
    the role (``dataset``, ``study``, ``station``, ``model`` for picks...) and
    no column of the file resolves to the same name: the file's own column
    wins.  Of two folders for one name, the one nearest the file wins.  Other
    keys (``year=2020``) are left out.  The same rule for CSV and Parquet.

    Examples
    --------
    >>> folder_values("study=A/station=X/year=2020/ref.csv", "reference", ["station", "phase", "time"])
    {'study': 'A'}
    >>> folder_values("dataset=A/dataset=B/picks.csv", "picks", ["station"])
    {'dataset': 'B'}
    """
    covered = {_canonical(c, role) for c in names}
    out: dict[str, str] = {}
    for key, value in reversed(list(_segments(path))):
        canonical = _canonical(key, role)
        if canonical is not None and canonical not in covered:
            out[key] = value
            covered.add(canonical)
    return dict(reversed(list(out.items())))


def _segments(path: str) -> list[tuple[str, str]]:
    """Every ``key=value`` folder of ``path``, outermost first (a key may repeat)."""
    out = []
    for segment in Path(str(path)).parts[:-1]:
        if "=" in segment:
            key, _, value = segment.partition("=")
            if key:
                out.append((key, urllib.parse.unquote(value)))
    return out


def with_folder_columns(frame: pd.DataFrame, path: str, role: str) -> pd.DataFrame:
    """``frame`` with the :func:`folder_values` of ``path`` as constant ``Categorical`` columns (attrs kept).

    Examples
    --------
    >>> raw = pd.DataFrame({"station": ["X"], "phase": ["P"], "time": ["0"]})
    >>> with_folder_columns(raw, "study=A/ref.csv", "reference")["study"].tolist()
    ['A']
    """
    values = folder_values(path, role, map(str, frame.columns))
    if not values:
        return frame
    out = frame.copy(deep=False)
    zeros = np.zeros(len(frame), dtype=np.int8)
    for key, value in values.items():
        out[key] = pd.Categorical.from_codes(zeros, categories=[value])
    out.attrs = dict(frame.attrs)
    return out


def _with_folder_values(table: pa.Table, path: str, role: str) -> pa.Table:
    """Hive folder values as constant dictionary columns, where no column of the file provides them."""
    for key, value in folder_values(path, role, table.column_names).items():
        codes = pa.array(np.zeros(table.num_rows, dtype=np.int8))
        table = table.append_column(key, pa.DictionaryArray.from_arrays(codes, pa.array([value])))
    return table


def read_projected(path: str, *, role: str, row_groups: tuple[int, int] | None = None,
                   columns: dict[str, str] | None = None) -> pd.DataFrame:
    """One Parquet file with only the columns that matter, plus hive folder values.

    Text columns are read as dictionaries (pandas ``Categorical``): a station
    name repeated a million times costs a million small integer codes, and
    the normaliser then works on its few distinct values.  A column of the
    file wins over a folder value for the same SPEC §1 name (``trace_id`` in
    the file beats a ``station=`` folder).  If no column matches at all,
    every column is read, so the normaliser's message lists what the file
    really holds.  ``row_groups=(start, stop)`` reads only those row groups
    (a part of a large file).  ``columns`` (explicit names, ``{"model": "rid"}``)
    are read as well.  Picks without a model column: text columns left out
    that hold a few values in the first row group are recorded in
    ``attrs["unused_text_columns"]`` (the normaliser warns about them).
    """
    try:
        table, names, unused = _read_table(path, role=role, row_groups=row_groups, explicit=columns)
        table = _with_folder_values(table, path, role)
        # Inside the try: a date pandas cannot hold (year 1 or 3000) fails here, not in pyarrow.
        frame = table.to_pandas()
    except InputError:
        raise
    except (OSError, ValueError, TypeError, OverflowError, pa.ArrowException) as exc:
        raise InputError(f"{path}: cannot be read as Parquet ({exc}).") from None
    if len(frame) == 0:
        raise InputError(f"{path}: the Parquet file has no rows.")
    # The file's own columns, for a missing-column message that lists what is really there.
    frame.attrs.update(source=path, format="parquet", columns_in_file=names, unused_text_columns=unused)
    return frame


def read_projected_many(paths: list[str], *, role: str, columns: dict[str, str] | None = None) -> pd.DataFrame | None:
    """Several Parquet files of one schema as one frame (projected, folder values added); else None.

    For many small files (a hive layout by station): one conversion and one
    normalisation instead of one per file.  ``None`` — any file unreadable,
    empty or of another schema — asks the caller to read them one by one,
    which names the file in its message.
    """
    try:
        tables = []
        unused: dict[str, list[str]] = {}
        for path in paths:
            table, _, more = _read_table(path, role=role, explicit=columns)
            if table.num_rows == 0:
                return None
            tables.append(_with_folder_values(table, path, role))
            for name, values in more.items():
                unused[name] = sorted(set(unused.get(name, [])) | set(values))
        if any(t.schema != tables[0].schema for t in tables[1:]):
            return None  # e.g. int and float confidences: each file is checked on its own
        frame = pa.concat_tables(tables).to_pandas()
        frame.attrs["unused_text_columns"] = unused
        return frame
    except (OSError, ValueError, TypeError, OverflowError, pa.ArrowException):
        return None


def row_group_ranges(path: str, *, target_rows: int) -> list[tuple[tuple[int, int] | None, int]]:
    """Split a Parquet file into runs of whole row groups of about ``target_rows`` rows.

    Returns ``[(row_groups or None, first_row), ...]``: ``None`` (the whole
    file) when it is small or has a single row group, which cannot be split.
    """
    import pyarrow.parquet as pq

    try:
        with open_input(path, "rb") as f:
            meta = pq.ParquetFile(f).metadata
            check_claims(meta, _file_size(f), path)
    except (OSError, ValueError, pa.ArrowException):
        return [(None, 0)]  # the reader reports it (InputError is a ValueError: a footer that cannot be true)
    if meta.num_rows <= target_rows or meta.num_row_groups < 2:
        return [(None, 0)]
    out: list[tuple[tuple[int, int] | None, int]] = []
    start, first, rows = 0, 0, 0
    for i in range(meta.num_row_groups):
        rows += meta.row_group(i).num_rows
        if rows >= target_rows or i == meta.num_row_groups - 1:
            out.append(((start, i + 1), first))
            start, first, rows = i + 1, first + rows, 0
    return out


def csv_to_parquet(
    source: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    role: str = "picks",
    partition_by: tuple[str, ...] = ("station",),
    chunk_rows: int = 2_000_000,
    drop_invalid: bool = False,
) -> Path:
    """Convert a large CSV file into a hive-partitioned Parquet dataset, chunk by chunk.

    Rows are normalised as SPEC §1 says (aliases, stations, phases, times,
    conf), so the Parquet files hold canonical columns and types; invalid rows
    stop the conversion with the row numbers, unless ``drop_invalid``.
    ``partition_by`` names canonical columns (``station``, ``dataset``,
    ``model``) or ``year``/``month`` of the time.  Memory stays bounded by
    ``chunk_rows``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "p.csv").write_text("station,phase,time,conf\\nCI.CLC,P,2020-01-01T00:00:00Z,0.9\\n")
    >>> out = csv_to_parquet(d / "p.csv", d / "pq")
    >>> sorted(p.name for p in out.iterdir())
    ['station=CI.CLC']
    """
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise InputError(f"{out} exists and is not empty; choose a new folder for the Parquet dataset.")
    out.mkdir(parents=True, exist_ok=True)
    offset = 0
    reader = pd.read_csv(source, dtype=str, keep_default_na=False, chunksize=int(chunk_rows))
    for i, chunk in enumerate(reader):
        norm = normalise(chunk, role=role, source=str(source), drop_invalid=drop_invalid, row_offset=offset)
        offset += len(chunk)
        frame = norm.frame
        table = _canonical_table(frame, partition_by)
        import pyarrow.dataset as ds

        ds.write_dataset(
            table, out, format="parquet", partitioning=list(partition_by), partitioning_flavor="hive",
            basename_template=f"part-{i:05d}-{{i}}.parquet", existing_data_behavior="overwrite_or_ignore",
        )
    if offset == 0:
        raise InputError(f"{source}: no rows to convert.")
    return out


def _canonical_table(frame: pd.DataFrame, partition_by: tuple[str, ...]) -> pa.Table:
    data = {c: frame[c] for c in frame.columns if c != "time"}
    data["time"] = pd.to_datetime(frame["time"].to_numpy(np.int64), unit="ns", utc=True)
    table = pa.table(data)
    stamps = pd.DatetimeIndex(data["time"])
    if "year" in partition_by:
        table = table.append_column("year", pa.array(stamps.year.to_numpy(np.int32)))
    if "month" in partition_by:
        table = table.append_column("month", pa.array(stamps.month.to_numpy(np.int32)))
    return table
