"""One CSV or Parquet file read as it is (:func:`read_raw`): the format from its first bytes and its name."""

from __future__ import annotations

import os

import fsspec
import pandas as pd

from ..errors import InputError
from .csv import read_csv_file
from .sniff import GZIP_MAGIC, PARQUET_MAGIC, not_text_reason, read_head, suffix_kind

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


def read_raw(path: str) -> pd.DataFrame:
    """Read one CSV or Parquet file as it is.

    CSV cells are read as strings (``dtype=str``, empty cells ``''``) so that
    pandas guesses nothing; the delimiter (``,``, ``;`` or tab) is sniffed
    from the first lines, a UTF-8 byte-order mark is ignored, gzip is detected
    from the extension or the content.  Parquet columns keep their types
    (pyarrow).  The format comes from the extension; a file with another
    extension is sniffed (Parquet starts with ``PAR1``).  ``df.attrs`` records
    ``source``, ``format`` and, for CSV, ``delimiter``.

    Parameters
    ----------
    path
        A local path or fsspec URL of one file.

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
        return _read_parquet(path)
    if kind == "parquet":
        reason = not_text_reason(head) or "is not a Parquet file (it does not start with 'PAR1')"
        raise InputError(f"{path}: {reason}.")
    compression = "gzip" if head.startswith(GZIP_MAGIC) else None
    if compression:
        head = read_head(path, compression)
        if not head:
            raise InputError(f"{path}: the compressed file is empty.")
    return read_csv_file(path, head, compression)
