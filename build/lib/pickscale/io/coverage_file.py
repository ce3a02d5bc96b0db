"""The coverage file: the windows of continuous data each model was run on (SPEC §2, "Coverage").

One row per window: ``station, start, end`` (inclusive, times as SPEC §1 reads them), and optionally
``dataset`` and ``model``.  Column names are matched case-insensitively; other columns (a trace id,
the channels, counts) are ignored, so a SeisBench window list such as ``tests/data/paired_windows/windows.csv``
is read as it is.  Stations follow SPEC §1 (stripped, trailing dots removed, ``station_key``).

- without ``dataset``, a window applies to its station in every dataset;
- without ``model``, a window was seen by every model; with it, by the named model only (an empty
  ``model`` cell: by every model).

:func:`read_coverage` returns the windows as a frame of int64 nanoseconds; every bad row is an
:class:`~pickscale.errors.InputError` naming the file, the column and the first rows.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError, OptionsError
from .fields import parse_label, parse_station, station_key_of
from .messages import N_EXAMPLES, ROWS_CONVENTION
from .raw import read_raw
from .times import parse_time

__all__ = ["read_coverage", "COVERAGE_COLUMNS"]

#: Required, then optional, columns of a coverage file.
COVERAGE_COLUMNS = ("station", "start", "end", "dataset", "model")
_REQUIRED = ("station", "start", "end")


def _rows(mask: np.ndarray) -> str:
    rows = (np.flatnonzero(mask)[:N_EXAMPLES] + 2).tolist()  # header = row 1
    more = " …" if int(mask.sum()) > N_EXAMPLES else ""
    return ", ".join(map(str, rows)) + more


def read_coverage(source: Any, *, station_key: str = "as-is") -> pd.DataFrame:
    """Read a coverage file (CSV or Parquet path) or frame into windows of int64 ns.

    Returns
    -------
    DataFrame
        ``station, start, end`` (int64 ns, ``start <= end``), plus ``dataset`` and ``model`` (object; an
        empty model is ``""``: every model) when the file has them.  ``attrs["source"]`` names it.

    Raises
    ------
    InputError
        A missing column, an empty station or dataset, an unreadable time, ``end`` before ``start``,
        no row — naming the file, the column and the first rows.
    OptionsError
        ``source`` is neither a path nor a DataFrame.

    Examples
    --------
    >>> w = pd.DataFrame({"Station": ["CI.CLC."], "start": ["2020-01-01T00:00:00Z"], "end": ["2020-01-01T00:01:00Z"],
    ...                   "channels": ["HHZ"]})
    >>> out = read_coverage(w)
    >>> out.columns.tolist(), out["station"].tolist(), int(out["end"].iat[0] - out["start"].iat[0])
    (['station', 'start', 'end'], ['CI.CLC'], 60000000000)
    """
    if isinstance(source, pd.DataFrame):
        raw, name = source, "the coverage DataFrame"
    elif isinstance(source, (str, os.PathLike)):
        name = os.fspath(source)
        if not os.path.exists(name) and "://" not in name:
            raise InputError(f"coverage file {name} does not exist.")
        raw = read_raw(name)
    else:
        raise OptionsError(f"coverage must be a path to a CSV/Parquet file or a DataFrame; got "
                           f"{type(source).__name__}.", options=("coverage",))
    found = {str(c).strip().lower(): c for c in reversed(list(raw.columns))}  # first hit wins
    missing = [c for c in _REQUIRED if c not in found]
    if missing:
        raise InputError(f"{name}: the coverage file needs the columns station, start, end (dataset and model "
                         f"optional); missing {', '.join(missing)} (columns found: "
                         f"{', '.join(map(str, raw.columns)) or 'none'}).")
    if len(raw) == 0:
        raise InputError(f"{name}: the coverage file has no window (no row).")
    out: dict[str, Any] = {}
    problems: list[str] = []
    station, ok = parse_station(raw[found["station"]])
    station = station_key_of(station, station_key)
    if not ok.all():
        problems.append(f"column station: {int((~ok).sum())} empty station(s) (rows {_rows(~ok)})")
    for col in ("dataset", "model"):
        if col in found:
            values, present = parse_label(raw[found[col]])
            values = np.where(present, values, "").astype(object)
            if col == "dataset" and not present.all():
                problems.append(f"column dataset: {int((~present).sum())} empty dataset name(s) "
                                f"(rows {_rows(~present)})")
            out[col] = values
    out["station"] = station
    times = {}
    for col in ("start", "end"):
        ns, valid = parse_time(raw[found[col]])
        if not valid.all():
            problems.append(f"column {col}: {int((~valid).sum())} unreadable time(s) (rows {_rows(~valid)}); "
                            "expected ISO-8601 or seconds since 1970, as in the inputs")
        times[col] = ns
    if not problems:
        backwards = times["end"] < times["start"]
        if backwards.any():
            problems.append(f"{int(backwards.sum())} window(s) end before they start (rows {_rows(backwards)})")
    if problems:
        raise InputError(f"{name}: the coverage file has bad rows ({ROWS_CONVENTION}):\n  - "
                         + "\n  - ".join(problems))
    columns: dict[str, Any] = {"station": out["station"], "start": times["start"].astype(np.int64),
                               "end": times["end"].astype(np.int64)}
    columns.update({c: out[c] for c in ("dataset", "model") if c in out})
    frame = pd.DataFrame(columns)[[c for c in ("dataset", "station", "model", "start", "end") if c in columns]]
    frame.attrs["source"] = name
    return frame
