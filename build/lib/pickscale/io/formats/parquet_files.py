"""Parquet files, known by their magic bytes (``PAR1``) whatever their name, read as they are (pyarrow types).

The engine reads Parquet projected onto the columns it needs
(:func:`pickscale.io.parquet.read_projected`); this reader is what
:func:`pickscale.io.read_raw` makes of one: the whole file.
"""

from __future__ import annotations

import pandas as pd

from ...errors import InputError
from ..sniff import not_text_reason
from ..sources import PARQUET_SUFFIXES
from ..storage import open_input
from .reader import FileReader, Probe

__all__ = ["PARQUET_MAGIC", "ParquetFiles"]

PARQUET_MAGIC = b"PAR1"


class ParquetFiles(FileReader):
    """A file starting with ``PAR1``, or named ``*.parquet``/``*.pq`` (refused, saying why, when it is not Parquet).

    Examples
    --------
    >>> reader = ParquetFiles()
    >>> reader.guess_can_open(Probe("part-0", head=b"PAR1\\x15")), reader.guess_can_open(Probe("a.csv", head=b"s,p"))
    (True, False)
    """

    name = "parquet"
    description = "Parquet (projection, hive folders, row groups)"
    suffixes = listed = PARQUET_SUFFIXES

    def recognises(self, probe: Probe) -> bool:
        return probe.head.startswith(PARQUET_MAGIC)

    def open(self, probe: Probe) -> pd.DataFrame:
        path = probe.path
        if not probe.head.startswith(PARQUET_MAGIC):  # named so, yet something else: say what it is
            reason = not_text_reason(probe.head) or "is not a Parquet file (it does not start with 'PAR1')"
            raise InputError(f"{path}: {reason}.")
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
