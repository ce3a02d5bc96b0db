"""One CSV or Parquet file read as it is (:func:`read_raw`): by the file reader of the table that claims it."""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..errors import InputError
from .csv import CsvText, csv_text, read_csv_texts
from .formats.reader import Probe
from .formats.registry import file_reader_for, layout_for, named_reader
from .parquet import folder_values, with_folder_columns
from .sniff import SNIFF_BYTES, read_head
from .storage import is_url, open_input

__all__ = ["RawGroup", "read_raw", "read_raw_batch"]


def read_raw(path: str, *, role: str | None = None) -> pd.DataFrame:
    """Read one CSV or Parquet file as it is.

    CSV cells are read as strings (``dtype=str``, empty cells ``''``) so that
    pandas guesses nothing; the delimiter (``,``, ``;`` or tab) is sniffed
    from the first lines, a UTF-8 byte-order mark is ignored, UTF-16 and
    UTF-32 with a byte-order mark are read (Excel's "Unicode text"), a run of
    ``#`` comment lines before the header is skipped, and gzip, bzip2, xz and
    Zstandard compression are detected from the content (Zstandard needs the
    ``zstandard`` package).  Parquet columns keep their types (pyarrow).  The
    format is the first file reader of :data:`~pickscale.io.formats.READERS`
    that claims the file (Parquet starts with ``PAR1`` whatever the name; a
    ``*.parquet`` that does not is refused), else CSV.  ``df.attrs`` records ``source``,
    ``format`` and, for CSV, ``delimiter`` (and ``encoding`` when not UTF-8,
    ``comment_lines`` when lines were skipped: the normaliser counts rows from
    the top of the file).

    Parameters
    ----------
    path
        A local path or fsspec URL of one file.
    role
        ``"reference"`` or ``"picks"``: add the values of hive-style folders
        (``dataset=A/``, ``station=CI.CLC/``) as columns, as SPEC §1 says,
        where no column of the file provides them
        (:func:`~pickscale.io.parquet.with_folder_columns`).  ``None``
        (default): the file as it is.

    Raises
    ------
    InputError
        Naming the file: missing, empty, header only, binary or HTML content,
        not UTF-8 (with the byte offset and line), malformed CSV or Parquet.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "ref.csv"
    >>> _ = p.write_text("station;phase;time\\nCLC;P;2020-01-01T00:00:00Z\\n")
    >>> df = read_raw(str(p))
    >>> list(df.columns), df.attrs["delimiter"]
    (['station', 'phase', 'time'], ';')
    """
    path = os.fspath(path)
    probe = Probe(path, head=read_head(path))  # read first: a missing file or a folder is said so
    if not probe.head:
        raise InputError(f"{path}: the file is empty (0 bytes).")
    frame = file_reader_for(probe).open(probe)
    return frame if role is None else _with_folders(frame, path, role)


def _with_folders(frame: pd.DataFrame, path: str, role: str) -> pd.DataFrame:
    return with_folder_columns(frame, path, role)


class RawGroup(NamedTuple):
    """Small CSV files of one header read as one frame (:func:`read_raw_batch`)."""

    files: list[int]  # their indices in the batch, in order
    rows: list[int]  # the frame's rows of each file, in order
    frame: pd.DataFrame


def _content(path: str) -> bytes | None:
    """The whole file (None: unreadable here; read on its own, the reader says why)."""
    try:
        if not is_url(path):
            with open(path, "rb") as f:
                return f.read()
        with open_input(path, "rb") as f:
            return f.read()
    except Exception:
        return None


def read_raw_batch(paths: list[str], *, role: str) -> tuple[list[RawGroup], list[int]]:
    """Small CSV files read together: (groups of files of one header, each as one frame; the files to read alone).

    A glob of many tiny files (one pick each) costs little to read, but a ``pd.read_csv`` and a
    normalisation per file cost ~25 ms each.  Here each plain file (:func:`~pickscale.io.csv.csv_text`) is
    read whole, once, and files whose header line (and sniffed delimiter, and hive folder keys) are the
    same are parsed as one text: the frame is the files' :func:`read_raw` frames one after the other
    (folder values as ``Categorical`` columns).  Any other file — Parquet, compressed, quoted, with comment
    lines or with anything to report — is left to :func:`read_raw` (its index is returned), as is every
    file of a group whose text did not parse as the files would alone, and every file of a format whose
    reader does not batch (``batched``) or of a tool's own layout (:func:`~pickscale.io.formats.layout_for`).
    """
    alone: list[int] = []
    groups: dict[tuple, list[tuple[int, CsvText, dict[str, str]]]] = {}
    for i, path in enumerate(paths):
        named = named_reader(path)  # a Parquet name: not even read here
        data = None if named is not None and not named.batched else _content(path)
        batched = data is not None and file_reader_for(Probe(path, head=data[:SNIFF_BYTES])).batched
        text = csv_text(data) if batched and data is not None else None
        if text is None:
            alone.append(i)
            continue
        folder = path.rpartition("/")[0]  # (no key=value folder: no folder value, the usual case)
        folders = folder_values(path, role, text.header.split(text.delimiter)) if "=" in folder else {}
        key = (text.header, text.delimiter, tuple(folders))
        groups.setdefault(key, []).append((i, text, folders))
    out: list[RawGroup] = []
    for (header, delimiter, keys), members in groups.items():
        pending = [members]
        while pending:  # a group whose text does not parse as its files would alone is cut in halves
            part = pending.pop()
            frame = read_csv_texts(header, delimiter, [t.body for _, t, _ in part])
            rows = [t.rows for _, t, _ in part]
            if (frame is not None and len(frame) == sum(rows) and list(frame.columns) == header.split(delimiter)
                    and layout_for(frame.columns) is None):
                for key in keys:  # as with_folder_columns adds them to each file's frame
                    codes, names = pd.factorize(np.array([f[key] for _, _, f in part], dtype=object))
                    frame[key] = pd.Categorical.from_codes(np.repeat(codes, rows), categories=list(names))
                out.append(RawGroup([i for i, _, _ in part], rows, frame))
            elif len(part) == 1 or frame is not None and layout_for(frame.columns) is not None:
                # (a table in a tool's own layout becomes rows per file in the normaliser: read it alone)
                alone.extend(i for i, _, _ in part)
            else:
                pending.extend([part[len(part) // 2:], part[:len(part) // 2]])
    out.sort(key=lambda g: g.files[0])
    return out, sorted(alone)

