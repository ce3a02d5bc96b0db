"""One CSV or Parquet file read as it is (:func:`read_raw`): the format from its first bytes and its name."""

from __future__ import annotations

import os

import fsspec
import pandas as pd

from ..errors import InputError
from .csv import read_csv_file
from .sniff import PARQUET_MAGIC, check_codec, compression_of, not_text_reason, read_head, suffix_kind

__all__ = ["read_raw"]


def _read_parquet(path: str) -> pd.DataFrame:
    """A whole Parquet file as it is (pyarrow types kept)."""
    try:
        with fsspec.open(path, "rb") as f:
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
