"""Tables already in memory: a pandas DataFrame (read in chunks of rows) and a Dask DataFrame (a task a partition).

They need no conversion: their readers only say what the engine calls them
(:meth:`~pickscale.io.formats.reader.SourceReader.describe`), and
:func:`~pickscale.io.formats.as_frame` leaves them alone (``converts`` is False).
"""

from __future__ import annotations

import sys
from typing import Any

import pandas as pd

from .reader import Described, SourceReader

__all__ = ["PandasFrame", "DaskFrame"]


class PandasFrame(SourceReader):
    """A pandas DataFrame, in SPEC §1's columns or its aliases; in a dict, one model (or dataset) per key.

    Examples
    --------
    >>> frame = pd.DataFrame({"station": ["CLC"]})
    >>> PandasFrame().guess_can_open(frame), PandasFrame().describe(frame, frame, role="picks").name
    (True, '<pandas DataFrame, 1 rows>')
    """

    name = "pandas"
    description = "pandas DataFrame"
    converts = False

    def guess_can_open(self, source: Any) -> bool:
        return isinstance(source, pd.DataFrame)

    def open(self, source: Any, *, role: str, manual_only: bool = False, dataset: str | None = None,
             name: str | None = None) -> Any:
        return source

    def describe(self, source: Any, table: Any, *, role: str) -> Described:
        return Described(f"<pandas DataFrame, {len(table):,} rows>", f"the {role} DataFrame", [])

    def labelled(self, frame: pd.DataFrame, label: str, *, role: str, name: str) -> pd.DataFrame:
        copy = frame.copy(deep=False)  # the label column is added to a copy: the caller's frame stays as it is
        copy.attrs = dict(frame.attrs)
        return super().labelled(copy, label, role=role, name=name)


class DaskFrame(SourceReader):
    """A Dask DataFrame, each partition read in a task of its own (never in a dict).

    Examples
    --------
    >>> DaskFrame().guess_can_open(pd.DataFrame())
    False
    """

    name = "dask"
    description = "Dask DataFrame"
    converts = False
    in_dicts = ()
    partitioned = True

    def guess_can_open(self, source: Any) -> bool:
        # dask.dataframe is looked for only if the caller has imported it: importing it costs ~0.5 s.
        dd = sys.modules.get("dask.dataframe")
        return dd is not None and isinstance(source, dd.DataFrame)

    def open(self, source: Any, *, role: str, manual_only: bool = False, dataset: str | None = None,
             name: str | None = None) -> Any:
        return source

    def describe(self, source: Any, table: Any, *, role: str) -> Described:
        return Described(f"<dask DataFrame, {table.npartitions} partitions>", f"the {role} DataFrame", [])
