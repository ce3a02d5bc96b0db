"""One CSV or Parquet file read as it is (:func:`read_raw`): the format from its first bytes and its name."""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..errors import InputError
from .csv import CsvText, csv_text, read_csv_file, read_csv_texts
from .sniff import PARQUET_MAGIC, check_codec, compression_of, not_text_reason, read_head, suffix_kind
from .storage import is_url, open_input

__all__ = ["RawGroup", "read_raw", "read_raw_batch"]


def _read_parquet(path: str) -> pd.DataFrame:
    """A whole Parquet file as it is (pyarrow types kept)."""
    try:
        with open_input(path, "rb") as f:
            df = pd.read_parquet(f, engine="pyarrow")
    except (OSError, ValueError, TypeError) as exc:  # pyarrow.ArrowInvalid is a ValueError
        raise InputError(f"{path}: cannot be read as Parquet ({exc}).") from None
    if len(df) == 0:
        cols = ", ".join(map(str, df.columns)) or "none"
        raise InputError(f"{path}: the Parquet file has no rows (columns: {cols}).")
    df.attrs.update(source=path, format="parquet")
    return df


def read_raw(path: str, *, role: str | None = None) -> pd.DataFrame:
    """Read one CSV or Parquet file as it is.

    CSV cells are read as strings (``dtype=str``, empty cells ``''``) so that
    pandas guesses nothing; the delimiter (``,``, ``;`` or tab) is sniffed
    from the first lines, a UTF-8 byte-order mark is ignored, UTF-16 and
    UTF-32 with a byte-order mark are read (Excel's "Unicode text"), a run of
    ``#`` comment lines before the header is skipped, and gzip, bzip2, xz and
    Zstandard compression are detected from the content (Zstandard needs the
    ``zstandard`` package).  Parquet columns keep their types (pyarrow).  The
    format comes from the extension; a file with another extension is sniffed
    (Parquet starts with ``PAR1``).  ``df.attrs`` records ``source``,
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
    head = read_head(path)
    if not head:
        raise InputError(f"{path}: the file is empty (0 bytes).")
    kind = suffix_kind(path)
    if head.startswith(PARQUET_MAGIC):
        parquet = _read_parquet(path)
        return parquet if role is None else _with_folders(parquet, path, role)
    if kind == "parquet":
        reason = not_text_reason(head) or "is not a Parquet file (it does not start with 'PAR1')"
        raise InputError(f"{path}: {reason}.")
    compression = compression_of(head)
    if compression:
        check_codec(path, compression)
        head = read_head(path, compression)
        if not head:
            raise InputError(f"{path}: the compressed file is empty.")
    frame = read_csv_file(path, head, compression)
    return frame if role is None else _with_folders(frame, path, role)


def _with_folders(frame: pd.DataFrame, path: str, role: str) -> pd.DataFrame:
    from .parquet import with_folder_columns

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
    file of a group whose text did not parse as the files would alone.
    """
    from .parquet import folder_values
    from .sniff import suffix_kind

    alone: list[int] = []
    groups: dict[tuple, list[tuple[int, CsvText, dict[str, str]]]] = {}
    for i, path in enumerate(paths):
        data = None if suffix_kind(path) == "parquet" else _content(path)
        text = None if data is None or data.startswith(PARQUET_MAGIC) else csv_text(data)
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
                    and not _eqt_wide(frame.columns)):
                for key in keys:  # as with_folder_columns adds them to each file's frame
                    codes, names = pd.factorize(np.array([f[key] for _, _, f in part], dtype=object))
                    frame[key] = pd.Categorical.from_codes(np.repeat(codes, rows), categories=list(names))
                out.append(RawGroup([i for i, _, _ in part], rows, frame))
            elif len(part) == 1 or frame is not None and _eqt_wide(frame.columns):
                alone.extend(i for i, _, _ in part)
            else:
                pending.extend([part[len(part) // 2:], part[:len(part) // 2]])
    out.sort(key=lambda g: g.files[0])
    return out, sorted(alone)


def _eqt_wide(columns: pd.Index) -> bool:
    from .formats.eqtransformer import is_eqt_wide  # a wide table becomes rows per file: read it alone

    return is_eqt_wide(columns)
