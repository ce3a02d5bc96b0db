"""Inputs as lazy read tasks: files batched or split by row groups, frames by rows, objects converted first.

:func:`load` describes one input (picks or reference) as a list of delayed
read tasks of :mod:`pickscale.engine.parts`; nothing is read here.  What the
input is comes from the table of readers
(:func:`pickscale.io.formats.reader_for`); a path no reader claims is listed
and its files read in tasks (each by its file reader, :func:`pickscale.io.read_raw`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import pandas as pd
from dask import delayed

from ..errors import InputError
from ..io import Normalised, formats, normalise
from ..io.formats.reader import SourceReader
from ..io.parquet import row_group_ranges
from ..io.sources import SourceFile, list_sources, listed_suffixes
from ..io.storage import ObjectStorageError, using
from .parts import Failure, read_files, read_frame, read_part, read_reference

__all__ = ["Source", "load", "READ_ROWS"]

#: Rows per read task: a larger Parquet file is read as runs of row groups of about this many rows
#: (several tasks per worker even for a few large files, so that the read stage ends evenly).
READ_ROWS = 1_000_000


# Files at least this large are opened on the client to look for row groups (~1 M picks of Parquet);
# smaller ones are read together, up to this many bytes or files per task.
_SPLIT_BYTES = 12 * 2**20


_BATCH_BYTES = 12 * 2**20


# A task reads tiny files at ~40 µs each (CSV files of one header are parsed as one text, Parquet files of one
# schema as one table; engine.parts.read_files) plus a normalisation of ~30 ms: 2,048 files a task.
_BATCH_FILES = 2048
# An object is a request (20-75 ms: benchmarks/object_storage.py); a task fetches its objects at once
# (pickscale.io.storage.prefetched), but fewer objects a task still spread a bucket of tiny objects over the workers.
_BATCH_OBJECTS = 128


@dataclass
class Source:
    """Where one input came from, for messages and the store's attributes."""

    role: str
    description: str
    parts: list  # delayed PickPart (picks) or Normalised (reference), one per read task
    files: list[str]
    bytes: int


def _reference_frame(frame: pd.DataFrame, source: str, offset: int, **reading: Any) -> Normalised | Failure:
    try:
        return normalise(frame, role="reference", source=source, row_offset=offset, categorical=True, **reading)
    except InputError as exc:
        return Failure(str(exc))


def _size(path: str) -> int | None:
    """A local file's size (None for a URL: its size comes from the listing, :class:`SourceFile`)."""
    try:
        return os.path.getsize(path)
    except (OSError, ValueError):
        return None


def _batches(files: list[SourceFile]) -> list[list[SourceFile]]:
    """Consecutive small files grouped into batches of about ``_BATCH_BYTES`` (one read task each).

    A hive layout by station (``station=…/part-0.parquet``) holds one small
    file per station and month or year: read one by one, Dask's bookkeeping
    would cost more than the reading.  Sizes are the listing's (local files
    and objects alike); a file of unknown size is read on its own.
    """
    out: list[list[SourceFile]] = []
    size = 0
    for f in files:
        n = f.size
        if n is None or n >= _BATCH_BYTES:
            out.append([f])
            size = _BATCH_BYTES
            continue
        most = _BATCH_OBJECTS if "://" in f.path else _BATCH_FILES
        if out and size + n <= _BATCH_BYTES and len(out[-1]) < most:
            out[-1].append(f)
            size += n
        else:
            out.append([f])
            size = n
    return out


def _literal(batch: list[SourceFile]) -> Any:
    """A batch's paths as one value of the graph: Dask does not look into each of its (2,048) paths."""
    return delayed([f.path for f in batch], pure=True, traverse=False)


def _read_tasks(files: list[SourceFile], role: str, floor: float, reading: dict[str, Any]) -> list[Any]:
    if role == "reference":
        return [delayed(read_reference, pure=True)(_literal(batch), **reading) for batch in _batches(files)]

    tasks = []
    for batch in _batches(files):
        if len(batch) > 1:
            tasks.append(delayed(read_files, pure=True)(_literal(batch), floor=floor, **reading))
            continue
        f, size = batch[0]
        runs: list = [(None, 0)]
        if (size or 0) >= _SPLIT_BYTES:
            with using(reading.get("storage_options")):  # the footer is read here, on the client
                runs = row_group_ranges(f, target_rows=READ_ROWS)
        for groups, first in runs:
            tasks.append(delayed(read_part, pure=True)(f, floor=floor, row_groups=groups, row_offset=first,
                                                       **reading))
    return tasks


def _opened(reader: SourceReader, source: Any, role: str, manual_only: bool, floor: float,
            reading: dict[str, Any]) -> Source:
    """An input a source reader claims, opened on the client: a frame read in chunks of rows, or a partitioned
    (Dask) frame read a partition a task."""
    table = reader.open(source, role=role, manual_only=manual_only)
    name, rows, files = reader.describe(source, table, role=role)
    if not reader.partitioned:
        tasks = _frame_tasks(table, role, rows, floor, reading)
        return Source(role, name, tasks, files, int(table.memory_usage(deep=False).sum()))
    tasks = []
    for i, p in enumerate(table.to_delayed()):
        where = f"partition {i} of {rows}"
        tasks.append(delayed(_reference_frame)(p, where, 0, **reading) if role == "reference"
                     else delayed(read_frame)(p, source=where, floor=floor, **reading))
    return Source(role, name, tasks, files, 0)


def _frame_tasks(frame: pd.DataFrame, role: str, source: str, floor: float, reading: dict[str, Any]) -> list[Any]:
    tasks = []
    for lo in range(0, max(len(frame), 1), READ_ROWS):
        chunk = frame.iloc[lo:lo + READ_ROWS]
        if role == "reference":
            tasks.append(delayed(_reference_frame)(chunk, source, lo, **reading))
        else:
            tasks.append(delayed(read_frame)(chunk, source=source, floor=floor, row_offset=lo, **reading))
    return tasks


def _listing(source: Any, storage_options: dict[str, Any] | None) -> tuple[list[SourceFile] | None, bool,
                                                                          InputError | None]:
    """(the files a path, folder, glob or URL names, from one listing; whether they are CSV/Parquet files
    alone; the InputError of the listing, if any).

    Listed first, so that a folder on object storage is listed once (not again to look for bulletins): a
    listing of CSV and Parquet files alone is no bulletin.  Anything else (another name, an object, a
    folder of QuakeML) is left to the readers (:func:`pickscale.io.formats.reader_for`); a storage failure is
    raised here.
    """
    items = source if isinstance(source, (list, tuple)) else [source]
    if not items or not all(isinstance(s, (str, os.PathLike)) for s in items):
        return None, False, None
    try:
        listed = list_sources(source, storage_options=storage_options)
    except ObjectStorageError:
        raise
    except InputError as exc:
        return None, False, exc
    tables = listed_suffixes()
    return listed, all(f.path.lower().endswith(tables) for f in listed), None


def load(source: Any, *, role: str, drop_invalid: bool = False, floor: float = 0.0, manual_only: bool = False,
         station_key: str = "as-is", columns: Any = None, keep: str | tuple[str, ...] | None = None,
         storage_options: dict[str, Any] | None = None) -> Source:
    """Describe an input as a list of lazy read tasks.

    ``source`` is a path, folder, glob or fsspec URL (or a list of them), a
    pandas DataFrame, or a Dask DataFrame.  Picks are read as
    :class:`pickscale.engine.parts.PickPart` (only picks at or above ``floor`` are
    kept), the reference as :class:`pickscale.io.Normalised`.
    An ObsPy ``Catalog``, a bulletin file/folder/glob (read on the client:
    bulletins are small), a SeisBench ``PickList`` (or pick-like objects) or
    a dict name → such is first made a frame; whichever source reader of
    :data:`pickscale.io.formats.READERS` claims the input opens it
    (:func:`pickscale.io.formats.reader_for`).
    ``manual_only``, ``station_key`` and ``columns`` as in :func:`score`; ``keep``: a further reference
    column kept (the group column of ``group_by``, SPEC §14).  ``storage_options`` go to fsspec for URLs
    (listing on the client, reading in the tasks; :mod:`pickscale.io.storage`).  Sizes come from the
    filesystem's listing, so objects are batched and split as local files are.
    """
    reading = {"drop_invalid": drop_invalid, "station_key": station_key, "columns": columns}
    if keep is not None and role == "reference":
        reading["keep"] = keep
    listed, plain, unlisted = _listing(source, storage_options)
    reader = None if plain else formats.reader_for(source)
    if reader is not None:
        return _opened(reader, source, role, manual_only, floor, reading)
    if unlisted is not None:
        raise unlisted
    if listed is None:  # not a path: said as the listing says it
        listed = list_sources(source, storage_options=storage_options)
    if storage_options:
        reading["storage_options"] = dict(storage_options)
    size = sum(f.size or 0 for f in listed)
    desc = str(source) if not isinstance(source, (list, tuple)) else ", ".join(map(str, source))
    return Source(role, desc, _read_tasks(listed, role, floor, reading), [f.path for f in listed], size)
